"""One proposal, written as Slack text, as a pull request's worthit block and as a YAML file for `worthit review`,
gives one verdict, one statement and one figure set: the three surfaces read values through one parser."""

from __future__ import annotations

import io
from pathlib import Path

import msgspec
import pytest

from worthit.rules.engine import evaluate
from worthit.rules.model import Evaluation
from worthit.rules.policy import default_policy
from worthit.service.cli import main, parser
from worthit.service.gate import find_blocks, parse_block, run
from worthit.service.slack.text import Command, parse

# Slack key → the proposal's field, as YAML writes it (nested fields indented under their parent).
YAML_FIELD = {"p": "p", "k": "k", "cost": "cost_weeks", "baseline": "baseline_ms", "fleet": "flags.fleet_gpus"}
BASE = {"target": "attention_softmax", "p": "21%", "k": "10", "cost": "3w", "baseline": "100ms"}
FORMS = [
    ("cost", "10d"),
    ("fleet", "20k"),
    ("p", "21%"),
    ("p", "0.21"),
    ("cost", "3w"),
    ("baseline", "100ms"),
    ("baseline", "1.5s"),
    ("k", "10x"),
    ("k", "inf"),
    ("p", "0.014%"),
    ("cost", "40h"),
    ("fleet", "20,000"),
]


def _slack(values: dict[str, str]) -> str:
    return " ".join(f"{key}={value}" for key, value in values.items())


def _yaml(values: dict[str, str]) -> str:
    lines, flags = [], []
    for key, value in values.items():
        name = YAML_FIELD.get(key, key)
        quoted = f'"{value}"' if "," in value else value
        if name.startswith("flags."):
            flags.append(f"  {name.removeprefix('flags.')}: {quoted}")
        else:
            lines.append(f"{name}: {quoted}")
    return "\n".join(lines + (["flags:", *flags] if flags else [])) + "\n"


def _figures(evaluation: Evaluation) -> dict[str, object]:
    return msgspec.to_builtins(evaluation)  # type: ignore[no-any-return]


@pytest.mark.parametrize(("key", "value"), FORMS, ids=[f"{k}={v}" for k, v in FORMS])
def test_slack_pr_block_and_yaml_file_agree(
    tmp_path: Path, key: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    values = BASE | {key: value}
    policy = default_policy()

    slack = parse(_slack(values))
    assert isinstance(slack, Command), slack
    from_slack = evaluate(slack.proposal, policy)

    description = f"Fuse the softmax.\n\n```worthit\n{_yaml(values)}```\n"
    from_block = evaluate(parse_block(find_blocks(description)[0]).proposal, policy)
    (tmp_path / "pr.md").write_text(description, encoding="utf-8")
    summary = tmp_path / "summary.md"
    gate_out = io.StringIO()
    code = run(
        parser().parse_args(["gate", "--body", str(tmp_path / "pr.md"), "--summary", str(summary)]), gate_out, {}
    )
    assert code == (0 if from_block.verdict in ("fund", "fund_if") else 1)
    assert from_block.statement.replace("|", "\\|") in summary.read_text(encoding="utf-8")

    (tmp_path / "proposal.yaml").write_text(_yaml(values), encoding="utf-8")
    capsys.readouterr()
    assert main(["review", "--json", str(tmp_path / "proposal.yaml")]) in (0, 1)
    from_file = msgspec.json.decode(capsys.readouterr().out, type=Evaluation)

    assert _figures(from_slack) == _figures(from_block) == _figures(from_file)


def test_the_table_reads_as_the_api_numbers() -> None:
    """The shorthand means what it says: 10d is 2 weeks, 20k is 20,000 GPUs, 1.5s is 1500 ms, 0.014% is 0.00014."""
    slack = parse("target=x p=0.014% k=10x cost=10d baseline=1.5s fleet=20k")
    assert isinstance(slack, Command)
    proposal = slack.proposal
    assert (proposal.p, proposal.k, proposal.cost_weeks, proposal.baseline_ms) == (0.00014, 10.0, 2.0, 1500.0)
    assert proposal.flags.fleet_gpus == 20000


SLACK_NAMES = "target=attention_softmax p=21% k=10x cost=3w baseline=100ms fleet=20k asm fallback"
YAML_WITH_SLACK_NAMES = (
    "target: attention_softmax\np: 21%\nk: 10x\ncost: 3w\nbaseline: 100ms\nfleet: 20k\nportability: asm\n"
    "fallback: true\n"
)
JSON_WITH_SLACK_NAMES = (
    '{"target": "attention_softmax", "p": "21%", "k": "10x", "cost": "3w", "baseline": "100ms", "fleet": "20k", '
    '"portability": "asm", "fallback": true}'
)
DOCUMENT_NAMES = (
    "target=attention_softmax p=21% k=10x cost_weeks=3w baseline_ms=100ms flags.fleet_gpus=20k portability=hand_asm "
    "fallback"
)


def test_slack_names_read_in_yaml_json_and_the_pr_block_and_document_names_in_slack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every shorthand one surface accepts, every surface accepts: Slack's `baseline=100ms` and `asm` as a YAML or
    JSON proposal's `baseline: 100ms` and `portability: asm`, and a document's `cost_weeks` and `hand_asm` in Slack;
    all four read to one proposal and one evaluation."""
    slack = parse(SLACK_NAMES)
    assert isinstance(slack, Command), slack
    proposal = slack.proposal
    assert (proposal.p, proposal.k, proposal.cost_weeks, proposal.baseline_ms) == (0.21, 10.0, 3.0, 100.0)
    assert (proposal.flags.fleet_gpus, proposal.flags.portability, proposal.flags.portable_fallback) == (
        20000,
        "hand_asm",
        True,
    )
    from_names = parse(DOCUMENT_NAMES)
    assert isinstance(from_names, Command), from_names
    assert from_names.proposal == proposal
    block = parse_block(find_blocks(f"```worthit\n{YAML_WITH_SLACK_NAMES}```\n")[0])
    assert block.proposal == proposal
    policy = default_policy()
    expected = _figures(evaluate(proposal, policy))
    for name, text in (("yaml", YAML_WITH_SLACK_NAMES), ("json", JSON_WITH_SLACK_NAMES)):
        (tmp_path / f"proposal.{name}").write_text(text, encoding="utf-8")
        capsys.readouterr()
        assert main(["review", "--json", str(tmp_path / f"proposal.{name}")]) in (0, 1), capsys.readouterr().err
        assert _figures(msgspec.json.decode(capsys.readouterr().out, type=Evaluation)) == expected, name
