"""Block Kit's objects as structs, for both Slack paths (the slash command here, the bot's buttons, replies and modals
in service/slackbot/messages.py), and the answer to `/worthit`: the verdict, the statement, the figures and a link to
the decision.

Every text is clipped to Block Kit's limits here, so no decision (however long its names) makes Slack reject the
message: header plain_text ≤ 150 characters, section text ≤ 3000, ≤ 10 fields of ≤ 2000 each, ≤ 50 blocks.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from worthit.rules.model import Evaluation, Verdict
from worthit.service.present import render
from worthit.service.slack.text import USAGE

__all__ = [
    "FALLBACK_CHARS",
    "FIELD_CHARS",
    "FINDINGS_SHOWN",
    "HEADER_CHARS",
    "HELP_POINTER",
    "LABELS",
    "MAX_BLOCKS",
    "MAX_FIELDS",
    "SECTION_CHARS",
    "WHY_ANSWER_CHARS",
    "ActionsBlock",
    "Block",
    "Button",
    "ContextBlock",
    "DividerBlock",
    "HeaderBlock",
    "InputBlock",
    "Modal",
    "Mrkdwn",
    "NumberInput",
    "Option",
    "PlainText",
    "PlainTextInput",
    "ResponseType",
    "SectionBlock",
    "SlackMessage",
    "StaticSelect",
    "clip",
    "decision_message",
    "escape",
    "figure_fields",
    "invalid_message",
    "usage_message",
    "why_line",
]

HEADER_CHARS = 150
SECTION_CHARS = 3000
FIELD_CHARS = 2000
MAX_FIELDS = 10
MAX_BLOCKS = 50
FALLBACK_CHARS = 3000
FINDINGS_SHOWN = 8

ResponseType = Literal["ephemeral", "in_channel"]


class PlainText(msgspec.Struct, kw_only=True, tag_field="type", tag="plain_text", omit_defaults=True):
    text: str
    emoji: bool | None = None


class Mrkdwn(msgspec.Struct, kw_only=True, tag_field="type", tag="mrkdwn"):
    text: str


class HeaderBlock(msgspec.Struct, kw_only=True, tag_field="type", tag="header"):
    text: PlainText


class SectionBlock(msgspec.Struct, kw_only=True, tag_field="type", tag="section", omit_defaults=True):
    text: Mrkdwn | None = None
    fields: list[Mrkdwn] | None = None


class ContextBlock(msgspec.Struct, kw_only=True, tag_field="type", tag="context"):
    elements: list[Mrkdwn]


class DividerBlock(msgspec.Struct, kw_only=True, tag_field="type", tag="divider"):
    pass


Block = HeaderBlock | SectionBlock | ContextBlock | DividerBlock


class Button(msgspec.Struct, kw_only=True, tag_field="type", tag="button"):
    action_id: str
    text: PlainText
    value: str


class ActionsBlock(msgspec.Struct, kw_only=True, tag_field="type", tag="actions"):
    block_id: str
    elements: list[Button]


class NumberInput(msgspec.Struct, kw_only=True, tag_field="type", tag="number_input"):
    action_id: str
    is_decimal_allowed: bool
    min_value: str


class PlainTextInput(msgspec.Struct, kw_only=True, tag_field="type", tag="plain_text_input"):
    action_id: str
    multiline: bool
    max_length: int


class Option(msgspec.Struct, kw_only=True):
    text: PlainText
    value: str


class StaticSelect(msgspec.Struct, kw_only=True, tag_field="type", tag="static_select"):
    action_id: str
    options: list[Option]


class InputBlock(msgspec.Struct, kw_only=True, tag_field="type", tag="input", omit_defaults=True):
    block_id: str
    optional: bool = False
    label: PlainText
    hint: PlainText | None = None
    element: NumberInput | PlainTextInput | StaticSelect


class Modal(msgspec.Struct, kw_only=True, tag_field="type", tag="modal"):
    """A view the bot opens (`views.open`)."""

    callback_id: str
    private_metadata: str
    title: PlainText
    submit: PlainText
    close: PlainText
    blocks: list[InputBlock]


class SlackMessage(msgspec.Struct, kw_only=True):
    """A slash command's immediate answer (Block Kit); `text` is the notification fallback."""

    response_type: ResponseType = "ephemeral"
    text: str
    blocks: list[Block]


LABELS: dict[Verdict, tuple[str, str]] = {
    "fund": (":white_check_mark:", "Fund"),
    "fund_if": (":large_yellow_circle:", "Fund, on a condition"),
    "remeasure": (":straight_ruler:", "Remeasure first"),
    "redirect": (":twisted_rightwards_arrows:", "Redirect"),
    "decline": (":no_entry_sign:", "Decline"),
}


def clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def escape(text: str) -> str:
    """Text as mrkdwn shows it literally (Slack's three control characters; `<!channel>` must not ping)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _field(label: str, value: str) -> Mrkdwn:
    return Mrkdwn(text=clip(f"*{label}*\n{escape(value)}", FIELD_CHARS))


def figure_fields(evaluation: Evaluation, *, measured: str | None = None) -> list[Mrkdwn]:
    """The key figures of an evaluation (the shared renderer's rows), at most `MAX_FIELDS`."""
    rows = [*render.figures(evaluation, measured=measured), *render.provenance(evaluation)]
    return [_field(row.label[:1].upper() + row.label[1:], row.value) for row in rows][:MAX_FIELDS]


def _findings_text(evaluation: Evaluation) -> str | None:
    lines = []
    for finding in evaluation.findings:
        if finding.rule == "amdahl" or finding.message == evaluation.statement:
            continue
        aside = f" _(overridden by {finding.overridden_by})_" if finding.overridden_by else ""
        lines.append(f"• *{finding.rule}*{aside}: {escape(finding.message)}")
    if not lines:
        return None
    shown = lines[:FINDINGS_SHOWN]
    if len(lines) > FINDINGS_SHOWN:
        shown.append(f"… and {len(lines) - FINDINGS_SHOWN} more")
    return clip("\n".join(shown), SECTION_CHARS)


WHY_ANSWER_CHARS = 90


def why_line(evaluation: Evaluation) -> str | None:
    """One line of the reasoning, the shared renderer's rows: `*Why* · 1. Can these numbers be trusted? Yes… · 2. …`
    (each answer clipped)."""
    if not evaluation.reasoning:
        return None
    parts = [f"{row.label} {escape(clip(row.value, WHY_ANSWER_CHARS))}" for row in render.reasoning(evaluation)]
    return clip("*Why* · " + " · ".join(parts), FIELD_CHARS)


def decision_message(
    evaluation: Evaluation,
    *,
    decision_id: str,
    target: str | None,
    public_url: str | None,
    response_type: ResponseType = "ephemeral",
    page_path: str | None = None,
) -> SlackMessage:
    """The Block Kit answer for one decision; links to its page when the public URL is known: `page_path` (a signed
    link, which opens the page without a token) or `/decisions/{id}`."""
    emoji, label = LABELS[evaluation.verdict]
    heading = f"{label}: {target}" if target else label
    blocks: list[Block] = [
        HeaderBlock(text=PlainText(text=clip(f"{emoji} {heading}", HEADER_CHARS), emoji=True)),
        SectionBlock(text=Mrkdwn(text=clip(escape(evaluation.statement), SECTION_CHARS))),
        SectionBlock(fields=figure_fields(evaluation)),
    ]
    findings = _findings_text(evaluation)
    if findings is not None:
        blocks.append(SectionBlock(text=Mrkdwn(text=findings)))
    why = why_line(evaluation)
    if why is not None:
        blocks.append(ContextBlock(elements=[Mrkdwn(text=why)]))
    if public_url:
        path = page_path or f"/decisions/{decision_id}"
        link = f"<{public_url.rstrip('/')}{path}|Open the decision>"
    else:
        link = f"Decision `{decision_id}`"
    blocks.append(ContextBlock(elements=[Mrkdwn(text=clip(link, FIELD_CHARS))]))
    # The fallback is what notifications show, and Slack parses it as mrkdwn too: `<!channel>` typed into a target
    # would ping the channel from there.
    fallback = clip(escape(f"{label}: {evaluation.statement}"), FALLBACK_CHARS)
    return SlackMessage(response_type=response_type, text=fallback, blocks=blocks[:MAX_BLOCKS])


HELP_POINTER = " (type `/worthit help` for every key)"


def usage_message(problem: str | None = None) -> SlackMessage:
    """The usage, only to the person who typed the command; `problem` first when the text did not read."""
    blocks: list[Block] = []
    if problem is not None:
        blocks.append(SectionBlock(text=Mrkdwn(text=clip(f":warning: {escape(problem)}", SECTION_CHARS))))
    blocks.append(SectionBlock(text=Mrkdwn(text=clip(f"```{escape(USAGE)}```", SECTION_CHARS))))
    fallback = escape(problem) if problem is not None else "How to use /worthit"
    return SlackMessage(response_type="ephemeral", text=clip(fallback, FALLBACK_CHARS), blocks=blocks)


def invalid_message(token: str, reason: str) -> SlackMessage:
    """One line naming the token that did not read and why, and where the usage is: a typo is fixed from that line,
    and the whole usage repeated under every typo buried it."""
    shown = clip(token, 200).replace("`", "'")
    problem = f"Couldn't read `{shown}`: {reason}"
    line = clip(f":warning: {escape(problem)}", SECTION_CHARS - len(HELP_POINTER)) + HELP_POINTER
    return SlackMessage(
        response_type="ephemeral",
        text=clip(escape(problem), FALLBACK_CHARS),
        blocks=[SectionBlock(text=Mrkdwn(text=line))],
    )
