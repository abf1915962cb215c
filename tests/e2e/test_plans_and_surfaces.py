"""Plans and portfolios through the API and CLI, and one verdict whichever surface asks."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Server, start_server, worthit

pytestmark = pytest.mark.e2e

SEED_STEP = [
    {"name": "gemm_qkv", "ms": 34},
    {"name": "attention_softmax", "ms": 21},
    {"name": "matmul_out", "ms": 12},
    {"name": "layernorm", "ms": 6},
    {"name": "elementwise_gelu", "ms": 4},
    {"name": "H2D copy", "ms": 18, "kind": "copy"},
    {"name": "host gaps", "ms": 5, "kind": "host"},
]
PROPOSALS = [
    {"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3},
    {"target": "layernorm", "p": 0.06, "k": 10, "baseline_ms": 100, "cost_weeks": 2},
    {
        "target": "k",
        "p": 0.012,
        "k": "inf",
        "p_end_to_end": 0.00014,
        "baseline_ms": 3.6,
        "cost_weeks": 1,
        "scope": {"measured": "device_activity", "method": "timeline"},
    },
    {"target": "x", "p": 0.05, "k": 2, "cost_weeks": 3, "flags": {"fleet_gpus": 20000}},
    {
        "target": "y",
        "p": 0.05,
        "k": 2,
        "cost_weeks": 3,
        "flags": {"fleet_gpus": 20000, "latency_slo": {"tail_risk": True}},
    },
    {"target": "asm", "p": 0.03, "k": 1.5, "cost_weeks": 3, "flags": {"portability": "hand_asm"}},
    {"target": "straggler", "p": 0.02, "k": 2, "cost_weeks": 1, "flags": {"barrier": {"ranks": 8}}},
]


def test_the_seed_plan_through_the_api_and_the_cli(sqlite_url: str, server_factory: Callable[..., Server]) -> None:
    server = server_factory(sqlite_url)
    request = {"breakdown": SEED_STEP, "target_speedup": 2, "k": 10}
    with server.client() as client:
        plan = client.post("/v1/plans", json=request).json()
    assert [(s["phase"], round(s["new_ms"], 1)) for s in plan["steps"]] == [
        ("gemm_qkv", 69.4),
        ("attention_softmax", 50.5),
        ("matmul_out", 39.7),
    ]
    assert round(plan["steps"][1]["speedup"], 2) == 1.98
    options = {o["phase"]: round(o["new_ms"], 1) for o in plan["last_step_options"]}
    assert options == {"matmul_out": 39.7, "layernorm": 45.1, "elementwise_gelu": 46.9}
    assert round(plan["all_at_k"]["new_ms"], 1) == 30.7
    assert round(plan["all_at_k"]["speedup"], 2) == 3.26
    assert round(plan["all_at_zero"]["new_ms"], 1) == 23.0
    assert round(plan["all_at_zero"]["speedup"], 2) == 4.35
    cli = worthit("plan", "--json", "-", stdin=json.dumps(request))
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == plan
    text = worthit("plan", "-", stdin=json.dumps(request)).stdout
    assert "gemm_qkv" in text
    assert "69.4 ms" in text
    unreachable = worthit("plan", "-", stdin=json.dumps(request | {"target_speedup": 5}))
    assert unreachable.returncode == 1
    assert "out of reach" in unreachable.stdout
    unreachable_json = worthit("plan", "--json", "-", stdin=json.dumps(request | {"target_speedup": 5}))
    assert unreachable_json.returncode == 1, "--json exits as the text does"
    assert json.loads(unreachable_json.stdout)["reachable"] is False


def test_plans_and_portfolios_follow_worthit_policy(sqlite_url: str, server_factory: Callable[..., Server]) -> None:
    """WORTHIT_POLICY names the policy of every route, plans and portfolios too (they used to ask for "default")."""
    server = server_factory(sqlite_url, env={"WORTHIT_POLICY": "nosuch"})
    with server.client() as client:
        answers = {
            path: client.post(path, json=body)
            for path, body in (
                ("/v1/evaluate", PROPOSALS[0]),
                ("/v1/plans", {"breakdown": SEED_STEP, "target_speedup": 2, "k": 10}),
                ("/v1/portfolio", {"proposals": PROPOSALS[:2]}),
            )
        }
        named = client.post("/v1/plans?policy=default", json={"breakdown": SEED_STEP, "target_speedup": 2, "k": 10})
    assert {path: answer.status_code for path, answer in answers.items()} == dict.fromkeys(answers, 404)
    assert all("nosuch" in answer.json()["detail"] for answer in answers.values())
    assert named.status_code == 200


def test_the_seed_portfolio(sqlite_url: str, server_factory: Callable[..., Server]) -> None:
    server = server_factory(sqlite_url)
    request = {"proposals": PROPOSALS[:2], "budget_weeks": 3}
    with server.client() as client:
        result = client.post("/v1/portfolio", json=request).json()
        bad = client.post("/v1/portfolio", json={"proposals": []})
    assert [e["target"] for e in result["entries"]] == ["attention_softmax", "layernorm"]
    assert [round(e["rate"], 1) for e in result["entries"]] == [6.3, 2.7]
    assert [e["funded"] for e in result["entries"]] == [True, False]
    assert "2.3× the return" in result["message"]
    assert bad.status_code == 422
    assert bad.json()["errors"][0]["pointer"] == "/proposals"
    cli = worthit("portfolio", "--json", "-", stdin=json.dumps(request))
    assert json.loads(cli.stdout) == result


@pytest.fixture(scope="module")
def one_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    directory = tmp_path_factory.mktemp("surfaces")
    server = start_server(f"sqlite:///{directory / 'w.db'}", directory / "server.log")
    yield server
    server.stop()


@pytest.mark.parametrize("proposal", PROPOSALS, ids=[p["target"] for p in PROPOSALS])
def test_review_evaluate_and_decisions_agree(proposal: dict[str, object], one_server: Server, tmp_path: Path) -> None:
    """`worthit review`, POST /v1/evaluate and POST /v1/decisions: one verdict, one statement, one policy."""
    with one_server.client() as client:
        evaluated = client.post("/v1/evaluate", json=proposal).json()
        stored = client.post("/v1/decisions", json=proposal).json()
    path = tmp_path / "proposal.json"
    path.write_text(json.dumps(proposal))
    offline = json.loads(worthit("review", "--json", str(path)).stdout)
    for answer in (stored, offline):
        assert answer["verdict"] == evaluated["verdict"]
        assert answer["statement"] == evaluated["statement"]
        assert answer["policy"] == evaluated["policy"]
        assert answer["amdahl"] == evaluated["amdahl"]
