"""A glob that names several kernels of one template targets them together: a family of instantiations."""

from __future__ import annotations

import pytest

from worthit.rules.errors import InvalidInput
from worthit.rules.model import Proposal
from worthit.rules.profiles.model import Breakdown, Phase
from worthit.rules.profiles.proposal import proposal_from_profile

WALL_MS, BUSY_MS = 100.0, 80.0
SGEMM = {  # four instantiations of one cuDNN template, as the ResNet-50 trace has them
    "void cudnn::detail::implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>": 10.0,
    "void cudnn::detail::implicit_convolve_sgemm<float, float, 128, 6, 7, 3, 3, 5, 1, false, false, true>": 8.0,
    "void cudnn::detail::implicit_convolve_sgemm<float, float, 512, 6, 8, 3, 3, 5, 1, false, false, true>": 6.0,
    "void cudnn::detail::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false, false, true>": 4.0,
}


def _phase(name: str, ms: float, kind: str = "kernel") -> Phase:
    ns = round(ms * 1e6)
    return Phase(
        name=name,
        kind=kind,  # type: ignore[arg-type]
        total_ns=ns,
        calls=3,
        share_of_device=ms / BUSY_MS,
        share_of_wall=ms / WALL_MS,
    )


def _breakdown() -> Breakdown:
    phases = [_phase(name, ms) for name, ms in SGEMM.items()]
    phases += [_phase("void at::native::vectorized_elementwise_kernel<4>", 40.0), _phase("Memcpy HtoD", 12.0, "copy")]
    return Breakdown(
        format="pytorch_trace",
        wall_ns=round(WALL_MS * 1e6),
        device_busy_ns=round(BUSY_MS * 1e6),
        phases=phases,
        inclusive=False,
    )


def test_a_glob_over_a_family_targets_every_instantiation_together() -> None:
    """`*implicit_convolve_sgemm*` is the four kernels' 28 ms together: p 28/80 of device activity, 28/100 of the
    run, and the note names how many phases it added."""
    proposal = proposal_from_profile(Proposal(target="*implicit_convolve_sgemm*", k=2, profile_id="p1"), _breakdown())
    family_ms = sum(SGEMM.values())
    assert proposal.p == pytest.approx(family_ms / BUSY_MS, rel=1e-12)
    assert proposal.p_end_to_end == pytest.approx(family_ms / WALL_MS, rel=1e-12)
    assert proposal.target == "*implicit_convolve_sgemm*"
    assert proposal.baseline_ms == pytest.approx(BUSY_MS, rel=1e-12)


def test_a_name_that_finds_one_phase_is_still_that_phase_alone() -> None:
    """Without a glob a name must still find one phase: the family is asked for by a pattern, never guessed."""
    with pytest.raises(InvalidInput) as refused:
        proposal_from_profile(Proposal(target="implicit_convolve_sgemm", k=2, profile_id="p1"), _breakdown())
    assert refused.value.pointer == "/target"
    one = proposal_from_profile(Proposal(target="*1024, 5, 5*", k=2, profile_id="p1"), _breakdown())
    assert one.p == pytest.approx(4.0 / BUSY_MS, rel=1e-12)


def test_a_glob_over_phases_of_several_kinds_is_not_a_family() -> None:
    """A kernel and a copy are no family: the glob stays ambiguous, refused listing what it matched."""
    with pytest.raises(InvalidInput) as refused:
        proposal_from_profile(Proposal(target="*[MH]*", k=2, profile_id="p1"), _breakdown())
    assert refused.value.pointer == "/target"
