"""Properties of the replay over simulated schedules (`tests/replay_traces.simulate`): random host programs of
launches, host work, event edges and synchronisations on one to three streams, run as a GPU would run them."""

from __future__ import annotations

import random

from hypothesis import assume, example, given
from hypothesis import strategies as st

from tests.replay_traces import random_program, simulate
from worthit.rules.profiles.kineto.replay import scaled
from worthit.rules.profiles.kineto.schedule import read_schedule
from worthit.rules.profiles.kineto.whatif import Target, WhatIf, what_if

NAMES = ("gemm", "conv", "relu", "nccl*")
programs = st.builds(
    lambda seed, streams, length, jitter: simulate(
        random_program(random.Random(seed), streams, length), jitter=jitter, seed=seed
    ),
    st.integers(0, 2**32 - 1),
    st.integers(1, 3),
    st.integers(1, 40),
    st.sampled_from((0, 0, 3, 50)),
)
factors = st.sampled_from((1.0, 1.01, 1.5, 2.0, 4.0, 1e6))


def _what_if(trace: bytes, pattern: str, k: float) -> WhatIf | None:
    schedule = read_schedule(trace, "simulated")
    if not any(_matches(name, pattern) for name in schedule.op_name):
        return None
    return what_if([schedule], [Target(pattern=pattern, k=k)])


def _matches(name: str, pattern: str) -> bool:
    return name.startswith(pattern.rstrip("*"))


@given(programs, st.sampled_from(NAMES))
@example(simulate([("launch", 7, "gemm", 1), ("sync_device",)]), "gemm")
def test_at_k_one_the_replay_is_the_trace(trace: bytes, pattern: str) -> None:
    """k = 1 reproduces every step to the ns, predicts no change, and Amdahl agrees."""
    w = _what_if(trace, pattern, 1.0)
    assume(w is not None)
    assert w is not None
    assert w.replayed_ns == w.measured_ns
    assert w.predicted_ns == w.measured_ns
    assert w.amdahl_ns == w.measured_ns
    for step in w.steps:
        assert step.replayed_ns == step.measured_ns
        assert step.predicted_ns == step.measured_ns


@given(programs, st.sampled_from(NAMES), factors, factors)
def test_a_faster_target_never_lengthens_the_step(trace: bytes, pattern: str, k1: float, k2: float) -> None:
    """The predicted step never grows as k grows."""
    low, high = sorted((k1, k2))
    slow, fast = _what_if(trace, pattern, low), _what_if(trace, pattern, high)
    assume(slow is not None)
    assert slow is not None
    assert fast is not None
    assert fast.predicted_ns <= slow.predicted_ns


@given(programs, st.sampled_from(NAMES), factors)
@example(simulate([("launch", 7, "gemm", 300), ("work", 1), ("sync_device",)]), "gemm", 1e6)
def test_the_saving_is_between_nothing_and_the_targets_own(trace: bytes, pattern: str, k: float) -> None:
    """On one rank the replayed saving is at least 0 and at most the targets' own time saved; the four losses add
    up to Amdahl's saving less the replayed one."""
    w = _what_if(trace, pattern, k)
    assume(w is not None)
    assert w is not None
    schedule = read_schedule(trace, "simulated")
    own = sum(
        (e - s) - scaled(e - s, k)
        for name, s, e in zip(schedule.op_name, schedule.op_start, schedule.op_end, strict=True)
        if _matches(name, pattern)
    )
    saving = w.replayed_ns - w.predicted_ns
    assert 0 <= saving <= own
    assert w.measured_ns - w.amdahl_ns == own
    lost = w.lost_ns
    assert lost.overlap + lost.launch + lost.sync + lost.ranks == own - saving
    assert lost.ranks == 0
