"""The parts of a fleet mix or a traffic mix: each part's weight, p, k and the share of its time the change removes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from worthit.rules import amdahl

if TYPE_CHECKING:
    from worthit.rules.context import Context

__all__ = ["REST_OF_TRAFFIC", "MixPart", "mix_of"]


REST_OF_TRAFFIC = "the rest of the traffic"
"""The part of a traffic mix no bucket names: time the change was not measured on."""


@dataclass(frozen=True, slots=True)
class MixPart:
    """One part of a fleet mix or a traffic mix: its weight (share of the GPUs, or of the time), p, k, saving."""

    name: str
    weight: float
    p: float
    k: float | None
    """None: no k measured on this part (counted as no gain)."""
    saving: float
    """Share of this part's time removed: p · (1 − 1/k), 0 where k is unknown or the change is slower."""


def _part_k(stated: float | str | None, measured: float | None) -> float | None:
    """A mix part's k: its own (`"inf"` as ∞), else the proposal's where it was measured (`measured`), else None."""
    if stated is None:
        return measured
    return math.inf if isinstance(stated, str) else stated


def mix_of(ctx: Context) -> list[MixPart] | None:
    """The fleet's device kinds or the traffic's buckets, each with its own p, k and saving; None without a mix.

    A part's k is its own, else the proposal's on the part it was measured on (`scope.device`, `scope.input`),
    else unknown: counted as no gain, never assumed. A part where the change is slower is counted as kept on the
    old path (no gain) — which is the condition the mix rule puts on funding it."""
    flags = ctx.proposal.flags
    if flags.fleet_mix is not None:
        fleet = sum(part.gpus for part in flags.fleet_mix)
        measured = ctx.proposal.scope.device
        raw = [(part.name, part.gpus / fleet, part.p, part.k) for part in flags.fleet_mix]
    elif flags.traffic_mix is not None:
        measured = ctx.proposal.scope.input
        raw = [(part.name, part.share, part.p, part.k) for part in flags.traffic_mix]
        rest = 1.0 - math.fsum(part.share for part in flags.traffic_mix)
        if rest > 1e-9:
            raw.append((REST_OF_TRAFFIC, rest, None, None))
    else:
        return None
    p_all, k_all = ctx.acted
    parts: list[MixPart] = []
    for name, weight, p, k in raw:
        part_p = p if p is not None else ctx.on_run(p_all)
        part_k = _part_k(k, k_all if name == measured else None)
        saving = 0.0 if part_k is None else max(amdahl.saving_fraction(part_p, part_k), 0.0)
        parts.append(MixPart(name=name, weight=weight, p=part_p, k=part_k, saving=saving))
    return parts
