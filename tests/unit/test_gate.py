"""The review gate in process: finding the block, forgiving values, strict validation with lines, the outcome,
the summary and the annotations, over real-shaped `pull_request` event payloads (tests/data/gate/)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
import yaml

from worthit.rules.model import Verdict
from worthit.rules.policy import Gate
from worthit.service.cli import parser
from worthit.service.gate import (
    Block,
    BlockError,
    annotation,
    escape_data,
    escape_property,
    find_blocks,
    judge,
    parse_block,
    run,
)

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "tests" / "data" / "gate"
COMMAND = 'worthit gate --event "$GITHUB_EVENT_PATH"'
SEED_STATEMENT = (
    "Making attention_softmax (21% of the step) 10× faster takes the step from 100 ms to 81.1 ms (1.233×), "
    "saving 18.9 ms, 6.3 ms per engineer-week."
)
ANNOTATION = re.compile(r"^::(?P<level>notice|warning|error) title=(?P<title>[^:]*)::(?P<message>.*)$")


def unescape(text: str) -> str:
    return text.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def read_annotations(stdout: str) -> list[tuple[str, str, str]]:
    """(level, title, message) of every workflow annotation, unescaped as the runner does."""
    return [
        (m["level"], unescape(m["title"]), unescape(m["message"]))
        for line in stdout.splitlines()
        if (m := ANNOTATION.match(line))
    ]


def gate(tmp_path: Path, *argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run `worthit gate` in process; returns the exit status, stdout and the job summary written."""
    summary = tmp_path / "summary.md"
    out = io.StringIO()
    args = parser().parse_args(["gate", *argv])
    code = run(args, out, {"GITHUB_STEP_SUMMARY": str(summary)} | (env or {}))
    return code, out.getvalue(), summary.read_text(encoding="utf-8") if summary.exists() else ""


def event(name: str) -> str:
    return str(EVENTS / name)


def block_of(text: str) -> Block:
    return Block(text=text, line=1)


# -- finding the block ------------------------------------------------------------------------------------------


def test_block_found_in_plain_description() -> None:
    """A ```worthit fence is found and its line (1-based, of the opening fence) recorded."""
    blocks = find_blocks("Intro\n\n```worthit\np: 21%\nk: 10\n```\n")
    assert blocks == [Block(text="p: 21%\nk: 10", line=3)]


def test_crlf_and_lone_cr_are_line_breaks() -> None:
    """GitHub stores browser-typed descriptions with CRLF: the block's YAML carries no stray carriage returns."""
    assert find_blocks("a\r\n```worthit\r\np: 21%\r\nk: 10\r\n```\r\n") == [Block(text="p: 21%\nk: 10", line=2)]
    assert find_blocks("```worthit\rp: 1%\r```") == [Block(text="p: 1%", line=1)]


def test_tilde_fence_and_info_string_words() -> None:
    """`~~~worthit` counts; the first word of the info string decides, case-insensitively."""
    assert find_blocks("~~~worthit\nk: 2\n~~~") == [Block(text="k: 2", line=1)]
    assert find_blocks("``` Worthit proposal\nk: 2\n```") == [Block(text="k: 2", line=1)]
    assert find_blocks("```worthitx\nk: 2\n```\n```yaml\nk: 2\n```") == []


def test_examples_inside_other_fences_and_html_comments_are_not_blocks() -> None:
    """A worthit example shown in a ````markdown fence or hidden in an HTML comment is not the proposal."""
    body = "````markdown\n```worthit\np: 50%\n```\n````\n<!--\n```worthit\np: 90%\n```\n-->\n```worthit\np: 1%\n```"
    assert find_blocks(body) == [Block(text="p: 1%", line=11)]


def test_indented_block_in_list_item_is_dedented() -> None:
    """A block inside a list item is found; content is dedented by the opening fence's indent."""
    body = "1. The proposal:\n\n   ```worthit\n   p: 21%\n   scope:\n     workload: inference\n   ```\n"
    assert find_blocks(body) == [Block(text="p: 21%\nscope:\n  workload: inference", line=3)]


def test_unclosed_fence_runs_to_the_end_and_inline_backticks_are_not_fences() -> None:
    """CommonMark: an unclosed fence runs to the end; ```worthit``` inline in a sentence opens nothing."""
    assert find_blocks("see ```worthit``` below\n```worthit\nk: 2") == [Block(text="k: 2", line=2)]
    assert find_blocks("```worthit``` is inline") == []


def test_first_block_wins() -> None:
    """Several blocks: all are found in order; the gate evaluates the first."""
    blocks = find_blocks("```worthit\nk: 2\n```\ntext\n```worthit\nk: 3\n```")
    assert [block.line for block in blocks] == [1, 5]


# -- forgiving values, strict validation ------------------------------------------------------------------------


def test_block_values_as_authors_type_them() -> None:
    """`p: 21%`, `k: inf`, `cost_weeks: 3w`, `baseline_ms: 100ms` and nested fields all convert."""
    parsed = parse_block(
        block_of(
            "target: h2d_copy\np: 18%\nk: inf\nbaseline_ms: 100ms\ncost_weeks: 3w\n"
            "breakdown:\n  - {name: h2d_copy, ms: 18ms, kind: copy}\n  - {name: gemm, ms: 82}\n"
            "flags:\n  strategic: {model: model-b, p: 30%}\n"
        )
    )
    proposal = parsed.proposal
    assert (proposal.p, proposal.k, proposal.baseline_ms, proposal.cost_weeks) == (0.18, "inf", 100.0, 3.0)
    assert proposal.breakdown is not None
    assert proposal.breakdown[0].ms == 18.0
    assert proposal.flags.strategic is not None
    assert proposal.flags.strategic.p == 0.3


@pytest.mark.parametrize(
    ("text", "line", "field", "detail"),
    [
        ("p: 21%\nk: 10\ntitle: Fuse: softmax\n", 4, "title", "not valid YAML: mapping values are not allowed"),
        ("p: 21%\nk: [10\n", 3, "k", "not valid YAML: expected ',' or ']'"),
        ('p: 21%\ntitle: "fuse\nk: 10\n', 3, "title", "the quote opened on this line is not closed"),
        ("p: 170%\nk: 10\n", 2, "p", "Expected `p` <= 1.0, got 1.7 (written `170%`)"),
        ("k: 10\np: 21\n", 3, "p", "for a percentage write `21%`"),
        ("p: 21%\nk: ten\n", 3, "k", 'Expected `k` to be a number or one of `inf`, got "ten"; write the target'),
        ("p: 21%\nk: 10\nflags:\n  barrier:\n    ranks: 1\n", 6, "flags.barrier.ranks", "Expected `ranks` >= 2"),
        ("p: 21%\nk: 10\nbogus: 1\n", 4, "bogus", "Unknown field `bogus`"),
        # A field left out is on no line of the block: the block's own (its fence), in plain words.
        ("p: 21%\n", 1, "k", "`k` is required (the target's own speedup: `10`, `10x`, or `inf` when"),
        ("p: 21%\nk: 10\np: 30%\n", 4, "p", "`p` is given twice (first on line 2)"),
        ("- p: 21%\n", 2, "", "expected the worthit block to be YAML `field: value` lines"),
        ("# all commented out\n", 1, "", "the worthit block is empty"),
        ("k: 10\nscope: {method: counting}\n", 3, "scope.method", "Expected `method` to be one of"),
    ],
)
def test_malformed_block_names_line_and_field(text: str, line: int | None, field: str, detail: str) -> None:
    """A malformed block fails naming the description's line (block at line 1: content from line 2) and field."""
    with pytest.raises(BlockError) as caught:
        parse_block(block_of(text))
    if line is not None:
        assert caught.value.line == line
    assert caught.value.field == field
    assert detail in caught.value.detail


def test_validation_is_the_api_strictness() -> None:
    """Only the documented forgiving forms are converted: a quoted "no" is a string, and a bool field rejects it
    as the API would."""
    with pytest.raises(BlockError, match=r"field `scope.overlap`: Expected `overlap` to be true or false, got \"no\"$"):
        parse_block(block_of('p: 21%\nk: 10\nscope: {overlap: "no"}\n'))


# -- outcome, annotations ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verdict", "level", "passed"),
    [
        ("fund", "notice", True),
        ("fund_if", "warning", True),
        ("remeasure", "error", False),
        ("redirect", "error", False),
        ("decline", "error", False),
    ],
)
def test_default_gate_settings(verdict: Verdict, level: str, passed: bool) -> None:
    """PRODUCT §3: fund passes, fund_if passes with a warning, remeasure / redirect / decline fail."""
    outcome = judge(verdict, Gate())
    assert (outcome.level, outcome.passed, outcome.exit_code) == (level, passed, 0 if passed else 1)


def test_gate_settings_are_the_policys() -> None:
    """fail_on and warn_on come from the policy: a team may let decline through with a warning."""
    gate_settings = Gate(fail_on=["remeasure"], warn_on=["decline"])
    assert judge("decline", gate_settings).passed
    assert judge("decline", gate_settings).level == "warning"
    assert not judge("remeasure", gate_settings).passed


def test_workflow_command_escaping() -> None:
    """GitHub's rules: data escapes % CR LF; properties also `:` and `,` — so a statement cannot end the command."""
    assert escape_data("21% of\r\nthe step") == "21%25 of%0D%0Athe step"
    assert escape_property("worthit: a, b") == "worthit%3A a%2C b"
    assert annotation("error", "50%\n::warning::x", "worthit: decline") == (
        "::error title=worthit%3A decline::50%25%0A::warning::x"
    )


# -- the command over real-shaped events ------------------------------------------------------------------------


def test_opened_with_block_passes_with_verdict_in_summary(tmp_path: Path) -> None:
    """opened + a fund block: exit 0, a notice with the statement, and the summary's verdict, table and findings."""
    code, stdout, summary = gate(tmp_path, "--event", event("opened_fund.json"))
    assert code == 0
    assert ("notice", "worthit: fund", SEED_STATEMENT) in read_annotations(stdout)
    assert "worthit: `fund` — passes" in summary
    assert f"> {SEED_STATEMENT}" in summary
    assert "| speedup | 1.233× (ceiling 1.266×) |" in summary
    assert "| time | 100 ms → 81.1 ms |" in summary
    assert "| return | 6.3 ms per engineer-week |" in summary
    assert "- `amdahl` (supports): " in summary
    assert "Policy `default` v1, evaluated offline" in summary


def test_edited_with_failing_verdict_fails(tmp_path: Path) -> None:
    """edited (CRLF body, `changes.body.from` present) + a decline: exit 1 and an error with the statement."""
    code, stdout, summary = gate(tmp_path, "--event", event("edited_decline.json"))
    assert code == 1
    [(level, title, message)] = read_annotations(stdout)
    assert (level, title) == ("error", "worthit: decline")
    assert "noise floor" in message
    assert "worthit: `decline` — fails the gate" in summary
    assert message in summary


def test_crlf_body_gives_the_same_verdict(tmp_path: Path) -> None:
    """Windows line endings change nothing: same annotation as the LF body."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    crlf = gate(tmp_path / "a", "--event", event("opened_crlf.json"))
    lf = gate(tmp_path / "b", "--event", event("opened_fund.json"))
    assert crlf[0] == lf[0] == 0
    assert read_annotations(crlf[1]) == read_annotations(lf[1])


def test_block_inside_other_markdown(tmp_path: Path) -> None:
    """The ~~~worthit block in a list item, after a python fence, a ````markdown example and an HTML comment, is
    the one evaluated; the later second block is ignored, and both a notice and the summary say so."""
    code, stdout, summary = gate(tmp_path, "--event", event("edited_in_markdown.json"))
    assert code == 0
    notes = read_annotations(stdout)
    assert notes[0] == (
        "notice",
        "worthit",
        "2 worthit blocks found; evaluated the first (line 28), ignored those at line 39",
    )
    assert notes[1][:2] == ("notice", "worthit: fund")
    assert "gemm_qkv (34% of the step) 2× faster" in notes[1][2]
    assert "**Tuned QKV GEMM**" in summary
    assert "(the first of 2; the others were ignored)" in summary


@pytest.mark.parametrize("name", ["opened_no_block.json", "opened_null_body.json"])
def test_missing_block_skips_by_default(tmp_path: Path, name: str) -> None:
    """No block (or `body: null`): the default policy skips — exit 0 with a notice and a summary saying so."""
    code, stdout, summary = gate(tmp_path, "--event", event(name))
    assert code == 0
    assert read_annotations(stdout) == [
        ("notice", "worthit", "No worthit block in the pull request description; the gate is skipped.")
    ]
    assert "skipped — no worthit block" in summary


@pytest.mark.parametrize(
    ("argv", "env"),
    [(["--missing", "fail"], {}), ([], {"WORTHIT_GATE_MISSING": "fail"})],
)
def test_missing_block_can_fail(tmp_path: Path, argv: list[str], env: dict[str, str]) -> None:
    """`--missing fail` (or its environment variable): exit 1 with "add a worthit block"."""
    code, stdout, summary = gate(tmp_path, "--event", event("opened_null_body.json"), *argv, env=env)
    assert code == 1
    [(level, _, message)] = read_annotations(stdout)
    assert level == "error"
    assert "add a worthit block" in message
    assert "add a worthit block" in summary


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("opened_bad_yaml.json", "line 8, field `title`: not valid YAML: mapping values are not allowed here"),
        ("opened_p_over_100.json", "line 10, field `p`: Expected `p` <= 1.0, got 1.7 (written `170%`)"),
    ],
)
def test_malformed_block_fails_naming_line_and_field(tmp_path: Path, name: str, message: str) -> None:
    """Bad YAML, and valid YAML with p: 170%: exit 1, an error naming the description's line and the field."""
    code, stdout, summary = gate(tmp_path, "--event", event(name))
    assert code == 1
    [(level, title, text)] = read_annotations(stdout)
    assert (level, title) == ("error", "worthit: malformed block")
    assert message in text
    assert "malformed block" in summary
    assert message.replace("<", "&lt;") in summary


def test_policy_file_sets_the_gate(tmp_path: Path) -> None:
    """A team's policy file: decline merely warns; no block fails (its missing_block); its name is in the summary."""
    policy = tmp_path / "team.toml"
    policy.write_text(
        'name = "team"\nversion = 3\n[gate]\nfail_on = ["remeasure"]\nwarn_on = ["decline", "redirect"]\n'
        'missing_block = "fail"\n'
    )
    code, stdout, summary = gate(tmp_path, "--event", event("edited_decline.json"), "--policy-file", str(policy))
    assert code == 0
    assert read_annotations(stdout)[0][:2] == ("warning", "worthit: decline")
    assert "passes with a warning" in summary
    assert "Policy `team` v3" in summary
    code, stdout, _ = gate(tmp_path, "--event", event("opened_no_block.json"), "--policy-file", str(policy))
    assert code == 1


def test_summary_is_appended(tmp_path: Path) -> None:
    """$GITHUB_STEP_SUMMARY is shared by the job's steps: the gate appends, never truncates."""
    (tmp_path / "summary.md").write_text("# earlier step\n", encoding="utf-8")
    _, _, summary = gate(tmp_path, "--event", event("opened_fund.json"))
    assert summary.startswith("# earlier step\n## ✅ worthit: `fund`")


def test_description_text_cannot_issue_workflow_commands(tmp_path: Path) -> None:
    """Text from the description reaches the log only between ::stop-commands:: markers under Actions, and the
    annotations escape it, so a field named `x\\n::add-mask::y` cannot add commands."""
    body = tmp_path / "body.md"
    body.write_text('```worthit\np: 21%\nk: 10\n"x\\n::add-mask::y": 1\n```\n', encoding="utf-8")
    code, stdout, _ = gate(tmp_path, "--body", str(body), env={"GITHUB_ACTIONS": "true"})
    assert code == 1
    assert read_annotations(stdout)[0][2].startswith(
        "The worthit block is malformed at line 4, field `x\n::add-mask::y`"
    )
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("::stop-commands::"))
    token = lines[start].removeprefix("::stop-commands::")
    end = lines.index(f"::{token}::")
    injected = [i for i, line in enumerate(lines) if line.startswith("::add-mask::")]
    assert injected
    assert all(start < i < end for i in injected)
    assert len(token) == 32


@pytest.mark.parametrize(
    ("setup", "argv", "expected"),
    [
        (None, ["--event", "missing.json"], "cannot read the event file"),
        ("not json", ["--event", "event.json"], "expected a GitHub event (JSON)"),
        ('{"ref": "refs/heads/main", "commits": []}', ["--event", "event.json"], "not a pull_request event"),
        ('{"pull_request": {"body": 5}}', ["--event", "event.json"], "string or null"),
        ("", ["--body", "missing.md"], "cannot read missing.md"),
        ("", ["--body", "-", "--policy", "team"], "needs --url"),
        ("", ["--body", "-", "--policy-file", "missing.toml"], "cannot read the policy file"),
    ],
)
def test_usage_errors_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setup: str | None, argv: list[str], expected: str
) -> None:
    """The gate cannot run (unreadable or wrong event file, bad options): exit 2, an error annotation, no summary."""
    monkeypatch.chdir(tmp_path)
    if setup is not None:
        (tmp_path / "event.json").write_text(setup, encoding="utf-8")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))
    code, stdout, summary = gate(tmp_path, *argv)
    assert code == 2
    [(level, _, message)] = read_annotations(stdout)
    assert level == "error"
    assert expected in message
    assert summary == ""


# -- the template, the workflow, the action ---------------------------------------------------------------------


TEMPLATE_VALUES = {
    "<what is proposed>": "Fuse the attention softmax",
    "<kernel or phase>": "attention_softmax",
    "<share>": "21%",
    "<speedup>": "10",
    "<milliseconds>": "100",
    "<weeks>": "3w",
}
"""What an author writes in place of the template's placeholders: the examples its comments give."""


def _template_block() -> Block:
    template = (ROOT / ".github" / "pull_request_template.md").read_text(encoding="utf-8")
    [block] = find_blocks(template)
    return block


def test_the_template_left_as_it_is_is_refused_naming_each_placeholder(tmp_path: Path) -> None:
    """A description with the template's block unedited decides nothing: exit 1, an error naming every `<…>` field
    and the line of the first, before any value is read."""
    block = _template_block()
    with pytest.raises(BlockError) as refused:
        parse_block(block)
    assert refused.value.field == "title"
    assert refused.value.line == block.line + 1
    assert "(`title`, `target`, `p`, `k`, `baseline_ms`, `cost_weeks`)" in refused.value.detail
    body = (ROOT / ".github" / "pull_request_template.md").read_text(encoding="utf-8")
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"action": "opened", "pull_request": {"number": 7, "body": body}}), encoding="utf-8")
    code, stdout, _ = gate(tmp_path, "--event", str(path))
    assert code == 1
    [(level, _, message)] = read_annotations(stdout)
    assert level == "error"
    assert "still holds the template's placeholders" in message


def test_a_placeholder_anywhere_is_refused_and_angle_brackets_in_quotes_are_text() -> None:
    """A `<…>` left in a nested field is found where it is; a quoted title that happens to be `<…>` is the author's."""
    with pytest.raises(BlockError) as refused:
        parse_block(block_of("p: 21%\nk: 10\nscope:\n  workload: <workload>\n"))
    assert refused.value.field == "scope.workload"
    assert refused.value.line == 5  # the fence is line 1, the block's fourth line the description's fifth
    assert parse_block(block_of('title: "<fused>"\np: 21%\nk: 10\n')).proposal.title == "<fused>"


def test_the_template_filled_in_is_a_valid_proposal() -> None:
    """The template's block with each placeholder replaced by its comment's example parses, and with every commented
    field uncommented too (hints name real fields with valid example values)."""
    block = _template_block()
    text = block.text
    for placeholder, value in TEMPLATE_VALUES.items():
        assert text.count(placeholder) == 1, placeholder
        text = text.replace(placeholder, value)
    assert "<" not in text.split("#")[0]
    filled = Block(text=text, line=block.line)
    proposal = parse_block(filled).proposal
    assert (proposal.p, proposal.k, proposal.baseline_ms, proposal.cost_weeks) == (0.21, 10, 100, 3)
    uncommented = "\n".join(line[2:] if line.startswith("# ") else line for line in text.splitlines())
    assert uncommented.count("\n") == text.count("\n")
    proposal = parse_block(Block(text=uncommented, line=block.line)).proposal
    assert proposal.scope.method == "timeline"
    assert proposal.flags.strategic is not None
    assert proposal.flags.strategic.p == 0.3


def _readme_command() -> str:
    readme = (ROOT / "deploy" / "github" / "README.md").read_text(encoding="utf-8")
    commands: list[str] = re.findall(r"```sh\n(worthit gate --event [^\n]*)\n```", readme)
    assert len(commands) == 1
    return commands[0]


def test_workflow_triggers_and_command() -> None:
    """The workflow is valid YAML, runs on opened, edited, synchronize and reopened (`edited` is not a default
    type), calls the gate exactly as the README says, and never interpolates the description."""
    text = (ROOT / ".github" / "workflows" / "worthit-gate.yml").read_text(encoding="utf-8")
    workflow = yaml.safe_load(text)
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads the key `on` as true
    assert list(triggers) == ["pull_request"]
    assert sorted(triggers["pull_request"]["types"]) == ["edited", "opened", "reopened", "synchronize"]
    runs = [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]
    assert _readme_command() == COMMAND
    assert [run_ for run_ in runs if "worthit gate" in run_] == [COMMAND]
    assert all("${{" not in run_ for run_ in runs)
    assert not re.search(r"\$\{\{[^}]*pull_request\.body", text)


def test_action_passes_inputs_through_env() -> None:
    """The composite action runs the same command; no `run:` line interpolates an expression."""
    action = yaml.safe_load((ROOT / "deploy" / "github" / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    runs = [step["run"] for step in action["runs"]["steps"] if "run" in step]
    assert all("${{" not in run_ for run_ in runs)
    assert any(COMMAND in run_.splitlines() for run_ in runs)


def test_the_summary_reasoning_is_one_numbered_list(tmp_path: Path) -> None:
    """Each stage a numbered item of one list (`1. **question** answer`), never a bullet holding "1. …": GitHub
    renders that as a one-item numbered list inside each bullet."""
    _, _, summary = gate(tmp_path, "--event", event("opened_fund.json"))
    section = summary.split("**Reasoning**\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(section) >= 3
    assert [line.split(". ", 1)[0] for line in section] == [str(n) for n in range(1, len(section) + 1)]
    assert all(re.match(r"^\d+\. \*\*[^*]+\*\* \S", line) for line in section), section
    assert not re.search(r"^- \d+\.", summary, re.MULTILINE)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("opened_fund.json", "verdict=fund\nrule=amdahl\npassed=true\ndecision-url=\n"),
        ("edited_decline.json", "verdict=decline\nrule=noise_floor\npassed=false\ndecision-url=\n"),
        ("opened_no_block.json", "verdict=\nrule=\npassed=true\ndecision-url=\n"),
        ("opened_bad_yaml.json", "verdict=\nrule=\npassed=false\ndecision-url=\n"),
    ],
)
def test_step_outputs_name_the_verdict_and_the_deciding_rule(tmp_path: Path, name: str, expected: str) -> None:
    """`$GITHUB_OUTPUT` gets the verdict, the deciding rule and whether the check passed, for later steps (offline:
    no decision is stored, so no URL)."""
    outputs = tmp_path / "outputs"
    outputs.write_text("earlier=kept\n", encoding="utf-8")
    gate(tmp_path, "--event", event(name), env={"GITHUB_OUTPUT": str(outputs)})
    assert outputs.read_text(encoding="utf-8") == "earlier=kept\n" + expected


def test_the_action_exposes_the_gate_step_outputs() -> None:
    action = yaml.safe_load((ROOT / "deploy" / "github" / "action.yml").read_text(encoding="utf-8"))
    [step] = [step for step in action["runs"]["steps"] if COMMAND in step.get("run", "")]
    assert step["id"] == "gate"
    assert {name: output["value"] for name, output in action["outputs"].items()} == {
        name: f"${{{{ steps.gate.outputs.{name} }}}}" for name in ("verdict", "rule", "passed", "decision-url")
    }


def test_an_unclosed_flow_sequence_is_reported_where_it_opens(tmp_path: Path) -> None:
    """`k: [10` on line 19 of a description: line 19, field `k` (the parser notices on line 20, `baseline_ms`)."""
    body = tmp_path / "pr.md"
    lines = [f"line {n} of the description" for n in range(1, 15)]
    lines += ["", "```worthit", "target: attention_softmax", "p: 21%", "k: [10", "baseline_ms: 100", "```", ""]
    assert lines[18] == "k: [10"
    body.write_text("\n".join(lines), encoding="utf-8")
    code, stdout, _ = gate(tmp_path, "--body", str(body))
    assert code == 1
    [(_, _, message)] = read_annotations(stdout)
    assert message.startswith("The worthit block is malformed at line 19, field `k`: not valid YAML"), message
    assert "the `[` opened on this line is not closed" in message


def test_a_hand_written_replay_is_refused_offline(tmp_path: Path) -> None:
    """`replay` is what worthit replays from a profile's trace: written in a block, with `p` and a `profile_id` the
    gate does not resolve offline, it would decide the change on a figure nobody measured."""
    body = tmp_path / "pr.md"
    lines = ["```worthit", "target: K", "p: 50%", "k: 2", "profile_id: t", "replay:", "  steps: ProfilerStep#1"]
    lines += ["  step_ms: 10", "  amdahl_ms: 5", "  predicted_ms: 5", "```", ""]
    body.write_text("\n".join(lines), encoding="utf-8")
    code, stdout, _ = gate(tmp_path, "--body", str(body))
    assert code == 1
    [(_, _, message)] = read_annotations(stdout)
    assert "field `replay`" in message, message
    assert "set by worthit from a profile's trace, never by hand" in message
