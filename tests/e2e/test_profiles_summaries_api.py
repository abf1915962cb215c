"""Rank summaries through the API: as files on POST /v1/profiles (one as the body, several as multipart) and as a
JSON array on POST /v1/profiles/summaries; the stored run is the one the raw traces give; another version is a 422
that names the versions read."""

from __future__ import annotations

import concurrent.futures
import functools
import signal
import time
from collections.abc import Callable
from typing import Any, cast

import httpx
import msgspec
import pytest

from tests.conftest import Server
from tests.e2e.test_memory import profiles_stored
from tests.unit.profiles.test_profiles_summary import run_traces, summary_bytes

pytestmark = pytest.mark.e2e


def test_summaries_are_stored_as_the_run_their_traces_make(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    traces = run_traces(3, 1)
    names = [f"rank-{r}.json" for r in range(3)]
    summaries = [summary_bytes(t, n) for t, n in zip(traces, names, strict=True)]
    server = server_factory(sqlite_url)
    with server.client() as client:
        from_traces = client.post("/v1/profiles", files=[("file", (n, t)) for n, t in zip(names, traces, strict=True)])
        assert from_traces.status_code == 201, from_traces.text
        as_files = client.post("/v1/profiles", files=[("file", (n, s)) for n, s in zip(names, summaries, strict=True)])
        assert as_files.status_code == 201, as_files.text
        as_json = client.post(
            "/v1/profiles/summaries",
            content=b"[" + b",".join(summaries) + b"]",
            headers={"content-type": "application/json"},
        )
        assert as_json.status_code == 201, as_json.text
        assert as_json.headers["location"] == f"/v1/profiles/{as_json.json()['id']}"
        expected = from_traces.json()["breakdown"]
        assert as_files.json()["breakdown"] == expected
        assert as_json.json()["breakdown"] == expected
        assert expected["barrier"]["straggler"] == 1
        one = client.post("/v1/profiles", content=summaries[0])
        assert one.status_code == 201, one.text

        newer = msgspec.json.decode(summaries[0])
        newer["version"] = 3
        for response in (
            client.post("/v1/profiles", content=msgspec.json.encode(newer)),
            client.post("/v1/profiles/summaries", json=[newer, msgspec.json.decode(summaries[1])]),
        ):
            assert response.status_code == 422, response.text
            assert "version 3; this worthit reads version 1, 2 only" in response.json()["detail"]


@functools.cache
def _rank_zero() -> bytes:
    return summary_bytes(run_traces(2, 1)[0], "rank-0.json")


def small_summary(rank: int, ranks: int) -> dict[str, Any]:
    """A real rank's summary (of `run_traces`), its breakdown's phases, notes and steps and its steps' phase times
    left out: about 1 KB, the smallest a client can send as rank `rank` of `ranks`."""
    summary = msgspec.json.decode(_rank_zero())
    summary |= {"file": f"rank-{rank}.json", "rank": rank, "world_size": ranks, "note": None}
    summary["breakdown"] |= {"phases": [], "notes": [], "step_figures": []}
    for step in summary["step_figures"]:
        step["phases"] = {}
    return cast("dict[str, Any]", summary)


def post_summaries(client: httpx.Client, body: bytes) -> httpx.Response:
    return client.post("/v1/profiles/summaries", content=body, headers={"content-type": "application/json"})


def test_summaries_get_the_summaries_limit_not_the_upload_limit(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """9 MiB of JSON is 413 naming WORTHIT_MAX_SUMMARIES_BYTES (it was read whole under the 32 MiB upload limit and
    decoded on the event loop); the setting moves the limit."""
    body = b"[" + b" " * (9 * 1024**2) + b"]"
    server = server_factory(sqlite_url)
    with server.client(timeout=60) as client:
        refused = post_summaries(client, body)
    assert refused.status_code == 413, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert f"at most {8 * 1024**2} bytes (WORTHIT_MAX_SUMMARIES_BYTES)" in refused.json()["detail"]
    server.stop()
    small = server_factory(sqlite_url, env={"WORTHIT_MAX_SUMMARIES_BYTES": "4096"})
    with small.client() as client:
        body = msgspec.json.encode([small_summary(r, 4) for r in range(4)])
        assert len(body) > 4096
        assert post_summaries(client, body).status_code == 413
    assert profiles_stored(sqlite_url) == 0


@pytest.mark.parametrize(
    ("where", "cap"),
    [("ranks", "4,096 rank summaries"), ("step_phases", "16,384 phases per step"), ("steps", "4,096 steps")],
)
def test_what_a_summary_may_hold_is_capped_naming_the_field(
    sqlite_url: str, server_factory: Callable[..., Server], where: str, cap: str
) -> None:
    """4,097 summaries, a step of 16,385 phase times, a summary of 4,097 steps: each a 422 naming the field and its
    cap, nothing stored (the first was combined for seconds on the event loop's thread, the others stored)."""
    summaries = [small_summary(0, 2), small_summary(1, 2)]
    pointer = ""
    if where == "ranks":
        summaries = [small_summary(r, 4097) for r in range(4097)]
    elif where == "step_phases":
        summaries[1]["step_figures"][0]["phases"] = {f"k{i}": 1 for i in range(16_385)}
        pointer = "/1/step_figures/0/phases"
    else:
        step = summaries[0]["step_figures"][0]
        summaries[0]["step_figures"] = [step | {"number": n} for n in range(4097)]
        pointer = "/0/step_figures"
    server = server_factory(sqlite_url)
    with server.client(timeout=60) as client:
        response = post_summaries(client, msgspec.json.encode(summaries))
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert f"at most {cap}" in problem["detail"]
    assert problem["errors"][0]["pointer"] == pointer
    assert profiles_stored(sqlite_url) == 0


def test_summaries_are_combined_in_the_parse_worker_under_its_memory_limit(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """One summary of 400 steps of 1,000 phase times each (6 MB, within every cap) decodes to more than a 64 MiB
    worker may hold: 413 naming WORTHIT_MAX_PARSE_MEMORY_BYTES, nothing stored (it was decoded and combined in the
    server, outside the limit)."""
    summary = small_summary(0, 1)
    step = summary["step_figures"][0]
    summary["step_figures"] = [
        step | {"number": n, "phases": {f"k{n}_{i}": 1000 + i for i in range(1000)}} for n in range(400)
    ]
    body = msgspec.json.encode([summary])
    assert 5 * 1024**2 < len(body) < 8 * 1024**2
    server = server_factory(sqlite_url, env={"WORTHIT_MAX_PARSE_MEMORY_BYTES": str(64 * 1024**2)})
    with server.client(timeout=60) as client:
        response = post_summaries(client, body)
    assert response.status_code == 413, response.text
    assert "WORTHIT_MAX_PARSE_MEMORY_BYTES" in response.json()["detail"]
    assert profiles_stored(sqlite_url) == 0


def test_the_deadline_stops_the_summaries_worker(sqlite_url: str, server_factory: Callable[..., Server]) -> None:
    """At a 0.05 s deadline, 4,000 summaries get 503 and their worker is killed (logged; the combination ran on in a
    server thread for nobody). With the deadline lifted they are stored, ranks 0 to 3,999 in order."""
    summaries = [small_summary(r, 4000) for r in range(4000)]
    body = msgspec.json.encode(summaries)
    server = server_factory(sqlite_url, env={"WORTHIT_REQUEST_TIMEOUT_SECONDS": "0.05"})
    with server.client(timeout=60) as client:
        # A deadline that passes while the body is still arriving ends the request before any worker: tries.
        for _ in range(5):
            assert post_summaries(client, body).status_code == 503
            time.sleep(1)
            if "stopped parsing a profile: its request was abandoned" in server.log.read_text():
                break
        else:
            raise AssertionError(server.log.read_text())
    server.stop()
    assert profiles_stored(sqlite_url) == 0
    patient = server_factory(sqlite_url, env={"WORTHIT_REQUEST_TIMEOUT_SECONDS": "120"})
    with patient.client(timeout=120) as client:
        stored = post_summaries(client, body)
    assert stored.status_code == 201, stored.text
    breakdown = stored.json()["breakdown"]
    assert [r["rank"] for r in breakdown["ranks"]] == list(range(4000))
    assert breakdown["barrier"]["ranks"] == 4000


def test_a_stored_profile_is_bounded(database_url: str, server_factory: Callable[..., Server]) -> None:
    """A summary of 600 steps, one of them of 1,100 phase times, is stored with 512 steps and that step with 1,024
    times, the 77 smallest summed into one "the rest" time (all 600 and 1,100 were stored as sent); a profile whose
    JSON would pass WORTHIT_MAX_STORED_PROFILE_BYTES is 413 naming it, nothing stored."""
    summary = small_summary(0, 1)
    step = summary["step_figures"][0]
    times = {f"k{i:04d}": 10_000 - i for i in range(1100)}
    # One summary is stored as its breakdown, step figures and all.
    summary["breakdown"]["step_figures"] = [step | {"number": 0, "phases": times}] + [
        step | {"number": n, "phases": {"k0000": 5}} for n in range(1, 600)
    ]
    server = server_factory(database_url)
    with server.client(timeout=60) as client:
        response = post_summaries(client, msgspec.json.encode([summary]))
        assert response.status_code == 201, response.text
        stored = client.get(response.headers["location"]).json()["breakdown"]["step_figures"]
    assert [s["number"] for s in stored] == list(range(512))
    first = stored[0]["phases"]
    assert len(first) == 1024
    assert first["k0000"] == 10_000
    assert "k1022" in first
    assert "k1023" not in first
    assert first["(the rest: 77 device phases)"] == sum(10_000 - i for i in range(1023, 1100))
    assert sum(first.values()) == sum(times.values())
    server.stop()

    long_names = small_summary(0, 1)
    long_names["breakdown"]["step_figures"] = [
        step | {"phases": {f"kernel_{i:04d}_" + "x" * 100: 1 for i in range(1000)}}
    ]
    small = server_factory(database_url, env={"WORTHIT_MAX_STORED_PROFILE_BYTES": "65536"})
    with small.client(timeout=60) as client:
        refused = post_summaries(client, msgspec.json.encode([long_names]))
    assert refused.status_code == 413, refused.text
    assert "(65536 bytes, WORTHIT_MAX_STORED_PROFILE_BYTES)" in refused.json()["detail"]
    assert profiles_stored(database_url) == 1


def test_sigterm_after_24000_summaries_ends_within_the_drain(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """24,000 small summaries (26 MB) are refused at once (413: beyond the summaries' limit), and a SIGTERM a second
    later ends the server within its 10 s drain, exit 0. They were combined for minutes in a server thread, which a
    SIGTERM could not stop: the client got a 500 and the process took 80 s to exit."""
    body = msgspec.json.encode([small_summary(r, 24_000) for r in range(24_000)])
    assert len(body) > 24 * 1024**2
    server = server_factory(sqlite_url)
    with concurrent.futures.ThreadPoolExecutor(1) as pool, server.client(timeout=120) as client:
        pending = pool.submit(post_summaries, client, body)
        time.sleep(1)
        server.process.send_signal(signal.SIGTERM)
        try:
            exit_code = server.process.wait(timeout=15)
        finally:
            server.kill()
        answer = pending.result()
    assert exit_code == 0
    assert answer.status_code == 413, answer.text


def test_a_malformed_or_mistyped_array_is_answered_from_the_worker_naming_the_field(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """Decoded in the parse worker, a body keeps the answers it had on the event loop: malformed JSON 400, a string
    for a rank 422 pointing at it with the value got, an unknown field 422 naming it, another content type 415."""
    good = small_summary(1, 2)
    mistyped = small_summary(0, 2) | {"rank": "0"}
    unknown = small_summary(0, 2) | {"ranks": 2}
    server = server_factory(sqlite_url)
    with server.client(timeout=60) as client:
        malformed = post_summaries(client, msgspec.json.encode([good])[:-5])
        typed = post_summaries(client, msgspec.json.encode([good, mistyped]))
        extra = post_summaries(client, msgspec.json.encode([unknown, good]))
        text = client.post("/v1/profiles/summaries", content=b"[]", headers={"content-type": "text/plain"})
    assert malformed.status_code == 400, malformed.text
    assert malformed.json()["detail"].startswith("Expected a JSON document, got malformed input")
    assert typed.status_code == 422, typed.text
    assert typed.json()["errors"][0]["pointer"] == "/1/rank"
    assert '"0"' in typed.json()["detail"]
    assert extra.status_code == 422, extra.text
    assert extra.json()["errors"][0]["pointer"] == "/0/ranks"
    assert text.status_code == 415, text.text
    assert profiles_stored(sqlite_url) == 0
