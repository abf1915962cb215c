"""quality_gate — a change that fails its quality gate does not ship, whatever it saves.

What it checks: `quality`: the metric's baseline and the candidate's value, and the largest regression the launch
gate allows (`max_regression`, in the metric's units; `higher_is_better` false for perplexity or error rates). The
regression is baseline − candidate (candidate − baseline when lower is better). Within the gate: info. Beyond it,
the gate decides at the worth stage, whatever the money: when the speed pays for itself (rules.worth) it funds only
on the condition that the metric recovers to the gate's edge (calibration, mixed precision on the sensitive
layers, quantization-aware training), and says how far it must come back; when it does not pay either, decline.

Why it matters: an INT8 or FP8 change that is 1.5× faster but loses more accuracy than the launch gate allows cannot
ship, and a fleet's money does not buy it a waiver. The review must say what has to recover, by how much.

Example: FP8 GEMMs 1.5× faster on 2,000 GPUs, accuracy 76.0 → 75.1 against a 0.3-point gate: 0.9 points lost,
three times the gate; fund only if accuracy recovers to at least 75.7.
"""

from __future__ import annotations

from worthit.rules.context import Context, Example, condition, opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import label, num, pct

ID = "quality_gate"
STAGE = "worth"

_GATE = {"metric": "accuracy", "baseline": 76.0, "candidate": 75.1, "max_regression": 0.3}

EXAMPLES = (
    Example(
        {"target": "gemm", "p": 0.5, "k": 1.5, "cost_weeks": 3, "flags": {"fleet_gpus": 2000}, "quality": _GATE},
        fires=True,
        verdict="fund_if",
        figures={"regression": 0.9, "recover_to": 75.7},
    ),
    Example(
        {"target": "gemm", "p": 0.02, "k": 1.5, "cost_weeks": 3, "quality": _GATE},
        fires=True,
        verdict="decline",
        figures={"regression": 0.9},
    ),
    Example(
        {"target": "gemm", "p": 0.5, "k": 1.5, "cost_weeks": 3, "quality": _GATE | {"candidate": 75.8}},
        fires=True,
        decision="fund",
        figures={"regression": 0.2},
    ),
    Example({"target": "gemm", "p": 0.5, "k": 1.5, "cost_weeks": 3}, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Holds the change to its quality gate: beyond it, fund only on recovery, or decline when it does not pay."""
    gate = ctx.proposal.quality
    if gate is None:
        return None
    sign = 1.0 if gate.higher_is_better else -1.0
    regression = sign * (gate.baseline - gate.candidate)
    edge = gate.baseline - sign * gate.max_regression
    metric = label(gate.metric)
    figures: dict[str, Figure] = {
        "metric_baseline": gate.baseline,
        "metric_candidate": gate.candidate,
        "regression": regression,
        "max_regression": gate.max_regression,
        "recover_to": edge,
    }
    if regression <= gate.max_regression:
        moved = f"loses {_points(regression)}" if regression > 0 else f"gains {_points(-regression)}"
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"{metric} {moved} ({num(gate.baseline, 2)} → {num(gate.candidate, 2)}), inside the "
            f"{num(gate.max_regression, 2)}-point gate.",
        )
    worse = "falls" if gate.higher_is_better else "rises"
    lost = (
        f"{metric} {worse} {_points(regression)} ({num(gate.baseline, 2)} → {num(gate.candidate, 2)}) against a "
        f"{num(gate.max_regression, 2)}-point gate"
    )
    bound = "at least" if gate.higher_is_better else "at most"
    if ctx.worth.clears:
        return condition(
            ID,
            figures,
            f"Fund only if {metric} recovers to {bound} {num(edge, 2)}: {lost}, so the change cannot ship as "
            f"built, whatever the {pct(ctx.run_saving)} it saves.",
        )
    head = f"The change fails its quality gate ({lost}), and its {pct(ctx.run_saving)} saving does not pay either"
    return opposition(ctx, ID, head, figures)


def _points(value: float) -> str:
    """`0.9 points`, `1 point`."""
    said = num(value, 2)
    return f"{said} point" + ("" if said == "1" else "s")
