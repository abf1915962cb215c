"""The review gate as CI runs it: `python -m service.cli gate` as a subprocess over real-shaped `pull_request`
events, offline and against a real `worthit serve` (the verdict and statement must be those of /v1/evaluate)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, Server, free_port

pytestmark = pytest.mark.e2e

EVENTS = ROOT / "tests" / "data" / "gate"
ANNOTATION = re.compile(r"^::(?P<level>notice|warning|error) title=(?P<title>[^:]*)::(?P<message>.*)$")

# The proposals of the fixtures, written as a planning tool would POST them.
API_PROPOSALS: dict[str, dict[str, Any]] = {
    "opened_fund.json": {
        "title": "Fuse the attention softmax",
        "target": "attention_softmax",
        "p": 0.21,
        "k": 10,
        "baseline_ms": 100,
        "cost_weeks": 3,
    },
    "edited_decline.json": {
        "title": "Hand-tune the layernorm",
        "target": "layernorm",
        "p": 0.004,
        "k": 10,
        "baseline_ms": 100,
        "cost_weeks": 3,
    },
    "edited_in_markdown.json": {
        "title": "Tuned QKV GEMM",
        "target": "gemm_qkv",
        "p": 0.34,
        "k": 2,
        "baseline_ms": 100,
        "cost_weeks": 2,
    },
}


def unescape(text: str) -> str:
    return text.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    summary: str

    def annotations(self) -> list[tuple[str, str, str]]:
        return [
            (m["level"], unescape(m["title"]), unescape(m["message"]))
            for line in self.stdout.splitlines()
            if (m := ANNOTATION.match(line))
        ]

    def verdict(self) -> tuple[str, str]:
        """(verdict, statement) from the verdict's annotation, as a reviewer sees it on the pull request."""
        [(verdict, statement)] = [
            (title.removeprefix("worthit: "), message)
            for _, title, message in self.annotations()
            if title.startswith("worthit: ") and title != "worthit: malformed block"
        ]
        return verdict, statement


def gate(tmp_path: Path, *argv: str, env: dict[str, str] | None = None, stdin: bytes | None = None) -> Run:
    """`python -m service.cli gate …` in a clean environment, with $GITHUB_STEP_SUMMARY in `tmp_path`."""
    summary = tmp_path / f"summary-{len(list(tmp_path.glob('summary-*')))}.md"
    environment = (
        {key: value for key, value in os.environ.items() if not key.startswith(("WORTHIT_", "GITHUB_"))}
        | {"GITHUB_STEP_SUMMARY": str(summary)}
        | (env or {})
    )
    done = subprocess.run(
        [sys.executable, "-m", "worthit.service.cli", "gate", *argv],
        cwd=ROOT,
        env=environment,
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )
    text = summary.read_text(encoding="utf-8") if summary.exists() else ""
    return Run(done.returncode, done.stdout.decode(), done.stderr.decode(), text)


@pytest.mark.parametrize(
    ("name", "code", "level", "summary_has"),
    [
        ("opened_fund.json", 0, "notice", "worthit: `fund` — passes"),
        ("opened_crlf.json", 0, "notice", "worthit: `fund` — passes"),
        ("edited_decline.json", 1, "error", "worthit: `decline` — fails the gate"),
        ("edited_in_markdown.json", 0, "notice", "**Tuned QKV GEMM**"),
        ("opened_no_block.json", 0, "notice", "skipped — no worthit block"),
        ("opened_null_body.json", 0, "notice", "skipped — no worthit block"),
        ("opened_bad_yaml.json", 1, "error", "line 8, field `title`: not valid YAML"),
        ("opened_p_over_100.json", 1, "error", "line 10, field `p`: Expected `p` &lt;= 1.0, got 1.7"),
    ],
)
def test_gate_over_events(tmp_path: Path, name: str, code: int, level: str, summary_has: str) -> None:
    """Each real-shaped event: the exit status, the last annotation's level, and the job summary."""
    run = gate(tmp_path, "--event", str(EVENTS / name))
    assert run.code == code, run.stderr
    assert run.annotations()[-1][0] == level
    assert summary_has in run.summary


def test_body_from_stdin(tmp_path: Path) -> None:
    """`--body -` reads the description from standard input (trying a block locally)."""
    run = gate(tmp_path, "--body", "-", stdin=b"```worthit\ntarget: attention_softmax\np: 21%\nk: 10\n```\n")
    assert run.code == 0
    assert run.verdict()[0] == "fund"


def test_unreadable_event_is_a_usage_error(tmp_path: Path) -> None:
    """An event file that cannot be read: exit 2, the reason on stderr and in an error annotation."""
    run = gate(tmp_path, "--event", str(tmp_path / "nope.json"))
    assert run.code == 2
    assert "cannot read the event file" in run.stderr
    assert run.annotations()[0][0] == "error"
    assert run.summary == ""


def test_missing_source_is_an_argparse_usage_error(tmp_path: Path) -> None:
    """Neither --event nor --body: argparse's usage error, exit 2."""
    assert gate(tmp_path).code == 2


@pytest.mark.parametrize("name", sorted(API_PROPOSALS))
def test_gate_agrees_with_the_api(
    tmp_path: Path, sqlite_url: str, server_factory: Callable[..., Server], name: str
) -> None:
    """The gate's verdict and statement equal POST /v1/evaluate's for the same proposal, offline and with --url;
    and both modes write the same summary (but for where it was evaluated)."""
    server = server_factory(sqlite_url)
    with server.client() as client:
        response = client.post("/v1/evaluate", json=API_PROPOSALS[name])
    assert response.status_code == 200, response.text
    api = response.json()

    offline = gate(tmp_path, "--event", str(EVENTS / name))
    online = gate(tmp_path, "--event", str(EVENTS / name), "--url", server.url)
    assert offline.verdict() == online.verdict() == (api["verdict"], api["statement"])
    assert offline.code == online.code == (1 if api["verdict"] in ("remeasure", "redirect", "decline") else 0)
    # Online, the server stores the decision and the summary links its page: the only other difference.
    link = re.search(rf"\n\n\[Open the decision\]\({re.escape(server.url)}/decisions/[0-9a-f-]+\)", online.summary)
    assert link is not None, online.summary
    online_summary = online.summary.replace(link.group(0), "")
    assert online_summary.replace(f"evaluated by {server.url}", "evaluated offline") == offline.summary
    assert api["statement"] in offline.summary


def test_url_mode_stores_the_decision_and_outputs_its_page(
    tmp_path: Path, sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """With --url the gate stores a decision (source `gate`, the pull request as its detail) and writes its page to
    `$GITHUB_OUTPUT`; a re-run of the same job answers the same decision instead of storing another."""
    server = server_factory(sqlite_url)
    event = str(EVENTS / "opened_fund.json")
    outputs = tmp_path / "outputs"
    runs = [gate(tmp_path, "--event", event, "--url", server.url, env={"GITHUB_OUTPUT": str(outputs)}) for _ in "ab"]
    assert [run.code for run in runs] == [0, 0], runs[0].stderr
    written = [dict(line.split("=", 1) for line in chunk.splitlines()) for chunk in _chunks(outputs.read_text())]
    assert [(w["verdict"], w["rule"], w["passed"]) for w in written] == [("fund", "amdahl", "true")] * 2
    first, second = (w["decision-url"] for w in written)
    assert first == second
    assert re.fullmatch(rf"{re.escape(server.url)}/decisions/[0-9a-f-]+", first)
    with server.client() as client:
        decision = client.get("/v1" + first.removeprefix(server.url)).json()
        page = client.get(first.removeprefix(server.url))
    assert (decision["source"], decision["verdict"]) == ("gate", "fund")
    assert decision["source_detail"] == {
        "repository": "acme/kernels",
        "pull_request": "101",
        "head_sha": "4f2c7d0b9a1e3c5f7a9b1d3e5f7a9c1e3b5d7f90",
    }
    assert page.status_code == 200
    assert f"[Open the decision]({first})" in runs[0].summary


def test_url_mode_links_a_signed_page_that_opens_in_a_browser_without_a_token(
    tmp_path: Path, sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """With auth on and a link secret, the gate's `decision-url` and its summary's link are signed, as Slack's are:
    a browser without a token opens the page (the plain page answers 401)."""
    from tests.e2e.test_trust import create_token

    token = create_token(sqlite_url, "write", "ci-gate")
    secret = "gate-link-secret-for-tests-0123456789abcdef"
    server = server_factory(sqlite_url, env={"WORTHIT_LINK_SECRET": secret})
    outputs = tmp_path / "outputs"
    run = gate(
        tmp_path,
        "--event",
        str(EVENTS / "opened_fund.json"),
        "--url",
        server.url,
        env={"GITHUB_OUTPUT": str(outputs), "WORTHIT_TOKEN": token},
    )
    assert run.code == 0, run.stderr
    url = dict(line.split("=", 1) for line in outputs.read_text().splitlines())["decision-url"]
    found = re.fullmatch(rf"{re.escape(server.url)}(/decisions/([0-9a-f-]+))\?link=\d+\.[A-Za-z0-9_-]+", url)
    assert found is not None, url
    assert f"[Open the decision]({url})" in run.summary
    browser = {"accept": "text/html"}
    with server.client() as client:
        assert client.get(found.group(1), headers=browser).status_code == 401
        page = client.get(url.removeprefix(server.url), headers=browser)
        assert page.status_code == 200
        assert 'id="verdict"' in page.text
    assert token not in run.stdout + run.stderr + run.summary


def _chunks(text: str) -> list[str]:
    """The outputs of each run: four lines apiece, `verdict` first."""
    lines = text.splitlines()
    return ["\n".join(lines[index : index + 4]) for index in range(0, len(lines), 4)]


def test_url_mode_reports_server_validation_with_the_line(
    tmp_path: Path, sqlite_url: str, server_factory: Callable[..., Server]
) -> None:
    """With --url, a block the server rejects fails naming the line and field (here caught before sending)."""
    server = server_factory(sqlite_url)
    run = gate(tmp_path, "--event", str(EVENTS / "opened_p_over_100.json"), "--url", server.url)
    assert run.code == 1
    assert "line 10, field `p`" in run.annotations()[-1][2]


def test_url_mode_sends_the_token(tmp_path: Path, sqlite_url: str, server_factory: Callable[..., Server]) -> None:
    """With auth on, WORTHIT_TOKEN is sent as a Bearer token; without it the server refuses and the gate exits 2."""
    created = subprocess.run(
        [
            sys.executable,
            "-m",
            "service.cli",
            "token",
            "create",
            "--name",
            "ci-gate",
            "--scope",
            "read",
            "--database",
            sqlite_url,
        ],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
        check=True,
    )
    token = created.stdout.decode().strip()
    server = server_factory(sqlite_url)
    event = str(EVENTS / "opened_fund.json")

    refused = gate(tmp_path, "--event", event, "--url", server.url)
    assert refused.code == 2
    assert "401" in refused.stderr
    assert "WORTHIT_TOKEN" in refused.stderr

    allowed = gate(tmp_path, "--event", event, env={"WORTHIT_GATE_URL": server.url, "WORTHIT_TOKEN": token})
    assert allowed.code == 0, allowed.stderr
    assert allowed.verdict()[0] == "fund"
    assert token not in allowed.stdout + allowed.stderr + allowed.summary


def test_unreachable_server_is_a_usage_error(tmp_path: Path) -> None:
    """No server answers at --url: exit 2 (the job's setup), not a verdict."""
    run = gate(tmp_path, "--event", str(EVENTS / "opened_fund.json"), "--url", f"http://127.0.0.1:{free_port()}")
    assert run.code == 2
    assert "cannot reach" in run.stderr
