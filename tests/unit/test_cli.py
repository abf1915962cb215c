"""The command line in process: what `worthit review` reads, the exit codes of every command, --version and --help."""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import re
from pathlib import Path

import msgspec
import pytest

from worthit.rules.text import NonFiniteFigure, pct
from worthit.service.cli import internal_error, main, parser
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
    """`worthit rules nosuch` is exit 2 pointing at the index, as the API answers 404; a typo gets the rule meant."""
    assert main(["rules", "nosuch"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "worthit: no rule `nosuch`; `worthit rules` lists them all\n"
    assert main(["rules", "amdhal"]) == 2
    assert (
        capsys.readouterr().err == "worthit: no rule `amdhal`; did you mean `amdahl`? `worthit rules` lists them all\n"
    )
    assert main(["rules", "ceiling"]) == 0
    assert capsys.readouterr().out.startswith("ceiling — ")


def test_rules_alone_is_an_index_by_stage(capsys: pytest.CaptureFixture[str]) -> None:
    """`worthit rules`: a line a rule (its id and its summary), under its stage, in the engine's order; `all` the
    explanations in full."""
    from worthit.rules.checks import CHECKS

    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    stages = list(dict.fromkeys(module.STAGE for module in CHECKS))
    lines = out.splitlines()
    assert [line for line in lines if line and not line.startswith(" ") and not line.startswith("`")] == stages
    rows = [line.split()[0] for line in lines if line.startswith("  ")]
    assert rows == [module.ID for stage in stages for module in CHECKS if stage == module.STAGE]
    assert "  amdahl " in out
    assert "the figures of Amdahl's law for the proposal as stated." in out
    assert len(lines) == len(CHECKS) + 2 * len(stages) + 1  # each stage: a heading and a blank line after it
    assert main(["rules", "all"]) == 0
    full = capsys.readouterr().out
    assert all(f"{module.ID} — " in full for module in CHECKS)
    assert full.count("What it checks") >= len(CHECKS)


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


def test_an_unreachable_plans_table_shows_the_k_that_reaches_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2× of 100 ms with 45 ms that no kernel speedup touches: 55 ms of kernels must come to 5 ms, k = 11, between
    the ceiling at the k given (10×: 50.5 ms) and at zero (45 ms)."""
    path = tmp_path / "plan.json"
    path.write_text(PLAN.replace('"target_speedup": 5', '"target_speedup": 2'), encoding="utf-8")
    assert main(["plan", str(path)]) == 1
    out = capsys.readouterr().out
    assert "all kernel work at 11× would reach it" in out.splitlines()[0]
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("all kernels at")]
    assert rows == [
        ["all", "kernels", "at", "k", "50.5", "ms", "1.98×"],
        ["all", "kernels", "at", "11×", "50", "ms", "2×"],
        ["all", "kernels", "at", "zero", "45", "ms", "2.222×"],
    ]
    assert main(["plan", "--json", str(path)]) == 1
    assert msgspec.json.decode(capsys.readouterr().out)["k_needed"] == pytest.approx(11)


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


# -- every error path: one line naming the file, field or variable at fault, exit 2 ---------------------------------


def _one_line(err: str) -> str:
    assert err.endswith("\n"), err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err, err
    assert "[Errno" not in err, err
    return err.strip()


@pytest.mark.parametrize("given", ["file", "-"])
def test_review_names_the_profile_it_cannot_read(
    tmp_path: Path, given: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing `--profile` file is named, not the proposal (nor `-`, standard input) that was read fine."""
    proposal = tmp_path / "proposal.json"
    proposal.write_text('{"target": "vector_add", "k": 10}', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(proposal.read_bytes())))
    assert main(["review", "--profile", "nope.csv", "proposal.json" if given == "file" else "-"]) == 2
    assert _one_line(capsys.readouterr().err) == "worthit: cannot read nope.csv: No such file or directory"


def test_review_of_a_missing_proposal_names_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["review", str(tmp_path / "nope.json")]) == 2
    assert (
        _one_line(capsys.readouterr().err)
        == f"worthit: cannot read {tmp_path / 'nope.json'}: No such file or directory"
    )


@pytest.mark.parametrize("command", ["plan", "portfolio"])
def test_plan_and_portfolio_name_the_file_they_cannot_read(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([command, "nope.json"]) == 2
    assert _one_line(capsys.readouterr().err) == "worthit: cannot read nope.json: No such file or directory"


def test_openapi_writes_standard_output_by_default_and_names_a_file_it_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run anywhere, `worthit openapi` writes no file relative to the working directory; `-o` into a missing folder
    is exit 2 naming the file (exit 1 is a failing verdict's)."""
    monkeypatch.chdir(tmp_path)
    assert main(["openapi"]) == 0
    assert msgspec.json.decode(capsys.readouterr().out)["openapi"].startswith("3.")
    assert list(tmp_path.iterdir()) == []
    missing = tmp_path / "no" / "openapi.json"
    assert main(["openapi", "-o", str(missing)]) == 2
    assert _one_line(capsys.readouterr().err) == f"worthit: cannot write {missing}: No such file or directory"


def test_serve_on_a_busy_port_says_so_before_migrating(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A port in use: one line and exit 2, before any migration or start-up log (uvicorn logged seven and exit 3)."""
    import socket
    import sqlite3

    database = tmp_path / "worthit.db"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", "--port", str(port), "--database", str(database)]) == 2
    captured = capsys.readouterr()
    assert _one_line(captured.err) == f"worthit: cannot listen on 127.0.0.1:{port}: Address already in use"
    assert captured.out == ""
    tables = sqlite3.connect(database).execute("select name from sqlite_master").fetchall()
    assert tables == []


@pytest.mark.parametrize(
    ("variable", "value", "argv", "named"),
    [
        ("WORTHIT_PORT", "abc", ["migrate"], "WORTHIT_PORT: Expected `int`, got `str`"),
        ("WORTHIT_WORKERS", "0", ["migrate"], "WORTHIT_WORKERS: Expected `int` >= 1"),
        ("WORTHIT_PORT", "8000", ["serve", "--port", "70000"], "--port: Expected `int` <= 65535"),
    ],
)
def test_a_setting_that_does_not_read_names_its_variable_or_option(
    tmp_path: Path,
    variable: str,
    value: str,
    argv: list[str],
    named: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(variable, value)
    assert main([*argv, "--database", str(tmp_path / "worthit.db")]) == 2
    err = _one_line(capsys.readouterr().err)
    assert err.startswith(f"worthit: {named}"), err
    assert "$." not in err


def test_short_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["-V"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == "worthit 0.1.0\n"


def _help(*argv: str) -> str:
    out = io.StringIO()
    with pytest.raises(SystemExit), contextlib.redirect_stdout(out):
        main([*argv, "--help"])
    return " ".join(out.getvalue().split())


def test_help_shows_defaults_variables_and_choices() -> None:
    """What a user must otherwise read the source for: defaults, the variables `serve` reads, what each flag does,
    the rule ids and the profile formats."""
    from worthit.rules.checks import explanations
    from worthit.rules.profiles import FORMATS
    from worthit.service.settings import Settings

    assert "(default: standard output;" in _help("openapi")
    for argv in (["serve"], ["migrate"], ["token", "create"], ["token", "revoke"], ["token", "list"]):
        assert "--database URL database URL or SQLite path (default: DATABASE_URL, else sqlite:///./worthit.db)" in (
            _help(*argv)
        ), argv
    serve = _help("serve")
    assert all(f"WORTHIT_{name.upper()}" in serve for name in Settings.__struct_fields__ if name != "database_url")
    assert "--json print the plan as JSON" in _help("plan")
    assert "--json print the ranking and the funded set as JSON" in _help("portfolio")
    assert "--scope {read,write,admin,slack} read: evaluate and read;" in _help("token", "create")
    rules = _help("rules")
    assert all(rule in rules for rule, _ in explanations())
    profile = _help("profile")
    assert all(name in profile for name in FORMATS)


def test_database_is_declared_once_for_every_command_that_opens_it() -> None:
    """One shared --database (a parent parser), so its help and default cannot drift between commands."""
    source = (Path(__file__).resolve().parents[2] / "service" / "cli.py").read_text(encoding="utf-8")
    assert source.count('"--database"') == 1


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "p: 21%\nk: 10\ncost_wekks: 3\n",
            "line 3, field `cost_wekks`: Unknown field `cost_wekks`; did you mean `cost_weeks`? "
            "The fields here: `title`",
        ),
        (  # left out: on no line, and in words (not "line 1, … got nothing - at `$`")
            "title: x\np: 21%\n",
            "field `k`: `k` is required (the target's own speedup: `10`, `10x`, or `inf` when its work disappears)\n",
        ),
        (
            "p: 21%\nk: 10\nscope:\n  measured: device\n",
            "line 4, field `scope.measured`: Expected `measured` to be one of `device_activity`, `end_to_end`, `rank`, "
            '`step`, got "device"\n',
        ),
        (  # a Slack name, placed on its own line, its field's shorthand shown
            "p: 21%\nk: 10\nbaseline: 1xx\n",
            'line 3, field `baseline`: Expected `baseline_ms` to be a number, got "1xx"; write the measured scope\'s '
            "time: `100ms`, `0.1s` or `500us`\n",
        ),
        ("p: 21%\nk: 10\nbaseline: 100ms\nbaseline_ms: 3\n", "line 3, field `baseline`: `baseline_ms` is given twice"),
    ],
)
def test_review_errors_name_the_line_and_field_in_plain_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, error: str
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8")
    assert main(["review", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"worthit: {path} {error}")
    assert " - at `$" not in err  # the line and the field are named: no JSON path


def test_review_reads_slacks_names_and_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`baseline: 100ms` and `portability: asm` read as Slack reads `baseline=100ms asm` (they were unknown fields)."""
    path = tmp_path / "p.yaml"
    path.write_text("p: 21%\nk: 10\nbaseline: 100ms\nportability: asm\n", encoding="utf-8")
    assert main(["review", "--json", str(path)]) in (0, 1)
    evaluation = msgspec.json.decode(capsys.readouterr().out)
    amdahl = evaluation["amdahl"]
    assert amdahl["new_ms"] == pytest.approx(100 * (0.79 + 0.21 / 10), rel=1e-12)
    # hand-written assembly: its upkeep is priced, and funding waits on a portable fallback
    assert (evaluation["verdict"], evaluation["deciding_rule"]) == ("fund_if", "maintenance_cost")
    path.write_text("p: 21%\nk: 10\nbaseline_ms: 100\nflags:\n  portability: hand_asm\n", encoding="utf-8")
    assert main(["review", "--json", str(path)]) in (0, 1)
    assert msgspec.json.decode(capsys.readouterr().out) == evaluation


def test_profile_kinds_are_the_readers_and_top_is_a_count(capsys: pytest.CaptureFixture[str]) -> None:
    """`--kind` offers exactly the phase kinds the readers make; `--top` is a whole number >= 0."""
    from worthit.rules.profiles.model import KINDS
    from worthit.service.cli import PHASE_KINDS

    assert PHASE_KINDS == KINDS
    seed = Path(__file__).resolve().parents[1] / "data" / "profiles" / "seed_part2" / "kernel_trace.csv"
    for bad in ("-1", "x"):
        with pytest.raises(SystemExit) as exit_:
            main(["profile", "--top", bad, str(seed)])
        assert exit_.value.code == 2
        assert "argument --top: expected a whole number" in capsys.readouterr().err
    assert main(["profile", "--kind", "cpu_op", str(seed)]) == 0
    assert "no phase of kind cpu_op; this profile has kernel\n" in capsys.readouterr().out


def test_a_json_proposals_error_is_on_its_line_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """JSON read for `worthit review` names the line of the field at fault, as YAML does, and reads Slack's names."""
    path = tmp_path / "p.json"
    path.write_text('{\n  "p": "21%",\n  "k": 10,\n  "cost_wekks": 3\n}\n', encoding="utf-8")
    assert main(["review", str(path)]) == 2
    assert capsys.readouterr().err.startswith(
        f"worthit: {path} line 4, field `cost_wekks`: Unknown field `cost_wekks`; did you mean `cost_weeks`?"
    )
    path.write_text('{"p": "21%", "k": 10, "baseline": "100ms", "portability": "asm"}', encoding="utf-8")
    assert main(["review", "--json", str(path)]) == 0
    assert msgspec.json.decode(capsys.readouterr().out)["amdahl"]["baseline_ms"] == 100.0


def test_an_internal_error_is_one_line_naming_it_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """What no command expects (here the error `pct` raises on a NaN, which reached it from the mix rule) is one
    line with its type, words and where it was raised, exit 2; control characters in its words are escaped."""
    with pytest.raises(NonFiniteFigure) as raised:
        pct(math.nan)
    assert internal_error(raised.value) == 2
    line = _one_line(capsys.readouterr().err)
    assert re.fullmatch(
        r"worthit: internal error: NonFiniteFigure: expected a finite figure to write, got nan "
        r"\(rules/text\.py:\d+\); please report",
        line,
    ), line
    with pytest.raises(KeyError) as raised_again:
        {}["\x1b]0;title\x07"]
    assert internal_error(raised_again.value) == 2
    assert "'\\x1b]0;title\\x07'" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("command", ["review", "gate"])
def test_review_and_gate_exit_2_on_an_internal_error(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in the engine (a NaN reaching `pct`, injected: no input reaches one any more) is exit 2 and one line
    from `worthit review` and `worthit gate`, never a traceback and exit 1, which a gate reads as "fails"."""

    def broken(*_: object) -> None:
        pct(math.nan)

    monkeypatch.setattr("worthit.rules.engine.evaluate", broken)
    monkeypatch.setattr("worthit.service.gate.command.evaluate", broken)
    proposal = '{"target": "gemm", "p": 0.3, "k": 2}'
    path = tmp_path / "proposal.json"
    path.write_text(proposal if command == "review" else f"```worthit\n{proposal}\n```\n", encoding="utf-8")
    for name in ("GITHUB_ACTIONS", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    argv = ["review", str(path)] if command == "review" else ["gate", "--body", str(path)]
    assert main(argv) == 2
    assert "worthit: internal error: NonFiniteFigure" in _one_line(capsys.readouterr().err)
