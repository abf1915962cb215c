"""The SVG charts: one segment per phase and state, exact geometry, the ceiling marker, escaping of names."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import Any

import msgspec
import pytest

from worthit.rules import amdahl
from worthit.rules.model import Proposal
from worthit.service.present.charts import (
    BAR_WIDTH,
    CATEGORIES,
    LEFT,
    LEGEND_MAX,
    OUTLINE,
    PALETTE,
    REST_FILL,
    TARGET_FILL,
    THIN,
    HistoryStep,
    decision_chart,
    history_chart,
    short_name,
)

SVG = "{http://www.w3.org/2000/svg}"
SEED = [{"name": "attention", "ms": 60}, {"name": "mlp", "ms": 30}, {"name": "rest", "ms": 10, "kind": "other"}]


def chart(**fields: Any) -> ET.Element:
    """Render the decision chart of a proposal and parse it (it must be well-formed XML)."""
    proposal = msgspec.convert(fields, Proposal)
    p, k = fields["p"], fields["k"]
    figures = amdahl.figures(p, math.inf if k == "inf" else k, baseline_ms=fields.get("baseline_ms"))
    return ET.fromstring(decision_chart(proposal, figures))


def segments(root: ET.Element, bar: str) -> list[ET.Element]:
    return [
        rect
        for rect in root.iter(f"{SVG}rect")
        if "segment" in rect.get("class", "").split() and rect.get("data-bar") == bar
    ]


def geometry(rects: list[ET.Element]) -> list[tuple[str | None, float, float]]:
    return [(rect.get("data-phase"), float(rect.get("x", "nan")), float(rect.get("width", "nan"))) for rect in rects]


def test_one_segment_per_phase_per_state_on_one_scale() -> None:
    """60/30/10 with attention 3×: the before bar spans BAR_WIDTH; after, attention is a third as wide."""
    root = chart(target="attention", p=0.6, k=3, baseline_ms=100, breakdown=SEED)
    scale = BAR_WIDTH / 100
    assert geometry(segments(root, "before")) == [
        ("attention", LEFT, 60 * scale),
        ("mlp", LEFT + 60 * scale, 30 * scale),
        ("rest", LEFT + 90 * scale, 10 * scale),
    ]
    assert geometry(segments(root, "after")) == [
        ("attention", LEFT, 20 * scale),
        ("mlp", LEFT + 20 * scale, 30 * scale),
        ("rest", LEFT + 50 * scale, 10 * scale),
    ]


def test_the_target_and_only_the_target_is_highlighted() -> None:
    root = chart(target="mlp", p=0.3, k=2, baseline_ms=100, breakdown=SEED)
    highlighted = [rect.get("data-phase") for rect in root.iter(f"{SVG}rect") if "target" in rect.get("class", "")]
    assert highlighted == ["mlp", "mlp"]


def test_the_ceiling_is_the_time_with_the_target_at_zero() -> None:
    """p=0.21 of 100 ms: the ceiling sits at 79 ms (1.266×), across both bars."""
    root = chart(target="attention_softmax", p=0.21, k=10, baseline_ms=100)
    (marker,) = [g for g in root.iter(f"{SVG}g") if g.get("class") == "ceiling"]
    assert marker.get("data-value") == "79"
    line = marker.find(f"{SVG}line")
    assert line is not None
    assert float(line.get("x1", "nan")) == pytest.approx(LEFT + 79 * BAR_WIDTH / 100)
    assert line.get("x1") == line.get("x2")
    assert "ceiling 79 ms (1.266×)" in "".join(marker.itertext())


def test_without_a_breakdown_two_segments_target_and_rest() -> None:
    """p=0.21, k=10 of 100 ms: 21 ms and 79 ms before, 2.1 ms and 79 ms after (81.1 ms, 1.233×)."""
    root = chart(target="attention_softmax", p=0.21, k=10, baseline_ms=100)
    before, after = segments(root, "before"), segments(root, "after")
    assert [rect.get("data-phase") for rect in before] == ["attention_softmax", "rest of the step"]
    assert [float(rect.get("data-value", "nan")) for rect in before] == pytest.approx([21, 79])
    assert [float(rect.get("data-value", "nan")) for rect in after] == pytest.approx([2.1, 79])
    assert float(after[0].get("width", "nan")) == pytest.approx(2.1 * BAR_WIDTH / 100, abs=0.01)
    assert "81.1 ms (1.233×)" in "".join(root.itertext())


def test_without_a_baseline_the_bars_are_shares() -> None:
    root = chart(target="t", p=0.25, k=5)
    assert [rect.get("data-value") for rect in segments(root, "after")] == ["0.05", "0.75"]
    assert "80% (1.25×)" in "".join(root.itertext())


def test_a_removed_target_leaves_a_zero_width_segment() -> None:
    root = chart(target="h2d_copy", p=0.18, k="inf", baseline_ms=100)
    assert geometry(segments(root, "after"))[0] == ("h2d_copy", LEFT, 0.0)
    assert "ceiling 82 ms (1.22×)" in "".join(root.itertext())


def test_time_the_breakdown_does_not_list_is_drawn_as_unlisted() -> None:
    root = chart(
        target="attention",
        p=0.5,
        k=2,
        baseline_ms=100,
        breakdown=[{"name": "attention", "ms": 50}, {"name": "mlp", "ms": 40}],
    )
    assert [(r.get("data-phase"), r.get("data-value")) for r in segments(root, "before")] == [
        ("attention", "50"),
        ("mlp", "40"),
        ("unlisted", "10"),
    ]


def test_untrusted_names_are_text_not_markup() -> None:
    """A target or phase named like markup stays text: no script element, no injected attribute."""
    evil = '<script>alert(1)</script>" onmouseover="x'
    root = chart(
        target=evil, p=0.5, k=2, baseline_ms=100, breakdown=[{"name": evil, "ms": 50}, {"name": "a&b", "ms": 50}]
    )
    assert not [element for element in root.iter() if element.tag.endswith("script")]
    assert [rect.get("data-phase") for rect in segments(root, "before")] == [evil, "a&b"]
    assert all(rect.get("onmouseover") is None for rect in root.iter(f"{SVG}rect"))
    assert evil in "".join(root.itertext())


def test_history_outlines_each_steps_bottleneck() -> None:
    """The seed's 60/30/10 → 20/30/10 → 20/15/10: attention, then mlp, then attention again."""
    steps = [
        HistoryStep("step 1", (("attention", 60), ("mlp", 30), ("rest", 10)), "attention"),
        HistoryStep("step 2", (("attention", 20), ("mlp", 30), ("rest", 10)), "mlp"),
        HistoryStep("step 3", (("attention", 20), ("mlp", 15), ("rest", 10)), "attention"),
    ]
    root = ET.fromstring(history_chart("<llm>", steps))
    bottlenecks = [
        (r.get("data-bar"), r.get("data-phase")) for r in root.iter(f"{SVG}rect") if "bottleneck" in r.get("class", "")
    ]
    assert bottlenecks == [("step 1", "attention"), ("step 2", "mlp"), ("step 3", "attention")]
    assert len(segments(root, "step 2")) == 3
    assert [float(r.get("width", "nan")) for r in segments(root, "step 3")] == pytest.approx(
        [20 * BAR_WIDTH / 100, 15 * BAR_WIDTH / 100, 10 * BAR_WIDTH / 100]
    )
    title = root.find(f"{SVG}title")
    assert title is not None
    assert title.text == "Successive breakdowns of <llm>"


def many_phase_proposal(kernels: int = 55) -> dict[str, Any]:
    """A profile-sized breakdown: idle, communication, input and three copies among `kernels` thin kernels."""
    phases = [{"name": f"void kernel_{index}<float>(float const*)", "ms": 40 / (index + 1)} for index in range(kernels)]
    phases += [
        {"name": "device idle (host)", "ms": 336, "kind": "host"},
        {"name": "ncclKernel_SendRecv", "ms": 134, "kind": "comm"},
        {"name": "device idle (input pipeline)", "ms": 90, "kind": "input"},
        {"name": "H2D copy", "ms": 1.5, "kind": "copy"},
        {"name": "D2H copy", "ms": 0.5, "kind": "copy"},
        {"name": "memset", "ms": 0.01, "kind": "alloc"},
    ]
    total = sum(phase["ms"] for phase in phases)
    target = phases[3]
    return {"target": target["name"], "p": target["ms"] / total, "k": 2, "baseline_ms": total, "breakdown": phases}


def test_a_profile_sized_breakdown_draws_what_a_reader_can_tell_apart() -> None:
    """61 phases: the target, one segment per category (idle, communication, input, the copies summed), the largest
    kernels while the legend has room (10 - 5 kept apart - the rest = 4), the other 50 kernels as one "rest";
    LEGEND_MAX entries, every millisecond drawn."""
    fields = many_phase_proposal()
    root = chart(**fields)
    before = segments(root, "before")
    phases = [rect.get("data-phase") for rect in before]
    categories = [rect.get("data-category") for rect in before]
    kernels = [f"void kernel_{index}<float>(float const*)" for index in (0, 1, 2, 4)]
    assert phases == [
        *kernels[:3],
        fields["target"],
        *kernels[3:],
        "device idle (host)",
        "ncclKernel_SendRecv",
        "device idle (input pipeline)",
        "copies: 3 phases",
        "the rest: 50 phases",
    ]
    assert categories == ["phase"] * 5 + ["host", "comm", "input", "copy", "rest"]
    values = [float(rect.get("data-value", "nan")) for rect in before]
    assert values[-2] == pytest.approx(2.01, rel=1e-5)
    assert values[-1] == pytest.approx(sum(40 / (index + 1) for index in range(5, 55)), rel=1e-5)
    assert sum(values) == pytest.approx(fields["baseline_ms"], rel=1e-5)  # data-value has 6 digits
    assert len([g for g in root.iter(f"{SVG}g") if g.get("class") == "legend"]) == LEGEND_MAX


def test_categories_the_target_and_the_rest_keep_colours_of_their_own() -> None:
    root = chart(**many_phase_proposal())
    fills: dict[str, set[str]] = {}
    for rect in segments(root, "before") + segments(root, "after"):
        key = "target" if "target" in rect.get("class", "") else rect.get("data-category", "")
        fills.setdefault(key, set()).add(rect.get("fill", ""))
    assert fills["target"] == {TARGET_FILL}
    for key, (_, colour, _) in CATEGORIES.items():
        assert fills[key] == {colour}
    assert fills["rest"] == {REST_FILL}
    assert len(fills["phase"]) == 4  # the four largest kernels, each its own
    own = [TARGET_FILL, REST_FILL, *(colour for _, colour, _ in CATEGORIES.values())]
    assert len(set(own)) == len(own)
    assert not set(own) & set(PALETTE)


def test_the_target_is_outlined_and_thin_segments_have_no_border() -> None:
    """A white border on a hair-thin segment paints it white: below THIN units, none."""
    root = chart(**many_phase_proposal())
    outlines = [rect for rect in root.iter(f"{SVG}rect") if rect.get("class") == "outline"]
    assert len(outlines) == 2
    assert {rect.get("stroke") for rect in outlines} == {OUTLINE}
    for rect in segments(root, "before"):
        thin = float(rect.get("width", "nan")) < THIN
        assert (rect.get("stroke") == "none") == thin, rect.get("data-phase")


def test_a_profiles_own_fold_is_part_of_the_rest_never_a_phase_by_name() -> None:
    """ "(the rest: 126 kernel phases)" counts as the 126 phases it holds, inside the chart's rest (with the 7 of the
    11 other kernels the legend has no room for)."""
    fields = many_phase_proposal(kernels=12)
    fields["breakdown"].append({"name": "(the rest: 126 kernel phases)", "ms": 30})
    fields["baseline_ms"] += 30
    fields["p"] = fields["breakdown"][3]["ms"] / fields["baseline_ms"]
    phases = [rect.get("data-phase") for rect in segments(chart(**fields), "before")]
    assert phases[-1] == "the rest: 133 phases"
    assert "(the rest: 126 kernel phases)" not in phases


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        (
            "void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1<c10::Half, float, "
            "c10::Half, 2ul, 32>(at::GenericPackedTensorAccessor<c10::Half, 1ul, at::RestrictPtrTraits, long>)",
            "split_embedding…_cta_per_row_1",
        ),
        (
            "void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_warp_per_row_1<c10::Half>(int)",
            "split_embedding…warp_per_row_1",
        ),
        (
            "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_32x6_nt_align1>(cutlass_80_tensorop_s1688gemm_"
            "128x64_32x6_nt_align1::Params)",
            "cutlass::Kernel…2x6_nt_align1>",
        ),
        (
            "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
            "ncclKernel_Send…PLE_Sum_int8_t",
        ),
        ("device idle (host)", "device idle (host)"),
        ("(the rest: 126 kernel phases)", "(the rest: 126 kernel phases)"),
        ("void kernel_3<float>(float const*)", "kernel_3<float>"),
    ],
)
def test_a_legend_name_keeps_what_tells_kernels_apart(name: str, shown: str) -> None:
    """Return type and parameters go, a long kernel name drops its template arguments, and what is still too long
    loses its middle: the two split_embedding instantiations and the cutlass tiles stay apart in 30 characters."""
    assert short_name(name, 30) == shown
