"""Links and images from a PR description do not render in the gate's job summary.

The summary is rendered with a CommonMark renderer (markdown-it-py, tables on) and its tokens walked: no link, no
image, no raw HTML; and no address left in plain text, where GitHub's autolink extension would link it by itself
(markdown-it's own linkify is off here, so that is checked on the text: addresses may only sit in code spans).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from tests.unit.test_gate import gate

PHISH = "[sign in to approve](https://evil.example/login)"
PIXEL = "![](https://tracker.example/pixel.png?pr=1)"
BARE = "https://evil.example/bare and www.evil.example/w"
HTML = '<img src="https://tracker.example/i.png"> <a href="https://evil.example">x</a>'


def walk(tokens: list[Any]) -> list[Any]:
    found = []
    for token in tokens:
        found.append(token)
        found.extend(walk(token.children or []))
    return found


def rendered_problems(markdown: str) -> list[str]:
    tokens = walk(MarkdownIt("commonmark", {"html": True}).enable("table").parse(markdown))
    problems = [f"{t.type}: {t.attrs}" for t in tokens if t.type in ("link_open", "image", "html_inline", "html_block")]
    problems += [
        f"address in text: {t.content!r}"
        for t in tokens
        if t.type == "text" and ("://" in t.content or "www." in t.content)
    ]
    return problems


def test_the_checker_sees_what_github_would_render() -> None:
    assert rendered_problems(f"{PHISH} {PIXEL}") == [
        "link_open: {'href': 'https://evil.example/login'}",
        "image: {'src': 'https://tracker.example/pixel.png?pr=1', 'alt': ''}",
    ]
    assert rendered_problems(BARE) != []
    assert rendered_problems("`https://evil.example` in code") == []


@pytest.mark.parametrize(
    "field", ["title", "target"], ids=["title (the summary's heading)", "target (in the statement and findings)"]
)
@pytest.mark.parametrize("hostile", [PHISH, PIXEL, BARE, HTML, f"{PHISH} | {PIXEL} \\[x](https://e.example)"])
def test_links_and_images_from_the_description_render_as_text(tmp_path: Path, field: str, hostile: str) -> None:
    quoted = hostile.replace("\\", "\\\\").replace('"', '\\"')
    body = tmp_path / "pr.md"
    body.write_text(
        f'Faster softmax.\n\n```worthit\n{field}: "{quoted}"\np: 21%\nk: 10\nbaseline_ms: 100ms\ncost_weeks: 3w\n```\n'
    )
    code, _, summary = gate(tmp_path, "--body", str(body))
    assert code == 0, summary
    assert rendered_problems(summary) == []
    # Shown, not dropped: the reviewer sees what was written (a long target is clipped by the engine).
    assert "`https://" in summary or "`www." in summary
