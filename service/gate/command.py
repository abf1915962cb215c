"""`worthit gate`: the run from the description to the exit status (its options: `options`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from typing import TextIO

from worthit.rules.engine import evaluate
from worthit.rules.errors import InvalidInput
from worthit.rules.names import printable
from worthit.rules.pointer import from_pointer
from worthit.service.gate.block import invalid_block, parse_block
from worthit.service.gate.errors import MISSING_CHOICES, TEMPLATE_HINT, BlockError, UsageError
from worthit.service.gate.event import body_from_event, body_from_file, pull_request_detail
from worthit.service.gate.fences import bare_proposal, find_blocks
from worthit.service.gate.remote import decide_remote
from worthit.service.gate.report import Report, judge, message_markdown, summary_markdown
from worthit.service.offline import EXIT_FAIL, EXIT_PASS, EXIT_USAGE, load_policy
from worthit.service.present import render

__all__ = ["run"]


def run(args: argparse.Namespace, out: TextIO, environ: Mapping[str, str] | None = None) -> int:
    """`worthit gate`: find, evaluate and judge the worthit block; the exit status is the check's result."""
    env = os.environ if environ is None else environ

    def option(name: str, variable: str) -> str | None:
        value = getattr(args, name, None) or env.get(variable, "")
        return value or None

    report = Report(
        out=out,
        summary_path=option("summary", "GITHUB_STEP_SUMMARY"),
        actions=env.get("GITHUB_ACTIONS", "").lower() == "true",
        output_path=env.get("GITHUB_OUTPUT") or None,
    )
    try:
        return _gate(args, report, option, env)
    except UsageError as exc:
        print(printable(f"worthit gate: {exc}"), file=sys.stderr)
        report.annotate("error", f"the gate could not run: {exc}")
        return EXIT_USAGE


def _gate(
    args: argparse.Namespace, report: Report, option: Callable[[str, str], str | None], env: Mapping[str, str]
) -> int:
    policy_file = option("policy_file", "WORTHIT_GATE_POLICY_FILE")
    policy = load_policy(policy_file)
    missing = option("missing", "WORTHIT_GATE_MISSING") or policy.gate.missing_block
    if missing not in MISSING_CHOICES:
        where = "--missing" if option("missing", "WORTHIT_GATE_MISSING") else "the policy's gate.missing_block"
        raise UsageError(f"expected {where} to be skip or fail, got {missing!r}")
    url, server_policy = option("url", "WORTHIT_GATE_URL"), option("policy", "WORTHIT_GATE_POLICY")
    if server_policy and not url:
        raise UsageError("--policy names a server's policy and needs --url; offline, use --policy-file")

    if args.event is not None:
        if not args.event:
            # `--event "$GITHUB_EVENT_PATH"` outside a workflow: the variable is unset, the path empty.
            raise UsageError("--event needs the path of a pull_request event file ($GITHUB_EVENT_PATH is empty here)")
        body = body_from_event(args.event)
    else:
        body = body_from_file(args.body)
    blocks = find_blocks(body)
    if not blocks and args.body and (whole := bare_proposal(body)) is not None:
        blocks = [whole]
    if not blocks:
        return _missing(report, missing)
    block = blocks[0]
    if len(blocks) > 1:
        others = ", ".join(str(other.line) for other in blocks[1:])
        report.annotate(
            "notice",
            f"{len(blocks)} worthit blocks found; evaluated the first (line {block.line}), "
            f"ignored those at line {others}",
        )
    try:
        parsed = parse_block(block)
        decision_url = None
        if url:
            detail = pull_request_detail(args.event) if args.event else {}
            remote = decide_remote(
                url, parsed, token=env.get("WORTHIT_TOKEN") or None, policy=server_policy, detail=detail
            )
            evaluation, decision_url = remote.evaluation, remote.decision_url
        elif parsed.proposal.p is None:
            raise invalid_block(
                block,
                parsed.tree,
                "a `profile_id` is resolved by a server: run the gate with --url, or give `p`",
                "/profile_id",
                {},
            )
        elif parsed.proposal.replay is not None:
            # Only a profile's own replay is decided on: offline, nobody replayed a trace for this one.
            raise invalid_block(
                block, parsed.tree, "`replay` is set by worthit from a profile's trace, never by hand", "/replay", {}
            )
        else:
            evaluation = evaluate(parsed.proposal, policy)
    except BlockError as exc:
        return _malformed(report, exc)
    except InvalidInput as exc:  # decoded, but the engine cannot evaluate it offline (e.g. a profile_id)
        return _malformed(report, BlockError(exc.detail, block.line, ".".join(from_pointer(exc.pointer))))

    outcome = judge(evaluation.verdict, policy.gate)
    measured = parsed.proposal.scope.measured
    report.log(render.terminal(evaluation, measured=measured))
    source = f"by {url}" if url else "offline"
    report.summary(
        summary_markdown(
            evaluation,
            outcome,
            policy.gate,
            block=block,
            blocks=len(blocks),
            title=parsed.proposal.title,
            source=source,
            measured=measured,
            decision_url=decision_url,
        )
    )
    report.annotate(outcome.level, evaluation.statement, f"worthit: {evaluation.verdict}")
    report.outputs(
        {
            "verdict": evaluation.verdict,
            "rule": evaluation.deciding_rule,
            "passed": "true" if outcome.passed else "false",
            "decision-url": decision_url or "",
        }
    )
    return outcome.exit_code


def _missing(report: Report, missing: str) -> int:
    if missing == "fail":
        text = f"No worthit block in the pull request description: add a worthit block ({TEMPLATE_HINT})."
        report.log(text)
        report.summary(message_markdown("no proposal — add a worthit block", "error", text))
        report.annotate("error", text)
        report.outputs({"verdict": "", "rule": "", "passed": "false", "decision-url": ""})
        return EXIT_FAIL
    text = "No worthit block in the pull request description; the gate is skipped."
    report.log(text)
    report.summary(message_markdown("skipped — no worthit block", "notice", text))
    report.annotate("notice", text)
    report.outputs({"verdict": "", "rule": "", "passed": "true", "decision-url": ""})
    return EXIT_PASS


def _malformed(report: Report, exc: BlockError) -> int:
    text = f"The worthit block is malformed at {exc}"
    report.log(text)
    report.summary(message_markdown("malformed block", "error", text))
    report.annotate("error", text, "worthit: malformed block")
    report.outputs({"verdict": "", "rule": "", "passed": "false", "decision-url": ""})
    return EXIT_FAIL
