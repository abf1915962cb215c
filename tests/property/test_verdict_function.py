"""The pure verdict function (`verdict_at`: a range's corners, bisection, every probe) runs only the checks that
can move a verdict off `fund`; over random proposals and points it must give `decide`'s verdict over every check,
and no check may argue a verdict outside the `ARGUES` it declares (which is what lets the engine skip it)."""

from __future__ import annotations

import dataclasses
import math
from types import ModuleType

import msgspec
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from tests.strategies import proposals
from worthit.rules import engine
from worthit.rules.calibration import Calibration
from worthit.rules.context import POINT_FREE, Context, context
from worthit.rules.engine import decide, registry, run_checks
from worthit.rules.errors import InvalidInput
from worthit.rules.examples import Example
from worthit.rules.model import Finding, Proposal
from worthit.rules.policy import default_policy, policy_from_mapping
from worthit.rules.verdict import argued, argues, deciders, verdict_at
from worthit.rules.wording import Draft

POLICY = default_policy()
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=100)
BY_ID = {module.ID: module for module in registry()}
shares = st.sampled_from((1e-9, 1e-4, 0.004, 0.01, 0.2, 0.5, 0.999, 1.0)) | st.floats(min_value=1e-9, max_value=1.0)
speedups = st.sampled_from((0.5, 1.0, 1.001, 2.0, 10.0, 1e6, math.inf)) | st.floats(min_value=0.05, max_value=1e6)


def _holds(proposal: Proposal, p: float, k: float) -> None:
    try:
        findings = run_checks(proposal, POLICY, p, k, registry())
    except InvalidInput:  # a point the boundary would refuse for this proposal (its other shares no longer fit)
        with pytest.raises(InvalidInput):
            verdict_at(proposal, POLICY, p, k, registry())
        return
    assert verdict_at(proposal, POLICY, p, k, registry()) == decide(findings)[0]
    for finding in findings:
        verdict = argued(finding)
        if verdict is not None:
            assert verdict in argues(BY_ID[finding.rule]), (finding.rule, verdict, finding.message)


@SETTINGS
@given(proposal=proposals(), p=shares, k=speedups)
def test_the_verdict_function_is_decides_verdict_over_every_check(proposal: Proposal, p: float, k: float) -> None:
    _holds(proposal, p, k)


def test_only_checks_that_argue_fund_alone_are_skipped() -> None:
    """The skipped set is what the modules declare, and amdahl (the figures every proposal gets) is in it."""
    skipped = {module.ID for module in registry() if not argues(module) - {"fund"}}
    assert skipped == {"amdahl", "vendor_product"}


FOLLOW_UP = Proposal(target="attention_softmax", p=0.005, k=2.0, prior_k=10.0, baseline_ms=81.1)
"""ceiling's own example: a follow-up with too little left, which ceiling declines."""


def test_a_wrong_declaration_fails_the_property(monkeypatch: pytest.MonkeyPatch) -> None:
    """The property can fail both ways: a check declared to argue only fund that declines (the verdict function
    then skips it and says fund), and a check that argues a verdict it does not declare. (The engine reads the
    declarations once per registry: the cache is cleared around each change.)"""
    _holds(FOLLOW_UP, 0.005, 2.0)
    try:
        monkeypatch.setattr(BY_ID["ceiling"], "ARGUES", frozenset({"fund"}), raising=False)
        deciders.cache_clear()
        with pytest.raises(AssertionError):
            _holds(FOLLOW_UP, 0.005, 2.0)
        monkeypatch.undo()
        monkeypatch.setattr(BY_ID["amdahl"], "ARGUES", frozenset(), raising=False)
        deciders.cache_clear()
        with pytest.raises(AssertionError):
            _holds(Proposal(target="x", p=0.21, k=10.0), 0.21, 10.0)
    finally:
        monkeypatch.undo()
        deciders.cache_clear()
    _holds(FOLLOW_UP, 0.005, 2.0)


# --- a check asked for the verdict only (Context.verdict_only) ----------------------------------------------------

EXAMPLES = [
    pytest.param(module, example, id=f"{module.ID}-{i}")
    for module in registry()
    for i, example in enumerate(module.EXAMPLES)
]


def _left_out_only_fund_or_nothing(module: ModuleType, full: Context) -> None:
    """Asked for the verdict only, the check argues what it argues in full, or leaves out a finding that argued
    `fund` or nothing (or was carried by another rule's figure): the lowest rank, which no verdict can move."""
    quiet = dataclasses.replace(full, verdict_only=True)
    whole: Finding | Draft | None = module.check(full)
    said: Finding | Draft | None = module.check(quiet)
    if said is None:
        if whole is not None and whole.overridden_by is None:
            assert argued(whole) in (None, "fund"), (module.ID, whole)
        return
    assert whole is not None, module.ID
    assert (argued(said), said.overridden_by) == (argued(whole), whole.overridden_by), (module.ID, whole)


def _example_context(example: Example) -> Context:
    policy = POLICY if not example.policy else policy_from_mapping({**msgspec.to_builtins(POLICY), **example.policy})
    calibration = msgspec.convert(example.calibration, Calibration) if example.calibration else None
    return engine._context(msgspec.convert(example.proposal, Proposal), policy, registry(), calibration)


@pytest.mark.parametrize(("module", "example"), EXAMPLES)
def test_a_check_asked_for_the_verdict_only_argues_as_in_full_on_its_examples(
    module: ModuleType, example: Example
) -> None:
    """Every rule on every rule's examples: a rule's own examples reach each branch it argues from, and the others'
    reach more."""
    full = _example_context(example)
    for checked in registry():
        _left_out_only_fund_or_nothing(checked, full)


@SETTINGS
@given(proposal=proposals(), p=shares, k=speedups)
def test_a_check_asked_for_the_verdict_only_argues_as_in_full(proposal: Proposal, p: float, k: float) -> None:
    try:
        full = context(proposal, POLICY, p, k)
        run_checks(proposal, POLICY, p, k, registry())
    except InvalidInput:  # a point the boundary would refuse for this proposal
        reject()
    for module in registry():
        _left_out_only_fund_or_nothing(module, full)


def test_leaving_out_an_argued_finding_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The relation can fail: bigger_target leaving out its redirect (its own example) when only the verdict is
    asked is caught."""
    module = BY_ID["bigger_target"]
    real = module.check

    def careless(ctx: Context) -> Finding | None:
        return None if ctx.verdict_only else real(ctx)

    monkeypatch.setattr(module, "check", careless)
    redirects = [example for example in module.EXAMPLES if example.verdict == "redirect"]
    assert redirects
    with pytest.raises(AssertionError):
        _left_out_only_fund_or_nothing(module, _example_context(redirects[0]))


# --- the figures a range's corners share (context(..., like=...)) ----------------------------------------------------


@SETTINGS
@given(proposal=proposals(), first=st.tuples(shares, speedups), second=st.tuples(shares, speedups))
def test_point_free_figures_are_the_same_at_every_point(
    proposal: Proposal, first: tuple[float, float], second: tuple[float, float]
) -> None:
    """Each POINT_FREE figure, computed afresh at two points of one proposal, is the same: what lets a corner take
    them from the evaluation's own context."""
    try:
        one, two = context(proposal, POLICY, *first), context(proposal, POLICY, *second)
    except InvalidInput:  # a point the boundary would refuse for this proposal
        reject()
    for name in POINT_FREE:
        assert getattr(one, name) == getattr(two, name), name


def test_a_point_free_figure_that_is_not_fails() -> None:
    """The property can fail: the target's share of the breakdown depends on p when the target is not in it."""
    proposal = Proposal(target="x", p=0.2, k=2.0)
    assert context(proposal, POLICY, 0.2, 2.0).target_share != context(proposal, POLICY, 0.3, 2.0).target_share


def test_a_context_like_another_takes_its_point_free_figures() -> None:
    proposal = Proposal(target="x", p=0.2, k=2.0, baseline_ms=100.0)
    first = context(proposal, POLICY, 0.2, 2.0)
    assert first.baseline_ms == 100.0
    second = context(proposal, POLICY, 0.3, 4.0, like=first)
    assert second.__dict__["baseline_ms"] == 100.0  # taken, not computed: the lazy figure is already there
    assert "target_share" not in second.__dict__  # a figure of the point is computed at the point
