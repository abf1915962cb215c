"""What pyproject.toml allows can run what it configures: a dependency's lowest allowed version reads the settings
the project gives it."""

from __future__ import annotations

import tomllib

from packaging.requirements import Requirement
from packaging.version import Version

from tests.harness import ROOT

# The first Alembic release that reads its settings from pyproject.toml's [tool.alembic] (its changelog, 1.16.0):
# an older one ignores the table and `alembic upgrade head` from the checkout fails to find its scripts.
ALEMBIC_READS_PYPROJECT = Version("1.16")


def _lowest(requirement: Requirement) -> Version | None:
    bounds = [Version(spec.version) for spec in requirement.specifier if spec.operator in (">=", "==", "~=")]
    return max(bounds, default=None)


def test_the_lowest_alembic_allowed_reads_tool_alembic() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "alembic" in project["tool"], "no [tool.alembic]: this test guards nothing"
    requirements = [
        Requirement(line)
        for extra in project["project"]["optional-dependencies"].values()
        for line in extra
        if Requirement(line).name == "alembic"
    ]
    assert requirements, "alembic is a dependency of an extra"
    for requirement in requirements:
        lowest = _lowest(requirement)
        assert lowest is not None, f"{requirement} allows any version"
        assert lowest >= ALEMBIC_READS_PYPROJECT, str(requirement)
