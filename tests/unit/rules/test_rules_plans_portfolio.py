"""plan() and portfolio(): the fewest targets and their alternatives, ceilings, ranking by return per week."""

from __future__ import annotations

import math
import random

import msgspec
import pytest

from tests.unit.rules.helpers import SEED_BREAKDOWN, assert_one_sentence
from worthit.rules.errors import InvalidInput
from worthit.rules.model import MoreTarget, Phase, Proposal, Scope
from worthit.rules.plans import plan
from worthit.rules.policy import default_policy
from worthit.rules.portfolio import portfolio
from worthit.rules.text import num

PHASES = [Phase(**phase) for phase in SEED_BREAKDOWN]


def test_plan_message_names_the_steps_the_choice_and_what_is_left() -> None:
    """The plan's sentence lists the two sure steps, the third's options, and the copy and gaps left."""
    result = plan(PHASES, target_speedup=2)
    assert_one_sentence(result.message)
    for name in ("gemm_qkv", "attention_softmax", "elementwise_gelu", "layernorm", "H2D copy", "host gaps", "23 ms"):
        assert name in result.message


def test_plan_unreachable_target_states_the_best_achievable() -> None:
    """5× is past the 4.35× ceiling of all kernel work: unreachable, with 30.7 ms (3.26×) as the best at 10×."""
    result = plan(PHASES, target_speedup=5)
    assert not result.reachable
    assert result.best_ms == pytest.approx(30.7, abs=1e-9)
    assert len(result.steps) == 5
    assert not result.last_step_options
    assert "out of reach" in result.message
    assert "30.7 ms" in result.message


def test_an_unreachable_plan_states_the_uniform_k_that_reaches_it() -> None:
    """4× on the seed is 25 ms: the 23 ms of copy and host gaps stay, so the 77 ms of kernels must come to 2 ms,
    k = 77 / (25 − 23) = 38.5 on every kernel (the seeds' note said 38.5×: verified). The sentence said only that 10×
    falls short at 30.7 ms."""
    result = plan(PHASES, target_speedup=4, k=10)
    assert not result.reachable
    kernels = 34 + 21 + 12 + 6 + 4
    assert result.k_needed == pytest.approx(kernels / (100 / 4 - 23), rel=1e-12)
    assert result.k_needed == pytest.approx(38.5, rel=1e-12)
    assert result.message == (
        "25 ms (4×) is out of reach: every plannable phase at 10× gives 30.7 ms (3.257×); all kernel work at 38.5× "
        "would reach it, and at zero stops at 23 ms, leaving H2D copy and host gaps."
    )
    assert_one_sentence(result.message)
    # at that k every kernel's saving brings the scope to the target
    assert 100 - sum(ph.ms * (1 - 1 / result.k_needed) for ph in PHASES if ph.kind == "kernel") == pytest.approx(25)


def test_a_plan_beyond_the_ceiling_says_no_uniform_k_reaches_it() -> None:
    """5× (20 ms) is below the 23 ms left at zero: no k reaches it, and the sentence says so."""
    result = plan(PHASES, target_speedup=5)
    assert result.k_needed is None
    assert "no k on kernel work reaches it: at zero it stops at 23 ms, leaving H2D copy and host gaps" in result.message
    assert_one_sentence(result.message)


def test_a_plan_whose_target_is_the_ceiling_needs_the_work_removed() -> None:
    """23 ms is exactly all kernel work at zero: only removing it all reaches the target (k = ∞)."""
    result = plan(PHASES, target_ms=23, k=10)
    assert result.k_needed == "inf"
    assert "only all kernel work removed reaches it, stopping at 23 ms" in result.message
    assert_one_sentence(result.message)


def test_a_reachable_plan_carries_no_k_needed() -> None:
    assert plan(PHASES, target_speedup=2).k_needed is None


def test_the_k_needed_is_uniform_whatever_the_per_phase_k() -> None:
    """Per-phase k (21 ms removed, 34 ms at 1.25×, the rest at the default 10×) reaches 65 ms of the 25 ms asked;
    one k over every kernel still reaches it at 38.5×, and the sentence says "at their k" for the given ones."""
    result = plan(PHASES, target_speedup=4, k={"gemm_qkv": 1.25, "attention_softmax": "inf"})
    assert not result.reachable
    assert result.k_needed == pytest.approx(38.5, rel=1e-12)
    assert "every plannable phase at their k gives" in result.message
    assert "all kernel work at 38.5× would reach it" in result.message


def test_plan_target_ms_and_already_met() -> None:
    """A target in ms works like a speedup; a target the scope already meets needs no step."""
    assert [s.phase for s in plan(PHASES, target_ms=70).steps] == ["gemm_qkv"]
    met = plan(PHASES, target_ms=100)
    assert met.reachable
    assert not met.steps
    assert "no phase" in met.message


def test_plan_per_phase_k_orders_by_saving() -> None:
    """With per-phase k the largest saving goes first: 21 ms removed beats 34 ms at 1.25×."""
    result = plan(PHASES, target_ms=75, k={"gemm_qkv": 1.25, "attention_softmax": "inf"})
    assert result.steps[0].phase == "attention_softmax"
    assert result.steps[0].saving_ms == pytest.approx(21)
    assert result.all_at_zero.new_ms == pytest.approx(23)


def test_plan_kinds_and_unaccounted_time() -> None:
    """Copies can be planned when asked; a baseline beyond the phases leaves unaccounted time."""
    result = plan(PHASES, target_speedup=4, kinds=("kernel", "copy"), k="inf")
    assert result.reachable
    assert result.all_at_zero.new_ms == pytest.approx(5)
    partial = plan(PHASES, target_speedup=2, baseline_ms=110)
    assert partial.left[-1].name == "unaccounted"
    assert partial.left[-1].ms == pytest.approx(10)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"target_speedup": 2, "target_ms": 50},
        {"target_speedup": 0},
        {"target_speedup": 2, "k": -1},
        {"target_ms": -1},
    ],
)
def test_plan_rejects_bad_requests(kwargs: dict[str, float]) -> None:
    """Exactly one positive target, and k > 0."""
    with pytest.raises(InvalidInput):
        plan(PHASES, **kwargs)  # type: ignore[arg-type]


def test_plan_rejects_empty_breakdown() -> None:
    with pytest.raises(InvalidInput):
        plan([], target_speedup=2)


ATT = Proposal(title="attention", target="attention_softmax", p=0.21, k=10, baseline_ms=100, cost_weeks=3)
LN = Proposal(title="layernorm", target="layernorm", p=0.06, k=10, baseline_ms=100, cost_weeks=2)


def test_portfolio_combined_speedup_sums_ms_savings() -> None:
    """18.9 + 5.4 ms off 100 ms is 75.7 ms, 1.321×; never 1.233 × 1.057."""
    result = portfolio([LN, ATT], default_policy())
    assert result.rate_unit == "ms/week"
    assert result.combined_saving_ms == pytest.approx(24.3)
    assert result.combined_new_ms == pytest.approx(75.7)
    assert result.combined_speedup == pytest.approx(100 / 75.7)
    assert result.combined_speedup != pytest.approx((1 / 0.811) * (1 / 0.946))
    assert_one_sentence(result.message)


def test_portfolio_budget_funds_the_better_rate_when_both_do_not_fit() -> None:
    """Under a 3-week budget attention (6.3 ms/week) is funded and layernorm is not."""
    result = portfolio([LN, ATT], default_policy(), budget_weeks=3)
    assert [(e.target, e.funded) for e in result.entries] == [("attention_softmax", True), ("layernorm", False)]
    assert result.funded_weeks == 3
    assert result.combined_new_ms == pytest.approx(81.1)
    assert "budget" in (result.entries[1].note or "")


def test_portfolio_budget_funds_the_set_that_saves_most_not_the_rate_order() -> None:
    """3 weeks: by rate, y (5 ms/week) then z (2 ms/week) save 9 ms; x alone (4.5 ms/week) saves 13.5 ms."""
    y = Proposal(title="y", target="y", p=0.10, k=2, baseline_ms=100, cost_weeks=1)
    x = Proposal(title="x", target="x", p=0.18, k=4, baseline_ms=100, cost_weeks=3)
    z = Proposal(title="z", target="z", p=0.08, k=2, baseline_ms=100, cost_weeks=2)
    result = portfolio([y, x, z], default_policy(), budget_weeks=3)
    assert [(e.target, e.funded) for e in result.entries] == [("y", False), ("x", True), ("z", False)]
    assert result.combined_saving_ms == pytest.approx(0.18 * 100 * (1 - 1 / 4))
    assert result.funded_weeks == 3
    assert result.message.startswith("Fund x under the 3-week budget, though y has the best return")
    assert "budget" in (result.entries[0].note or "")
    assert_one_sentence(result.message)


def test_portfolio_an_ambitious_alternative_beats_a_cheap_one_that_would_use_its_budget() -> None:
    """4 weeks: attention 2× (1 week, 10.5 ms) and a 2-week 1.2× gemm save 10.5 + 34·(1 − 1/1.2) = 16.2 ms; the 10×
    rewrite of the same attention (3 weeks) saves 18.9 ms, and alternatives on one phase never add."""
    quick = Proposal(title="attn 2x", target="attention_softmax", p=0.21, k=2, baseline_ms=100, cost_weeks=1)
    gemm = Proposal(title="gemm", target="gemm_qkv", p=0.34, k=1.2, baseline_ms=100, cost_weeks=2)
    rewrite = Proposal(title="attn 10x", target="attention_softmax", p=0.21, k=10, baseline_ms=100, cost_weeks=3)
    result = portfolio([quick, rewrite, gemm], default_policy(), budget_weeks=4)
    funded = [e.title for e in result.entries if e.funded]
    assert funded == ["attn 10x"]
    assert result.combined_new_ms == pytest.approx(100 - 18.9)
    assert "attn 2x" in result.message  # titles, the target being shared
    assert "attn 10x" in result.message


def test_portfolio_same_target_twice_is_not_added() -> None:
    """Two proposals on one phase are alternatives: only the better-ranked one is funded."""
    other = Proposal(target="attention_softmax", p=0.21, k=2, baseline_ms=100, cost_weeks=1)
    result = portfolio([ATT, other], default_policy())
    assert sum(entry.funded for entry in result.entries) == 1


def test_portfolio_funds_the_ambitious_alternative_when_its_step_up_pays() -> None:
    """Attention 2× in 1 week (10.5 ms) or 10× in 3 (18.9 ms): the step up is 8.4 ms for 2 more weeks, 4.2% of the
    step a week against the 1% bar, so the 10× is funded, though the 2× has the better rate."""
    quick = Proposal(title="quick", target="attention_softmax", p=0.21, k=2, baseline_ms=100, cost_weeks=1)
    result = portfolio([quick, ATT], default_policy())
    assert [(e.title, e.funded) for e in result.entries] == [("quick", False), ("attention", True)]
    assert result.combined_saving_ms == pytest.approx(18.9)
    assert "same target as rank 2" in (result.entries[0].note or "")
    assert result.message.startswith(
        "Fund attention over quick, the better return (10.5 ms per engineer-week): its 8.4 ms more for 2 more weeks "
        "pays too; it takes the step from 100 ms to 81.1 ms (1.233×)."
    )


@pytest.mark.parametrize(("fleet", "ambitious"), [(None, False), (1000, True)])
def test_portfolio_a_step_up_that_saves_a_rounding_error_more_is_not_funded(fleet: int | None, ambitious: bool) -> None:
    """2× in 1 week saves 10.5 ms; 2.2× in 3 weeks saves 21·(1 − 1/2.2) = 11.45 ms: 0.95% more of the step, under
    the 1% noise floor, for 2 more weeks. On 1,000 GPUs those 0.95% free 9.5 GPU-equivalents, about $166k a year
    against $10k of engineering, and the step up pays."""
    flags = {"fleet_gpus": fleet} if fleet else {}
    quick = Proposal(title="quick", target="attention_softmax", p=0.21, k=2, baseline_ms=100, cost_weeks=1)
    more = Proposal(title="more", target="attention_softmax", p=0.21, k=2.2, baseline_ms=100, cost_weeks=3)
    quick, more = (msgspec.convert(msgspec.to_builtins(x) | {"flags": flags}, Proposal) for x in (quick, more))
    result = portfolio([quick, more], default_policy())
    funded = {e.title: e.funded for e in result.entries}
    assert funded == {"quick": not ambitious, "more": ambitious}
    expected = 21 * (1 - 1 / 2.2) if ambitious else 10.5
    assert result.combined_saving_ms == pytest.approx(expected)
    if not ambitious:
        [note] = [e.note for e in result.entries if e.title == "more"]
        assert note == "same target as rank 1: 2 more weeks for 0.95% more of the step do not pay"


def test_portfolio_without_baselines_ranks_by_share_per_week() -> None:
    """Without a baseline the rate is a share of the step per week, combined as 1 / (1 − Σ saving)."""
    a = Proposal(target="a", p=0.21, k=10, cost_weeks=3)
    b = Proposal(target="b", p=0.06, k=10, cost_weeks=2)
    result = portfolio([a, b], default_policy())
    assert result.rate_unit == "fraction/week"
    assert result.entries[0].rate == pytest.approx(0.063)
    assert result.combined_speedup == pytest.approx(1 / (1 - 0.243))


def test_portfolio_declined_proposals_are_ranked_not_funded() -> None:
    """A proposal whose own verdict is decline is ranked but not funded."""
    tiny = Proposal(target="tiny", p=0.001, k=10, baseline_ms=100, cost_weeks=1)
    result = portfolio([ATT, tiny], default_policy())
    assert [e.funded for e in result.entries] == [True, False]
    assert "decline" in (result.entries[1].note or "")


@pytest.mark.parametrize(
    "proposals",
    [
        [],
        [Proposal(p=0.2, k=2, baseline_ms=100), Proposal(p=0.2, k=2, baseline_ms=90)],
        [Proposal(p=0.2, k=2, scope=Scope(workload="a")), Proposal(p=0.2, k=2, scope=Scope(workload="b"))],
    ],
)
def test_portfolio_rejects_mixed_workloads_and_baselines(proposals: list[Proposal]) -> None:
    """Savings only add on one step of one workload."""
    with pytest.raises(InvalidInput):
        portfolio(proposals, default_policy())


def test_portfolio_free_proposal_ranks_first_without_a_ratio() -> None:
    """A zero-cost saving has an unbounded rate: first, and no finite ratio to the next."""
    free = Proposal(target="free", p=0.1, k=2, baseline_ms=100, cost_weeks=0)
    result = portfolio([ATT, free], default_policy())
    assert result.entries[0].target == "free"
    assert result.entries[0].rate == math.inf
    assert result.top_ratio is None
    assert_one_sentence(result.message)


def test_portfolio_of_200_proposals_stays_within_budget_and_beats_the_rate_order() -> None:
    """Enough fractional costs that the search merges its states on a grid: the set stays within the budget, and
    saves at least what funding by rate order would. The 200 targets are disjoint phases of one step (their
    shares add up to under 100%), under a policy whose bars are low enough that most are fundable."""
    rng = random.Random(1)
    proposals = [
        Proposal(target=f"k{i}", p=rng.uniform(0.0005, 0.0045), k=rng.choice([2, 4, 10]), baseline_ms=100)
        for i in range(200)
    ]
    proposals = [msgspec.structs.replace(x, cost_weeks=rng.uniform(0.3, 3)) for x in proposals]
    policy = msgspec.structs.replace(default_policy(), noise_floor=0.0001, min_rate=0.00001)
    budget = 150.0  # the frontier passes _STATES states four times on the way
    result = portfolio(proposals, policy, budget_weeks=budget)
    assert sum(entry.funded for entry in result.entries) > 50
    assert result.funded_weeks <= budget
    greedy, used = 0.0, 0.0
    for entry in result.entries:  # ranked by rate
        if entry.verdict in ("fund", "fund_if") and used + (entry.cost_weeks or 0.0) <= budget:
            used += entry.cost_weeks or 0.0
            greedy += entry.saving_ms or 0.0
    assert result.combined_saving_ms is not None
    assert result.combined_saving_ms >= greedy


def test_plan_refuses_phases_that_sum_past_the_baseline() -> None:
    """The seed's 100 ms of phases against an 80 ms baseline overlap by 20 ms: planning on them gave 10.7 ms at 10×
    and 3 ms at zero while still leaving 23 ms of copy and host gaps, so the plan is refused naming both sums."""
    with pytest.raises(InvalidInput, match="sum to 100 ms, more than its 80 ms") as caught:
        plan(PHASES, target_speedup=2, baseline_ms=80)
    assert caught.value.pointer == "/breakdown"
    within = plan(PHASES, target_speedup=2, baseline_ms=99.5)  # inside the policy's 1% breakdown tolerance
    assert within.all_at_zero.new_ms == pytest.approx(99.5 - 77)


def test_plan_ceiling_names_the_kinds_it_planned() -> None:
    """With copies planned too, the ceiling is of kernel and copy work (100 − 77 − 18 = 5 ms), not "kernel work";
    with every kind planned nothing is left, said as such rather than "stops at 0 ms"."""
    copies = plan(PHASES, target_speedup=4, kinds=("kernel", "copy"), k="inf")
    assert copies.all_at_zero.new_ms == pytest.approx(5)
    assert "all kernel and copy work at zero stops at 5 ms, leaving host gaps" in copies.message
    assert "all kernel work" not in copies.message
    everything = plan(PHASES, target_speedup=5, kinds=("kernel", "copy", "host"), k={"H2D copy": "inf"})
    assert everything.all_at_zero.speedup is None
    assert "all kernel, copy and host work at zero would leave nothing of the 100 ms" in everything.message
    assert "stops at 0 ms" not in everything.message


def test_portfolio_a_proposal_that_alone_exceeds_the_budget_is_not_said_to_save_less() -> None:
    """Seed Q3 under 2 weeks: attention's 3 weeks cannot fit, though its 18.9 ms beats layernorm's 5.4 ms; the note
    said "the 2 of 2 engineer-weeks funded save more", which is false. Both the note and the sentence say it does
    not fit."""
    result = portfolio([LN, ATT], default_policy(), budget_weeks=2)
    attention, layernorm = result.entries
    assert (attention.target, attention.funded, layernorm.funded) == ("attention_softmax", False, True)
    assert attention.saving_ms == pytest.approx(18.9)
    assert layernorm.saving_ms == pytest.approx(5.4)
    assert attention.note == "its 3 engineer-weeks alone exceed the 2-week budget"
    assert "save more" not in (attention.note or "")
    assert result.message == (
        "Fund layernorm under the 2-week budget: attention_softmax has the best return (6.3 ms per engineer-week) "
        "but its 3 engineer-weeks do not fit; it takes the step from 100 ms to 94.6 ms (1.057×)."
    )
    assert_one_sentence(result.message)


def test_portfolio_refuses_targets_whose_shares_overlap() -> None:
    """attention 50%, mlp 40% and a fused attention+mlp 90% of one step add up to 180%: funding all three claimed
    100 → 25 ms (4×), though the step is at best 25 + 20 = 45 ms shorter (55 ms, 1.82×)."""
    attention = Proposal(target="attention", p=0.5, k=2, baseline_ms=100, cost_weeks=4)
    mlp = Proposal(target="mlp", p=0.4, k=2, baseline_ms=100, cost_weeks=3)
    fused = Proposal(target="fused attention+mlp", p=0.9, k=1.5, baseline_ms=100, cost_weeks=5)
    with pytest.raises(InvalidInput, match=r"shares add up to 180% \(attention 50%, mlp 40% and fused") as caught:
        portfolio([attention, mlp, fused], default_policy())
    assert caught.value.pointer == "/proposals"
    assert portfolio([attention, mlp], default_policy()).combined_new_ms == pytest.approx(55)


def test_portfolio_refuses_a_more_target_another_proposal_targets() -> None:
    """attention 2× that also speeds layernorm (10%) 2×, beside layernorm 10×: funding both added 5 + 9 ms off
    the same 10 ms phase (29 ms in all, 1.408×), more than the 10 ms layernorm holds allows."""
    fused = Proposal(
        target="attention",
        p=0.3,
        k=2,
        baseline_ms=100,
        cost_weeks=3,
        more_targets=[msgspec.convert({"name": "layernorm", "k": 2, "p": 0.1}, MoreTarget)],
    )
    alone = Proposal(target="layernorm", p=0.1, k=10, baseline_ms=100, cost_weeks=1)
    with pytest.raises(InvalidInput, match="attention also speeds up layernorm, which proposal 2 targets") as caught:
        portfolio([fused, alone], default_policy())
    assert caught.value.pointer == "/proposals/0/more_targets/0/name"


def _on(workload: str, **fields: object) -> Proposal:
    common = {"baseline_ms": 100, "cost_weeks": 1, "k": 2, "scope": {"workload": workload}}
    return msgspec.convert(common | fields, Proposal)


def test_portfolio_proposals_without_a_fleet_are_valued_on_the_one_the_workload_states() -> None:
    """Two 1% kernels at 2× on one serving workload, 0.5% of the step each (under the 1% floor per run); one states
    the 1,000-GPU fleet. Each frees 1,000 × 0.5% = 5 GPU-equivalents on that fleet: both are funded, together
    100 → 99 ms, and the one that stated no fleet says which fleet it was valued on (it was declined as a
    rounding error while the same saving with the fleet was funded)."""
    softmax = _on("serving", title="softmax", target="softmax", p=0.01)
    gemm = _on("serving", title="gemm", target="gemm", p=0.01, flags={"fleet_gpus": 1000})
    result = portfolio([softmax, gemm], default_policy())
    by = {e.title: e for e in result.entries}
    assert (by["softmax"].verdict, by["softmax"].funded) == ("fund_if", True)
    assert (by["gemm"].verdict, by["gemm"].funded) == ("fund_if", True)
    assert by["softmax"].note == (
        "valued on the workload's 1,000-GPU fleet, which proposal 2 states and this one does not"
    )
    assert by["gemm"].note is None
    assert by["softmax"].statement == by["gemm"].statement
    assert f"on 1,000 GPUs it frees {num(1000 * 0.01 * (1 - 1 / 2))} GPU-equivalents" in by["softmax"].statement
    assert result.combined_saving_ms == pytest.approx(2 * 100 * 0.01 * (1 - 1 / 2))
    assert result.combined_new_ms == pytest.approx(99.0)


def test_portfolio_a_fixed_job_is_shared_with_its_days() -> None:
    """The fleet stated as a 30-day job on 2,000 GPUs is the workload's: the other proposal is valued over the job
    too, and its note names both figures."""
    a = _on("pretrain", title="a", target="a", p=0.04)
    b = _on("pretrain", title="b", target="b", p=0.04, flags={"fleet_gpus": 2000, "run_days": 30})
    result = portfolio([a, b], default_policy())
    note = next(e.note for e in result.entries if e.title == "a")
    assert note == (
        "valued on the workload's 2,000-GPU fleet for 30 days, which proposal 2 states and this one does not"
    )


@pytest.mark.parametrize(
    ("second", "field", "said"),
    [
        ({"fleet_gpus": 2000}, "fleet_gpus", "proposal 1 states `flags.fleet_gpus` 1,000 and proposal 2 states 2,000"),
        ({"fleet_gpus": 1000, "run_days": 30}, "run_days", "`flags.run_days` nothing and proposal 2 states 30"),
    ],
)
def test_portfolio_refuses_proposals_that_state_different_fleets(second: dict[str, int], field: str, said: str) -> None:
    """One workload, two fleets: which one it runs on is the proposer's to say, so the portfolio names both."""
    a = _on("serving", target="a", p=0.01, flags={"fleet_gpus": 1000})
    b = _on("serving", target="b", p=0.01, flags=second)
    with pytest.raises(InvalidInput) as raised:
        portfolio([a, b], default_policy())
    assert raised.value.pointer == f"/proposals/1/flags/{field}"
    assert said in str(raised.value)
