"""`worthit gate`: the pull-request review gate (PRODUCT §1, §3).

The author fills in a fenced ```` ```worthit ```` block of YAML in the pull request's description; CI runs
`worthit gate --event "$GITHUB_EVENT_PATH"`, which finds the block, evaluates it (offline under the bundled or a
given policy, or against a server with `--url`), appends the verdict to `$GITHUB_STEP_SUMMARY`, prints a workflow
annotation, and exits by the policy's gate settings.

Exit status: 0 when the verdict passes the gate (or there is no block and the policy skips), 1 when it fails it
(a failing verdict, a malformed block, or no block where one is required), 2 when the gate cannot run at all
(unreadable event file, not a pull_request event, bad policy file, server unreachable or refusing the token).

Choices made here, so a reader need not reverse-engineer them:
- Fences follow CommonMark: ```` ``` ```` or ``~~~``, three or more, closed by the same character at least as
  long; an unclosed fence runs to the end of the description. Indentation is tolerated (a block inside a list
  item), and content is dedented by the opening fence's indent. Blocks inside other fenced blocks (an example in a
  ```` ````markdown ```` block) and inside HTML comments (`<!-- … -->`, as templates use for hints) are not blocks.
- The first ```` ```worthit ```` block wins; when there are more, the summary and a notice say which was used.
- Values are read forgivingly (`21%`, `3w`, `100ms`, `10x`, `inf`), then validated as strictly as the API does.
  A YAML key given twice is an error (YAML itself would silently keep the last one).

The parts, in the order a run goes through them: `event` (the description), `fences` (the blocks), `block` (YAML
to a validated proposal), `remote` (evaluation on a server), `report` (the verdict judged and written), `options`
(the command line's) and `command` (the run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from worthit.rules.lazy import lazy_names

if TYPE_CHECKING:
    from worthit.service.gate.block import Parsed, invalid_block, parse_block, read_proposal, read_request
    from worthit.service.gate.command import run
    from worthit.service.gate.errors import BlockError, UsageError
    from worthit.service.gate.event import body_from_event, body_from_file
    from worthit.service.gate.fences import Block, bare_proposal, find_blocks, normalise_newlines
    from worthit.service.gate.options import configure
    from worthit.service.gate.remote import evaluate_remote
    from worthit.service.gate.report import (
        Outcome,
        Report,
        annotation,
        escape_data,
        escape_property,
        judge,
        summary_markdown,
    )

# Each name from its module on first use: `worthit --version` builds the gate's options without its engine.
_HOMES = {
    "Parsed": "block",
    "invalid_block": "block",
    "parse_block": "block",
    "read_proposal": "block",
    "read_request": "block",
    "run": "command",
    "BlockError": "errors",
    "UsageError": "errors",
    "body_from_event": "event",
    "body_from_file": "event",
    "Block": "fences",
    "bare_proposal": "fences",
    "find_blocks": "fences",
    "normalise_newlines": "fences",
    "configure": "options",
    "evaluate_remote": "remote",
    "Outcome": "report",
    "Report": "report",
    "annotation": "report",
    "escape_data": "report",
    "escape_property": "report",
    "judge": "report",
    "summary_markdown": "report",
}

__all__ = [
    "Block",
    "BlockError",
    "Outcome",
    "Parsed",
    "Report",
    "UsageError",
    "annotation",
    "bare_proposal",
    "body_from_event",
    "body_from_file",
    "configure",
    "escape_data",
    "escape_property",
    "evaluate_remote",
    "find_blocks",
    "invalid_block",
    "judge",
    "normalise_newlines",
    "parse_block",
    "read_proposal",
    "read_request",
    "run",
    "summary_markdown",
]


__getattr__ = lazy_names(__name__, _HOMES)
