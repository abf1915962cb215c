"""Evaluating on a worthit server (`--url`): a 422 is the author's block, anything else the job's setup."""

from __future__ import annotations

import time

import msgspec

from worthit.rules.model import Evaluation
from worthit.service.gate.block import Parsed, invalid_block
from worthit.service.gate.errors import UsageError


def evaluate_remote(
    url: str, parsed: Parsed, *, token: str | None, policy: str | None, attempts: int = 2
) -> Evaluation:
    """`POST {url}/v1/evaluate` with the block's JSON; a 422 is the author's block, anything else the job's setup."""
    import httpx

    endpoint = url.rstrip("/") + "/v1/evaluate"
    headers = {"content-type": "application/json", "accept": "application/json", "user-agent": "worthit-gate"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    params = {"policy": policy} if policy else None
    attempt = 1
    while True:
        try:
            response = httpx.post(endpoint, content=parsed.json, headers=headers, params=params, timeout=30)
        except httpx.HTTPError as exc:
            if attempt >= attempts:
                raise UsageError(f"cannot reach {endpoint}: {exc}") from exc
        else:
            if response.status_code not in (502, 503, 504) or attempt >= attempts:
                break
        # A server restarting behind a load balancer answers 502-504 for a moment; one retry rides it out.
        attempt += 1
        time.sleep(1)
    if response.status_code == 200:
        try:
            return msgspec.json.decode(response.content, type=Evaluation)
        except msgspec.DecodeError as exc:
            raise UsageError(f"{endpoint} answered 200 but not with an evaluation: {exc}") from exc
    problem = _problem(response.content)
    detail = str(problem.get("detail") or response.reason_phrase)
    if response.status_code == 422 and str(problem.get("type", "")).endswith("/validation"):
        errors = problem.get("errors")
        first = errors[0] if isinstance(errors, list) and errors else {}
        pointer = str(first.get("pointer", "")) if isinstance(first, dict) else ""
        raise invalid_block(parsed.block, parsed.tree, detail, pointer, {})
    if response.status_code in (401, 403):
        raise UsageError(
            f"{endpoint} refused the request ({response.status_code}: {detail}); set WORTHIT_TOKEN to a token "
            "with the read scope (a repository secret)"
        )
    raise UsageError(f"{endpoint} answered {response.status_code}: {detail}")


def _problem(content: bytes) -> dict[str, object]:
    try:
        decoded = msgspec.json.decode(content)
    except msgspec.DecodeError:
        return {}
    return decoded if isinstance(decoded, dict) else {}
