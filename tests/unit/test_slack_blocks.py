"""The Block Kit answer: the verdict, the statement and the figures, within Slack's limits however long the input."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block

from worthit.rules.engine import evaluate
from worthit.rules.model import Evaluation, Finding, Proposal
from worthit.rules.policy import default_policy
from worthit.service.slack.blocks import decision_message, invalid_message, usage_message

# Block Kit's documented limits (api.slack.com/reference/block-kit/blocks).
LIMITS = {"blocks": 50, "header": 150, "section_text": 3000, "fields": 10, "field_text": 2000, "context": 10}


def block_kit_problems(message: dict[str, Any]) -> list[str]:
    """Every way `message` breaks Block Kit's limits; empty when Slack would accept it.

    Our own reading of the limits, then Slack's SDK models as a second opinion (they check most of them too).
    """
    problems: list[str] = []
    if message.get("response_type") not in ("ephemeral", "in_channel"):
        problems.append(f"response_type {message.get('response_type')!r}")
    if not isinstance(message.get("text"), str) or not message["text"]:
        problems.append("no fallback text")
    blocks = message.get("blocks")
    if not isinstance(blocks, list) or not 1 <= len(blocks) <= LIMITS["blocks"]:
        return [*problems, f"expected 1..{LIMITS['blocks']} blocks"]

    def text_ok(where: str, text: Any, kinds: tuple[str, ...], limit: int) -> None:
        if not isinstance(text, dict) or text.get("type") not in kinds:
            problems.append(f"{where}: expected a {'/'.join(kinds)} text object, got {text!r}")
        elif not isinstance(text.get("text"), str) or not 1 <= len(text["text"]) <= limit:
            problems.append(f"{where}: text of {len(text.get('text') or '')} characters, limit {limit}")

    for i, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "header":
            text_ok(f"block {i} header", block.get("text"), ("plain_text",), LIMITS["header"])
        elif kind == "section":
            if "text" not in block and "fields" not in block:
                problems.append(f"block {i}: a section needs text or fields")
            if "text" in block:
                text_ok(f"block {i} section", block["text"], ("mrkdwn", "plain_text"), LIMITS["section_text"])
            fields = block.get("fields", [])
            if "fields" in block and not 1 <= len(fields) <= LIMITS["fields"]:
                problems.append(f"block {i}: {len(fields)} fields, limit {LIMITS['fields']}")
            for j, field in enumerate(fields):
                text_ok(f"block {i} field {j}", field, ("mrkdwn", "plain_text"), LIMITS["field_text"])
        elif kind == "context":
            elements = block.get("elements", [])
            if not 1 <= len(elements) <= LIMITS["context"]:
                problems.append(f"block {i}: {len(elements)} context elements, limit {LIMITS['context']}")
            for j, element in enumerate(elements):
                text_ok(f"block {i} element {j}", element, ("mrkdwn", "plain_text"), LIMITS["section_text"])
        elif kind != "divider":
            problems.append(f"block {i}: unexpected type {kind!r}")
        try:
            parsed = Block.parse(block)
            if parsed is None:
                problems.append(f"block {i}: Slack's SDK does not know it")
            else:
                parsed.to_dict()  # validates the SDK's own copy of the limits
        except SlackObjectFormationError as exc:
            problems.append(f"block {i}: {exc}")
    return problems


def as_json(message: object) -> dict[str, Any]:
    document: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(message))
    return document


def evaluation_of(**proposal: Any) -> Evaluation:
    return evaluate(msgspec.convert(proposal, Proposal, strict=True), default_policy())


def test_the_seed_case_shows_verdict_statement_and_figures() -> None:
    evaluation = evaluation_of(p=0.21, k=10, baseline_ms=100, cost_weeks=3, target="attention_softmax")
    message = as_json(
        decision_message(evaluation, decision_id="d1", target="attention_softmax", public_url="https://w.example/")
    )
    assert block_kit_problems(message) == []
    assert message["response_type"] == "ephemeral"
    header, statement, figures = message["blocks"][:3]
    assert header["text"]["text"] == ":white_check_mark: Fund: attention_softmax"
    assert statement["text"]["text"] == evaluation.statement
    shown = {field["text"].split("\n")[0]: field["text"].split("\n")[1] for field in figures["fields"]}
    assert shown["*Speedup*"] == "1.233× (ceiling 1.266×)"
    assert shown["*Saving*"] == "18.9% of the step = 18.9 ms"
    assert shown["*Time*"] == "100 ms → 81.1 ms"
    assert shown["*Headroom captured*"] == "90% of the target's own time, 2.1 ms left"
    assert shown["*Return*"] == "6.3 ms per engineer-week"
    assert shown["*Cost*"] == "3 engineer-weeks"
    assert message["blocks"][-1]["elements"][0]["text"] == "<https://w.example/decisions/d1|Open the decision>"


def test_without_a_public_url_the_decision_id_is_shown() -> None:
    message = as_json(decision_message(evaluation_of(p=0.21, k=10), decision_id="d1", target=None, public_url=None))
    assert block_kit_problems(message) == []
    assert message["blocks"][-1]["elements"][0]["text"] == "Decision `d1`"
    assert "http" not in msgspec.json.encode(message).decode()


def test_public_is_in_channel() -> None:
    message = decision_message(
        evaluation_of(p=0.21, k=10), decision_id="d1", target=None, public_url=None, response_type="in_channel"
    )
    assert message.response_type == "in_channel"


def test_huge_texts_are_clipped_to_the_limits() -> None:
    """A 200-character target, a 10,000-character statement and 40 long findings still make a valid message."""
    evaluation = evaluation_of(p=0.05, k=2, cost_weeks=3, target="t" * 200, flags={"fleet_gpus": 20000})
    findings = [Finding(rule=f"rule_{i}", effect="info", message="m" * 5000) for i in range(40)]
    evaluation = msgspec.structs.replace(evaluation, statement="s" * 10_000, findings=evaluation.findings + findings)
    message = as_json(decision_message(evaluation, decision_id="d" * 3000, target="t" * 200, public_url="https://x"))
    assert block_kit_problems(message) == []
    assert len(message["blocks"][0]["text"]["text"]) == LIMITS["header"]


def test_user_text_cannot_ping_the_channel() -> None:
    """Names come from users: `<!channel>` in a target is shown, not sent as a mention."""
    evaluation = evaluation_of(p=0.21, k=10, target="<!channel>")
    message = as_json(decision_message(evaluation, decision_id="d1", target="<!channel>", public_url=None))
    assert "<!channel>" not in msgspec.json.encode(message["blocks"][1:]).decode()
    assert "&lt;!channel&gt;" in message["blocks"][1]["text"]["text"]


@pytest.mark.parametrize("message", [usage_message(), invalid_message("p=2l%", "`2l%` does not read" * 400)])
def test_usage_messages_are_ephemeral_and_valid(message: object) -> None:
    document = as_json(message)
    assert block_kit_problems(document) == []
    assert document["response_type"] == "ephemeral"


def test_invalid_message_names_the_token() -> None:
    document = as_json(invalid_message("cots=3w", "unknown key `cots`; did you mean `cost`?"))
    assert document["blocks"][0]["text"]["text"].startswith(":warning: Couldn't read `cots=3w`: unknown key `cots`")
    assert len(document["blocks"]) == 1  # one line, not the usage again under every typo
    assert document["blocks"][0]["text"]["text"].endswith("(type `/worthit help` for every key)")
    assert "/worthit p=21% k=10" not in msgspec.json.encode(document).decode()


def test_the_checker_catches_each_limit() -> None:
    """The limits checker itself: each limit broken once is reported."""
    ok = as_json(usage_message())
    too_long_header = {"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}
    eleven_fields = {"type": "section", "fields": [{"type": "mrkdwn", "text": "x"}] * 11}
    long_field = {"type": "section", "fields": [{"type": "mrkdwn", "text": "x" * 2001}]}
    long_text = {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}
    for block in (too_long_header, eleven_fields, long_field, long_text):
        assert block_kit_problems(ok | {"blocks": [block]}), block
    assert block_kit_problems(ok | {"blocks": ok["blocks"] * 51})
    assert block_kit_problems(ok | {"response_type": "everyone"})


def test_the_why_line_gives_every_stage_in_order_within_a_field() -> None:
    """The context line under the answer walks the stages in order, each as the shared renderer numbers it."""
    proposal = msgspec.convert(
        {"target": "rope", "p": 0.008, "k": 2, "cost_weeks": 3, "flags": {"fleet_gpus": 80000}}, Proposal
    )
    message = msgspec.to_builtins(
        decision_message(evaluate(proposal, default_policy()), decision_id="d1", target="rope", public_url=None)
    )
    why = [
        element["text"]
        for block in message["blocks"]
        if block["type"] == "context"
        for element in block["elements"]
        if element["text"].startswith("*Why*")
    ]
    assert len(why) == 1
    evaluation = evaluate(proposal, default_policy())
    assert evaluation.reasoning is not None
    stages = [why[0].index(f"{n}. {stage.question}") for n, stage in enumerate(evaluation.reasoning, start=1)]
    assert len(stages) == 5
    assert stages == sorted(stages)
    assert len(why[0]) <= LIMITS["field_text"]
    assert block_kit_problems(message) == []
