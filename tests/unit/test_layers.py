"""The layering of the README's "How it is built", checked on the real tree by the checker in tests/layering.py,
and the checker itself checked on small made-up trees (so a broken checker cannot pass silently)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.layering import (
    LAYERS,
    cross_package_imports,
    export_problems,
    find_cycle,
    import_graph,
    layer_violations,
    module_level_graph,
    module_names,
    private_imports,
    violations,
)

FAKE = {"rules": "worthit.rules", "service": "worthit.service"}


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for name, source in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    for folder in FAKE:
        (tmp_path / folder).mkdir(exist_ok=True)
    return module_names(tmp_path, FAKE)


def test_no_import_cycle_among_the_project_modules() -> None:
    """rules/, service/, migrations/ and benchmarks/ import one another without a cycle (function-level imports too)."""
    modules = module_names()
    assert "worthit.rules.engine" in modules
    assert "benchmarks.run" in modules
    assert find_cycle(import_graph(modules)) is None


def test_no_import_cycle_in_the_engine_at_module_level() -> None:
    """rules/ imports itself without a cycle at import time, counting the packages each import runs first; the
    engine imports none of the readers that import its model (what both read lives in leaves of rules/)."""
    modules = {name: path for name, path in module_names().items() if name.startswith("worthit.rules")}
    graph = module_level_graph(modules)
    assert "worthit.rules.phase_names" in graph["worthit.rules.model"]  # the checker sees the real tree's imports
    assert "worthit.rules.profiles.detect" in graph["worthit.rules.profiles"]
    assert find_cycle(graph) is None
    # the readers build the engine's proposal (profiles/proposal.py imports model), so the engine imports no reader
    engine = {name: edges for name, edges in graph.items() if not name.startswith("worthit.rules.profiles")}
    assert {
        name for name, edges in engine.items() if any(e.startswith("worthit.rules.profiles") for e in edges)
    } == set()


def test_a_cycle_through_a_package_run_first_is_found_and_a_function_level_import_is_not(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path,
        {
            "rules/model.py": "from worthit.rules.pkg.leaf import x\n",
            "rules/pkg/__init__.py": "from worthit.rules.pkg.reader import read\n",
            "rules/pkg/leaf.py": "x = 1\n",
            "rules/pkg/reader.py": "from worthit.rules.model import y\ndef read():\n    import worthit.rules.late\n",
            "rules/late.py": "import worthit.rules.pkg.reader\n",
        },
    )
    graph = module_level_graph(modules)
    assert graph["worthit.rules.model"] == {"worthit.rules.pkg", "worthit.rules.pkg.leaf"}
    assert graph["worthit.rules.pkg.reader"] == {"worthit.rules.model"}  # its own package is already running
    assert find_cycle(graph) == [
        "worthit.rules.pkg",
        "worthit.rules.pkg.reader",
        "worthit.rules.model",
        "worthit.rules.pkg",
    ]


def test_layers_hold() -> None:
    """rules/ is pure, services know no HTTP, all SQL is under service/db/, the offline commands need no server."""
    assert layer_violations(module_names()) == []


def test_the_profile_readers_reach_the_engine_only_through_the_proposal_they_build() -> None:
    """Besides proposal.py, rules/profiles imports from rules/ only itself, the error root `WorthitError`, the lazy
    names and the terminal escaping `printable`."""
    modules = module_names()
    readers = {name: path for name, path in modules.items() if name.startswith("worthit.rules.profiles")}
    assert "worthit.rules.profiles.proposal" in readers
    assert violations(readers, [LAYERS[4]]) == []
    outside = {
        target
        for name in readers
        for target in import_graph(modules)[name]
        if target.startswith("worthit.rules") and not target.startswith("worthit.rules.profiles")
    }
    # errors: WorthitError; model: proposal.py's; phase_names: a kernel's kind and the folded rest's prefix; names:
    # the terminal escaping of the table (report.py)
    assert outside == {
        "worthit.rules.errors",
        "worthit.rules.model",
        "worthit.rules.names",
        "worthit.rules.phase_names",
    }


def test_engine_imports_the_checks_and_the_checks_do_not_import_the_engine() -> None:
    """The former cycle engine ↔ checks: the edge now points one way."""
    graph = import_graph(module_names())
    assert "worthit.rules.checks" in graph["worthit.rules.engine"]
    assert all("worthit.rules.engine" not in graph[name] for name in graph if name.startswith("worthit.rules.checks"))


def test_the_kineto_reader_is_used_through_its_public_names() -> None:
    """Nothing outside rules/profiles/kineto/ imports or reads a private (`_x`) name of it: its parser
    and analyses can change inside the package without breaking detect.py, steps.py or the service."""
    modules = module_names()
    assert "worthit.rules.profiles.kineto.parse" in modules
    assert private_imports(modules, "worthit.rules.profiles.kineto") == []


def test_outside_rules_profiles_the_kineto_reader_is_imported_through_its_face() -> None:
    """service/ and benchmarks/ import the Kineto reader's names from `rules.profiles.kineto` (its `__all__`), never
    from its modules: parse, stream, steps and the analyses can be rearranged inside the package."""
    modules = module_names()
    graph = import_graph(modules)
    assert "worthit.rules.profiles.kineto" in graph["worthit.service.profiles.ranks"]
    inner = {
        f"{name} imports {target}"
        for name, targets in graph.items()
        if not name.startswith("worthit.rules.profiles")
        for target in targets
        if target.startswith("worthit.rules.profiles.kineto.")
    }
    assert inner == set()


def test_a_private_name_used_from_outside_a_package_is_caught(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path,
        {
            "rules/pkg/__init__.py": "from worthit.rules.pkg.inner import _ok_inside\n",
            "rules/pkg/inner.py": "_ok_inside = 1\n_x = 2\n",
            "rules/by_name.py": "from worthit.rules.pkg.inner import _x\n",
            "rules/by_attribute.py": "from worthit.rules.pkg import inner\nprint(inner._x)\n",
            "rules/public.py": "from worthit.rules.pkg import inner\nprint(inner.__name__)\n",
        },
    )
    assert sorted(private_imports(modules, "worthit.rules.pkg")) == [
        "worthit.rules.by_attribute reads worthit.rules.pkg.inner._x",
        "worthit.rules.by_name imports worthit.rules.pkg.inner._x",
    ]


def test_modules_imported_from_another_package_declare_what_they_export() -> None:
    """Every module of rules/ or service/ that another package imports has an `__all__`, and it lists every name
    taken from it: a module's public names are written down where they are defined, not inferred from its imports."""
    modules = module_names()
    taken = cross_package_imports(modules)
    assert "evaluate" in taken["worthit.rules.engine"]  # the checker sees the real tree's imports
    assert "worthit.service.client" in taken
    assert export_problems(modules) == []


def test_a_module_imported_across_packages_without_all_or_without_the_name_is_caught(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path,
        {
            "rules/bare.py": "def f(): ...\n",
            "rules/listed.py": '__all__ = ["f"]\ndef f(): ...\ndef g(): ...\n',
            "rules/pkg/__init__.py": "",
            "rules/pkg/near.py": "def h(): ...\n",
            "rules/pkg/user.py": "from worthit.rules.pkg.near import h\n",  # same package: no __all__ needed
            "service/by_name.py": "from worthit.rules.bare import f\nfrom worthit.rules.listed import f, g\n",
            "service/by_attribute.py": "from worthit.rules import listed\nlisted.g()\n",
            "service/shadowed.py": "from worthit.rules import listed\ndef cli():\n    listed = 1\n    listed.zap\n",
        },
    )
    assert export_problems(modules) == [
        "worthit.rules.bare has no __all__ (imported by worthit.service.by_name)",
        "worthit.rules.listed's __all__ lacks g (imported by worthit.service.by_attribute, worthit.service.by_name)",
    ]


def test_cycle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path,
        {
            "rules/a.py": "from worthit.rules.b import f\n",
            "rules/b.py": "def f():\n    from worthit.rules import a\n    return a\n",
        },
    )
    assert find_cycle(import_graph(modules)) == ["worthit.rules.a", "worthit.rules.b", "worthit.rules.a"]


def test_relative_and_package_imports_resolve(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path,
        {
            "service/__init__.py": "",
            "service/pkg/__init__.py": "from . import leaf\n",
            "service/pkg/leaf.py": "from ..top import x\n",
            "service/top.py": "import worthit.service.pkg\nx = 1\n",
        },
    )
    graph = import_graph(modules)
    assert graph["worthit.service.pkg"] == {"worthit.service.pkg.leaf"}
    assert graph["worthit.service.pkg.leaf"] == {"worthit.service.top"}
    assert find_cycle(graph) == [
        "worthit.service.pkg",
        "worthit.service.pkg.leaf",
        "worthit.service.top",
        "worthit.service.pkg",
    ]


def test_type_checking_imports_do_not_count(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path,
        {
            "rules/a.py": "import worthit.rules.b\n",
            "rules/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import worthit.rules.a\n",
        },
    )
    assert find_cycle(import_graph(modules)) is None


@pytest.mark.parametrize(
    ("name", "source", "why"),
    [
        ("rules/x.py", "from worthit.service.app import create_app\n", "rules/ is the pure engine"),
        ("service/decisions.py", "def f():\n    import litestar\n", "domain services know neither HTTP"),
        ("service/outcomes.py", "from worthit.service import http\n", "domain services know neither HTTP"),
        ("service/present/x.py", "from sqlalchemy import select\n", "every SQL statement lives under service/db/"),
        ("service/http/x.py", "from sqlalchemy.exc import IntegrityError\n", "the HTTP layer knows no database driver"),
        ("service/gate/report.py", "from worthit.service.http.codec import decode_strict\n", "the offline gate"),
        ("rules/profiles/fold.py", "from worthit.rules.model import REST_PREFIX\n", "the profile readers' only link"),
        ("rules/profiles/errors.py", "from worthit.rules.errors import InvalidInput\n", "the profile readers' only"),
        ("rules/profiles/kineto/parse.py", "from worthit.rules import text\n", "the profile readers' only link"),
    ],
)
def test_a_forbidden_import_is_caught(tmp_path: Path, name: str, source: str, why: str) -> None:
    problems = layer_violations(_tree(tmp_path, {name: source}))
    assert len(problems) == 1
    assert why in problems[0]


def test_what_the_layers_allow_passes(tmp_path: Path) -> None:
    modules = _tree(
        tmp_path,
        {
            "service/db/x.py": "from sqlalchemy import select\n",
            "service/api/y.py": "import litestar\nfrom worthit.service.errors import Conflict\n",
            "service/app.py": "from sqlalchemy.exc import SQLAlchemyError\n",
            "service/decisions.py": "from worthit.service.db import x\nfrom worthit.rules import engine\n",
            "rules/profiles/proposal.py": "from worthit.rules.model import Proposal\n",
            "rules/profiles/errors.py": "from worthit.rules.errors import WorthitError\n",
            "rules/profiles/stored_steps.py": "from worthit.rules.profiles.kineto import StepRange\n",
        },
    )
    assert layer_violations(modules) == []


PROBE = """
import json, sys
from worthit.service.cli import main
watched = set(sys.argv.pop(1).split(','))
try:
    code = main(sys.argv[1:])
except SystemExit as exit_:  # --version
    code = exit_.code
heavy = sorted({m.split('.')[0] for m in sys.modules} & watched)
print(json.dumps({"code": code, "heavy": heavy}))
"""
# The server's packages and the profile readers' columnar engine: none is needed to review a proposal offline.
HEAVY = (
    "litestar",
    "sqlalchemy",
    "alembic",
    "asyncpg",
    "aiosqlite",
    "uvicorn",
    "jinja2",
    "prometheus_client",
    "polars",
)


@pytest.mark.parametrize(
    "argv",
    [
        ["review", "proposal.json"],
        ["review", "--json", "proposal.json"],
        ["review", "proposal.yaml"],
        ["gate", "--body", "pr.md"],
        ["rules", "fleet_multiplication"],
        ["review", "--explain", "proposal.json"],
        ["--version"],
        ["plan", "plan.json"],
    ],
)
def test_offline_commands_import_neither_the_server_nor_polars(tmp_path: Path, argv: list[str]) -> None:
    """`worthit review`, `gate`, `rules`, `plan` and `--version` run in a process of their own without the web
    framework, the database or polars (each would cost them hundreds of milliseconds of start-up)."""
    (tmp_path / "plan.json").write_text('{"target_speedup": 1.1, "breakdown": [{"name": "a", "ms": 60}]}')
    (tmp_path / "proposal.json").write_text('{"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100}')
    (tmp_path / "proposal.yaml").write_text("target: attention_softmax\np: 21%\nk: 10x\nbaseline_ms: 100ms\n")
    (tmp_path / "pr.md").write_text("```worthit\ntarget: attention_softmax\np: 21%\nk: 10\n```\n")
    result = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(HEAVY), *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    probe = json.loads(result.stdout.strip().splitlines()[-1])
    assert probe == {"code": 0, "heavy": []}, result.stderr
