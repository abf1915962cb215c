"""Signed page links (service/http/page_access.py): valid until their expiry, for their decision only, under the
server's key only; anything altered or malformed is invalid, never an error."""

from __future__ import annotations

import pytest

from worthit.service.api.pages import _safe_next
from worthit.service.http.page_access import check_link, link_expiry, signed_path

KEY = "k" * 40
ID = "01a2332e-d9ac-748b-a361-91bbaa1e15ba"
NOW = 1_800_000_000.0


def query(path: str) -> bytes:
    return path.split("?", 1)[1].encode()


def test_a_link_opens_its_decision_until_it_expires() -> None:
    path, expires = signed_path(ID, KEY, 3600, now=NOW)
    assert path.startswith(f"/decisions/{ID}?link={expires}.")
    assert "&" not in path  # nothing for Slack's mrkdwn or Markdown to escape
    assert check_link(KEY, ID, query(path), now=NOW) == "valid"
    assert check_link(KEY, ID, query(path), now=NOW + 3599) == "valid"
    assert check_link(KEY, ID, query(path), now=NOW + 3600) == "expired"
    assert link_expiry(query(path)) is not None


@pytest.mark.parametrize(
    "change",
    [
        lambda q: q.replace(b"link=18", b"link=19"),  # a later expiry
        lambda q: q[:-1] + (b"A" if q[-1:] != b"A" else b"B"),  # one character of the signature
        lambda q: q + b"&link=1.x",  # a second link
        lambda q: q.replace(b".", b""),  # no separator
        lambda q: b"link=" + b"9" * 40 + b".x",  # an absurd expiry
        lambda q: b"link=%FF%FE.x",
    ],
)
def test_an_altered_link_is_invalid(change: object) -> None:
    path, _ = signed_path(ID, KEY, 3600, now=NOW)
    assert callable(change)
    assert check_link(KEY, ID, change(query(path)), now=NOW) == "invalid"


def test_a_link_is_for_one_decision_and_one_key() -> None:
    path, _ = signed_path(ID, KEY, 3600, now=NOW)
    assert check_link(KEY, ID[:-1] + "0", query(path), now=NOW) == "invalid"
    assert check_link("x" * 40, ID, query(path), now=NOW) == "invalid"
    assert check_link(None, ID, query(path), now=NOW) == "invalid"  # a server without the key opens no link
    assert check_link(KEY, ID, b"", now=NOW) == "none"
    assert check_link(KEY, ID, b"verdict=fund", now=NOW) == "none"


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("/decisions/abc", "/decisions/abc"),
        ("/decisions?verdict=fund", "/decisions?verdict=fund"),
        ("//evil.example/x", "/decisions"),
        ("/\\evil.example", "/decisions"),
        ("https://evil.example", "/decisions"),
        ("/decisions\r\nSet-Cookie: x", "/decisions"),
    ],
)
def test_sign_in_comes_back_only_to_a_path_of_this_site(given: str, kept: str) -> None:
    assert _safe_next(given) == kept
