"""What every check reads: the `Context` of one proposal under one policy at one point (p, k), and the figures
derived from it once for all checks.

Checks import this module, never `rules.engine`: the engine imports the checks' registry, so the dependency points
one way (engine → checks → context). The helpers checks build findings with live in `rules.findings`, the barrier
arithmetic in `rules.barrier`, break-even search in `rules.search`, a rule's examples in `rules.examples`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from worthit.rules import amdahl
from worthit.rules.acted import acted_of, derived_k
from worthit.rules.barrier import UNSEEN, BarrierStep, barrier_step_of, behind_barrier, collective_wait_of
from worthit.rules.calibration import Calibration
from worthit.rules.findings import Alternative, alternative_of, is_productive, material_alternative_of
from worthit.rules.mix import MixPart, mix_of
from worthit.rules.model import AmdahlFigures, Finding, Phase, Proposal, Range, Verdict, is_aggregate
from worthit.rules.once import once
from worthit.rules.phase_names import kernel_kind
from worthit.rules.policy import Policy
from worthit.rules.text import label
from worthit.rules.wording import Draft
from worthit.rules.worth import Worth, worth_of

__all__ = ["POINT_FREE", "SCOPE_NOUN", "Check", "Context", "Probe", "context", "once", "roofline_k"]

SCOPE_NOUN: dict[str, str] = {
    "step": "the step",
    "device_activity": "device activity",
    "end_to_end": "the run",
    "rank": "the rank's step",
}


@dataclass(frozen=True)
class Context:
    """What a check reads: the proposal, the policy, and the figures derived once for all checks."""

    proposal: Proposal
    policy: Policy
    p: float
    k: float
    probe: Probe | None = None
    """The pure verdict function at another point, `probe(proposal, p, k)`, handed in by the engine for the checks
    that search for a break-even value (estimate); None where a check must not recurse (inside a probe). A check
    that does not call it answers as it would with None: the engine then takes the findings for the pure verdict
    function's at this point (a range's midpoint is not evaluated twice)."""
    calibration: Calibration | None = None
    """The team's calibration when the policy applies one: `proposal.k` is then the calibrated k."""
    proposed: Proposal | None = None
    """The proposal as proposed, when calibration changed its k."""

    stated_k: float | None = None
    """The proposal's own `k` when `added_work` derives `k` from it (`derived_k`); None when `k` is as stated."""
    claimed_k: float | None = None
    """The k claimed, when it is above the target's roofline (`flags.roofline_fraction`): `k` is then the ceiling,
    1 ÷ the fraction, the most the same work can go faster (roofline rule)."""
    verdict_only: bool = False
    """Only the verdict is asked (`rules.verdict.verdict_at`: a range's corners, bisection, every probe): a check may
    then answer None where it would write a finding that argues `fund` or nothing, the lowest rank, which cannot
    change which verdict wins. The sentence is most of what a check costs, and nobody reads it here. A property test
    holds the verdict function equal to the whole engine's verdict (tests/property/test_verdict_function.py)."""

    @property
    def given_k(self) -> float:
        """The k the proposal states, before added work is counted: what a probe is handed back (it derives again,
        and caps it at the roofline again)."""
        if self.claimed_k is not None:
            return self.claimed_k
        return self.k if self.stated_k is None else self.stated_k

    @once
    def amdahl(self) -> AmdahlFigures:
        """The figures of the change as one (p, k): the target's (p, k) unless it acts on more (see `acted`). The
        return per engineer-week counts upkeep, as the cost stage does: one cost for every figure (rules.worth)."""
        p, k = self.acted
        return amdahl.figures(p, k, baseline_ms=self.baseline_ms, cost_weeks=self.worth.cost.weeks)

    @once
    def range_ends(self) -> tuple[AmdahlFigures, AmdahlFigures] | None:
        """With p or k given as a range, the figures at its low end (low p, low k) and its high end (every figure of
        PRODUCT §2 is monotonic in each): what a statement quotes, never the midpoint. None for single values."""
        proposal, box = self.proposal, self.box
        if box is None:
            return None
        (p_low, p_high), (k_low, k_high) = box
        corners = self.corners
        if self.behind_barrier and corners is not None:
            # the step's saving behind a barrier is not p · (1 − 1/k): each end's figures are its own context's
            return corners[(p_low, k_low)].amdahl, corners[(p_high, k_high)].amdahl
        base, weeks = self.baseline_ms, self.worth.cost.weeks
        return (
            amdahl.figures(p_low, derived_k(proposal, p_low, k_low, base), baseline_ms=base, cost_weeks=weeks),
            amdahl.figures(p_high, derived_k(proposal, p_high, k_high, base), baseline_ms=base, cost_weeks=weeks),
        )

    @once
    def box(self) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """With p or k a range, its box as the proposal states it: (p_low, p_high) and (k_low, k_high), a single
        value at both ends of its own (this context's p, the k given). None when neither is a range."""
        p, k = self.proposal.p, self.proposal.k
        if not isinstance(p, Range) and not isinstance(k, Range):
            return None
        return (
            (p.low, p.high) if isinstance(p, Range) else (self.p, self.p),
            (k.low, k.high) if isinstance(k, Range) else (self.given_k, self.given_k),
        )

    @once
    def corners(self) -> dict[tuple[float, float], Context] | None:
        """With p or k a range, the context at each corner of its box, keyed by (p, k) as the proposal states them
        (k derived again at each, as every figure there uses it): what a figure quoted across the range reads, never
        the midpoint's. Two corners when one input is a single value; None when neither is a range."""
        box = self.box
        if box is None:
            return None
        (p_low, p_high), (k_low, k_high) = box
        return {
            (p_at, k_at): context(self.proposal, self.policy, p_at, k_at, verdict_only=True, like=self)
            for p_at in dict.fromkeys((p_low, p_high))
            for k_at in dict.fromkeys((k_low, k_high))
        }

    @once
    def baseline_ms(self) -> float | None:
        """The measured scope's time: given, else the breakdown's sum when the breakdown divides that scope."""
        if self.proposal.baseline_ms is not None:
            return self.proposal.baseline_ms
        if self.proposal.breakdown_scope != "measured":
            return None
        total = self.breakdown_ms
        return total if total else None

    @once
    def breakdown_ms(self) -> float:
        return sum(phase.ms for phase in self.proposal.breakdown or ())

    @once
    def breakdown_total(self) -> float:
        """The time the breakdown's shares are taken of: `baseline_ms` for the measured scope, else the sum."""
        if self.proposal.breakdown_scope == "measured" and self.proposal.baseline_ms is not None:
            return self.proposal.baseline_ms
        return self.breakdown_ms

    @once
    def target(self) -> str:
        """The target as a sentence names it (read by most checks: labelled once)."""
        return label(self.proposal.target) if self.proposal.target else "the target"

    @once
    def target_phase(self) -> Phase | None:
        for phase in self.proposal.breakdown or ():
            if phase.name == self.proposal.target:
                return phase
        return None

    @once
    def target_is_comm(self) -> bool:
        """Whether the target is communication: a `comm` phase, or a kernel (stated so or by default) named as NCCL/RCCL
        kernels and collectives are."""
        kind = self.target_phase.kind if self.target_phase is not None else "kernel"
        return kind == "comm" or (kind == "kernel" and kernel_kind(self.proposal.target or "") == "comm")

    def share(self, phase: Phase) -> float:
        """A phase's share of the time the breakdown divides (see `breakdown_total`)."""
        total = self.breakdown_total
        return phase.ms / total if total else 0.0

    @once
    def p_run(self) -> float:
        """The target's share of the whole run: `p_end_to_end`, else read off a whole-run breakdown, else `p`."""
        if self.proposal.p_end_to_end is not None:
            return self.proposal.p_end_to_end
        if self.proposal.breakdown_scope == "end_to_end" and self.target_phase is not None and self.breakdown_ms:
            return self.target_phase.ms / self.breakdown_ms
        return self.p

    @once
    def run_saving(self) -> float:
        """Share of the whole run removed: what noise, rate of return and fleet economics are judged on; with a
        replay of the profile's trace, the part of it the replay delivers (`replay_share`).

        The change as one (p, k) (`acted`: several targets, a collective's transfer without its wait) on the run's
        scope; with a fleet or traffic mix, the sum over its parts, each at its own p and k (`mix`)."""
        share = self.replay_share
        if self.mix is not None:
            return share * math.fsum(part.weight * part.saving for part in self.mix)
        return share * self.acted_run_saving

    @once
    def replay_share(self) -> float:
        """The share of Amdahl's saving that the replay of the profile's trace delivers (`Proposal.replay`), 0 to 1:
        the run's saving is Amdahl's times it, so every figure, the money and the verdict use the replayed saving. It
        is measured at the proposal's k and held at any other (a probe's, a break-even search's): the replay answers
        one k. 1 without a replay, or when Amdahl's share saves nothing per step."""
        replay = self.proposal.replay
        if replay is None or replay.amdahl_saving_ms <= 0:
            return 1.0
        return min(max(replay.saving_ms / replay.amdahl_saving_ms, 0.0), 1.0)

    @once
    def wait_share(self) -> float:
        """The share of the step a collective target spends waiting for the slowest rank (0 when not split)."""
        barrier = self.proposal.flags.barrier
        if barrier is None or barrier.target_wait is None:
            return 0.0
        return min(barrier.target_wait, self.p)

    @once
    def collective_wait(self) -> float:
        """The wait a collective target's effort could remove by balancing the load instead
        (`rules.barrier.collective_wait_of`)."""
        return collective_wait_of(self)

    @once
    def barrier_step(self) -> BarrierStep | None:
        """A compute target's saving when every rank waits at a barrier for the slowest: what the step itself loses,
        where that is not the target's own saving (None where plain Amdahl holds: `rules.barrier.barrier_step_of`)."""
        return barrier_step_of(self)

    @once
    def more_unseen_worth(self) -> Worth | None:
        """Behind a barrier, the value of the work if the step saw on every rank what the further targets save on the
        one they are measured on (`BarrierStep.more_unseen`: their time on the other ranks is not measured, and the
        decision counts what it knows). None when the step sees all they save, or with a fleet or traffic mix."""
        step = self.barrier_step
        if step is None or step.more_unseen <= UNSEEN or self.mix is not None:
            return None
        return worth_of(self.proposal, self.policy, self.run_saving + self.on_run(step.more_unseen), self.k)

    @once
    def step_unseen(self) -> bool:
        """A faster compute target whose saving the step behind a barrier does not see at all: its rank (or every
        rank running it) waits for one that still arrives as late (`barrier_step`)."""
        step = self.barrier_step
        return step is not None and self.k > 1 and abs(step.saving) <= UNSEEN

    @once
    def behind_barrier(self) -> bool:
        """Whether the step's saving may not be the target's own at some (p, k) (`rules.barrier.behind_barrier`)."""
        return behind_barrier(self)

    @once
    def more_targets(self) -> list[tuple[str, float, float]]:
        """The further targets as (name, p, k): p as stated, else the phase's share of the breakdown."""
        found: list[tuple[str, float, float]] = []
        phases = {phase.name: phase for phase in self.proposal.breakdown or ()}
        for extra in self.proposal.more_targets or ():
            if extra.p is not None:
                p = extra.p
            else:
                phase = phases.get(extra.name)
                p = self.share(phase) if phase is not None else 0.0
            k = math.inf if isinstance(extra.k, str) else extra.k
            found.append((extra.name, min(p, 1.0), k))
        return found

    @once
    def acted(self) -> tuple[float, float]:
        """The whole change as one (p, k) on the measured scope: the share it touches and the k that removes what it
        saves (`rules.acted.acted_of`)."""
        return acted_of(self)

    @once
    def acted_run_saving(self) -> float:
        """`acted`'s saving on the run's scope: the target's share of the run (`p_run`) scales every part alike."""
        p_all, k_all = self.acted
        return amdahl.saving_fraction(self.on_run(p_all), k_all)

    def on_run(self, share: float) -> float:
        """A share of the measured scope as a share of the run, scaled as the target's is (`p_run` over `p`), at most
        all of it. Divided first: a p of 5e-324 beside a p_run of 1 overflows the ratio, and 0 × ∞ is NaN; a p_run of
        0 (a target of 0 ms in a whole-run breakdown) scales every share to 0, never ∞ × 0."""
        if self.p <= 0:
            return min(share, 1.0)
        return min(share / self.p * self.p_run, 1.0) if share and self.p_run else 0.0

    @once
    def mix(self) -> list[MixPart] | None:
        """The fleet's device kinds or the traffic's buckets, each with its own p, k and saving; None without a mix
        (`rules.mix.mix_of`)."""
        return mix_of(self)

    @once
    def unit_slip(self) -> float | None:
        """How many times the breakdown's sum and the step's time (`baseline_ms`) differ, when that is so far
        (`unit_slip_ratio`, about a unit: seconds or microseconds written as ms) that it cannot be overlap or an
        unlisted phase; None otherwise."""
        base, parts = self.proposal.baseline_ms, self.breakdown_ms
        if base is None or parts <= 0 or self.proposal.breakdown_scope != "measured":
            return None
        if parts / base >= self.policy.unit_slip_ratio:
            return parts / base  # no overlap multiplies a step a few hundred times
        if base / parts < self.policy.unit_slip_ratio:
            return None
        # Far less than its step: a breakdown in µs or s only when it is whole (its own share of the target is p);
        # one that lists a few phases of the step is partial, which the consistency rule says.
        target = self.target_phase
        if target is None or abs(target.ms / parts - self.p) > self.policy.breakdown_tolerance:
            return None
        return base / parts

    @once
    def target_share(self) -> float:
        """The target's share of the time the breakdown divides."""
        if self.target_phase is not None and self.breakdown_total:
            return self.share(self.target_phase)
        return self.p_run if self.proposal.breakdown_scope == "end_to_end" else self.p

    @once
    def others(self) -> list[Phase]:
        """The breakdown's phases other than the target."""
        changed = {self.proposal.target, *(extra.name for extra in self.proposal.more_targets or ())}
        return [phase for phase in self.proposal.breakdown or () if phase.name not in changed]

    @once
    def largest_other(self) -> Phase | None:
        """The largest phase other than the target that is one thing (not a folded rest or the unaccounted time) and
        that a change could shorten instead (not the productive work itself)."""
        return max(
            (p for p in self.others if not is_aggregate(p.name) and not is_productive(p.name)),
            key=lambda phase: phase.ms,
            default=None,
        )

    @once
    def alternative(self) -> Alternative | None:
        """The largest thing bigger than the target and above the noise floor (`rules.findings.alternative_of`)."""
        return alternative_of(self)

    @once
    def material_alternative(self) -> Alternative | None:
        """The alternative when it could win materially more than this proposal
        (`rules.findings.material_alternative_of`)."""
        return material_alternative_of(self)

    @once
    def unportable(self) -> bool:
        return self.proposal.flags.portability in ("vendor_specific", "hand_asm")

    @once
    def worth(self) -> Worth:
        """Stages 2 and 3, once for every check: the value of the work, its full cost, and whether it pays."""
        return worth_of(self.proposal, self.policy, self.run_saving, self.k)

    @property
    def maintenance_weeks(self) -> float:
        """Engineer-weeks unportable code costs to keep correct over the policy's horizon (0 when portable)."""
        return self.worth.cost.upkeep_weeks

    @property
    def scope_noun(self) -> str:
        """What `p` is a share of, as the statement says it: the step, device activity, the run, one rank."""
        return SCOPE_NOUN.get(self.proposal.scope.measured or "step", "the step")


POINT_FREE = (
    "baseline_ms",
    "breakdown_ms",
    "breakdown_total",
    "target",
    "target_phase",
    "target_is_comm",
    "others",
    "largest_other",
    "more_targets",
    "unportable",
    "behind_barrier",
    "replay_share",
)
"""The figures of a Context that depend on the proposal and the policy but not on the point (p, k): a context of the
same proposal at another point may take them as they are (`context(..., like=...)`; a test holds them equal)."""


def context(
    proposal: Proposal,
    policy: Policy,
    p: float,
    k: float,
    probe: Probe | None = None,
    *,
    calibration: Calibration | None = None,
    proposed: Proposal | None = None,
    verdict_only: bool = False,
    like: Context | None = None,
) -> Context:
    """The context of one point (p, k as the proposal states it), with k derived end to end when work is added;
    `calibration` and `proposed` when the engine evaluates at a team's calibrated k (rules.calibration);
    `verdict_only` when only the verdict is asked (`Context.verdict_only`); `like`, a context of the same proposal
    under the same policy at another point, whose `POINT_FREE` figures are taken rather than computed again (a
    range's corners and its bisection)."""
    claimed = None
    ceiling = roofline_k(proposal)
    if ceiling is not None and k > ceiling:
        claimed, k = k, ceiling  # the same work goes no faster than its roofline: decided at the ceiling
    plain = Context(
        proposal=proposal,
        policy=policy,
        p=p,
        k=k,
        claimed_k=claimed,
        probe=probe,
        calibration=calibration,
        proposed=proposed,
        verdict_only=verdict_only,
    )
    if like is not None and like.proposal is proposal and like.policy is policy:
        known, mine = like.__dict__, plain.__dict__
        for name in POINT_FREE:
            if name in known:
                mine[name] = known[name]
    if proposal.added_work is None:
        return plain
    effective = dataclasses.replace(plain, k=derived_k(proposal, p, k, plain.baseline_ms), stated_k=k)
    effective.__dict__.update((name, value) for name, value in plain.__dict__.items() if name in POINT_FREE)
    return effective


def roofline_k(proposal: Proposal) -> float | None:
    """The most the target's work can speed up at the same bytes or FLOPs: 1 ÷ its achieved fraction of its bound
    (`flags.roofline_fraction`: 80% of peak HBM bandwidth leaves 1.25×); None when the fraction is not given."""
    fraction = proposal.flags.roofline_fraction
    return None if fraction is None else 1.0 / fraction


Check = Callable[[Context], Finding | Draft | None]
Probe = Callable[[Proposal, float, float], Verdict]
