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
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TextIO

import msgspec
import yaml

from worthit.rules.engine import evaluate
from worthit.rules.errors import InvalidInput, PolicyError
from worthit.rules.model import Evaluation, Proposal, Verdict
from worthit.rules.policy import Gate, Policy, default_policy, parse_policy
from worthit.service import units
from worthit.service.present.render import terminal as render
from worthit.service.validation import decode_strict

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
LANGUAGE = "worthit"
MISSING_CHOICES = ("skip", "fail")
TEMPLATE_HINT = "see .github/pull_request_template.md"

Level = Literal["notice", "warning", "error"]


class UsageError(Exception):
    """The gate cannot run: exit 2. Not the author's block, but the job's setup (or the server)."""


class BlockError(Exception):
    """A malformed worthit block: exit 1, naming the line of the PR description and the field."""

    def __init__(self, detail: str, line: int, field: str = "") -> None:
        super().__init__(detail)
        self.detail = detail
        self.line = line
        self.field = field

    def __str__(self) -> str:
        where = f"line {self.line}" + (f", field `{self.field}`" if self.field else "")
        return f"{where}: {self.detail}"


# ---------------------------------------------------------------------------------------------------------------
# Reading the pull request description


def body_from_event(path: str) -> str:
    """`pull_request.body` of a GitHub event file (`$GITHUB_EVENT_PATH`); `""` when the body is `null`."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the event file {path}: {exc.strerror or exc}") from exc
    try:
        event = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise UsageError(f"expected a GitHub event (JSON) in {path}: {exc}") from exc
    pull_request = event.get("pull_request") if isinstance(event, dict) else None
    if not isinstance(pull_request, dict):
        raise UsageError(
            f"{path} is not a pull_request event (no `pull_request` object); run the gate on `pull_request` events"
        )
    body = pull_request.get("body")
    if body is None:
        return ""
    if not isinstance(body, str):
        raise UsageError(f"expected `pull_request.body` to be a string or null in {path}, got {type(body).__name__}")
    return body


def body_from_file(path: str) -> str:
    """A description from a Markdown file, or from standard input for `-`."""
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return raw.decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------------------------
# Finding the block


@dataclass(frozen=True, slots=True)
class Block:
    """The YAML text of one worthit block, and where its opening fence is in the description (1-based)."""

    text: str
    line: int

    def body_line(self, block_line: int) -> int:
        """The description's line number of the block's 0-based content line."""
        return self.line + 1 + block_line


_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def normalise_newlines(text: str) -> str:
    """GitHub stores descriptions typed in the browser with CRLF; a leading BOM can come with pasted files."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def find_blocks(body: str) -> list[Block]:
    """Every worthit block of a Markdown description, in order (see the module docstring for the rules)."""
    lines = normalise_newlines(body).split("\n")
    blocks: list[Block] = []
    index, in_comment = 0, False
    while index < len(lines):
        line = lines[index]
        if in_comment:
            in_comment = "-->" not in line
            index += 1
            continue
        opening = _FENCE.match(line)
        if opening is None or (opening["fence"][0] == "`" and "`" in opening["info"]):
            stripped = line.lstrip()
            in_comment = stripped.startswith("<!--") and "-->" not in stripped[4:]
            index += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = index + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        words = opening["info"].split()
        if words and words[0].lower() == LANGUAGE:
            content = [_dedent(text, indent) for text in lines[index + 1 : end]]
            blocks.append(Block(text="\n".join(content), line=index + 1))
        index = end + 1
    return blocks


def bare_proposal(body: str) -> Block | None:
    """A file of proposal fields without the fence (`gate --body proposal.yaml`) as one block, else None.

    Only a YAML mapping whose keys are all a proposal's fields counts, so a description that happens to read as
    YAML (`Title: …`) is still a description without a block.
    """
    text = normalise_newlines(body)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict) or not data or not set(map(str, data)) <= set(Proposal.__struct_fields__):
        return None
    return Block(text=text, line=0)


def _dedent(line: str, indent: int) -> str:
    spaces = len(line) - len(line.lstrip(" "))
    return line[min(spaces, indent) :]


# ---------------------------------------------------------------------------------------------------------------
# Parsing and validating the block


@dataclass(frozen=True, slots=True)
class Parsed:
    """A validated proposal and the JSON sent to a server (the forgiven values, exactly as validated)."""

    proposal: Proposal
    json: bytes
    block: Block
    tree: yaml.Node = field(repr=False)


def parse_block(block: Block, defaults: Mapping[str, object] | None = None) -> Parsed:
    """Parse the block's YAML safely and validate it as a Proposal; a `BlockError` names the line and field.

    `defaults` fill fields the block leaves out (`worthit review --profile` names the profile it reads)."""
    try:
        tree = yaml.compose(block.text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(block.text)
    except yaml.YAMLError as exc:
        raise _yaml_error(block, exc) from exc
    if tree is None or data is None:
        raise BlockError(f"the worthit block is empty; fill in at least `p` and `k` ({TEMPLATE_HINT})", block.line)
    if not isinstance(data, dict) or not isinstance(tree, yaml.MappingNode):
        raise BlockError(
            f"expected the worthit block to be YAML `field: value` lines (`p: 21%`), got a {type(data).__name__}",
            block.body_line(tree.start_mark.line),
        )
    _reject_duplicates(block, tree)
    if defaults:
        data = {**defaults, **data}
    written: dict[str, str] = {}
    document = units.forgive(data, written)
    try:
        body = msgspec.json.encode(document)
    except (TypeError, msgspec.EncodeError) as exc:
        raise BlockError(f"expected plain YAML values: {exc}", block.line) from exc
    return Parsed(proposal=validate(body, block, tree, written), json=body, block=block, tree=tree)


def read_proposal(text: str, defaults: Mapping[str, object] | None = None) -> Proposal:
    """A proposal from a whole JSON or YAML document (`worthit review`), values read as every surface reads them.

    JSON is decoded as JSON (so its errors say so); anything else is read as the YAML of a worthit block whose
    lines are the document's. Raises `InvalidInput` (JSON) or `BlockError` (YAML), each naming the field.
    """
    text = normalise_newlines(text)
    if text.lstrip().startswith(("{", "[")):
        try:
            data = msgspec.json.decode(text.encode())
        except msgspec.DecodeError as exc:
            try:  # YAML's flow style looks like JSON: `{p: 21%, k: 10}`
                return parse_block(Block(text=text, line=0), defaults).proposal
            except BlockError as yaml_exc:
                if not yaml_exc.detail.startswith("not valid YAML"):
                    raise
            raise InvalidInput(f"expected a JSON or YAML proposal: {exc}") from exc
        if isinstance(data, dict) and defaults:
            data = {**defaults, **data}
        proposal: Proposal = decode_strict(msgspec.json.encode(units.forgive(data)), Proposal)
        return proposal
    return parse_block(Block(text=text, line=0), defaults).proposal


def validate(body: bytes, block: Block, tree: yaml.Node, written: Mapping[str, str] | None = None) -> Proposal:
    """Decode the JSON of the block as strictly as `POST /v1/evaluate` does."""
    try:
        proposal: Proposal = decode_strict(body, Proposal)
    except InvalidInput as exc:
        raise invalid_block(block, tree, exc.detail, exc.pointer, written or {}) from exc
    return proposal


def invalid_block(block: Block, tree: yaml.Node, detail: str, pointer: str, written: Mapping[str, str]) -> BlockError:
    """A validation problem at a JSON pointer, placed on the line of the description where the field is."""
    if not pointer:
        # Cross-field checks name their field in the message but carry no pointer.
        named = re.search(r"`([a-z_]+)`", detail)
        pointer = f"/{named.group(1)}" if named else ""
    line, node = locate(tree, pointer)
    message, at, path = detail.partition(" - at `")
    if pointer in written:
        message += f" (written `{written[pointer]}`)"
    parts = tuple(pointer.strip("/").split("/"))
    if parts in units.SHARE_FIELDS and isinstance(node, yaml.ScalarNode):
        try:
            number = float(node.value)
        except ValueError:
            number = 0.0
        if 1 < number <= 100:
            message += f"; for a percentage write `{node.value}%`"
    return BlockError(message + at + path, block.body_line(line), ".".join(parts) if pointer else "")


def locate(tree: yaml.Node, pointer: str) -> tuple[int, yaml.Node | None]:
    """The block's 0-based line of the field at a JSON pointer (its key's line, else the nearest parent's found),
    and the field's node (`None` when the field is absent)."""
    line, node = int(tree.start_mark.line), tree
    for part in (part for part in pointer.split("/") if part):
        if isinstance(node, yaml.MappingNode):
            found = next(
                (pair for pair in node.value if isinstance(pair[0], yaml.ScalarNode) and pair[0].value == part), None
            )
            if found is None:
                return line, None
            line, node = int(found[0].start_mark.line), found[1]
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
            line = int(node.start_mark.line)
        else:
            return line, None
    return line, node


def _reject_duplicates(block: Block, node: yaml.Node, path: str = "") -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            name = str(key.value)
            where = f"{path}.{name}" if path else name
            if name in seen:
                first = block.body_line(seen[name])
                line = block.body_line(key.start_mark.line)
                raise BlockError(f"`{where}` is given twice (first on line {first}); keep one", line, where)
            seen[name] = key.start_mark.line
            _reject_duplicates(block, value, where)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _reject_duplicates(block, item, f"{path}[{index}]")


def _yaml_error(block: Block, exc: yaml.YAMLError) -> BlockError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = block.body_line(mark.line) if mark is not None else block.line
    problem = getattr(exc, "problem", None) or str(exc)
    detail = f"not valid YAML: {problem}"
    if "mapping values are not allowed" in problem:
        detail += " (quote a value that contains `: `)"
    elif "found character '\\t'" in problem:
        detail += " (indent with spaces, not tabs)"
    field_name = ""
    if mark is not None:
        lines = block.text.split("\n")
        if mark.line < len(lines) and (key := re.match(r"\s*-?\s*([A-Za-z_][\w.]*)\s*:", lines[mark.line])):
            field_name = key.group(1)
    return BlockError(detail, line, field_name)


# ---------------------------------------------------------------------------------------------------------------
# Evaluating


def evaluate_remote(
    url: str, parsed: Parsed, *, token: str | None, policy: str | None, attempts: int = 2
) -> Evaluation:
    """`POST {url}/v1/evaluate` with the block's JSON; a 422 is the author's block, anything else the job's setup."""
    import httpx

    endpoint = url.rstrip("/") + "/v1/evaluate"
    headers = {"content-type": "application/json", "accept": "application/json", "user-agent": "worthit-gate"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    params = {"policy": policy} if policy else None
    attempt = 1
    while True:
        try:
            response = httpx.post(endpoint, content=parsed.json, headers=headers, params=params, timeout=30)
        except httpx.HTTPError as exc:
            if attempt >= attempts:
                raise UsageError(f"cannot reach {endpoint}: {exc}") from exc
        else:
            if response.status_code not in (502, 503, 504) or attempt >= attempts:
                break
        # A server restarting behind a load balancer answers 502-504 for a moment; one retry rides it out.
        attempt += 1
        time.sleep(1)
    if response.status_code == 200:
        try:
            return msgspec.json.decode(response.content, type=Evaluation)
        except msgspec.DecodeError as exc:
            raise UsageError(f"{endpoint} answered 200 but not with an evaluation: {exc}") from exc
    problem = _problem(response.content)
    detail = str(problem.get("detail") or response.reason_phrase)
    if response.status_code == 422 and str(problem.get("type", "")).endswith("/validation"):
        errors = problem.get("errors")
        first = errors[0] if isinstance(errors, list) and errors else {}
        pointer = str(first.get("pointer", "")) if isinstance(first, dict) else ""
        raise invalid_block(parsed.block, parsed.tree, detail, pointer, {})
    if response.status_code in (401, 403):
        raise UsageError(
            f"{endpoint} refused the request ({response.status_code}: {detail}); set WORTHIT_TOKEN to a token "
            "with the read scope (a repository secret)"
        )
    raise UsageError(f"{endpoint} answered {response.status_code}: {detail}")


def _problem(content: bytes) -> dict[str, object]:
    try:
        decoded = msgspec.json.decode(content)
    except msgspec.DecodeError:
        return {}
    return decoded if isinstance(decoded, dict) else {}


# ---------------------------------------------------------------------------------------------------------------
# Judging and reporting


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
    """`::error title=…::message`, escaped: the message may carry text from the PR description."""
    return f"::{level} title={escape_property(title)}::{escape_data(message)}"


def _md(text: str) -> str:
    """Text from the description or the engine, made inert in Markdown (no raw HTML, no table breaks)."""
    return " ".join(text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|").split())


MARK: dict[Level, str] = {"notice": "✅", "warning": "⚠️", "error": "❌"}


def summary_markdown(
    evaluation: Evaluation, outcome: Outcome, gate: Gate, *, block: Block, blocks: int, title: str | None, source: str
) -> str:
    """The job summary: the verdict, the statement, a table of figures and the findings."""
    from worthit.rules.text import ms, pct, times, weeks

    a = evaluation.amdahl
    state = "passes" if outcome.level == "notice" else "passes with a warning" if outcome.passed else "fails the gate"
    lines = [f"## {MARK[outcome.level]} worthit: `{evaluation.verdict}` — {state}", ""]
    if title:
        lines += [f"**{_md(title)}**", ""]
    lines += [f"> {_md(evaluation.statement)}", "", "| figure | value |", "|---|---|"]
    ceiling = "unbounded" if a.ceiling_speedup is None else times(a.ceiling_speedup)
    rows = [("speedup", f"{times(a.speedup)} (ceiling {ceiling})")]
    saving = f"{pct(a.saving_fraction)} of the measured scope"
    rows.append(("saving", saving + (f" = {ms(a.saving_ms)}" if a.saving_ms is not None else "")))
    if a.baseline_ms is not None and a.new_ms is not None:
        rows.append(("time", f"{ms(a.baseline_ms)} → {ms(a.new_ms)}"))
    remaining = f", {ms(a.remaining_ms)} left" if a.remaining_ms is not None else ""
    rows.append(("headroom captured", f"{pct(a.headroom_captured)} of the target's own time{remaining}"))
    if a.cost_weeks is not None:
        rows.append(("cost", weeks(a.cost_weeks)))
    if a.rate is not None:
        rows.append(("return", f"{ms(a.rate) if a.rate_unit == 'ms/week' else pct(a.rate)} per engineer-week"))
    lines += [f"| {name} | {value} |" for name, value in rows]
    lines += ["", "**Findings**", ""]
    for finding in evaluation.findings:
        aside = f" — set aside by `{finding.overridden_by}`" if finding.overridden_by else ""
        lines.append(f"- `{finding.rule}` ({finding.effect}{aside}): {_md(finding.message)}")
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

    def log(self, text: str) -> None:
        """Log text that may carry the description's text, with workflow commands off while it prints."""
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


# ---------------------------------------------------------------------------------------------------------------
# The command


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
    )
    try:
        return _gate(args, report, option, env)
    except UsageError as exc:
        print(f"worthit gate: {exc}", file=sys.stderr)
        report.annotate("error", f"the gate could not run: {exc}")
        return EXIT_USAGE


def _gate(
    args: argparse.Namespace, report: Report, option: Callable[[str, str], str | None], env: Mapping[str, str]
) -> int:
    policy_file = option("policy_file", "WORTHIT_GATE_POLICY_FILE")
    policy = _load_policy(policy_file)
    missing = option("missing", "WORTHIT_GATE_MISSING") or policy.gate.missing_block
    if missing not in MISSING_CHOICES:
        where = "--missing" if option("missing", "WORTHIT_GATE_MISSING") else "the policy's gate.missing_block"
        raise UsageError(f"expected {where} to be skip or fail, got {missing!r}")
    url, server_policy = option("url", "WORTHIT_GATE_URL"), option("policy", "WORTHIT_GATE_POLICY")
    if server_policy and not url:
        raise UsageError("--policy names a server's policy and needs --url; offline, use --policy-file")

    body = body_from_event(args.event) if args.event else body_from_file(args.body)
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
        if url:
            evaluation = evaluate_remote(url, parsed, token=env.get("WORTHIT_TOKEN") or None, policy=server_policy)
        elif parsed.proposal.p is None:
            raise invalid_block(
                block,
                parsed.tree,
                "a `profile_id` is resolved by a server: run the gate with --url, or give `p`",
                "/profile_id",
                {},
            )
        else:
            evaluation = evaluate(parsed.proposal, policy)
    except BlockError as exc:
        return _malformed(report, exc)
    except InvalidInput as exc:  # decoded, but the engine cannot evaluate it offline (e.g. a profile_id)
        return _malformed(report, BlockError(exc.detail, block.line, exc.pointer.strip("/").replace("/", ".")))

    outcome = judge(evaluation.verdict, policy.gate)
    report.log(render(evaluation))
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
        )
    )
    report.annotate(outcome.level, evaluation.statement, f"worthit: {evaluation.verdict}")
    return outcome.exit_code


def _load_policy(path: str | None) -> Policy:
    if path is None:
        return default_policy()
    try:
        return parse_policy(Path(path).read_bytes())
    except OSError as exc:
        raise UsageError(f"cannot read the policy file {path}: {exc.strerror or exc}") from exc
    except PolicyError as exc:
        raise UsageError(f"the policy file {path} is malformed: {exc}") from exc


def _missing(report: Report, missing: str) -> int:
    if missing == "fail":
        text = f"No worthit block in the pull request description: add a worthit block ({TEMPLATE_HINT})."
        report.log(text)
        report.summary(message_markdown("no proposal — add a worthit block", "error", text))
        report.annotate("error", text)
        return EXIT_FAIL
    text = "No worthit block in the pull request description; the gate is skipped."
    report.log(text)
    report.summary(message_markdown("skipped — no worthit block", "notice", text))
    report.annotate("notice", text)
    return EXIT_PASS


def _malformed(report: Report, exc: BlockError) -> int:
    text = f"The worthit block is malformed at {exc}"
    report.log(text)
    report.summary(message_markdown("malformed block", "error", text))
    report.annotate("error", text, "worthit: malformed block")
    return EXIT_FAIL
