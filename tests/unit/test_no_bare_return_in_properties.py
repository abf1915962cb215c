"""A hypothesis test never skips an input with a bare `return`: it would pass having checked nothing, and no one
would know. `assume()` (or `reject()`) says an input does not count, and hypothesis fails a test that rejects almost
every input; `event()` says which branch an input took, where both are valid outcomes."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from tests.harness import ROOT


def bare_returns(source: str) -> list[tuple[str, int]]:
    """(test name, line) of every bare `return` in the body of a function decorated with `@given` (functions nested
    in it are their own: a helper may return early)."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not any(map(_is_given, node.decorator_list)):
            continue
        pending: list[ast.AST] = list(node.body)
        while pending:
            statement = pending.pop()
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                continue
            if isinstance(statement, ast.Return) and statement.value is None:
                found.append((node.name, statement.lineno))
            pending.extend(ast.iter_child_nodes(statement))
    return sorted(found, key=lambda hit: hit[1])


def _is_given(decorator: ast.expr) -> bool:
    call = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(call, ast.Name) and call.id == "given") or (
        isinstance(call, ast.Attribute) and call.attr == "given"
    )


SNIPPET = """
@settings(deadline=None)
@given(x=st.integers())
def test_skips(x):
    if x < 0:
        return
    for y in range(x):
        if y == 3:
            return
    def helper():
        return
    assert helper() is None


@hypothesis.given(st.integers())
def test_skips_too(x):
    try:
        1 / x
    except ZeroDivisionError:
        return


@given(st.integers())
def test_assumes(x):
    assume(x >= 0)
    assert x >= 0


def test_plain():
    return
"""


def test_the_lint_finds_each_bare_return_of_a_given_test_and_no_other() -> None:
    assert bare_returns(SNIPPET) == [("test_skips", 6), ("test_skips", 9), ("test_skips_too", 20)]


def test_a_return_with_a_value_or_outside_a_given_test_is_not_flagged() -> None:
    source = textwrap.dedent(
        """
        @given(st.integers())
        def test_value(x):
            return None if x else 0

        @pytest.fixture
        def fixture():
            return
        """
    )
    assert bare_returns(source) == []


@pytest.mark.parametrize("path", sorted((ROOT / "tests").rglob("test_*.py")), ids=lambda path: path.name)
def test_no_property_test_skips_an_input_with_a_bare_return(path: Path) -> None:
    assert bare_returns(path.read_text(encoding="utf-8")) == []
