"""`worthit gate`'s options, apart from the run so that building the command line imports no engine."""

from __future__ import annotations

import argparse

from worthit.service.gate.errors import MISSING_CHOICES

__all__ = ["configure"]


def configure(parser: argparse.ArgumentParser) -> None:
    """The `worthit gate` options. Each falls back to an environment variable, so CI passes inputs as env."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--event", metavar="PATH", help='a pull_request event file: --event "$GITHUB_EVENT_PATH"')
    source.add_argument("--body", metavar="FILE", help="the description as Markdown, or - for standard input")
    parser.add_argument("--url", help="evaluate on this worthit server (env WORTHIT_GATE_URL; token: WORTHIT_TOKEN)")
    parser.add_argument("--policy", metavar="NAME", help="with --url: the server's policy (env WORTHIT_GATE_POLICY)")
    parser.add_argument(
        "--policy-file",
        help="policy TOML: the offline policy, and the gate settings in both modes (env WORTHIT_GATE_POLICY_FILE)",
    )
    parser.add_argument(
        "--missing",
        choices=MISSING_CHOICES,
        help="a description without a worthit block: skip (pass) or fail; default the policy's gate.missing_block "
        "(env WORTHIT_GATE_MISSING)",
    )
    parser.add_argument("--summary", metavar="FILE", help="append the Markdown verdict (default $GITHUB_STEP_SUMMARY)")
