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
from worthit.rules.model import Figure
from worthit.rules.wording import Draft, carried, opposed

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


COSTS_BUILT = "{total_weeks:weeks}, not {build_weeks:num},"
COSTS_UPKEEP = "{total_weeks:weeks} of upkeep alone"
HORIZON = (
    "{maintenance_weeks:num} weeks of upkeep over {horizon_months:num} months ({maintenance_weeks_per_year:num} a "
    "year × "
)
SOURCE = "{source})"
ONE_ARCHITECTURE = "one architecture"
ARCHITECTURES = "{architectures:int} architectures"
INCLUDING = "{total_weeks:weeks} including "
NOT_ESTIMATED = ", with the build not yet estimated"
COUNTING = "Counting "
COSTS = ", the {what} costs "
RETURNS = " so {end_to_end_saving:pct} returns {rate_with_maintenance:pct} of the step per week"
RETURNS_NOTHING = " so a change that {end_to_end_saving:saves} returns nothing"
FOR = ", for "
BEHIND_FALLBACK = "even behind a portable fallback, each new {chip} is another port to verify"
SILENT_RISK = "a silent risk on each new {chip} and a file few can review"
PRODUCT_UPKEEP = ("The kernel is the product, so ", " is the cost of owning it, not a reason against it.")
FALLBACK = "Fund on the condition that a tested portable fallback ships with it: "
PAYS = "{end_to_end_saving:pct} pays for"
PRODUCT_PAYS = "the kernel is the product, so {end_to_end_saving:pct} is worth"
FLEET_PAYS = (
    "on {fleet_gpus:count(gpu)} {end_to_end_saving:pct} frees {gpu_equivalents:gpu_equivalents}, {value_usd:usd} "
)
OVER_JOB = "over the {job_days:num}-day job"
OVER_HORIZON = "over {horizon_months:num} months"
AGAINST = ", against"
BREAKS = ", but {what} can break silently on the next {chip}."
COVERED = (
    "{end_to_end_saving:pct} of the step pays for ",
    ", and a tested portable fallback covers the next {chip} generation.",
)


def check(ctx: Context) -> Draft | None:
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
    # per architecture, and whose figure: the proposal's, or the policy's (never said as if the proposal gave it)
    figures["upkeep_source"] = cost.upkeep_source
    figures["maintenance_weeks_per_year"] = cost.upkeep_per_year or 0.0
    figures["end_to_end_saving"] = ctx.run_saving
    words = {
        "what": _WHAT[flags.portability or "hand_asm"],
        "source": cost.upkeep_said,
        # code for a CPU (x86, Arm) is not at risk from the next GPU, but from the next CPU generation
        "chip": "CPU" if on_cpu(ctx.proposal.scope.device) else "GPU",
        "gpu": "GPU",
    }
    costs = COSTS_BUILT if build else COSTS_UPKEEP
    kept = ONE_ARCHITECTURE if architectures == 1 else ARCHITECTURES
    horizon = (HORIZON, kept, SOURCE)
    # with no build cost given the total is the upkeep alone, said so: never a build of 0 nobody stated
    spend = (INCLUDING, *horizon) if build is not None else (*horizon, NOT_ESTIMATED)
    if not worth.clears and rate < policy.min_rate:
        gain = RETURNS if ctx.run_saving > 0 else RETURNS_NOTHING
        head = (COUNTING, *horizon, COSTS, costs, gain)
        risk = BEHIND_FALLBACK if flags.portable_fallback else SILENT_RISK
        alone = (*head, FOR, kept, ", ", risk, ".")
        return opposed(ctx, ID, head, figures, words, then="is the better use of those weeks", alone=alone)
    if worth.basis == "product" and flags.portable_fallback:
        first, last = PRODUCT_UPKEEP
        return carried(ctx, ID, (first, *horizon, last), figures, words)
    if not flags.portable_fallback:
        money = worth.money
        pays: tuple[str, ...] = (PAYS,)
        if worth.basis == "product":
            # the seed's flip: the product's kernel is worth owning behind a tested fallback, whatever its rate
            pays = (PRODUCT_PAYS,)
        elif money is not None and worth.basis in ("fleet", "job"):
            figures |= {
                "fleet_gpus": flags.fleet_gpus or 0,
                "gpu_equivalents": money.gpus,
                "value_usd": money.value_usd,
            }
            if money.job_days is not None:
                figures["job_days"] = money.job_days
            pays = (FLEET_PAYS, OVER_JOB if money.job_days is not None else OVER_HORIZON, AGAINST)
        return Draft(ID, "condition", (FALLBACK, *pays, " ", *spend, BREAKS), figures, words, stage="condition")
    first, last = COVERED
    return Draft(ID, "info", (first, *spend, last), figures, words)
