"""A proposal's `p` from a measured profile, on both denominators, with the breakdown the rules need.

The target's share of device activity becomes `p` (scope `device_activity`) and its share of the whole recording
`p_end_to_end`, so `device_vs_run` can say both; the recording's top-level parts become the breakdown, so
`non_kernel_time` and `bigger_target` see allocation, copies and host time. A target read from a summed table
carries `scope.inclusive`, and `inclusive_percentages` asks for a re-measurement.
"""

from __future__ import annotations

import msgspec

from worthit.rules.errors import InvalidInput
from worthit.rules.model import Phase as ProposalPhase
from worthit.rules.model import PhaseKind, Proposal
from worthit.rules.profiles.errors import PhaseNotFoundError
from worthit.rules.profiles.lookup import find_phase
from worthit.rules.profiles.model import Breakdown, Phase

MAX_NAME = 200
# API calls other than copies and allocations (device queries, synchronisation) are time the host spends in the
# runtime, not the launch gaps between kernels that `host` means; they count as `other`.
KIND: dict[str, PhaseKind] = {
    "kernel": "kernel",
    "copy": "copy",
    "alloc": "alloc",
    "api": "other",
    "cpu_op": "other",
    "other": "other",
}
UNACCOUNTED = "rest of the recording"


def _name(phase: Phase) -> str:
    return phase.name if len(phase.name) <= MAX_NAME else phase.name[: MAX_NAME - 1] + "…"


def top_level(breakdown: Breakdown) -> list[Phase]:
    """The parts of the recording that do not contain one another.

    A summed API call (hipMemcpy, cudaMemcpy) contains the device copy it triggers, so when a table of such calls
    is present, device copies are left out in favour of the calls that include them; kernels stay (a launch call
    returns before its kernel runs).
    """
    inclusive_copies = any(p.inclusive and p.kind == "copy" for p in breakdown.phases)
    return [p for p in breakdown.phases if not (inclusive_copies and p.kind == "copy" and not p.inclusive)]


def breakdown_of(breakdown: Breakdown) -> list[ProposalPhase]:
    """The recording's top-level parts in ms, with what no part accounts for as one more phase."""
    parts = top_level(breakdown)
    phases = [ProposalPhase(name=_name(p), ms=p.total_ns / 1e6, kind=KIND.get(p.kind, "other")) for p in parts]
    if breakdown.wall_ns is not None:
        rest = (breakdown.wall_ns - sum(p.total_ns for p in parts)) / 1e6
        if rest > 0:
            phases.append(ProposalPhase(name=UNACCOUNTED, ms=rest, kind="other"))
    return phases


def proposal_from_profile(proposal: Proposal, breakdown: Breakdown) -> Proposal:
    """`proposal` with `p`, `p_end_to_end`, `baseline_ms`, scope and breakdown measured from `breakdown`.

    Raises InvalidInput at `/target` when the target names no phase, or several (listing candidates).
    """
    if proposal.target is None:
        raise InvalidInput("Expected `target` naming a phase of the profile", "/target")
    try:
        phase = find_phase(breakdown, proposal.target)
    except PhaseNotFoundError as exc:
        raise InvalidInput(exc.detail, "/target") from exc
    on_device = phase.share_of_device is not None and breakdown.device_busy_ns
    if on_device:
        p, measured = phase.share_of_device, "device_activity"
        baseline_ms = (breakdown.device_busy_ns or 0) / 1e6
        p_end_to_end = phase.share_of_wall
    else:
        p, measured = phase.share_of_wall, "end_to_end"
        baseline_ms = (breakdown.wall_ns or 0) / 1e6
        p_end_to_end = None
    if not p or p <= 0 or baseline_ms <= 0:
        raise InvalidInput(
            f"Expected the profile to give `{phase.name}` a share of measured time, but it has none "
            "(a summed table without timestamps has no wall time: add a trace)",
            "/profile_id",
        )
    scope = msgspec.structs.replace(
        proposal.scope,
        measured=measured,
        method=proposal.scope.method or ("inclusive_summary" if phase.inclusive else "timeline"),
        timing=proposal.scope.timing or "device_events",
        inclusive=phase.inclusive or proposal.scope.inclusive,
    )
    return msgspec.structs.replace(
        proposal,
        target=_name(phase),
        p=min(p, 1.0),
        p_end_to_end=min(p_end_to_end, 1.0) if p_end_to_end else proposal.p_end_to_end,
        baseline_ms=baseline_ms,
        scope=scope,
        breakdown=proposal.breakdown or breakdown_of(breakdown),
        breakdown_scope="end_to_end" if on_device and proposal.breakdown is None else proposal.breakdown_scope,
    )
