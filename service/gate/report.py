"""Judging a verdict under the policy's gate, and reporting it: annotations, the log, the job summary."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from worthit.rules.model import Evaluation, Verdict
from worthit.rules.names import printable
from worthit.rules.policy import Gate
from worthit.service.gate.errors import Level
from worthit.service.gate.fences import Block
from worthit.service.offline import EXIT_FAIL, EXIT_PASS
from worthit.service.present import render


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the gate concludes: the annotation level and whether the check passes."""

    level: Level
    passed: bool

    @property
    def exit_code(self) -> int:
        return EXIT_PASS if self.passed else EXIT_FAIL


def judge(verdict: Verdict, gate: Gate) -> Outcome:
    """A verdict under the policy's gate settings: `fail_on` fails (an error); `warn_on` passes with a warning."""
    if verdict in gate.fail_on:
        return Outcome("error", passed=False)
    if verdict in gate.warn_on:
        return Outcome("warning", passed=True)
    return Outcome("notice", passed=True)


def escape_data(text: str) -> str:
    """A workflow command's message, escaped as GitHub's runner unescapes it (`%`, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (`title=`), which also escapes `:` and `,`."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: Level, message: str, title: str = "worthit") -> str:
    """`::error title=…::message`, escaped: the message may carry text from the PR description (its control
    characters escaped too, for a terminal that prints the line)."""
    return f"::{level} title={escape_property(printable(title))}::{escape_data(printable(message, lines=True))}"


# What GitHub would turn into a link by itself (GFM's autolinks: a scheme, `www.`), up to a character that ends one.
# Bounded before its run, so the scan is linear.
_LINKABLE = re.compile(r"(?:\b[A-Za-z][A-Za-z0-9+.-]{0,31}:/{1,3}|\bwww\.)[^\s`<>|&\\\[\]()]*")


def _inert(text: str) -> str:
    """Text in which Markdown sees no HTML, no table cell's end and no link or image: `\\`, `[`, `]` escaped."""
    for char, escaped in (("\\", "\\\\"), ("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|")):
        text = text.replace(char, escaped)
    return text.replace("[", "\\[").replace("]", "\\]")


def _md(text: str) -> str:
    """Text from the description or the engine, made inert in Markdown: no raw HTML, no table breaks, no links.

    A description is written by whoever opens the pull request; its summary is read by reviewers who trust it.
    `[sign in](https://evil)` and `![](https://tracker/pixel.png)` lose their brackets (shown, not rendered), and a
    bare address, which GitHub would link by itself, is shown in a code span, where nothing is a link.
    """
    text = " ".join(text.split())
    parts, at = [], 0
    for match in _LINKABLE.finditer(text):
        parts += [_inert(text[at : match.start()]), f"`{match[0]}`"]
        at = match.end()
    parts.append(_inert(text[at:]))
    return "".join(parts)


MARK: dict[Level, str] = {"notice": "✅", "warning": "⚠️", "error": "❌"}


def summary_markdown(
    evaluation: Evaluation,
    outcome: Outcome,
    gate: Gate,
    *,
    block: Block,
    blocks: int,
    title: str | None,
    source: str,
    measured: str | None = None,
    decision_url: str | None = None,
) -> str:
    """The job summary: the verdict, the statement, a table of figures, the reasoning (when given), the findings, and
    a link to the decision's page when a server stored it."""
    state = "passes" if outcome.level == "notice" else "passes with a warning" if outcome.passed else "fails the gate"
    lines = [f"## {MARK[outcome.level]} worthit: `{evaluation.verdict}` — {state}", ""]
    if title:
        lines += [f"**{_md(title)}**", ""]
    lines += [f"> {_md(evaluation.statement)}", "", "| figure | value |", "|---|---|"]
    lines += [f"| {row.label} | {_md(row.value)} |" for row in render.figures(evaluation, measured=measured)]
    stages = render.reasoning(evaluation)
    if stages:
        # One ordered list: a bullet per stage holding "1. …" would render as a one-item numbered list in each.
        lines += ["", "**Reasoning**", ""]
        lines += [f"{number}. **{_md(question)}** {_md(row.value)}" for number, question, row in _numbered(stages)]
    lines += ["", "**Findings**", ""]
    for line in render.findings(evaluation):
        aside = f" — overridden by `{line.overridden_by}`" if line.overridden_by else ""
        lines.append(f"- `{line.rule}` ({line.effect}{aside}): {_md(line.message)}")
    if decision_url:
        # Our own link to our own page (not text from the description, which _md neutralises): written as a link.
        lines += ["", f"[Open the decision]({decision_url})"]
    fails = ", ".join(gate.fail_on) or "nothing"
    warns = ", ".join(gate.warn_on) or "nothing"
    lines += [
        "",
        f"Policy `{evaluation.policy.name}` v{evaluation.policy.version}, evaluated {source}; the gate fails on "
        f"{fails} and warns on {warns}. From the worthit block at line {block.line} of the description"
        + (f" (the first of {blocks}; the others were ignored)." if blocks > 1 else "."),
        "",
    ]
    return "\n".join(lines)


def _numbered(stages: list[render.Row]) -> list[tuple[int, str, render.Row]]:
    """Each stage's number and question apart (the renderer's label is "1. Question?")."""
    found = []
    for index, row in enumerate(stages, start=1):
        number, _, question = row.label.partition(". ")
        found.append((int(number), question, row) if number.isdigit() and question else (index, row.label, row))
    return found


def message_markdown(heading: str, level: Level, text: str) -> str:
    """A summary for an outcome without a verdict (no block, a malformed block)."""
    return f"## {MARK[level]} worthit: {heading}\n\n{_md(text)}\n\n"


@dataclass
class Report:
    """Where the gate speaks: annotations and a log on stdout, the Markdown summary in a file when given."""

    out: TextIO
    summary_path: str | None
    actions: bool
    notes: list[str] = field(default_factory=list)
    output_path: str | None = None
    """`$GITHUB_OUTPUT`: the step's outputs (verdict, rule, passed, decision-url) for later steps."""

    def log(self, text: str) -> None:
        """Log text that may carry the description's text, with workflow commands off while it prints and its control
        characters escaped (but its lines)."""
        text = printable(text, lines=True)
        if not self.actions:
            self.out.write(text + "\n")
            return
        token = secrets.token_hex(16)
        self.out.write(f"::stop-commands::{token}\n{text}\n::{token}::\n")

    def annotate(self, level: Level, message: str, title: str = "worthit") -> None:
        self.out.write(annotation(level, message, title) + "\n")

    def summary(self, markdown: str) -> None:
        if not self.summary_path:
            return
        try:
            with Path(self.summary_path).open("a", encoding="utf-8") as handle:
                handle.write(markdown)
        except OSError as exc:
            self.annotate("warning", f"cannot write the job summary to {self.summary_path}: {exc.strerror or exc}")

    def outputs(self, values: dict[str, str]) -> None:
        """Append `name=value` lines to `$GITHUB_OUTPUT` (values are one line each: verdicts, rule ids, a URL)."""
        if not self.output_path:
            return
        lines = "".join(f"{name}={' '.join(value.split())}\n" for name, value in values.items())
        try:
            with Path(self.output_path).open("a", encoding="utf-8") as handle:
                handle.write(lines)
        except OSError as exc:
            self.annotate("warning", f"cannot write the step outputs to {self.output_path}: {exc.strerror or exc}")
