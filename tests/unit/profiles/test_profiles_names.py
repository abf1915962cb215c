"""Stored profile names: cut to what a target can name, distinct, shown as the whole would be."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import re

import msgspec
import pytest

from tests.kineto_traces import GEMM, Shape, write
from worthit.rules.model import LONG_NAME_MAX, Proposal
from worthit.rules.profiles import combine
from worthit.rules.profiles.fold import fold_breakdown
from worthit.rules.profiles.lookup import exact_phase
from worthit.rules.profiles.model import Phase
from worthit.rules.profiles.naming import STORED_NAME_MAX, cut_head, short_name
from worthit.rules.profiles.proposal import proposal_from_profile

# Two kernel names whose 32-bit blake2b digests are equal (2a4f7333), found by a birthday search over the tail in
# 34,114 tries (0.05 s): the hash state after the shared 16 KB head is copied, not recomputed.
HEAD = "void forged_kernel<" + "x" * 16_400
FORGED = (HEAD + "23776>(float*)", HEAD + "34114>(float*)")


def blake(name: str, hex_chars: int) -> str:
    return hashlib.blake2b(name.encode(), digest_size=hex_chars // 2).hexdigest()


def test_stored_names_are_cut_at_the_longest_target() -> None:
    assert STORED_NAME_MAX == LONG_NAME_MAX


def test_a_cut_name_shows_as_the_whole_it_was_cut_from_and_distinct_names_stay_distinct() -> None:
    first, second = "k" + "x" * 400_000 + "1", "k" + "x" * 400_000 + "2"
    cut = short_name(first, STORED_NAME_MAX)
    assert len(cut) == STORED_NAME_MAX
    assert cut != short_name(second, STORED_NAME_MAX)
    assert short_name(cut) == short_name(first)
    assert short_name(cut, STORED_NAME_MAX) == cut


def test_a_glob_over_many_ranks_is_bounded_by_one_budget_for_them_all() -> None:
    """512 ranks of 20 names of 1,000 characters: a 100-character glob is within the per-lookup cap on each rank
    (2 M pairs) but 1 G over all of them (~6 s of the event loop): refused at once, naming the figures."""
    import time

    import pytest

    from worthit.rules.errors import InvalidInput
    from worthit.rules.profiles.model import BarrierFigures, Breakdown, Phase, RankFigures
    from worthit.rules.profiles.proposal import _distributed

    phases = [
        Phase(
            name=f"k{i:02d}" + "x" * 997, kind="kernel", total_ns=10, calls=1, share_of_device=None, share_of_wall=None
        )
        for i in range(20)
    ]
    ranks = [RankFigures(rank=r, file=None, wall_ns=1000, activity=None, phases=phases) for r in range(512)]
    run = Breakdown(format="kineto", wall_ns=1000, device_busy_ns=None, phases=phases, inclusive=False, ranks=ranks)
    barrier = BarrierFigures(
        ranks=512, world_size=512, straggler=0, wait_fraction=0.1, wait_ns=1, step_ns=1000, steps=1
    )
    started = time.monotonic()
    with pytest.raises(InvalidInput, match="more matching than a request may do"):
        _distributed(None, "*" + "x" * 98 + "y*", run, barrier)  # type: ignore[arg-type]
    assert time.monotonic() - started < 0.5


def test_the_forged_pair_collides_in_32_bits_but_not_in_the_stored_names() -> None:
    """The pair shares an 8-hex digest (what names were cut with) and no longer shares a stored or a display name."""
    first, second = FORGED
    assert blake(first, 8) == blake(second, 8) == "2a4f7333"
    cut = [short_name(n, STORED_NAME_MAX) for n in FORGED]
    assert cut[0] != cut[1]
    assert cut == [n[: STORED_NAME_MAX - 20] + f"… [{blake(n, 16)}]" for n in FORGED]
    assert [len(c) for c in cut] == [STORED_NAME_MAX, STORED_NAME_MAX]
    assert short_name(first) != short_name(second)
    assert [short_name(c) for c in cut] == [short_name(n) for n in FORGED]  # a stored cut shows as its whole


def test_two_forged_kernels_of_a_stored_run_keep_their_own_step_figures_and_p() -> None:
    """Two ranks, 3 steps of 2 layers, each layer's GEMM one of the forged names: stored (`fold_breakdown`, names cut
    to 16,384 characters) and named by its stored name, the first kernel's p is its own time per measured step over
    the straggler's step, from the JSON (before: both kernels' time, 0.622 instead of 0.311)."""

    def trace(rank: int) -> bytes:
        out = io.StringIO()
        write(
            out, Shape(rank=rank, world_size=2, steps=3, layers=2, compute_scale=1.5 if rank else 1.0, lead_scale=1.5)
        )
        layer = itertools.count()
        return re.sub(f'"name": "{GEMM}"', lambda _: f'"name": "{FORGED[next(layer) % 2]}"', out.getvalue()).encode()

    traces = [trace(0), trace(1)]
    stored = fold_breakdown(combine(traces, names=["rank-0.json", "rank-1.json"]))
    straggler = next(r for r in stored.ranks if r.rank == 1)
    assert len({p.name for p in straggler.phases}) == len(straggler.phases) == 6
    target = short_name(FORGED[0], STORED_NAME_MAX)
    resolved = proposal_from_profile(msgspec.convert({"target": target, "k": 2, "profile_id": "run"}, Proposal), stored)
    events = [e for e in json.loads(traces[1])["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((e["ts"], round(e["dur"] * 1000)) for e in events if e["name"].startswith("ProfilerStep#"))[:-1]
    launch = {e["args"]["correlation"]: e["ts"] for e in events if e["cat"] == "cuda_runtime"}
    own = [
        round(e["dur"] * 1000)
        for e in events
        if e["name"] == FORGED[0] and any(s <= launch[e["args"]["correlation"]] < s + d / 1000 for s, d in steps)
    ]
    assert len(own) == 2  # once in each of the two measured steps
    assert resolved.p == pytest.approx(sum(own) / sum(d for _, d in steps))
    assert resolved.p == pytest.approx(0.311, abs=5e-4)


def test_a_name_stored_with_the_old_8_hex_digest_still_reads_shows_and_is_found() -> None:
    """A profile stored before the widening holds `head… [8 hex]` (16,384 characters): cut again it is left as it
    is, shown by the 200-character name it had then (its own digest kept), and found by that name and its head."""
    whole = "void old_kernel<" + "y" * 20_000 + ">(int*)"
    old = whole[: STORED_NAME_MAX - 12] + f"… [{blake(whole, 8)}]"  # how names were cut before
    assert len(old) == STORED_NAME_MAX
    assert short_name(old, STORED_NAME_MAX) == old
    shown = old[: 200 - 12] + f"… [{blake(whole, 8)}]"
    assert short_name(old) == shown
    assert cut_head(shown) == old[:188]
    assert cut_head(short_name(whole)) == whole[:180]
    phases = [
        Phase(name=n, kind="kernel", total_ns=1, calls=1, share_of_device=None, share_of_wall=None)
        for n in (old, whole[: STORED_NAME_MAX - 1] + "z")
    ]
    assert exact_phase(phases, shown) is phases[0]
    assert exact_phase(phases, old) is phases[0]


def test_a_whole_name_ending_like_a_cut_one_is_digested_not_taken_at_its_word() -> None:
    """Two names longer than 16,384 characters with one head and one forged "… [digest]" tail: only a stored cut is
    exactly that long, so these are digested whole and stay two names (before, both took the forged tail)."""
    tail = f"… [{'0' * 16}]"
    first = "k" * (STORED_NAME_MAX - 20) + "a" * 100 + tail
    second = "k" * (STORED_NAME_MAX - 20) + "b" * 100 + tail
    assert short_name(first, STORED_NAME_MAX) != short_name(second, STORED_NAME_MAX)
    assert short_name(first) != short_name(second)
    assert short_name(first, STORED_NAME_MAX).endswith(f"… [{blake(first, 16)}]")


# Two instantiations of one template that differ only past any column a table gives the name.
TEMPLATE = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<" + "c10::Half, " * 12
TWINS = (TEMPLATE + "float>>(int, at::native::FillFunctor<float>)", TEMPLATE + "double>>(int)")


@pytest.mark.parametrize("width", [40, 60, 80, 200])
def test_a_name_as_a_table_cuts_it_names_its_phase(width: int) -> None:
    """What `worthit profile` prints in a narrow name column (`head… [digest]`) is a target: the phase whose name
    begins as the cut does and whose whole name has that digest, never its twin with the same head."""
    phases = [
        Phase(name=name, kind="kernel", total_ns=1_000 * (i + 1), calls=1, share_of_device=None, share_of_wall=None)
        for i, name in enumerate(TWINS)
    ]
    for name in TWINS:
        digest = hashlib.blake2b(name.encode(), digest_size=8).hexdigest()
        printed = f"{name[: width - 16 - 4]}… [{digest}]"
        assert printed == short_name(name, width)
        found = exact_phase(phases, printed)
        assert found is not None
        assert found.name == name
    assert exact_phase(phases, f"{TEMPLATE[:30]}… [{'0' * 16}]") is None  # a digest no phase has
