"""Build ``torch_cpu_trace.json``: a small PyTorch-profiler (Kineto) CPU-only Chrome trace, made by hand.

torch is not installed here, so this mimics what ``torch.profiler.profile(activities=[CPU],
schedule=…)`` + ``export_chrome_trace`` writes for a tiny MLP training loop: metadata events, the
whole-recording ``PyTorch Profiler (0)`` span (cat Trace), ``ProfilerStep#N`` user annotations, an
``Optimizer.step#SGD.step`` annotation, and nested ``cpu_op`` events (aten::linear > aten::t >
aten::transpose > aten::as_strided, …) with ``External id``/``Record function id`` args. One op runs
before the first step and one straddles the end of step 2, so per-step clipping is exercised.

Run ``python tests/data/profiles/make_torch_cpu_trace.py`` to rewrite the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PID = 51234
TID = 51234
T0 = 6_100_000_000  # µs, Kineto's steady-clock origin
STEP_US = 1000
GAP_US = 50
STEPS = 3

# (name, start offset µs, duration µs) per step; nesting is by time containment, as in real traces.
STEP_OPS: tuple[tuple[str, int, int], ...] = (
    ("aten::linear", 10, 300),
    ("aten::t", 15, 30),
    ("aten::transpose", 20, 20),
    ("aten::as_strided", 25, 5),
    ("aten::addmm", 50, 250),
    ("aten::relu", 320, 80),
    ("aten::clamp_min", 330, 65),
    ("aten::mse_loss", 410, 70),
    ("aten::mean", 420, 50),
    ("autograd::engine::evaluate_function: AddmmBackward0", 500, 200),
    ("AddmmBackward0", 505, 190),
    ("aten::mm", 510, 90),
    ("aten::mm", 605, 85),
    ("aten::_foreach_add_", 730, 160),
    ("aten::zero_", 910, 50),
    ("aten::fill_", 915, 40),
)


def build() -> dict[str, Any]:
    """The trace as a JSON-ready dict."""
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "ts": T0, "pid": PID, "tid": 0, "args": {"name": "python3"}},
        {"name": "process_labels", "ph": "M", "ts": T0, "pid": PID, "tid": 0, "args": {"labels": "CPU"}},
        {
            "name": "thread_name",
            "ph": "M",
            "ts": T0,
            "pid": PID,
            "tid": TID,
            "args": {"name": f"thread {TID} (python3)"},
        },
    ]
    ev_idx = 0
    ext = 0

    def op(cat: str, name: str, ts: int, dur: int) -> None:
        nonlocal ev_idx, ext
        ext += 1
        events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": PID,
                "tid": TID,
                "ts": ts,
                "dur": dur,
                "args": {"External id": ext, "Record function id": ext, "Ev Idx": ev_idx},
            }
        )
        ev_idx += 1

    first = T0 + 100
    op("cpu_op", "aten::empty", first - 60, 10)  # before the first step: in the wall, in no step
    for k in range(STEPS):
        start = first + k * (STEP_US + GAP_US)
        op("user_annotation", f"ProfilerStep#{k + 1}", start, STEP_US)
        for name, offset, dur in STEP_OPS:
            op("cpu_op", name, start + offset, dur)
        op("user_annotation", "Optimizer.step#SGD.step", start + 720, 180)
        if k == 1:
            op("cpu_op", "aten::to", start + 970, 60)  # runs 30 µs past the end of step 2
        if k == 2:
            op("cpu_op", "aten::relu", start + 962, 6)  # a second top-level relu in one step
    end = first + STEPS * (STEP_US + GAP_US)
    events.append(
        {
            "ph": "X",
            "cat": "Trace",
            "ts": T0,
            "dur": end - T0 + 40,
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "name": "PyTorch Profiler (0)",
            "args": {"Op count": 0},
        }
    )
    events.append(
        {
            "name": "Iteration Start: PyTorch Profiler",
            "ph": "i",
            "s": "g",
            "pid": "Traces",
            "tid": "Trace PyTorch Profiler",
            "ts": T0,
        }
    )
    return {
        "schemaVersion": 1,
        "deviceProperties": [],
        "record_shapes": 1,
        "traceEvents": events,
        "traceName": "./log/mlp_cpu/worker0.pt.trace.json",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
    }


def main() -> None:
    """Write ``torch_cpu_trace.json`` next to this script."""
    out = Path(__file__).resolve().parent / "torch_cpu_trace.json"
    out.write_text(json.dumps(build(), indent=1) + "\n")


if __name__ == "__main__":
    main()
