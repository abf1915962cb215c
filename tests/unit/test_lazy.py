"""rules/lazy.py, the one lazy `__getattr__` of the packages that re-export names from heavy modules."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT
from worthit.rules.lazy import lazy_names

PROBE = """
import sys
import worthit.service.gate as gate
before = 'worthit.service.gate.command' in sys.modules
run = gate.run
print(before, 'worthit.service.gate.command' in sys.modules, callable(run), 'run' in vars(gate))
"""


def test_a_name_is_imported_on_first_read_and_then_bound_on_its_package() -> None:
    """Importing service/gate imports none of its parts; reading `run` imports its module and binds the function on
    the package."""
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "True", "True"]


def test_a_name_not_listed_is_an_attribute_error() -> None:
    lookup = lazy_names("worthit.service.gate", {"run": "command"})
    with pytest.raises(AttributeError, match=r"module 'worthit\.service\.gate' has no attribute 'nope'"):
        lookup("nope")
