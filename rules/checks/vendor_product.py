"""vendor_product — when the kernel is the product, the unportable path is worth owning.

What it checks: unportable code (`flags.portability` of `vendor_specific` or `hand_asm`) where the kernel is the
product (`flags.kernel_is_product`: a vendor library kernel, a published FlashAttention-class primitive), for a
change that saves time. It supports funding: the value of such work is not judged by per-run bars (noise floor,
rate of return, upkeep) at all. A tested portable fallback (`flags.portable_fallback`) is what makes it worth
owning; without one, `maintenance_cost` funds it on the condition that one ships.

Why it matters: owning hand-tuned paths behind a tested fallback is precisely what vendor library teams do: the
upkeep is their job, the fallback removes the silent-correctness risk, and 3% of a primitive everyone calls is
3% of many workloads.

Example: 3% via hand asm in a vendor library's GEMM, behind a tested portable fallback: fund.
"""

from __future__ import annotations

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Figure, Verdict
from worthit.rules.wording import Draft

ID = "vendor_product"
STAGE = "worth"
ARGUES: frozenset[Verdict] = frozenset({"fund"})
"""It only ever supports funding: the verdict function at another point need not run it (rules.verdict.verdict_at)."""

_FLAGS = {"portability": "hand_asm", "kernel_is_product": True, "portable_fallback": True}

EXAMPLES = (
    Example(
        {"target": "gemm_asm", "p": 0.06, "k": 2, "cost_weeks": 2, "flags": _FLAGS},
        fires=True,
        verdict="fund",
        figures={"maintenance_weeks": 2},
    ),
    Example(
        {"target": "gemm_asm", "p": 0.06, "k": 2, "cost_weeks": 2, "flags": {**_FLAGS, "portable_fallback": False}},
        fires=True,
        verdict="fund",
        decision="fund_if",
        figures={"maintenance_weeks": 2, "portable_fallback": False},
    ),
    Example(
        {"target": "gemm_asm", "p": 0.06, "k": 2, "cost_weeks": 2, "flags": {**_FLAGS, "kernel_is_product": False}},
        fires=False,
    ),
    Example({"target": "gemm", "p": 0.06, "k": 2, "flags": {**_FLAGS, "portability": "portable"}}, fires=False),
)


OWNING = "{saving_fraction:pct} is worth owning at {maintenance_weeks:num} weeks of upkeep over the horizon"
SOURCE = " ({source})"
BEHIND_FALLBACK = (
    "The kernel is the product and the {what} sits behind a tested portable fallback, so ",
    ", which is what vendor library teams do.",
)
ONCE_BEHIND = ("The kernel is the product, so ", " once the {what} sits behind a tested portable fallback.")


def check(ctx: Context) -> Draft | None:
    """Supports unportable code that is the product and sits behind a tested portable fallback."""
    flags = ctx.proposal.flags
    if not (ctx.unportable and ctx.worth.product):
        return None
    figures: dict[str, Figure] = {
        "maintenance_weeks": ctx.maintenance_weeks,
        "saving_fraction": ctx.run_saving,
        "portable_fallback": flags.portable_fallback,
    }
    # whose upkeep figure it is: the policy's default is said to be one (as maintenance_cost says it)
    source = ctx.worth.cost.upkeep_said.removeprefix(", ")
    words = {"what": "assembly" if flags.portability == "hand_asm" else "vendor-specific path", "source": source}
    owning = (OWNING, SOURCE) if source else (OWNING,)
    first, last = BEHIND_FALLBACK if flags.portable_fallback else ONCE_BEHIND
    return Draft(ID, "supports", (first, *owning, last), figures, words, verdict="fund")
