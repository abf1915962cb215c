"""Hypothesis strategies shared by the property tests: valid proposals covering every optional field and flag."""

from __future__ import annotations

from typing import Any, get_args

import msgspec
from hypothesis import strategies as st

from worthit.rules.model import PhaseKind, Proposal

# Every kind the model knows, so a kind added there is drawn here too.
KINDS: tuple[str, ...] = get_args(PhaseKind)

shares = st.floats(min_value=1e-6, max_value=1.0, allow_nan=False)
speedups = st.one_of(
    st.floats(min_value=1.0001, max_value=1e4, allow_nan=False),
    st.floats(min_value=0.05, max_value=1.0, allow_nan=False),
    st.just("inf"),
)
finite_speedups = st.floats(min_value=1.0001, max_value=1e6, allow_nan=False)
times_ms = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False)
weeks = st.floats(min_value=0.0, max_value=200.0, allow_nan=False)
# Identifier-like names, as profilers print them; long ones exercise the statement's length limit.
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,12}", fullmatch=True) | st.text(
    alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=150, max_size=200
)


@st.composite
def breakdowns(draw: st.DrawFn, *, min_size: int = 1, max_size: int = 8) -> list[dict[str, Any]]:
    """Phases with unique names, any kinds, non-negative ms."""
    phase_names = draw(st.lists(names, min_size=min_size, max_size=max_size, unique=True))
    return [
        {
            "name": name,
            "ms": draw(st.floats(min_value=0.0, max_value=1e4, allow_nan=False)),
            "kind": draw(st.sampled_from(KINDS)),
        }
        for name in phase_names
    ]


def _optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


@st.composite
def proposals(draw: st.DrawFn) -> Proposal:
    """A valid proposal: p, k, and any mix of baseline, cost, breakdown, scope, flags and goal; sometimes measured
    on a trace, with the replay worthit attaches to it (`replays`)."""
    raw = draw(raw_proposals())
    if draw(st.booleans()):
        raw.setdefault("target", "the_kernel")
        raw["profile_id"] = "trace.json.gz"
        raw["replay"] = draw(replays())
    return msgspec.convert(raw, Proposal)  # validated as the API boundary would


@st.composite
def replays(draw: st.DrawFn) -> dict[str, Any]:
    """The replay of a proposal's change on its trace, as `rules.profiles.proposal.replay_of` builds it: Amdahl's
    step at most the measured one, the replay's anywhere from all of Amdahl's saving to a longer step, the losses
    adding up to the difference, with or without a reason and a better target."""
    step = draw(st.floats(min_value=1e-6, max_value=1e6))
    amdahl = step * draw(st.floats(min_value=0.0, max_value=1.0))
    predicted = draw(st.sampled_from([amdahl, step])) if draw(st.booleans()) else step * draw(st.floats(0.0, 1.2))
    gap = (step - amdahl) - (step - predicted)
    share = draw(st.floats(min_value=0.0, max_value=1.0))
    raw: dict[str, Any] = {
        "steps": "ProfilerStep#2..ProfilerStep#9",
        "step_ms": step,
        "amdahl_ms": min(amdahl, step),
        "predicted_ms": predicted,
        "lost_ms": {"overlap": gap * share, "launch": gap * (1 - share)},
    }
    if draw(st.booleans()):
        raw["reason"] = "the GPU waits on the host for 75 ms of each 176 ms step"
    if draw(st.booleans()):
        raw["better_target"] = "the host's launch work (CUDA graphs, fusion or fewer, larger kernels)"
    return raw


@st.composite
def near_the_bar(draw: st.DrawFn) -> Proposal:
    """A proposal whose p or k may be a range near the default policy's bar (a saving of 1% of the step, 1% per
    engineer-week, a fleet's money), with or without a baseline, upkeep, a fleet or a larger phase: the ranges that
    straddle it, which random proposals seldom draw."""
    p_low = draw(st.floats(min_value=0.001, max_value=0.08))
    p: Any = p_low
    if draw(st.booleans()):
        p = {"low": p_low, "high": p_low + draw(st.floats(min_value=0.0, max_value=0.1))}
    k_low = draw(st.floats(min_value=1.05, max_value=10.0))
    k: Any = draw(st.sampled_from([k_low, "inf", {"low": k_low, "high": k_low * draw(st.floats(1.0, 5.0))}]))
    raw: dict[str, Any] = {"target": "rope", "p": p, "k": k, "cost_weeks": draw(st.floats(0.1, 8.0))}
    if draw(st.booleans()):
        raw["baseline_ms"] = draw(st.floats(min_value=1.0, max_value=1000.0))
    flags: dict[str, Any] = {}
    if draw(st.booleans()):
        flags["fleet_gpus"] = draw(st.integers(min_value=1, max_value=200))
    if draw(st.booleans()):
        flags["portability"] = draw(st.sampled_from(["portable", "vendor_specific", "hand_asm"]))
    raw["flags"] = flags
    if draw(st.booleans()):
        raw["breakdown"] = [{"name": "big", "ms": 50.0}, {"name": "rest", "ms": 50.0, "kind": "other"}]
    if draw(st.booleans()):
        raw["profile_id"] = "trace.json.gz"
        raw["replay"] = draw(replays())
    return msgspec.convert(raw, Proposal)


# The floats that break careless arithmetic: the extremes of a double, sums of a few of them overflow, products
# of two underflow; and any finite double besides.
EXTREMES = (5e-324, 2.2250738585072014e-308, 1e-300, 1e-12, 0.0, 1.0, 1e23, 1e100, 1e300, 1e308, 1.7976931348623157e308)
extreme_floats = st.sampled_from(EXTREMES) | st.floats(allow_nan=False, allow_infinity=False)


def _with_extremes(draw: st.DrawFn, value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _with_extremes(draw, item) for key, item in value.items()}
    if isinstance(value, list):
        return [_with_extremes(draw, item) for item in value]
    if isinstance(value, float) and draw(st.booleans()):
        return draw(extreme_floats)
    return value


@st.composite
def extreme_proposals(draw: st.DrawFn) -> dict[str, Any]:
    """A proposal as JSON would carry it, with any of its numbers (p, k, every ms, weeks, goal, flag) replaced by
    an extreme double: what a client may send, valid or not. Bodies, not Structs: the boundary must judge them."""
    raw = draw(raw_proposals())
    if raw["k"] == "inf" and draw(st.booleans()):
        raw["k"] = 1.0
    return dict(_with_extremes(draw, raw))


def nested_json(depth: int, *, array: bool = False) -> bytes:
    """A JSON document nested `depth` levels deep: `{"a":{"a":…1…}}` or `[[…]]`."""
    return b"[" * depth + b"]" * depth if array else b'{"a":' * depth + b"1" + b"}" * depth


nesting_depths = st.sampled_from((64, 1_000, 10_000, 100_000)) | st.integers(min_value=1, max_value=20_000)


@st.composite
def raw_proposals(draw: st.DrawFn) -> dict[str, Any]:
    """A valid proposal as a JSON-ready dict (see `proposals`)."""
    raw: dict[str, Any] = {"p": draw(shares), "k": draw(speedups)}
    breakdown = draw(_optional(breakdowns()))
    if breakdown is not None:
        raw["breakdown"] = breakdown
        raw["breakdown_scope"] = draw(st.sampled_from(["measured", "end_to_end"]))
        if draw(st.booleans()):
            raw["target"] = draw(st.sampled_from([phase["name"] for phase in breakdown]))
    if "target" not in raw and draw(st.booleans()):
        raw["target"] = draw(names)
    for key, strategy in (
        ("baseline_ms", times_ms),
        ("cost_weeks", weeks),
        ("p_end_to_end", shares),
        ("prior_k", st.floats(min_value=1.0, max_value=100.0)),
        ("title", st.just("a proposal")),
    ):
        value = draw(_optional(strategy))
        if value is not None:
            raw[key] = value
    raw["scope"] = {
        key: value
        for key, value in {
            "workload": draw(_optional(names)),
            "model": draw(_optional(names)),
            "input": draw(_optional(names)),
            "dtype": draw(_optional(st.sampled_from(["fp32", "bf16", "fp8"]))),
            "device": draw(_optional(st.sampled_from(["MI300X", "H100"]))),
            "measured": draw(_optional(st.sampled_from(["step", "device_activity", "end_to_end", "rank"]))),
            "method": draw(_optional(st.sampled_from(["timeline", "counters", "inclusive_summary", "estimate"]))),
            "timing": draw(_optional(st.sampled_from(["device_events", "host_wall", "host_submit"]))),
            "overlap": draw(st.booleans()),
            "inclusive": draw(st.booleans()),
            "target_input": draw(_optional(names)),
            "profiler_overhead": draw(st.booleans()),
            "load": draw(_optional(st.sampled_from(["burst", "sustained"]))),
            "target_load": draw(_optional(st.sampled_from(["burst", "sustained"]))),
            "k_measured": draw(_optional(st.sampled_from(["in_step", "microbenchmark"]))),
            "compared_to": draw(
                _optional(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "model": names,
                            "input": names,
                            "dtype": st.sampled_from(["fp32", "bf16"]),
                            "device": st.sampled_from(["MI300X", "H100"]),
                        },
                    )
                )
            ),
        }.items()
        if value is not None
    }
    flags: dict[str, Any] = {
        "fleet_gpus": draw(_optional(st.integers(min_value=1, max_value=200_000))),
        "portability": draw(_optional(st.sampled_from(["portable", "vendor_specific", "hand_asm"]))),
        "portable_fallback": draw(st.booleans()),
        "kernel_is_product": draw(st.booleans()),
        "maintenance_weeks_per_year": draw(_optional(st.floats(min_value=0, max_value=20))),
        "architectures": draw(_optional(st.integers(min_value=1, max_value=4))),
        "latency_slo": draw(
            _optional(
                st.fixed_dictionaries(
                    {}, optional={"p99_ms": times_ms, "tail_risk": st.booleans(), "p99_measured_worse": st.booleans()}
                )
            )
        ),
        "barrier": draw(
            _optional(
                st.fixed_dictionaries(
                    {"ranks": st.integers(min_value=2, max_value=4096)},
                    # The measured fields a distributed profile fills in (straggler, its step, the target on it).
                    optional={
                        "critical_path": st.booleans(),
                        "wait_fraction": st.floats(min_value=0, max_value=1, exclude_max=True),
                        "straggler": st.integers(min_value=0, max_value=4095),
                        "step_ms": times_ms,
                        "target_ms": st.floats(min_value=0, max_value=1e6, allow_nan=False),
                        "rank_p": shares,
                    },
                )
            )
        ),
        "run_days": draw(_optional(st.floats(min_value=0.01, max_value=36_500))),
        "strategic": draw(
            _optional(
                st.fixed_dictionaries(
                    {"model": names},
                    optional={
                        "p": shares,
                        "launch_committed": st.booleans(),
                        "slips": st.integers(min_value=0, max_value=6),
                    },
                )
            )
        ),
    }
    _currencies_b(draw, raw, flags)
    raw["flags"] = {key: value for key, value in flags.items() if value is not None}
    goal = draw(
        _optional(
            st.fixed_dictionaries(
                {},
                optional={
                    "latency_ms": times_ms,
                    "throughput_per_s": st.floats(min_value=0.01, max_value=1e6),
                    "memory_required_gb": st.floats(min_value=0.1, max_value=2048),
                    "device_memory_gb": st.floats(min_value=0.1, max_value=512),
                },
            )
        )
    )
    if goal is not None:
        if draw(st.booleans()):
            goal["requests_per_step"] = draw(st.integers(min_value=1, max_value=512))
        raw["goal"] = goal
    _currencies_a(draw, raw)
    return raw


# --- mixes, several targets, a collective's wait -----------------------------------------------------------------

# A part's own k may be the smallest double: at 5e-324, 1/k is ∞, and a part that inherits a share of 0 (behind a
# barrier the step does not see) made 0 · −∞ a NaN saving.
tiny_speedups = st.sampled_from((5e-324, 2.2250738585072014e-308, 1e-300))
mix_speedups = st.none() | speedups | tiny_speedups


@st.composite
def fleet_mixes(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Device kinds with their GPUs and, sometimes, their own p and k (none: not measured there)."""
    devices = draw(st.lists(st.sampled_from(["MI300X", "H100", "MI250X", "A100"]), min_size=1, max_size=4, unique=True))
    parts: list[dict[str, Any]] = []
    for device in devices:
        part: dict[str, Any] = {"name": device, "gpus": draw(st.integers(min_value=1, max_value=50_000))}
        if (p := draw(st.none() | shares)) is not None:
            part["p"] = p
        if (k := draw(mix_speedups)) is not None:
            part["k"] = k
        parts.append(part)
    return parts


@st.composite
def traffic_mixes(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Batch-size buckets whose shares add up to at most 1, each with its own p and k sometimes."""
    buckets = draw(st.lists(st.sampled_from(["bs1", "bs8", "bs32", "seq8k"]), min_size=1, max_size=4, unique=True))
    weights = [draw(st.floats(min_value=0.01, max_value=1.0)) for _ in buckets]
    scale = draw(st.floats(min_value=0.3, max_value=1.0)) / sum(weights)
    parts: list[dict[str, Any]] = []
    for bucket, weight in zip(buckets, weights, strict=True):
        part: dict[str, Any] = {"name": bucket, "share": min(max(weight * scale, 1e-6), 1.0)}
        if (p := draw(st.none() | shares)) is not None:
            part["p"] = p
        if (k := draw(mix_speedups)) is not None:
            part["k"] = k
        parts.append(part)
    return parts


def _currencies_b(draw: st.DrawFn, raw: dict[str, Any], flags: dict[str, Any]) -> None:
    """Draws mixes, further targets, a wait and requests per step into `raw` and `flags`, valid with the rest."""
    which = draw(st.sampled_from(["none", "fleet", "traffic"]))
    if which == "fleet":
        flags["fleet_mix"] = mix = draw(fleet_mixes())
        flags["fleet_gpus"] = sum(part["gpus"] for part in mix)
        if draw(st.booleans()):
            raw["scope"]["device"] = mix[0]["name"]
    elif which == "traffic":
        flags["traffic_mix"] = mix = draw(traffic_mixes())
        if draw(st.booleans()):
            raw["scope"]["input"] = mix[0]["name"]
    barrier = flags.get("barrier")
    if barrier is not None and draw(st.booleans()):
        barrier["target_wait"] = raw["p"] * draw(st.floats(min_value=0.0, max_value=1.0))
    elif barrier is not None and draw(st.booleans()):
        _arrivals(draw, raw, barrier)
    if draw(st.booleans()):
        taken = {raw.get("target")}
        left = 1.0 - raw["p"]
        more: list[dict[str, Any]] = []
        for phase in raw.get("breakdown") or ():
            if phase["name"] not in taken and draw(st.booleans()) and len(more) < 3:
                more.append({"name": phase["name"], "k": draw(speedups)})
                taken.add(phase["name"])
        # sometimes shares that add up past the scope, as a summary's inclusive percentages do (a remeasure)
        overlapping = draw(st.booleans())
        for i in range(draw(st.integers(min_value=0, max_value=2))):
            name = f"extra_phase_{i}"
            p = draw(st.floats(min_value=0.0, max_value=1.0)) * (1.0 if overlapping else left)
            if name in taken or p <= 0:
                continue
            left -= p
            more.append({"name": name, "p": p, "k": draw(speedups)})
            taken.add(name)
        if more:
            raw["more_targets"] = more
            if barrier is not None and barrier.get("arrivals") and draw(st.booleans()):
                _more_on_ranks(draw, barrier["arrivals"], more)


def _more_on_ranks(draw: st.DrawFn, arrivals: list[dict[str, Any]], more: list[dict[str, Any]]) -> None:
    """Each rank's time in some of the further targets (`arrivals[].more_ms`), within the rank's compute beside the
    target's."""
    for arrival in arrivals:
        room = arrival["compute_ms"] - arrival["target_ms"]
        spent: dict[str, float] = {}
        for extra in more:
            if room > 0 and draw(st.booleans()):
                spent[extra["name"]] = value = room * draw(st.floats(min_value=0.0, max_value=1.0))
                room -= value
        if spent:
            arrival["more_ms"] = spent


def _arrivals(draw: st.DrawFn, raw: dict[str, Any], barrier: dict[str, Any]) -> None:
    """Each rank's compute and the target's time in it, as all ranks' traces measure them (`flags.barrier.arrivals`),
    with the rank p is measured on, the step every rank waits for and the target's time there; p is that time over
    the step, or (a stated proposal) any other share."""
    ranks = draw(st.lists(st.integers(min_value=0, max_value=4095), min_size=1, max_size=6, unique=True))
    arrivals = []
    for rank in ranks:
        compute = draw(st.floats(min_value=1e-3, max_value=1e4))
        part = draw(st.sampled_from([0.0, 1.0]) | st.floats(min_value=0.0, max_value=1.0))
        arrivals.append({"rank": rank, "compute_ms": compute, "target_ms": compute * part})
    own = draw(st.sampled_from([a for a in arrivals if a["target_ms"] > 0] or arrivals))
    own["target_ms"] = own["target_ms"] or own["compute_ms"]
    slowest = max(arrivals, key=lambda a: (a["compute_ms"], -a["rank"]))
    step = slowest["compute_ms"] * draw(st.floats(min_value=1.0, max_value=2.0))
    barrier |= {
        "arrivals": arrivals,
        "rank": own["rank"],
        "straggler": slowest["rank"],
        "critical_path": own is slowest,
        "step_ms": step,
        "target_ms": own["target_ms"],
    }
    if own["target_ms"] / step >= 1e-6 and draw(st.booleans()):  # a share `shares` draws: p of 1e-310 is no share
        raw["p"] = min(own["target_ms"] / step, 1.0)
        if draw(st.booleans()):
            raw["baseline_ms"] = step


def _currencies_a(draw: st.DrawFn, raw: dict[str, Any]) -> None:
    """Memory after the change and headroom, a quality gate, added work, GPU time per start, and
    whether the fleet's work recurs, each optional."""
    goal = raw.get("goal")
    if goal is not None and "memory_required_gb" in goal and "device_memory_gb" in goal:
        if draw(st.booleans()):
            goal["memory_after_gb"] = draw(st.floats(min_value=0.1, max_value=2048))
        if draw(st.booleans()):
            goal["memory_headroom_gb"] = draw(st.floats(min_value=0, max_value=0.9)) * goal["device_memory_gb"]
    if draw(st.booleans()):
        raw["quality"] = {
            "metric": draw(names),
            "baseline": draw(st.floats(min_value=-100, max_value=100)),
            "candidate": draw(st.floats(min_value=-100, max_value=100)),
            "max_regression": draw(st.floats(min_value=0, max_value=5)),
            "higher_is_better": draw(st.booleans()),
        }
    added: dict[str, Any] = {}
    if "baseline_ms" in raw and draw(st.booleans()):
        added["phases"] = [
            {"name": name, "ms": draw(st.floats(min_value=0, max_value=1e4))}
            for name in draw(st.lists(names, min_size=1, max_size=3, unique=True))
        ]
    if draw(st.booleans()):
        added["speculative"] = {
            "draft_tokens": draw(st.integers(min_value=1, max_value=16)),
            "acceptance": draw(st.floats(min_value=0, max_value=1)),
            "draft_cost": draw(st.floats(min_value=0, max_value=2)),
            "verify_cost": draw(st.floats(min_value=0.05, max_value=4)),
        }
    if added:
        raw["added_work"] = added
    flags = raw["flags"]
    if draw(st.booleans()):
        flags["gpu_minutes_per_start"] = draw(st.floats(min_value=0.01, max_value=600))
        flags["starts_per_day"] = draw(st.floats(min_value=0.01, max_value=1e5))
    recurring = draw(_optional(st.booleans()))
    if recurring is not None:
        flags["recurring"] = recurring
    if draw(st.booleans()):
        flags["run_days"] = draw(st.floats(min_value=0.5, max_value=3650))
    _costs(draw, raw)
    _trades(draw, raw)


def _trades(draw: st.DrawFn, raw: dict[str, Any]) -> None:
    """What a change may buy besides time, and whose devices it runs on: often a slowdown (k < 1) with an SLO met
    measured before and after, or under a power limit; devices the company does not own; a roofline fraction."""
    flags = raw["flags"]
    which = draw(st.sampled_from(["none", "slo", "power", "unowned"]))
    if which != "none" and draw(st.booleans()):
        raw["k"] = draw(st.floats(min_value=0.5, max_value=0.999))  # a slowdown that buys something
    if which == "slo":
        slo = flags.setdefault("latency_slo", {})
        target = slo.setdefault("p99_ms", draw(times_ms))
        slo["p99_before_ms"] = target * draw(st.floats(min_value=0.5, max_value=3.0))
        slo["p99_after_ms"] = target * draw(st.floats(min_value=0.2, max_value=2.0))
        if draw(st.booleans()):
            slo.pop("p99_measured_worse", None)  # read off the two measurements
        if draw(st.booleans()):
            slo["gpus_otherwise"] = draw(st.integers(min_value=1, max_value=100_000))
    elif which == "power":
        flags["power"] = {
            "site_mw": draw(st.floats(min_value=0.001, max_value=1000)),
            "watts_per_gpu_before": draw(st.floats(min_value=50, max_value=2000)),
            "watts_per_gpu_after": draw(st.floats(min_value=50, max_value=2000)),
        }
    elif which == "unowned":
        unowned: dict[str, Any] = {"devices": draw(st.integers(min_value=1, max_value=2_000_000_000))}
        if draw(st.booleans()):
            unowned["generations"] = draw(st.integers(min_value=1, max_value=8))
        if draw(st.booleans()):
            unowned["port_weeks"] = draw(st.floats(min_value=0, max_value=20))
        flags["unowned"] = unowned
    if draw(st.booleans()):
        flags["roofline_fraction"] = draw(st.sampled_from([1.0]) | st.floats(min_value=0.01, max_value=1.0))
        if draw(st.booleans()):
            flags["roofline_bound"] = draw(st.sampled_from(["memory", "compute"]))


def _costs(draw: st.DrawFn, raw: dict[str, Any]) -> None:
    """Costs besides engineer-weeks: one-off GPU-hours, and the build as people × calendar weeks (agreeing with
    `cost_weeks` when that is drawn too)."""
    if draw(st.booleans()):
        raw["cost_gpu_hours"] = draw(st.sampled_from([0.0, 1e9]) | st.floats(min_value=0, max_value=1e7))
    if draw(st.booleans()):
        raw["cost_people"] = people = draw(st.integers(min_value=1, max_value=50))
        raw["cost_calendar_weeks"] = calendar = draw(st.floats(min_value=0, max_value=52))
        if "cost_weeks" in raw:
            raw["cost_weeks"] = people * calendar
