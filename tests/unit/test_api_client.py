"""service/client.py, the one client of worthit's API (the gate's `--url`, the Slack bot), on httpx's mock transport:
what it retries, what it gives up with, what it sends."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import httpx
import pytest

from worthit.service.client import ApiClient, problem
from worthit.service.slackbot.api import ApiError, WorthitApi

Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture(autouse=True)
def _quiet_httpx(caplog: pytest.LogCaptureFixture) -> None:
    """httpx logs each request at INFO; a test before may have left the root logger at INFO with a handler on a
    stream pytest has since closed ("Logging error"), so these requests log nothing."""
    caplog.set_level(logging.WARNING, logger="httpx")


def _answers(*outcomes: int | type[httpx.TransportError]) -> tuple[list[httpx.Request], Handler]:
    """A server answering each request with the next status, or failing it with the next transport error."""
    seen: list[httpx.Request] = []
    pending: Iterator[int | type[httpx.TransportError]] = iter(outcomes)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        outcome = next(pending)
        if isinstance(outcome, int):
            return httpx.Response(outcome, json={"detail": f"answered {outcome}"})
        raise outcome("cut", request=request)

    return seen, handle


def _client(handler: Handler, attempts: int = 3, token: str | None = "t0k") -> ApiClient:
    return ApiClient(
        "http://worthit.test/prefix",
        token,
        user_agent="probe",
        timeout_s=1,
        attempts=attempts,
        delay=lambda _: 0,
        transport=httpx.MockTransport(handler),
    )


def test_a_retried_status_is_sent_again_until_an_answer_that_is_not() -> None:
    seen, handle = _answers(503, 502, 200)
    with _client(handle) as client:
        assert client.send("POST", "/v1/evaluate", content=b"{}", retry_statuses=(502, 503)).status_code == 200
    assert len(seen) == 3
    assert {request.content for request in seen} == {b"{}"}


def test_the_last_attempt_answers_whatever_its_status() -> None:
    seen, handle = _answers(503, 503)
    with _client(handle, attempts=2) as client:
        assert client.send("GET", "/v1/policies", retry_statuses=(503,)).status_code == 503
    assert len(seen) == 2


def test_a_status_not_listed_is_answered_at_once() -> None:
    seen, handle = _answers(503)
    with _client(handle) as client:
        assert client.send("GET", "/v1/policies").status_code == 503
    assert len(seen) == 1


def test_a_connection_error_is_retried_and_the_last_one_raised() -> None:
    seen, handle = _answers(httpx.ConnectError, httpx.ConnectError, httpx.ConnectError)
    with _client(handle) as client, pytest.raises(httpx.ConnectError):
        client.send("GET", "/v1/policies")
    assert len(seen) == 3


def test_an_error_the_caller_refuses_to_retry_is_raised_at_once() -> None:
    seen, handle = _answers(httpx.ReadTimeout, 200)
    with _client(handle) as client, pytest.raises(httpx.ReadTimeout):
        client.send("POST", "/v1/decisions", retry_error=lambda exc: isinstance(exc, httpx.ConnectError))
    assert len(seen) == 1


def test_the_token_user_agent_and_base_path_are_sent() -> None:
    seen, handle = _answers(200, 200)
    with _client(handle) as client:
        client.send("GET", "/v1/policies", params={"policy": "team"})
    with _client(handle, token=None) as anonymous:
        anonymous.send("GET", "/v1/policies")
    assert str(seen[0].url) == "http://worthit.test/prefix/v1/policies?policy=team"
    assert (seen[0].headers["authorization"], seen[0].headers["user-agent"]) == ("Bearer t0k", "probe")
    assert "authorization" not in seen[1].headers


@pytest.mark.parametrize(("content", "expected"), [(b'{"detail": "x"}', {"detail": "x"}), (b"[1]", {}), (b"<h", {})])
def test_a_problem_is_a_json_object_or_nothing(content: bytes, expected: dict[str, object]) -> None:
    assert problem(content) == expected


def _bot(handler: Handler) -> WorthitApi:
    return WorthitApi("http://worthit.test", "t0k", backoff_s=0, transport=httpx.MockTransport(handler))


def test_the_bot_gives_up_on_an_unreachable_api_after_its_four_attempts() -> None:
    seen, handle = _answers(*[httpx.ConnectError] * 4)
    with pytest.raises(ApiError, match=r"^worthit is unreachable \(ConnectError\); tried 4 times$"):
        _bot(handle).policies()
    assert len(seen) == 4


def test_the_bot_does_not_resend_a_write_without_a_key_that_may_have_landed() -> None:
    """A reevaluation stores nothing (`stores=False`), but an outcome without a key would: its timeout is final."""
    seen, handle = _answers(httpx.ReadTimeout)
    bot = _bot(handle)
    with pytest.raises(ApiError, match=r"^worthit is unreachable \(ReadTimeout\)$"):
        bot._call("POST", "/v1/decisions/x/outcome", body={})
    assert len(seen) == 1


def test_the_bot_retries_a_keyed_write_on_503_and_names_the_last_problem() -> None:
    seen, handle = _answers(503, 429, 503, 503)
    with pytest.raises(ApiError, match=r"^answered 503; tried 4 times$"):
        _bot(handle).create_decision({"p": 0.2}, source_detail={}, key="k1")
    assert [request.headers["idempotency-key"] for request in seen] == ["k1"] * 4


def test_the_bot_answers_a_refusal_at_once_with_its_status() -> None:
    seen, handle = _answers(403)
    with pytest.raises(ApiError, match=r"^answered 403$") as refused:
        _bot(handle).policies()
    assert (refused.value.status, len(seen)) == (403, 1)
