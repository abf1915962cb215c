"""Where the shared real-profiler samples are: ``$WORTHIT_FIXTURES``, else ``../shared/fixtures`` beside the repository.

They are not part of the repository: a clone without them skips the tests that read them (CI must have them, and fails
instead). One place for every test that reads them, unit or end-to-end.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def fixtures_dir() -> Path:
    """The shared fixtures: ``$WORTHIT_FIXTURES``, else ``../shared/fixtures`` beside the repository."""
    configured = os.environ.get("WORTHIT_FIXTURES")
    return Path(configured) if configured else (REPO / ".." / "shared" / "fixtures").resolve()


def needs(folder: Path) -> pytest.MarkDecorator:
    """Skip a test when `folder` of the shared fixtures is absent, except under CI, where the test runs (and fails)."""
    return pytest.mark.skipif(
        not folder.is_dir() and not IN_CI,
        reason=f"shared profiler fixtures not found at {folder} (set WORTHIT_FIXTURES)",
    )
