"""What a user typed never pings or links from a message, on either Slack path.

Every message either path builds (the slash command's in service/slack/blocks.py, the Socket Mode bot's in
service/slackbot/messages.py) is walked whole: each mrkdwn text and each fallback `text` (which notifications show
and Slack parses as mrkdwn too) must carry the typed `<!channel>`, `<@U…>`, `<#C…>` and `<https://…|…>` escaped.
plain_text objects (headers, modals) are shown literally by Slack and are not walked.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from worthit.rules.engine import evaluate
from worthit.rules.model import Proposal
from worthit.rules.policy import default_policy
from worthit.service.decisions.schemas import Decision
from worthit.service.slack.blocks import decision_message, invalid_message, usage_message
from worthit.service.slackbot import messages

HOSTILE = "<!channel> <@U0123> <#C0123> <https://evil.example/login|sign in>"
OUR_LINK = "<https://worthit.example.com/decisions/"


def mrkdwn_texts(message: Any, *, top: bool = True) -> list[str]:
    """The fallback `text` and every mrkdwn text of a message, at any depth."""
    found: list[str] = []
    if isinstance(message, dict):
        if message.get("type") == "plain_text":
            return []
        if isinstance(message.get("text"), str) and (top or message.get("type") == "mrkdwn"):
            found.append(message["text"])
        for key, value in message.items():
            if key != "text" or not isinstance(value, str):
                found.extend(mrkdwn_texts(value, top=False))
    elif isinstance(message, list):
        for item in message:
            found.extend(mrkdwn_texts(item, top=False))
    return found


def raw_mentions(message: Any) -> list[str]:
    built = msgspec.to_builtins(message)
    return [
        text
        for text in mrkdwn_texts(built)
        if any(mark in text.replace(OUR_LINK, "") for mark in ("<!", "<@", "<#", "<http"))
    ]


def decision_document() -> dict[str, Any]:
    proposal = msgspec.convert(
        {"p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3, "target": HOSTILE, "title": HOSTILE},
        Proposal,
        strict=True,
    )
    evaluation = evaluate(proposal, default_policy())
    decision = Decision(
        **{name: getattr(evaluation, name) for name in evaluation.__struct_fields__},
        id="dec_0123",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        source="slack",
        proposal=proposal,
    )
    document: dict[str, Any] = msgspec.to_builtins(decision)
    assert "<!channel>" in document["statement"]  # the engine quotes the typed target (clipped)
    return document


def builders() -> dict[str, Any]:
    document = decision_document()
    evaluation = msgspec.convert(document, Decision)
    reevaluation = {
        "decision_id": "dec_0123",
        "before": document,
        "after": document,
        "changes": [{"field": HOSTILE, "before": HOSTILE, "after": HOSTILE}],
    }
    return {
        "slash decision": decision_message(
            evaluation, decision_id="dec_0123", target=HOSTILE, public_url="https://worthit.example.com"
        ),
        "slash usage": usage_message(f"worthit could not evaluate this: {HOSTILE}"),
        "slash invalid": invalid_message(HOSTILE, f"unknown word {HOSTILE}"),
        "bot decision": messages.decision_reply(document, "https://worthit.example.com"),
        "bot why": messages.why_reply(document),
        "bot why (findings)": messages.why_reply(document | {"reasoning": None}),
        "bot problem": messages.problem_reply(f"worthit could not re-evaluate under {HOSTILE!r}", HOSTILE),
        "bot reevaluation": messages.reevaluation_reply(
            reevaluation, target=HOSTILE, policy=HOSTILE, public_url="https://worthit.example.com"
        ),
        "bot outcome": messages.outcome_reply(
            {"decision_id": HOSTILE, "predicted": {"k": 10, "speedup": 1.2}, "realized": {"k": 9.0, "speedup": 1.1}}
        ),
    }


NAMES = [
    "slash decision",
    "slash usage",
    "slash invalid",
    "bot decision",
    "bot why",
    "bot why (findings)",
    "bot problem",
    "bot reevaluation",
    "bot outcome",
]


def test_every_builder_is_walked() -> None:
    assert sorted(builders()) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_typed_mentions_and_links_are_escaped_in_blocks_and_fallbacks(name: str) -> None:
    message = builders()[name]
    assert raw_mentions(message) == []
    texts = mrkdwn_texts(msgspec.to_builtins(message))
    assert any("&lt;!channel&gt;" in text for text in texts), texts  # shown, not dropped


def test_the_why_fallback_is_escaped() -> None:
    """The reported case: the bot's "Why?" reply carried a typed `<!channel>` raw in its notification text."""
    text = messages.why_reply(decision_document())["text"]
    assert "<!channel>" not in text
    assert "&lt;!channel&gt;" in text
