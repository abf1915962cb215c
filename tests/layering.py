"""The project's layering, computed from the source with `ast`: the import graph, its cycles, and forbidden edges.

One implementation, used by tests/unit/test_layers.py on the real tree and tested there on small made-up trees,
so a broken checker cannot pass silently. Every import counts, at module level or inside a function; only those
under `if TYPE_CHECKING:` are left out (they never run).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Folder → import name (setuptools' package-dir in pyproject.toml); benchmarks/ runs from the checkout.
FOLDERS = {"rules": "worthit.rules", "service": "worthit.service", "migrations": "worthit.migrations"}
SCRIPTS = {"benchmarks": "benchmarks"}

Graph = dict[str, set[str]]


def module_names(root: Path = ROOT, folders: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Every module of the given folders by its import name (`rules/checks/ceiling.py` → `worthit.rules.checks…`)."""
    folders = {**FOLDERS, **SCRIPTS} if folders is None else folders
    names: dict[str, Path] = {}
    for folder, package in folders.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            names[".".join([package, *parts])] = path
    return names


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(source: str, module: str, *, package: bool = False, module_level: bool = False) -> list[tuple[str, str]]:
    """Every import of `source` (the text of `module`), absolute and in order, as (name, origin) pairs.

    `import a.b` is `("a.b", "a.b")`; `from a import b` is `("a.b", "a")`: the name is a module when `b` is a
    submodule, else the origin is. With `module_level`, only the imports that run when the module is imported (none
    inside a function).
    """
    found: list[tuple[str, str]] = []
    base = module.split(".") if package else module.split(".")[:-1]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if module_level and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - node.level + 1]
                origin = ".".join([*anchor, node.module] if node.module else anchor)
            else:
                origin = node.module or ""
            found.extend((f"{origin}.{alias.name}", origin) for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def _imports_of(path: Path, name: str) -> list[tuple[str, str]]:
    return imported(path.read_text(encoding="utf-8"), name, package=path.name == "__init__.py")


def import_graph(modules: Mapping[str, Path]) -> Graph:
    """Module → the project's modules it imports (each import resolved to the most specific module it names)."""
    graph: Graph = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for target, origin in _imports_of(path, name):
            resolved = target if target in modules else origin
            if resolved in modules and resolved != name:
                edges.add(resolved)
        graph[name] = edges
    return graph


def module_level_graph(modules: Mapping[str, Path]) -> Graph:
    """Module → the project's modules that run when it is imported: its imports outside functions, each with the
    packages on its path (importing `a.b.c` runs `a/__init__` and `a/b/__init__` first) other than the importer's own
    (already running). A cycle here is one Python meets at import time, however each module is reached."""
    graph: Graph = {}
    for name, path in modules.items():
        own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        if path.name == "__init__.py":
            own.add(name)
        edges: set[str] = set()
        for target, origin in imported(
            path.read_text(encoding="utf-8"), name, package=path.name == "__init__.py", module_level=True
        ):
            resolved = target if target in modules else origin
            if resolved not in modules or resolved == name:
                continue
            edges.add(resolved)
            parts = resolved.split(".")
            edges.update(
                package
                for package in (".".join(parts[:i]) for i in range(1, len(parts)))
                if package in modules and package not in own
            )
        graph[name] = edges
    return graph


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One import cycle as `[a, b, …, a]`, or None when the graph has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def private_imports(modules: Mapping[str, Path], package: str) -> list[str]:
    """`module imports name` for every private (``_x``) name of `package` used from outside it: imported by name,
    or read as an attribute of one of its modules (``kineto.parse._ns``)."""
    problems: list[str] = []
    for name, path in modules.items():
        if _within(name, (package,)):
            continue
        source = path.read_text(encoding="utf-8")
        bound: set[str] = set()
        for target, origin in imported(source, name, package=path.name == "__init__.py"):
            if not _within(origin, (package,)) and not _within(target, (package,)):
                continue
            if any(map(_private, target.split("."))):
                problems.append(f"{name} imports {target}")
            if target in modules:
                bound.add(target)
        if not bound:
            continue
        read = _attributes_read(source, bound)
        problems += [f"{name} reads {module}.{attr}" for module, attr in read if _private(attr)]
    return problems


def _attributes_read(source: str, bound: set[str]) -> list[tuple[str, str]]:
    """(module, attribute) for each attribute `source` reads of a module of `bound` it imported (``inner._x``)."""
    aliases = _aliases(ast.parse(source), bound)
    return [
        (aliases[node.value.id], node.attr)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
    ]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _aliases(tree: ast.AST, bound: set[str]) -> dict[str, str]:
    """Local names of the modules in `bound` (``from a import b`` binds ``b``; ``import a.b as c`` binds ``c``)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((alias.asname, alias.name) for alias in node.names if alias.asname and alias.name in bound)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in bound:
                    names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


@dataclass(frozen=True)
class Rule:
    """Modules whose name starts with one of `modules` import nothing starting with one of `forbidden`."""

    why: str
    modules: tuple[str, ...]
    forbidden: tuple[str, ...]
    allowed: tuple[str, ...] = ()
    """Exceptions to `forbidden` (e.g. `sqlalchemy.exc` for catching the database's errors)."""
    exempt: tuple[str, ...] = ()
    """Modules among `modules` the rule does not cover."""


def _within(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def violations(modules: Mapping[str, Path], rules: Iterable[Rule]) -> list[str]:
    """`module imports name (why)` for every import a rule forbids, third-party packages included."""
    problems: list[str] = []
    for rule in rules:
        for name, path in modules.items():
            if not _within(name, rule.modules) or _within(name, rule.exempt):
                continue
            for target, _ in dict.fromkeys(_imports_of(path, name)):
                if _within(target, rule.forbidden) and not _within(target, rule.allowed):
                    problems.append(f"{name} imports {target} ({rule.why})")
    return problems


DOMAIN_SERVICES = tuple(
    f"worthit.service.{name}"
    for name in (
        "decisions",
        "outcomes",
        "policies",
        "profiles",
        "tokens",
        "errors",
        "metrics",
        "validation",
        "units",
    )
)
OFFLINE = ("worthit.service.gate", "worthit.service.client", "worthit.service.present.render", "worthit.service.units")

LAYERS = (
    Rule(
        "rules/ is the pure engine",
        ("worthit.rules",),
        ("worthit.service", "worthit.migrations", "benchmarks", "litestar", "sqlalchemy", "alembic", "httpx"),
    ),
    Rule(
        "domain services know neither HTTP nor litestar",
        DOMAIN_SERVICES,
        ("worthit.service.api", "worthit.service.http", "worthit.service.app", "litestar"),
    ),
    Rule(
        "every SQL statement lives under service/db/",
        ("worthit.service", "worthit.rules"),
        ("sqlalchemy",),
        allowed=("sqlalchemy.exc", "sqlalchemy.ext.asyncio"),
    ),
    Rule(
        "the offline gate and review run without the web framework or the database",
        OFFLINE,
        ("litestar", "sqlalchemy", "worthit.service.http", "worthit.service.api", "worthit.service.db"),
    ),
    # The readers could leave rules/ as a package of their own: bytes in, a Proposal out through one module.
    # WorthitError is the one root of every domain error (STYLE 11: rules/errors.py, a leaf importing nothing), so
    # `except WorthitError` catches a ProfileError as it catches an InvalidInput. rules/phase_names.py is no part of
    # the engine either: a leaf (re alone) that the readers and the engine read a kernel's kind from.
    # `rules.names.printable` is a leaf as well (`re` alone): the one escaping of text for a terminal, which the
    # readers' table (profiles/report.py) shares with every other surface that prints what a file holds.
    Rule(
        "the profile readers' only link to the engine is the proposal they build (profiles/proposal.py)",
        ("worthit.rules.profiles",),
        ("worthit.rules",),
        allowed=(
            "worthit.rules.profiles",
            "worthit.rules.errors.WorthitError",
            "worthit.rules.phase_names",
            "worthit.rules.names.printable",
        ),
        exempt=("worthit.rules.profiles.proposal",),
    ),
    Rule(
        "the HTTP layer knows no database driver: service/db/ turns its errors into domain errors",
        ("worthit.service.http", "worthit.service.api"),
        ("sqlalchemy", "asyncpg", "aiosqlite", "sqlite3"),
    ),
)
SQL_HOME = ("worthit.service.db", "worthit.migrations")


def sql_violations(modules: Mapping[str, Path]) -> list[str]:
    """Imports of SQLAlchemy's statement builders outside service/db/ and migrations/ (types and errors are fine)."""
    outside = {name: path for name, path in modules.items() if not _within(name, SQL_HOME)}
    return violations(outside, [LAYERS[2]])


def layer_violations(modules: Mapping[str, Path]) -> list[str]:
    """Every layering rule of the README's architecture section, on `modules`."""
    return [
        *violations(modules, [LAYERS[0], LAYERS[1], LAYERS[3], LAYERS[4], LAYERS[5]]),
        *sql_violations(modules),
    ]


# The modules whose names other packages use: their `__all__` says which names those are.
EXPORTERS = ("worthit.rules", "worthit.service")


def _package(name: str, path: Path) -> str:
    """The package a module belongs to: a package's `__init__` is its own, any other module its parent's."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def cross_package_imports(modules: Mapping[str, Path]) -> dict[str, dict[str, set[str]]]:
    """Module of rules/ or service/ → each name other packages take from it → the modules taking it (`""` for the
    module itself, imported whole). A name is taken by `from m import name` or read as an attribute of an imported
    module (``engine.evaluate``, when `engine` binds the name: a local of the same name as the module, like cli's
    `migrate` parser, is not the module); a submodule imported by name is the submodule's own import."""
    taken: dict[str, dict[str, set[str]]] = {}
    bound_by: dict[str, set[str]] = {}

    def binds(target: str) -> set[str]:
        if target not in bound_by:
            bound_by[target] = _top_level_names(ast.parse(modules[target].read_text(encoding="utf-8")).body)
        return bound_by[target]

    def take(importer: str, target: str, name: str) -> None:
        if (
            target != importer
            and _within(target, EXPORTERS)
            and _package(importer, modules[importer]) != _package(target, modules[target])
        ):
            taken.setdefault(target, {}).setdefault(name, set()).add(importer)

    for importer, path in modules.items():
        source = path.read_text(encoding="utf-8")
        bound: set[str] = set()
        for target, origin in imported(source, importer, package=path.name == "__init__.py"):
            if target in modules:
                take(importer, target, "")
                bound.add(target)
            elif origin in modules:
                take(importer, origin, target.rpartition(".")[2])
        for target, attr in _attributes_read(source, bound):
            if f"{target}.{attr}" not in modules and attr in binds(target):
                take(importer, target, attr)
    return taken


def _top_level_names(body: list[ast.stmt]) -> set[str]:
    """The names a module binds when it runs: definitions, assignments and imports at its top level (in `if` and
    `try` blocks too, not under `if TYPE_CHECKING:`)."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.If) and not _type_checking(node):
            names |= _top_level_names(node.body) | _top_level_names(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(handler.body for handler in node.handlers), node.orelse, node.finalbody):
                names |= _top_level_names(block)
    return names


def declared_all(source: str) -> list[str] | None:
    """The names of a module's `__all__` (a literal list or tuple of strings at module level), or None without one."""
    for node in ast.parse(source).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets):
            value = ast.literal_eval(node.value) if node.value is not None else None
            if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
                return None
            return list(value)
    return None


def export_problems(modules: Mapping[str, Path]) -> list[str]:
    """`module has no __all__ (imported by …)` for a module other packages import that declares none, and `module's
    __all__ lacks name (imported by …)` for each name they take from it that its `__all__` does not list."""
    problems: list[str] = []
    for target, names in sorted(cross_package_imports(modules).items()):
        declared = declared_all(modules[target].read_text(encoding="utf-8"))
        if declared is None:
            by = sorted(set().union(*names.values()))
            problems.append(f"{target} has no __all__ (imported by {', '.join(by)})")
            continue
        for name, by in sorted(names.items()):
            if name and name not in declared:
                problems.append(f"{target}'s __all__ lacks {name} (imported by {', '.join(sorted(by))})")
    return problems


# rules/ does no I/O: besides the layer rules above, no file, network or process access of any kind.
FORBIDDEN = {
    "service",
    "litestar",
    "sqlalchemy",
    "alembic",
    "asyncpg",
    "aiosqlite",
    "uvicorn",
    "httpx",
    "requests",
    "sqlite3",
    "socket",
    "http",
    "urllib",
    "subprocess",
    "shutil",
    "pathlib",
    "tempfile",
    "asyncio",
}
FORBIDDEN_CALLS = {"open", "exec", "eval", "__import__"}
FORBIDDEN_OS = {
    "path",
    "open",
    "remove",
    "unlink",
    "makedirs",
    "mkdir",
    "listdir",
    "walk",
    "environ",
    "getenv",
    "system",
    "popen",
    "scandir",
    "rename",
    "replace",
    "rmdir",
    "stat",
}


def _root(module: str) -> str:
    """The first part of a module name inside the project's own `worthit` package, else of the name itself."""
    return module.removeprefix("worthit.").split(".")[0]


def io_problems(source: str) -> list[str]:
    """What a rules/ module must not do: import the service layer, a framework, a driver, or touch files or the
    network (imports anywhere in the module, calls of `open`/`exec`/`eval`/`__import__`, any `os.` attribute)."""
    tree = ast.parse(source)
    problems: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            problems += [alias.name for alias in node.names if _root(alias.name) in FORBIDDEN | {"os"}]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            root = _root(node.module)
            if root in FORBIDDEN or (root == "os" and any(a.name in FORBIDDEN_OS for a in node.names)):
                problems.append(node.module)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            problems.append(f"{node.func.id}() at line {node.lineno}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os":
            problems.append(f"os.{node.attr} at line {node.lineno}")
    return problems


if __name__ == "__main__":  # `python -m tests.layering`: what the export test would say, one line a problem
    print("\n".join(export_problems(module_names())) or "every module imported across packages declares its names")
