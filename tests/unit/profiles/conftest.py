"""Fixtures of the profile reader tests: the shared real-profiler samples and the seed's Part 2 run."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from tests.fixtures import fixtures_dir

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data" / "profiles"


def load_script(name: str) -> ModuleType:
    """Import a generator script under tests/data/profiles/ (not a package) by path."""
    spec = importlib.util.spec_from_file_location(name, DATA / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def fixture_bytes() -> Callable[[str], bytes]:
    """Reader of one shared fixture file by name; skips when the shared fixtures are not checked out."""
    root = fixtures_dir()
    if not root.is_dir():
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"shared profiler fixtures not found at {root}; CI must read them")
        pytest.skip(f"shared profiler fixtures not found at {root} (set WORTHIT_FIXTURES)")

    def read(name: str) -> bytes:
        return (root / name).read_bytes()

    return read


@pytest.fixture(scope="session")
def seed_part2() -> ModuleType:
    """The generator module of the seed's Part 2 files (constants and `build()`)."""
    return load_script("make_seed_part2")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """tests/data/profiles: the sample files committed with these tests."""
    return DATA
