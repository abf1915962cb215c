"""YAML read by the CLI and the gate: YAML cannot multiply itself, and no document nests past a limit.

Every surface that reads YAML (a PR's block, `worthit review`, `plan`, `portfolio`) goes through
`service/gate/safe_yaml.py`; JSON documents of the CLI are held to the same depth.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import worthit
from tests.unit.test_linear_text import _runs_within
from worthit.rules.errors import InvalidInput
from worthit.service.gate import BlockError, parse_block
from worthit.service.gate.block import read_proposal, read_request
from worthit.service.gate.fences import Block, bare_proposal
from worthit.service.gate.safe_yaml import MAX_DEPTH

BOMB = "p: 21%\nk: 10\nflags:\n  a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)
)


def test_an_alias_bomb_is_refused_naming_its_line_and_field() -> None:
    """Nine lines stand for 9^9 values; the loader refuses the first alias (old: hours in `units.forgive`)."""
    out = _runs_within(
        f"""
        from worthit.service.gate import BlockError, parse_block
        from worthit.service.gate.fences import Block
        try:
            parse_block(Block(text={BOMB!r}, line=10))
        except BlockError as exc:
            print(exc)
        """
    )
    assert out.strip() == "line 15, field `flags.a1`: aliases (`*a0`) are not accepted; write the value out"


def test_any_alias_is_refused_on_every_yaml_surface() -> None:
    small = "p: &share 21%\nk: 10\np_end_to_end: *share\n"
    with pytest.raises(BlockError, match="aliases"):
        parse_block(Block(text=small, line=0))
    with pytest.raises(BlockError, match=r"field `p_end_to_end`: aliases"):
        read_proposal(small)
    with pytest.raises(InvalidInput, match="aliases"):
        read_request("target_speedup: &t 2\nbreakdown: [{name: a, ms: *t}]\n")
    assert bare_proposal(small) is None  # a file of fields with an alias is not taken as a bare proposal
    # An anchor alone is harmless and still reads.
    assert parse_block(Block(text="p: &share 21%\nk: 10\n", line=0)).proposal.p == 0.21


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 950, 100_000])
def test_deep_nesting_under_a_field_names_the_field(depth: int) -> None:
    """YAML, JSON msgspec decodes (950 deep) and JSON it cannot (100,000): each names `title`, no RecursionError."""
    nested = "[" * depth + "1" + "]" * depth
    with pytest.raises(BlockError, match=rf"field `title`: nested more than {MAX_DEPTH} levels deep"):
        read_proposal(f"p: 21%\nk: 10\ntitle: {nested}\n")
    with pytest.raises(InvalidInput, match=rf"at most {MAX_DEPTH} levels deep.* - at `\$\.title`") as caught:
        read_proposal(f'{{"p": 0.21, "k": 10, "title": {nested}}}')
    assert caught.value.pointer == "/title"
    with pytest.raises(InvalidInput, match=r"- at `\$\.breakdown`"):
        read_request(f'{{"target_speedup": 2, "breakdown": {nested}}}')


def test_nesting_within_the_limit_still_reads_to_the_fields_error() -> None:
    nested = "[" * (MAX_DEPTH - 2) + "1" + "]" * (MAX_DEPTH - 2)
    with pytest.raises(BlockError, match=r"^line 1, field `title`: Expected `title` to be text, got \[\[\["):
        read_proposal(f'{{"p": 0.21, "k": 10, "title": {nested}}}')


DEEP = 100_000


@pytest.mark.parametrize("kind", ["json", "yaml"])
def test_review_of_a_value_nested_100000_deep_exits_2_in_one_line(tmp_path: Path, kind: str) -> None:
    nested = "[" * DEEP + "1" + "]" * DEEP
    text = f'{{"p": 0.21, "k": 10, "title": {nested}}}' if kind == "json" else f"p: 21%\nk: 10\ntitle: {nested}\n"
    path = tmp_path / f"proposal.{kind}"
    path.write_text(text)
    done = worthit("review", str(path))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "title" in done.stderr
    assert f"{MAX_DEPTH} levels deep" in done.stderr


@pytest.mark.parametrize("block", [BOMB, "p: 21%\nk: 10\ntitle: " + "[" * DEEP + "]" * DEEP + "\n"])
def test_the_gate_reports_a_bomb_or_deep_block_as_malformed_in_seconds(tmp_path: Path, block: str) -> None:
    """The gate's documented answer to a malformed block: exit 1, one error naming line and field; no traceback."""
    path = tmp_path / "pr.md"
    path.write_text(f"Faster softmax.\n\n```worthit\n{block}```\n")
    done = worthit("gate", "--body", str(path), "--summary", str(tmp_path / "summary.md"))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert "The worthit block is malformed at line" in done.stdout
    assert ("field `flags.a1`: aliases" in done.stdout) or ("field `title`: nested more than" in done.stdout)


def test_an_event_file_nested_100000_deep_cannot_run_the_gate_in_one_line(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text('{"pull_request": {"body": "x", "labels": ' + "[" * DEEP + "]" * DEEP + "}}")
    done = worthit("gate", "--event", str(event))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "nested too deeply" in done.stderr.splitlines()[0]
