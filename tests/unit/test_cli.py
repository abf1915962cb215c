"""The command line in process: what `worthit review` reads, the exit codes of every command, --version and --help."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import msgspec
import pytest

from worthit.service.cli import main, parser
from worthit.service.gate import run

SEED = (
    "Making attention_softmax (21% of the step) 10× faster takes the step from 100 ms to 81.1 ms (1.233×), "
    "saving 18.9 ms, 6.3 ms per engineer-week."
)


def _review(tmp_path: Path, name: str, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code = main(["review", "--json", str(path)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("proposal.json", '{"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3}'),
        (
            "proposal.json",
            '{"target": "attention_softmax", "p": "21%", "k": "10x", "baseline_ms": "100ms", "cost_weeks": "3w"}',
        ),
        ("proposal.yaml", "target: attention_softmax\np: 21%\nk: 10\nbaseline_ms: 100ms\ncost_weeks: 15d\n"),
        ("proposal.yml", "{target: attention_softmax, p: 0.21, k: 10x, baseline_ms: 0.1s, cost_weeks: 3}\n"),
    ],
)
def test_review_reads_json_or_yaml_with_shorthand(
    tmp_path: Path, name: str, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _review(tmp_path, name, text, capsys)
    assert (code, err) == (0, "")
    evaluation = msgspec.json.decode(out)
    assert evaluation["statement"] == SEED
    assert evaluation["amdahl"]["new_ms"] == pytest.approx(81.1)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.json", '{"p": 0.21, "k": 10', "expected a JSON or YAML proposal"),
        ("bad.json", '{"p": "21 parsecs", "k": 10}', "`p`"),
        ("bad.yaml", "p: 21%\nk: ten\n", "line 2, field `k`"),
        ("bad.yaml", "p: 21%\np: 22%\nk: 10\n", "`p` is given twice"),
    ],
)
def test_review_of_bad_input_exits_2_naming_the_field(
    tmp_path: Path, name: str, text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _review(tmp_path, name, text, capsys)
    assert (code, out) == (2, "")
    assert message in err


def test_gate_body_with_bare_yaml_is_evaluated(tmp_path: Path) -> None:
    """A proposal file without the fence given to `gate --body` is the block, not a "skipped" pass."""
    path = tmp_path / "proposal.yaml"
    path.write_text("target: attention_softmax\np: 21%\nk: 10\nbaseline_ms: 100\ncost_weeks: 3\n", encoding="utf-8")
    out = io.StringIO()
    assert run(parser().parse_args(["gate", "--body", str(path)]), out, {}) == 0
    assert SEED in out.getvalue()
    path.write_text("target: attention_softmax\np: 0.001\nk: 2\ncost_weeks: 3\n", encoding="utf-8")
    out = io.StringIO()
    assert run(parser().parse_args(["gate", "--body", str(path)]), out, {}) == 1
    assert "skipped" not in out.getvalue()


def test_gate_body_that_is_prose_has_no_block(tmp_path: Path) -> None:
    """A description that happens to read as YAML (`Title: …`) is still a description without a block."""
    path = tmp_path / "pr.md"
    path.write_text("Title: fuse the softmax\n", encoding="utf-8")
    out = io.StringIO()
    assert run(parser().parse_args(["gate", "--body", str(path), "--missing", "skip"]), out, {}) == 0
    assert "skipped" in out.getvalue()


def test_gate_event_with_the_variable_unset_cannot_run(capsys: pytest.CaptureFixture[str]) -> None:
    """`worthit gate --event "$GITHUB_EVENT_PATH"` outside a workflow is exit 2 (cannot run), not a failing verdict."""
    out = io.StringIO()
    assert run(parser().parse_args(["gate", "--event", ""]), out, {}) == 2
    assert "$GITHUB_EVENT_PATH is empty" in capsys.readouterr().err
    assert out.getvalue().startswith("::error title=worthit::the gate could not run")


def _subcommands() -> list[list[str]]:
    found: list[list[str]] = []

    def walk(p: argparse.ArgumentParser, prefix: list[str]) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    found.append([*prefix, name])
                    walk(child, [*prefix, name])

    walk(parser(), [])
    return found


def test_every_subcommand_has_a_one_line_description() -> None:
    commands = _subcommands()
    assert ["review"] in commands
    assert ["token", "create"] in commands
    for argv in commands:
        child = parser()
        for name in argv:
            child = next(a.choices[name] for a in child._actions if isinstance(a, argparse._SubParsersAction))
        description = child.description or ""
        assert description, argv
        assert "\n" not in description, argv
        assert description.endswith("."), argv


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == "worthit 0.1.0\n"


def test_an_unknown_rule_cannot_run(capsys: pytest.CaptureFixture[str]) -> None:
    """`worthit rules nosuch` is exit 2 naming the known rules, as the API answers 404 (it printed nothing, exit 0)."""
    assert main(["rules", "nosuch"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no rule `nosuch`; the rules are measurement_scope," in captured.err
    assert main(["rules", "ceiling"]) == 0
    assert capsys.readouterr().out.startswith("ceiling — ")


PLAN = (
    '{"target_speedup": 5, "k": 10, "breakdown": [{"name": "gemm_qkv", "ms": 34}, {"name": "attention_softmax", '
    '"ms": 21}, {"name": "H2D copy", "ms": 18, "kind": "copy"}, {"name": "host gaps", "ms": 27, "kind": "host"}]}'
)


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_plan_out_of_reach_exits_1_in_either_mode(
    tmp_path: Path, json_flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "plan.json"
    path.write_text(PLAN, encoding="utf-8")
    assert main(["plan", *json_flag, str(path)]) == 1
    path.write_text(PLAN.replace('"target_speedup": 5', '"target_speedup": 1.2'), encoding="utf-8")
    assert main(["plan", *json_flag, str(path)]) == 0


@pytest.mark.parametrize("command", ["review", "plan", "portfolio"])
def test_a_bad_policy_file_cannot_run(tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """One policy loader for every command: a missing policy file is exit 2 naming the file."""
    path = tmp_path / "in.json"
    path.write_text("{}", encoding="utf-8")
    assert main([command, "--policy-file", str(tmp_path / "none.toml"), str(path)]) == 2
    assert f"cannot read the policy file {tmp_path / 'none.toml'}" in capsys.readouterr().err


PORTFOLIO_YAML = """\
budget_weeks: 5w
proposals:
  - {title: qkv gemm, target: gemm_qkv, p: 34%, k: 1.5, baseline_ms: 100, cost_weeks: 4}
  - {title: softmax, target: attention_softmax, p: 21%, k: 10x, baseline_ms: 100ms, cost_weeks: 3w}
  - {title: layernorm, target: layernorm, p: 6%, k: 2, baseline_ms: 0.1s, cost_weeks: 5d}
"""
PORTFOLIO_JSON = (
    '{"budget_weeks": 5, "proposals": ['
    '{"title": "qkv gemm", "target": "gemm_qkv", "p": 0.34, "k": 1.5, "baseline_ms": 100, "cost_weeks": 4},'
    '{"title": "softmax", "target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3},'
    '{"title": "layernorm", "target": "layernorm", "p": 0.06, "k": 2, "baseline_ms": 100, "cost_weeks": 1}]}'
)


def test_portfolio_reads_yaml_and_shorthand_as_review_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same portfolio as YAML with `21%`, `10x`, `3w`, `5d`, `0.1s` and a `5w` budget, and as plain JSON: one
    answer."""
    answers = []
    for name, text in (("p.yaml", PORTFOLIO_YAML), ("p.json", PORTFOLIO_JSON)):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert main(["portfolio", "--json", str(path)]) == 0
        answers.append(msgspec.json.decode(capsys.readouterr().out))
    assert answers[0] == answers[1]
    assert [e["target"] for e in answers[0]["entries"] if e["funded"]] == ["attention_softmax", "layernorm"]


@pytest.mark.parametrize(
    ("yaml_goal", "json_goal"), [("target_speedup: 2x", '"target_speedup": 2'), ("target_ms: 0.05s", '"target_ms": 50')]
)
def test_plan_reads_its_goal_in_shorthand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], yaml_goal: str, json_goal: str
) -> None:
    """A plan's `target_speedup: 2x` and `target_ms: 0.05s` read as `2` and `50`, as a proposal's `k` and `ms` do."""
    phases = "breakdown:\n  - {name: a, ms: 60ms}\n  - {name: b, ms: 0.04s}\nk: 10x\n"
    answers = []
    for name, text in (
        ("plan.yaml", f"{yaml_goal}\n{phases}"),
        ("plan.json", f'{{{json_goal}, "k": 10, "breakdown": [{{"name": "a", "ms": 60}}, {{"name": "b", "ms": 40}}]}}'),
    ):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert main(["plan", "--json", str(path)]) == 0
        answers.append(msgspec.json.decode(capsys.readouterr().out))
    assert answers[0] == answers[1]
    assert answers[0]["best_ms"] == pytest.approx(10)


def test_a_portfolio_given_twice_the_same_field_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """YAML would keep the last of two `p:`; the portfolio refuses it as a proposal block does, naming the line."""
    path = tmp_path / "p.yaml"
    path.write_text("- {target: a, p: 20%, k: 2, cost_weeks: 1}\n- {target: a, p: 20%, k: 2, p: 3%}\n", "utf-8")
    assert main(["portfolio", str(path)]) == 2
    assert "line 2, field `[1].p`: `[1].p` is given twice" in capsys.readouterr().err
