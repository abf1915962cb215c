"""Evaluating on a worthit server (`--url`): a 422 is the author's block, anything else the job's setup.

With a write-scoped token the gate stores the decision (`POST /v1/decisions`, source `gate`, the pull request as
its detail, one decision per head commit and block), so the summary and `$GITHUB_OUTPUT` can link to its page; with
a read-scoped one (403 there) it evaluates without storing (`POST /v1/evaluate`), as it always could.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote

import msgspec

from worthit.rules.model import Evaluation
from worthit.service.client import SOURCE_HEADER, ApiClient, problem, source_header
from worthit.service.gate.block import Parsed, invalid_block
from worthit.service.gate.errors import UsageError

if TYPE_CHECKING:
    import httpx


@dataclass(frozen=True, slots=True)
class Remote:
    """The server's evaluation, and the address of the stored decision's page when it stored one."""

    evaluation: Evaluation
    decision_url: str | None = None


def evaluate_remote(
    url: str, parsed: Parsed, *, token: str | None, policy: str | None, attempts: int = 2
) -> Evaluation:
    """`POST {url}/v1/evaluate` with the block's JSON; a 422 is the author's block, anything else the job's setup."""
    response = _post(url, "/v1/evaluate", parsed.json, token, {}, policy, attempts)
    return _evaluation(_endpoint(url, "/v1/evaluate"), response, parsed)


def decide_remote(
    url: str,
    parsed: Parsed,
    *,
    token: str | None,
    policy: str | None,
    detail: Mapping[str, str],
    attempts: int = 2,
) -> Remote:
    """`POST {url}/v1/decisions` (stored, with `detail` saying which pull request), or `/v1/evaluate` when the token
    may only read. The Idempotency-Key is the block and the detail's digest: a re-run of the job answers the
    decision of its first run instead of storing another."""
    document = msgspec.json.decode(parsed.json)
    if not isinstance(document, dict):
        return Remote(evaluate_remote(url, parsed, token=token, policy=policy, attempts=attempts))
    body = parsed.json
    said = source_header("gate", detail)
    key = hashlib.sha256(body + said.encode() + (policy or "").encode()).hexdigest()
    endpoint = _endpoint(url, "/v1/decisions")
    headers = {"idempotency-key": key, SOURCE_HEADER: said}
    response = _post(url, "/v1/decisions", body, token, headers, policy, attempts)
    if response.status_code == 403:  # a read-scoped token: evaluate, as the gate did before it stored decisions
        return Remote(evaluate_remote(url, parsed, token=token, policy=policy, attempts=attempts))
    if response.status_code not in (200, 201):
        return Remote(_evaluation(endpoint, response, parsed))
    evaluation = _decode(endpoint, response)
    identifier = problem(response.content).get("id")
    page = _page_url(url, identifier, token) if isinstance(identifier, str) and identifier else None
    return Remote(evaluation, page)


def _endpoint(url: str, path: str) -> str:
    return url.rstrip("/") + path


def _page_url(url: str, decision_id: str, token: str | None) -> str:
    """The decision page's address for the job's output and summary: a signed link (`GET /v1/decisions/{id}/link`,
    as Slack's messages carry), which opens in a browser without a token; the plain page where the server signs no
    links (404) or the question fails, since the decision is stored and the link only a convenience."""
    import httpx

    plain = _endpoint(url, f"/decisions/{quote(decision_id, safe='')}")
    with ApiClient(
        url.rstrip("/"), token, user_agent="worthit-gate", timeout_s=30, attempts=2, delay=lambda _: 1.0
    ) as client:
        try:
            response = client.send(
                "GET",
                f"/v1/decisions/{quote(decision_id, safe='')}/link",
                headers={"accept": "application/json"},
                retry_statuses=(502, 503, 504),
            )
        except httpx.HTTPError:
            return plain
    if response.status_code != 200:
        return plain
    link = problem(response.content)
    path, whole = link.get("path"), link.get("url")
    if not isinstance(path, str) or not path.startswith("/decisions/"):
        return plain
    return whole if isinstance(whole, str) and whole.startswith(("https://", "http://")) else _endpoint(url, path)


def _post(
    url: str, path: str, body: bytes, token: str | None, headers: Mapping[str, str], policy: str | None, attempts: int
) -> httpx.Response:
    import httpx  # when the gate has a server to call (service/client.py)

    # A server restarting behind a load balancer answers 502-504 for a moment, or refuses a connection: one retry, a
    # second later, rides it out. Both posts are safe to repeat: an evaluation stores nothing, a decision has its key.
    with ApiClient(
        url.rstrip("/"), token, user_agent="worthit-gate", timeout_s=30, attempts=attempts, delay=lambda _: 1.0
    ) as client:
        try:
            return client.send(
                "POST",
                path,
                content=body,
                headers={"content-type": "application/json", "accept": "application/json", **headers},
                params={"policy": policy} if policy else None,
                retry_statuses=(502, 503, 504),
            )
        except httpx.HTTPError as exc:
            raise UsageError(f"cannot reach {_endpoint(url, path)}: {exc}") from exc


def _decode(endpoint: str, response: httpx.Response) -> Evaluation:
    try:
        return msgspec.json.decode(response.content, type=Evaluation)
    except msgspec.DecodeError as exc:
        raise UsageError(f"{endpoint} answered {response.status_code} but not with an evaluation: {exc}") from exc


def _evaluation(endpoint: str, response: httpx.Response, parsed: Parsed) -> Evaluation:
    if response.status_code == 200:
        return _decode(endpoint, response)
    answer = problem(response.content)
    detail = str(answer.get("detail") or response.reason_phrase)
    if response.status_code == 422 and str(answer.get("type", "")).endswith("/validation"):
        errors = answer.get("errors")
        first = errors[0] if isinstance(errors, list) and errors else {}
        pointer = str(first.get("pointer", "")) if isinstance(first, dict) else ""
        raise invalid_block(parsed.block, parsed.tree, detail, pointer, {})
    if response.status_code in (401, 403):
        raise UsageError(
            f"{endpoint} refused the request ({response.status_code}: {detail}); set WORTHIT_TOKEN to a token "
            "with the read scope (a repository secret), or the write scope to store the decision and link it"
        )
    raise UsageError(f"{endpoint} answered {response.status_code}: {detail}")
