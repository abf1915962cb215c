"""What people type is read in time linear in its length, and a Slack text is capped before.

Linearity is pinned with inputs of 1 MB, each run in a child process under a generous timeout: the quadratic
versions these replace took 0.8 s (tokens), 3.6 s (a unit), 2.4 s (a YAML error's line) and 3.4 s (a mention) at
20-50 KB, so at 1 MB each would need from tens of minutes to hours, against a timeout of 60 s; the linear ones
take a fraction of a second.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worthit.service.slack import text as slack_text
from worthit.service.slack.text import MAX_TEXT_CHARS, Invalid, parse

MB = 1_000_000


def _old_tokens(text: str) -> tuple[list[str], str | None]:
    """The regular-expression tokenizer the hand one replaced (quadratic in a run of spaces), as the reference."""
    text = re.sub("[\u201c\u201d\u201e\u201f\u2033]", '"', slack_text._unescape(text))
    parts = text.split('"')
    parts[::2] = [re.sub(r"\s*=\s*(?![A-Za-z_][\w-]*\s*=)", "=", part) for part in parts[::2]]
    text = '"'.join(parts)
    if len(parts) % 2 == 0:
        unclosed = re.search(r'\S*"[^"]*$', text)
        return [], unclosed[0].split()[0] if unclosed else '"'
    tokens = [t if t.endswith('"') else t.rstrip(",;") for t in re.findall(r'(?:[^\s"]+|"[^"]*")+', text)]
    return [t for t in tokens if t], None


PIECES = [*' \t\u00a0\n="\u201cpk_-1%x,;:é&', "&lt;", "&amp;", "k=", "p = ", "ab-c", "  "]
TYPED = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


@given(TYPED)
def test_the_hand_tokenizer_reads_every_text_as_the_regular_expressions_did(text: str) -> None:
    assert slack_text._tokens(text) == _old_tokens(text)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("p = 21% k = 2", ["p=21%", "k=2"]),
        ("p= k=2", ["p=", "k=2"]),
        ("p =  k = 2", ["p=", "k=2"]),
        ('title = "qkv fusion" p=1%', ['title="qkv fusion"', "p=1%"]),
        ("p=21%,\u00a0k=2;", ["p=21%", "k=2"]),
    ],
)
def test_the_hand_tokenizer_keeps_the_syntax(text: str, tokens: list[str]) -> None:
    assert slack_text._tokens(text) == (tokens, None)


def _runs_within(code: str, seconds: float = 60) -> str:
    """Run `code` in a fresh interpreter; it must finish inside `seconds` (the quadratic versions need hours)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=seconds, check=True
    )
    return done.stdout


def test_a_megabyte_of_spaces_tokenizes_in_linear_time() -> None:
    out = _runs_within(
        f"""
        from worthit.service.slack.text import _tokens
        for run in (" ", "\\u00a0", "\\t"):
            assert _tokens("p" + run * {MB} + "x")[0] == ["p", "x"]
            assert _tokens("p" + run * {MB} + "=" + run * {MB} + "k=2")[0] == ["p=", "k=2"]
            assert _tokens("a" * {MB} + '"')[1] is not None
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_a_megabyte_value_reads_its_unit_in_linear_time() -> None:
    out = _runs_within(
        f"""
        from worthit.service import units
        for value in ("1" + " " * {MB} + "x\\ny", "1" + ",000" * ({MB} // 4) + " x\\ny"):
            try:
                units.millis(value)
            except units.Unreadable:
                pass
            else:
                raise AssertionError("read")
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_a_megabyte_mention_and_yaml_error_line_are_linear() -> None:
    out = _runs_within(
        f"""
        from worthit.service.slackbot.app import MENTION
        from worthit.service.gate.block import _KEY_OF_LINE
        assert MENTION.sub(" ", "<@U1|" * ({MB} // 5)) == "<@U1|" * ({MB} // 5)
        assert MENTION.sub(" ", "<@U1|ada> p=1%") == "  p=1%"
        assert _KEY_OF_LINE.match(" " * {MB} + "x") is None
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_a_text_over_the_cap_is_refused_before_it_is_read_and_says_the_cap() -> None:
    parsed = parse("p=21% k=10 " + " " * 58_000)
    assert isinstance(parsed, Invalid)
    assert f"at most {MAX_TEXT_CHARS:,}" in parsed.reason
    assert "58,011 characters" in parsed.reason
    assert not isinstance(parse("p=21% k=10 " + " " * (MAX_TEXT_CHARS - 11)), Invalid)
