"""The `/worthit` text syntax: `p=21% k=10 cost=3w baseline=100ms target=attention_softmax fleet=20000 asm`.

Forgiving where the intent is clear: fractions or percents, units on times and costs, `k=10x` or `k=∞`, `20,000` or
`20k`, `key = value`, any case, quotes for values with spaces. Strict where it is not: an unknown key, a value that
does not read, a missing `p` or `k` answer with the usage and name the token; nothing is guessed. Values are read by
`service/units.py`, the reader every surface shares. `parse` is a pure function of the text (and the public entry
point for any Slack client, the slash command's or a Socket Mode bot's); the proposal it builds is validated
exactly as a JSON body is (`msgspec.convert`, strict).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from worthit.rules.model import Proposal
from worthit.rules.pointer import to_pointer
from worthit.service import units
from worthit.service.units import ALIASES, KEYS, WORDS
from worthit.service.validation import validation_problem

__all__ = [
    "ALIASES",
    "HELP_WORDS",
    "KEYS",
    "MAX_TEXT_CHARS",
    "PUBLIC",
    "USAGE",
    "WORDS",
    "Command",
    "Help",
    "Invalid",
    "Parsed",
    "parse",
]

USAGE = """\
/worthit p=21% k=10 cost=3w baseline=100ms target=attention_softmax [fleet=20000] [asm] [public]

p=21%  p=0.21  p=15%..25%   the target's share of the measured time (required)
k=10  k=10x  k=inf  k=∞     the target's own speedup; inf: its work disappears (required)
cost=3w  cost=10d  cost=40h  engineer effort (a day is 1/5 week, an hour 1/40)
baseline=100ms  0.1s  500us  the measured scope's time
p_e2e=0.014%                the target's share of the whole run, when p is of a narrower scope
fleet=20000  fleet=20k      GPUs that run this workload
target=  title=  workload=  model=  input=  dtype=  device=   names; quote spaces: title="qkv fusion"
measured=step|device_activity|end_to_end|rank  method=timeline|counters|inclusive_summary|estimate
timing=device_events|host_wall|host_submit
throughput=2000/s rps=48    a throughput goal, and the requests one step serves
ranks=8 wait=28%            a collective target: its ranks, and its own wait for the slowest rank
fleet_mix=MI300X:450:1.4x,H100:550:0.85x   GPUs and k per device kind (no k: not measured there)
traffic=bs1:6%:1.8x,bs32:94%:1.05x         share of the time and k per batch size or sequence length
also=launch_gaps:inf,softmax:2x:12%        more phases the change speeds up, each with its k (and p)
asm  vendor  portable       how portable the new code is
fallback                    a tested portable fallback exists
product                     the kernel is the product (a vendor library kernel)
mem=180GB mem_after=120GB device_mem=141GB headroom=8GB   memory before/after the change, per device
metric=MMLU metric_base=71.2 metric_new=70.3 metric_gate=0.3pt [lower_is_better]   the quality gate
added=5ms  gamma=4 alpha=70% draft_cost=0.1x verify_cost=1.2x   work the change adds; speculative decoding
start_cost=45min starts=2000/day   GPU time the change costs on each start
recurring  oneoff  run_days=30     whether the fleet's work recurs, or a job of so many days
public                      answer in the channel (by default only you see the answer)
help                        this text"""


class Command(msgspec.Struct, frozen=True, kw_only=True):
    """A proposal to evaluate, and whether the answer goes to the whole channel."""

    proposal: Proposal
    public: bool = False


class Help(msgspec.Struct, frozen=True, kw_only=True):
    """The user asked for the usage (or typed nothing)."""


class Invalid(msgspec.Struct, frozen=True, kw_only=True):
    """The text does not read: `token` is the one at fault (as typed), `reason` says what was expected."""

    token: str
    reason: str


Parsed = Command | Help | Invalid


HELP_WORDS = frozenset({"help", "usage", "?", "-h", "--help"})
PUBLIC = "public"

MAX_TEXT_CHARS = 3000  # a command with every key and a long title is well under 1,000 characters

_PAIR = re.compile(r"(?P<key>[A-Za-z_][\w.-]*)[=:](?P<value>.*)", re.DOTALL)
_SMART_QUOTES = re.compile("[\u201c\u201d\u201e\u201f\u2033]")
_KEY_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _unescape(text: str) -> str:
    # Slack escapes these three in every slash command's text, whatever the manifest says.
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _names_a_key(text: str, at: int) -> bool:
    """Whether `key =` (a key, optional spaces, `=`) starts at `at`: then an `=` before it had no value."""
    if at >= len(text) or text[at] not in _KEY_START:
        return False
    at += 1
    while at < len(text) and (text[at].isalnum() or text[at] in "_-."):
        at += 1
    while at < len(text) and text[at].isspace():
        at += 1
    return at < len(text) and text[at] == "="


def _join_equals(part: str) -> str:
    """`p = 21%` → `p=21%`, but `p= k=2` stays apart (a key after the `=` means the value was left out).

    One pass, each character looked at a bounded number of times: the regular expression this replaces restarted
    at every space of a run and scanned the rest of it, quadratic (9 s of CPU for a 58 KB command).
    """
    out: list[str] = []
    at, end = 0, len(part)
    while at < end:
        run = at
        while run < end and part[run].isspace():
            run += 1
        if run == end or part[run] != "=":
            if run == at:
                out.append(part[at])
                run += 1
            else:
                out.append(part[at:run])
            at = run
            continue
        after = run + 1
        while after < end and part[after].isspace():
            after += 1
        if not _names_a_key(part, after):
            out.append("=")
        elif after > run + 1:
            out.append("=" + part[after - 1])  # one space keeps the key apart from the `=` without a value
        else:
            out.append(part[at:after])  # `p =k=2`: left as typed
        at = after
    return "".join(out)


def _split(text: str) -> list[str]:
    """The whitespace-separated tokens of `text` (quotes balanced), a quoted span (with its spaces) inside one."""
    tokens: list[str] = []
    start: int | None = None
    quoted = False
    for at, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif not quoted and char.isspace():
            if start is not None:
                tokens.append(text[start:at])
                start = None
            continue
        if start is None:
            start = at
    if start is not None:
        tokens.append(text[start:])
    return tokens


def _tokens(text: str) -> tuple[list[str], str | None]:
    """The tokens of `text`, and the token with an unclosed quote (if any). Linear in the text's length."""
    text = _SMART_QUOTES.sub('"', _unescape(text))
    parts = text.split('"')
    parts[::2] = [_join_equals(part) for part in parts[::2]]
    text = '"'.join(parts)
    if len(parts) % 2 == 0:
        quote = text.rfind('"')
        start = quote
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        return [], text[start:].split()[0]
    tokens = [token if token.endswith('"') else token.rstrip(",;") for token in _split(text)]
    return [token for token in tokens if token], None


def _suggest(word: str) -> str:
    close = units.nearest(word, [*KEYS, *ALIASES, *WORDS, PUBLIC, "help"])
    return f"; did you mean `{close}`?" if close else ""


def _one_word(key: units.Key, value: str, unit: str) -> str | None:
    """`3` and `weeks` typed apart (`cost=3 weeks`): the value as one word that reads the same (`3w`), else None.

    A short unit is taken first (`w`, `ms`), then the number alone (`20000` for `20000 gpus`), then longer ones."""
    try:
        meant = key.read(f"{value} {unit}")
    except units.Unreadable:
        return None
    shortest = [value + unit[:end] for end in range(1, len(unit) + 1)]
    for candidate in (*shortest[:2], value, *shortest[2:]):
        try:
            if key.read(candidate) == meant:
                return candidate
        except units.Unreadable:
            continue
    return None  # pragma: no cover - the number and the whole unit together read as typed apart


def parse(text: str) -> Parsed:
    """Read the text of a `/worthit` command: a proposal to evaluate, a request for help, or the token at fault.

    A text over `MAX_TEXT_CHARS` is refused before it is read, so no text costs more than a bounded parse."""
    if len(text) > MAX_TEXT_CHARS:
        return Invalid(
            token=text[:40].strip() + "…",
            reason=f"the text is {len(text):,} characters long; a /worthit command is at most {MAX_TEXT_CHARS:,}",
        )
    tokens, unclosed = _tokens(text)
    if unclosed is not None:
        return Invalid(token=unclosed, reason='a quote is not closed; quote values with spaces: title="qkv fusion"')
    if any(token.lower() in HELP_WORDS for token in tokens):
        return Help()
    fields: dict[str, Any] = {}
    origin: dict[str, tuple[str, str]] = {}  # JSON pointer -> (token as typed, what that key expects)
    public = False
    last = ""
    for token in tokens:
        word = token.lower()
        if word == PUBLIC:
            public = True
            continue
        pair = _PAIR.fullmatch(token)
        if pair is not None:
            key = units.key_of(pair["key"])
            if key is None:
                name = pair["key"].lower().replace("-", "_")
                return Invalid(token=token, reason=f"unknown key `{pair['key']}`{_suggest(name)}")
            raw = pair["value"]
            if not raw.replace('"', "").strip():
                return Invalid(token=token, reason=f"no value after `{pair['key']}=`; write {key.expects}")
            try:
                value = key.read(raw.replace('"', "").strip())  # `cost="3 weeks"`: quotes hold spaces
            except units.Unreadable as exc:
                why = f" ({exc})" if str(exc) else ""
                return Invalid(token=token, reason=f"`{raw}` does not read{why}; write {key.expects}")
            path, expects = key.path, key.expects
        elif word in WORDS:
            path, value = WORDS[word]
            expects = ""
        else:
            previous = _PAIR.fullmatch(last) if last else None
            key = units.key_of(previous["key"]) if previous else None
            joined = _one_word(key, previous["value"], token) if previous and key else None
            if previous and joined is not None:
                why = f"a value is one word: write `{previous['key']}={joined}`"
                return Invalid(token=f"{last} {token}", reason=why)
            return Invalid(token=token, reason=f"unknown word `{token}`{_suggest(word)}")
        pointer = to_pointer(path)
        if pointer in origin:
            return Invalid(token=token, reason=f"`{path[-1]}` is given twice (also by `{origin[pointer][0]}`)")
        origin[pointer] = (token, expects)
        last = token
        target = fields
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = value
    if not tokens or (public and len(tokens) == 1):
        return Help()
    for required in ("p", "k"):
        if f"/{required}" not in origin:
            return Invalid(token=f"{required}=", reason=f"`{required}` is missing; write {KEYS[required].expects}")
    try:
        proposal = msgspec.convert(fields, Proposal, strict=True)
    except msgspec.ValidationError as exc:
        detail, pointer = validation_problem(str(exc), type_=Proposal)
        detail = re.sub(r" - at `[^`]*`$", "", detail)
        while pointer and pointer not in origin:
            pointer = pointer.rsplit("/", 1)[0]
        token, expects = origin.get(pointer, (text.strip(), ""))
        listed = "to be one of `" in detail  # the values allowed are listed already
        return Invalid(token=token, reason=detail + (f"; write {expects}" if expects and not listed else ""))
    return Command(proposal=proposal, public=public)
