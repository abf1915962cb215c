"""deploy/slack/manifest.yaml: a manifest Slack accepts, pointing at our route, with a usage hint that reads."""

from __future__ import annotations

from typing import Any

import yaml

from tests.conftest import ROOT
from worthit.service.slack.text import Command, parse

MANIFEST = ROOT / "deploy" / "slack" / "manifest.yaml"


def manifest() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    return document


def test_manifest_declares_the_slash_command_at_our_route() -> None:
    document = manifest()
    (slash,) = document["features"]["slash_commands"]
    assert slash["command"] == "/worthit"
    assert slash["url"] == "https://YOUR-WORTHIT-HOST/slack/commands"
    assert slash["should_escape"] is False
    assert document["oauth_config"]["scopes"]["bot"] == ["commands"]
    assert document["settings"]["socket_mode_enabled"] is False


def test_manifest_texts_fit_slacks_limits() -> None:
    """Slack refuses a manifest whose texts are too long (or, for long_description, too short)."""
    document = manifest()
    info = document["display_information"]
    assert 1 <= len(info["name"]) <= 35
    assert len(info["description"]) <= 140
    assert 174 <= len(info["long_description"]) <= 4000
    (slash,) = document["features"]["slash_commands"]
    assert len(slash["description"]) <= 2000
    assert len(slash["usage_hint"]) <= 1000


def test_usage_hint_example_is_a_valid_command() -> None:
    (slash,) = manifest()["features"]["slash_commands"]
    example = slash["usage_hint"].split("[", 1)[0]
    assert isinstance(parse(example), Command)
