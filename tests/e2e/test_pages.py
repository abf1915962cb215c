"""The HTML pages on a real server, read by a real headless browser (Debian's chromium) and over plain HTTP."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import IN_CI, ROOT, Server, start_server
from tests.e2e.test_outcomes import MEASURED, decide, seed_history

pytestmark = pytest.mark.e2e

EVIL = "<script>alert(1)</script>"
BREAKDOWN = [
    {"name": "gemm_qkv", "ms": 34},
    {"name": "attention_softmax", "ms": 21},
    {"name": "layernorm", "ms": 6},
    {"name": "elementwise_gelu", "ms": 4},
    {"name": "h2d_copy", "ms": 18, "kind": "copy"},
    {"name": "host_gaps", "ms": 5, "kind": "host"},
    {"name": "other_kernel", "ms": 12},
]
PROPOSAL = {
    "title": f"Fuse softmax {EVIL}",
    "target": "attention_softmax",
    "p": 0.21,
    "k": 10,
    "baseline_ms": 100,
    "cost_weeks": 3,
    "scope": {"workload": "inference"},
    "breakdown": BREAKDOWN,
}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    text: list[str] = field(default_factory=list)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()

    def all_text(self) -> str:
        return "".join(self.text) + "".join(child.all_text() for child in self.children)

    def find(self, **attrs: str) -> list[Node]:
        return [node for node in self.walk() if all(node.attrs.get(k.rstrip("_")) == v for k, v in attrs.items())]

    def by_id(self, element_id: str) -> Node:
        (node,) = self.find(id=element_id)
        return node


class DOM(HTMLParser):
    """A small element tree from serialized HTML (what `chromium --dump-dom` prints)."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self._stack = [self.root]
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {name: value or "" for name, value in attrs})
        self._stack[-1].children.append(node)
        if tag not in VOID:
            self._stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._stack[-1].children.append(Node(tag, {name: value or "" for name, value in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for index in range(len(self._stack) - 1, 0, -1):
            if self._stack[index].tag == tag:
                del self._stack[index:]
                return

    def handle_data(self, data: str) -> None:
        self._stack[-1].text.append(data)


def segments(dom: Node, bar: str) -> list[Node]:
    return [
        n
        for n in dom.walk()
        if n.tag == "rect" and "segment" in n.attrs.get("class", "").split() and n.attrs.get("data-bar") == bar
    ]


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the tests that read only the decisions they make (each page by its own id or workload); the
    list page's test, which counts every decision, has a database of its own."""
    directory = tmp_path_factory.mktemp("pages")
    server = start_server(f"sqlite:///{directory / 'w.db'}", directory / "server.log")
    yield server
    server.stop()


@pytest.fixture
def chromium() -> str:
    """Debian's chromium; outside CI a missing browser skips, under CI it fails (.ci/run installs it)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if IN_CI:
            pytest.fail("chromium is not installed; CI must run the browser test (apt-get install chromium)")
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    return path


def browse(chromium: str, profile: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        *extra,
        url,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def test_decision_page_in_a_real_browser(shared_server: Server, chromium: str, tmp_path: Path) -> None:
    """The browser's DOM shows the verdict and the statement, one chart segment per phase and state, and the
    title's `<script>` as text: no script element exists."""
    server = shared_server
    with server.client() as client:
        decision = decide(client, PROPOSAL)
        plain = decide(client, {"title": EVIL, "target": EVIL, "p": 0.21, "k": 10, "baseline_ms": 100})
    url = f"{server.url}/decisions/{decision['id']}"
    dom = DOM(browse(chromium, tmp_path / "profile", url, "--dump-dom").stdout).root

    assert dom.by_id("verdict").all_text().strip() == decision["verdict"]
    assert dom.by_id("statement").all_text().strip() == decision["statement"]
    assert dom.by_id("title").all_text().strip() == PROPOSAL["title"]
    assert not [node for node in dom.walk() if node.tag == "script"]
    svg = [node for node in dom.by_id("chart").walk() if node.tag == "svg"]
    assert len(svg) == 1
    for bar in ("before", "after"):
        phases = [node.attrs["data-phase"] for node in segments(svg[0], bar)]
        assert phases == [phase["name"] for phase in BREAKDOWN], bar
    target = [node for node in segments(svg[0], "after") if "target" in node.attrs["class"].split()]
    assert [node.attrs["data-value"] for node in target] == ["2.1"]
    assert len([node for node in svg[0].walk() if node.attrs.get("class") == "ceiling"]) == 1

    shot = tmp_path / "phone.png"
    browse(chromium, tmp_path / "profile", url, f"--screenshot={shot}", "--window-size=412,915")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    dom = DOM(browse(chromium, tmp_path / "profile", f"{server.url}/decisions/{plain['id']}", "--dump-dom").stdout).root
    assert dom.by_id("title").all_text().strip() == EVIL
    assert not [node for node in dom.walk() if node.tag == "script"]
    svg_node = next(node for node in dom.walk() if node.tag == "svg")
    for bar in ("before", "after"):
        assert [node.attrs["data-phase"] for node in segments(svg_node, bar)] == [EVIL, "rest of the step"]


def get_page(client: httpx.Client, path: str, **params: Any) -> httpx.Response:
    response = client.get(path, params=params)
    assert response.headers["content-type"].startswith("text/html"), response.text[:500]
    return response


def test_pages_escape_declare_no_script_and_fit_a_phone(shared_server: Server) -> None:
    server = shared_server
    with server.client() as client:
        decision = decide(client, PROPOSAL | {"team": f"team {EVIL}"})
        assert client.post(f"/v1/decisions/{decision['id']}/outcome", json=MEASURED | {"note": EVIL}).is_success
        page = get_page(client, f"/decisions/{decision['id']}")
        assert page.status_code == 200
        assert EVIL not in page.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
        assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page.text
        assert "<script" not in page.text
        assert "script-src" not in page.headers["content-security-policy"]
        assert page.headers["content-security-policy"].startswith("default-src 'none'")
        dom = DOM(page.text).root
        assert "Realized k is 6× against the proposed 10×" in dom.by_id("outcome-statement").all_text()
        assert "predicted vs realized" in page.text

        missing = get_page(client, "/decisions/00000000-0000-7000-8000-000000000000")
        assert missing.status_code == 404
        assert "No decision with id" in missing.text


def test_list_page_filters_and_pages(sqlite_url: str, server_factory: Callable[..., Server]) -> None:
    server = server_factory(sqlite_url)
    with server.client() as client:
        funded = decide(client, PROPOSAL)
        declined = decide(client, {"title": "tiny", "target": "tiny", "p": 0.001, "k": 2, "scope": {"workload": "x"}})
        assert declined["verdict"] != funded["verdict"]
        everything = DOM(get_page(client, "/decisions", verdict="", target="", workload="").text).root
        links = [
            a.attrs["href"]
            for a in everything.walk()
            if a.tag == "a" and a.attrs.get("href", "").startswith("/decisions/")
        ]
        assert links == [f"/decisions/{declined['id']}", f"/decisions/{funded['id']}"]
        only = DOM(get_page(client, "/decisions", verdict=funded["verdict"]).text).root
        assert [a.attrs["href"] for a in only.walk() if a.tag == "a" and "/decisions/" in a.attrs.get("href", "")] == [
            f"/decisions/{funded['id']}"
        ]
        by_workload = get_page(client, "/decisions", workload="x").text
        assert f"/decisions/{declined['id']}" in by_workload
        assert f"/decisions/{funded['id']}" not in by_workload
        by_target = get_page(client, "/decisions", target="attention_softmax").text
        assert f"/decisions/{funded['id']}" in by_target
        assert f"/decisions/{declined['id']}" not in by_target
        assert get_page(client, "/decisions", verdict="maybe").status_code == 400
        schema = client.get("/schema/openapi.json").json()
        assert not [path for path in schema["paths"] if not path.startswith("/v1/") and "decisions" in path]


def test_workload_page_charts_the_moving_bottleneck(shared_server: Server) -> None:
    server = shared_server
    with server.client() as client:
        seed_history(client, workload=f"llm {EVIL}")
        page = get_page(client, f"/workloads/llm {EVIL}")
        assert page.status_code == 200
        assert "<script" not in page.text
        dom = DOM(page.text).root
        assert dom.by_id("path").all_text().strip() == "Bottleneck at each step: attention → mlp → attention"
        outlined = [
            (n.attrs["data-bar"], n.attrs["data-phase"])
            for n in dom.walk()
            if n.tag == "rect" and "bottleneck" in n.attrs.get("class", "")
        ]
        assert outlined == [("step 1", "attention"), ("step 2", "mlp"), ("step 3", "attention")]
        assert get_page(client, "/workloads/none-such").status_code == 404


def test_cli_review_writes_the_pages_chart(shared_server: Server, tmp_path: Path) -> None:
    """`worthit review --chart out.svg` draws the very SVG the decision page shows."""
    proposal = tmp_path / "proposal.json"
    proposal.write_text(json.dumps(PROPOSAL), encoding="utf-8")
    out = tmp_path / "out.svg"
    result = subprocess.run(
        [sys.executable, "-m", "worthit.service.cli", "review", "--chart", str(out), str(proposal)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"worthit: wrote the chart to {out} (an SVG: open it in a browser)" in result.stderr
    assert "wrote the chart" not in result.stdout, "stdout stays the review alone"
    svg = out.read_text(encoding="utf-8").strip()
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
    server = shared_server
    with server.client() as client:
        decision = decide(client, PROPOSAL)
        assert svg in get_page(client, f"/decisions/{decision['id']}").text


def test_decision_page_shows_the_reasoning_stage_by_stage(shared_server: Server) -> None:
    """The page lists the five stages in order, each its question and the answer the decision carries."""
    server = shared_server
    with server.client() as client:
        decision = decide(
            client, {"target": "rope", "p": 0.008, "k": 2, "cost_weeks": 3, "flags": {"fleet_gpus": 80000}}
        )
        page = get_page(client, f"/decisions/{decision['id']}")
    assert page.status_code == 200
    items = DOM(page.text).root.by_id("reasoning").all_text()
    questions = [stage["question"] for stage in decision["reasoning"]]
    assert questions == [
        "Can these numbers be trusted?",
        "What is it worth?",
        "What does it cost?",
        "Is there a better use of the effort?",
        "On what conditions?",
    ]
    positions = [items.index(question) for question in questions]
    assert positions == sorted(positions)
    assert "fleet A/B" in items
