"""The registry and every rule's own examples (Fixit's VALID/INVALID), run by one parametrised test."""

from __future__ import annotations

import dataclasses
import inspect
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import msgspec
import pytest

import worthit.rules.checks
from tests.layering import io_problems
from worthit.rules.calibration import Calibration
from worthit.rules.checks import BY_ID, CHECKS
from worthit.rules.engine import check_alone, evaluate
from worthit.rules.examples import Example
from worthit.rules.model import Finding, Proposal, Verdict
from worthit.rules.policy import Policy, default_policy, policy_from_mapping
from worthit.rules.verdict import argued
from worthit.rules.wording import Draft

RULES_DIR = Path(worthit.rules.__file__).parent
REPO = RULES_DIR.parent
PRODUCT = REPO.parent / "shared" / "docs" / "PRODUCT.md"


def _documented_ids(readme: str) -> set[str]:
    """The rule ids README lists for users ("The rules — `amdahl`, … — explain themselves"), read once: the one
    list besides the registry, so a rule added or removed on one side only fails here."""
    start = readme.index("The rules — ")
    listing = readme[start : readme.index(" — explain themselves", start)]
    return set(re.findall(r"`([a-z_]+)`", listing))


ALWAYS_FIRES = {"amdahl", "ceiling"}

EXAMPLES = [
    pytest.param(module, example, id=f"{module.ID}-{i}")
    for module in CHECKS
    for i, example in enumerate(module.EXAMPLES)
]


def _policy(example: Example) -> Policy:
    base = default_policy()
    if not example.policy:
        return base
    return policy_from_mapping({**msgspec.to_builtins(base), **example.policy})


def _calibration(example: Example) -> Calibration | None:
    return msgspec.convert(example.calibration, Calibration) if example.calibration else None


def check_example(module: ModuleType, example: Example) -> None:
    """The rule alone fires (or not) as its example says, argues the stated verdict (none for `info`), and its
    finding carries the stated figures."""
    proposal = msgspec.convert(example.proposal, Proposal)
    finding = check_alone(module, proposal, _policy(example), calibration=_calibration(example))
    assert (finding is not None) == example.fires, finding
    if finding is None:
        return
    assert argued(finding) == example.verdict, (finding.effect, finding.verdict, finding.message)
    for name, expected in example.figures.items():
        got = finding.figures.get(name)
        assert isinstance(got, int | float), (name, got)
        assert got == pytest.approx(expected, rel=1e-3), name


@pytest.mark.parametrize(("module", "example"), EXAMPLES)
def test_rule_example(module: ModuleType, example: Example) -> None:
    """Each rule, run alone on its own examples, does what they say (Fixit's runner given `[rule]`)."""
    check_example(module, example)


DECISIONS = [param for param in EXAMPLES if param.values[1].decision is not None]  # type: ignore[union-attr]


@pytest.mark.parametrize(("module", "example"), DECISIONS)
def test_engine_decision_on_a_rule_example(module: ModuleType, example: Example) -> None:
    """Where an example states the whole engine's decision, the registry together reaches it (tested apart)."""
    evaluation = evaluate(
        msgspec.convert(example.proposal, Proposal), _policy(example), calibration=_calibration(example)
    )
    assert evaluation.verdict == example.decision, evaluation.statement


OPPOSITE: dict[Verdict | None, Verdict] = {
    "fund": "decline",
    "fund_if": "fund",
    "decline": "fund",
    "redirect": "fund",
    "remeasure": "fund",
    None: "decline",
}
"""The verdict a reversed rule argues instead: funding what it opposed, opposing what it funded or noted."""


def _reversed(module: ModuleType) -> ModuleType:
    """A copy of `module` whose check argues the opposite of what the real one argues, with the same figures."""
    real = module.check

    def check(ctx: object) -> Finding | Draft | None:
        finding = real(ctx)
        if finding is None:
            return None
        verdict = OPPOSITE[argued(finding)]
        effect = "supports" if verdict == "fund" else "opposes"
        if isinstance(finding, Draft):
            return dataclasses.replace(finding, verdict=verdict, effect=effect)
        return msgspec.structs.replace(finding, verdict=verdict, effect=effect)

    mutant = ModuleType(module.__name__)
    mutant.__dict__.update({**module.__dict__, "check": check})
    return mutant


@pytest.mark.parametrize("module", CHECKS, ids=lambda m: m.ID)
def test_reversing_a_rule_fails_its_own_examples(module: ModuleType) -> None:
    """A mutant of the rule that argues the opposite verdict fails at least one of its examples: the examples test
    the rule, not the engine around it (in 15 of 55 examples another rule used to decide)."""
    mutant = _reversed(module)
    caught = 0
    for example in module.EXAMPLES:
        try:
            check_example(mutant, example)
        except AssertionError:
            caught += 1
    assert caught, f"{module.ID}: its examples pass with the rule reversed"


def test_ids_are_unique_and_each_is_documented() -> None:
    """Every rule README lists is registered exactly once, and nothing else is."""
    ids = [module.ID for module in CHECKS]
    assert len(ids) == len(set(ids))
    assert set(ids) == _documented_ids((REPO / "README.md").read_text(encoding="utf-8"))
    assert set(BY_ID) == set(ids)


@pytest.mark.skipif(not PRODUCT.is_file(), reason=f"the product spec is not checked out at {PRODUCT}")
def test_every_rule_of_the_product_table_is_registered() -> None:
    """PRODUCT §4's table names the original rules (`consistency` stands for `estimate` too): each is registered."""
    spec = PRODUCT.read_text(encoding="utf-8")
    table = spec[spec.index("## 4. The rules") : spec.index("## 5.")]
    ids = set(re.findall(r"^\| `([a-z_]+)`", table, flags=re.MULTILINE))
    assert len(ids) > 20, "the table's rows were not read"
    assert ids <= set(BY_ID)


def test_every_check_module_is_registered() -> None:
    """A module under rules/checks/ that is not in CHECKS would silently never run."""
    found = {info.name for info in pkgutil.iter_modules(worthit.rules.checks.__path__)}
    assert found == {module.__name__.rsplit(".", 1)[-1] for module in CHECKS}


@pytest.mark.parametrize("module", CHECKS, ids=lambda m: m.ID)
def test_rule_module_shape(module: ModuleType) -> None:
    """One rule, one module: ID named after the file, an explaining docstring, examples, one pure check()."""
    assert module.__name__.rsplit(".", 1)[-1] == module.ID
    doc = inspect.cleandoc(module.__doc__ or "")
    assert doc.startswith(f"{module.ID} — ")
    for section in ("What it checks:", "Why it matters:", "Example:"):
        assert section in doc, section
    assert module.EXAMPLES
    assert all(isinstance(example, Example) for example in module.EXAMPLES)
    assert list(inspect.signature(module.check).parameters) == ["ctx"]


@pytest.mark.parametrize("module", CHECKS, ids=lambda m: m.ID)
def test_rule_examples_cover_firing_not_firing_and_figures(module: ModuleType) -> None:
    """Every rule shows a case where it fires with figures, and (unless it always fires) one where it does not."""
    assert any(example.fires and example.figures for example in module.EXAMPLES)
    if module.ID not in ALWAYS_FIRES:
        assert any(not example.fires for example in module.EXAMPLES)


def _rules_files() -> list[Path]:
    return sorted(RULES_DIR.rglob("*.py"))


@pytest.mark.parametrize("path", _rules_files(), ids=lambda p: str(p.relative_to(RULES_DIR.parent)))
def test_rules_layer_imports_no_io(path: Path) -> None:
    """rules/ is pure: no service layer, web framework, database driver, network or file I/O (in-memory io is fine)."""
    assert not io_problems(path.read_text(encoding="utf-8")), path


@pytest.mark.parametrize(
    "source",
    [
        "import sqlalchemy",
        "from worthit.service.app import create_app",
        "import os.path",
        "from os import environ",
        "open('x')",
        "def f():\n    import litestar",
        "x = os.environ",
    ],
)
def test_io_check_catches_a_forbidden_import(source: str) -> None:
    """The checker the test above calls catches each kind of forbidden import or call, function-level ones too."""
    assert io_problems(source), source


def test_io_check_passes_pure_code() -> None:
    """…and passes what rules/ may do: msgspec, math, in-memory io, and its own modules."""
    assert io_problems("import io\nimport math\nimport msgspec\nfrom worthit.rules import amdahl\n") == []


def test_default_policy_documents_every_key() -> None:
    """Every field of Policy is set in default.toml, right under a comment that explains it."""
    lines = (RULES_DIR / "policies" / "default.toml").read_text(encoding="utf-8").splitlines()
    keys = {line.split("=")[0].strip(): i for i, line in enumerate(lines) if "=" in line and not line.startswith("#")}
    undocumented = {"name", "version", "description"}
    for field in Policy.__struct_fields__:
        if field == "gate":
            assert "[gate]" in lines
            continue
        assert field in keys, f"{field} missing from default.toml"
        if field not in undocumented:
            assert lines[keys[field] - 1].startswith("#"), f"{field} has no comment"
    shipped = msgspec.to_builtins(default_policy())
    defaults = msgspec.to_builtins(Policy(name="default", description=default_policy().description))
    assert shipped == defaults, "the Policy struct's defaults mirror default.toml"
