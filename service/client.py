"""worthit's HTTP API as its own clients call it: the gate's `--url` (service/gate/remote.py) and the Slack bot
(service/slackbot/api.py) send through one `ApiClient`, so the bearer token, the timeout and the retry loop exist once.

httpx alone (a core dependency): the gate's light install runs this without the server's stack. httpx is imported when
a client is made, not with this module: the offline gate imports its remote half and never pays httpx's 200 ms. What to
retry is each caller's to say, since only it knows whether a request that may have landed is safe to send again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from types import TracebackType
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    import httpx

__all__ = ["SOURCE_HEADER", "ApiClient", "problem", "source_header"]

SOURCE_HEADER = "Worthit-Source"


def source_header(surface: str, detail: Mapping[str, str]) -> str:
    """`Worthit-Source`'s value: the surface a request speaks for and its details (`slack; user_id=U1; team_id=T1`).
    The server takes `slack` from a token with the `slack` scope only; a value holding `;` would end early, and none
    of Slack's ids or GitHub's names does."""
    # An event without a team or channel id (None) says nothing of it, rather than a value of "None".
    return "; ".join([surface, *(f"{key}={value}" for key, value in detail.items() if value)])


def _always(_: httpx.RequestError) -> bool:
    return True


class ApiClient:
    """One worthit server (`base_url`, its path kept as a prefix), authenticated with `token` when there is one; each
    request is tried up to `attempts` times, waiting `delay(n)` seconds after the n-th. Thread-safe, as httpx's."""

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        user_agent: str,
        timeout_s: float,
        attempts: int,
        delay: Callable[[int], float],
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        import httpx

        headers = {"user-agent": user_agent}
        if token:
            headers["authorization"] = f"Bearer {token}"
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout_s, transport=transport)
        self.attempts = attempts
        self._delay = delay

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def send(
        self,
        method: str,
        path: str,
        *,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        retry_statuses: Collection[int] = (),
        retry_error: Callable[[httpx.RequestError], bool] = _always,
    ) -> httpx.Response:
        """The last answer: one whose status is not in `retry_statuses`, or the last attempt's whatever its status.
        A request error `retry_error` accepts is tried again; the last attempt's, or one it refuses, is raised."""
        import httpx

        attempt = 1
        while True:
            try:
                response = self._http.request(method, path, content=content, headers=headers, params=params)
            except httpx.RequestError as exc:
                if attempt >= self.attempts or not retry_error(exc):
                    raise
            else:
                if response.status_code not in retry_statuses or attempt >= self.attempts:
                    return response
            time.sleep(self._delay(attempt))
            attempt += 1


def problem(content: bytes) -> dict[str, object]:
    """An answer's body as RFC 9457 problem details (any JSON object), or `{}` when it is not one."""
    try:
        decoded = msgspec.json.decode(content)
    except msgspec.DecodeError:
        return {}
    return decoded if isinstance(decoded, dict) else {}
