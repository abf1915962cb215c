"""Further targets behind a barrier: the step is the latest arrival at the collective, whatever the change touches.

Eight ranks, rank 6 the straggler: 3.276 ms of compute in a 3.407 ms step, 3.12 ms of it gemm_v2; rank 0 arrives at
2.52 ms. gemm_v2 2× faster takes rank 6 to 3.276 − 1.56 = 1.716 ms, so rank 0 sets the step. softmax, a further
target at 4% of rank 6's step (136.28 µs), is measured there only: the arrivals say nothing of its time on rank 0.
Every figure is re-derived here from the arrivals, as max over ranks of compute less each target's time times 1 − 1/k.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest

from tests.unit.rules.helpers import assert_one_sentence, finding, review
from worthit.rules.model import Proposal

STEP, STRAGGLER, GEMM, RANK_0 = 3.407, 3.276, 3.12, 2.52
SOFTMAX = 0.04 * STEP
MIN_RATE = 0.01  # the default policy funds 1% of the step per engineer-week

_PROPOSAL: dict[str, Any] = {
    "target": "gemm_v2",
    "p": GEMM / STEP,
    "k": 2,
    "baseline_ms": STEP,
    "cost_weeks": 2,
    "more_targets": [{"name": "softmax", "p": 0.04, "k": 2}],
    "flags": {
        "barrier": {
            "ranks": 8,
            "wait_fraction": 0.194,
            "straggler": 6,
            "step_ms": STEP,
            "rank": 6,
            "target_ms": GEMM,
            "arrivals": [
                {"rank": 6, "compute_ms": STRAGGLER, "target_ms": GEMM},
                {"rank": 0, "compute_ms": RANK_0},
            ],
        }
    },
}


def _proposal(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(_PROPOSAL)
    raw.update(changes)
    return raw


def _step_after(rank_6: float, rank_0: float) -> float:
    """The step after the change: the step less the straggler's arrival plus the latest arrival after."""
    return STEP - STRAGGLER + max(rank_6, rank_0)


def test_a_further_target_measured_on_the_straggler_saves_nothing_once_another_rank_sets_the_step() -> None:
    """The step after is max(1.716 − 0.068, 2.52) + 0.131 = 2.651 ms, a saving of 756 µs: softmax's 68.1 µs on rank 6
    is not seen. It was added on top of the capped saving (824.1 µs: 'takes the step … to 2.6 ms (1.319×)')."""
    evaluation = review(_proposal())
    after = _step_after(STRAGGLER - GEMM / 2 - SOFTMAX / 2, RANK_0)
    assert after == pytest.approx(2.651)
    amdahl = evaluation.amdahl
    assert amdahl.new_ms == pytest.approx(after)
    assert amdahl.saving_ms == pytest.approx(STEP - after)
    assert amdahl.speedup == pytest.approx(STEP / after)
    assert amdahl.rate == pytest.approx((STEP - after) / 2)
    assert evaluation.verdict == "fund"
    statement = evaluation.statement
    assert statement == (
        "Making gemm_v2 (91.6% of the step) 2× faster and softmax (4%) 2× faster takes the step from 3.4 ms to 2.7 ms "
        "(1.285×), not 1.8 ms: rank 0's 2.5 ms of compute then sets it and leaves softmax's 68.1 µs on rank 6 unseen, "
        "saving 756 µs, 378 µs per engineer-week."
    )
    said = finding(evaluation, "amdahl").figures
    assert said["uncapped_new_ms"] == pytest.approx(STEP - GEMM / 2 - SOFTMAX / 2)  # 1.779 ms: "not 1.8 ms"
    assert said["more_unseen_ms"] == pytest.approx(SOFTMAX / 2)
    assert_one_sentence(statement)
    # at zero every target is gone from rank 6, and rank 0's 2.52 ms is still there: the ceiling is the step's
    assert amdahl.ceiling_speedup == pytest.approx(STEP / _step_after(STRAGGLER - GEMM - SOFTMAX, RANK_0))


def test_a_further_target_is_seen_while_its_rank_still_arrives_last() -> None:
    """gemm_v2 1.1× and softmax 4× with rank 0 at 2.9 ms: rank 6 reaches 3.276 − 3.12 · (1 − 1/1.1) = 2.992 ms,
    still last, and softmax's 102.2 µs takes it to 2.890 ms, under rank 0: the step sees 92.4 µs of it (step saving
    376 µs; counted in full it was 385.9 µs)."""
    raw = _proposal(k=1.1, more_targets=[{"name": "softmax", "p": 0.04, "k": 4}], cost_weeks=4)
    raw["flags"]["barrier"]["arrivals"][1]["compute_ms"] = 2.9
    evaluation = review(raw)
    alone = STRAGGLER - GEMM * (1 - 1 / 1.1)
    both = alone - SOFTMAX * 0.75
    assert both < 2.9 < alone
    after = _step_after(both, 2.9)
    assert evaluation.amdahl.saving_ms == pytest.approx(STEP - after)
    amdahl = finding(evaluation, "amdahl")
    assert amdahl.figures["more_seen_ms"] == pytest.approx(alone - 2.9)
    assert "sees 92.4 µs of softmax's 102.2 µs on rank 6" in amdahl.message


def test_each_ranks_time_in_a_further_target_counts_it_rank_by_rank() -> None:
    """With softmax's 130 µs on rank 0 given (`more_ms`), rank 0 arrives at 2.52 − 0.065 = 2.455 ms: the step saves
    3.276 − 2.455 = 821 µs, and nothing is left unseen."""
    raw = _proposal()
    raw["flags"]["barrier"]["arrivals"][1]["more_ms"] = {"softmax": 0.13}
    evaluation = review(raw)
    after = _step_after(STRAGGLER - GEMM / 2 - SOFTMAX / 2, RANK_0 - 0.13 / 2)
    assert evaluation.amdahl.saving_ms == pytest.approx(STEP - after)
    assert evaluation.amdahl.saving_ms == pytest.approx(0.821)
    assert "unseen" not in evaluation.statement
    assert "more_unseen_ms" not in finding(evaluation, "amdahl").figures


def test_a_change_that_pays_only_if_a_further_target_saves_on_other_ranks_is_remeasured() -> None:
    """At 22.5 engineer-weeks the 756 µs the step sees is 756 / 3.407 / 22.5 = 0.986% a week, under the 1% funded;
    with softmax's 68.1 µs seen on every rank it would be 1.075%. Counted in full it was funded; counted on rank 6
    alone it would be declined on a figure that hangs on softmax's time on the other ranks, which nobody measured."""
    evaluation = review(_proposal(cost_weeks=22.5))
    capped = STEP - _step_after(STRAGGLER - GEMM / 2 - SOFTMAX / 2, RANK_0)
    assert capped / STEP / 22.5 < MIN_RATE <= (capped + SOFTMAX / 2) / STEP / 22.5
    assert evaluation.verdict == "remeasure"
    assert evaluation.deciding_rule == "barrier_denominator"
    found = finding(evaluation, "barrier_denominator")
    assert found.figures["more_unseen_ms"] == pytest.approx(SOFTMAX / 2)
    assert found.figures["end_to_end_saving_if_seen"] == pytest.approx((capped + SOFTMAX / 2) / STEP)
    assert evaluation.statement == (
        "softmax, measured on rank 6 alone, saves 68.1 µs there that the step does not see once rank 0's 2.5 ms sets "
        "it; the change pays only if it saves on other ranks too: trace it across all ranks (rocprofv3 --rccl-trace, "
        "nsys with NCCL tracing) and give each rank's time as `more_ms`."
    )
    assert_one_sentence(evaluation.statement)


def test_a_further_target_on_a_rank_stated_off_the_critical_path_saves_nothing_either() -> None:
    """gemm 2% at 10× and softmax 3% at 2× on a rank that waits for the slowest (`critical_path` false): the step
    sees neither. softmax's 1.5 ms was counted ('takes the step from 100 ms to 98.5 ms … fund'); the change pays only
    if softmax runs on the slowest rank too."""
    evaluation = review(
        {
            "target": "gemm",
            "p": 0.02,
            "k": 10,
            "baseline_ms": 100,
            "cost_weeks": 1,
            "more_targets": [{"name": "softmax", "p": 0.03, "k": 2}],
            "flags": {"barrier": {"ranks": 8, "critical_path": False}},
        }
    )
    assert evaluation.amdahl.saving_ms == pytest.approx(0.0)
    assert evaluation.verdict == "remeasure"
    assert finding(evaluation, "barrier_denominator").figures["more_saving"] == pytest.approx(0.03 * 0.5)
    assert evaluation.statement.startswith(
        "softmax, measured on its rank alone, saves 1.5 ms there that the step does not see while its rank waits for "
        "the slowest"
    )
    assert_one_sentence(evaluation.statement)


def test_a_further_target_partly_seen_names_what_the_step_sees() -> None:
    """gemm_v2 1.1× and softmax 4× at 11.2 engineer-weeks, rank 0 at 2.9 ms: the step sees 92.4 µs of softmax's
    102.2 µs, and 376 µs is 0.985% of the step a week, where softmax seen in full would make 1.011%."""
    raw = _proposal(k=1.1, more_targets=[{"name": "softmax", "p": 0.04, "k": 4}], cost_weeks=11.2)
    raw["flags"]["barrier"]["arrivals"][1]["compute_ms"] = 2.9
    evaluation = review(raw)
    alone = STRAGGLER - GEMM * (1 - 1 / 1.1)
    seen = STEP - _step_after(alone - SOFTMAX * 0.75, 2.9)
    assert seen / STEP / 11.2 < MIN_RATE <= (seen + SOFTMAX * 0.75 - (alone - 2.9)) / STEP / 11.2
    assert evaluation.verdict == "remeasure"
    assert evaluation.statement.startswith(
        "softmax, measured on rank 6 alone, saves 102.2 µs there, of which the step sees 92.4 µs once rank 0's 2.9 ms "
        "sets it;"
    )


def test_each_ranks_time_in_the_further_targets_must_name_them() -> None:
    """`more_ms` names a further target, or the arithmetic would count a phase nobody proposed to change."""
    raw = _proposal()
    raw["flags"]["barrier"]["arrivals"][1]["more_ms"] = {"gelu": 0.1}
    with pytest.raises(msgspec.ValidationError, match="more_ms"):
        msgspec.convert(raw, Proposal)
    raw["flags"]["barrier"]["arrivals"][1]["more_ms"] = {"softmax": 2.6}
    with pytest.raises(msgspec.ValidationError, match="more_ms"):
        msgspec.convert(raw, Proposal)
