"""Stages 2 and 3 of a decision, computed once for every check: what the work is worth, and what it costs.

A check never sets another check aside. Where the seeds say "a fleet carries a poor per-run rate" or "the kernel
is the product", that is a statement about the *value* of the work, so it lives here, in one figure every check
reads: `Worth.clears` says whether the proposal pays for itself, and `Worth.carried_by` names the finding whose
figure carried it when a per-run bar alone would not have.

The order of the argument (PRODUCT §3): the saving on the decision scope (end to end when known; a credible
strategic workload *in addition to* the measured one; all ranks behind a barrier) times its volume — per run, a
fleet as recurring GPU-equivalents over the horizon, or a fixed job over its length — priced with the policy,
against build plus upkeep. Once money is known it decides; the per-run noise floor then becomes a condition
(confirm the saving in a fleet A/B), not a veto.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from worthit.rules import amdahl
from worthit.rules.errors import InvalidInput
from worthit.rules.model import Proposal
from worthit.rules.policy import Policy
from worthit.rules.text import gpu_figure

__all__ = [
    "CARRIED_BY",
    "CREDIBILITY_RULE",
    "HOURS_PER_DAY",
    "HOURS_PER_YEAR",
    "MINUTES_PER_DAY",
    "UPKEEP_SOURCE",
    "Basis",
    "Cost",
    "Fit",
    "Money",
    "Worth",
    "cost_of",
    "fit_of",
    "gpu_time_overflows",
    "money_of",
    "pays_for_weeks",
    "recurring_gpus",
    "strategic_credible",
    "worth_of",
]

HOURS_PER_DAY = 24.0
HOURS_PER_YEAR = 8760.0
"""Units, not thresholds: freed capacity is counted around the clock."""

Basis = Literal["measured", "strategic", "fleet", "job", "product", "memory"]
CARRIED_BY: dict[Basis, str] = {
    "measured": "amdahl",
    "strategic": "wrong_model",
    "fleet": "fleet_multiplication",
    "job": "fleet_multiplication",
    "product": "vendor_product",
    "memory": "memory_fit",
}
"""The rule whose finding states the figure each basis rests on (provenance for `Finding.overridden_by`)."""
CREDIBILITY_RULE = "roadmap_risk"
"""The rule whose finding says why a strategic workload does not count (`Worth.strategic_credible`)."""


@dataclass(slots=True)
class Cost:
    """Stage 3: build plus upkeep of unportable code over the horizon — one figure for decision, plan, portfolio."""

    build_weeks: float | None
    upkeep_weeks: float
    weeks: float | None
    """Build + upkeep; None when neither is known (no cost given and portable code)."""
    usd: float | None
    # issue #25 (part a): where the upkeep figure came from, so a statement never presents a default as given
    upkeep_per_year: float | None = None
    """Engineer-weeks a year per architecture the upkeep counts (None for portable code)."""
    upkeep_source: Literal["proposal", "policy", "policy_over_zero"] | None = None
    """`proposal`: the proposal's `maintenance_weeks_per_year`; `policy`: none given, the policy's; `policy_over_zero`:
    a claimed 0 for unportable code, which the policy's figure replaces (unportable code is never free to keep)."""
    architectures: int = 1

    @property
    def upkeep_said(self) -> str:
        """Whose upkeep figure it is, as a clause after it (`, the policy's figure`): empty when the proposal gave it,
        so a statement never presents the policy's default as the proposal's own."""
        return UPKEEP_SOURCE[self.upkeep_source or "proposal"]


UPKEEP_SOURCE = {
    "proposal": "",
    "policy": ", the policy's figure",
    "policy_over_zero": ", the policy's figure, not the 0 claimed",
}
"""`Cost.upkeep_said` for each `Cost.upkeep_source`."""


@dataclass(slots=True)
class Money:
    """The saving's volume priced with the policy: GPU-equivalents freed on a fleet, recurring or for one job."""

    gpus: float
    recurring: bool
    value_usd: float
    """Over the horizon (recurring) or over the job (one-off)."""
    annual_usd: float | None
    job_days: float | None
    cost_usd: float
    payback_months: float | None
    clears: bool
    # issue #25 (part a): GPU time the change itself costs on every start, netted out of the capacity it frees
    consumed_gpus: float = 0.0
    """GPU-equivalents the change's recurring GPU time takes (GPU-minutes per start × starts a day, around the
    clock); `value_usd`, `annual_usd` and `clears` are net of it."""
    recurrence: bool | None = None
    """`flags.recurring` as the proposal states it: None when unsaid (the horizon's value is then an assumption)."""

    @property
    def net_gpus(self) -> float:
        return self.gpus - self.consumed_gpus

    @property
    def net_gpus_said(self) -> float:
        """`net_gpus` as the sentences print it: the printed freed less the printed consumed (text.gpu_figure), so
        the printed parts add up (200 freed, 62.5 taken printed 63, leaving 137 — not 62 and 137, or 138)."""
        return gpu_figure(self.gpus) - gpu_figure(self.consumed_gpus)


@dataclass(slots=True)
class Fit:
    """Issue #25 (part a): the memory a replica needs before and after the change, in devices (memory_fit rule)."""

    usable_gb: float
    """A device's memory less the headroom wanted."""
    gpus_before: int
    gpus_after: int

    @property
    def saving(self) -> float:
        """Share of the GPUs a replica holds that the change frees: 1 − after / before (0 when none is freed)."""
        return max(0.0, 1 - self.gpus_after / self.gpus_before)

    @property
    def fixes(self) -> bool:
        """The change is the capacity fix: a replica needs fewer devices after it."""
        return self.gpus_after < self.gpus_before


_EPS = 1e-9  # float noise in ceil(): 282 / 141 must be 2 devices, not 3


def fit_of(proposal: Proposal) -> Fit | None:
    """Devices per replica before and after the change, from `goal`; None without the need after the change."""
    goal = proposal.goal
    if goal is None or goal.memory_after_gb is None:
        return None
    required, device = goal.memory_required_gb, goal.device_memory_gb
    if required is None or device is None:  # pragma: no cover - the Goal struct requires both with the after
        return None
    usable = device - (goal.memory_headroom_gb or 0.0)
    return Fit(
        usable_gb=usable,
        gpus_before=max(1, math.ceil(required / usable - _EPS)),
        gpus_after=max(1, math.ceil(goal.memory_after_gb / usable - _EPS)),
    )


@dataclass(slots=True)
class Worth:
    """Stage 2: the saving on the decision scope and whether it pays for its cost."""

    saving: float
    """End-to-end share of the measured workload's run removed."""
    rate: float | None
    """`saving` per engineer-week of build plus upkeep; None when the cost is unknown."""
    strategic_saving: float | None
    strategic_rate: float | None
    strategic_credible: bool
    strategic_clears: bool
    money: Money | None
    product: bool
    """The kernel is the product (unportable, and it saves time): no per-run bar applies; its tested portable
    fallback is a condition (maintenance_cost), not part of its value."""
    clears: bool
    basis: Basis
    cost: Cost
    fit: Fit | None = None
    capacity_saving: float | None = None
    """With a memory fix: the share of GPU capacity freed by fewer devices per replica and the faster step together,
    1 − (1 − memory) · (1 − saving); what a fleet's money is counted on."""

    @property
    def carried_by(self) -> str | None:
        """The rule whose figure carries a proposal that a per-run bar alone would refuse; None when none does."""
        if not self.clears or self.basis == "measured":
            return None
        return CARRIED_BY[self.basis]


def cost_of(proposal: Proposal, policy: Policy) -> Cost:
    """Build plus upkeep (maintenance weeks per year × architectures over the horizon for unportable code)."""
    flags = proposal.flags
    upkeep = 0.0
    per_year: float | None = None
    source: Literal["proposal", "policy", "policy_over_zero"] | None = None
    if flags.portability in ("vendor_specific", "hand_asm"):
        per_year, source = flags.maintenance_weeks_per_year, "proposal"
        if per_year is None:
            per_year, source = policy.maintenance_weeks_per_year, "policy"
        elif per_year == 0 and policy.maintenance_weeks_per_year > 0:
            per_year, source = policy.maintenance_weeks_per_year, "policy_over_zero"
        upkeep = per_year * (flags.architectures or 1) * policy.horizon_months / 12
    build = proposal.cost_weeks
    weeks = None if build is None and upkeep == 0 else (build or 0.0) + upkeep
    if weeks is not None and not math.isfinite(weeks * policy.engineer_week_usd):
        # 1e308 weeks of build and as many of upkeep overflow their sum, or its price: no figure could be said.
        field, value = (
            ("flags.maintenance_weeks_per_year", per_year) if upkeep > (build or 0.0) else ("cost_weeks", build)
        )
        raise InvalidInput(
            f"Expected `{field}` small enough that the work's cost (build plus upkeep, in engineer-weeks and in "
            f"dollars) is a finite number, got {value}",
            "/" + field.replace(".", "/"),
        )
    return Cost(
        build_weeks=build,
        upkeep_weeks=upkeep,
        weeks=weeks,
        usd=None if weeks is None else weeks * policy.engineer_week_usd,
        upkeep_per_year=per_year,
        upkeep_source=source,
        architectures=flags.architectures or 1,
    )


def _rate(saving: float, weeks: float | None) -> float | None:
    if weeks is None:
        return None
    return saving / weeks if weeks > 0 else (math.inf if saving > 0 else 0.0)


def _clears(saving: float, rate: float | None, policy: Policy) -> bool:
    return saving >= policy.noise_floor and (rate is None or rate >= policy.min_rate)


def strategic_credible(proposal: Proposal, policy: Policy) -> bool:
    """A strategic workload counts unless it has no committed launch and slipped `max_slips` times (roadmap_risk)."""
    strategic = proposal.flags.strategic
    if strategic is None:
        return False
    return strategic.launch_committed is True or strategic.slips < policy.max_slips


def money_of(proposal: Proposal, policy: Policy, saving: float, cost: Cost) -> Money | None:
    """The fleet's GPU-equivalents freed, priced; None without `flags.fleet_gpus`."""
    fleet = proposal.flags.fleet_gpus
    if fleet is None:
        return None
    gpus = fleet * saving
    consumed = recurring_gpus(proposal)
    net = gpus - consumed
    days = proposal.flags.run_days
    cost_usd = cost.usd or 0.0
    if days is not None:
        value = net * policy.gpu_hour_usd * HOURS_PER_DAY * days
        annual = None
        payback = None
    else:
        annual = net * policy.gpu_hour_usd * HOURS_PER_YEAR
        value = annual * policy.horizon_months / 12
        payback = cost_usd / (annual / 12) if annual > 0 else None
    if not math.isfinite(value) and consumed > gpus:
        # 1e308 GPU-minutes on 1e308 starts a day: what the change takes, priced, has no figure to say.
        raise gpu_time_overflows(proposal)
    # Overflow guard: a fleet of 1e18 GPUs is a typo, but its arithmetic must still be finite to be printed.
    clears = net > 0 and math.isfinite(value) and value >= cost_usd
    return Money(
        gpus=gpus,
        recurring=days is None,
        value_usd=value,
        annual_usd=annual,
        job_days=days,
        cost_usd=cost_usd,
        payback_months=payback,
        clears=clears,
        consumed_gpus=consumed,
        recurrence=proposal.flags.recurring,
    )


MINUTES_PER_DAY = 1440.0
"""A unit: GPU-minutes a day that one GPU-equivalent provides."""


def pays_for_weeks(money: Money, cost: Cost, policy: Policy) -> float | None:
    """The most build engineer-weeks the value pays for, where money decides: value ÷ the engineer-week's price, less
    the upkeep already counted (e.g. $788,400 / $5,000 = 157.68). None when the policy prices engineering at
    nothing. The break-even of an unstated cost and the fleet's "pays for up to" are this one figure."""
    price = policy.engineer_week_usd
    if price <= 0 or not math.isfinite(money.value_usd):
        return None
    return max(money.value_usd / price - cost.upkeep_weeks, 0.0)


def gpu_time_overflows(proposal: Proposal) -> InvalidInput:
    """The error for GPU time taken on every start that, priced, is no finite number of dollars (1e200 GPU-minutes
    on 1e200 starts a day): it names the fields, as the model does for a k whose 1/k overflows."""
    flags = proposal.flags
    return InvalidInput(
        "Expected `flags.gpu_minutes_per_start` × `flags.starts_per_day` small enough that the GPU time the change "
        f"takes, priced, is a finite number of dollars, got {flags.gpu_minutes_per_start} × {flags.starts_per_day}",
        "/flags/gpu_minutes_per_start",
    )


def recurring_gpus(proposal: Proposal) -> float:
    """GPU-equivalents the change's own GPU time takes, around the clock: GPU-minutes per start × starts a day ÷
    1,440 (45 GPU-minutes on 2,000 starts a day keeps 62.5 GPUs busy); 0 when none is stated."""
    flags = proposal.flags
    if flags.gpu_minutes_per_start is None or flags.starts_per_day is None:
        return 0.0
    return flags.gpu_minutes_per_start * flags.starts_per_day / MINUTES_PER_DAY


def worth_of(proposal: Proposal, policy: Policy, saving: float, k: float) -> Worth:
    """Stage 2 against stage 3: the value of the work on its decision scope, and whether it pays for itself."""
    cost = cost_of(proposal, policy)
    rate = _rate(saving, cost.weeks)
    per_run = _clears(saving, rate, policy)
    strategic = proposal.flags.strategic
    credible = strategic_credible(proposal, policy)
    strategic_saving = strategic_rate = None
    strategic_ok = False
    if strategic is not None and strategic.p is not None:
        strategic_saving = amdahl.saving_fraction(strategic.p, k)
        strategic_rate = _rate(strategic_saving, cost.weeks)
        strategic_ok = credible and _clears(strategic_saving, strategic_rate, policy)
    fit = fit_of(proposal)
    capacity = 1 - (1 - fit.saving) * (1 - saving) if fit is not None and fit.fixes else None
    money = money_of(proposal, policy, saving if capacity is None else capacity, cost)
    memory_ok = capacity is not None and _clears(capacity, _rate(capacity, cost.weeks), policy)
    flags = proposal.flags
    unportable = flags.portability in ("vendor_specific", "hand_asm")
    # The kernel is the product: no per-run bar applies. Its tested portable fallback is the condition of owning it
    # (maintenance_cost), not a part of its value: without one the answer is "fund if it ships", never a decline.
    product = unportable and flags.kernel_is_product and saving > 0
    basis: Basis
    if money is not None and not money.clears and strategic_ok:
        # The measured workload's fleet does not pay for it, but the credible strategic workload does, per run, as it
        # would with no fleet stated: stating where today's model runs never takes the strategic value away.
        clears, basis = True, "strategic"
    elif money is not None:
        clears, basis = money.clears, "job" if flags.run_days is not None else "fleet"
    elif product:
        clears, basis = True, "product"
    elif per_run:
        clears, basis = True, "measured"
    elif memory_ok:
        clears, basis = True, "memory"
    elif strategic_ok:
        clears, basis = True, "strategic"
    else:
        clears, basis = False, "measured"
    return Worth(
        saving=saving,
        rate=rate,
        strategic_saving=strategic_saving,
        strategic_rate=strategic_rate,
        strategic_credible=credible,
        strategic_clears=strategic_ok,
        money=money,
        product=product,
        clears=clears,
        basis=basis,
        cost=cost,
        fit=fit,
        capacity_saving=capacity,
    )
