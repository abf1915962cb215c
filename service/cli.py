"""`worthit`: serve the API, review a proposal offline, migrate, export the OpenAPI spec, list the rules.

Exit status of `review`: 0 when the verdict passes the policy's gate (fund, fund_if), 1 when it fails it
(remeasure, redirect, decline by default), 2 for input that cannot be evaluated.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from worthit.service.gate.options import configure as configure_gate
from worthit.service.offline import EXIT_FAIL, EXIT_PASS, EXIT_USAGE, CannotRun, load_policy, regular_file

if TYPE_CHECKING:
    from types import FrameType

    from worthit.rules.model import Evaluation
    from worthit.rules.policy import Policy
    from worthit.rules.profiles import Breakdown
    from worthit.rules.profiles.kineto import Schedule
    from worthit.service.settings import Settings

# What a command needs is imported inside it: `worthit --version` and `worthit review` start in a fraction of the
# time the engine's profile readers, the server and the database layer would take to import (`make bench`).


# rules/profiles/model.py's KINDS, spelled here so that parsing the command line imports no reader (a test holds
# the two equal).
PHASE_KINDS = ("kernel", "comm", "copy", "alloc", "api", "cpu_op", "annotation", "other")
#: With `profile --summary`: what-if targets (PATTERN=K), one a line, when no --what-if is given.
WHAT_IF_ENV = "WORTHIT_WHAT_IF"


def _count(text: str) -> int:
    """A whole number >= 0 for an option (`--top 0`: no limit)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {value}")
    return value


def _say(message: str) -> None:
    """One line on stderr, its control characters escaped: messages quote file names and what the files hold."""
    from worthit.rules.names import printable

    print(printable(message), file=sys.stderr)


def _json(value: object) -> str:
    """`value` as one line of JSON for the terminal: what the encoder leaves raw (DEL, C1 controls) escaped too."""
    import msgspec

    from worthit.rules.names import printable

    return printable(msgspec.json.encode(value).decode(), json=True) + "\n"


def _lines(lines: list[str]) -> str:
    """A table for the terminal: each line escaped whole (names and titles come from the request's file)."""
    from worthit.rules.names import printable

    return "\n".join(map(printable, lines)) + "\n"


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    regular_file(path)
    return Path(path).read_bytes()


def _shown(filename: object, given: str) -> str:
    """The file an OSError is about (a `--profile` file, say), else the one given; `-` is standard input."""
    name = str(filename) if filename else given
    return "standard input" if name == "-" else name


def passes(evaluation: Evaluation, policy: Policy) -> bool:
    return evaluation.verdict not in policy.gate.fail_on


def cmd_review(args: argparse.Namespace, out: TextIO) -> int:
    """Evaluate a JSON or YAML proposal offline; exit 0 when the verdict passes the gate, 1 when not, 2 on bad input."""

    from worthit.rules.engine import evaluate
    from worthit.rules.errors import InvalidInput, PolicyError
    from worthit.rules.profiles.errors import ProfileError
    from worthit.service.gate.block import read_proposal
    from worthit.service.gate.errors import BlockError
    from worthit.service.present import render

    try:
        policy = load_policy(args.policy_file)
        text = _read(args.file).decode("utf-8", errors="replace")
        # The profile given on the command line stands for a stored one: name it so `p` may be left out.
        defaults = {"profile_id": Path(args.profile[0]).name[:200]} if args.profile else None
        proposal = read_proposal(text, defaults)
        if proposal.replay is not None:
            # Only the profile's own replay is decided on: the engine would otherwise fund on a figure nobody measured.
            raise InvalidInput("Expected no `replay`: worthit replays the trace given with --profile", "/replay")
        if args.profile:
            from worthit.rules.profiles.proposal import proposal_from_profile

            for path in args.profile:
                regular_file(path)
            breakdown = load_profile(args.profile, None, args.steps)
            schedules = load_schedules(args.profile, breakdown)
            notes: list[str] = []
            proposal = proposal_from_profile(proposal, breakdown, schedules, steps=args.steps, notes=notes)
            for note in notes:  # on stderr: stdout stays the review (or its JSON) alone
                print(f"worthit: {note}", file=sys.stderr)
        evaluation = evaluate(proposal, policy)
    except (InvalidInput, PolicyError, ProfileError, CannotRun) as exc:
        _say(f"worthit: {exc}")
        return EXIT_USAGE
    except BlockError as exc:
        _say(f"worthit: {args.file} {exc}")
        return EXIT_USAGE
    except OSError as exc:
        _say(f"worthit: cannot read {_shown(exc.filename, args.file)}: {exc.strerror or exc}")
        return EXIT_USAGE
    if args.chart:
        from worthit.service.present.charts import decision_chart

        try:
            Path(args.chart).write_text(decision_chart(proposal, evaluation.amdahl) + "\n", encoding="utf-8")
        except OSError as exc:
            _say(f"worthit: cannot write {args.chart}: {exc.strerror}")
            return EXIT_USAGE
        # On stderr: stdout stays the review (or its JSON) alone.
        print(f"worthit: wrote the chart to {args.chart} (an SVG: open it in a browser)", file=sys.stderr)
    if args.json:
        out.write(_json(evaluation))
    else:
        out.write(render.terminal(evaluation, measured=proposal.scope.measured, explain=args.explain) + "\n")
    return EXIT_PASS if passes(evaluation, policy) else EXIT_FAIL


def load_profile(paths: list[str], format: str | None, steps: str | None = None) -> Breakdown:
    """One breakdown from profiler files of one run (progress shown for large files)."""
    from worthit.service.present.terminal import read_with_progress, timed
    from worthit.service.profiles.parsing import parse

    files = [read_with_progress(Path(path)) for path in paths]
    names = [Path(path).name for path in paths]
    return timed("parsing", sum(map(len, files)), lambda: parse(files, format, steps, names))


def load_schedules(paths: list[str], breakdown: Breakdown) -> list[Schedule] | None:
    """The schedules of PyTorch traces with a device timeline (one per rank), which `review --profile` replays the
    change on; None for other formats, whose proposals keep Amdahl's arithmetic."""
    from worthit.rules.profiles.kineto import FORMAT, chunks_of, read_schedule_stream

    if breakdown.format != FORMAT or not breakdown.device_timeline:
        return None
    from worthit.rules.profiles.errors import ProfileError

    schedules = []
    try:
        for path in paths:
            with Path(path).open("rb") as handle:
                schedules.append(read_schedule_stream(chunks_of(handle), Path(path).name))
    except ProfileError as exc:
        print(f"worthit: the change is not replayed, Amdahl's share decides: {exc}", file=sys.stderr)
        return None
    return schedules


def cmd_profile(args: argparse.Namespace, out: TextIO) -> int:
    """The time breakdown of profiler output, largest first, with honest denominators."""

    from worthit.rules.profiles.errors import ProfileError
    from worthit.rules.profiles.report import render_table

    try:
        for path in args.files:  # before any is opened: a FIFO blocks the open, a device never ends
            regular_file(path)
        if args.what_if and not args.summary:
            return _profile_what_if(args, out)
        if args.summary:
            return _profile_summaries(args)
        if args.upload:
            return _profile_upload(args)
        breakdown = _profile_at_size(args)
        # PyTorch traces or rank summaries (read at size): summaries made with --what-if carry the run's what-if.
        joined = _summaries_what_if(args) if breakdown is not None else None
        if breakdown is None:
            breakdown = load_profile(args.files, args.format, args.steps)
    except (ProfileError, CannotRun) as exc:
        _say(f"worthit: {exc}")
        return EXIT_USAGE
    except OSError as exc:
        _say(f"worthit: cannot read {_shown(exc.filename, '-')}: {exc.strerror or exc}")
        return EXIT_USAGE
    if args.json:
        if joined is None:
            out.write(_json(breakdown))
        else:
            import msgspec

            doc = msgspec.to_builtins(breakdown)
            doc["what_if"] = msgspec.to_builtins(joined)
            out.write(_json(doc))
    else:
        top = args.top or None  # 0: every row
        out.write(render_table(breakdown, top=top, kinds=frozenset(args.kind) if args.kind else None) + "\n")
        if joined is not None:
            from worthit.rules.profiles.kineto import render_what_if

            out.write("\n" + _lines(render_what_if(joined).split("\n")))
    return EXIT_PASS


def _all_summaries(paths: list[str]) -> bool:
    from worthit.rules.profiles.kineto import SUMMARY_FORMAT
    from worthit.service.profiles.ranks import format_of

    return all(Path(path).is_file() and format_of(Path(path)) == SUMMARY_FORMAT for path in paths)


def _summaries_what_if(args: argparse.Namespace) -> Any:
    """Rank summaries made with ``--what-if``: the run's what-if joined from them (None otherwise)."""
    from worthit.service.profiles.ranks import summaries_what_if

    return summaries_what_if(args.files, args.format)


def _profile_what_if(args: argparse.Namespace, out: TextIO) -> int:
    """``--what-if PATTERN=K``: the PyTorch traces (one per rank) replayed with the targets faster."""

    from worthit.rules.profiles.kineto import (
        chunks_of,
        parse_steps,
        parse_target,
        read_schedule_stream,
        render_what_if,
        what_if,
    )

    if args.upload:
        _say("worthit: --what-if replays the traces themselves: not with --upload")
        return EXIT_USAGE
    if args.format not in (None, "pytorch_trace"):
        _say(f"worthit: --what-if replays PyTorch traces, not --format {args.format}")
        return EXIT_USAGE
    targets = [parse_target(text) for text in args.what_if]
    if _all_summaries(args.files):
        print(
            "worthit: rank summaries carry the what-if they were made with (worthit profile --summary --what-if "
            "PATTERN=K TRACE -o SUMMARY): combine them without --what-if (worthit profile SUMMARY...)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    steps = parse_steps(args.steps) if args.steps else None
    schedules = []
    for path in args.files:
        with Path(path).open("rb") as handle:
            schedules.append(read_schedule_stream(chunks_of(handle), Path(path).name))
    result = what_if(schedules, targets, steps)
    if args.json:
        out.write(_json({"what_if": result}))
    else:  # kernel names come from the traces: escaped like every table
        out.write(_lines(render_what_if(result).split("\n")))
    return EXIT_PASS


def _profile_at_size(args: argparse.Namespace) -> Breakdown | None:
    """PyTorch traces streamed, their ranks mapped over `--jobs` processes; rank summaries combined (None: other
    formats, read as bytes)."""
    from worthit.service.profiles.ranks import load_run

    return load_run(args.files, args.format, args.steps, jobs=args.jobs, show=not args.json)


def _profile_summaries(args: argparse.Namespace) -> int:
    """``--summary``: each trace's rank summary written to -o (a file for one trace, a folder for several)."""
    import json

    from worthit.service.profiles.ranks import write_summaries

    # The targets from --what-if, else one a line from WORTHIT_WHAT_IF (how the deploy examples pass them through).
    what_if = args.what_if or [line.strip() for line in os.environ.get(WHAT_IF_ENV, "").splitlines() if line.strip()]
    written = write_summaries(args.files, args.output, args.steps, jobs=args.jobs, show=not args.json, what_if=what_if)
    if args.json:
        print(json.dumps([str(path) for path in written]))
    else:
        more = f" and {len(written) - 1} more in {written[0].parent}" if len(written) > 1 else ""
        _say(f"wrote {written[0]}{more}")
    return EXIT_PASS


def _profile_upload(args: argparse.Namespace) -> int:
    """``--upload URL``: rank summaries stored on a worthit server as one run (token: WORTHIT_TOKEN)."""
    from worthit.service.profiles.ranks import upload_summaries

    location = upload_summaries(args.files, args.upload, os.environ.get("WORTHIT_TOKEN") or None, args.name)
    from worthit.rules.names import printable

    print(printable(location))  # the server's Location header
    return EXIT_PASS


def _request(path: str, type_: Any, *, proposals: bool = False) -> Any:
    """A plan or portfolio request from a JSON or YAML file, values read as `worthit review` reads them."""
    from worthit.service.gate.block import read_request
    from worthit.service.validation import decode_strict

    return decode_strict(read_request(_read(path).decode("utf-8", errors="replace"), proposals=proposals), type_)


def cmd_plan(args: argparse.Namespace, out: TextIO) -> int:
    """The fewest phases to reach a target, the alternatives for the last step, and the ceilings."""
    import msgspec

    from worthit.rules.errors import InvalidInput, PolicyError
    from worthit.rules.plans import PlanRequest, plan_for
    from worthit.rules.text import ms, times

    try:
        policy = load_policy(args.policy_file)
        result = plan_for(_request(args.file, PlanRequest), policy)
    except (InvalidInput, PolicyError, msgspec.DecodeError, CannotRun) as exc:
        _say(f"worthit: {exc}")
        return EXIT_USAGE
    except OSError as exc:
        _say(f"worthit: cannot read {_shown(exc.filename, args.file)}: {exc.strerror or exc}")
        return EXIT_USAGE
    if args.json:
        out.write(_json(result))
        return EXIT_PASS if result.reachable else EXIT_FAIL
    lines = [result.message, "", f"  {'step':<5} {'phase':<32} {'saving':>10} {'running':>10} {'speedup':>9}"]
    for step in result.steps:
        lines.append(
            f"  {step.step:<5} {step.phase[:32]:<32} {ms(step.saving_ms):>10} {ms(step.new_ms):>10} "
            f"{times(step.speedup) if step.speedup else '∞':>9}"
        )
    if len(result.last_step_options) > 1:
        lines.append("  last step, any of:")
        lines += [
            f"        {o.phase[:32]:<32} {ms(o.saving_ms):>10} {ms(o.new_ms):>10}" for o in result.last_step_options
        ]
    rows = [("all kernels at k", result.all_at_k.new_ms, result.all_at_k.speedup)]
    if result.k_needed is not None:  # out of reach at the k given, not at every k: the one k that reaches it
        needed = "∞" if result.k_needed == "inf" else times(result.k_needed)
        rows.append((f"all kernels at {needed}", result.target_ms, result.target_speedup))
    rows.append(("all kernels at zero", result.all_at_zero.new_ms, result.all_at_zero.speedup))
    for name, new_ms, speedup in rows:
        lines.append(f"  {name:<38} {ms(new_ms):>21} {times(speedup) if speedup else '∞':>9}")
    out.write(_lines(lines))
    return EXIT_PASS if result.reachable else EXIT_FAIL


def cmd_portfolio(args: argparse.Namespace, out: TextIO) -> int:
    """Proposals ranked by return per engineer-week, the funded set, the combined speedup."""
    import msgspec

    from worthit.rules.errors import InvalidInput, PolicyError
    from worthit.rules.portfolio import PortfolioRequest, portfolio

    try:
        policy = load_policy(args.policy_file)
        request = _request(args.file, PortfolioRequest, proposals=True)
        result = portfolio(request.proposals, policy, request.budget_weeks)
    except (InvalidInput, PolicyError, msgspec.DecodeError, CannotRun) as exc:
        _say(f"worthit: {exc}")
        return EXIT_USAGE
    except OSError as exc:
        _say(f"worthit: cannot read {_shown(exc.filename, args.file)}: {exc.strerror or exc}")
        return EXIT_USAGE
    if args.json:
        out.write(_json(result))
        return EXIT_PASS
    lines = [result.message, ""]
    for entry in result.entries:
        mark = "funded" if entry.funded else "-"
        lines.append(f"  {entry.rank:>2}. {(entry.title or entry.target or '?')[:40]:<40} {entry.verdict:<9} {mark}")
        if entry.note:  # why it is not funded, what a memory fix is valued on: the table alone cannot say
            lines.append(f"      {entry.note}")
    out.write(_lines(lines))
    return EXIT_PASS


def cmd_migrate(args: argparse.Namespace, out: TextIO) -> int:
    import asyncio

    from worthit.service.db import migrate
    from worthit.service.db.engine import create_engine
    from worthit.service.settings import Settings

    settings = Settings.from_env(database_url=args.database)
    applied = _log_migrations(settings.log_level, quiet=getattr(args, "quiet", False))

    async def run() -> str | None:
        engine = create_engine(settings)
        try:
            await _wait_for_database(engine, settings.database_wait_seconds)
            await migrate.upgrade(engine)
            return await migrate.current_revision(engine)
        finally:
            await engine.dispose()

    with _using_database():
        revision = asyncio.run(run())
    out.write(f"database at revision {revision} ({_migrations(applied.count)} applied)\n")
    return EXIT_PASS


def _migrations(count: int) -> str:
    return "no migration" if count == 0 else f"{count} migration{'s' if count > 1 else ''}"


async def _wait_for_database(engine: Any, seconds: float) -> None:
    """Return once the database accepts a connection, trying for up to `seconds`; then let the error through.

    A migration started beside its database (compose tools that ignore `depends_on` conditions, a Job scheduled
    before the server is up) would otherwise fail on its first try and, being one-shot, never run again.
    """
    import asyncio
    import time

    deadline = time.monotonic() + seconds
    while True:
        try:
            async with engine.connect():
                return
        # Refused, a name not resolved yet, "the database system is starting up": drivers raise each differently.
        except Exception as exc:
            if time.monotonic() >= deadline:
                raise
            _say(f"worthit: waiting for the database ({type(exc).__name__})")
            await asyncio.sleep(1)


class _Applied(logging.Handler):
    """Counts the revisions Alembic applies ("Running upgrade A -> B"), printing nothing."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += record.getMessage().startswith("Running upgrade")


def _log_migrations(level: str, *, quiet: bool = False) -> _Applied:
    """Let Alembic say which revisions it applies ("Running upgrade A -> B"): what a migration job's log is for.
    `quiet` (the server's own migration at start) keeps only the count, which the caller prints in one line: a person
    starting `worthit serve` wants to know where to go, not the schema's history."""
    logger = logging.getLogger("alembic.runtime.migration")
    for old in [handler for handler in logger.handlers if isinstance(handler, _Applied | logging.StreamHandler)]:
        logger.removeHandler(old)
    applied = _Applied()
    logger.addHandler(applied)
    configured = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    if not quiet:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s:     alembic: %(message)s"))
        handler.setLevel(configured)
        logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(min(configured, logging.INFO))  # the count needs the INFO records, whatever is printed
    return applied


def _with_engine(database: str | None, work: Any, *, upgrade: bool = True) -> Any:
    """Run `work(engine)` on the database (migrated first unless `upgrade` is false) and dispose of the engine."""
    import asyncio

    from worthit.service.db import migrate
    from worthit.service.db.engine import create_engine
    from worthit.service.settings import Settings

    settings = Settings.from_env(database_url=database)

    async def run() -> Any:
        engine = create_engine(settings)
        try:
            if upgrade:
                await migrate.upgrade(engine)
            return await work(engine)
        finally:
            await engine.dispose()

    with _using_database():
        return asyncio.run(run())


def _token_name(text: str) -> str:
    """A token's name, checked as every surface checks names (rules/names.py)."""
    from worthit.rules.names import NAME_RULE, is_name

    if not is_name(text):
        raise argparse.ArgumentTypeError(f"expected a name of {NAME_RULE}, got {text!r}")
    return text


def cmd_token(args: argparse.Namespace, out: TextIO) -> int:
    """Create (printing the token alone on stdout, once), revoke or list bearer tokens."""
    from worthit.service.db.tokens import TokenStore
    from worthit.service.errors import Conflict

    if args.action == "create":
        try:
            token = _with_engine(args.database, lambda engine: TokenStore(engine).create(args.name, args.scope))
        except Conflict as exc:
            print(f"worthit: {exc}", file=sys.stderr)
            return EXIT_USAGE
        print(f"created token {args.name!r} with scope {args.scope}; it is shown once, below", file=sys.stderr)
        try:
            out.write(token + "\n")
            out.flush()
        except OSError as exc:
            _discard_output(out)
            print(
                f"worthit: token {args.name!r} was created but could not be written to standard output "
                f"({exc.strerror or exc}); revoke it (worthit token revoke {args.name}) and create another",
                file=sys.stderr,
            )
            return EXIT_FAIL
        return EXIT_PASS
    if args.action == "revoke":
        if _with_engine(args.database, lambda engine: TokenStore(engine).revoke(args.name)):
            print(f"revoked token {args.name!r}", file=sys.stderr)
            return EXIT_PASS
        _say(f"worthit: no active token named {args.name!r}")
        return EXIT_FAIL
    for row in _with_engine(args.database, lambda engine: TokenStore(engine).list()):
        state = "revoked" if row["revoked_at"] else "active"
        out.write(f"{row['name']}\t{row['scopes']}\t{state}\t{row['created_at']:%Y-%m-%d}\n")
    return EXIT_PASS


def _discard_output(out: TextIO) -> None:
    """Point `out`'s descriptor at the null device, so what its buffer still holds does not fail again at exit (the
    recipe of Python's documentation for a closed pipe)."""
    try:
        descriptor = out.fileno()
    except (OSError, ValueError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, descriptor)
    os.close(null)


def openapi_document() -> str:
    import json

    from worthit.service.app import create_app
    from worthit.service.http.openapi import document
    from worthit.service.settings import Settings

    schema = document(create_app(Settings(migrate_on_start=False)))
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def cmd_openapi(args: argparse.Namespace, out: TextIO) -> int:
    document = openapi_document()
    if args.output == "-":
        out.write(document)
        return EXIT_PASS
    try:
        Path(args.output).write_text(document, encoding="utf-8")
    except OSError as exc:
        _say(f"worthit: cannot write {args.output}: {exc.strerror or exc}")
        return EXIT_USAGE
    print(f"wrote {args.output}", file=sys.stderr)
    return EXIT_PASS


def cmd_rules(args: argparse.Namespace, out: TextIO) -> int:
    """`worthit rules`: an index, one line a rule, by stage; `worthit rules ID` (or `all`) the explanations in full."""
    import difflib

    from worthit.rules.checks import BY_ID, CHECKS, explanations

    if args.rule is None:
        out.write(_rule_index(CHECKS) + "\n")
        return EXIT_PASS
    docs = [explanation for rule, explanation in explanations() if args.rule in ("all", rule)]
    if not docs:
        close = difflib.get_close_matches(args.rule, BY_ID, n=1, cutoff=0.6)
        hint = f"did you mean `{close[0]}`? " if close else ""
        _say(f"worthit: no rule `{args.rule}`; {hint}`worthit rules` lists them all")
        return EXIT_USAGE
    for explanation in docs:
        out.write(explanation + "\n\n")
    return EXIT_PASS


def _rule_index(checks: Sequence[Any]) -> str:
    """One line a rule (its id and the summary its docstring opens with), grouped by the stage it answers."""
    stages: dict[str, list[str]] = {}
    width = max(len(module.ID) for module in checks)
    for module in checks:
        summary = (module.__doc__ or "").strip().split("\n\n", 1)[0].partition(" — ")[2]
        stages.setdefault(module.STAGE, []).append(f"  {module.ID:<{width}}  {' '.join(summary.split())}")
    lines = [f"{stage}\n" + "\n".join(rows) for stage, rows in stages.items()]
    return "\n\n".join(lines) + "\n\n`worthit rules ID` explains one rule in full; `worthit rules all` every rule."


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    import signal

    import uvicorn

    from worthit.service.http.protocol import guarded
    from worthit.service.settings import Settings, is_loopback

    overrides = {"host": args.host, "port": args.port, "database_url": args.database, "workers": args.workers}
    settings = Settings.from_env(**overrides, migrate_on_start=False if args.no_migrate else None)
    for key, value in overrides.items():
        if value is not None:
            os.environ[f"WORTHIT_{key.upper()}"] = str(value)
    if problem := _cannot_listen(settings.host, settings.port):
        # Before migrating or starting anything: uvicorn would log its start-up, then fail and exit 3.
        _say(f"worthit: cannot listen on {settings.host}:{settings.port}: {problem}")
        return EXIT_USAGE
    if settings.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        import tempfile

        # Workers are separate processes: let /metrics add up all of them, whichever answers.
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="worthit-metrics-")
    if settings.migrate_on_start:
        # Migrate once here, before any worker starts, so workers never race over the schema.
        cmd_migrate(argparse.Namespace(database=settings.database_url, quiet=True), sys.stderr)
    elif problem := _schema_problem(settings):
        # Another step owns the schema (a migration job); serving code newer than the schema would fail per request.
        _say(f"worthit: refusing to serve: {problem}")
        return EXIT_FAIL
    if not is_loopback(settings.host) and not settings.require_auth:
        from worthit.service.db.tokens import TokenStore

        # The schema is current by now (migrated above, or checked): read it, never change it here.
        if not _with_engine(settings.database_url, lambda e: TokenStore(e).any_active(), upgrade=False):
            print(
                f"worthit: refusing to serve on {settings.host} with authentication off; create a token "
                "(worthit token create --scope write --name NAME) or set WORTHIT_REQUIRE_AUTH=1",
                file=sys.stderr,
            )
            return EXIT_USAGE
    os.environ["WORTHIT_MIGRATE_ON_START"] = "0"
    # uvicorn drains in-flight requests and closes the app on SIGTERM, then raises the signal again for the
    # program's own handler: ours makes that stop an exit 0 rather than death by signal (143).
    signal.signal(signal.SIGTERM, _exit_cleanly)
    print(
        f"worthit: open {_browse_url(settings.host, settings.port)}/decisions in a browser; the API is under /v1 "
        "(its document at /schema). Ctrl+C stops.",
        file=sys.stderr,
        flush=True,
    )
    proxies = settings.trusted_proxy_networks
    uvicorn.run(
        "worthit.service.app:create_app",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=settings.log_level,
        access_log=False,  # the app writes its own JSON access line per request (service/observability.py)
        timeout_graceful_shutdown=10,
        # The client is the socket's peer unless that peer is a configured proxy: uvicorn's default believes
        # X-Forwarded-For from loopback, which let one local client pose as a new address (a new bucket) per request.
        proxy_headers=bool(proxies),
        forwarded_allow_ips=",".join(proxies) or None,
        timeout_keep_alive=settings.keep_alive_timeout_seconds,
        # httptools has no header size limit and no header deadline: this protocol answers 431 beyond the size
        # setting and closes a connection whose headers do not arrive in time.
        http=guarded(settings.header_timeout_seconds),
    )
    return EXIT_PASS


def _browse_url(host: str, port: int) -> str:
    """Where a browser on this machine reaches the server: a wildcard address is reached as localhost."""
    name = "localhost" if host in ("0.0.0.0", "::", "") else (f"[{host}]" if ":" in host else host)  # noqa: S104
    return f"http://{name}:{port}" if port else f"http://{name}:PORT (the port uvicorn prints below)"


def _cannot_listen(host: str, port: int) -> str | None:
    """Why `host:port` cannot be bound (a port in use, an address not on this machine), or None when it can.

    Bound as uvicorn binds it (its address family, SO_REUSEADDR) and released at once; port 0 means any free port,
    always bindable.
    """
    import socket

    if port == 0:
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # as uvicorn chooses (uvicorn.config.bind_socket)
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _schema_problem(settings: Settings) -> str | None:
    import asyncio

    from worthit.service.app import schema_problem
    from worthit.service.db.engine import create_engine

    async def run() -> str | None:
        engine = create_engine(settings)
        try:
            return await schema_problem(engine)
        finally:
            await engine.dispose()

    with _using_database():
        return asyncio.run(run())


def cmd_slack_bot(args: argparse.Namespace, out: TextIO) -> int:
    from worthit.service.slackbot.app import main as bot_main

    return bot_main(args)


def _exit_cleanly(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(EXIT_PASS)


def run_gate(args: argparse.Namespace, out: TextIO) -> int:
    from worthit.service.gate.command import run

    return run(args, out)


class _Version(argparse.Action):
    """`--version` from service/version.py (pyproject.toml reads it too): reading the installed metadata instead
    would cost more than the rest of the command."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from worthit.service.version import VERSION

        sys.stdout.write(f"worthit {VERSION}\n")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """A parser whose `--help` may end with text computed only when help is asked for (`more`): the rule ids, the
    profile formats and the server's variables would otherwise be imported on every start of every command."""

    more: Callable[[], str] | None = None

    def format_help(self) -> str:
        if self.more is not None:
            self.epilog = self.more()
        return super().format_help()


class _Commands:
    """Subcommands whose one-line `help` (the list in `worthit --help`) is also their own `--help` description."""

    def __init__(self, actions: Any) -> None:
        self._actions = actions

    def add_parser(
        self,
        name: str,
        *,
        help: str,
        description: str | None = None,
        parents: Sequence[argparse.ArgumentParser] = (),
        more: Callable[[], str] | None = None,
    ) -> _Parser:
        """`description` adds to the one-line help where a command needs more (its settings, where to start);
        `more` is text after the options, computed when `--help` is asked for."""
        parser: _Parser = self._actions.add_parser(
            name, help=help, description=description or help[0].upper() + help[1:] + ".", parents=list(parents)
        )
        parser.more = more
        return parser


def _server_variables() -> str:
    from worthit.service.settings import DEFAULT_DATABASE, Settings

    names = ", ".join(f"WORTHIT_{name.upper()}" for name in Settings.__struct_fields__ if name != "database_url")
    return (
        f"Settings from the environment (README: Settings): DATABASE_URL (default {DEFAULT_DATABASE}), {names}. "
        "An option given here wins over its variable."
    )


def _rule_ids() -> str:
    from worthit.rules.checks import explanations

    return "The rules, in the order the engine runs them: " + ", ".join(rule for rule, _ in explanations()) + "."


def _profile_formats() -> str:
    from worthit.rules.profiles.detect import FORMATS

    return "Formats (--format): " + ", ".join(FORMATS) + "."


def parser() -> argparse.ArgumentParser:
    root = _Parser(prog="worthit", description=__doc__.split("\n")[0])
    root.add_argument("-V", "--version", action=_Version, help="print the version and exit")
    sub = _Commands(root.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser))
    # One --database for every command that opens the database.
    database = argparse.ArgumentParser(add_help=False)
    database.add_argument(
        "--database",
        metavar="URL",
        help="database URL or SQLite path (default: DATABASE_URL, else sqlite:///./worthit.db)",
    )

    serve = sub.add_parser(
        "serve", help="serve the HTTP API (migrations applied first)", parents=[database], more=_server_variables
    )
    serve.add_argument("--host", help="address to bind (default: WORTHIT_HOST, else 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default: WORTHIT_PORT, else 8000)")
    serve.add_argument("--workers", type=int, help="worker processes (default: WORTHIT_WORKERS, else 1)")
    serve.add_argument(
        "--no-migrate",
        action="store_true",
        help="leave the schema to `worthit migrate`; refuse to start on another (or WORTHIT_MIGRATE_ON_START=0)",
    )
    serve.set_defaults(func=cmd_serve)

    review = sub.add_parser("review", help="evaluate a proposal offline, no server needed")
    review.add_argument("file", help="a JSON or YAML proposal (`p: 21%%`, `cost_weeks: 10d`), or - for standard input")
    review.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    review.add_argument(
        "--explain", action="store_true", help="print the reasoning: each stage's question, answer and checks"
    )
    review.add_argument("--policy-file", help="a policy TOML file (default: the bundled default policy)")
    review.add_argument("--chart", metavar="FILE", help="also write the before/after chart as SVG to FILE")
    review.add_argument(
        "--profile", action="append", metavar="FILE", help="measure p for `target` from profiler output (repeatable)"
    )
    review.add_argument("--steps", help="with --profile: the ProfilerStep#N range to measure, e.g. 2:5 (or all)")
    review.set_defaults(func=cmd_review)

    migrate = sub.add_parser("migrate", help="bring the database schema to the newest revision", parents=[database])
    migrate.set_defaults(func=cmd_migrate)

    openapi = sub.add_parser("openapi", help="write the OpenAPI document")
    openapi.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        default="-",
        help="the file to write (default: standard output; `make openapi` writes openapi/openapi.json)",
    )
    openapi.set_defaults(func=cmd_openapi)

    token = sub.add_parser("token", help="create, revoke or list bearer tokens")
    token_actions = _Commands(token.add_subparsers(dest="action", required=True, metavar="ACTION"))
    create = token_actions.add_parser(
        "create", help="create a token; prints it once, alone on stdout", parents=[database]
    )
    create.add_argument("--name", required=True, type=_token_name, help="who or what uses it, e.g. planning-tool")
    create.add_argument(
        "--scope",
        required=True,
        choices=["read", "write", "admin", "slack"],
        help="read: evaluate and read; write: also store decisions and outcomes; admin: also policies "
        "(each includes the one before); slack: the Slack bot's, a writer that may speak for Slack users",
    )
    revoke = token_actions.add_parser("revoke", help="revoke a token by name", parents=[database])
    revoke.add_argument("name", help="the name it was created with")
    token_actions.add_parser("list", help="list tokens (names and scopes, never the tokens)", parents=[database])
    token.set_defaults(func=cmd_token)

    gate = sub.add_parser("gate", help="the pull-request review gate: evaluate the worthit block of a PR description")
    configure_gate(gate)
    gate.set_defaults(func=run_gate)

    profile = sub.add_parser(
        "profile", help="the time breakdown of profiler output (files of one run)", more=_profile_formats
    )
    profile.add_argument(
        "files", nargs="+", help="rocprofv3 / nsys stats CSV, rocprofv3 summary, PyTorch trace (one per rank of a run)"
    )
    profile.add_argument("--format", metavar="NAME", help="force a format (listed below) instead of detecting it")
    profile.add_argument("--json", action="store_true", help="print the breakdown as JSON")
    profile.add_argument(
        "--top",
        type=_count,
        default=20,
        metavar="N",
        help="the table's largest N device rows, then N host rows (default: 20; 0: all)",
    )
    profile.add_argument(
        "--kind",
        action="append",
        choices=PHASE_KINDS,
        help="only phases of this kind (repeat for several): kernel, comm, copy are the device's; cpu_op, "
        "annotation, api, alloc the host's",
    )
    profile.add_argument(
        "--steps",
        help="PyTorch traces: ProfilerStep#N numbers FIRST:LAST, N, FIRST:, :LAST or all (default: all but "
        "the last, incomplete step)",
    )
    profile.add_argument(
        "--summary",
        action="store_true",
        help="PyTorch traces: write each rank's summary (worthit-rank-summary v1) to -o instead; "
        "`worthit profile *.summary.json` combines them",
    )
    profile.add_argument("-o", "--output", help="with --summary: the file (one trace) or folder (several)")
    profile.add_argument(
        "--jobs", type=int, default=1, metavar="N", help="PyTorch traces of several ranks: read N at a time (processes)"
    )
    profile.add_argument(
        "--upload",
        metavar="URL",
        help="rank summaries: store them as one run on the worthit server at URL (token: WORTHIT_TOKEN); "
        "prints the stored profile's address",
    )
    profile.add_argument("--name", help="with --upload: the stored profile's label")
    profile.add_argument(
        "--what-if",
        action="append",
        metavar="PATTERN=K",
        help="PyTorch traces: replay the steps with the device ops PATTERN names (a glob over phase names, or "
        "kind:comm, kind:copy, kind:kernel) K times faster, and print measured, replayed, predicted and Amdahl's "
        "step times and where Amdahl's saving went (repeatable, each with its own K); with --summary, each rank "
        "is replayed alone and its arrivals at the collectives kept for the combine (default: WORTHIT_WHAT_IF, "
        "one target a line)",
    )
    profile.set_defaults(func=cmd_profile)

    plan = sub.add_parser("plan", help="the fewest phases that reach a target speedup or time")
    plan.add_argument("file", help="JSON or YAML: breakdown and target_speedup or target_ms (- for stdin)")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument("--policy-file", help="a policy TOML file (default: the bundled default policy)")
    plan.set_defaults(func=cmd_plan)

    portfolio = sub.add_parser("portfolio", help="rank proposals by return per engineer-week")
    portfolio.add_argument(
        "file", help="JSON or YAML: proposals (or a bare list of them) and an optional budget_weeks (- for stdin)"
    )
    portfolio.add_argument("--json", action="store_true", help="print the ranking and the funded set as JSON")
    portfolio.add_argument("--policy-file", help="a policy TOML file (default: the bundled default policy)")
    portfolio.set_defaults(func=cmd_portfolio)

    bot = sub.add_parser(
        "slack-bot",
        help="the Slack bot in Socket Mode: no public endpoint, a client of a worthit API",
        description="The Slack bot in Socket Mode: it opens an outbound WebSocket to Slack and calls a worthit API "
        "with a token, never its database. Settings from the environment (tokens only there, never as flags): "
        "SLACK_APP_TOKEN (xapp-..., the app-level token with connections:write), SLACK_BOT_TOKEN (xoxb-...), "
        "WORTHIT_URL (the API, e.g. http://worthit), WORTHIT_TOKEN (a write-scoped token from `worthit token create "
        "--scope write --name slack-bot`), WORTHIT_PUBLIC_URL (optional: links to decision pages). "
        "Set up: deploy/slack/README.md.",
    )
    bot.add_argument("--worthit-url", help="the worthit API's address (default: WORTHIT_URL)")
    bot.add_argument("--public-url", help="the address of decision pages in links (default: WORTHIT_PUBLIC_URL)")
    bot.add_argument(
        "--slack-api-url",
        help="Slack's Web API base (default: SLACK_API_URL, or https://slack.com/api/; e.g. a GovSlack or test server)",
    )
    bot.add_argument("--log-level", help="debug, info (default), warning (or WORTHIT_LOG_LEVEL)")
    bot.set_defaults(func=cmd_slack_bot)

    rules = sub.add_parser("rules", help="explain the rules", more=_rule_ids)
    rules.add_argument(
        "rule", nargs="?", help="one rule id (listed below) explained in full, or `all`; an index when left out"
    )
    rules.set_defaults(func=cmd_rules)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command in DATABASE_COMMANDS:
            from worthit.service.settings import Settings

            _open_sqlite(Settings.from_env(database_url=getattr(args, "database", None)))
        return int(args.func(args, sys.stdout))
    except ModuleNotFoundError as exc:
        extra = EXTRAS.get((exc.name or "").partition(".")[0])
        if extra is None:
            raise
        _say(f"worthit {args.command} needs the {extra} extra: pip install 'worthit[{extra}]'")
        return EXIT_USAGE
    except Exception as exc:
        import msgspec

        if isinstance(exc, msgspec.ValidationError):  # a setting from the environment that does not read
            _say(f"worthit: {exc}")
            return EXIT_USAGE
        if isinstance(exc, DatabaseUnusable) and exc.__cause__ is not None:
            # Wrong password, unknown role, no server at the address, a directory SQLite cannot create a file in: the
            # cause in one line, not a driver's traceback.
            _say(f"worthit: cannot use the database {_shown_url(args)}: {database_cause(exc.__cause__)}")
            return EXIT_USAGE
        if isinstance(exc, OSError) and args.command in DATABASE_COMMANDS:
            # Not the database's (that is DatabaseUnusable): a file, a directory, the terminal. Say which.
            about = f": {exc.filename}" if exc.filename else ""
            _say(f"worthit {args.command}: {exc.strerror or exc}{about}")
            return EXIT_USAGE
        if args.command not in OFFLINE_COMMANDS:
            raise
        return internal_error(exc)


# The commands whose exit status a script or a CI check reads (`review` and `gate`: 1 is "the proposal fails"): a
# bug must not read as a verdict, so any error no command expects is exit 2 with one line, never a traceback and 1.
OFFLINE_COMMANDS = frozenset({"review", "gate", "profile", "plan", "portfolio", "rules"})


def internal_error(exc: BaseException) -> int:
    """Say an unexpected error in one line on stderr (its type, words and the line of worthit that raised it) and
    return 2: what `review` and `gate` exit with when they could not run, never 1, which a gate reads as "fails"."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:  # where it was raised, as `folder/file.py:line`: enough for a report, short enough for one line
        raised = Path(frames[-1].filename)
        where = f" ({raised.parent.name}/{raised.name}:{frames[-1].lineno})"
    words = " ".join(str(exc).split())
    said = f"{type(exc).__name__}: {words}" if words else type(exc).__name__
    _say(f"worthit: internal error: {said}{where}; please report")
    return EXIT_USAGE


# The core install (the engine, `review`, `plan`, `portfolio`, `rules`, `gate`) needs none of these; the commands
# that do name the extra (pyproject.toml) that installs what they import.
EXTRAS = {
    **dict.fromkeys(
        (
            "litestar",
            "sqlalchemy",
            "alembic",
            "aiosqlite",
            "asyncpg",
            "uvicorn",
            "slack_sdk",
            "slack_bolt",
            "websocket",
            "prometheus_client",
            "jinja2",
        ),
        "server",
    ),
    "polars": "profiles",
}


class DatabaseUnusable(Exception):
    """The database could not be opened, reached or used; its `__cause__` is the driver's own error."""


@contextmanager
def _using_database() -> Iterator[None]:
    """Raise DatabaseUnusable for what the database (its driver, SQLite's file, the connection) raised in the block.

    An OSError is the database's only when it is a connection's (service/db/errors.py): the file system and the
    terminal fail with OSErrors too, and those are reported as what they are."""
    import sqlite3

    from sqlalchemy.exc import SQLAlchemyError

    from worthit.service.db.errors import connection_failed
    from worthit.service.errors import Unavailable

    try:
        yield
    except (SQLAlchemyError, sqlite3.Error, Unavailable) as exc:
        raise DatabaseUnusable from (exc.__cause__ if isinstance(exc, Unavailable) and exc.__cause__ else exc)
    except OSError as exc:
        if not connection_failed(exc):
            raise
        raise DatabaseUnusable from exc


# The commands that open the database before doing anything else (serve: before its workers start).
DATABASE_COMMANDS = frozenset({"serve", "migrate", "token"})


def _open_sqlite(settings: Settings) -> None:
    """Open a SQLite file once with the stdlib driver, so a file that cannot be opened fails here, synchronously.

    Through aiosqlite the same failure, once its event loop has closed, could print a thread's traceback as well.
    """
    import sqlite3

    if not settings.is_sqlite:
        return
    path = settings.async_database_url.partition(":///")[2].partition("?")[0]
    if path and path != ":memory:" and not path.startswith("file:"):
        with _using_database():
            sqlite3.connect(path).close()


def database_cause(exc: BaseException) -> str:
    """The driver's own words for why the database cannot be used, on one line."""
    from sqlalchemy.exc import DBAPIError

    cause: BaseException = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    return " ".join(str(cause).split()) or type(cause).__name__


def _shown_url(args: argparse.Namespace) -> str:
    """The database URL as given, its password hidden."""
    from urllib.parse import urlsplit, urlunsplit

    from worthit.service.settings import Settings

    url = Settings.from_env(database_url=getattr(args, "database", None)).database_url
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


if __name__ == "__main__":
    sys.exit(main())
