"""The one reader of what people type for a proposal's values, shared by every surface (STYLE 9b).

Slack's `/worthit p=21% cost=10d`, a pull request's ```` ```worthit ```` block, and a YAML or JSON file given to
`worthit review` all read their values here, so `21%`, `3w` or `20k` mean the same thing wherever they are typed:

| what | forms | in |
|---|---|---|
| share | `21%`, `0.21`, `0.014%`; a range `15%..25%` (a unit on the high end applies to both) | a fraction |
| speedup | `10`, `10x`, `10×`, `inf`, `infinity`, `infinite`, `∞`, `.inf`; a range `5x..10x` | times, or `"inf"` |
| effort | `3`, `3w`, `3 weeks`, `3 engineer-weeks`, `10d` (a working week is 5 days), `40h` (40 hours) | weeks |
| time | `100`, `100ms`, `1.5s`, `500us`, `500µs`, `250ns` | milliseconds |
| memory | `80`, `80GB`, `80g` | gigabytes |
| GPUs | `20000`, `20,000`, `20_000`, `20k`, `20000 gpus` | a whole number |
| requests per step | `48`, `48 requests`, `48/step` | a whole number |
| rate | `2000`, `2000/s`, `2000 per second` | per second |
| fleet mix | `MI300X:450:1.4x, H100:550:0.85x` (name:GPUs[:k[:p]]; no k: not measured there) | a list of parts |
| traffic mix | `bs1:6%:1.8x, bs32:94%` (name:share[:k[:p]]) | a list of parts |
| more targets | `launch_gaps:inf, softmax:2x:12%` (name:k[:p]; p from the breakdown when absent) | a list of targets |
| metric points | `0.3`, `0.3pt`, `0.3 points`, `0.3pp` | the metric's own units |
| GPU-minutes | `45`, `45min`, `45m`, `0.75h`, `2700s` | minutes |
| a rate per day | `2000`, `2000/day`, `2k/day`, `2,000 per day` | per day |
| a count | `4`, `4 tokens` | a whole number |
| days | `30`, `30d`, `30 days`, `2w` | days |
| GPU-hours | `150000`, `150k`, `150,000 GPU-hours`, `2000h` | GPU-hours |
| power | `700W`, `0.7kW` per GPU; `40MW`, `40000kW` for a site | watts; megawatts |

Names too are shared: Slack's keys and words (`baseline=100ms`, `asm`) are a YAML or JSON proposal's `baseline:
100ms` and `portability: asm` (`expand`), and a document's field names (`cost_weeks`, `flags.fleet_gpus`,
`portability=hand_asm`) read in Slack (`key_of`): `KEYS`, `ALIASES`, `WORDS` and `NAMES` are the one table.

Numbers are decimals with an optional exponent (`1e-3`), `_` between digits and `,` between groups of three;
arithmetic is in `Decimal`, so `0.014%` is the same double as `0.00014`. A value that does not read raises
`Unreadable`; strict validation of the proposal (`msgspec`) then judges what did read. Nothing is guessed: `21`
for a share stays 21 (and fails `p <= 1`, with a hint to write `21%`).
"""

from __future__ import annotations

import contextlib
import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import date
from decimal import Decimal
from typing import Any, NamedTuple

from worthit.rules.errors import InvalidInput
from worthit.rules.pointer import to_pointer

__all__ = [
    "ALIASES",
    "FIELDS",
    "KEYS",
    "NAMES",
    "PLAN_FIELDS",
    "PORTFOLIO_FIELDS",
    "SHARE_FIELDS",
    "WORDS",
    "Key",
    "Unreadable",
    "amount",
    "days",
    "expand",
    "fleet_parts",
    "forgive",
    "gigabytes",
    "gpu_hours",
    "gpus",
    "key_of",
    "megawatts",
    "millis",
    "minutes",
    "nearest",
    "per_day",
    "per_second",
    "points",
    "portability",
    "ranks",
    "requests",
    "share",
    "speedup",
    "target_parts",
    "traffic_parts",
    "watts",
    "weeks",
    "whole",
]


class Unreadable(ValueError):
    """A value that does not read as its kind (the message, when there is one, says why)."""


# The unit is everything after the number (stripped afterwards), and DOTALL lets `.*` reach the end of any text:
# `\s*\D.*` here once backtracked through a run of spaces for every space in it when a newline stopped `.*`.
_AMOUNT = re.compile(r"(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)(?P<unit>\D.*)?", re.DOTALL)
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?:\D.*)?", re.DOTALL)
_MAX_EXPONENT = 300
INFINITE = frozenset({"inf", ".inf", "infinity", "infinite", "∞", "infx", "inf×", "∞x", "∞×"})


def amount(value: str) -> tuple[Decimal, str]:
    """`"1.5 s"` → `(Decimal("1.5"), "s")`: the number and its unit, lower case (`""` when there is none)."""
    text = value.strip()
    if _THOUSANDS.fullmatch(text):
        text = text.replace(",", "")
    text = re.sub(r"(?<=\d)_(?=\d)", "", text)
    match = _AMOUNT.fullmatch(text)
    if match is None:
        raise Unreadable
    number = Decimal(match["number"])
    # Decimal would carry 1e999999 exactly, and float() or int() of it is either inf or a million-digit int.
    if number and abs(number.adjusted()) > _MAX_EXPONENT:
        raise Unreadable("its exponent is out of range")
    return number, (match["unit"] or "").strip().lower()


def _scaled(units: Mapping[str, Decimal], value: str, default_unit: str = "") -> float:
    number, unit = amount(value)
    factor = units.get(unit or default_unit)
    if factor is None:
        raise Unreadable
    return float(number * factor)


_SHARE = {"": Decimal(1), "%": Decimal("0.01")}
_TIMES = dict.fromkeys(("", "x", "×"), Decimal(1))
_WEEKS = {
    **dict.fromkeys(("", "w", "wk", "wks", "week", "weeks"), Decimal(1)),
    **dict.fromkeys(("engineer-week", "engineer-weeks", "engineer weeks", "engineer week"), Decimal(1)),
    **dict.fromkeys(("d", "day", "days"), Decimal("0.2")),  # a working week is five days
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), Decimal("0.025")),  # and forty hours
}
_MS = {
    **dict.fromkeys(("", "ms", "msec"), Decimal(1)),
    **dict.fromkeys(("s", "sec", "secs"), Decimal(1000)),
    **dict.fromkeys(("us", "µs", "μs", "usec"), Decimal("0.001")),  # the micro sign and Greek mu both occur
    "ns": Decimal("0.000001"),
}
_GB = dict.fromkeys(("", "gb", "g"), Decimal(1))
_GPUS = {"": Decimal(1), "gpu": Decimal(1), "gpus": Decimal(1), "k": Decimal(1000)}


_GPU_HOURS = {
    **dict.fromkeys(("", "h", "gpu-h", "gpu-hour", "gpu-hours", "gpu hours", "gpuh"), Decimal(1)),
    **dict.fromkeys(("k", "k gpu-hours", "kh"), Decimal(1000)),
}
_WATTS = {**dict.fromkeys(("", "w", "watt", "watts"), Decimal(1)), "kw": Decimal(1000)}
_MEGAWATTS = {**dict.fromkeys(("", "mw"), Decimal(1)), "kw": Decimal("0.001"), "gw": Decimal(1000)}


def gpu_hours(value: str) -> float:
    """One-off compute in GPU-hours: `150k` → 150000.0, `150,000 GPU-hours` → 150000.0, `2000h` → 2000.0."""
    return _scaled(_GPU_HOURS, value)


def watts(value: str) -> float:
    """A GPU's power draw in watts: `700W` → 700.0, `0.7kW` → 700.0."""
    return _scaled(_WATTS, value)


def megawatts(value: str) -> float:
    """A site's power in megawatts: `40MW` → 40.0, `40000kW` → 40.0."""
    return _scaled(_MEGAWATTS, value)


def _ranged(value: str, units: Mapping[str, Decimal]) -> float | dict[str, float]:
    """`a..b` as a range (a unit on `b` alone applies to both ends), anything else as one value."""
    low, sep, high = value.partition("..")
    if not sep:
        return _scaled(units, value)
    ends = {"low": _scaled(units, low, amount(high)[1]), "high": _scaled(units, high)}
    if ends["low"] > ends["high"]:
        raise Unreadable("its low end is above its high end")
    return ends


def share(value: str) -> float | dict[str, float]:
    """A share of a time: `21%` → 0.21, `0.21` → 0.21, `15%..25%` → `{"low": 0.15, "high": 0.25}`."""
    return _ranged(value, _SHARE)


def speedup(value: str) -> float | dict[str, float] | str:
    """A speedup: `10x`, `10×`, `10` → 10.0; `inf`, `∞` → `"inf"` (the work disappears); `5x..10x` a range."""
    if value.strip().lower() in INFINITE:
        return "inf"
    return _ranged(value, _TIMES)


def weeks(value: str) -> float:
    """Engineer effort in weeks: `3w` → 3.0, `10d` → 2.0 (five working days a week), `40h` → 1.0."""
    return _scaled(_WEEKS, value)


def millis(value: str) -> float:
    """A time in milliseconds: `100ms` → 100.0, `1.5s` → 1500.0, `500us` → 0.5."""
    return _scaled(_MS, value)


def gigabytes(value: str) -> float:
    """Memory in gigabytes: `80GB` → 80.0."""
    return _scaled(_GB, value)


def gpus(value: str) -> int:
    """A whole number of GPUs: `20k`, `20,000`, `20000 gpus` → 20000."""
    number, unit = amount(value)
    factor = _GPUS.get(unit)
    if factor is None:
        raise Unreadable
    count = number * factor
    if count != count.to_integral_value():
        raise Unreadable("a fleet is a whole number of GPUs")
    return int(count)


_REQUESTS = {"": Decimal(1), **dict.fromkeys(("request", "requests", "req", "/step", "per step"), Decimal(1))}


def requests(value: str) -> int:
    """Requests one step serves: `48`, `48 requests`, `48/step` → 48."""
    number, unit = amount(value)
    if unit not in _REQUESTS or number != number.to_integral_value():
        raise Unreadable("requests per step are a whole number")
    return int(number)


_PER_SECOND = dict.fromkeys(("", "/s", "/sec", "per s", "per second", "rps", "qps"), Decimal(1))


def per_second(value: str) -> float:
    """A rate: `2000`, `2000/s`, `2k/s` is not read (write 2000/s) → 2000.0."""
    return _scaled(_PER_SECOND, value)


def ranks(value: str) -> int:
    """A whole number of ranks: `8`, `8 ranks` → 8."""
    number, unit = amount(value)
    if unit not in ("", "rank", "ranks", "gpus") or number != number.to_integral_value():
        raise Unreadable("ranks are a whole number")
    return int(number)


def _one_speedup(value: str) -> float | str:
    """A speedup that is one value (`inf` allowed: the work disappears), never a range."""
    if ".." in value:
        raise Unreadable
    read = speedup(value)
    if isinstance(read, dict):  # pragma: no cover - without `..` a speedup is one value
        raise Unreadable
    return read


def _listed(value: str, first: Callable[[str], Any], key: str) -> list[dict[str, Any]]:
    """`a:1:2x, b:3` → parts `{"name": "a", key: first("1"), "k": 2.0}`, …; a third field is `k`, a fourth `p`."""
    parts: list[dict[str, Any]] = []
    for item in value.split(","):
        fields = [field.strip() for field in item.split(":")]
        if not item.strip() or len(fields) < 2 or len(fields) > 4 or not fields[0]:
            raise Unreadable("each part is name:value[:k[:p]]")
        part: dict[str, Any] = {"name": fields[0], key: first(fields[1])}
        if len(fields) > 2 and fields[2]:
            part["k"] = _one_speedup(fields[2])
        if len(fields) > 3 and fields[3]:
            part["p"] = _end(share)(fields[3])
        parts.append(part)
    return parts


def fleet_parts(value: str) -> list[dict[str, Any]]:
    """A fleet mix: `MI300X:450:1.4x, H100:550:0.85x` → device kinds with GPUs, k and (a fourth field) p."""
    return _listed(value, gpus, "gpus")


def traffic_parts(value: str) -> list[dict[str, Any]]:
    """A traffic mix: `bs1:6%:1.8x, bs32:94%` → buckets with their share of the time, k and (a fourth field) p."""
    return _listed(value, _end(share), "share")


def target_parts(value: str) -> list[dict[str, Any]]:
    """More targets: `launch_gaps:inf, softmax:2x:12%` → phases with their k and (a third field) p."""
    parts: list[dict[str, Any]] = []
    for item in value.split(","):
        fields = [field.strip() for field in item.split(":")]
        if len(fields) not in (2, 3) or not fields[0] or not fields[1]:
            raise Unreadable("each target is name:k[:p]")
        part: dict[str, Any] = {"name": fields[0], "k": _one_speedup(fields[1])}
        if len(fields) == 3 and fields[2]:
            part["p"] = _end(share)(fields[2])
        parts.append(part)
    return parts


# --- the units of a quality gate, of GPU time per start, of starts a day, of drafted tokens

_POINTS = dict.fromkeys(("", "pt", "pts", "point", "points", "pp"), Decimal(1))
_MINUTES = {
    **dict.fromkeys(("", "m", "min", "mins", "minute", "minutes", "gpu-min", "gpu-minutes"), Decimal(1)),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours", "gpu-h", "gpu-hours"), Decimal(60)),
    **dict.fromkeys(("s", "sec", "secs"), Decimal(1) / Decimal(60)),
}
_PER_DAY = {
    **dict.fromkeys(("", "/day", "/d", "per day", "a day", "/ day"), Decimal(1)),
    **dict.fromkeys(("k", "k/day", "k/d", "k per day", "k a day"), Decimal(1000)),
}


def points(value: str) -> float:
    """A quality metric's value or regression, in its own units: `0.3pt`, `0.3 points`, `75.1` → 75.1."""
    return _scaled(_POINTS, value)


def minutes(value: str) -> float:
    """GPU time in minutes: `45min` → 45.0, `0.75h` → 45.0, `2700s` → 45.0."""
    return _scaled(_MINUTES, value)


def per_day(value: str) -> float:
    """A count per day: `2000/day`, `2k/day`, `2,000 per day` → 2000.0."""
    return _scaled(_PER_DAY, value)


_DAYS = {**dict.fromkeys(("", "d", "day", "days"), Decimal(1)), **dict.fromkeys(("w", "week", "weeks"), Decimal(7))}


def days(value: str) -> float:
    """A length in days: `30`, `30d`, `30 days` → 30.0, `2w` → 14.0."""
    return _scaled(_DAYS, value)


def whole(value: str) -> int:
    """A whole number, optionally followed by what it counts: `4`, `4 tokens` → 4."""
    number, _unit = amount(value)
    if number != number.to_integral_value():
        raise Unreadable("a count is a whole number")
    return int(number)


_PORTABILITY = {
    "portable": "portable",
    "vendor": "vendor_specific",
    "vendor_specific": "vendor_specific",
    "asm": "hand_asm",
    "hand_asm": "hand_asm",
}


def portability(value: str) -> str:
    """How portable the new code is: `asm` → `hand_asm`, `vendor` → `vendor_specific`, `portable`."""
    word = _PORTABILITY.get(value.replace('"', "").strip().lower())
    if word is None:
        raise Unreadable
    return word


def _end(read: Callable[[str], Any]) -> Callable[[str], Any]:
    """A range's end: one value, never a range (and never `inf` for a speedup's end)."""

    def one(value: str) -> Any:
        if ".." in value:
            raise Unreadable
        result = read(value)
        if result == "inf":
            raise Unreadable
        return result

    return one


# The proposal's fields (JSON paths, `*` for any list item) and how each is read when it is written as text.
FIELDS: dict[tuple[str, ...], Callable[[str], Any]] = {
    ("p",): share,
    ("p", "low"): _end(share),
    ("p", "high"): _end(share),
    ("p_end_to_end",): _end(share),
    ("flags", "strategic", "p"): _end(share),
    ("flags", "barrier", "wait_fraction"): _end(share),
    ("k",): speedup,
    ("k", "low"): _end(speedup),
    ("k", "high"): _end(speedup),
    ("prior_k",): _end(speedup),
    ("breakdown", "*", "k"): _end(speedup),
    ("cost_weeks",): weeks,
    ("flags", "maintenance_weeks_per_year"): weeks,
    ("baseline_ms",): millis,
    ("breakdown", "*", "ms"): millis,
    ("flags", "latency_slo", "p99_ms"): millis,
    ("goal", "latency_ms"): millis,
    ("goal", "memory_required_gb"): gigabytes,
    ("goal", "device_memory_gb"): gigabytes,
    ("flags", "fleet_gpus"): gpus,
    ("flags", "portability"): portability,
    # A collective's wait, requests per step, fleet and traffic mixes, more targets
    ("flags", "barrier", "target_wait"): _end(share),
    ("goal", "requests_per_step"): requests,
    ("goal", "throughput_per_s"): per_second,
    ("flags", "barrier", "ranks"): ranks,
    ("flags", "fleet_mix"): fleet_parts,
    ("flags", "fleet_mix", "*", "gpus"): gpus,
    ("flags", "fleet_mix", "*", "p"): _end(share),
    ("flags", "fleet_mix", "*", "k"): _one_speedup,
    ("flags", "traffic_mix"): traffic_parts,
    ("flags", "traffic_mix", "*", "share"): _end(share),
    ("flags", "traffic_mix", "*", "p"): _end(share),
    ("flags", "traffic_mix", "*", "k"): _one_speedup,
    ("more_targets",): target_parts,
    ("more_targets", "*", "p"): _end(share),
    ("more_targets", "*", "k"): _one_speedup,
    # Memory the proposal frees, its quality gate, the work it adds, GPU time per start
    ("goal", "memory_after_gb"): gigabytes,
    ("goal", "memory_headroom_gb"): gigabytes,
    ("quality", "baseline"): points,
    ("quality", "candidate"): points,
    ("quality", "max_regression"): points,
    ("added_work", "phases", "*", "ms"): millis,
    ("added_work", "speculative", "draft_tokens"): whole,
    ("added_work", "speculative", "acceptance"): _end(share),
    ("added_work", "speculative", "draft_cost"): _end(speedup),
    ("added_work", "speculative", "verify_cost"): _end(speedup),
    ("flags", "gpu_minutes_per_start"): minutes,
    ("flags", "starts_per_day"): per_day,
    ("flags", "run_days"): days,
    # Costs besides engineer-weeks, what a slowdown may buy, devices the company does not own, a roofline
    ("cost_gpu_hours",): gpu_hours,
    ("cost_people",): whole,
    ("cost_calendar_weeks",): weeks,
    ("flags", "latency_slo", "p99_before_ms"): millis,
    ("flags", "latency_slo", "p99_after_ms"): millis,
    ("flags", "latency_slo", "gpus_otherwise"): gpus,
    ("flags", "power", "site_mw"): megawatts,
    ("flags", "power", "watts_per_gpu_before"): watts,
    ("flags", "power", "watts_per_gpu_after"): watts,
    ("flags", "unowned", "devices"): gpus,
    ("flags", "unowned", "generations"): whole,
    ("flags", "unowned", "port_weeks"): weeks,
    ("flags", "roofline_fraction"): _end(share),
}
SHARE_FIELDS = frozenset(
    path
    for path in FIELDS
    if path[-1] in ("p", "p_end_to_end", "wait_fraction", "target_wait", "share", "acceptance", "roofline_fraction")
)
# A plan request's fields (its breakdown and k read as a proposal's), and a portfolio's: each of its proposals read
# as a proposal is, and its budget.
PLAN_FIELDS: dict[tuple[str, ...], Callable[[str], Any]] = FIELDS | {
    ("target_speedup",): _end(speedup),
    ("target_ms",): millis,
}
PORTFOLIO_FIELDS: dict[tuple[str, ...], Callable[[str], Any]] = {
    ("budget_weeks",): weeks,
    **{("proposals", "*", *path): read for path, read in FIELDS.items()},
}


# --- The names of fields and values every surface accepts: Slack's keys (`cost=3w`) and a document's (`cost: 3w`)


def _name(value: str) -> str:
    return value.replace('"', "").strip()


class Key(NamedTuple):
    """A field as a surface names it: where it goes, how its text reads, and what to write (for messages)."""

    path: tuple[str, ...]
    read: Callable[[str], Any]
    expects: str


KEYS: dict[str, Key] = {
    "p": Key(("p",), share, "a share of the measured time: `21%` or `0.21` (a range: `15%..25%`)"),
    "k": Key(("k",), speedup, "the target's own speedup: `10`, `10x`, or `inf` when its work disappears"),
    "cost": Key(("cost_weeks",), weeks, "engineer effort: `3w`, `10d` or `40h`"),
    "baseline": Key(("baseline_ms",), millis, "the measured scope's time: `100ms`, `0.1s` or `500us`"),
    "p_e2e": Key(("p_end_to_end",), share, "the target's share of the whole run: `0.014%` or `0.00014`"),
    "fleet": Key(("flags", "fleet_gpus"), gpus, "a whole number of GPUs: `20000`, `20,000` or `20k`"),
    "target": Key(("target",), _name, "the name of what is sped up"),
    "title": Key(("title",), _name, "a title, in quotes if it has spaces"),
    "workload": Key(("scope", "workload"), _name, "the workload's name"),
    "model": Key(("scope", "model"), _name, "the model's name"),
    "input": Key(("scope", "input"), _name, "the input measured"),
    "dtype": Key(("scope", "dtype"), _name, "the data type"),
    "device": Key(("scope", "device"), _name, "the device"),
    "measured": Key(("scope", "measured"), _name, "`step`, `device_activity`, `end_to_end` or `rank`"),
    "method": Key(("scope", "method"), _name, "`timeline`, `counters`, `inclusive_summary` or `estimate`"),
    "timing": Key(("scope", "timing"), _name, "`device_events`, `host_wall` or `host_submit`"),
    "portability": Key(
        ("flags", "portability"), portability, "`portable`, `vendor_specific` (`vendor`) or `hand_asm` (`asm`)"
    ),
    # a throughput goal, a collective's wait, fleet and traffic mixes, more targets
    "throughput": Key(("goal", "throughput_per_s"), per_second, "requests per second: `2000` or `2000/s`"),
    "rps": Key(("goal", "requests_per_step"), requests, "requests one step serves: `48`"),
    "ranks": Key(("flags", "barrier", "ranks"), ranks, "ranks behind the barrier: `8`"),
    "wait": Key(("flags", "barrier", "target_wait"), share, "the collective's wait for the slowest rank: `28%`"),
    "fleet_mix": Key(("flags", "fleet_mix"), fleet_parts, "device:GPUs[:k[:p]]: `MI300X:450:1.4x,H100:550`"),
    "traffic": Key(("flags", "traffic_mix"), traffic_parts, "bucket:share[:k[:p]]: `bs1:6%:1.8x,bs32:94%`"),
    "also": Key(("more_targets",), target_parts, "more phases as name:k[:p]: `launch_gaps:inf`"),
}
# Memory the proposal frees, its quality gate, the work it adds, GPU time per start.
KEYS |= {
    "mem": Key(("goal", "memory_required_gb"), gigabytes, "memory needed before the change: `180GB`"),
    "mem_after": Key(("goal", "memory_after_gb"), gigabytes, "memory needed after the change: `120GB`"),
    "device_mem": Key(("goal", "device_memory_gb"), gigabytes, "one device's memory: `141GB`"),
    "headroom": Key(("goal", "memory_headroom_gb"), gigabytes, "memory to keep free per device: `8GB`"),
    "metric": Key(("quality", "metric"), _name, "the quality metric's name"),
    "metric_base": Key(("quality", "baseline"), points, "the metric before the change: `76.0`"),
    "metric_new": Key(("quality", "candidate"), points, "the metric with the change: `75.1`"),
    "metric_gate": Key(("quality", "max_regression"), points, "the largest regression allowed: `0.3pt`"),
    "added": Key(
        ("added_work", "phases"),
        lambda value: [{"name": "added work", "ms": millis(value)}],
        "the time the change adds per step: `5ms`",
    ),
    "gamma": Key(("added_work", "speculative", "draft_tokens"), whole, "tokens drafted per verify pass: `4`"),
    "alpha": Key(("added_work", "speculative", "acceptance"), share, "each draft's acceptance: `70%`"),
    "draft_cost": Key(("added_work", "speculative", "draft_cost"), speedup, "a draft step: `0.1x` a decode"),
    "verify_cost": Key(("added_work", "speculative", "verify_cost"), speedup, "a verify pass: `1.2x`"),
    "start_cost": Key(("flags", "gpu_minutes_per_start"), minutes, "GPU-minutes per start: `45min`"),
    "starts": Key(("flags", "starts_per_day"), per_day, "starts a day: `2000/day` or `2k/day`"),
    "run_days": Key(("flags", "run_days"), days, "the job's length in days: `30` or `30d`"),
}
# Costs besides engineer-weeks, what a slowdown may buy, devices the company does not own, a roofline.
KEYS |= {
    "gpu_hours": Key(("cost_gpu_hours",), gpu_hours, "one-off GPU-hours the work costs: `150k` or `2000h`"),
    "people": Key(("cost_people",), whole, "people on the work: `3` (with `calendar`)"),
    "calendar": Key(("cost_calendar_weeks",), weeks, "calendar weeks those people work: `6w`"),
    "slo": Key(("flags", "latency_slo", "p99_ms"), millis, "the latency SLO's p99: `1.5s` or `1500ms`"),
    "p99_before": Key(("flags", "latency_slo", "p99_before_ms"), millis, "the p99 measured before: `2.4s`"),
    "p99_after": Key(("flags", "latency_slo", "p99_after_ms"), millis, "the p99 measured with the change: `1.3s`"),
    "site_power": Key(("flags", "power", "site_mw"), megawatts, "a power-limited site's power: `40MW`"),
    "watts_before": Key(("flags", "power", "watts_per_gpu_before"), watts, "each GPU's draw before: `1000W`"),
    "watts_after": Key(("flags", "power", "watts_per_gpu_after"), watts, "each GPU's draw with the change: `800W`"),
    "devices": Key(("flags", "unowned", "devices"), gpus, "devices the company does not own: `120000` or `120k`"),
    "generations": Key(("flags", "unowned", "generations"), whole, "device generations to ship to: `3`"),
    "roofline": Key(("flags", "roofline_fraction"), share, "the target's fraction of its roofline: `80%`"),
}
ALIASES = {
    "share": "p",
    "speedup": "k",
    "cost_weeks": "cost",
    "effort": "cost",
    "baseline_ms": "baseline",
    "step": "baseline",
    "p_end_to_end": "p_e2e",
    "e2e": "p_e2e",
    "fleet_gpus": "fleet",
    "gpus": "fleet",
}
WORDS: dict[str, tuple[tuple[str, ...], object]] = {
    "asm": (("flags", "portability"), "hand_asm"),
    "hand_asm": (("flags", "portability"), "hand_asm"),
    "vendor": (("flags", "portability"), "vendor_specific"),
    "vendor_specific": (("flags", "portability"), "vendor_specific"),
    "portable": (("flags", "portability"), "portable"),
    "fallback": (("flags", "portable_fallback"), True),
    "product": (("flags", "kernel_is_product"), True),
    "recurring": (("flags", "recurring"), True),
    "oneoff": (("flags", "recurring"), False),
    "lower_is_better": (("quality", "higher_is_better"), False),
}


def _derived_names() -> dict[str, tuple[str, ...]]:
    """Each key's field as the API names it (`throughput_per_s`, `flags.fleet_gpus`), where that name is no other's."""
    taken = {*KEYS, *ALIASES}
    last: dict[str, list[tuple[str, ...]]] = {}
    for key in KEYS.values():
        last.setdefault(key.path[-1], []).append(key.path)
    names = {".".join(key.path): key.path for key in KEYS.values() if len(key.path) > 1}
    names |= {name: paths[0] for name, paths in last.items() if len(paths) == 1 and name not in taken}
    return names


# Every name a field is known by (besides the document's own), to the field's path.
NAMES: dict[str, tuple[str, ...]] = {
    **_derived_names(),
    **{name: key.path for name, key in KEYS.items()},
    **{alias: KEYS[name].path for alias, name in ALIASES.items()},
}


def key_of(name: str) -> Key | None:
    """The key a name stands for (`cost`, `cost_weeks`, `effort`, `flags.fleet_gpus` …), case and `-` forgiven."""
    name = name.lower().replace("-", "_")
    name = ALIASES.get(name, name)
    key = KEYS.get(name)
    if key is None and name in NAMES:
        path = NAMES[name]
        key = next((key for key in KEYS.values() if key.path == path), None)
    return key


def nearest(word: str, names: Iterable[str]) -> str | None:
    """The name closest to `word` among `names` (a typo's likely intent), or None when none is close."""
    close = difflib.get_close_matches(word.lower(), list(names), n=1, cutoff=0.6)
    return close[0] if close else None


def expand(document: Any, fields: Iterable[str], renamed: dict[str, str] | None = None) -> Any:
    """A proposal document with the names Slack accepts moved to the fields they stand for: `baseline: 100ms` is
    `baseline_ms: 100ms`, `portability: asm` is `flags: {portability: asm}`, `fallback: true` sets
    `flags.portable_fallback`. `fields` are the document's own names, left as they are.

    `renamed` collects, by the JSON pointer of the field set, the pointer of the name as written (for line numbers).
    A field given under two names raises `InvalidInput` at the second."""
    if not isinstance(document, dict):
        return document
    own = set(fields)
    out: dict[str, Any] = {}
    moved: list[tuple[str, tuple[str, ...], Any]] = []
    for name, value in document.items():
        text = str(name)
        key = None if text in own else key_of(text)
        word = None if text in own or key is not None else WORDS.get(text.lower())
        if key is not None:
            if isinstance(value, str) and key.path not in FIELDS:
                with contextlib.suppress(Unreadable):  # what does not read is left for validation to name
                    value = key.read(value)
            moved.append((text, key.path, value))
        elif word is not None and isinstance(word[1], bool) and isinstance(value, bool):
            moved.append((text, word[0], word[1] if value else not word[1]))
        else:
            out[text] = value
    for text, path, value in moved:
        target = out
        for part in path[:-1]:
            inner = target.get(part)
            if inner is None:
                inner = target[part] = {}
            elif not isinstance(inner, dict):
                break
            else:
                inner = target[part] = dict(inner)  # a copy: the document given is not changed
            target = inner
        else:
            if path[-1] in target:
                field = ".".join(path)
                raise InvalidInput(f"`{field}` is given twice (also as `{text}`); keep one", to_pointer([text]))
            target[path[-1]] = value
            if renamed is not None:
                renamed[to_pointer(path)] = to_pointer([text])
            continue
        out[text] = value
    return out


def forgive(
    value: Any,
    written: dict[str, str] | None = None,
    *,
    fields: Mapping[tuple[str, ...], Callable[[str], Any]] = FIELDS,
    _path: tuple[str, ...] = (),
    _at: str = "",
) -> Any:
    """A document (from YAML or JSON) with its shorthand values read; `written` collects what was typed, by pointer.

    Only text in a known field is read; numbers, other fields and text that does not read are left as they are,
    for strict validation to report with the field's name.
    """
    if isinstance(value, dict):
        return {
            str(key): forgive(item, written, fields=fields, _path=(*_path, str(key)), _at=_at + to_pointer([str(key)]))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [
            forgive(item, written, fields=fields, _path=(*_path, "*"), _at=f"{_at}/{i}") for i, item in enumerate(value)
        ]
    if isinstance(value, date):  # YAML reads 2025-01-31 as a date; every field of ours wants the text
        return value.isoformat()
    read = fields.get(_path)
    if read is None:
        return value
    if read is speedup and isinstance(value, float) and math.isinf(value) and value > 0:
        return "inf"  # YAML's `.inf`
    if not isinstance(value, str):
        return value
    try:
        result = read(value)
    except Unreadable:
        return value
    if written is not None:
        written[_at] = value
    return result
