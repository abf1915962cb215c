"""What the bot posts: the project's Block Kit decision message (service/slack/blocks.py) plus the buttons that act
on it, the "Why?" answer, the two modals and the error replies. Pure, no I/O: built of blocks.py's structs, handed
to slack_sdk as the dicts its client sends."""

from __future__ import annotations

from typing import Any

import msgspec

from worthit.rules.model import Evaluation, StageAnswer
from worthit.rules.text import times
from worthit.service.decisions.schemas import Decision
from worthit.service.present import render
from worthit.service.slack.blocks import (
    FIELD_CHARS,
    MAX_BLOCKS,
    SECTION_CHARS,
    ActionsBlock,
    Block,
    Button,
    ContextBlock,
    HeaderBlock,
    InputBlock,
    Modal,
    Mrkdwn,
    NumberInput,
    Option,
    PlainText,
    PlainTextInput,
    SectionBlock,
    StaticSelect,
    clip,
    decision_message,
    escape,
)

WHY, OUTCOME, POLICY = "worthit_why", "worthit_outcome", "worthit_policy"
OUTCOME_VIEW, POLICY_VIEW = "worthit_outcome_view", "worthit_policy_view"
STAGES_SHOWN = 20
Message = dict[str, Any]


def fallback(text: str) -> str:
    """A message's `text`: notifications show it and Slack parses it as mrkdwn, so a typed `<!channel>` would ping
    from there as from a block. Escaped like every block's text (the decision message's own is, in blocks.py)."""
    return clip(escape(text), SECTION_CHARS)


def _message(text: str, blocks: list[Block]) -> Message:
    """A reply as the client posts it: the (already escaped) fallback and the blocks."""
    return {"text": text, "blocks": msgspec.to_builtins(blocks)}


def _section(text: str) -> SectionBlock:
    return SectionBlock(text=Mrkdwn(text=text))


def actions(decision_id: str) -> dict[str, Any]:
    """The buttons under a decision; each carries the decision's id."""

    def button(action_id: str, text: str) -> Button:
        return Button(action_id=action_id, text=PlainText(text=text, emoji=True), value=decision_id)

    block = ActionsBlock(
        block_id="worthit_actions",
        elements=[button(WHY, "Why?"), button(OUTCOME, "Record outcome"), button(POLICY, "Under policy…")],
    )
    built: dict[str, Any] = msgspec.to_builtins(block)
    return built


def decision_reply(document: dict[str, Any], public_url: str | None, page_path: str | None = None) -> Message:
    """A stored decision (the API's JSON) as the project's Block Kit message, with the buttons; `page_path` is a
    signed link to its page (`GET /v1/decisions/{id}/link`)."""
    decision = msgspec.convert(document, Decision)
    message = decision_message(
        decision, decision_id=decision.id, target=decision.proposal.target, public_url=public_url, page_path=page_path
    )
    return _with_actions(message, decision.id)


def reevaluation_reply(
    result: dict[str, Any], *, target: str | None, policy: str, public_url: str | None, page_path: str | None = None
) -> Message:
    """The answer of `POST /v1/decisions/{id}/reevaluate`: the decision under the other policy, and what changed."""
    after = msgspec.convert(result["after"], Evaluation)
    decision_id = str(result["decision_id"])
    message = _with_actions(
        decision_message(after, decision_id=decision_id, target=target, public_url=public_url, page_path=page_path),
        decision_id,
    )
    # `before` is the stored evaluation; its `policy` says under which version it was made.
    before = result["before"]["policy"]
    changes = result.get("changes") or []
    if changes:
        lines = [
            f"• *{escape(str(c['field']))}*: {escape(str(c['before']))} → {escape(str(c['after']))}" for c in changes
        ]
        summary = f"Under *{escape(policy)}* (was {escape(before['name'])} v{before['version']}):\n" + "\n".join(lines)
    else:
        summary = f"Under *{escape(policy)}* nothing changes (was {escape(before['name'])} v{before['version']})."
    message["blocks"].insert(0, msgspec.to_builtins(_section(clip(summary, SECTION_CHARS))))
    message["text"] = clip(f"Under {escape(policy)}: {message['text']}", SECTION_CHARS)  # `text` is escaped already
    return message


def _with_actions(message: Any, decision_id: str) -> Message:
    built: Message = msgspec.to_builtins(message)
    built.pop("response_type", None)
    built["blocks"] = [*built["blocks"][: MAX_BLOCKS - 1], actions(decision_id)]
    return built


def _figures(figures: Any) -> str:
    if not isinstance(figures, dict) or not figures:
        return ""
    return ", ".join(f"{name} = {value}" for name, value in figures.items())


def _stages(reasoning: object) -> list[StageAnswer]:
    """The decision's stages as the engine wrote them; none when the server's answer holds none it can read."""
    if not isinstance(reasoning, list) or not reasoning:
        return []
    try:
        return msgspec.convert(reasoning, list[StageAnswer])
    except msgspec.ValidationError:
        return []


def why_reply(document: dict[str, Any]) -> Message:
    """The decision's reasoning, stage by stage (`reasoning`); a server without it: its findings, rule by rule."""
    blocks: list[Block] = [HeaderBlock(text=PlainText(text="Why?", emoji=True))]
    stages = _stages(document.get("reasoning"))[:STAGES_SHOWN]
    if stages:
        for row, stage in zip(render.stage_rows(stages), stages, strict=True):
            blocks.append(_section(clip(f"*{escape(row.label)}*\n{escape(row.value)}", SECTION_CHARS)))
            context = []
            if stage.rules:
                context.append("rules: " + ", ".join(escape(rule) for rule in stage.rules))
            figures = _figures(stage.figures)
            if figures:
                context.append("figures: " + escape(figures))
            if context:
                blocks.append(ContextBlock(elements=[Mrkdwn(text=clip(" · ".join(context), FIELD_CHARS))]))
    else:
        lines = [
            f"• *{escape(str(f['rule']))}* ({escape(str(f.get('effect', '')))}): {escape(str(f['message']))}"
            for f in document.get("findings", [])
        ]
        blocks.append(_section(clip("\n".join(lines) or "No findings.", SECTION_CHARS)))
    decided = f"Decided by `{escape(str(document.get('deciding_rule', '')))}`"
    blocks.append(ContextBlock(elements=[Mrkdwn(text=decided)]))
    return _message(fallback(f"Why: {document.get('statement', '')}"), blocks[:MAX_BLOCKS])


def problem_reply(what: str, detail: str) -> Message:
    """A readable error, never silence: what the bot tried, and the API's own words."""
    text = f":warning: {what}: {detail}"
    return _message(fallback(text), [_section(clip(escape(text), SECTION_CHARS))])


def _times(value: float | str | None) -> str:
    """A k or speedup of the API's JSON as every surface writes it (rules.text.times): `"inf"` and null are ∞."""
    return times(value) if isinstance(value, int | float) else "∞"


def outcome_reply(outcome: dict[str, Any]) -> Message:
    """A recorded outcome: predicted against realized."""
    predicted, realized = outcome["predicted"], outcome["realized"]
    parts = [f"Outcome recorded for `{outcome['decision_id']}`."]
    if realized.get("k") is not None:
        parts.append(f"Realized k {_times(realized['k'])} against the proposed {_times(predicted['k'])}.")
    if realized.get("speedup") is not None:
        parts.append(f"Speedup {_times(realized['speedup'])} against the predicted {_times(predicted['speedup'])}.")
    text = " ".join(parts)
    return _message(fallback(text), [_section(escape(text))])


def outcome_modal(metadata: str, target: str | None) -> dict[str, Any]:
    """The modal that asks what was measured after the work (either time, or both), in ms."""

    def number(block_id: str, label: str, hint: str) -> InputBlock:
        return InputBlock(
            block_id=block_id,
            optional=True,
            label=PlainText(text=label),
            hint=PlainText(text=hint),
            element=NumberInput(action_id="value", is_decimal_allowed=True, min_value="0"),
        )

    name = target or "the target"
    note = PlainTextInput(action_id="value", multiline=True, max_length=2000)
    return _modal(
        Modal(
            callback_id=OUTCOME_VIEW,
            private_metadata=metadata,
            title=PlainText(text="Record outcome"),
            submit=PlainText(text="Record"),
            close=PlainText(text="Cancel"),
            blocks=[
                number("target_ms", clip(f"Time of {name} now (ms)", 150), "The target's own time after the work."),
                number(
                    "step_ms", "Time of the measured scope now (ms)", "The step's (or scope's) time after the work."
                ),
                InputBlock(block_id="note", optional=True, label=PlainText(text="Note"), element=note),
            ],
        )
    )


def policy_modal(metadata: str, names: list[str]) -> dict[str, Any]:
    """The modal that asks which named policy to evaluate the decision under."""
    options = [Option(text=PlainText(text=clip(name, 75)), value=name) for name in names[:100]]
    return _modal(
        Modal(
            callback_id=POLICY_VIEW,
            private_metadata=metadata,
            title=PlainText(text="Under policy…"),
            submit=PlainText(text="Re-evaluate"),
            close=PlainText(text="Cancel"),
            blocks=[
                InputBlock(
                    block_id="policy",
                    label=PlainText(text="Policy"),
                    element=StaticSelect(action_id="value", options=options),
                )
            ],
        )
    )


def _modal(modal: Modal) -> dict[str, Any]:
    built: dict[str, Any] = msgspec.to_builtins(modal)
    return built
