"""One figure per fact: a proposal read on every surface — `worthit review --explain`, the decision page, the
gate's job summary and Slack's answer — shows one cost, one return, one scope name and one reasoning text.

The proposal is the one a code review caught printing two costs: 2 weeks of hand assembly, whose cost with upkeep is
4 engineer-weeks (2 a year over the 12-month horizon) and whose return is 18.9 ms / 4 weeks = 4.7 ms per week.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ROOT, Server
from tests.e2e.test_gate import gate
from tests.e2e.test_slack import SECRET, command, text_of

pytestmark = pytest.mark.e2e

PROPOSAL = {
    "title": "Hand-tuned softmax",
    "target": "attention_softmax",
    "p": 0.21,
    "k": 10,
    "baseline_ms": 100,
    "cost_weeks": 2,
    "flags": {"portability": "hand_asm"},
}
SLACK = "p=21% k=10 cost=2w baseline=100ms target=attention_softmax portability=hand_asm"
BLOCK = (
    "```worthit\ntitle: Hand-tuned softmax\ntarget: attention_softmax\np: 21%\nk: 10\nbaseline_ms: 100ms\n"
    "cost_weeks: 2 weeks\nflags:\n  portability: hand_asm\n```\n"
)
COST = "4 engineer-weeks"  # 2 to build + 2 a year of upkeep × one architecture over 12 months
RETURN = "4.7 ms per engineer-week"  # 18.9 ms saved / 4 weeks = 4.725
SAVING = "18.9% of the step = 18.9 ms"


def _plain(markup: str) -> str:
    """Text as a reader sees it: tags and Markdown/mrkdwn emphasis dropped, entities decoded, spaces folded."""
    text = re.sub(r"<[^>]+>", " ", markup)
    text = html.unescape(text).replace("*", " ").replace("`", " ").replace("\\", "")
    return re.sub(r"\s+", " ", text)


def test_the_cli_the_page_the_gate_and_slack_show_one_cost_one_return_one_scope_and_one_reasoning(
    sqlite_url: str, server_factory: Callable[..., Server], tmp_path: Path
) -> None:
    server = server_factory(sqlite_url, env={"WORTHIT_SLACK_SIGNING_SECRET": SECRET})
    with server.client() as client:
        evaluation = client.post("/v1/evaluate", json=PROPOSAL).json()
        decision = client.post("/v1/decisions", json=PROPOSAL).json()
        page = _plain(client.get(f"/decisions/{decision['id']}", headers={"accept": "text/html"}).text)
        slack = _plain(text_of(command(client, SLACK).json()))
    stages = [(stage["question"], stage["answer"]) for stage in evaluation["reasoning"]]
    assert len(stages) == 5
    # The engine's own figures: the cost is build plus upkeep, the return counts it (what every surface prints).
    assert evaluation["amdahl"]["cost_weeks"] == pytest.approx(4.0)
    assert evaluation["amdahl"]["rate"] == pytest.approx(18.9 / 4.0)

    proposal = tmp_path / "proposal.json"
    proposal.write_text(json.dumps(PROPOSAL), encoding="utf-8")
    review = subprocess.run(
        [sys.executable, "-m", "worthit.service.cli", "review", "--explain", str(proposal)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    cli = _plain(review.stdout)
    summary = _plain(gate(tmp_path, "--body", "-", stdin=BLOCK.encode()).summary)

    surfaces = {"cli": cli, "page": page, "gate": summary, "slack": slack}
    for name, text in surfaces.items():
        assert COST in text, name
        assert RETURN in text, name
        assert SAVING in text, name
        # No second cost or return beside the engine's: the build cost alone is never printed as "the" cost.
        assert "cost 2 engineer-weeks" not in text, name
        assert "the measured scope" not in text, name
        assert not re.search(r"\d ms per engineer-week", text.replace(RETURN, "")), name
    # One reasoning text: the page, the gate and the terminal show each stage's question and its whole answer,
    # numbered alike; Slack's one-line why gives each in order, its answer clipped from the same text.
    for name in ("cli", "page", "gate"):
        text = surfaces[name]
        places = [text.index(f"{number}. {_plain(question)}") for number, (question, _) in enumerate(stages, 1)]
        assert places == sorted(places), name
        for _, answer in stages:
            assert _plain(answer).strip() in text, name
    why = slack[slack.index("Why") :]
    places = [why.index(f"{number}. {_plain(question)}") for number, (question, _) in enumerate(stages, 1)]
    assert places == sorted(places)
    for _, answer in stages:
        assert _plain(answer)[:40].strip() in why
