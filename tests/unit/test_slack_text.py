"""The `/worthit` text syntax: every form it reads, to the exact figure, and every error naming its token."""

from __future__ import annotations

import re
from typing import Any

import msgspec
import pytest
from hypothesis import assume, event, example, given
from hypothesis import strategies as st

from worthit.rules.model import Proposal
from worthit.service.slack.text import USAGE, Command, Help, Invalid, parse


def proposal_of(text: str) -> dict[str, Any]:
    parsed = parse(text)
    assert isinstance(parsed, Command), parsed
    document: dict[str, Any] = msgspec.to_builtins(parsed.proposal)
    return document


def invalid(text: str) -> Invalid:
    parsed = parse(text)
    assert isinstance(parsed, Invalid), parsed
    return parsed


def test_the_products_example_reads_to_the_same_proposal_as_its_json() -> None:
    """The PRODUCT example is the JSON proposal a planning tool would send, field for field."""
    text = "p=21% k=10 cost=3w baseline=100ms target=attention_softmax fleet=20000 asm"
    expected = msgspec.json.decode(
        b'{"p": 0.21, "k": 10, "cost_weeks": 3, "baseline_ms": 100, "target": "attention_softmax",'
        b' "flags": {"fleet_gpus": 20000, "portability": "hand_asm"}}',
        type=Proposal,
        strict=True,
    )
    parsed = parse(text)
    assert isinstance(parsed, Command)
    assert parsed.proposal == expected
    assert parsed.public is False


@pytest.mark.parametrize(
    ("text", "p"),
    [
        ("p=21% k=2", 0.21),
        ("p=0.21 k=2", 0.21),
        ("p=.21 k=2", 0.21),
        ("p=100% k=2", 1.0),
        ("p=0.014% k=2", 0.00014),
        ("p=2.1e-1 k=2", 0.21),
        ("P=21% K=2", 0.21),
        ("p = 21% k = 2", 0.21),
        ("p:21% k:2", 0.21),
        ("share=21% k=2", 0.21),
        ("p=21%, k=2", 0.21),
    ],
)
def test_p_reads_as_a_fraction_or_a_percent(text: str, p: float) -> None:
    assert proposal_of(text)["p"] == p


def test_percent_is_exact_decimal_arithmetic() -> None:
    """21% is the float nearest 0.21 (not 21 * 0.01 = 0.21000000000000002), as `"p": 0.21` in JSON is."""
    assert proposal_of("p=21% k=2")["p"] == 0.21
    assert proposal_of("p=7% k=2")["p"] == 0.07
    assert proposal_of("p=0.014% k=2")["p"] == 0.00014


@pytest.mark.parametrize(
    ("text", "k"),
    [
        ("p=1% k=10", 10.0),
        ("p=1% k=10x", 10.0),
        ("p=1% k=10×", 10.0),  # the multiplication sign people type
        ("p=1% k=1.5", 1.5),
        ("p=1% k=inf", "inf"),
        ("p=1% k=Infinity", "inf"),
        ("p=1% k=∞", "inf"),
        ("p=1% speedup=4", 4.0),
    ],
)
def test_k_reads_a_factor_or_infinity(text: str, k: float | str) -> None:
    assert proposal_of(text)["k"] == k


def test_ranges_read_with_a_unit_on_either_end() -> None:
    assert proposal_of("p=15%..25% k=2x..4x")["p"] == {"low": 0.15, "high": 0.25}
    assert proposal_of("p=15..25% k=2")["p"] == {"low": 0.15, "high": 0.25}
    assert proposal_of("p=0.1..0.2 k=2..4")["k"] == {"low": 2.0, "high": 4.0}


@pytest.mark.parametrize(
    ("value", "ms"),
    [
        ("100", 100.0),
        ("100ms", 100.0),
        ("0.1s", 100.0),
        ("2sec", 2000.0),
        ("500us", 0.5),
        ("500µs", 0.5),
        ("500μs", 0.5),  # Greek mu, not the micro sign
        ("39800ns", 0.0398),
    ],
)
def test_baseline_reads_time_units_into_ms(value: str, ms: float) -> None:
    assert proposal_of(f"p=1% k=2 baseline={value}")["baseline_ms"] == ms
    assert proposal_of(f"p=1% k=2 baseline_ms={value}")["baseline_ms"] == ms


@pytest.mark.parametrize(
    ("value", "weeks"),
    [
        ("3", 3.0),
        ("3w", 3.0),
        ("3weeks", 3.0),
        ("1week", 1.0),
        ("10d", 2.0),
        ("3days", 0.6),
        ("40h", 1.0),
        ("6hours", 0.15),
    ],
)
def test_cost_reads_weeks_days_and_hours(value: str, weeks: float) -> None:
    """A day is a fifth of an engineer-week, an hour a fortieth."""
    assert proposal_of(f"p=1% k=2 cost={value}")["cost_weeks"] == weeks


@pytest.mark.parametrize("value", ["20000", "20,000", "20_000", "20k", "20K"])
def test_fleet_reads_whole_gpu_counts(value: str) -> None:
    assert proposal_of(f"p=5% k=2 fleet={value}")["flags"]["fleet_gpus"] == 20000


def test_names_and_scope() -> None:
    document = proposal_of(
        'p=1% k=2 target=attention_softmax title="qkv fusion, 2x" workload=inference model=llama-70b '
        "input=bs1 dtype=bf16 device=mi300x measured=device_activity method=timeline timing=device_events"
    )
    assert document["target"] == "attention_softmax"
    assert document["title"] == "qkv fusion, 2x"
    scope = {key: value for key, value in document["scope"].items() if value not in (None, False)}
    assert scope == {
        "workload": "inference",
        "model": "llama-70b",
        "input": "bs1",
        "dtype": "bf16",
        "device": "mi300x",
        "measured": "device_activity",
        "method": "timeline",
        "timing": "device_events",
    }


def test_smart_quotes_and_slack_escapes_are_read() -> None:
    """Slack's clients turn quotes into curly ones and escape &, < and > in the command text."""
    assert proposal_of("p=1% k=2 title=\u201ca &amp; b &lt;c&gt;\u201d")["title"] == "a & b <c>"


def test_p_end_to_end() -> None:
    document = proposal_of("p=1.2% p_e2e=0.014% k=inf")
    assert (document["p"], document["p_end_to_end"], document["k"]) == (0.012, 0.00014, "inf")
    assert proposal_of("p=1.2% p_end_to_end=0.00014 k=inf")["p_end_to_end"] == 0.00014


@pytest.mark.parametrize(
    ("word", "flags"),
    [
        ("asm", {"portability": "hand_asm"}),
        ("vendor", {"portability": "vendor_specific"}),
        ("portable", {"portability": "portable"}),
        ("fallback", {"portable_fallback": True}),
        ("product", {"kernel_is_product": True}),
        ("ASM", {"portability": "hand_asm"}),
    ],
)
def test_bare_words_set_flags(word: str, flags: dict[str, Any]) -> None:
    document = proposal_of(f"p=3% k=2 {word}")["flags"]
    assert {key: document[key] for key in flags} == flags


def test_public_answers_in_the_channel_and_is_ephemeral_by_default() -> None:
    private, public = parse("p=1% k=2"), parse("p=1% k=2 public")
    assert isinstance(private, Command)
    assert isinstance(public, Command)
    assert (private.public, public.public) == (False, True)
    assert private.proposal == public.proposal


@pytest.mark.parametrize("text", ["help", "HELP", "p=1% help", "", "   ", "public", "usage", "?"])
def test_help_and_empty_text_ask_for_the_usage(text: str) -> None:
    assert parse(text) == Help()


@pytest.mark.parametrize(
    ("text", "token", "says"),
    [
        ("p=21% k=10 cots=3w", "cots=3w", "did you mean `cost`"),
        ("p=21% k=10 pubic", "pubic", "did you mean `public`"),
        ("p=21% k=10 frobnicate", "frobnicate", "unknown word"),
        ("p=2l% k=10", "p=2l%", "`2l%` does not read"),
        ("p=21% k=ten", "k=ten", "speedup"),
        ("p=21% k=10 cost=3months", "cost=3months", "`3w`"),
        ("p=21% k=10 baseline=100m", "baseline=100m", "`100ms`"),
        ("p=21% k=10 fleet=1.5", "fleet=1.5", "whole number"),
        ("p=21% k=10 fleet=0", "fleet=0", "Expected `fleet_gpus` >= 1"),
        ("p=1.7 k=10", "p=1.7", "Expected `p` <= 1.0"),
        ("p=170% k=10", "p=170%", "Expected `p` <= 1.0"),
        ("p=0 k=10", "p=0", "Expected `p` > 0"),
        ("p=21% k=0", "k=0", "Expected `k` > 0"),
        ("p=21% k=-2", "k=-2", "Expected `k` > 0"),
        ("p=21% k=10 cost=-1w", "cost=-1w", "Expected `cost_weeks` >= 0"),
        ("p=21% k=10 baseline=0ms", "baseline=0ms", "Expected `baseline_ms` > 0"),
        ("p=21% k=10 measured=wall", "measured=wall", "`device_activity`, `end_to_end`, `rank`, `step`"),
        ("p=21% k=10 measured=device", "measured=device", "one of `device_activity`, `end_to_end`, `rank`, `step`"),
        ("p=21% k=10 portability=arm", "portability=arm", "`portable`, `vendor_specific` (`vendor`) or `hand_asm`"),
        # a value typed as two words: the one word that reads the same, never the field's long name
        ("p=21% k=10 cost=3 weeks", "cost=3 weeks", "a value is one word: write `cost=3w`"),
        ("p=21% k=10 baseline=100 ms", "baseline=100 ms", "write `baseline=100ms`"),
        ("p=21% k=10 fleet=20000 gpus", "fleet=20000 gpus", "write `fleet=20000`"),
        ("p=21% k=10 cost=3 fortnights", "fortnights", "unknown word `fortnights`"),
        ("p=25%..15% k=10", "p=25%..15%", "low end is above its high end"),
        ("p=1e999 k=10", "p=1e999", "does not read"),
        ("p=21% p=22% k=10", "p=22%", "given twice (also by `p=21%`)"),
        ("p=21% k=10 asm vendor", "vendor", "given twice (also by `asm`)"),
        ("p= k=10", "p=", "no value after `p=`"),
        ("k=10 cost=3w", "p=", "`p` is missing"),
        ("p=21% cost=3w", "k=", "`k` is missing"),
        ('p=21% k=10 title="never closed', 'title="never', "quote is not closed"),
        (f"p=21% k=10 target={'x' * 201}", f"target={'x' * 201}", "Expected `target` of length <= 200"),
    ],
)
def test_each_error_names_its_token(text: str, token: str, says: str) -> None:
    """A typo never becomes a guess: the answer names the token as typed and what was expected."""
    error = invalid(text)
    assert error.token == token
    assert says in error.reason


def test_parse_is_pure() -> None:
    """Same text, same answer, every time (no state carried between commands)."""
    text = "p=21% k=10 cost=3w public asm"
    assert parse(text) == parse(text) == parse(text)


def test_usage_names_every_key_and_word() -> None:
    for word in ("p=", "k=", "cost=", "baseline=", "p_e2e=", "fleet=", "target=", "workload=", "model=", "asm"):
        assert word in USAGE
    for word in ("vendor", "fallback", "product", "public", "help"):
        assert word in USAGE


def test_a_value_split_in_two_is_one_word_meaning_the_same() -> None:
    """The suggestion for `cost=3 weeks` reads to what was meant: 3 weeks, the value typed apart."""
    error = invalid("p=21% k=10 cost=3 weeks")
    assert "cost_weeks" not in error.reason
    fixed = parse("p=21% k=10 cost=3w")
    assert isinstance(fixed, Command)
    assert fixed.proposal.cost_weeks == 3.0
    quoted = parse('p=21% k=10 cost="3 weeks"')  # quotes hold a value's spaces, as they hold a title's
    assert isinstance(quoted, Command)
    assert quoted.proposal.cost_weeks == 3.0


@pytest.mark.parametrize(
    ("text", "path", "value"),
    [
        ("p=21% k=10 portability=asm", ("flags", "portability"), "hand_asm"),
        ("p=21% k=10 portability=vendor", ("flags", "portability"), "vendor_specific"),
        ("p=21% k=10 portability=hand_asm", ("flags", "portability"), "hand_asm"),
        ("p=21% k=10 flags.fleet_gpus=20k", ("flags", "fleet_gpus"), 20000),
        ("p=21% k=10 baseline_ms=1.5s", ("baseline_ms",), 1500.0),
        ("p=21% k=10 throughput_per_s=2000/s rps=48", ("goal", "throughput_per_s"), 2000.0),
        ("p=21% k=10 requests_per_step=48", ("goal", "requests_per_step"), 48),
        ("p=21% k=10 goal.memory_required_gb=180GB", ("goal", "memory_required_gb"), 180.0),
        ("p=21% k=10 ranks=8 target_wait=12%", ("flags", "barrier", "target_wait"), 0.12),
    ],
)
def test_the_documents_names_and_values_read_in_slack(text: str, path: tuple[str, ...], value: object) -> None:
    """Slack reads what a YAML or JSON proposal writes: the field's own name (dotted when nested) and the values a
    document spells out (`hand_asm`), besides its own short ones (`portability=asm`)."""
    parsed = parse(text)
    assert isinstance(parsed, Command), parsed
    got: Any = parsed.proposal
    for part in path:
        got = getattr(got, part)
    assert got == value


SPLIT_KEYS = {
    "cost": ("cost_weeks", ("weeks", "week", "days", "day", "hours", "hrs", "engineer-weeks")),
    "baseline": ("baseline_ms", ("ms", "msec", "s", "sec", "us", "usec", "ns")),
    "fleet": ("flags.fleet_gpus", ("gpus", "gpu", "k")),
}


@given(
    key=st.sampled_from(sorted(SPLIT_KEYS)),
    number=st.integers(min_value=1, max_value=10**6),
    fraction=st.sampled_from(["", ".5", ".25"]),
    pick=st.integers(min_value=0, max_value=6),
)
@example(key="cost", number=3, fraction="", pick=0)  # the example users met: `cost=3 weeks` → `cost=3w`
def test_the_one_word_suggested_reads_to_what_was_typed_apart(key: str, number: int, fraction: str, pick: int) -> None:
    """Whatever the number and unit typed apart, the one word suggested (when one is) reads to the same value."""
    field, unit_words = SPLIT_KEYS[key]
    unit = unit_words[pick % len(unit_words)]
    value = f"{number}{fraction if key != 'fleet' else ''}"
    error = parse(f"p=21% k=10 {key}={value} {unit}")
    assert isinstance(error, Invalid)
    suggested = re.search(rf"write `{key}=([^`]+)`", error.reason)
    # The two words may not read together (e.g. a fraction of GPUs): then nothing is suggested.
    event("a word suggested" if suggested is not None else "nothing suggested")
    assume(suggested is not None)
    assert suggested is not None
    assert " " not in suggested.group(1)
    meant = parse(f'p=21% k=10 {key}="{value} {unit}"')
    fixed = parse(f"p=21% k=10 {key}={suggested.group(1)}")
    assert isinstance(meant, Command), meant
    assert isinstance(fixed, Command), fixed
    assert _field(fixed.proposal, field) == _field(meant.proposal, field)


def _field(proposal: object, dotted: str) -> object:
    for part in dotted.split("."):
        proposal = getattr(proposal, part)
    return proposal


@pytest.mark.parametrize(
    ("text", "path", "value"),
    [
        ("gpu_hours=150k", ("cost_gpu_hours",), 150_000.0),
        ("people=3 calendar=6w", ("cost_people",), 3),
        ("people=3 calendar=6w", ("cost_calendar_weeks",), 6.0),
        ("slo=1.5s p99_before=2.4s p99_after=1300ms", ("flags", "latency_slo", "p99_before_ms"), 2400.0),
        ("slo=1.5s p99_before=2.4s p99_after=1300ms", ("flags", "latency_slo", "p99_after_ms"), 1300.0),
        ("site_power=40MW watts_before=1kW watts_after=800W", ("flags", "power", "site_mw"), 40.0),
        ("site_power=40MW watts_before=1kW watts_after=800W", ("flags", "power", "watts_per_gpu_before"), 1000.0),
        ("devices=120k generations=3", ("flags", "unowned", "devices"), 120_000),
        ("devices=120k generations=3", ("flags", "unowned", "generations"), 3),
        ("roofline=80%", ("flags", "roofline_fraction"), 0.8),
    ],
)
def test_the_fields_of_what_teams_trade_have_slack_keys(text: str, path: tuple[str, ...], value: object) -> None:
    """One-off GPU-hours, people × calendar weeks, an SLO measured before and after, a power-limited site, devices the
    company does not own and a roofline read from Slack as from a file."""
    command = parse(f"p=21% k=2 {text}")
    assert isinstance(command, Command), command
    assert _field(command.proposal, ".".join(path)) == value
