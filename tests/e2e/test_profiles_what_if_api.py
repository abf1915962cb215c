"""What-ifs and decisions on an uploaded PyTorch trace's replay, through a real server on SQLite and PostgreSQL.

The traces are written event by event (`tests/replay_traces.py`, µs), their figures worked out in each docstring;
the CLI on the same file is the second opinion: the API answers what `worthit profile --what-if --json` and
`worthit review --profile` do.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Server, worthit
from tests.fixtures import fixtures_dir, needs
from tests.replay_traces import TraceBuilder

pytestmark = pytest.mark.e2e

US = 1_000


def hidden() -> bytes:
    """NCCL 15-415 on stream 20 and K 25-125 on stream 7; the sync (30-420) waits for both; the step is 0-425."""
    b = TraceBuilder()
    b.launch(10, "ncclKernel_AllReduce_RING_LL_Sum_float", 15, 400, stream=20)
    b.launch(20, "K", 25, 100)
    b.call("cudaDeviceSynchronize", 30, 390)
    b.step(1, 0, 425)
    return b.bytes()


def serial() -> bytes:
    """A 15-115, B 115-315, C 315-365 on one stream; the sync (40-370) waits for C; the step is 0-375."""
    b = TraceBuilder()
    b.launch(10, "A", 15, 100)
    b.launch(20, "B", 115, 200)
    b.launch(30, "C", 315, 50)
    b.call("cudaDeviceSynchronize", 40, 330)
    b.step(1, 0, 375)
    return b.bytes()


def upload(client: Any, data: bytes, name: str) -> str:
    response = client.post("/v1/profiles", content=data, params={"name": name})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def what_if(client: Any, profile_id: str, body: dict[str, Any]) -> Any:
    return client.post(f"/v1/profiles/{profile_id}/what-if", json=body)


def cli_what_if(tmp_path: Path, data: bytes, *targets: str, name: str = "trace.json") -> Any:
    trace = tmp_path / name
    trace.write_bytes(data)
    args = [arg for target in targets for arg in ("--what-if", target)]
    result = worthit("profile", str(trace), *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["what_if"]


def cli_review(tmp_path: Path, data: bytes, proposal: dict[str, Any], name: str = "trace.json") -> Any:
    trace = tmp_path / name
    trace.write_bytes(data)
    path = tmp_path / "proposal.json"
    path.write_text(json.dumps(proposal), encoding="utf-8")
    result = worthit("review", "--json", str(path), "--profile", str(trace))
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def finding(evaluation: Any, rule: str) -> Any:
    return next(f for f in evaluation["findings"] if f["rule"] == rule)


def test_a_kernel_hidden_under_a_collective_saves_nothing_and_is_redirected(
    database_url: str, server_factory: Callable[..., Server], tmp_path: Path
) -> None:
    """K at 2x runs 25-75, still under the collective (15-415): the step stays 425 µs. Amdahl's serial step drops
    K's 50 µs (375 µs); all 50 µs are lost to overlap. The decision naming the profile is redirected on it."""
    data = hidden()
    server = server_factory(database_url)
    with server.client() as client:
        profile_id = upload(client, data, "hidden")
        response = what_if(client, profile_id, {"targets": [{"pattern": "K", "k": 2}]})
        assert response.status_code == 200, response.text
        result = response.json()
        assert result["targets"] == [{"pattern": "K", "k": 2.0, "phases": ["K"], "device_ns": 100 * US}]
        assert (result["measured_ns"], result["replayed_ns"], result["predicted_ns"], result["amdahl_ns"]) == (
            425 * US,
            425 * US,
            425 * US,
            375 * US,
        )
        assert result["lost_ns"] == {"overlap": 50 * US, "launch": 0, "sync": 0, "ranks": 0}
        assert [(s["name"], s["rank"], s["measured_ns"], s["predicted_ns"]) for s in result["steps"]] == [
            ("ProfilerStep#1", None, 425 * US, 425 * US)
        ]
        assert result == cli_what_if(tmp_path, data, "K=2")

        proposal = {"target": "K", "k": 2, "cost_weeks": 1, "profile_id": profile_id}
        decision = client.post("/v1/decisions", json=proposal)
        assert decision.status_code == 201, decision.text
        decided = decision.json()
        assert (decided["verdict"], decided["deciding_rule"]) == ("redirect", "replayed_saving")
        figures = finding(decided, "replayed_saving")["figures"]
        assert (figures["amdahl_saving_ms"], figures["replayed_saving_ms"], figures["lost_overlap_ms"]) == (
            pytest.approx((0.05, 0.0, 0.05), abs=1e-9)
        )
        evaluated = client.post("/v1/evaluate", json=proposal).json()
        assert evaluated["statement"] == decided["statement"]
        cli = cli_review(tmp_path, data, {"target": "K", "k": 2, "cost_weeks": 1})
        assert (cli["verdict"], cli["statement"]) == (decided["verdict"], decided["statement"])
        assert finding(cli, "replayed_saving")["figures"] == figures


def test_a_gpu_bound_serial_step_saves_what_amdahl_says(
    database_url: str, server_factory: Callable[..., Server], tmp_path: Path
) -> None:
    """B at 2x ends 100 µs sooner and so does everything after it on the one stream: the step goes from 375 µs to
    275 µs, Amdahl's step too, nothing lost. The decision is Amdahl's, the replay confirming it."""
    data = serial()
    server = server_factory(database_url)
    with server.client() as client:
        profile_id = upload(client, data, "serial")
        result = what_if(client, profile_id, {"targets": [{"pattern": "b", "k": 2}], "steps": "1"}).json()
        assert result["targets"] == [{"pattern": "b", "k": 2.0, "phases": ["B"], "device_ns": 200 * US}]
        assert (result["measured_ns"], result["predicted_ns"], result["amdahl_ns"]) == (375 * US, 275 * US, 275 * US)
        assert result["lost_ns"] == {"overlap": 0, "launch": 0, "sync": 0, "ranks": 0}
        assert result == cli_what_if(tmp_path, data, "b=2")

        proposal = {"target": "B", "k": 2, "cost_weeks": 2, "profile_id": profile_id}
        decided = client.post("/v1/decisions", json=proposal).json()
        figures = finding(decided, "replayed_saving")["figures"]
        assert (figures["step_ms"], figures["amdahl_saving_ms"], figures["replayed_saving_ms"]) == pytest.approx(
            (0.375, 0.1, 0.1), abs=1e-9
        )
        assert finding(decided, "replayed_saving")["effect"] == "info"
        cli = cli_review(tmp_path, data, {"target": "B", "k": 2, "cost_weeks": 2})
        assert (cli["verdict"], cli["statement"], cli["amdahl"]) == (
            decided["verdict"],
            decided["statement"],
            decided["amdahl"],
        )


def test_what_ifs_that_cannot_be_answered_are_problems_naming_the_field(
    server_factory: Callable[..., Server], sqlite_url: str
) -> None:
    """An unknown profile is a 404; a target matching nothing, a k below 1, steps the trace lacks and a profile of
    another format (no schedule) are 422s naming the field; nothing of them is stored."""
    server = server_factory(sqlite_url)
    with server.client() as client:
        profile_id = upload(client, serial(), "serial")
        unknown = what_if(client, "00000000-0000-7000-8000-000000000000", {"targets": [{"pattern": "B", "k": 2}]})
        assert unknown.status_code == 404
        assert unknown.headers["content-type"].startswith("application/problem+json")
        cases = [
            ({"targets": [{"pattern": "B", "k": 2}, {"pattern": "nothing*", "k": 2}]}, "/targets/1/pattern"),
            ({"targets": [{"pattern": "B", "k": 0.5}]}, "/targets/0/k"),
            ({"targets": [{"pattern": "kind:nonsense", "k": 2}]}, "/targets/0/pattern"),
            ({"targets": []}, "/targets"),
            ({"targets": [{"pattern": "B", "k": 2}], "steps": "7"}, "/steps"),
        ]
        for body, pointer in cases:
            response = what_if(client, profile_id, body)
            assert response.status_code == 422, (body, response.text)
            assert response.headers["content-type"].startswith("application/problem+json")
            assert response.json()["errors"][0]["pointer"] == pointer, body
        csv = Path(__file__).parents[1] / "data" / "profiles" / "seed_part2" / "kernel_trace.csv"
        other = upload(client, csv.read_bytes(), "csv")
        refused = what_if(client, other, {"targets": [{"pattern": "*", "k": 2}]})
        assert refused.status_code == 422
        assert refused.json()["errors"][0]["pointer"] == "/profile_id"
        assert "replay schedule" in refused.json()["detail"]


REAL = fixtures_dir() / "real" / "pytorch"
RESNET = "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"
RANKS = ("trace_filter_sampled_rank-0.json.gz", "trace_filter_sampled_rank-1.json.gz")


@needs(REAL)
def test_the_real_resnet_upload_decides_and_what_ifs_as_the_cli_does(
    sqlite_url: str, server_factory: Callable[..., Server], tmp_path: Path
) -> None:
    """The cuDNN dgrad kernel 2x faster on 512 GPUs: the host sets every step, so the replay saves nothing and the
    decision is redirected, through the API as through `review --profile`; the what-if is the CLI's object."""
    trace = REAL / RESNET
    proposal = {"target": "*dgrad_engine*", "k": 2, "cost_weeks": 4, "flags": {"fleet_gpus": 512}}
    server = server_factory(sqlite_url)
    with server.client() as client:
        profile_id = upload(client, trace.read_bytes(), RESNET)
        decided = client.post("/v1/decisions", json={**proposal, "profile_id": profile_id}).json()
        assert (decided["verdict"], decided["deciding_rule"]) == ("redirect", "replayed_saving")
        assert finding(decided, "replayed_saving")["figures"]["replayed_saving_ms"] == 0.0
        cli = cli_review(tmp_path, trace.read_bytes(), proposal, RESNET)
        assert cli["statement"] == decided["statement"]
        assert finding(cli, "replayed_saving")["figures"] == finding(decided, "replayed_saving")["figures"]
        result = what_if(client, profile_id, {"targets": [{"pattern": "*dgrad_engine*", "k": 2}]}).json()
        cli_result = cli_what_if(tmp_path, trace.read_bytes(), "*dgrad_engine*=2", name=RESNET)
        assert result == cli_result
        assert result["predicted_ns"] == result["measured_ns"]


@needs(REAL)
def test_a_two_rank_upload_is_replayed_across_both_ranks(
    sqlite_url: str, server_factory: Callable[..., Server], tmp_path: Path
) -> None:
    """The ranks' traces uploaded together are stored as one schedule each and replayed as one run, as the CLI
    replays the two files: the same object, a step per rank."""
    server = server_factory(sqlite_url)
    with server.client() as client:
        files = [("file", (name, (REAL / name).read_bytes())) for name in RANKS]
        response = client.post("/v1/profiles", files=files)
        assert response.status_code == 201, response.text
        body = {"targets": [{"pattern": "kind:kernel", "k": 2}]}
        result = what_if(client, response.json()["id"], body).json()
    for name in RANKS:
        (tmp_path / name).write_bytes((REAL / name).read_bytes())
    cli = worthit("profile", *(str(tmp_path / n) for n in RANKS), "--what-if", "kind:kernel=2", "--json")
    assert cli.returncode == 0, cli.stderr
    assert result == json.loads(cli.stdout)["what_if"]
    assert {s["rank"] for s in result["steps"]} == {0, 1}


def test_a_trace_past_the_schedule_cap_is_stored_without_one_and_says_so(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """With WORTHIT_MAX_SCHEDULE_OPS at 2, the serial trace's 3 device ops are one too many: the profile is stored,
    its notes say why no schedule is, the what-if is refused naming the profile and a decision keeps Amdahl's
    arithmetic (no replayed_saving finding)."""
    server = server_factory(sqlite_url, env={"WORTHIT_MAX_SCHEDULE_OPS": "2"})
    with server.client() as client:
        response = client.post("/v1/profiles", content=serial())
        assert response.status_code == 201, response.text
        notes = response.json()["breakdown"]["notes"]
        assert any("has 3 device ops, more than a stored schedule holds (2)" in note for note in notes), notes
        profile_id = response.json()["id"]
        refused = what_if(client, profile_id, {"targets": [{"pattern": "B", "k": 2}]})
        assert refused.status_code == 422
        assert refused.json()["errors"][0]["pointer"] == "/profile_id"
        assert "within 2 device ops a trace" in refused.json()["detail"]
        decided = client.post("/v1/evaluate", json={"target": "B", "k": 2, "cost_weeks": 2, "profile_id": profile_id})
        assert all(f["rule"] != "replayed_saving" for f in decided.json()["findings"])
