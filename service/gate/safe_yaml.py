"""The one YAML loader of every surface that reads YAML (a PR's worthit block, `worthit review`, `plan`, `portfolio`).

`yaml.safe_load` is safe from code execution, not from size: an alias is a reference, so nine lines of anchors each
naming the previous nine times (`a1: &a1 [*a0, *a0, …]`) are 526 bytes that stand for 9⁹ values, and whatever walks
the document afterwards (our shorthand reader, the duplicate-key check, the JSON encoder) walks every one: hours of
CPU in CI. A proposal never needs an alias, so this loader refuses them, and it refuses nesting deeper than
`MAX_DEPTH` (a proposal is four levels deep; PyYAML's composer recurses, so 100,000 `[` were a RecursionError).
With both, the document it returns has at most one value per node of the text, each at a bounded depth.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.error import Mark

__all__ = ["MAX_DEPTH", "Refused", "load"]

MAX_DEPTH = 32


class Refused(ComposerError):
    """An alias, or nesting past `MAX_DEPTH`: `field` names where (`flags.barrier`, `breakdown[2]`)."""

    def __init__(self, problem: str, mark: Mark | None, field: str) -> None:
        super().__init__(None, None, problem, mark)
        self.field = field


class _Loader(yaml.SafeLoader):
    """SafeLoader that composes no alias and no node deeper than `MAX_DEPTH`."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._path: list[str] = []

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            problem = f"aliases (`*{event.anchor}`) are not accepted; write the value out"
            raise Refused(problem, event.start_mark, _field(self._path))
        if len(self._path) >= MAX_DEPTH:
            # The outermost field is the one typed wrong; the full path would be as long as the nesting.
            outermost = next((part for part in self._path if part), "")
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise Refused(f"nested more than {MAX_DEPTH} levels deep", mark, outermost)
        # `index` is the key's node for a mapping's value, the position for a sequence's item, None for a key.
        if isinstance(index, yaml.ScalarNode):
            self._path.append(str(index.value))
        elif isinstance(index, int):
            self._path.append(f"[{index}]")
        else:
            self._path.append("")
        try:
            return super().compose_node(parent, index)
        finally:
            self._path.pop()


def _field(path: list[str]) -> str:
    return ".".join(part for part in path if part).replace(".[", "[")


def load(text: str) -> tuple[yaml.Node | None, object]:
    """The node tree of `text` (for line numbers) and the document it stands for, composed once.

    Raises `yaml.YAMLError` for text that is not YAML, and for an alias or nesting deeper than `MAX_DEPTH`."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()
    return node, data
