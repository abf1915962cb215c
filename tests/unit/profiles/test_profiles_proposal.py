"""A proposal built from a profile: the target found by the name the report shows, every figure checked against the
test's own reading of the JSON."""

from __future__ import annotations

import io
import itertools
import json
import re
from typing import Literal

import msgspec
import pytest

from tests.kineto_traces import ELEMENTWISE, GEMM, Shape, write
from worthit.rules.errors import InvalidInput
from worthit.rules.model import Phase as ProposalPhase
from worthit.rules.model import Proposal
from worthit.rules.profiles import combine
from worthit.rules.profiles.fold import MAX_PHASES, REST_PREFIX, fold_phases
from worthit.rules.profiles.model import Phase
from worthit.rules.profiles.naming import short_name
from worthit.rules.profiles.proposal import fold_proposal_phases, proposal_from_profile

from .conftest import fixtures_dir

RANKS = [fixtures_dir() / "real" / "pytorch" / f"trace_filter_sampled_rank-{i}.json.gz" for i in (0, 1)]
real = pytest.mark.skipif(not all(p.is_file() for p in RANKS), reason="the shared real fixtures are not checked out")


def distinct_kernels(shape: Shape) -> bytes:
    """`shape`'s trace with every GEMM launch its own kernel (``gemm_r<rank>_<n>``): each rank runs a kernel set of
    its own, thousands of names in all, as JIT-specialised kernels do."""
    out = io.StringIO()
    write(out, shape)
    counter = itertools.count()
    text = re.sub(rf'"name": "{GEMM}"', lambda _: f'"name": "gemm_r{shape.rank}_{next(counter)}"', out.getvalue())
    return text.encode()


def ns(us: float) -> int:
    return round(us * 1000)


@pytest.mark.parametrize("shown", [False, True], ids=["whole name", "display name"])
def test_a_kernel_of_a_run_is_named_in_full_though_its_signature_holds_glob_characters(shown: bool) -> None:
    """The elementwise kernel's signature (330 characters, ``char*``) over 8 ranks of 600 GEMM names each: its whole
    name, or the display name the report shows (``… [digest]``), finds it on the straggler. Both were refused as
    globs over more names than the glob budget allows; p is its time per measured step over the step, here."""
    ranks, straggler = 8, 3
    traces = [
        distinct_kernels(
            Shape(
                rank=r,
                world_size=ranks,
                steps=3,
                layers=300,
                compute_scale=1.25 if r == straggler else 1.0,
                lead_scale=1.25,
            )
        )
        for r in range(ranks)
    ]
    b = combine(traces, names=[f"rank-{r}.json" for r in range(ranks)])
    assert len(ELEMENTWISE) > 200
    assert "*" in ELEMENTWISE
    name = short_name(ELEMENTWISE) if shown else ELEMENTWISE
    assert "[" in short_name(ELEMENTWISE)
    resolved = proposal_from_profile(msgspec.convert({"target": name, "k": 2, "profile_id": "run"}, Proposal), b)
    events = [e for e in json.loads(traces[straggler])["traceEvents"] if e.get("ph") == "X"]
    steps = sorted((ns(e["ts"]), ns(e["dur"])) for e in events if e["name"].startswith("ProfilerStep#"))[:-1]
    launch = {e["args"]["correlation"]: ns(e["ts"]) for e in events if e["cat"] == "cuda_runtime"}
    elementwise = [
        ns(e["dur"])
        for e in events
        if e["name"] == ELEMENTWISE and steps[0][0] <= launch[e["args"]["correlation"]] < sum(steps[-1])
    ]
    assert len(elementwise) == 2 * 300
    assert resolved.target == short_name(ELEMENTWISE)
    assert resolved.p == pytest.approx(sum(elementwise) / sum(d for _, d in steps))
    assert resolved.flags.barrier is not None
    assert resolved.flags.barrier.critical_path  # a compute kernel on the straggler


@real
def test_every_device_phase_of_the_two_real_ranks_is_named_by_its_whole_and_its_display_name() -> None:
    """The 198 device phase names of the HTA two-rank set (95 whole names and 133 display names hold `*`, `?` or
    `[`): each found by its whole name and by its display name, as the phase of that name (before: 92 and 130 of
    them refused as globs over the ranks' 120,418 characters of names)."""
    b = combine([p.read_bytes() for p in RANKS], names=[p.name for p in RANKS])
    names = {p.name for r in b.ranks for p in r.phases}
    assert len(names) == 198
    refused = []
    for name in sorted(names):
        for given in (name, short_name(name)):
            proposal = msgspec.convert({"target": given, "k": 2, "profile_id": "run"}, Proposal)
            try:
                resolved = proposal_from_profile(proposal, b)
            except InvalidInput as exc:
                refused.append((given, exc))
                continue
            assert resolved.target == short_name(name)
    assert refused == []


def test_a_kind_with_one_phase_beyond_the_largest_keeps_its_name_when_folded() -> None:
    """100 kernels of 1,000 ns down to 901 ns, an 800 ns copy and a 700 ns memset folded to `MAX_PHASES`: the 39
    kernels beyond the largest 61 (61 + 1 rest + 2 single phases = 64) are one "rest" phase of their summed time,
    and the copy and the memset stay by name (before: "(the rest: 1 copy phases)", "(the rest: 1 other phases)"),
    in a stored profile's fold as in a proposal's."""
    kernels: list[tuple[str, Literal["kernel", "copy", "other"], int]] = [
        (f"k{i:03d}", "kernel", 1_000 - i) for i in range(100)
    ]
    rows = [*kernels, ("H2D copy", "copy", 800), ("Memset (Device)", "other", 700)]
    phases = [Phase(name=n, kind=k, total_ns=t, calls=1, share_of_device=None, share_of_wall=None) for n, k, t in rows]
    proposal = [ProposalPhase(name=n, ms=t / 1e6, kind=k) for n, k, t in rows]
    for folded in (
        [(p.name, p.kind, p.total_ns / 1e6) for p in fold_phases(phases, MAX_PHASES)],
        [(p.name, p.kind, p.ms) for p in fold_proposal_phases(proposal, MAX_PHASES)],
    ):
        assert len(folded) == MAX_PHASES
        assert folded[:61] == [(n, k, t / 1e6) for n, k, t in kernels[:61]]
        assert folded[61:] == [
            (f"{REST_PREFIX}39 kernel phases)", "kernel", pytest.approx(sum(t for _, _, t in kernels[61:]) / 1e6)),
            ("H2D copy", "copy", 800 / 1e6),
            ("Memset (Device)", "other", 700 / 1e6),
        ]
