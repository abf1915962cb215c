"""openapi/openapi.json is a checked artifact: it must equal the running app's schema (`make openapi` updates it)."""

from __future__ import annotations

from tests.conftest import ROOT
from worthit.service.cli import openapi_document


def test_committed_openapi_matches_the_app() -> None:
    committed = (ROOT / "openapi" / "openapi.json").read_text(encoding="utf-8")
    assert committed == openapi_document(), "openapi/openapi.json is stale: run `make openapi` and commit it"
