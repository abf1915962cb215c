"""The feedback loop end to end on a real server, on SQLite and PostgreSQL: outcomes, calibration, history."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import Server, migrated
from worthit.service.db.policies import PolicyStore
from worthit.service.policies.service import PolicyService

pytestmark = pytest.mark.e2e

ATTENTION = {
    "title": "attention_softmax 10x",
    "team": "kernels",
    "target": "attention_softmax",
    "p": 0.21,
    "k": 10,
    "baseline_ms": 100,
    "cost_weeks": 3,
    "scope": {"workload": "inference", "model": "llama-8b", "dtype": "bf16", "device": "MI300X"},
}
MEASURED = {"target_ms": 3.5, "step_ms": 82.5, "scope": {"model": "llama-8b", "dtype": "bf16", "device": "MI300X"}}


def put_policy(database_url: str, name: str, raw: dict[str, Any]) -> None:
    """Store a policy version directly (through the service the API's PUT uses), before a server starts."""

    async def run() -> None:
        async with migrated(database_url) as (engine, writer):
            await PolicyService(PolicyStore(engine, writer)).put(name, raw)

    asyncio.run(run())


def decide(client: httpx.Client, proposal: dict[str, Any], policy: str | None = None) -> dict[str, Any]:
    response = client.post("/v1/decisions", json=proposal, params={"policy": policy} if policy else None)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def finding(decision: dict[str, Any], rule: str) -> dict[str, Any] | None:
    return next((f for f in decision["findings"] if f["rule"] == rule), None)


def test_outcome_realized_k_and_speedup_exactly(database_url: str, server_factory: Callable[..., Server]) -> None:
    """k=10 proposed at p=0.21 of 100 ms; target 21 → 3.5 ms is k=6.0 (ratio 0.6); step 82.5 ms is S=1.2121…"""
    server = server_factory(database_url)
    with server.client() as client:
        decision = decide(client, ATTENTION)
        url = f"/v1/decisions/{decision['id']}/outcome"
        assert client.get(url).status_code == 404
        created = client.post(url, json=MEASURED | {"note": "after the fused kernel landed"})
        assert created.status_code == 201, created.text
        assert created.headers["location"] == url
        outcome = created.json()
        assert outcome["target_before_ms"] == pytest.approx(21.0, abs=1e-12)
        assert outcome["realized"]["k"] == pytest.approx(6.0, abs=1e-12)
        assert outcome["k_ratio"] == pytest.approx(0.6, abs=1e-12)
        assert outcome["realized"]["speedup"] == pytest.approx(100 / 82.5, rel=1e-12)
        assert round(outcome["realized"]["speedup"], 4) == 1.2121
        assert outcome["predicted"]["k"] == 10
        assert outcome["predicted"]["speedup"] == pytest.approx(1 / 0.811, rel=1e-12)
        assert outcome["predicted"]["step_ms"] == pytest.approx(81.1, abs=1e-9)
        assert outcome["predicted"]["target_ms"] == pytest.approx(2.1, abs=1e-9)
        assert outcome["speedup_ratio"] == pytest.approx((100 / 82.5) * 0.811, rel=1e-12)
        assert outcome["team"] == "kernels"
        assert outcome["workload"] == "inference"
        assert outcome["note"] == "after the fused kernel landed"
        assert outcome["statement"] == (
            "Realized k is 6× against the proposed 10× for attention_softmax (0.6× of the estimate); the step went "
            "from 100 ms to 82.5 ms (1.212×) against a predicted 81.1 ms (1.233×)."
        )
        assert client.get(url).json() == outcome
        assert client.get(f"/v1/decisions/{decision['id']}").json() == decision, "the decision stays as made"
        again = client.post(url, json={"step_ms": 90})
        assert again.status_code == 409, "outcomes are kept as measured, not overwritten"
        assert client.get(url).json() == outcome

        calibration = client.get("/v1/calibration", params={"team": "kernels", "workload": "inference"}).json()
        assert calibration["count"] == 1
        assert calibration["median_ratio"] == pytest.approx(0.6, abs=1e-12)
        assert (calibration["min_ratio"], calibration["max_ratio"]) == pytest.approx((0.6, 0.6))
        assert [point["decision_id"] for point in calibration["points"]] == [decision["id"]]
        assert client.get("/v1/calibration", params={"team": "nobody"}).json()["median_ratio"] is None

    server.stop()
    restarted = server_factory(database_url)
    with restarted.client() as client:
        assert client.get(f"/v1/decisions/{decision['id']}/outcome").json() == outcome


def test_median_and_range_over_several_outcomes(database_url: str, server_factory: Callable[..., Server]) -> None:
    """Ratios 0.6, 0.25 and 1.0 (target 21 ms → 3.5, 8.4, 2.1 at k=10): median 0.6, range 0.25..1.0."""
    server = server_factory(database_url)
    with server.client() as client:
        for target_ms in (3.5, 8.4, 2.1):
            decision = decide(client, ATTENTION)
            response = client.post(f"/v1/decisions/{decision['id']}/outcome", json={"target_ms": target_ms})
            assert response.status_code == 201, response.text
        decide(client, ATTENTION | {"team": "other"})
        calibration = client.get("/v1/calibration", params={"team": "kernels"}).json()
        assert calibration["count"] == 3
        assert calibration["median_ratio"] == pytest.approx(0.6)
        assert calibration["min_ratio"] == pytest.approx(0.25)
        assert calibration["max_ratio"] == pytest.approx(1.0)
        assert client.get("/v1/calibration", params={"workload": "inference"}).json()["count"] == 3


def test_mismatched_scope_is_a_422_naming_the_fields_and_stores_nothing(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    server = server_factory(database_url)
    with server.client() as client:
        decision = decide(client, ATTENTION)
        url = f"/v1/decisions/{decision['id']}/outcome"
        unlike = MEASURED | {"scope": {"model": "llama-8b", "dtype": "fp8", "device": "H100", "input": "bs64"}}
        response = client.post(url, json=unlike)
        assert response.status_code == 422
        assert response.headers["content-type"].startswith("application/problem+json")
        problem = response.json()
        assert [error["pointer"] for error in problem["errors"]] == ["/scope/dtype", "/scope/device"]
        assert "dtype (proposal bf16, outcome fp8)" in problem["detail"]
        assert "device (proposal MI300X, outcome H100)" in problem["detail"]
        assert "input" not in problem["detail"].split(";")[0], "unstated on the proposal: not a mismatch"
        assert client.get(url).status_code == 404
        assert client.get("/v1/calibration", params={"team": "kernels"}).json()["count"] == 0
        assert client.post(url, json={"step_ms": 82.5}).status_code == 201, "an unstated scope is not compared"


def test_outcome_bodies_are_strict_and_decisions_must_exist(
    sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    server = server_factory(sqlite_url)
    with server.client() as client:
        decision = decide(client, ATTENTION)
        url = f"/v1/decisions/{decision['id']}/outcome"
        for body, pointer in (
            ({}, ""),
            ({"target_ms": "3.5"}, "/target_ms"),
            ({"step_ms": 0}, "/step_ms"),
            ({"step_ms": 80, "extra": 1}, "/extra"),
        ):
            response = client.post(url, json=body)
            assert response.status_code == 422, body
            assert response.json()["errors"][0]["pointer"] == pointer, body
        missing = client.post("/v1/decisions/00000000-0000-7000-8000-000000000000/outcome", json={"step_ms": 80})
        assert missing.status_code == 404
        assert client.get("/v1/decisions/00000000-0000-7000-8000-000000000000/outcome").status_code == 404
        shares_only = decide(client, {"target": "t", "p": 0.21, "k": 10})
        no_baseline = client.post(f"/v1/decisions/{shares_only['id']}/outcome", json={"target_ms": 3})
        assert no_baseline.status_code == 422
        assert no_baseline.json()["errors"][0]["pointer"] == "/target_ms"


def test_idempotency_key_replays_the_first_answer(database_url: str, server_factory: Callable[..., Server]) -> None:
    server = server_factory(database_url)
    with server.client() as client:
        decision = decide(client, ATTENTION)
        url = f"/v1/decisions/{decision['id']}/outcome"
        headers = {"Idempotency-Key": "outcome-1"}
        first = client.post(url, json=MEASURED, headers=headers)
        assert first.status_code == 201
        replay = client.post(url, json=MEASURED, headers=headers)
        assert replay.status_code == 200
        assert replay.json() == first.json()
        reused = client.post(url, json=MEASURED | {"step_ms": 90}, headers=headers)
        assert reused.status_code == 409
        assert client.get(url).json() == first.json()


def _outcomes(client: httpx.Client, proposal: dict[str, Any], reports: list[dict[str, Any]]) -> None:
    for report in reports:
        decision = decide(client, proposal)
        response = client.post(f"/v1/decisions/{decision['id']}/outcome", json=report)
        assert response.status_code == 201, response.text


def test_a_calibrating_policy_evaluates_at_the_realized_k_and_the_calibration_check_says_so(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    """Team kernels realized 0.6× of its k three times: 10× is evaluated as 6×, still fund, and the calibration
    finding says so. Team optimists realized 0.2× three times and once, by a typo, 2·10⁹×: the typo counts at the ×10
    bound, the median stays 0.2, so a 1.5% target at 10× (fund) is evaluated at 2× (0.75%, under the noise floor):
    decline, decided by calibration in the worth stage, which the statement and the reasoning both name. A team with
    one outcome has no calibration at all (three are needed): its decision is the plain one."""
    put_policy(database_url, "calibrated", {"calibrate": True})
    server = server_factory(database_url)
    with server.client() as client:
        _outcomes(client, ATTENTION, [MEASURED] * 3)  # 21 ms → 3.5 ms: realized 6× of 10×
        optimists = ATTENTION | {"team": "optimists"}
        _outcomes(client, optimists, [{"target_ms": 10.5}] * 3 + [{"target_ms": 1e-8}])  # 2×, and one 2.1·10⁹×
        _outcomes(client, ATTENTION | {"team": "anecdote"}, [{"target_ms": 10.5}])

        plain = decide(client, ATTENTION)
        assert finding(plain, "calibration") is None, "the default policy does not calibrate"

        held = decide(client, ATTENTION, policy="calibrated")
        assert held["verdict"] == "fund"
        assert held["amdahl"]["k"] == pytest.approx(6.0), "every figure is the calibrated one"
        assert held["amdahl"]["speedup"] == pytest.approx(1 / (0.79 + 0.21 / 6))
        assert held["proposal"]["k"] == 10, "the proposal is stored as proposed"
        calibration = finding(held, "calibration")
        assert calibration is not None
        assert calibration["effect"] == "info"
        assert calibration["stage"] == "worth"
        figures = calibration["figures"]
        assert figures["median_ratio"] == pytest.approx(0.6)
        assert figures["outcomes"] == 3
        assert (figures["proposed_k"], figures["calibrated_k"]) == pytest.approx((10.0, 6.0))
        assert (figures["verdict"], figures["calibrated_verdict"]) == ("fund", "fund")
        assert calibration["message"] == (
            "At the 0.6× of estimated k that team kernels realized on inference (3 outcomes), 10× becomes 6×: "
            "still fund, at 1.212× end to end."
        )

        small = optimists | {"target": "small_kernel", "p": 0.015, "cost_weeks": 1}
        assert decide(client, small)["verdict"] == "fund"
        flipped = decide(client, small, policy="calibrated")
        assert flipped["verdict"] == "decline"
        assert flipped["deciding_rule"] == "calibration"
        assert flipped["statement"] == (
            "At the 0.2× of estimated k that team optimists realized on inference (4 outcomes, 1 of them counted at "
            "the ×10 bound), 10× becomes 2× and the verdict turns from fund to decline: 2× on 1.5% of the step saves "
            "0.75% of the step, under the 1% noise floor."
        )
        worth = next(stage for stage in flipped["reasoning"] if stage["stage"] == "worth")
        assert "calibration" in worth["rules"]
        assert worth["answer"].endswith(flipped["statement"]) or flipped["statement"] in worth["answer"]
        flip = finding(flipped, "calibration")
        assert flip is not None
        assert flip["figures"]["bounded_outcomes"] == 1
        assert flip["figures"]["median_ratio"] == pytest.approx(0.2)
        assert flip["figures"]["verdict"] == "fund"
        evaluated = client.post("/v1/evaluate", json=small, params={"policy": "calibrated"}).json()
        assert evaluated["statement"] == flipped["statement"]

        anecdote = ATTENTION | {"team": "anecdote"}
        alone = decide(client, anecdote, policy="calibrated")
        assert finding(alone, "calibration") is None
        assert alone["statement"] == decide(client, anecdote)["statement"]


SEED_STEPS = [
    ("attention", {"attention": 60, "mlp": 30, "rest": 10}),
    ("mlp", {"attention": 20, "mlp": 30, "rest": 10}),
    ("attention", {"attention": 20, "mlp": 15, "rest": 10}),
]


def seed_history(client: httpx.Client, workload: str = "llm-forward") -> list[dict[str, Any]]:
    """The second seed's loop as three decisions: 60/30/10 → 20/30/10 → 20/15/10 ms."""
    made = []
    for target, phases in SEED_STEPS:
        total = sum(phases.values())
        made.append(
            decide(
                client,
                {
                    "title": f"{target} on the {total} ms forward pass",
                    "target": target,
                    "p": phases[target] / total,
                    "k": 2,
                    "baseline_ms": total,
                    "scope": {"workload": workload},
                    "breakdown": [{"name": name, "ms": ms} for name, ms in phases.items()],
                },
            )
        )
    decide(client, {"target": "x", "p": 0.5, "k": 2, "scope": {"workload": workload}})  # no breakdown: no step
    return made


def test_workload_history_follows_the_bottleneck(database_url: str, server_factory: Callable[..., Server]) -> None:
    """attention (60%) → mlp (50%) → attention (44.4%), oldest first."""
    server = server_factory(database_url)
    with server.client() as client:
        made = seed_history(client)
        history = client.get("/v1/workloads/llm-forward").json()
        assert history["bottlenecks"] == ["attention", "mlp", "attention"]
        assert [step["decision_id"] for step in history["steps"]] == [d["id"] for d in made]
        assert [step["total_ms"] for step in history["steps"]] == [100, 60, 45]
        assert [step["bottleneck_share"] for step in history["steps"]] == pytest.approx([0.6, 0.5, 20 / 45])
        assert [[p["ms"] for p in step["phases"]] for step in history["steps"]] == [
            [60, 30, 10],
            [20, 30, 10],
            [20, 15, 10],
        ]
        assert client.get("/v1/workloads/unknown").status_code == 404


def test_names_postgres_cannot_store_match_nothing(database_url: str, server_factory: Callable[..., Server]) -> None:
    """A NUL in a name (PostgreSQL text cannot hold it) is rejected in a query, and matches nothing in a path;
    never a 5xx."""
    server = server_factory(database_url)
    with server.client() as client:
        rejected = client.get("/v1/calibration", params={"team": "a\x00b"})
        assert rejected.status_code == 400
        assert "team" in rejected.json()["detail"]
        assert client.get("/v1/workloads/a%00b").status_code == 404
        assert client.get("/workloads/a%00b").status_code == 404
        assert client.get("/decisions", params={"target": "\x00"}).status_code == 400


# Ownership: only the decision's own token, or an admin, records its outcome.


def test_only_the_deciding_token_or_an_admin_records_the_outcome(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    """Another team's write token recorded the outcome first (201) and the owner then got 409. Now it gets 403
    and nothing is stored; the owner's record is 201; an admin may record the outcome of any decision."""
    from tests.e2e.test_trust import create_token

    owner = {"authorization": f"Bearer {create_token(database_url, 'write', 'team-a')}"}
    other = {"authorization": f"Bearer {create_token(database_url, 'write', 'team-b')}"}
    admin = {"authorization": f"Bearer {create_token(database_url, 'admin', 'ops')}"}
    server = server_factory(database_url)
    with server.client() as client:
        mine = client.post("/v1/decisions", json=ATTENTION, headers=owner).json()
        url = f"/v1/decisions/{mine['id']}/outcome"
        squatted = client.post(url, json=MEASURED, headers=other)
        assert squatted.status_code == 403, squatted.text
        assert squatted.headers["content-type"] == "application/problem+json"
        assert "`team-b` did not make it" in squatted.json()["detail"]
        assert client.get(url, headers=owner).status_code == 404, "nothing was stored"
        recorded = client.post(url, json=MEASURED, headers=owner)
        assert recorded.status_code == 201
        assert recorded.json()["realized"]["k"] == 6.0
        theirs = client.post("/v1/decisions", json=ATTENTION, headers=other).json()
        by_admin = client.post(f"/v1/decisions/{theirs['id']}/outcome", json=MEASURED, headers=admin)
        assert by_admin.status_code == 201
