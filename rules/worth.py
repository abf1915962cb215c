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
    "Bought",
    "Cost",
    "Fit",
    "Money",
    "OnUnowned",
    "Worth",
    "bought_of",
    "cost_of",
    "fit_of",
    "gpu_time_overflows",
    "money_of",
    "pays_for_weeks",
    "recurring_gpus",
    "strategic_credible",
    "unowned_of",
    "worth_of",
]

HOURS_PER_DAY = 24.0
HOURS_PER_YEAR = 8760.0
"""Units, not thresholds: freed capacity is counted around the clock."""

Basis = Literal["measured", "strategic", "fleet", "job", "product", "memory", "slo", "power", "unowned"]
CARRIED_BY: dict[Basis, str] = {
    "measured": "amdahl",
    "strategic": "wrong_model",
    "fleet": "fleet_multiplication",
    "job": "fleet_multiplication",
    "product": "vendor_product",
    "memory": "memory_fit",
    "slo": "slo_met",
    "power": "power_capacity",
    "unowned": "unowned_devices",
}
"""The rule whose finding states the figure each basis rests on (provenance for `Finding.overridden_by`)."""
CREDIBILITY_RULE = "roadmap_risk"
"""The rule whose finding says why a strategic workload does not count (`Worth.strategic_credible`)."""


@dataclass(slots=True)
class Cost:
    """Stage 3: build plus upkeep of unportable code over the horizon, the ports to further device generations, and
    the one-off GPU-hours the work costs — one figure for decision, plan, portfolio."""

    build_weeks: float | None
    upkeep_weeks: float
    weeks: float | None
    """Build + upkeep; None when neither is known (no cost given and portable code)."""
    usd: float | None
    # Where the upkeep figure came from, so a statement never presents a default as given
    upkeep_per_year: float | None = None
    """Engineer-weeks a year per architecture the upkeep counts (None for portable code)."""
    upkeep_source: Literal["proposal", "policy", "policy_over_zero"] | None = None
    """`proposal`: the proposal's `maintenance_weeks_per_year`; `policy`: none given, the policy's; `policy_over_zero`:
    a claimed 0 for unportable code, which the policy's figure replaces (unportable code is never free to keep)."""
    architectures: int = 1
    # costs besides engineer-weeks, in the one figure: `usd` counts them
    gpu_hours: float = 0.0
    """One-off GPU-hours the work costs (a distillation run, an autotuning campaign)."""
    gpu_usd: float = 0.0
    """`gpu_hours` at the policy's `gpu_hour_usd`."""
    people: int | None = None
    calendar_weeks: float | None = None
    """People × calendar weeks, when the proposal states the build so (`build_weeks` is their product)."""
    port_weeks: float = 0.0
    """Engineer-weeks to ship to each further device generation (devices the company does not own), in `weeks`."""
    generations: int = 1

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
    # GPU time the change itself costs on every start, netted out of the capacity it frees
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
    """The memory a replica needs before and after the change, in devices (memory_fit rule)."""

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

    @property
    def overflows(self) -> bool:
        """The change raises the need past the devices a replica holds (recompute turned off, a doubled batch, a
        longer KV cache): as measured it does not run, whatever its speed."""
        return self.gpus_after > self.gpus_before


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
class Bought:
    """What a change buys besides time on GPUs the company pays for: a violated latency SLO met, or capacity at a
    site limited by power. A slower step is then the price, counted in it (slo_met, power_capacity rules)."""

    kind: Literal["slo", "power"]
    annual_usd: float | None
    """What it buys a year, net of what a slower step costs on the fleet where that is known; None: unpriced."""
    value_usd: float | None
    """`annual_usd` over the horizon; None: unpriced."""
    clears: bool | None
    """It pays for the one cost; None when what it buys is unpriced or its price unknown (a condition)."""
    gained_gpus: float = 0.0
    """Power: GPU-equivalents of capacity gained (more GPUs under the same power, each at its new speed)."""
    gpus_before: int = 0
    gpus_after: int = 0
    """Power: GPUs the site runs under its power before and after the change."""
    slowdown_gpus: float = 0.0
    """SLO: GPU-equivalents the slower step costs on the fleet (0 when faster or no fleet is stated)."""
    slo_usd_per_year: float | None = None
    """SLO: what meeting it is worth a year (the policy's price, or the GPUs meeting it would otherwise take)."""

    @property
    def share(self) -> float:
        """Power: the capacity gained as a share of the site's before (0 for an SLO: it buys no capacity)."""
        return self.gained_gpus / self.gpus_before if self.kind == "power" and self.gpus_before else 0.0


@dataclass(slots=True)
class OnUnowned:
    """A change on devices the company does not pay for, valued as the policy prices such a change per device."""

    devices: int
    kind: str
    usd_per_device_year: float
    """The policy's `unowned_device_usd_per_year`: what removing all of the step is worth per device a year."""
    value_usd: float | None
    """Over the horizon: devices × the policy's figure × the saving; None when the policy prices it at nothing."""
    clears: bool | None


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
    bought: Bought | None = None
    """What a slower (or faster) step buys: an SLO met, capacity under a power limit."""
    unowned: OnUnowned | None = None
    """The value on devices the company does not own."""

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
    unowned = flags.unowned
    generations = unowned.generations if unowned is not None else 1
    port = 0.0
    if unowned is not None and generations > 1:
        each = unowned.port_weeks if unowned.port_weeks is not None else policy.port_weeks_per_generation
        port = each * (generations - 1)
    weeks = None if build is None and upkeep == 0 and port == 0 else (build or 0.0) + upkeep + port
    gpu_hours = proposal.cost_gpu_hours or 0.0
    gpu_usd = gpu_hours * policy.gpu_hour_usd
    engineering = None if weeks is None else weeks * policy.engineer_week_usd
    usd = None if engineering is None and not gpu_hours else (engineering or 0.0) + gpu_usd
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
        usd=usd,
        upkeep_per_year=per_year,
        upkeep_source=source,
        architectures=flags.architectures or 1,
        gpu_hours=gpu_hours,
        gpu_usd=gpu_usd,
        people=proposal.cost_people,
        calendar_weeks=proposal.cost_calendar_weeks,
        port_weeks=port,
        generations=generations,
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


def bought_of(proposal: Proposal, policy: Policy, saving: float, money: Money | None, cost: Cost) -> Bought | None:
    """What the change buys besides time: a violated p99 brought under its SLO, or capacity at a power-limited site;
    None when it buys neither."""
    flags = proposal.flags
    cost_usd = cost.usd or 0.0
    years = policy.horizon_months / 12
    power = flags.power
    if power is not None:
        site = power.site_mw * 1e6  # the model bounds it and the watts: at most 1e11 GPUs, a finite count
        before = math.floor(site / power.watts_per_gpu_before + _EPS)
        after = math.floor(site / power.watts_per_gpu_after + _EPS)
        per_gpu = 1.0 / (1.0 - saving) if saving < 1 else math.inf  # each GPU's throughput, before = 1
        gained = after * per_gpu - before
        if before <= 0 or not math.isfinite(gained) or (after == before and saving == 0):
            return None
        annual = gained * policy.gpu_hour_usd * HOURS_PER_YEAR
        value = annual * years
        return Bought(
            kind="power",
            annual_usd=annual,
            value_usd=value,
            clears=gained > 0 and math.isfinite(value) and value >= cost_usd,
            gained_gpus=gained,
            gpus_before=before,
            gpus_after=after,
        )
    slo = flags.latency_slo
    if slo is None or slo.p99_ms is None or slo.p99_before_ms is None or slo.p99_after_ms is None:
        return None
    if not (slo.p99_before_ms > slo.p99_ms >= slo.p99_after_ms):
        return None  # met before, or still missed after: the SLO buys nothing here
    price: float | None = None
    if policy.slo_met_usd_per_year > 0:
        price = policy.slo_met_usd_per_year
    elif slo.gpus_otherwise is not None:
        price = slo.gpus_otherwise * policy.gpu_hour_usd * HOURS_PER_YEAR
    slowdown = max(-money.gpus, 0.0) if money is not None else 0.0
    slower_unknown = money is None and saving < 0
    if price is None or slower_unknown:
        return Bought(kind="slo", annual_usd=None, value_usd=None, clears=None, slo_usd_per_year=price)
    # the fleet's money is negative for a slower step: what the slowdown costs, counted against the SLO's worth
    annual = price + (money.annual_usd or 0.0 if money is not None else 0.0)
    value = price * years + (money.value_usd if money is not None else 0.0)
    return Bought(
        kind="slo",
        annual_usd=annual,
        value_usd=value,
        clears=math.isfinite(value) and value > 0 and value >= cost_usd,
        slowdown_gpus=slowdown,
        slo_usd_per_year=price,
    )


def unowned_of(proposal: Proposal, policy: Policy, saving: float, cost: Cost) -> OnUnowned | None:
    """The value of the change on devices the company does not pay for: devices × the policy's figure per device a
    year × the share of the step saved, over the horizon; unpriced when the policy's figure is 0."""
    unowned = proposal.flags.unowned
    if unowned is None:
        return None
    price = policy.unowned_device_usd_per_year
    if price <= 0:
        return OnUnowned(unowned.devices, unowned.kind, price, None, None)
    value = unowned.devices * price * max(saving, 0.0) * policy.horizon_months / 12
    return OnUnowned(
        unowned.devices,
        unowned.kind,
        price,
        value,
        clears=saving > 0 and math.isfinite(value) and value >= (cost.usd or 0.0),
    )


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
    overflows = fit is not None and fit.overflows
    capacity = 1 - (1 - fit.saving) * (1 - saving) if fit is not None and fit.fixes else None
    money = money_of(proposal, policy, saving if capacity is None else capacity, cost)
    memory_ok = capacity is not None and _clears(capacity, _rate(capacity, cost.weeks), policy)
    flags = proposal.flags
    unportable = flags.portability in ("vendor_specific", "hand_asm")
    # The kernel is the product: no per-run bar applies. Its tested portable fallback is the condition of owning it
    # (maintenance_cost), not a part of its value: without one the answer is "fund if it ships", never a decline.
    product = unportable and flags.kernel_is_product and saving > 0
    basis: Basis
    if overflows:
        # a change that does not fit on the replica's devices does not run: nothing it saves is worth anything
        clears, basis = False, "memory"
    elif money is not None and not money.clears and strategic_ok:
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
    bought = None if overflows else bought_of(proposal, policy, saving, money, cost)
    if bought is not None and bought.clears is not False and not clears:
        # the SLO met or the capacity gained pays where the time alone does not; unpriced, it pays on the condition
        # its rule states (the least the SLO must be worth, the largest fleet the slowdown pays on)
        clears, basis = True, bought.kind
    unowned = unowned_of(proposal, policy, saving, cost)
    if unowned is not None and not overflows and basis == "measured":
        # on devices the company does not pay for, the policy's price per device decides, never the per-run bar;
        # unpriced, the work pays on the condition its rule states (the least it must be worth per device a year)
        clears, basis = (unowned.clears if unowned.clears is not None else saving > 0), "unowned"
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
        bought=bought,
        unowned=unowned,
    )
