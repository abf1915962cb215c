"""Pages of decisions made from real profiles, as a reader sees them: a real server, a real headless Chromium at a
phone's width (375 px) and a laptop's (1,280 px), screenshots kept in a folder the test prints.

A real breakdown has ~60 phases (a two-rank trace, ResNet-50's), most of them hair-thin: the chart must still read.
What is checked is what a reader relies on: a legend that fits (at most LEGEND_MAX entries), idle/host time,
communication, input and the target each in a colour of their own that no other segment takes, the target outlined,
and no page wider than the window.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser import Browser
from tests.conftest import Server, start_server
from tests.e2e.test_outcomes import decide, seed_history
from tests.e2e.test_pages import chromium  # noqa: F401 - the fixture
from tests.fixtures import fixtures_dir, needs
from worthit.service.present.charts import LEGEND_MAX

pytestmark = pytest.mark.e2e

REAL = fixtures_dir() / "real" / "pytorch"
TWO_RANKS = ("trace_filter_sampled_rank-0.json.gz", "trace_filter_sampled_rank-1.json.gz")
RESNET = ("resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz",)
WIDTHS = (375, 1280)
SIGNATURE = (
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_32x6_nt_align1>(cutlass_80_tensorop_s1688gemm_128x64_"
    "32x6_nt_align1::Params)::at::native::CatArrayBatchedCopy<float,unsigned_int,4,64>"
)
"""A kernel signature with no space to wrap at (what a real trace names its kernels)."""
CATEGORY_OF_KIND = {"host": "host", "cpu": "host", "comm": "comm", "input": "input", "io": "input"}

SEGMENTS = """Array.from(document.querySelectorAll('#chart rect.segment[data-bar="before"]')).map(r => ({
  phase: r.dataset.phase, category: r.dataset.category, fill: r.getAttribute('fill'),
  value: parseFloat(r.dataset.value), target: r.classList.contains('target'),
  width: r.getBoundingClientRect().width}))"""
FITS = "[document.documentElement.scrollWidth, window.innerWidth]"


def many_phases() -> dict[str, Any]:
    """A generated breakdown as a profile gives one: 60 phases, idle, communication, input and copies among them, the
    kernels' long signatures as names, a signature as the title."""
    # Instantiations of one template, told apart near the end of their arguments, as cutlass kernels are.
    kernels = [
        {"name": SIGNATURE.replace("align1", f"align{index}"), "ms": round(40 / (index + 1), 3)} for index in range(54)
    ]
    others = [
        {"name": "device idle (host)", "ms": 300, "kind": "host"},
        {
            "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
            "ms": 120,
            "kind": "comm",
        },
        {"name": "device idle (input pipeline)", "ms": 90, "kind": "input"},
        {"name": "H2D copy", "ms": 6, "kind": "copy"},
        {"name": "D2H copy", "ms": 0.2, "kind": "copy"},
        {"name": "memset", "ms": 0.01, "kind": "copy"},
    ]
    target = kernels[2]
    total = sum(phase["ms"] for phase in kernels + others)
    return {
        "title": target["name"],
        "target": target["name"],
        "p": target["ms"] / total,
        "k": 2,
        "cost_weeks": 2,
        "baseline_ms": total,
        "breakdown": kernels + others,
        "scope": {"workload": "many phases"},
    }


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    directory = tmp_path_factory.mktemp("real-pages")
    running = start_server(f"sqlite:///{directory / 'w.db'}", directory / "server.log")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def screens() -> Path:
    """Where the screenshots go: a temporary folder, kept after the run for a person to look at (never committed)."""
    return Path(tempfile.mkdtemp(prefix="worthit-screens-"))


@pytest.fixture
def browser(chromium: str, tmp_path: Path) -> Iterator[Browser]:  # noqa: F811 - the imported fixture
    with Browser(chromium, tmp_path / "chromium") as opened:
        yield opened


def from_profile(client: httpx.Client, names: tuple[str, ...]) -> dict[str, Any]:
    """A decision on the largest compute kernel of the profile the files make, at 2×."""
    files = [("file", (name, (REAL / name).read_bytes(), "application/gzip")) for name in names]
    created = client.post("/v1/profiles", files=files, params={"name": names[0]})
    assert created.status_code == 201, created.text
    kernels = [phase for phase in created.json()["breakdown"]["phases"] if phase["kind"] == "kernel"]
    top = max(kernels, key=lambda phase: phase["total_ns"])["name"]
    return decide(client, {"target": top, "profile_id": created.json()["id"], "k": 2, "cost_weeks": 2})


def look(browser: Browser, server: Server, decision: dict[str, Any], name: str, screens: Path, capsys: Any) -> None:
    """The decision's page at each width: screenshot, legend, colours, outline, nothing spilling off the window."""
    breakdown = decision["proposal"]["breakdown"]
    for width in WIDTHS:
        browser.open(f"{server.url}/decisions/{decision['id']}", width)
        shot = browser.screenshot(screens / f"{name}-{width}.png")
        with capsys.disabled():
            print(f"\nscreenshot: {shot}")
        scroll_width, inner_width = browser.evaluate(FITS)
        assert scroll_width <= inner_width, (name, width, scroll_width)
        legend = browser.evaluate("document.querySelectorAll('#chart g.legend').length")
        assert 3 <= legend <= LEGEND_MAX, (name, legend)
        segments = browser.evaluate(SEGMENTS)
        # Every phase's time is drawn, in one segment or another: the bar adds up to the breakdown.
        assert sum(s["value"] for s in segments) == pytest.approx(sum(p["ms"] for p in breakdown), rel=1e-4)
        (target,) = [s for s in segments if s["target"]]
        assert target["phase"] == decision["proposal"]["target"]
        outline = browser.evaluate("document.querySelectorAll('#chart rect.outline').length")
        assert outline == 2, "the target is outlined in both bars"
        fills: dict[str, set[str]] = {}
        for segment in segments:
            fills.setdefault("target" if segment["target"] else segment["category"], set()).add(segment["fill"])
        for kind in {"host", "comm", "input"} & {CATEGORY_OF_KIND.get(p["kind"], "") for p in breakdown}:
            # Each kind's time summed from the decision's own breakdown, as one segment of its own colour.
            expected = sum(
                p["ms"] for p in breakdown if CATEGORY_OF_KIND.get(p["kind"]) == kind and p["name"] != target["phase"]
            )
            (drawn,) = [s for s in segments if s["category"] == kind and not s["target"]]
            assert drawn["value"] == pytest.approx(expected, rel=1e-4), (name, kind)
        special = [colours for key, colours in fills.items() if key in ("target", "host", "comm", "input")]
        assert all(len(colours) == 1 for colours in special)
        others = set().union(
            *(colours for key, colours in fills.items() if key not in ("target", "host", "comm", "input"))
        )
        mine = [next(iter(colours)) for colours in special]
        assert len(set(mine)) == len(mine), ("idle, host, communication, input and the target share a colour", fills)
        assert not set(mine) & others, ("a colour of its own is reused", fills)


def list_fits(
    browser: Browser, server: Server, screens: Path, capsys: Any, name: str, decision: dict[str, Any]
) -> None:
    """The decisions list at each width: nothing spills off the window, and the decision just made is listed with its
    whole name as its link's title (the text itself may be shortened)."""
    proposal = decision["proposal"]
    whole = proposal.get("title") or proposal["target"]
    for width in WIDTHS:
        browser.open(f"{server.url}/decisions", width)
        shot = browser.screenshot(screens / f"list-after-{name}-{width}.png")
        with capsys.disabled():
            print(f"\nscreenshot: {shot}")
        scroll_width, inner_width = browser.evaluate(FITS)
        assert scroll_width <= inner_width, ("the list spills off the window", width, scroll_width)
        # Every column of every row is inside the window.
        cells = "Array.from(document.querySelectorAll('#decisions td'))"
        right = browser.evaluate(f"Math.max(...{cells}.map(c => c.getBoundingClientRect().right))")
        assert right <= inner_width, (width, right)
        titles = browser.evaluate("Array.from(document.querySelectorAll('#decisions td a')).map(a => a.title)")
        assert any(whole in title for title in titles), ("the full name is in the link's title", whole, titles)


def test_a_many_phase_breakdown_reads_at_a_phones_width_and_a_laptops(
    server: Server, browser: Browser, screens: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """60 generated phases: at most LEGEND_MAX legend entries, idle/communication/input/target in colours of their
    own, the signature title wrapped or shortened, and neither the page nor the list wider than the window."""
    with server.client() as client:
        decision = decide(client, many_phases())
    look(browser, server, decision, "many-phases", screens, capsys)
    title = browser.evaluate("[document.getElementById('title').textContent, document.getElementById('title').title]")
    assert title[1] == SIGNATURE.replace("align1", "align2")
    legend = browser.evaluate("Array.from(document.querySelectorAll('#chart g.legend text')).map(t => t.textContent)")
    assert len(set(legend)) == len(legend), ("two legend entries read alike", legend)
    list_fits(browser, server, screens, capsys, "many-phases", decision)


@needs(REAL)
@pytest.mark.parametrize(("name", "files"), [("two-ranks", TWO_RANKS), ("resnet50", RESNET)])
def test_a_real_profiles_decision_reads(
    server: Server,
    browser: Browser,
    screens: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    files: tuple[str, ...],
) -> None:
    """The shared two-rank trace and the ResNet-50 trace: the decision page at 375 and 1,280 px, and the list."""
    with server.client() as client:
        decision = from_profile(client, files)
    assert len(decision["proposal"]["breakdown"]) > LEGEND_MAX * 4, "a breakdown too long to draw phase by phase"
    look(browser, server, decision, name, screens, capsys)
    list_fits(browser, server, screens, capsys, name, decision)


def test_a_workloads_history_fits_a_phone(
    server: Server, browser: Browser, screens: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The workload page's table of steps becomes one block per step below 40rem: every cell inside the window."""
    with server.client() as client:
        seed_history(client, workload="phone")
    for width in WIDTHS:
        browser.open(f"{server.url}/workloads/phone", width)
        shot = browser.screenshot(screens / f"workload-{width}.png")
        with capsys.disabled():
            print(f"\nscreenshot: {shot}")
        scroll_width, inner_width = browser.evaluate(FITS)
        assert scroll_width <= inner_width, (width, scroll_width)
        cells = "Array.from(document.querySelectorAll('#steps td'))"
        assert browser.evaluate(f"Math.max(...{cells}.map(c => c.getBoundingClientRect().right))") <= inner_width
        assert browser.evaluate(f"{cells}.length") == 3 * 4


def test_the_sites_root_leads_to_the_decisions(server: Server, browser: Browser) -> None:
    """A browser opening the bare address lands on the list of decisions, not a JSON 404."""
    with server.client() as client:
        root = client.get("/", follow_redirects=False)
    assert root.status_code == 302
    assert root.headers["location"] == "/decisions"
    browser.open(f"{server.url}/", 1280)
    assert browser.evaluate("[location.pathname, document.querySelector('h1').textContent]") == [
        "/decisions",
        "Decisions",
    ]


def test_serve_says_where_to_go_and_not_the_schemas_history(server: Server) -> None:
    """`worthit serve` on a new database: one line for the migrations, one naming the page to open; none of
    Alembic's own lines (those are `worthit migrate`'s, for a migration job's log)."""
    log = server.log.read_text()
    assert re.search(r"^database at revision \w+ \(\d+ migrations applied\)$", log, re.MULTILINE), log
    assert f"worthit: open {server.url}/decisions in a browser" in log
    assert "alembic" not in log.lower()
    assert "Running upgrade" not in log
