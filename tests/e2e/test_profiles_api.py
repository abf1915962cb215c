"""Profiles through the API and the CLI: upload, read back, decide from measured p on both denominators."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, Server, start_server, worthit
from tests.fixtures import fixtures_dir, needs

pytestmark = pytest.mark.e2e

SEED = ROOT / "tests" / "data" / "profiles" / "seed_part2"
FILES = ("kernel_trace.csv", "memory_copy_trace.csv", "hip_api_stats.csv")
KERNEL_NS, DEVICE_NS = 44_242, 3_606_501


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One SQLite server for the tests that look only at the answers to their own uploads and decisions."""
    directory = tmp_path_factory.mktemp("profiles")
    server = start_server(f"sqlite:///{directory / 'w.db'}", directory / "server.log")
    yield server
    server.stop()


def upload(client: object, names: tuple[str, ...] = FILES) -> dict[str, object]:
    files = [("file", (name, (SEED / name).read_bytes(), "text/csv")) for name in names]
    response = client.post("/v1/profiles", files=files, params={"name": "seed part 2"})  # type: ignore[attr-defined]
    assert response.status_code == 201, response.text
    assert response.headers["location"] == f"/v1/profiles/{response.json()['id']}"
    return response.json()  # type: ignore[no-any-return]


def test_seed_part_two_from_uploaded_profiles(database_url: str, server_factory: Callable[..., Server]) -> None:
    """1.2% of device activity and 0.014% of the run; the statement sends the week to allocation and copies."""
    server = server_factory(database_url)
    with server.client() as client:
        profile = upload(client)
        breakdown = profile["breakdown"]
        assert breakdown["device_busy_ns"] == DEVICE_NS  # type: ignore[index]
        assert client.get(f"/v1/profiles/{profile['id']}").json() == profile
        proposal = {"target": "vector_add", "profile_id": profile["id"], "k": 10, "cost_weeks": 1}
        decision = client.post("/v1/decisions", json=proposal).json()
        assert decision["proposal"]["p"] == pytest.approx(KERNEL_NS / DEVICE_NS, rel=1e-12)
        assert decision["proposal"]["p_end_to_end"] == pytest.approx(KERNEL_NS / 316e6, rel=1e-9)
        assert decision["proposal"]["scope"]["measured"] == "device_activity"
        assert decision["amdahl"]["baseline_ms"] == pytest.approx(DEVICE_NS / 1e6, rel=1e-12)
        assert decision["verdict"] == "redirect"
        assert decision["statement"].startswith("The kernel vector_add_kernel")
        assert "1.2% of device activity and 0.014% of the profiled run" in decision["statement"]
        assert "84.6% that is allocation and host↔device copy" in decision["statement"]
        evaluated = client.post("/v1/evaluate", json=proposal).json()
        assert evaluated["statement"] == decision["statement"]


def test_targets_and_profiles_that_do_not_resolve_are_problems(sqlite_server: Server) -> None:
    server = sqlite_server
    with server.client() as client:
        profile = upload(client)
        cases = [
            ({"target": "nothing_like_it", "profile_id": profile["id"], "k": 2}, "/target", "candidates"),
            ({"target": "copy", "profile_id": profile["id"], "k": 2}, "/target", "matches several"),
            ({"target": "x", "profile_id": "00000000-0000-7000-8000-000000000000", "k": 2}, "/profile_id", "profile"),
            ({"target": "x", "profile_id": profile["id"], "p": 0.5, "k": 2}, "/p", "either `p` or `profile_id`"),
        ]
        for body, pointer, phrase in cases:
            response = client.post("/v1/decisions", json=body)
            assert response.status_code == 422, body
            assert response.json()["errors"][0]["pointer"] == pointer
            assert phrase in response.json()["detail"]
        inclusive = client.post("/v1/evaluate", json={"target": "hipMemcpy", "profile_id": profile["id"], "k": 2})
        assert inclusive.json()["verdict"] == "remeasure"
        assert inclusive.json()["deciding_rule"] == "inclusive_percentages"
        assert len(client.get("/v1/decisions").json()["items"]) == 0


BAD_FILES = [
    pytest.param(b"", "empty body", id="empty"),
    pytest.param(bytes(range(256)) * 4, "Not a recognised profile", id="binary"),
    pytest.param(b'"Name","Color"\n"a","red"\n', "Not a recognised profile", id="wrong-header"),
    pytest.param(
        (SEED / "kernel_trace.csv").read_bytes().replace(b"1732000200044242", b"1732000100000000"),
        "line 2",
        id="end-before-start",
    ),
    pytest.param(b'{"traceEvents": 3}', "trace", id="json-not-a-trace"),
]


@pytest.mark.parametrize(("data", "phrase"), BAD_FILES)
def test_bad_files_are_problems_naming_what_is_wrong(sqlite_server: Server, data: bytes, phrase: str) -> None:
    server = sqlite_server
    with server.client() as client:
        response = client.post("/v1/profiles", content=data, headers={"content-type": "application/octet-stream"})
        assert response.status_code in (400, 422), response.text
        assert response.headers["content-type"].startswith("application/problem+json")
        assert phrase in response.json()["detail"]


def test_cli_profile_table_and_json() -> None:
    paths = [str(SEED / name) for name in FILES]
    table = worthit("profile", *paths)
    assert table.returncode == 0, table.stderr
    assert "device busy 3.607 ms" in table.stdout
    assert "(inc) = inclusive summed total — do not sum with the other rows" in table.stdout
    rows = [line for line in table.stdout.splitlines() if "vector_add_kernel" in line]
    assert len(rows) == 1
    assert "1.23%" in rows[0]
    as_json = json.loads(worthit("profile", "--json", *paths).stdout)
    assert as_json["device_busy_ns"] == DEVICE_NS
    broken = worthit("profile", str(ROOT / "README.md"))
    assert broken.returncode == 2
    assert "Not a recognised profile" in broken.stderr
    assert "Traceback" not in broken.stderr


def test_cli_review_with_a_profile_matches_the_api(tmp_path: Path) -> None:
    proposal = tmp_path / "p.json"
    proposal.write_text(json.dumps({"target": "vector_add", "k": 10, "cost_weeks": 1}))
    args = ["review", "--json", str(proposal)]
    for name in FILES:
        args += ["--profile", str(SEED / name)]
    result = worthit(*args)
    assert result.returncode == 1, result.stderr  # redirect fails the gate
    evaluation = json.loads(result.stdout)
    assert evaluation["verdict"] == "redirect"
    assert "84.6% that is allocation and host↔device copy" in evaluation["statement"]


REAL = fixtures_dir() / "real" / "pytorch"
RANKS = ("trace_filter_sampled_rank-0.json.gz", "trace_filter_sampled_rank-1.json.gz")


@needs(REAL)
def test_a_distributed_run_uploaded_as_one_profile_measures_the_barrier(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    """Two ranks' traces as one multipart upload: per-rank compute and communication, the straggler (rank 1), and a
    proposal on the straggler's top compute kernel gets `flags.barrier` measured instead of a remeasure."""
    server = server_factory(database_url)
    files = [("file", (name, (REAL / name).read_bytes(), "application/gzip")) for name in RANKS]
    with server.client() as client:
        created = client.post("/v1/profiles", files=files, params={"name": "two ranks"})
        assert created.status_code == 201, created.text
        breakdown = created.json()["breakdown"]
        ranks = {rank["rank"]: rank["activity"] for rank in breakdown["ranks"]}
        assert ranks[0]["compute_ns"] == 106_252_000
        assert ranks[1]["compute_ns"] == 135_548_000
        assert ranks[0]["comm_ns"] == 195_327_000
        assert ranks[1]["comm_ns"] == 168_027_000
        assert breakdown["barrier"]["straggler"] == 1
        assert breakdown["barrier"]["wait_ns"] == 135_548_000 - 106_252_000
        compute = [phase for phase in breakdown["phases"] if phase["kind"] == "kernel"]
        top = max(compute, key=lambda phase: phase["total_ns"])["name"]
        decision = client.post(
            "/v1/decisions", json={"target": top, "profile_id": created.json()["id"], "k": 2, "cost_weeks": 2}
        )
        assert decision.status_code == 201, decision.text
        barrier = decision.json()["proposal"]["flags"]["barrier"]
        assert barrier["ranks"] == 2
        assert barrier["wait_fraction"] == pytest.approx(breakdown["barrier"]["wait_fraction"])
        assert decision.json()["verdict"] != "remeasure"
        assert next(f for f in decision.json()["findings"] if f["rule"] == "barrier_denominator")["effect"] == "info"


@needs(REAL)
def test_steps_chosen_on_upload_and_refused_when_absent(sqlite_server: Server) -> None:
    """`?steps=` picks ProfilerStep spans of a trace; a step the trace does not hold is a 422 naming the steps."""
    server = sqlite_server
    body = (REAL / "nccl_parser_config_nccl_data.json.gz").read_bytes()
    with server.client() as client:
        every = client.post("/v1/profiles", content=body, params={"steps": "all"})
        default = client.post("/v1/profiles", content=body)
        missing = client.post("/v1/profiles", content=body, params={"steps": "900:901"})
    assert every.status_code == default.status_code == 201, (every.text, default.text)
    assert every.json()["breakdown"]["steps"] == default.json()["breakdown"]["steps"] + 1  # the last left out
    assert missing.status_code == 422, missing.text
    assert missing.headers["content-type"].startswith("application/problem+json")
    assert "no steps 900:901; the trace has steps 4, 5, 6" in missing.json()["detail"]


def test_profiles_list_newest_first_with_a_cursor(database_url: str, server_factory: Callable[..., Server]) -> None:
    """`GET /v1/profiles`: the uploads, newest first, without their breakdowns, a page at a time; the page size is
    bounded (400 past 200) and a read token lists them."""
    server = server_factory(database_url)
    with server.client() as client:
        assert client.get("/v1/profiles").json() == {"items": [], "next_cursor": None}
        uploaded = [upload(client) for _ in range(3)]
        uploaded.append(upload(client, ("kernel_trace.csv",)))
        newest_first = list(reversed(uploaded))
        page = client.get("/v1/profiles", params={"limit": 3}).json()
        assert [item["id"] for item in page["items"]] == [profile["id"] for profile in newest_first[:3]]
        assert page["next_cursor"] == newest_first[2]["id"]
        rest = client.get("/v1/profiles", params={"cursor": page["next_cursor"]}).json()
        assert rest == {"items": [_summary(newest_first[3])], "next_cursor": None}
        assert page["items"][0] == _summary(newest_first[0])
        assert "breakdown" not in page["items"][0]
        assert client.get("/v1/profiles", params={"limit": 201}).status_code == 400
        assert client.get("/v1/profiles", params={"limit": 0}).status_code == 400
        assert client.get("/v1/profiles", params={"cursor": "not a cursor"}).status_code == 400


def _summary(profile: dict[str, object]) -> dict[str, object]:
    breakdown = profile["breakdown"]
    assert isinstance(breakdown, dict)
    return {
        "id": profile["id"],
        "created_at": profile["created_at"],
        "name": profile["name"],
        "format": breakdown["format"],
        "size_bytes": profile["size_bytes"],
    }
