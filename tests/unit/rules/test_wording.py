"""A converted check formats no number: its template reads figures it returned, and `rules.wording` writes it."""

from __future__ import annotations

import ast
import inspect
from types import ModuleType

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings

from tests.strategies import proposals
from worthit.rules.calibration import Calibration
from worthit.rules.checks import CHECKS
from worthit.rules.engine import check_alone, draft_alone
from worthit.rules.examples import Example
from worthit.rules.model import Proposal
from worthit.rules.policy import Policy, default_policy, policy_from_mapping
from worthit.rules.wording import FORMATS, Draft, fields, write

WORD_FORMATS = {"", "label"}
"""Format specs that print a word (a name), never a number."""


def _imports(module: ModuleType) -> set[str]:
    tree = ast.parse(inspect.getsource(module))
    return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}


CONVERTED = [module for module in CHECKS if "worthit.rules.wording" in _imports(module)]
EXAMPLES = [
    pytest.param(module, example, id=f"{module.ID}-{i}")
    for module in CONVERTED
    for i, example in enumerate(module.EXAMPLES)
]


def _policy(example: Example) -> Policy:
    base = default_policy()
    return policy_from_mapping({**msgspec.to_builtins(base), **example.policy}) if example.policy else base


def _holds_its_template(draft: Draft) -> None:
    """Every field of the draft's template is a figure it returned (a number) or one of its words (a name)."""
    for name, spec in (field for template in (draft.template, *draft.fallbacks) for field in fields(template)):
        if spec == "()":  # a formatter's argument: a figure (a number) or a word (a noun)
            assert name in draft.figures or name in draft.words, (draft.rule, name)
            continue
        kind = spec.partition("(")[0].removeprefix("-")
        assert kind in FORMATS or not kind, (draft.rule, name, spec)
        if kind in WORD_FORMATS and name in draft.words:
            assert isinstance(draft.words[name], str), (draft.rule, name)
            continue
        assert name in draft.figures, f"{draft.rule}'s template prints `{name}`, which is not among its figures"
        if not kind:  # printed as it is: a name the figures hold (a verdict, a model), never a number
            assert isinstance(draft.figures[name], str), (draft.rule, name, draft.figures[name])


def test_some_checks_are_converted() -> None:
    """The introspection below runs on something: at least one check writes through `rules.wording`."""
    assert CONVERTED


@pytest.mark.parametrize("module", CONVERTED, ids=lambda module: module.ID)
def test_a_converted_check_formats_no_number(module: ModuleType) -> None:
    """A check that writes through `rules.wording` imports no number formatter (`rules.text`) and no finding
    builder that writes a sentence (`rules.findings`' opposition, condition, carried)."""
    assert "worthit.rules.text" not in _imports(module)
    source = inspect.getsource(module)
    for builder in ("opposition(", "condition(", "carried(ctx, ID, figures"):
        assert f"findings import {builder}" not in source


@pytest.mark.parametrize(("module", "example"), EXAMPLES)
def test_every_field_of_a_template_is_a_figure_the_check_returned(module: ModuleType, example: Example) -> None:
    """On each of its examples, a converted check returns a draft whose template names only its figures and
    words, and the sentence written from it is the finding's message."""
    proposal = msgspec.convert(example.proposal, Proposal)
    calibration = msgspec.convert(example.calibration, Calibration) if example.calibration else None
    draft = draft_alone(module, proposal, _policy(example), calibration=calibration)
    if draft is None:
        assert not example.fires
        return
    assert isinstance(draft, Draft)
    _holds_its_template(draft)
    finding = check_alone(module, proposal, _policy(example), calibration=calibration)
    assert finding is not None
    assert finding.message == write(draft.template, draft.figures, draft.words, draft.fallbacks)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(proposal=proposals())
def test_on_any_proposal_a_converted_template_names_only_returned_figures(proposal: Proposal) -> None:
    """Over random proposals, every branch a converted check takes names only figures it returned."""
    for module in CONVERTED:
        draft = draft_alone(module, proposal, default_policy())
        if draft is not None:
            assert isinstance(draft, Draft)
            _holds_its_template(draft)


def test_a_template_prints_each_figure_by_its_named_formatter() -> None:
    """`{x:pct}` is `text.pct`, `{x:-pct}` its negation, a name is printed as it is, parts are said in order."""
    figures = {"share": 0.189, "slower": -0.05, "cost": 3.0}
    template = ("{target} saves {share:pct}", ", {slower:-pct} slower, for {cost:weeks}")
    written = write(template, figures, {"target": "t"})
    assert written == "t saves 18.9%, 5% slower, for 3 engineer-weeks."


def test_a_number_without_a_formatter_is_refused() -> None:
    """A figure printed without a named formatter would print Python's repr: the writer refuses it."""
    with pytest.raises(TypeError, match="format spec"):
        write("{share}", {"share": 0.25}, {})
