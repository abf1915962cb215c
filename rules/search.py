"""Break-even search: bisection on the pure verdict function, and the break-even value as a condition prints it."""

from __future__ import annotations

import math
from collections.abc import Callable

from worthit.rules.model import Verdict
from worthit.rules.text import share_bounds, significant_bounds

__all__ = ["PASSING", "SMALLEST_P", "break_even", "break_even_below", "said_k", "said_share"]

PASSING: frozenset[Verdict] = frozenset({"fund", "fund_if"})
"""The verdicts that pass the review gate: what a break-even value separates from the rest."""


SMALLEST_P = 1e-9
"""The share break-even searches stop at: a proposal passing here passes at any share."""


def break_even_below(passes: Callable[[float], bool], p: float, margin: float) -> tuple[float, bool] | None:
    """The smallest share at which `passes` still holds, searched below `p` (None when `p` itself fails), and
    whether it lies below ``p / margin``: then no error of that size in a p that stands in for the real one (an
    estimate, a share of device activity alone) changes the answer. Bisection on the pure verdict function."""
    if not passes(p):
        return None
    if passes(p / margin):
        return (SMALLEST_P if passes(SMALLEST_P) else break_even(passes, SMALLEST_P, p / margin)), True
    return break_even(passes, p / margin, p), False


def said_share(passes: Callable[[float], bool], edge: float) -> float:
    """A break-even share as a condition states it: the lower of its two printed figures (`text.share_bounds`) at
    which `passes` holds, so that a share equal to the printed one passes ("p ≥ 4.3%" for an edge of 4.304% would
    fail at 4.3%: it says 4.4%; an edge of 4.5003%, bisection's side of an exact 4.5%, stays 4.5%)."""
    if edge <= SMALLEST_P:
        return edge
    return _said(passes, share_bounds(edge))


def said_k(passes: Callable[[float], bool], edge: float) -> float:
    """A break-even k as a condition states it, as `said_share` states a share: the lower of its two printed figures
    (three significant, `text.significant_bounds`) at which `passes` holds ("k ≥ 1.07" for an edge of 1.0714 would
    fail at 1.07: it says 1.08)."""
    if not math.isfinite(edge) or edge <= 0:
        return edge
    return _said(passes, significant_bounds(edge))


def _said(passes: Callable[[float], bool], bounds: tuple[float, float]) -> float:
    """Of a break-even's two printed figures (rounded down, rounded up), the lower where it passes, else the upper."""
    down, up = bounds
    return down if down > 0 and passes(down) else up


def break_even(passes: Callable[[float], bool], fail: float, ok: float, *, rel: float = 1e-3) -> float:
    """The boundary between a failing and a passing value, by bisection (`passes(ok)` and not `passes(fail)`)."""
    for _ in range(40):
        if abs(ok - fail) <= rel * max(abs(ok), abs(fail), 1e-12):
            break
        mid = (fail + ok) / 2
        if passes(mid):
            ok = mid
        else:
            fail = mid
    return ok
