"""Finding the worthit blocks of a Markdown description (CommonMark fences; see the package docstring)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from worthit.rules.model import Proposal
from worthit.service.gate import safe_yaml
from worthit.service.gate.errors import LANGUAGE


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
        _, data = safe_yaml.load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict) or not data or not set(map(str, data)) <= set(Proposal.__struct_fields__):
        return None
    return Block(text=text, line=0)


def _dedent(line: str, indent: int) -> str:
    spaces = len(line) - len(line.lstrip(" "))
    return line[min(spaces, indent) :]
