"""worthit's public API as the bot uses it: bearer token, Idempotency-Key, retries, problems as readable errors.

The bot holds a token like any other client and never a database URL. A write that fails in transit is retried with
the same Idempotency-Key and the same bytes, so the API stores it once however many times it arrives.
"""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

from worthit.service.client import SOURCE_HEADER, ApiClient, problem, source_header

RETRIED_STATUSES = frozenset({429, 502, 503, 504})


class ApiError(Exception):
    """The API answered with a problem, or could not be reached; `detail` is for a person to read."""

    def __init__(self, detail: str, status: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status


def _problem_detail(response: httpx.Response) -> str:
    body = problem(response.content)
    detail = body.get("detail")
    if isinstance(detail, str):
        errors = body.get("errors")
        extra = (
            [e["detail"] for e in errors if isinstance(e, dict) and isinstance(e.get("detail"), str)]
            if isinstance(errors, list)
            else []
        )
        return "; ".join([detail, *[e for e in extra if e != detail]])
    return f"worthit answered {response.status_code} {response.reason_phrase}"


class WorthitApi:
    """A thread-safe client of one worthit server (`base_url`), authenticated with `token`."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        attempts: int = 4,
        backoff_s: float = 0.5,
        timeout_s: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._client = ApiClient(
            base_url,
            token,
            user_agent="worthit-slack-bot",
            timeout_s=timeout_s,
            attempts=attempts,
            delay=lambda attempt: backoff_s * 2 ** (attempt - 1),
            transport=transport,
        )

    def close(self) -> None:
        self._client.close()

    def _call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: dict[str, str] | None = None,
        idempotency_key: str | None = None,
        stores: bool = True,
        speaks_for: str | None = None,
    ) -> Any:
        content = None if body is None else msgspec.json.encode(body)
        headers = {"content-type": "application/json"} if content is not None else {}
        if idempotency_key is not None:
            headers["idempotency-key"] = idempotency_key
        if speaks_for is not None:
            headers[SOURCE_HEADER] = speaks_for
        # A retry is safe when the call stores nothing, or when the key makes the API store it once.
        safe = method == "GET" or not stores or idempotency_key is not None

        def retried(exc: httpx.RequestError) -> bool:
            # Without a key a write may have landed before the connection broke: retrying could store it twice.
            return isinstance(exc, httpx.TransportError) and (safe or isinstance(exc, httpx.ConnectError))

        tried = f"tried {self._client.attempts} times"
        try:
            response = self._client.send(
                method,
                path,
                content=content,
                headers=headers,
                params=params,
                retry_statuses=RETRIED_STATUSES if safe else (),
                retry_error=retried,
            )
        except httpx.TransportError as exc:
            unreachable = f"worthit is unreachable ({type(exc).__name__})"
            raise ApiError(f"{unreachable}; {tried}" if retried(exc) else unreachable) from exc
        if response.status_code in RETRIED_STATUSES and safe:
            raise ApiError(f"{_problem_detail(response)}; {tried}")
        if response.status_code >= 400:
            raise ApiError(_problem_detail(response), response.status_code)
        return response.json()

    def create_decision(self, proposal: dict[str, Any], *, source_detail: dict[str, str], key: str) -> dict[str, Any]:
        """POST /v1/decisions speaking for Slack (its user, team and channel: the user owns the decision; the bot's
        token needs the `slack` scope); the same key returns the stored decision instead of a new one."""
        said = source_header("slack", source_detail)
        result: dict[str, Any] = self._call(
            "POST", "/v1/decisions", body=proposal, idempotency_key=key, speaks_for=said
        )
        return result

    def decision(self, decision_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/v1/decisions/{decision_id}")
        return result

    def page_link(self, decision_id: str) -> str | None:
        """The path of a signed link to the decision's page (opens it without a token); None where links are off."""
        try:
            result: dict[str, Any] = self._call("GET", f"/v1/decisions/{decision_id}/link")
        except ApiError:
            return None  # a server without WORTHIT_LINK_SECRET (404), or one older than the route: a plain link
        path = result.get("path")
        return path if isinstance(path, str) and path.startswith("/decisions/") else None

    def policies(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call("GET", "/v1/policies")
        return result

    def reevaluate(self, decision_id: str, policy: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call(
            "POST", f"/v1/decisions/{decision_id}/reevaluate", params={"policy": policy}, stores=False
        )
        return result

    def record_outcome(self, decision_id: str, outcome: dict[str, Any], *, key: str, user_id: str) -> dict[str, Any]:
        """POST the outcome as the Slack user `user_id`: a decision made from Slack takes its outcome from the user
        who made it (or an admin token)."""
        result: dict[str, Any] = self._call(
            "POST",
            f"/v1/decisions/{decision_id}/outcome",
            body=outcome,
            idempotency_key=key,
            speaks_for=source_header("slack", {"user_id": user_id}),
        )
        return result
