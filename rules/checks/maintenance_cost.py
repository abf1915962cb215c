"""maintenance_cost — unportable code is a permanent liability, not a build cost.

What it checks: `flags.portability` is `vendor_specific` or `hand_asm`. It adds upkeep to the cost: the proposal's
`maintenance_weeks_per_year` (else the policy's) per architecture (`flags.architectures`, 1 when absent) over the
policy's `horizon_months`. Declines when the end-to-end saving per engineer-week, upkeep included, is under
`min_rate` and nothing else (a fleet) carries the work; otherwise funds on the condition of a tested portable
fallback, or is info when one exists. When the kernel is the product (rules.worth: no per-run bar applies), the
fallback is still the condition: with it the upkeep is the cost of owning the kernel, without it `fund_if` one ships.
The upkeep is part of the one cost every check, the plan and the portfolio use (rules.worth).

Why it matters: the cost side of hand-tuned assembly is not the weeks to write it: one architecture supported, a
silent correctness risk on every new GPU generation, and a file most of the team cannot review. Include the
ongoing cost in the comparison, not just the build.

Example: 3% from hand asm for 2 weeks: 1.5% per week on paper, 0.75% once 2 weeks of upkeep a year are counted:
decline.
"""

from __future__ import annotations

import math
import re

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import carried, condition, opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import count, gpu_equivalents, num, pct, saves, usd, weeks

ID = "maintenance_cost"
STAGE = "cost"

EXAMPLES = (
    Example(
        {"target": "gemm_asm", "p": 0.06, "k": 2, "cost_weeks": 2, "flags": {"portability": "hand_asm"}},
        fires=True,
        verdict="decline",
        figures={"maintenance_weeks": 2, "total_weeks": 4, "rate_with_maintenance": 0.0075},
    ),
    Example(
        {"target": "gemm_asm", "p": 0.3, "k": 2, "cost_weeks": 2, "flags": {"portability": "vendor_specific"}},
        fires=True,
        verdict="fund_if",
        figures={"total_weeks": 4},
    ),
    Example(
        {
            "target": "gemm_asm",
            "p": 0.3,
            "k": 2,
            "cost_weeks": 2,
            "flags": {"portability": "hand_asm", "portable_fallback": True, "architectures": 2},
        },
        fires=True,
        decision="fund",
        figures={"maintenance_weeks": 4},
    ),
    Example(
        {
            "target": "hgemm",
            "p": 0.3,
            "k": 1.1,
            "cost_weeks": 3,
            "flags": {"portability": "hand_asm", "kernel_is_product": True},
        },
        fires=True,
        verdict="fund_if",
        figures={"maintenance_weeks": 2, "total_weeks": 5, "portable_fallback": False},
    ),
    Example({"p": 0.06, "k": 2, "cost_weeks": 2, "flags": {"portability": "portable"}}, fires=False),
)

_WHAT = {"hand_asm": "hand-written assembly", "vendor_specific": "vendor-specific code"}
_CPU = re.compile(r"x86|amd64|x64|xeon|epyc|ryzen|core ?i[3579]|cpu|avx|neon|sve|arm|aarch64|graviton|grace\b|ampere")


def on_cpu(device: str | None) -> bool:
    """Whether the device measured is a CPU (x86, Arm): unportable code there waits on the next CPU, not GPU."""
    return device is not None and _CPU.search(device.lower()) is not None


def check(ctx: Context) -> Finding | None:
    """Adds upkeep of unportable code over the horizon to the cost, and judges the rate on the total."""
    if not ctx.unportable:
        return None
    flags, policy, worth = ctx.proposal.flags, ctx.policy, ctx.worth
    cost = worth.cost
    upkeep, build, total = cost.upkeep_weeks, cost.build_weeks, cost.weeks or 0.0
    rate = worth.rate if worth.rate is not None else math.inf
    per_year = flags.maintenance_weeks_per_year
    architectures = flags.architectures or 1
    figures: dict[str, Figure] = {
        "maintenance_weeks_per_year": policy.maintenance_weeks_per_year if per_year is None else per_year,
        "architectures": architectures,
        "horizon_months": policy.horizon_months,
        "maintenance_weeks": upkeep,
        "build_weeks": build,
        "total_weeks": total,
        "rate_with_maintenance": None if math.isinf(rate) else rate,
        "min_rate": policy.min_rate,
        "portable_fallback": flags.portable_fallback,
    }
    what = _WHAT[flags.portability or "hand_asm"]
    costs = f"{weeks(total)}, not {num(build)}," if build else f"{weeks(total)} of upkeep alone"
    # per architecture, and whose figure: the proposal's, or the policy's (never said as if the proposal gave it)
    per = num(cost.upkeep_per_year or 0.0)
    kept = "one architecture" if architectures == 1 else f"{architectures} architectures"
    source = cost.upkeep_said
    figures["upkeep_source"] = cost.upkeep_source
    figures["maintenance_weeks_per_year"] = cost.upkeep_per_year
    horizon = f"{num(upkeep)} weeks of upkeep over {num(policy.horizon_months)} months ({per} a year × {kept}{source})"
    # with no build cost given the total is the upkeep alone, said so: never a build of 0 nobody stated
    spend = (
        f"{weeks(total)} including {horizon}" if build is not None else f"{horizon}, with the build not yet estimated"
    )
    # code for a CPU (x86, Arm) is not at risk from the next GPU, but from the next CPU generation
    chip = "CPU" if on_cpu(ctx.proposal.scope.device) else "GPU"
    if not worth.clears and rate < policy.min_rate:
        gain = (
            f"{pct(ctx.run_saving)} returns {pct(rate)} of the step per week"
            if ctx.run_saving > 0
            else f"a change that {saves(ctx.run_saving)} returns nothing"
        )
        head = f"Counting {horizon}, the {what} costs {costs} so {gain}"
        risk = (
            f"even behind a portable fallback, each new {chip} is another port to verify"
            if flags.portable_fallback
            else f"a silent risk on each new {chip} and a file few can review"
        )
        return opposition(
            ctx, ID, head, figures, then="is the better use of those weeks", alone=f"{head}, for {kept}, {risk}."
        )
    if worth.basis == "product" and flags.portable_fallback:
        return carried(
            ctx,
            ID,
            figures,
            f"The kernel is the product, so {horizon} is the cost of owning it, not a reason against it.",
        )
    if not flags.portable_fallback:
        money = worth.money
        pays = f"{pct(ctx.run_saving)} pays for"
        if worth.basis == "product":
            # the seed's flip: the product's kernel is worth owning behind a tested fallback, whatever its rate
            pays = f"the kernel is the product, so {pct(ctx.run_saving)} is worth"
        elif money is not None and worth.basis in ("fleet", "job"):
            span = (
                f"over the {num(money.job_days)}-day job"
                if money.job_days is not None
                else f"over {num(policy.horizon_months)} months"
            )
            pays = (
                f"on {count(flags.fleet_gpus or 0, 'GPU')} {pct(ctx.run_saving)} frees {gpu_equivalents(money.gpus)}, "
                f"{usd(money.value_usd)} {span}, against"
            )
        return condition(
            ID,
            figures,
            f"Fund on the condition that a tested portable fallback ships with it: {pays} "
            f"{spend}, but {what} can break silently on the next {chip}.",
            stage="condition",
        )
    return Finding(
        rule=ID,
        effect="info",
        figures=figures,
        message=f"{pct(ctx.run_saving)} of the step pays for {spend}, and a "
        f"tested portable fallback covers the next {chip} generation.",
    )
