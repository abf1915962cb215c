"""mix — a fleet of several device kinds, or traffic of several batch sizes, is priced part by part.

What it checks: `flags.fleet_mix` (GPUs per device kind, each with its own p and k where they differ) or
`flags.traffic_mix` (share of the production time per batch size or sequence length, each with its own p and k).
The value of the work is the sum over the parts, each at its own p and k (rules.context `mix`, the saving every
stage reads); a k measured on one part is never applied to another. A part's k is its own, else the proposal's on
the part it was measured on (`scope.device`, `scope.input`), else unknown: **counted as no gain** (zero, not a
guess), and funding is then conditional on measuring it there before it ships there. A part where the change is
slower (k < 1) is counted as kept on the old path, and funding is conditional on that dispatch. When the parts do
not pay, it opposes, naming them.

Why it matters: a kernel 1.4× on one architecture and 0.85× on the other (55% of the fleet), priced at 1.4×
fleet-wide, funds a slowdown on most of the fleet; a split-K measured 1.8× at batch 1, priced on a fleet that runs
batch 32, funds a number nobody measured where the time is.

Example: 1.4× on MI300X (450 GPUs) and 0.85× on H100 (550), p = 30%: on MI300X it saves 8.6% of its time, 3.9% of
the fleet's; fund only if H100 keeps the old path.
"""

from __future__ import annotations

import math

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.mix import REST_OF_TRAFFIC, MixPart
from worthit.rules.model import Figure
from worthit.rules.wording import Draft, listed, opposed

ID = "mix"
STAGE = "worth"

_FLEET = [{"name": "MI300X", "gpus": 450}, {"name": "H100", "gpus": 550, "k": 0.85}]

EXAMPLES = (
    Example(
        {"target": "gemm", "p": 0.3, "k": 1.4, "cost_weeks": 4, "scope": {"device": "MI300X"}}
        | {"flags": {"fleet_mix": _FLEET}},
        fires=True,
        verdict="fund_if",
        figures={"mix_saving": 0.45 * 0.3 * (1 - 1 / 1.4), "slower_share": 0.55},
    ),
    Example(
        {"target": "splitk", "p": 0.2, "k": 1.8, "cost_weeks": 3, "scope": {"input": "batch 1"}}
        | {"flags": {"traffic_mix": [{"name": "batch 1", "share": 0.05}, {"name": "batch 32", "share": 0.95}]}},
        fires=True,
        verdict="decline",
        figures={"mix_saving": 0.05 * 0.2 * (1 - 1 / 1.8), "unmeasured_share": 0.95},
    ),
    Example(
        {"target": "gemm", "p": 0.3, "k": 1.4, "cost_weeks": 4, "scope": {"device": "MI300X"}}
        | {"flags": {"fleet_mix": [{"name": "MI300X", "gpus": 450}, {"name": "H100", "gpus": 550, "k": 1.2}]}},
        fires=True,
        decision="fund",
    ),
    Example({"target": "gemm", "p": 0.3, "k": 1.4}, fires=False),
)

SAID_PARTS = 3
"""Parts named one by one in a sentence; the rest are counted."""


PRICED = "Priced part by part ("
SAVES = "), the change saves {mix_saving:pct} {across}"
MEASURE_FIRST = "; measure k on "
BEFORE_COUNTING = " before counting a gain there"
WHERE_FASTER = "Fund if it runs only where it is faster ("
SAVES_THAT = "): that saves {mix_saving:pct} {across}"
KEEP_OLD_PATH = ", and "
OLD_PATH = " must keep the old path, chosen by {how}."
WHERE_MEASURED = "Fund where it was measured ("
BEFORE_SHIPPING = " before it ships there."
UNMEASURED_PART = "no k measured on {name} at {share}, counted as no gain"
MEASURED_PART = "{k} on {name} at {share}"
MONEY_SHORT = (
    "{gpu_equivalents:gpu_equivalents} worth {value_usd:usd} against {engineering_cost_usd:usd} of engineering"
)
UNDER_FLOOR = "under the {noise_floor:pct} noise floor"
UNDER_RATE = "{rate:pct} of the step per engineer-week, under the {min_rate:pct} bar"


def check(ctx: Context) -> Draft | None:
    """Prices the change part by part over a fleet or traffic mix; conditions or opposes on the parts."""
    parts = ctx.mix
    if parts is None:
        return None
    fleet = ctx.proposal.flags.fleet_mix is not None
    saving = ctx.run_saving
    unmeasured = [part for part in parts if part.k is None]
    slower = [part for part in parts if part.k is not None and part.k < 1]
    if ctx.verdict_only and ctx.worth.clears and not slower and not unmeasured:
        return None  # it only informs
    figures: dict[str, Figure] = {
        "mix_saving": saving,
        "unmeasured_share": math.fsum(part.weight for part in unmeasured),
        "slower_share": math.fsum(part.weight for part in slower),
        "parts": len(parts),
        "fleet_mix": fleet,  # priced over devices (else over traffic): what the saving is a share of
    }
    words = {
        "across": "of the fleet's time" if fleet else "of the production time",
        "more_part": "more part",
        "how": "device" if fleet else "batch size",
    }
    for i, part in enumerate(parts, start=1):
        figures |= {
            f"part_{i}_share": part.weight,
            f"part_{i}_p": part.p,
            f"part_{i}_k": part.k,
            f"part_{i}_saving": part.saving,
            f"part_{i}_fleet_saving": part.weight * part.saving,
        }
        words[f"part_{i}_name"] = part.name
    said = _parts(parts, fleet, figures)
    worth = ctx.worth
    if not worth.clears:
        head: tuple[str, ...] = (PRICED, said, SAVES, ", ", _short(ctx, figures))
        if unmeasured:
            head += (MEASURE_FIRST, _names(parts, unmeasured, "unmeasured", figures), BEFORE_COUNTING)
        return opposed(ctx, ID, head, figures, words)
    if slower:
        template = (WHERE_FASTER, said, SAVES_THAT, KEEP_OLD_PATH, _names(parts, slower, "slower", figures), OLD_PATH)
        return Draft(ID, "condition", template, figures, words, stage="condition")
    if unmeasured:
        names = _names(parts, unmeasured, "unmeasured", figures)
        template = (WHERE_MEASURED, said, SAVES_THAT, MEASURE_FIRST, names, BEFORE_SHIPPING)
        return Draft(ID, "condition", template, figures, words, stage="condition")
    return Draft(ID, "info", (PRICED, said, SAVES, "."), figures, words)


def _name(parts: list[MixPart], part: MixPart) -> str:
    """The part's name as a field of the template: the rest of the traffic as it is, a named part as a label."""
    field = f"part_{parts.index(part) + 1}_name"
    return f"{{{field}}}" if part.name == REST_OF_TRAFFIC else f"{{{field}:label}}"


def _more(parts: list[MixPart], kind: str, figures: dict[str, Figure]) -> list[str]:
    """`2 more parts` past the ones named, its count the figure `<kind>_unsaid`."""
    if len(parts) <= SAID_PARTS:
        return []
    figures[f"{kind}_unsaid"] = len(parts) - SAID_PARTS
    return [f"{{{kind}_unsaid:count(more_part)}}"]


def _names(parts: list[MixPart], which: list[MixPart], kind: str, figures: dict[str, Figure]) -> str:
    """Some of the parts by name, the rest counted."""
    return listed([_name(parts, part) for part in which[:SAID_PARTS]] + _more(which, kind, figures))


def _parts(parts: list[MixPart], fleet: bool, figures: dict[str, Figure]) -> str:
    """`1.4× on MI300X at 45% of the fleet, 0.85× on H100 at 55%`: each part's k and weight, as stated."""
    whole = " of the fleet" if fleet else " of the time"
    said: list[str] = []
    for i, part in enumerate(parts[:SAID_PARTS], start=1):
        share = f"{{part_{i}_share:pct}}" + (whole if i == 1 else "")
        each = UNMEASURED_PART if part.k is None else MEASURED_PART
        said.append(each.format(k=f"{{part_{i}_k:times}}", name=_name(parts, part), share=share))
    return ", ".join(said + _more(parts, "parts", figures))


def _short(ctx: Context, figures: dict[str, Figure]) -> str:
    """Why that saving does not pay, in the figures of the worth stage."""
    worth, policy = ctx.worth, ctx.policy
    money = worth.money
    if money is not None:
        figures |= {
            "gpu_equivalents": money.gpus,
            "value_usd": money.value_usd,
            "engineering_cost_usd": money.cost_usd,
        }
        return MONEY_SHORT
    if worth.saving < policy.noise_floor:
        figures["noise_floor"] = policy.noise_floor
        return UNDER_FLOOR
    # no rate (no cost stated) is said as none: the figure is what the sentence prints
    figures |= {"rate": worth.rate if worth.rate is not None else 0.0, "min_rate": policy.min_rate}
    return UNDER_RATE
