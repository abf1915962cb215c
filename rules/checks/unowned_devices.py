"""unowned_devices — on devices the company does not pay for, the value is the user's, never GPU-equivalents.

What it checks: `flags.unowned` (users' phones, customers' GPUs: devices the change ships to that the company does
not pay for). Their time saved frees no capacity the company buys, so it is valued as the policy prices such a
change: `unowned_device_usd_per_year` per device for removing all of the step (latency, battery, energy per user),
× the share of the step saved × the devices, over the horizon (rules.worth); and the cost counts a port to every
further device generation (`port_weeks` each, else the policy's `port_weeks_per_generation`). Supports funding when
that pays; opposes when it does not; when the policy prices it at nothing, funds only on the condition it computes,
the least the product must value the saving at per device a year.

Why it matters: 120 million phones entered as `fleet_gpus` price an NPU kernel as if the company owned 120 million
GPUs, billions of dollars of capacity nobody pays for; the real question is what a faster on-device model is worth to
a user, and the real cost is every SoC generation it must ship to.

Example: a 30% faster on-device ASR step on 120 million phones, built in 6 engineer-weeks and ported to 3 more NPU
generations at 4 weeks each; the policy prices nothing: fund only if the product values the whole step at least
$0.0025 per device a year.
"""

from __future__ import annotations

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.findings import condition, opposition
from worthit.rules.model import Figure, Finding
from worthit.rules.text import count, num, pct, significant, usd

ID = "unowned_devices"
STAGE = "worth"

_ASR = {"target": "asr_encoder", "p": 0.6, "k": 2, "cost_weeks": 6}
_PHONES = {"devices": 120_000_000, "kind": "phones", "generations": 4}

EXAMPLES = (
    Example(
        # (6 + 3 × 4) weeks × $5k = $90k over 120M phones × 30% saved × 1 year = $0.0025 per device a year
        _ASR | {"flags": {"unowned": _PHONES}},
        fires=True,
        verdict="fund_if",
        decision="fund_if",
        figures={"break_even_usd_per_device_year": 0.0025, "port_weeks": 12},
    ),
    Example(
        # priced at $0.01 per device a year for the whole step: 120M × $0.01 × 30% = $360k against $90k
        _ASR | {"flags": {"unowned": _PHONES}},
        fires=True,
        verdict="fund",
        policy={"unowned_device_usd_per_year": 0.01},
        figures={"value_usd": 360_000},
    ),
    Example(
        _ASR | {"flags": {"unowned": _PHONES | {"devices": 1000}}},
        fires=True,
        verdict="decline",
        policy={"unowned_device_usd_per_year": 0.01},
        figures={"value_usd": 3},
    ),
    Example(_ASR, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """Values a change on devices the company does not own as the policy prices it per device, never as capacity."""
    on = ctx.worth.unowned
    unowned = ctx.proposal.flags.unowned
    if on is None or unowned is None:
        return None
    if ctx.verdict_only and on.clears:
        return None  # it supports funding
    cost = ctx.worth.cost
    saving = ctx.run_saving
    years = ctx.policy.horizon_months / 12
    cost_usd = cost.usd or 0.0
    figures: dict[str, Figure] = {
        "unowned_devices": on.devices,
        "generations": cost.generations,
        "port_weeks": cost.port_weeks,
        "end_to_end_saving": saving,
        "cost_usd": cost_usd,
    }
    devices = f"{on.devices:,} {on.kind}"
    whose = f"{pct(saving)} of the step on {devices} the company does not pay for frees no capacity it buys"
    ships = (
        f"{usd(cost_usd)} to build and ship to {count(cost.generations, 'device generation')}"
        if cost.generations > 1
        else f"{usd(cost_usd)} to build"
    )
    if saving <= 0:
        return opposition(ctx, ID, f"{whose}, and saves its users nothing either", figures)
    if on.value_usd is None:
        least = cost_usd / (on.devices * saving * years) if saving > 0 else 0.0
        figures["break_even_usd_per_device_year"] = least
        return condition(
            ID,
            figures,
            f"Fund if the product values the whole step at {_cents(least)} or more per device a year: {pct(saving)} "
            f"on {devices} the company does not pay for is worth what their users value (latency, energy), not "
            f"capacity, and is unpriced; it costs {ships}.",
        )
    figures |= {"value_usd": on.value_usd, "usd_per_device_year": on.usd_per_device_year}
    head = (
        f"{whose[0].upper()}{whose[1:]}, but as the policy prices the whole step ({_cents(on.usd_per_device_year)} "
        f"per device a year) it is worth {usd(on.value_usd)} over {num(ctx.policy.horizon_months)} months"
    )
    if on.clears:
        return Finding(rule=ID, effect="supports", verdict="fund", figures=figures, message=f"{head}, against {ships}.")
    return opposition(ctx, ID, f"{head}, less than {ships}", figures)


def _cents(value: float) -> str:
    """A price per device, small as it usually is: `$0.00075`, `$0.01`, `$2.50`."""
    if value >= 0.01:
        return f"${value:,.2f}"
    return f"${significant(value, 2)}"
