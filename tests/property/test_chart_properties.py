"""Invariants of the decision chart's fold over any breakdown: every millisecond drawn, a legend that fits, the
target and each category of time drawn once in a colour no other segment takes."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from hypothesis import example, given, settings
from hypothesis import strategies as st

from worthit.service.present.charts import (
    CATEGORIES,
    LEGEND_MAX,
    REST_FILL,
    TARGET_FILL,
    UNLISTED,
    Bar,
    Segment,
    fold,
    short_name,
    stacked_bars,
)

SVG = "{http://www.w3.org/2000/svg}"
KINDS = ["", "", "", *CATEGORIES, "rest"]
millis = st.floats(min_value=0, max_value=1e7, allow_nan=False, allow_infinity=False) | st.sampled_from([0.0, 1e-9])
segment = st.builds(lambda ms, kind: (ms, kind), millis, st.sampled_from(KINDS))


def _segments(drawn: list[tuple[float, str]], target: int, unlisted: float) -> list[Segment]:
    out = [
        Segment(f"phase {index}", ms, index == target % max(len(drawn), 1), "" if index == target else kind)
        for index, (ms, kind) in enumerate(drawn)
    ]
    return out + ([Segment(UNLISTED, unlisted, category=UNLISTED)] if unlisted > 0 else [])


@settings(deadline=None)
@given(st.lists(segment, min_size=1, max_size=300), st.integers(min_value=0, max_value=299), millis)
@example([(1.0, "")] * 300, 0, 0.0)
@example([(1e-9, "host"), (1e7, "comm"), (0.0, "input"), (5.0, "copy")], 2, 1e7)
# Every entry kept apart, four others that fit, and a profile's own "(the rest: …)": the rest needs an entry too.
@example(
    [(1.0, ""), (1.0, "host"), (1.0, "input"), (1.0, "comm"), (1.0, "copy"), *[(1.0, "")] * 4, (1.0, "rest")], 0, 1.0
)
def test_the_fold_keeps_every_millisecond_and_a_legend_that_fits(
    drawn: list[tuple[float, str]], target: int, unlisted: float
) -> None:
    given_segments = _segments(drawn, target % len(drawn), unlisted)
    folded = fold(given_segments)
    before, after = math.fsum(s.value for s in given_segments), math.fsum(s.value for s in folded)
    assert math.isclose(after, before, rel_tol=1e-9, abs_tol=1e-12)
    assert sum(s.members for s in folded) == len(given_segments)
    assert len(folded) <= LEGEND_MAX
    assert [s.phase for s in folded if s.highlight] == [f"phase {target % len(drawn)}"]
    for key in CATEGORIES:
        assert len([s for s in folded if s.category == key]) <= 1
    root = ET.fromstring(stacked_bars([Bar("before", tuple(folded))], unit="ms", title="t"))
    assert len([g for g in root.iter(f"{SVG}g") if g.get("class") == "legend"]) <= LEGEND_MAX
    fills: dict[str, set[str]] = {}
    for rect in root.iter(f"{SVG}rect"):
        if "segment" in rect.get("class", "").split():
            key = "target" if "target" in rect.get("class", "") else rect.get("data-category", "")
            fills.setdefault(key, set()).add(rect.get("fill", ""))
    own = {"target": TARGET_FILL, "rest": REST_FILL} | {key: colour for key, (_, colour, _) in CATEGORIES.items()}
    for key, colours in fills.items():
        if key in own:
            assert colours == {own[key]}
        else:
            assert not colours & set(own.values()), (key, colours)


@settings(deadline=None)
@given(st.text(min_size=0, max_size=400), st.integers(min_value=8, max_value=200))
@example("<" * 50 + "(" * 50, 8)
@example("void " + "a" * 300 + "<b>(c)", 9)
def test_a_short_name_fits_its_room(name: str, chars: int) -> None:
    """Whatever the name, the legend's text of it fits the characters it is given."""
    assert len(short_name(name, chars)) <= chars
