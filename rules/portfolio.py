"""Portfolio: several proposals on one workload, ranked by return per engineer-week (PRODUCT §8, POST /v1/portfolio).

Each proposal is evaluated on its own under the policy and ranked by the value its decision weighs per engineer-week:
the saving of the step, or for a memory fix the capacity it frees (its longer step, where it is longer, said). A
proposal funded only on a failing quality gate is held back until its metric recovers. The funded set is the one
worth the most within an optional budget of weeks (a knapsack, not the rate order taken greedily: one 3-week
proposal can beat two cheaper ones whose weeks it would have used). Two proposals on the same target are
alternatives, not additions: at most one of them is funded, and the more ambitious one only when its step up from
the cheaper pays on its own, its extra value for its extra weeks judged as the policy judges any proposal. The
combined figure comes from summed ms savings on disjoint phases, never from multiplied speedups: the step as the
funded set leaves it, a memory fix's longer step included. The workload runs on one fleet: a proposal that states
none is valued on the one another states, and different fleets are refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from worthit.rules.engine import evaluate
from worthit.rules.errors import InvalidInput
from worthit.rules.model import Base, Evaluation, NonNegativeFloat, PolicyRef, Proposal, Verdict
from worthit.rules.policy import Policy
from worthit.rules.precision import settled
from worthit.rules.text import join, label, metric, ms, ms_change, num, pct, sentence, times, weeks
from worthit.rules.worth import cost_of, worth_of

__all__ = ["FUNDABLE", "Picks", "Portfolio", "PortfolioEntry", "PortfolioRequest", "State", "portfolio"]

FUNDABLE: tuple[Verdict, ...] = ("fund", "fund_if")
QUALITY_GATE = "quality_gate"
"""The rule whose failing gate holds a `fund_if` proposal back (rules.checks.quality_gate's id, as clients name it)."""


class PortfolioEntry(msgspec.Struct, kw_only=True):
    """One proposal of the portfolio: its own verdict, its rate, its rank and whether it is funded."""

    index: int
    """Position in the request, so clients can match entries to what they sent."""
    rank: int
    title: str | None
    target: str | None
    verdict: Verdict
    statement: str
    saving_fraction: float
    """The share of the run's time the change saves as its decision judges it (its `end_to_end_saving`): end to end
    when `p` is of a narrower scope, part by part over a fleet or traffic mix, a collective's transfer without its
    wait; negative when the step gets slower (a memory fix bought with a slower kernel)."""
    saving_ms: float | None
    """`saving_fraction` of the workload's `baseline_ms`."""
    value_fraction: float
    """What the decision weighs the work on, as a share of the workload's GPU time: `saving_fraction`, or for a
    memory fix (`valued_on` capacity) the share of the capacity it frees by fitting a replica on fewer GPUs, net of a
    slower step. What the portfolio ranks, budgets and compares alternatives on."""
    valued_on: Literal["time", "capacity"] = "time"
    """`capacity` for a memory fix, whose decision weighs the capacity it frees; `time` for every other change."""
    cost_weeks: float | None
    """Build plus upkeep of unportable code over the policy's horizon, as in the proposal's own decision."""
    rate: float | None
    """`value_fraction` per engineer-week, in `Portfolio.rate_unit` (ms/week: the share of the workload's
    `baseline_ms`, freed capacity counted as the step time it equals); `None` without a cost (ranked last)."""
    funded: bool
    held_by: str | None = None
    """The rule whose condition holds a `fund_if` proposal back, unfunded until it is met: `quality_gate`, a change
    that cannot ship until its metric recovers (whatever it saves, it is not added to the funded set)."""
    note: str | None = None
    """Why a proposal is not funded (its verdict, its failing quality gate, the budget, or a better proposal on the
    same target), what a memory fix is valued on (and that its step is slower), and the fleet it was valued on when
    another proposal of the workload stated it and it did not."""

    @property
    def valued_on_noun(self) -> str:
        """What `value_fraction` is a share of, as a sentence says it."""
        return "capacity" if self.valued_on == "capacity" else "step"


class Portfolio(msgspec.Struct, kw_only=True):
    """The ranking, the funded set and what it adds up to."""

    entries: list[PortfolioEntry]
    rate_unit: Literal["ms/week", "fraction/week"]
    budget_weeks: float | None
    funded_weeks: float
    baseline_ms: float | None
    combined_saving_fraction: float
    """The share of the step the funded set saves: their `saving_fraction`s summed (a slower step subtracts)."""
    combined_saving_ms: float | None
    combined_new_ms: float | None
    combined_speedup: float | None
    """From the summed savings of the funded set: 1 / (1 − Σ saving); `None` when nothing would be left."""
    top_ratio: float | None
    """The best rate over the second best ("2.3× the return"); `None` with fewer than two rates."""
    message: str
    policy: PolicyRef


def portfolio(proposals: Sequence[Proposal], policy: Policy, budget_weeks: float | None = None) -> Portfolio:
    """Rank proposals on one workload by return per engineer-week and fund the set that saves the most within
    `budget_weeks`.

    Raises `InvalidInput` when the proposals name different workloads or different baselines (their savings would
    not add), when none is given, or when the budget is negative.
    """
    if not proposals:
        raise InvalidInput("Expected at least one proposal", "/proposals")
    if budget_weeks is not None and not (budget_weeks >= 0 and math.isfinite(budget_weeks)):
        raise InvalidInput(f"Expected `budget_weeks` >= 0, got {budget_weeks}", "/budget_weeks")
    workloads = {proposal.scope.workload for proposal in proposals} - {None}
    if len(workloads) > 1:
        raise InvalidInput(
            f"Expected proposals on one workload, got {sorted(w for w in workloads if w)}", "/proposals/scope/workload"
        )
    _check_disjoint(proposals, policy)
    proposals, shared = _shared_fleet(proposals)
    evaluations = [evaluate(proposal, policy) for proposal in proposals]
    baselines = [evaluation.amdahl.baseline_ms for evaluation in evaluations]
    known = [b for b in baselines if b is not None]
    if known and any(not math.isclose(b, known[0], rel_tol=1e-9) for b in known):
        raise InvalidInput(
            f"Expected one baseline_ms for the workload, got {sorted(set(known))}", "/proposals/baseline_ms"
        )
    in_ms = len(known) == len(baselines)
    baseline = known[0] if in_ms else None

    entries: list[PortfolioEntry] = []
    held: dict[int, str] = {}
    for index, (proposal, evaluation) in enumerate(zip(proposals, evaluations, strict=True)):
        cost = cost_of(proposal, policy).weeks  # build plus upkeep: the same cost the decision weighs
        # the saving the decision weighs, not the measured part's: a k measured at batch 1 is never applied to the
        # batch-32 traffic, nor a share of device activity taken for a share of the run
        fraction = _judged_saving(evaluation)
        # and the value it weighs: for a memory fix the capacity it frees, not its (slower) step
        capacity = _judged_capacity(evaluation)
        value = fraction if capacity is None else capacity
        scale = baseline if baseline is not None else 1.0
        rate = None if cost is None else (value * scale / cost if cost > 0 else math.inf)
        entry = PortfolioEntry(
            index=index,
            rank=0,
            title=proposal.title,
            target=proposal.target,
            verdict=evaluation.verdict,
            statement=evaluation.statement,
            saving_fraction=fraction,
            saving_ms=fraction * baseline if baseline is not None else None,
            value_fraction=value,
            valued_on="time" if capacity is None else "capacity",
            cost_weeks=cost,
            rate=rate,
            funded=False,
        )
        recovery = _failing_gate(evaluation, proposal)
        if recovery is not None:
            entry.held_by, held[index] = QUALITY_GATE, recovery
        entries.append(entry)
    entries.sort(key=lambda e: (e.rate is None, -(e.rate or 0.0), -e.value_fraction, e.index))
    for rank, entry in enumerate(entries, start=1):
        entry.rank = rank

    _fund(entries, proposals, policy, budget_weeks, held)
    for entry in entries:
        notes = [entry.note, _capacity_note(entry), shared.get(entry.index)]
        entry.note = "; ".join(note for note in notes if note) or None
    funded = [entry for entry in entries if entry.funded]
    used = sum(entry.cost_weeks or 0.0 for entry in funded)
    combined = sum(entry.saving_fraction for entry in funded)
    saving_ms = sum(entry.saving_ms or 0.0 for entry in funded) if baseline is not None else None
    new_ms = baseline - saving_ms if baseline is not None and saving_ms is not None else None
    if baseline is not None and new_ms is not None:
        speedup = baseline / new_ms if new_ms > 0 else None
    else:
        speedup = 1 / (1 - combined) if combined < 1 else None
    rated = [entry for entry in entries if entry.rate is not None]
    ratio = None
    if len(rated) >= 2:
        first, second = rated[0].rate, rated[1].rate
        if first is not None and second is not None and second > 0 and math.isfinite(first):
            ratio = first / second
    result = Portfolio(
        entries=entries,
        rate_unit="ms/week" if in_ms else "fraction/week",
        budget_weeks=budget_weeks,
        funded_weeks=used,
        baseline_ms=baseline,
        combined_saving_fraction=combined,
        combined_saving_ms=saving_ms,
        combined_new_ms=new_ms,
        combined_speedup=speedup,
        top_ratio=ratio,
        message="",
        policy=PolicyRef(name=policy.name, version=policy.version),
    )
    result.message = _message(result, held)
    return settled(result)


def _judged_saving(evaluation: Evaluation) -> float:
    """The end-to-end saving the decision's worth stage judged the work on (one figure per fact)."""
    for stage in evaluation.reasoning or ():
        saving = stage.figures.get("end_to_end_saving") if stage.stage == "worth" else None
        if isinstance(saving, float | int) and not isinstance(saving, bool):
            return float(saving)
    return evaluation.amdahl.saving_fraction  # pragma: no cover - the worth stage always states it


def _judged_capacity(evaluation: Evaluation) -> float | None:
    """The share of capacity a memory fix frees, as its decision's worth stage counts it; None for any other change."""
    for stage in evaluation.reasoning or ():
        capacity = stage.figures.get("capacity_saving") if stage.stage == "worth" else None
        if isinstance(capacity, float | int) and not isinstance(capacity, bool):
            return float(capacity)
    return None


def _failing_gate(evaluation: Evaluation, proposal: Proposal) -> str | None:
    """What a `fund_if` on a failing quality gate waits for (`accuracy recovers to at least 75.7`), else None: the
    change cannot ship as built, so a portfolio does not count its saving among the funded set's."""
    gate = proposal.quality
    if evaluation.verdict != "fund_if" or gate is None:
        return None
    for finding in evaluation.findings:
        if finding.rule != QUALITY_GATE or finding.effect != "condition" or finding.overridden_by is not None:
            continue
        edge = finding.figures.get("recover_to")
        if isinstance(edge, float | int) and not isinstance(edge, bool):
            bound = "at least" if gate.higher_is_better else "at most"
            return f"{label(gate.metric)} recovers to {bound} {metric(float(edge))}"
    return None


def _capacity_note(entry: PortfolioEntry) -> str | None:
    """What a memory fix is valued on, and that its step is slower when it is: its rank is not its step's."""
    if entry.valued_on != "capacity":
        return None
    freed = f"valued on the {pct(entry.value_fraction)} of the capacity it frees by fitting a replica on fewer GPUs"
    if entry.saving_fraction < 0:
        return f"{freed}, net of its {pct(-entry.saving_fraction)} longer step"
    return f"{freed}, its shorter step included"


def _share(proposal: Proposal) -> float | None:
    """The target's share of the step (of the whole run when `p` is of a narrower scope), lowest of a range."""
    if proposal.p_end_to_end is not None:
        return proposal.p_end_to_end
    if proposal.scope.measured not in (None, "step", "end_to_end"):
        return None
    p = proposal.p
    return p if isinstance(p, float) else p.low if p is not None else None


def _shared_fleet(proposals: Sequence[Proposal]) -> tuple[list[Proposal], dict[int, str]]:
    """The proposals, each valued on the workload's fleet, and a note for each that was given it.

    The proposals are on one workload, and a workload runs on one fleet: its size (`flags.fleet_gpus`, with its
    device kinds), and whether it is a fixed job (`run_days`) or recurring capacity (`recurring`). Where some
    proposals state the fleet and others do not, valuing only the former per fleet would decline a 0.5% per-run
    saving by the noise floor beside the same saving funded on 1,000 GPUs. So a proposal that states no fleet is
    valued on the one the others state (the device kinds without their own p and k, which belong to the proposal
    that measured them: where the proposal's own device is not among them it is counted as no gain, as the mix
    rule counts any unmeasured part), and its note says so. Proposals that state different fleets are refused,
    naming both: which fleet the workload runs on is the proposer's to say.
    """
    stating = [(i, p) for i, p in enumerate(proposals) if p.flags.fleet_gpus is not None]
    if not stating:
        return list(proposals), {}
    first, model = stating[0]
    for index, proposal in stating[1:]:
        for field in ("fleet_gpus", "run_days", "recurring"):
            mine, theirs = getattr(proposal.flags, field), getattr(model.flags, field)
            if mine != theirs:
                raise InvalidInput(
                    f"Expected one fleet for the workload, but proposal {first + 1} states `flags.{field}` "
                    f"{_said(theirs)} and proposal {index + 1} states {_said(mine)}; state the fleet the workload "
                    "runs on in each, or leave it out of all but one",
                    f"/proposals/{index}/flags/{field}",
                )
        # A proposal that states the fleet's size without its device kinds prices its k on all of it: its own say.
        if None not in (_kinds(proposal), _kinds(model)) and _kinds(proposal) != _kinds(model):
            raise InvalidInput(
                f"Expected one fleet for the workload, but proposal {first + 1} states `flags.fleet_mix` "
                f"{_said(_kinds(model))} and proposal {index + 1} states {_said(_kinds(proposal))}",
                f"/proposals/{index}/flags/fleet_mix",
            )
    fleet = model.flags
    mix = None
    if fleet.fleet_mix is not None:
        mix = [msgspec.structs.replace(part, p=None, k=None) for part in fleet.fleet_mix]
    out: list[Proposal] = []
    notes: dict[int, str] = {}
    for index, proposal in enumerate(proposals):
        if proposal.flags.fleet_gpus is not None:
            out.append(proposal)
            continue
        flags = msgspec.structs.replace(
            proposal.flags,
            fleet_gpus=fleet.fleet_gpus,
            fleet_mix=mix if proposal.flags.traffic_mix is None else None,
            run_days=proposal.flags.run_days if proposal.flags.run_days is not None else fleet.run_days,
            recurring=proposal.flags.recurring if proposal.flags.recurring is not None else fleet.recurring,
        )
        out.append(msgspec.structs.replace(proposal, flags=flags))
        job = f" for {num(fleet.run_days)} days" if fleet.run_days is not None else ""
        kinds = f" ({_said(_kinds(model))})" if mix is not None else ""
        notes[index] = (
            f"valued on the workload's {num(fleet.fleet_gpus or 0)}-GPU fleet{kinds}{job}, which proposal "
            f"{first + 1} states and this one does not"
        )
    return out, notes


def _kinds(proposal: Proposal) -> dict[str, int] | None:
    mix = proposal.flags.fleet_mix
    return None if mix is None else {part.name: part.gpus for part in mix}


def _said(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        return ", ".join(f"{name} {num(gpus)}" for name, gpus in value.items())
    if isinstance(value, bool):
        return str(value).lower()
    return num(value) if isinstance(value, int | float) else str(value)


def _check_disjoint(proposals: Sequence[Proposal], policy: Policy) -> None:
    """Refuse proposals whose savings would be added though they act on the same time: a phase one proposal names
    in `more_targets` that another targets, or targets whose shares of one step add up past the whole step."""
    owner: dict[str, int] = {}
    for index, proposal in enumerate(proposals):
        if proposal.target is not None:
            owner.setdefault(proposal.target, index)
    for index, proposal in enumerate(proposals):
        for extra, more in enumerate(proposal.more_targets or []):
            other = owner.get(more.name)
            if other is not None and proposals[other].target != proposal.target:
                raise InvalidInput(
                    f"Expected proposals on disjoint phases: {label(proposal.target or f'proposal {index + 1}')} "
                    f"also speeds up {label(more.name)}, which proposal {other + 1} targets, and savings on one "
                    "phase do not add; propose them as alternatives naming one `target`",
                    f"/proposals/{index}/more_targets/{extra}/name",
                )
    shares: dict[str, float] = {}
    for index, proposal in enumerate(proposals):
        share = _share(proposal)
        if share is None:
            continue
        share += sum(more.p for more in proposal.more_targets or [] if more.p is not None)
        key = proposal.target if proposal.target is not None else f"proposal {index + 1}"
        shares[key] = max(shares.get(key, 0.0), share)
    total = sum(shares.values())
    if total > 1 + policy.breakdown_tolerance:
        listed = join([f"{label(name)} {pct(share)}" for name, share in shares.items()][:6])
        raise InvalidInput(
            f"Expected targets on disjoint phases of one step: their shares add up to {pct(total)} ({listed}), "
            "so some overlap and their savings would be counted twice",
            "/proposals",
        )


_STATES = 2000
"""Most cost/saving states the budgeted search keeps; past it, states within budget/_STATES weeks of each other
merge, keeping the larger saving (never a set over the budget)."""


def _fund(
    entries: list[PortfolioEntry],
    proposals: Sequence[Proposal],
    policy: Policy,
    budget: float | None,
    held: dict[int, str],
) -> None:
    """Mark the funded set (and why the rest is not) on `entries`, ranked: the most value within `budget`, at
    most one proposal per target, an alternative on a target only where its step up from the cheaper one pays, none
    that `held` holds back until its quality gate passes."""
    groups: dict[str, list[PortfolioEntry]] = {}
    for entry in entries:
        if entry.verdict not in FUNDABLE:
            entry.note = f"its own verdict is {entry.verdict}"
        elif entry.index in held:
            entry.note = f"held back until {held[entry.index]}: it fails its quality gate, and cannot ship as built"
        elif budget is not None and entry.cost_weeks is None:
            entry.note = "no cost_weeks to weigh against the budget"
        else:
            key = entry.target if entry.target is not None else f"#{entry.index}"
            groups.setdefault(key, []).append(entry)
    ladders = [_ladder(options, proposals, policy) for options in groups.values()]
    chosen = [ladder[-1] for ladder in ladders] if budget is None else _knapsack(ladders, budget)
    for entry in chosen:
        entry.funded = True
    picked = {entry.target: entry for entry in chosen if entry.target is not None}
    used = sum(entry.cost_weeks or 0.0 for entry in chosen)
    for options in groups.values():
        for entry in options:
            if entry.funded or entry.note is not None:
                continue
            other = picked.get(entry.target) if entry.target is not None else None
            if other is not None:
                entry.note = f"same target as rank {other.rank}: savings on one phase do not add"
            elif budget is not None and (entry.cost_weeks or 0.0) > _within(budget):
                entry.note = f"its {weeks(entry.cost_weeks or 0.0)} alone exceed the {num(budget)}-week budget"
            else:
                entry.note = f"over the budget: the {num(used)} of {weeks(budget or 0.0)} funded save more"


def _ladder(options: list[PortfolioEntry], proposals: Sequence[Proposal], policy: Policy) -> list[PortfolioEntry]:
    """A target's alternatives worth choosing between, cheapest first: each saves more than the one below it, and
    its extra saving for its extra weeks would be funded on its own; the rest get their note here."""
    ladder: list[PortfolioEntry] = []
    for entry in sorted(options, key=lambda e: (e.cost_weeks or 0.0, -e.value_fraction, e.rank)):
        below = ladder[-1] if ladder else None
        if below is None:
            ladder.append(entry)
        elif entry.value_fraction <= below.value_fraction:
            # what the cheaper one is worth, and for how many weeks, as they are: equal weeks are not fewer
            worth = "is worth" if below.valued_on == "capacity" else "saves"
            fewer = "fewer" if (below.cost_weeks or 0.0) < (entry.cost_weeks or 0.0) else "no more"
            entry.note = f"same target as rank {below.rank}, which {worth} as much for {fewer} weeks"
        elif not _step_pays(below, entry, proposals[entry.index], policy):
            extra = (entry.cost_weeks or 0.0) - (below.cost_weeks or 0.0)
            of = "the capacity" if "capacity" in (entry.valued_on, below.valued_on) else "the step"
            entry.note = (
                f"same target as rank {below.rank}: {num(extra)} more weeks for "
                f"{pct(entry.value_fraction - below.value_fraction)} more of {of} do not pay"
            )
        else:
            ladder.append(entry)
    return ladder


def _step_pays(below: PortfolioEntry, above: PortfolioEntry, proposal: Proposal, policy: Policy) -> bool:
    """Whether going from `below` to `above` on one target pays: the extra saving, for the extra build and upkeep,
    valued as `rules.worth` values a proposal (fleet, job, product), without a strategic workload it may not share
    (nor the memory a fix frees: the extra value already counts it)."""
    extra = None
    if above.cost_weeks is not None:
        extra = max(above.cost_weeks - (below.cost_weeks or 0.0), 0.0)
    flags = msgspec.structs.replace(proposal.flags, strategic=None, maintenance_weeks_per_year=0.0)
    step = msgspec.structs.replace(proposal, cost_weeks=extra, flags=flags, goal=None)
    saving = above.value_fraction - below.value_fraction
    return worth_of(step, policy, saving, math.inf).clears


Picks = tuple[PortfolioEntry, "Picks"] | None
"""A set of picks as a linked list (the last pick, the rest): a new state shares its parent's picks."""
State = tuple[float, float, Picks]


def _within(budget: float) -> float:
    """The most weeks `budget` funds: the budget itself, with room for the float noise of summed costs."""
    return budget * (1 + 1e-12)


def _knapsack(ladders: list[list[PortfolioEntry]], budget: float) -> list[PortfolioEntry]:
    """The set with the largest summed value within `budget` weeks, at most one rung of each ladder; ties go to
    fewer weeks, then to better ranks. Pareto states (weeks, saving), merged on a grid when they grow past _STATES."""
    limit = _within(budget)
    states: list[State] = [(0.0, 0.0, None)]
    for ladder in ladders:
        grown = list(states)
        for cost, saving, picks in states:
            for entry in ladder:
                total = cost + (entry.cost_weeks or 0.0)
                if total <= limit:
                    grown.append((total, saving + entry.value_fraction, (entry, picks)))
        states = _frontier(grown, budget)
    best = max(states, key=lambda s: (s[1], -s[0], [-e.rank for e in _unlink(s[2])]))
    return _unlink(best[2])


def _unlink(picks: Picks) -> list[PortfolioEntry]:
    found: list[PortfolioEntry] = []
    while picks is not None:
        entry, picks = picks
        found.append(entry)
    return sorted(found, key=lambda e: e.rank)


def _frontier(states: list[State], budget: float) -> list[State]:
    """The states no other beats on both weeks and saving, at most _STATES of them."""
    states.sort(key=lambda s: (s[0], -s[1]))
    kept: list[State] = []
    for state in states:
        if not kept or state[1] > kept[-1][1]:
            kept.append(state)
    if len(kept) > _STATES and budget > 0:
        cells: dict[int, State] = {}
        for state in kept:
            cell = int(state[0] / budget * _STATES)
            if cell not in cells or state[1] > cells[cell][1]:
                cells[cell] = state
        kept = sorted(cells.values(), key=lambda s: s[0])
    return kept


def _name(entry: PortfolioEntry, entries: Sequence[PortfolioEntry] = ()) -> str:
    """The target, or the title where another entry shares the target (two alternatives on attention)."""
    shared = entry.target is not None and any(e.target == entry.target and e is not entry for e in entries)
    if shared and entry.title:
        return label(entry.title)
    return label(entry.target or entry.title or f"proposal {entry.index + 1}")


def _rate(result: Portfolio, entry: PortfolioEntry, *, shares: bool = False) -> str:
    """A return as said: ms per engineer-week, or a share of the step (`shares`, beside a capacity's), or for a
    memory fix a share of the capacity."""
    if entry.rate is None:
        return "no stated cost"
    if math.isinf(entry.rate):
        return "a free saving"
    if entry.cost_weeks and (entry.valued_on == "capacity" or shares):
        return f"{pct(entry.value_fraction / entry.cost_weeks)} of the {entry.valued_on_noun} per engineer-week"
    per = ms(entry.rate) if result.rate_unit == "ms/week" else pct(entry.rate)
    return f"{per} per engineer-week"


def _message(result: Portfolio, held: dict[int, str]) -> str:
    """One sentence: who goes first, by how much the return beats the next, and what the funded set adds up to."""
    top = result.entries[0]
    funded = [entry for entry in result.entries if entry.funded]
    names = result.entries
    if result.combined_new_ms is not None and result.baseline_ms is not None:
        before, after = ms_change(result.baseline_ms, result.combined_new_ms)  # never "from 28 ms to 28 ms"
        total = f"from {before} to {after}"
    else:
        total = f"{pct(result.combined_saving_fraction)} shorter"
    speed = times(result.combined_speedup) if result.combined_speedup is not None else "without limit"
    together = (
        f"the {len(funded)} funded take the step {total} ({speed})"
        if len(funded) > 1
        else f"funded alone it takes the step {total} ({speed})"
        if funded
        else "nothing is funded"
    )
    slower = next((entry for entry in funded if entry.valued_on == "capacity" and entry.saving_fraction < 0), None)
    if slower is not None:
        # its longer step is the step the funded set leaves, said with what it buys
        together += (
            f", counting {_name(slower, names)}'s {pct(-slower.saving_fraction)} longer step, which frees "
            f"{pct(slower.value_fraction)} of the capacity"
        )
    if not top.funded and top.index in held:
        # The best return fails its quality gate: funded on its condition alone, it is not counted until it is met.
        wait = f"{_name(top, names)} has the best return ({_rate(result, top)}) but waits until {held[top.index]}"
        if funded:
            chosen = join([_name(entry, names) for entry in funded])
            return sentence(f"Fund {chosen}: {wait}; {together.replace('funded alone it', 'it')}.")
        return sentence(f"Nothing is funded: {wait}.")
    if result.top_ratio is not None and len(result.entries) > 1:
        second = result.entries[1]
        shares = top.valued_on != second.valued_on  # a capacity beside a step: both as shares, whose ratio it is
        theirs = _rate(result, second, shares=shares).replace(" per engineer-week", " a week")
        lead = (
            f"{_name(top, names)} first: {_rate(result, top, shares=shares)} is {num(result.top_ratio)}× the return "
            f"of {_name(second, names)}'s {theirs}"
        )
    else:
        lead = f"{_name(top, names)} first, at {_rate(result, top)}"
    rival = next((e for e in funded if top.target is not None and e.target == top.target), None)
    if not top.funded and top.verdict in FUNDABLE and rival is not None and result.budget_weeks is None:
        # A costlier alternative on the best return's own target is funded: its step up pays.
        more = (rival.saving_ms or 0.0) - (top.saving_ms or 0.0) if result.rate_unit == "ms/week" else None
        gain = ms(more) if more is not None else f"{pct(rival.saving_fraction - top.saving_fraction)} of the step"
        extra = num((rival.cost_weeks or 0.0) - (top.cost_weeks or 0.0))
        return sentence(
            f"Fund {_name(rival, names)} over {_name(top, names)}, the better return ({_rate(result, top)}): "
            f"its {gain} more for {extra} more week{'' if extra == '1' else 's'} pays too; "
            f"{together.replace('funded alone it', 'it')}."
        )
    if not top.funded and top.verdict in FUNDABLE and funded:
        # The best return is left out: the budget buys more saving without it.
        chosen = join([_name(entry, names) for entry in funded])
        why = f"under the {num(result.budget_weeks)}-week budget" if result.budget_weeks is not None else "instead"
        if result.budget_weeks is not None and (top.cost_weeks or 0.0) > _within(result.budget_weeks):
            return sentence(
                f"Fund {chosen} {why}: {_name(top, names)} has the best return ({_rate(result, top)}) but its "
                f"{weeks(top.cost_weeks or 0.0)} do not fit; {together.replace('funded alone it', 'it')}."
            )
        return sentence(
            f"Fund {chosen} {why}, though {_name(top, names)} has the best return ({_rate(result, top)}): "
            f"{together.replace('funded alone it', 'it')}."
        )
    verb = "Fund" if top.funded else "Rank"
    return sentence(f"{verb} {lead}; {together}.")


class PortfolioRequest(Base, kw_only=True):
    """What `POST /v1/portfolio` and `worthit portfolio` take: proposals on one workload, and a budget."""

    proposals: Annotated[list[Proposal], Meta(min_length=1, max_length=200)]
    budget_weeks: NonNegativeFloat | None = None
