"""Parsing a block's YAML (or a whole JSON or YAML proposal) and validating it as strictly as the API does."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import msgspec
import yaml

from worthit.rules.errors import InvalidInput
from worthit.rules.model import Proposal
from worthit.rules.pointer import from_pointer
from worthit.service import units
from worthit.service.gate import safe_yaml
from worthit.service.gate.errors import TEMPLATE_HINT, BlockError
from worthit.service.gate.fences import Block, normalise_newlines
from worthit.service.validation import decode_strict

__all__ = [
    "PROPOSAL_FIELDS",
    "Parsed",
    "invalid_block",
    "locate",
    "parse_block",
    "read_proposal",
    "read_request",
    "validate",
]

# A proposal's own field names: any other name a surface accepts (`baseline`, `portability`) is moved to its field.
PROPOSAL_FIELDS = frozenset(field.encode_name for field in msgspec.structs.fields(Proposal))


@dataclass(frozen=True, slots=True)
class Parsed:
    """A validated proposal and the JSON sent to a server (the forgiven values, exactly as validated)."""

    proposal: Proposal
    json: bytes
    block: Block
    tree: yaml.Node = field(repr=False)


def parse_block(block: Block, defaults: Mapping[str, object] | None = None) -> Parsed:
    """Parse the block's YAML safely and validate it as a Proposal; a `BlockError` names the line and field.

    `defaults` fill fields the block leaves out (`worthit review --profile` names the profile it reads)."""
    tree, data = _load(block)
    if tree is None or data is None:
        raise BlockError(f"the worthit block is empty; fill in at least `p` and `k` ({TEMPLATE_HINT})", block.line)
    if not isinstance(data, dict) or not isinstance(tree, yaml.MappingNode):
        raise BlockError(
            f"expected the worthit block to be YAML `field: value` lines (`p: 21%`), got a {type(data).__name__}",
            block.body_line(tree.start_mark.line),
        )
    _reject_duplicates(block, tree)
    _reject_placeholders(block, tree)
    if defaults:
        data = {**defaults, **data}
    written: dict[str, str] = {}
    renamed: dict[str, str] = {}
    try:
        data = units.expand(data, PROPOSAL_FIELDS, renamed)
    except InvalidInput as exc:
        raise invalid_block(block, tree, exc.detail, exc.pointer, written) from exc
    document = units.forgive(data, written)
    try:
        body = msgspec.json.encode(document)
    except (TypeError, msgspec.EncodeError) as exc:
        raise BlockError(f"expected plain YAML values: {exc}", block.line) from exc
    return Parsed(proposal=validate(body, block, tree, written, renamed), json=body, block=block, tree=tree)


def read_proposal(text: str, defaults: Mapping[str, object] | None = None) -> Proposal:
    """A proposal from a whole JSON or YAML document (`worthit review`), values read as every surface reads them.

    JSON is decoded as JSON (so its errors say so); anything else is read as the YAML of a worthit block whose
    lines are the document's. Raises `InvalidInput` (JSON that does not decode, or whose lines cannot be found) or
    `BlockError` (a field that does not validate, on its line; YAML), each naming the field.
    """
    text = normalise_newlines(text)
    if text.lstrip().startswith(("{", "[")):
        try:
            data = _decode_json(text)
        except msgspec.DecodeError as exc:
            try:  # YAML's flow style looks like JSON: `{p: 21%, k: 10}`
                return parse_block(Block(text=text, line=0), defaults).proposal
            except BlockError as yaml_exc:
                if not yaml_exc.detail.startswith("not valid YAML"):
                    raise
            raise InvalidInput(f"expected a JSON or YAML proposal: {exc}") from exc
        if isinstance(data, dict) and defaults:
            data = {**defaults, **data}
        renamed: dict[str, str] = {}
        written: dict[str, str] = {}
        try:
            data = units.expand(data, PROPOSAL_FIELDS, renamed)
            proposal: Proposal = decode_strict(msgspec.json.encode(units.forgive(data, written)), Proposal)
        except InvalidInput as exc:
            raise _placed(text, exc, written, renamed) from exc
        return proposal
    return parse_block(Block(text=text, line=0), defaults).proposal


def _placed(text: str, exc: InvalidInput, written: Mapping[str, str], renamed: Mapping[str, str]) -> Exception:
    """A JSON document's validation problem on the line of its field, as a YAML document's is (JSON is YAML to the
    loader that finds lines); the problem as it was when the text does not compose (a JSON form YAML refuses)."""
    try:
        tree, _ = safe_yaml.load(text)
    except yaml.YAMLError:
        return exc
    if tree is None:  # pragma: no cover - a JSON document that decoded is not empty
        return exc
    return invalid_block(Block(text=text, line=0), tree, exc.detail, exc.pointer, written, renamed)


def read_request(text: str, *, proposals: bool = False) -> bytes:
    """The JSON of a request document given as JSON or YAML (`worthit plan`, `worthit portfolio`), its shorthand
    values read as every surface reads a proposal's (`p: 21%`, `cost_weeks: 10d`, `ms: 1.5s`), and a plan's
    `target_speedup: 2x` and `target_ms: 50ms` and a portfolio's `budget_weeks: 4w` likewise.

    With `proposals`, the document is a portfolio: `proposals` (a bare list is taken as them) and `budget_weeks`,
    each proposal read on its own. Raises `InvalidInput` for a document that is neither, naming the line.
    """
    text = normalise_newlines(text)
    try:
        data = _decode_json(text) if text.lstrip().startswith(("{", "[")) else None
    except msgspec.DecodeError:
        data = None
    if data is None:
        block = Block(text=text, line=0)
        try:
            tree, data = _load(block)
            if tree is not None:
                _reject_duplicates(block, tree)
        except BlockError as exc:
            raise InvalidInput(f"expected a JSON or YAML document: {exc}") from exc
    if proposals and isinstance(data, list):
        data = {"proposals": data}
    if proposals and isinstance(data, dict) and isinstance(data.get("proposals"), list):
        data = {**data, "proposals": [units.expand(item, PROPOSAL_FIELDS) for item in data["proposals"]]}
    data = units.forgive(data, fields=units.PORTFOLIO_FIELDS if proposals else units.PLAN_FIELDS)
    try:
        return msgspec.json.encode(data)
    except (TypeError, msgspec.EncodeError) as exc:
        raise InvalidInput(f"expected plain JSON or YAML values: {exc}") from exc


def _decode_json(text: str) -> object:
    """A JSON document no deeper than YAML's limit (`safe_yaml.MAX_DEPTH`), else an `InvalidInput` naming its field.

    msgspec's own limit is the interpreter's recursion limit (a RecursionError), and what reads the document after
    it (`units.forgive`, the error's pointer) recurses too: a document 900 deep would pass msgspec and fail there."""
    where: str | None
    try:
        data = msgspec.json.decode(text.encode())
    except RecursionError:
        data, where = None, _deep_field(text)
    else:
        where = _too_deep(data)
    if where is not None:
        pointer = f"/{where}" if where else ""
        at = f" - at `$.{where}`" if where else ""
        limit = safe_yaml.MAX_DEPTH
        raise InvalidInput(f"Expected a document nested at most {limit} levels deep, got deeper{at}", pointer)
    return data


def _too_deep(data: object) -> str | None:
    """The top-level field (`""` for the document itself) under which `data` nests past the limit, else None."""
    stack: list[tuple[object, int, str]] = [(data, 0, "")]
    while stack:
        value, depth, top = stack.pop()
        if isinstance(value, dict | list):
            if depth >= safe_yaml.MAX_DEPTH:
                return top
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                stack.append((item, depth + 1, top if depth else str(key) if isinstance(value, dict) else ""))
    return None


def _deep_field(text: str) -> str:
    """The field a JSON text too deep to decode nests under: YAML's composer (JSON is YAML) stops at the limit."""
    try:
        safe_yaml.load(text)
    except safe_yaml.Refused as exc:
        return exc.field
    except yaml.YAMLError:
        pass
    return ""


def validate(
    body: bytes,
    block: Block,
    tree: yaml.Node,
    written: Mapping[str, str] | None = None,
    renamed: Mapping[str, str] | None = None,
) -> Proposal:
    """Decode the JSON of the block as strictly as `POST /v1/evaluate` does; `renamed`: the pointers of fields set
    under another name (`baseline` for `baseline_ms`), to the name as written, for the line and the field."""
    try:
        proposal: Proposal = decode_strict(body, Proposal)
    except InvalidInput as exc:
        raise invalid_block(block, tree, exc.detail, exc.pointer, written or {}, renamed) from exc
    return proposal


def invalid_block(
    block: Block,
    tree: yaml.Node,
    detail: str,
    pointer: str,
    written: Mapping[str, str],
    renamed: Mapping[str, str] | None = None,
) -> BlockError:
    """A validation problem at a JSON pointer, placed on the line of the description where the field is: a field
    left out on the block's own line, since no line holds it. The line and the field are named, so the message
    drops its JSON path."""
    if not pointer:
        # Cross-field checks name their field in the message but carry no pointer.
        named = re.search(r"`([a-z_]+)`", detail)
        pointer = f"/{named.group(1)}" if named else ""
    message = detail.partition(" - at `")[0]
    if pointer in written:
        message += f" (written `{written[pointer]}`)"
    key = units.key_of(".".join(from_pointer(pointer))) if pointer not in written else None
    line_of = ""  # a field left out of an object a renamed field made (`ranks` of `wait: 28%`): that field's line
    for field_set, as_written in (renamed or {}).items():
        if pointer == field_set or pointer.startswith(field_set + "/"):
            pointer = as_written + pointer[len(field_set) :]
            break
        if field_set.startswith(pointer.rsplit("/", 1)[0] + "/"):
            line_of = as_written
    line, node = locate(tree, pointer)
    if node is None and line_of:
        line = locate(tree, line_of)[0]
    elif node is None and pointer.count("/") == 1:
        line = -1  # a top-level field left out: the block's own line (`body_line(-1)`), no line of its body
    listed = "to be one of `" in message  # the values allowed are listed already
    if key is not None and not listed and isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:str":
        message += f"; write {key.expects}"  # text that did not read as the field's shorthand: show the shorthand
    parts = tuple(from_pointer(pointer))
    if parts in units.SHARE_FIELDS and isinstance(node, yaml.ScalarNode):
        try:
            number = float(node.value)
        except ValueError:
            number = 0.0
        if 1 < number <= 100:
            message += f"; for a percentage write `{node.value}%`"
    return BlockError(message, block.body_line(line), ".".join(parts) if pointer else "")


def locate(tree: yaml.Node, pointer: str) -> tuple[int, yaml.Node | None]:
    """The block's 0-based line of the field at a JSON pointer (its key's line, else the nearest parent's found),
    and the field's node (`None` when the field is absent)."""
    line, node = int(tree.start_mark.line), tree
    for part in from_pointer(pointer):
        if isinstance(node, yaml.MappingNode):
            found = next(
                (pair for pair in node.value if isinstance(pair[0], yaml.ScalarNode) and pair[0].value == part), None
            )
            if found is None:
                return line, None
            line, node = int(found[0].start_mark.line), found[1]
        elif isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
            line = int(node.start_mark.line)
        else:
            return line, None
    return line, node


def _load(block: Block) -> tuple[yaml.Node | None, object]:
    """The block's YAML safely loaded, with its node tree for line numbers; a `BlockError` names the line."""
    try:
        return safe_yaml.load(block.text)
    except yaml.YAMLError as exc:
        raise _yaml_error(block, exc) from exc


PLACEHOLDER = re.compile(r"<[^<>]*>")
"""A value as the template writes it for the author to replace (`p: <share>`): never a value of its own."""


def _placeholders(node: yaml.Node, path: str = "") -> list[tuple[str, yaml.Node]]:
    if isinstance(node, yaml.MappingNode):
        return [
            found
            for key, value in node.value
            for found in _placeholders(value, f"{path}.{key.value}" if path else str(key.value))
        ]
    if isinstance(node, yaml.SequenceNode):
        return [found for index, item in enumerate(node.value) for found in _placeholders(item, f"{path}[{index}]")]
    if isinstance(node, yaml.ScalarNode) and node.style is None and PLACEHOLDER.fullmatch(str(node.value).strip()):
        return [(path, node)]
    return []


def _reject_placeholders(block: Block, tree: yaml.Node) -> None:
    """The template's `<…>` values left as they are: the author has not put in numbers, so nothing is decided."""
    found = _placeholders(tree)
    if found:
        names = ", ".join(f"`{path}`" for path, _ in found)
        path, node = found[0]
        raise BlockError(
            f"the worthit block still holds the template's placeholders ({names}): write your own value in place of "
            f"each `<…>`, or delete the block if this is not an optimization ({TEMPLATE_HINT})",
            block.body_line(node.start_mark.line),
            path,
        )


def _reject_duplicates(block: Block, node: yaml.Node, path: str = "") -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            name = str(key.value)
            where = f"{path}.{name}" if path else name
            if name in seen:
                first = block.body_line(seen[name])
                line = block.body_line(key.start_mark.line)
                raise BlockError(f"`{where}` is given twice (first on line {first}); keep one", line, where)
            seen[name] = key.start_mark.line
            _reject_duplicates(block, value, where)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _reject_duplicates(block, item, f"{path}[{index}]")


# Possessive: `\s*-?\s*` split a run of spaces between its two halves every way there is (quadratic in the run).
_KEY_OF_LINE = re.compile(r"\s*+-?\s*+([A-Za-z_][\w.]*+)\s*+:")
# An unclosed `[`, `{` or quote is noticed where the parser gives up (the next field's line, usually); the author's
# mistake is where it was opened, which the error's context mark gives.
_OPENED = {"flow sequence": "`[`", "flow mapping": "`{`", "quoted scalar": "quote"}


def _yaml_error(block: Block, exc: yaml.YAMLError) -> BlockError:
    context = str(getattr(exc, "context", None) or "")
    opened = next((what for construct, what in _OPENED.items() if construct in context), None)
    mark = getattr(exc, "context_mark", None) if opened else None
    mark = mark or getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = block.body_line(mark.line) if mark is not None else block.line
    problem = getattr(exc, "problem", None) or str(exc)
    # A refused alias or nesting is valid YAML that a proposal has no use for: say what, not "not valid".
    detail = problem if isinstance(exc, safe_yaml.Refused) else f"not valid YAML: {problem}"
    if opened and mark is getattr(exc, "context_mark", None):
        detail += f" (the {opened} opened on this line is not closed)"
    elif "mapping values are not allowed" in problem:
        detail += " (quote a value that contains `: `)"
    elif "found character '\\t'" in problem:
        detail += " (indent with spaces, not tabs)"
    field_name = exc.field if isinstance(exc, safe_yaml.Refused) else ""
    if mark is not None and not field_name:
        lines = block.text.split("\n")
        if mark.line < len(lines) and (key := _KEY_OF_LINE.match(lines[mark.line])):
            field_name = key.group(1)
    return BlockError(detail, line, field_name)
