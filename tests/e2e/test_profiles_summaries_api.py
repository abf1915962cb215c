"""Rank summaries through the API: as files on POST /v1/profiles (one as the body, several as multipart) and as a
JSON array on POST /v1/profiles/summaries; the stored run is the one the raw traces give; another version is a 422
that names the versions read."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from tests.conftest import Server
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
        newer["version"] = 2
        for response in (
            client.post("/v1/profiles", content=msgspec.json.encode(newer)),
            client.post("/v1/profiles/summaries", json=[newer, msgspec.json.decode(summaries[1])]),
        ):
            assert response.status_code == 422, response.text
            assert "version 2; this worthit reads version 1 only" in response.json()["detail"]
