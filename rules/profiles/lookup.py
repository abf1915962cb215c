"""Finding the phase a proposal names: exact name first, else one unambiguous pattern match."""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable

import msgspec

from worthit.rules.profiles.errors import PhaseNotFoundError
from worthit.rules.profiles.model import Breakdown, Phase, largest_first
from worthit.rules.profiles.naming import UNNAMED, cut_digest, cut_head, name_digest, short_name

MAX_CANDIDATES = 10
GLOB_WORK = 10_000_000
"""The most characters of pattern × characters of names a glob is matched over (about 13 ms at worst). fnmatch's
regex backtracks: `*` + 16,000 `x` + `y*` against 60 names of 400 KB held one server's event loop for minutes."""
_GLOB = frozenset("*?[")


def find_phase(breakdown: Breakdown, pattern: str) -> Phase:
    """The phase named `pattern`.

    An exact name wins, or the exact display name (`short_name`, what reports and proposals show for a name of
    hundreds of characters). Otherwise `pattern` is matched case-insensitively — as a glob when it contains
    ``*``, ``?`` or ``[``, else as a unique prefix (a leading ``void`` ignored), then as a substring — and must
    match exactly one phase (kernel names are long C++ signatures; "softmax" should find
    ``void softmax_warp_forward<…>(…)`` when it is the only one). Raises PhaseNotFoundError listing up to ten
    candidates (display names): the matches when several match, else the largest phases.
    """
    exact = exact_phase(breakdown.phases, pattern)
    if exact is not None:
        return exact
    needle = pattern.strip().lower()
    if not needle:
        raise PhaseNotFoundError(pattern, _names(largest_first(breakdown.phases)), ambiguous=False)
    if _GLOB & set(needle):
        check_glob_work(pattern, breakdown.phases, sum(len(p.name) for p in breakdown.phases))
        matches = [p for p in breakdown.phases if fnmatch.fnmatchcase(p.name.lower(), needle)]
    else:
        prefixed = [p for p in breakdown.phases if _bare(p.name).startswith(needle)]
        if len(prefixed) == 1:
            return prefixed[0]
        matches = [p for p in breakdown.phases if needle in p.name.lower()]
    exact_ci = [p for p in matches if p.name.lower() == needle]
    if len(exact_ci) == 1:
        return exact_ci[0]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise PhaseNotFoundError(pattern, _names(largest_first(matches)), ambiguous=True)
    folded = [p for p in breakdown.phases if p.name.startswith("(the rest: ")]
    raise PhaseNotFoundError(
        pattern, _names(largest_first(breakdown.phases)), ambiguous=False, folded=[p.name for p in folded]
    )


def family(breakdown: Breakdown, pattern: str) -> Breakdown:
    """`breakdown` with the phases a glob `pattern` matches (case-insensitively, two or more, of one kind, none an
    inclusive total) merged into one phase named `pattern`: a family of kernels (``*implicit_convolve_sgemm*``, every
    instantiation of one template) targeted as one. Their times and shares are added, which is their union for
    kernels of one stream (they never overlap there) and at most that much for several streams. Unchanged when the
    pattern is no glob, matches fewer than two phases or mixes kinds, and for a run of several ranks (a family there
    is each rank's own)."""
    needle = pattern.strip().lower()
    if not (_GLOB & set(needle)) or breakdown.ranks or exact_phase(breakdown.phases, pattern) is not None:
        return breakdown
    check_glob_work(pattern, breakdown.phases, sum(len(p.name) for p in breakdown.phases))
    members = [p for p in breakdown.phases if fnmatch.fnmatchcase(p.name.lower(), needle)]
    if len(members) < 2 or len({p.kind for p in members}) > 1 or any(p.inclusive for p in members):
        return breakdown
    merged = Phase(
        name=pattern,
        kind=members[0].kind,
        total_ns=sum(p.total_ns for p in members),
        calls=sum(p.calls for p in members),
        share_of_device=_added(p.share_of_device for p in members),
        share_of_wall=_added(p.share_of_wall for p in members),
        share_of_compute=_added(p.share_of_compute for p in members),
    )
    kept = [p for p in breakdown.phases if p not in members]
    note = f"`{pattern}` names {len(members)} phases together, their times added: {', '.join(_names(members))}"
    return msgspec.structs.replace(breakdown, phases=largest_first([merged, *kept]), notes=[*breakdown.notes, note])


def _added(shares: Iterable[float | None]) -> float | None:
    """The sum of shares that are all known, at most the whole; None when one is not."""
    known = list(shares)
    return None if any(share is None for share in known) else min(math.fsum(known), 1.0)  # type: ignore[arg-type]


def exact_phase(phases: list[Phase], name: str) -> Phase | None:
    """The phase `name` names exactly: its whole name, else a name cut by `short_name` at any width (``head… [digest]``,
    as the reports print it, their narrower table columns included) when one phase begins as the cut does and has
    that digest.

    Only names that begin as the cut name does are digested: the display name of a kernel is found among 512 ranks'
    phases without hashing every stored name."""
    for phase in phases:
        if phase.name == name:
            return phase
    if name == UNNAMED:
        shown = [p for p in phases if not p.name]
    else:
        head, digest = cut_head(name), cut_digest(name)
        if head is None or digest is None:
            return None
        begun = (p for p in phases if len(p.name) > len(head) and p.name.startswith(head))
        shown = [p for p in begun if name_digest(p.name) == digest]
    return shown[0] if len(shown) == 1 else None


def check_glob_work(pattern: str, phases: list[Phase], names: int) -> None:
    """Refuse a glob `pattern` whose matching over `names` characters of names would exceed `GLOB_WORK`: the
    caller sums the names it will match over, all of a distributed run's ranks together when it looks in each."""
    needle = pattern.strip().lower()
    if not (_GLOB & set(needle)) or len(needle) * names <= GLOB_WORK:
        return
    why = (
        f"a pattern of {len(needle):,} characters over names of {names:,} characters together is more "
        f"matching than a request may do ({GLOB_WORK:,} character pairs): name the phase, its start or a "
        "part of it without `*`, `?` or `[`"
    )
    raise PhaseNotFoundError(pattern, _names(largest_first(phases)), ambiguous=False, why=why)


def _bare(name: str) -> str:
    """A name as one types its start: lower case, without the ``void `` return type C++ kernel signatures carry
    (so "split_embedding_backward" is a prefix of ``void split_embedding_backward…`` as of ``split_embedding_…``)."""
    lowered = name.lower()
    return lowered[5:] if lowered.startswith("void ") else lowered


def _names(phases: list[Phase]) -> list[str]:
    return [short_name(p.name) for p in phases[:MAX_CANDIDATES]]
