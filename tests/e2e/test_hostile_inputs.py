"""What a third attack run sent, end to end: a NaN-making number, files that are not files, names that drive the
terminal, JSON nested past any decoder's depth. The routes on a real server answer 2xx or a 4xx problem naming what
was expected; the command line, in a process of its own, says one line and exits 2, never hangs or prints a
traceback."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from tests.conftest import Server
from tests.harness import ROOT
from tests.property.test_engine_properties import NAN_MIX
from tests.strategies import nested_json
from tests.unit.profiles.test_profiles_summary import run_traces, summary_bytes

pytestmark = pytest.mark.e2e

# What a terminal acts on: C0 but the newline, DEL, and C1 (U+009B is a CSI of its own).
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
DEEP = b'{"p":' + nested_json(100_000, array=True) + b"}"


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`worthit ARGS` as a user runs it; a command that waits (on a FIFO, say) fails the test after 60 s."""
    return subprocess.run(
        [sys.executable, "-m", "worthit.service.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        input=stdin,
        env={key: value for key, value in os.environ.items() if not key.startswith(("WORTHIT_", "GITHUB_"))},
        timeout=60,
        check=False,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused command writes to stderr, checked to be one line, and no traceback."""
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr[-2000:]
    return lines[0]


# --- item 4: no NaN reaches a figure or a sentence -------------------------------------------------------------------


def _mix_figures(evaluation: dict[str, object]) -> dict[str, object]:
    findings = evaluation["findings"]
    assert isinstance(findings, list)
    mix = next(finding for finding in findings if finding["rule"] == "mix")
    return dict(mix["figures"])


def test_a_mix_part_at_5e_324_behind_a_barrier_is_answered(
    database_url: str, server_factory: Callable[..., Server]
) -> None:
    """The part off the critical path inherits a share of 0: it saves exactly 0 (was NaN, a 500), stored and read
    back; a prior_k whose 1/k overflows is a 422 naming it, and nothing is stored."""
    server = server_factory(database_url)
    with server.client() as client:
        evaluated = client.post("/v1/evaluate", json=NAN_MIX)
        assert evaluated.status_code == 200, evaluated.text
        body = evaluated.json()
        figures = _mix_figures(body)
        # Off the critical path the step sees none of the target: every part, measured or not, saves nothing.
        assert figures["mix_saving"] == 0.0
        assert figures["part_1_saving"] == 0.0
        assert figures["part_1_k"] == 5e-324
        assert figures["part_2_saving"] == 0.0
        assert figures["part_2_share"] == pytest.approx(0.5, abs=1e-12)
        assert body["verdict"] == "redirect"
        assert "nan" not in evaluated.text.lower()

        stored = client.post("/v1/decisions", json=NAN_MIX)
        assert stored.status_code == 201, stored.text
        again = client.get(stored.headers["location"])
        assert again.status_code == 200, again.text
        assert _mix_figures(again.json()) == figures

        before = client.get("/v1/decisions").json()
        refused = client.post("/v1/decisions", json={"target": "x", "p": 0.3, "k": 2, "prior_k": 5e-324})
        assert refused.status_code == 422, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        assert "Expected `prior_k` large enough" in refused.json()["detail"]
        assert client.get("/v1/decisions").json() == before


def test_review_and_gate_answer_the_mix_that_made_a_nan(tmp_path: Path) -> None:
    """`worthit review` and `worthit gate` on that proposal: a verdict (redirect fails the gate: 1), its figures
    exact, no traceback (was a traceback and exit 1, which the gate read as "fails")."""
    proposal = tmp_path / "proposal.json"
    proposal.write_text(json.dumps(NAN_MIX))
    reviewed = run("review", "--json", str(proposal))
    assert reviewed.returncode == 1, reviewed.stderr[-2000:]
    assert reviewed.stderr == ""
    evaluation = json.loads(reviewed.stdout)
    assert evaluation["verdict"] == "redirect"
    assert _mix_figures(evaluation)["mix_saving"] == 0.0

    body = tmp_path / "body.md"
    # YAML reads 5e-324 (no dot) as a string: the block writes the same double with one.
    block = json.dumps(NAN_MIX).replace("5e-324", "4.9406564584124654e-324")
    body.write_text("Split-K for batch 1.\n\n```worthit\n" + block + "\n```\n")
    gated = run("gate", "--body", str(body))
    assert gated.returncode == 1, gated.stderr[-2000:]
    assert "Traceback" not in gated.stderr
    assert "verdict: redirect" in gated.stdout


# --- item 10: FIFOs, devices and folders are refused before they are opened ---------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("profile", "{fifo}"),
        ("profile", "--jobs", "2", "{fifo}", "{trace}"),
        ("profile", "--summary", "-o", "{out}", "{fifo}"),
        ("profile", "--upload", "http://127.0.0.1:9", "{fifo}"),
        ("review", "{fifo}"),
        ("review", "--profile", "{fifo}", "{proposal}"),
        ("review", "--policy-file", "{fifo}", "{proposal}"),
        ("plan", "{fifo}"),
        ("gate", "--body", "{fifo}"),
        ("gate", "--event", "{fifo}"),
    ],
    ids=lambda args: " ".join(args),
)
def test_a_fifo_is_refused_at_once(tmp_path: Path, args: tuple[str, ...]) -> None:
    """A FIFO with no writer: one line naming it, exit 2 (it was a wait with no end and no message)."""
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    trace = tmp_path / "rank1.json"
    trace.write_bytes(run_traces(2, 1)[1])
    proposal = tmp_path / "proposal.json"
    proposal.write_text('{"target": "gemm", "p": 0.3, "k": 2}')
    paths = {"fifo": str(fifo), "trace": str(trace), "out": str(tmp_path / "out"), "proposal": str(proposal)}
    result = run(*(arg.format(**paths) for arg in args))
    assert result.returncode == 2, result.stderr[-2000:]
    assert one_line(result).endswith(f"{fifo}: a FIFO, not a regular file")


# /dev/null, not /dev/zero: a regression reading the device whole would take the machine's memory with /dev/zero.
@pytest.mark.parametrize(("path", "kind"), [("/dev/null", "a character device"), ("{tmp}", "a directory")])
def test_a_device_or_a_folder_is_refused_at_once(tmp_path: Path, path: str, kind: str) -> None:
    """A device (/dev/zero reads forever) or a folder: one line saying what it is, exit 2."""
    result = run("profile", path.format(tmp=tmp_path))
    assert result.returncode == 2, result.stderr[-2000:]
    assert one_line(result) == f"worthit: cannot read {path.format(tmp=tmp_path)}: {kind}, not a regular file"


# --- item 9: what a file holds never drives the terminal -------------------------------------------------------------

FORGED = "all checks passed"
# A kernel's name as JSON can carry it: clear the screen, an 8-bit CSI, then a line of its own.
EVIL_KERNEL = b"ampere\\u001b[2J\\u009b31m\\r\\n" + FORGED.encode()


def _clean(text: str) -> None:
    assert CONTROL.search(text) is None, repr(CONTROL.search(text))
    assert all(line.strip() != FORGED for line in text.splitlines()), text


def test_file_names_kernel_names_and_summary_fields_are_escaped(tmp_path: Path) -> None:
    """A trace's file name, its kernels' names and a rank summary's `file` reach the terminal escaped (`\\x1b`), in
    the table, in --json and in errors (they set the title, cleared the screen and printed a forged line)."""
    traces = [trace.replace(b"ampere_sgemm_128x64_tn", EVIL_KERNEL) for trace in run_traces(2, 1)]
    evil = "rank\x1b]0;PWNED\x07\x9b2J"
    paths = [tmp_path / f"{evil}{rank}.json" for rank in range(2)]
    for path, trace in zip(paths, traces, strict=True):
        path.write_bytes(trace)

    table = run("profile", *map(str, paths))
    assert table.returncode == 0, table.stderr[-2000:]
    _clean(table.stdout + table.stderr)
    assert "rank\\x1b]0;PWNED\\x07\\x9b2J0.json" in table.stdout
    assert "ampere\\x1b[2J\\x9b31m\\r\\nall checks passed" in table.stdout

    as_json = run("profile", "--json", *map(str, paths))
    assert as_json.returncode == 0, as_json.stderr[-2000:]
    _clean(as_json.stdout)
    assert "\\u009b" in as_json.stdout
    phases = msgspec.json.decode(as_json.stdout)["phases"]
    assert any(phase["name"].startswith("ampere\x1b[2J\x9b31m\r\n" + FORGED) for phase in phases)  # data intact

    summaries = []
    for rank, trace in enumerate(traces):
        summary = msgspec.json.decode(summary_bytes(trace, f"rank-{rank}.json"))
        summary["file"] = f"\x1b]0;PWNED\x07rank-{rank}.json\n{FORGED}"
        summaries.append(tmp_path / f"rank-{rank}.summary.json")
        summaries[-1].write_bytes(msgspec.json.encode(summary))
    combined = run("profile", *map(str, summaries))
    assert combined.returncode == 0, combined.stderr[-2000:]
    _clean(combined.stdout + combined.stderr)
    assert f"\\x1b]0;PWNED\\x07rank-1.json\\n{FORGED}" in combined.stdout

    damaged = tmp_path / f"{evil}.summary.json"
    damaged.write_bytes(b'{"format": "worthit-rank-summary", "version": 1, "file": 7}')
    refused = run("profile", str(damaged))
    assert refused.returncode == 2
    assert "\\x1b]0;PWNED\\x07" in one_line(refused)
    _clean(refused.stderr)


def test_plan_and_portfolio_escape_the_names_they_print(tmp_path: Path) -> None:
    """A phase's name and a proposal's title from the request's file reach plan's and portfolio's tables escaped."""
    evil = f"gemm\x1b]0;PWNED\x07\x9b2J\n{FORGED}"
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"target_speedup": 2, "breakdown": [{"name": evil, "ms": 34}, {"name": "b", "ms": 21}]}))
    planned = run("plan", str(plan))
    assert planned.returncode == 0, planned.stderr[-2000:]
    _clean(planned.stdout)
    assert "gemm\\x1b]0;PWNED\\x07\\x9b2J\\nall" in planned.stdout
    portfolio = tmp_path / "portfolio.json"
    portfolio.write_text(json.dumps({"proposals": [{"title": evil, "target": "a", "p": 0.3, "k": 2, "cost_weeks": 1}]}))
    ranked = run("portfolio", str(portfolio))
    assert ranked.returncode == 0, ranked.stderr[-2000:]
    _clean(ranked.stdout)
    assert "gemm\\x1b]0;PWNED\\x07" in ranked.stdout


# --- item 11: nesting past any decoder's depth -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "args"),
    [
        ("deep.json", DEEP, ()),
        ("deep.json.gz", gzip.compress(DEEP), ()),
        ("deep.json", DEEP, ("--jobs", "2")),
        ("deep.json", DEEP, ("--summary", "-o", "{out}")),
        ("events.json", b'{"traceEvents":[{"ph":"X","args":' + nested_json(100_000) + b"}]}", ()),
        ("run.summary.json", b'{"format":"worthit-rank-summary","version":1,"file":' + DEEP + b"}", ()),
    ],
    ids=["plain", "gz", "jobs", "summary", "in-an-event", "rank-summary"],
)
def test_deep_nesting_is_one_line_and_exit_2(tmp_path: Path, name: str, data: bytes, args: tuple[str, ...]) -> None:
    """`{"p":[[…100,000…]]}` and its kin, plain, gzipped, streamed, in --summary and as a rank summary: one line
    saying what was expected, exit 2 (was a RecursionError's traceback and exit 1)."""
    path = tmp_path / name
    path.write_bytes(data)
    result = run("profile", *(arg.format(out=tmp_path / "out.json") for arg in args), str(path))
    assert result.returncode == 2, result.stderr[-2000:]
    line = one_line(result)
    assert "nested too deeply" in line, line
    assert "expected" in line, line


def test_deep_nesting_on_the_profile_routes_is_a_4xx(database_url: str, server_factory: Callable[..., Server]) -> None:
    """POST /v1/profiles with `{"p":[[…100,000…]]}` (plain, gzipped, a rank summary) and /v1/profiles/summaries with
    an array 1,000 levels deep: a 4xx problem saying what was expected (were 500s: the parse worker exited 1)."""
    server = server_factory(database_url)
    summary = b'{"format":"worthit-rank-summary","version":1,"file":' + DEEP + b"}"
    with server.client(timeout=60) as client:
        for body in (DEEP, gzip.compress(DEEP), summary):
            answer = client.post("/v1/profiles", content=body)
            assert answer.status_code == 422, answer.text[:500]
            assert answer.headers["content-type"] == "application/problem+json"
            assert "nested too deeply" in answer.json()["detail"]
        for depth in (1_000, 100_000):
            answer = client.post(
                "/v1/profiles/summaries",
                content=nested_json(depth, array=True),
                headers={"content-type": "application/json"},
            )
            assert answer.status_code in (400, 422), answer.text[:500]
            assert answer.headers["content-type"] == "application/problem+json"
            assert answer.json()["detail"] == "Expected a JSON body nested a few levels deep, got one nested too deeply"
        assert client.get("/readyz").status_code == 200
