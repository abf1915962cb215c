"""One proposal, one answer: the same verdict, statement and figures from every surface that carries a decision.

`POST /v1/evaluate`, `POST /v1/decisions` (read back), `worthit review`, the signed Slack command (its stored
decision), the PR gate and the proposal's entry in a portfolio, for proposals that reach each stage's verdict.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Server
from tests.e2e.test_gate import gate
from tests.e2e.test_slack import command, slack_server
from tests.harness import worthit

# (JSON proposal, the same as Slack text, the same as a PR block), one per way a decision ends.
CASES: dict[str, tuple[dict[str, Any], str, str]] = {
    "fund": (
        {"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3},
        "p=21% k=10 baseline=100ms cost=3w target=attention_softmax",
        "target: attention_softmax\np: 21%\nk: 10x\nbaseline_ms: 100ms\ncost_weeks: 3w",
    ),
    "fund_if_fleet_ab": (
        {"target": "rope", "p": 0.008, "k": 2, "cost_weeks": 3, "flags": {"fleet_gpus": 80000}},
        "p=0.8% k=2 cost=15d fleet=80k target=rope",
        "target: rope\np: 0.008\nk: 2\ncost_weeks: 15d\nflags:\n  fleet_gpus: 80k",
    ),
    "decline": (
        {"target": "layernorm", "p": 0.004, "k": 10, "baseline_ms": 100, "cost_weeks": 3},
        "p=0.4% k=10 baseline=0.1s cost=3w target=layernorm",
        "target: layernorm\np: 0.4%\nk: 10\nbaseline_ms: 0.1s\ncost_weeks: 3w",
    ),
}


def _core(evaluation: dict[str, Any]) -> dict[str, Any]:
    """What must be identical everywhere: verdict, statement, the deciding rule and the Amdahl figures."""
    return {
        "verdict": evaluation["verdict"],
        "statement": evaluation["statement"],
        "deciding_rule": evaluation["deciding_rule"],
        "amdahl": evaluation["amdahl"],
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_surface_gives_one_verdict_statement_and_figure_set(
    case: str, tmp_path: Path, sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    raw, slack_text, block = CASES[case]
    server = slack_server(server_factory, sqlite_url)
    with server.client() as client:
        evaluated = client.post("/v1/evaluate", json=raw)
        assert evaluated.status_code == 200, evaluated.text
        api = evaluated.json()
        created = client.post("/v1/decisions", json=raw)
        assert created.status_code == 201, created.text
        stored = client.get(created.headers["location"]).json()
        answered = command(client, slack_text)
        assert answered.status_code == 200, answered.text
        from_slack = next(item for item in client.get("/v1/decisions").json()["items"] if item["source"] == "slack")
        ranked = client.post("/v1/portfolio", json={"proposals": [raw]})
        assert ranked.status_code == 200, ranked.text
        [entry] = ranked.json()["entries"]

    proposal = tmp_path / "proposal.json"
    proposal.write_text(json.dumps(raw), encoding="utf-8")
    review = worthit("review", "--json", str(proposal))
    assert review.returncode in (0, 1), review.stderr
    offline = json.loads(review.stdout)

    body = tmp_path / "body.md"
    body.write_text(f"Some description.\n\n```worthit\n{block}\n```\n", encoding="utf-8")
    gated = gate(tmp_path, "--body", str(body))

    expected = _core(api)
    assert _core(stored) == expected
    assert _core(from_slack) == expected
    assert _core(offline) == expected
    assert stored["reasoning"] == api["reasoning"] == offline["reasoning"]
    assert gated.verdict() == (api["verdict"], api["statement"])
    assert (entry["verdict"], entry["statement"]) == (api["verdict"], api["statement"])
    assert api["verdict"] == case.split("_fleet")[0]


PART2 = {
    "target": "my_kernel",
    "p": 0.012267,
    "p_end_to_end": 0.00014,
    "k": "inf",
    "baseline_ms": 3.606501,
    "scope": {"measured": "device_activity", "method": "timeline"},
    "breakdown_scope": "end_to_end",
    "breakdown": [
        {"name": "my_kernel", "ms": 0.014},
        {"name": "hipMemcpy", "ms": 62.6, "kind": "copy"},
        {"name": "hipMalloc", "ms": 22.0, "kind": "alloc"},
        {"name": "rest", "ms": 15.386, "kind": "other"},
    ],
}
FLEET = {"target": "rope", "p": 0.008, "k": 2, "cost_weeks": 3, "flags": {"fleet_gpus": 80000}}
QUESTIONS = (
    "1. Can these numbers be trusted?",
    "2. What is it worth?",
    "3. What does it cost?",
    "4. Is there a better use of the effort?",
    "5. On what conditions?",
)


@pytest.mark.parametrize(
    ("raw", "verdict", "worth_says"),
    [(PART2, "redirect", "0.014% of the profiled run"), (FLEET, "fund_if", "320 GPU-equivalents")],
)
def test_review_explain_prints_the_stages_in_order(raw: dict[str, Any], verdict: str, worth_says: str) -> None:
    """`worthit review --explain` on the seed's Part 2 case and on a fleet case: each stage, its answer, in order."""
    done = worthit("review", "--explain", "-", stdin=json.dumps(raw))
    assert done.returncode == (1 if verdict == "redirect" else 0), done.stderr
    out = done.stdout
    assert out.startswith(f"verdict: {verdict}")
    positions = [out.index(question) for question in QUESTIONS]
    assert positions == sorted(positions)
    worth = out[positions[1] : positions[2]]
    assert worth_says in worth
    assert "reasoning:" not in worthit("review", "-", stdin=json.dumps(raw)).stdout
