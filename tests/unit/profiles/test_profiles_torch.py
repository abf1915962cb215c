"""PyTorch profiler traces: the two real Kineto samples and the committed CPU-only trace."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from worthit.rules.profiles import detect, find_phase, read_any, read_steps
from worthit.rules.profiles.kineto import parse_steps

WHOLE = parse_steps("all")

FIXTURES = ("torch_trace_a100_simple_add.json.gz", "torch_trace_mi250_kineto.json.gz")
DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def events_of(data: bytes) -> list[dict[str, Any]]:
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return list(json.loads(data)["traceEvents"])


def ns(us: float) -> int:
    return round(us * 1000)


def covered(pairs: list[tuple[int, int]]) -> int:
    """Independent union: walk events in time order, counting time with at least one open interval."""
    points = sorted([(s, 1) for s, _ in pairs] + [(e, -1) for _, e in pairs])
    total, depth, since = 0, 0, 0
    for t, delta in points:
        if depth > 0:
            total += t - since
        depth += delta
        since = t
    return total


@pytest.mark.parametrize("name", FIXTURES)
def test_device_work_is_a_union(fixture_bytes: Callable[[str], bytes], name: str) -> None:
    """Device busy time = union of kernel/memcpy/memset events; each kernel name's total is its own union."""
    data = fixture_bytes(name)
    events = [e for e in events_of(data) if e.get("ph") == "X"]
    device = [e for e in events if e.get("cat") in DEVICE_CATS]
    pairs = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in device]
    assert detect(data) == "pytorch_trace"
    b = read_any(data, steps=WHOLE)
    assert b.device_busy_ns == covered(pairs)
    kernels: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for e, pair in zip(device, pairs, strict=True):
        if e["cat"] == "kernel":
            kernels[e["name"]].append(pair)
    for kname, own in kernels.items():
        phase = find_phase(b, kname)
        assert phase.kind == "kernel"
        assert phase.total_ns == covered(own)
        assert phase.calls == len(own)
    timed = [e for e in events if e.get("cat") != "Trace"]
    assert b.wall_ns == max(ns(e["ts"]) + ns(e["dur"]) for e in timed) - min(ns(e["ts"]) for e in timed)


def test_mi250_steps_not_the_recording_span(fixture_bytes: Callable[[str], bytes]) -> None:
    """Two ProfilerStep#N annotations are the steps; the whole-recording 'PyTorch Profiler (0)' span is not."""
    data = fixture_bytes("torch_trace_mi250_kineto.json.gz")
    b = read_any(data, steps=WHOLE)
    assert b.steps == 2
    assert read_any(data).steps == 1  # by default the last, incomplete step is left out
    steps = read_steps(data)
    assert [s.scope for s in steps] == ["ProfilerStep#1", "ProfilerStep#2"]
    assert steps[0].wall_ns == ns(9288.291)
    for step in steps:
        assert sum(p.share_of_wall or 0 for p in step.phases if p.kind == "cpu_op") <= 1
    # Backward ops run on the autograd thread; the top-level one contains the nested AccumulateGrad chain.
    accumulate = find_phase(b, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad")
    assert accumulate.calls == 2
    assert all(p.name != "torch::autograd::AccumulateGrad" for p in b.phases)  # nested: not a phase of its own
    assert find_phase(b, "accumulategrad") == accumulate  # the only phase the substring matches


def test_a100_has_no_steps(fixture_bytes: Callable[[str], bytes]) -> None:
    """A trace without ProfilerStep annotations has steps=None and no per-step breakdowns."""
    data = fixture_bytes("torch_trace_a100_simple_add.json.gz")
    assert read_any(data).steps is None
    assert read_steps(data) == []


def test_gzip_and_plain_agree(fixture_bytes: Callable[[str], bytes]) -> None:
    """A gzipped trace and its inflated JSON read the same."""
    packed = fixture_bytes("torch_trace_mi250_kineto.json.gz")
    assert read_any(packed) == read_any(gzip.decompress(packed))


def top_level_table(events: list[dict[str, Any]], lo: int, hi: int) -> dict[str, int]:
    """Independent per-µs attribution: each µs of [lo, hi) goes to the outermost cpu_op covering it."""
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    table: dict[str, int] = defaultdict(int)
    for t in range(lo, hi):
        covering = [e for e in ops if e["ts"] <= t < e["ts"] + e["dur"]]
        if covering:
            outer = min(covering, key=lambda e: (e["ts"], -e["dur"]))
            table[outer["name"]] += 1000
    return dict(table)


def test_cpu_trace_per_step_table(data_dir: Path) -> None:
    """Per step: top-level cpu_op shares sum to at most 1 and match a per-µs attribution done here."""
    data = (data_dir / "torch_cpu_trace.json").read_bytes()
    events = events_of(data)
    annotations = sorted(
        (e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )
    steps = read_steps(data)
    assert (
        [s.scope for s in steps]
        == [e["name"] for e in annotations]
        == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"]
    )
    for step, marker in zip(steps, annotations, strict=True):
        expected = top_level_table(events, marker["ts"], marker["ts"] + marker["dur"])
        got = {p.name: p.total_ns for p in step.phases if p.kind == "cpu_op"}
        assert got == expected
        shares = [p.share_of_wall for p in step.phases if p.kind == "cpu_op"]
        assert sum(s or 0 for s in shares) <= 1
        assert step.wall_ns == marker["dur"] * 1000
    # The table a reviewer would read for step 1, by hand: linear 300 µs of 1000, backward 200, …
    first = {p.name: round((p.share_of_wall or 0) * 100, 1) for p in steps[0].phases}
    assert first == {
        "aten::linear": 30.0,
        "autograd::engine::evaluate_function: AddmmBackward0": 20.0,
        "aten::_foreach_add_": 16.0,
        "aten::relu": 8.0,
        "aten::mse_loss": 7.0,
        "aten::zero_": 5.0,
    }
    assert find_phase(steps[1], "aten::to").total_ns == 30_000  # clipped at the end of step 2
    assert find_phase(steps[2], "aten::relu").calls == 2


def test_cpu_trace_whole_recording(data_dir: Path) -> None:
    """Nested ops never count: the whole-trace cpu_op total equals the union of top-level ops."""
    b = read_any((data_dir / "torch_cpu_trace.json").read_bytes(), steps=WHOLE)
    assert b.steps == 3
    assert b.device_busy_ns is None
    names = {p.name for p in b.phases}
    assert "aten::addmm" not in names
    assert "aten::as_strided" not in names
    assert sum(p.share_of_wall or 0 for p in b.phases) <= 1
    assert find_phase(b, "aten::linear").total_ns == 3 * 300_000
