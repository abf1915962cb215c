"""HTML pages for people following a link: a decision, the list of decisions, a workload's history.

Server-rendered (Jinja, autoescaped), no JavaScript, readable on a phone. Every user-supplied string (titles,
targets, phase names, notes) reaches the page through autoescaping or `service.present.charts` (which escapes its
own SVG); a Content-Security-Policy without any script source backs that up.

Pages need the `read` scope like the JSON API. Browsers cannot send bearer tokens, so where tokens are enforced
the pages are for a proxy that adds the header (or for deployments that leave reading open).
"""

from __future__ import annotations

import asyncio
import math
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, get_args
from urllib.parse import quote, urlencode

from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.params import FromPath, QueryParameter
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Template
from litestar.template.config import TemplateConfig
from markupsafe import Markup

from worthit.rules.model import TEXT_PATTERN, Range, Verdict
from worthit.rules.text import k_text, label, ms, pct, times, weeks
from worthit.service.api.decisions import CURSOR_PATTERN
from worthit.service.db.decisions import DecisionFilter
from worthit.service.decisions.schemas import Decision
from worthit.service.decisions.service import DecisionService
from worthit.service.errors import NotFound
from worthit.service.outcomes.schemas import Outcome, WorkloadHistory
from worthit.service.outcomes.service import OutcomeService
from worthit.service.present import render
from worthit.service.present.charts import HistoryStep, decision_chart, history_chart

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
VERDICT_NAMES: tuple[str, ...] = get_args(Verdict)
PAGE_SIZE = 50
# No script source at all: even an escaping bug could not run anything. Inline styles only (one <style> block).
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
        "base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
FilterText = Annotated[str | None, QueryParameter(max_length=200, pattern=TEXT_PATTERN)]


def template_config() -> TemplateConfig[JinjaTemplateEngine]:
    """Jinja templates from `service/templates` (Litestar's Jinja engine turns autoescaping on)."""
    return TemplateConfig(directory=TEMPLATES, engine=JinjaTemplateEngine, engine_callback=_configure)


def _configure(engine: JinjaTemplateEngine) -> None:
    from jinja2 import StrictUndefined

    engine.engine.undefined = StrictUndefined  # a misspelt name fails the test suite, not a reader
    engine.engine.trim_blocks = True
    engine.engine.lstrip_blocks = True


def _page(name: str, context: dict[str, Any], status_code: int = 200) -> Template:
    return Template(template_name=name, context=context, status_code=status_code, headers=PAGE_HEADERS)


def _error(status: int, detail: str) -> Template:
    return _page(
        "error.html",
        {"status": f"{status} {'Not Found' if status == 404 else 'Bad Request'}", "detail": detail},
        status,
    )


def heading(decision: Decision) -> str:
    """The page's title: the proposal's own, else what it proposes."""
    proposal = decision.proposal
    if proposal.title:
        return proposal.title
    k = decision.amdahl.k
    speed = k_text(math.inf if k == "inf" else float(k))
    return f"{proposal.target} {speed}" if proposal.target else f"Make the target {speed}"


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _number(value: float | Range | str | None, fmt: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, Range):
        return f"{fmt(value.low)} to {fmt(value.high)}"
    if isinstance(value, str):
        return "∞ (the work disappears)"
    return str(fmt(value))


def figure_rows(decision: Decision) -> list[tuple[str, str]]:
    """The figures as a reviewer reads them (the shared renderer's rows)."""
    return [(row.label, row.value) for row in render.figures(decision)]


def proposal_rows(decision: Decision) -> list[tuple[str, str]]:
    """What was proposed, field by field (only the fields given)."""
    proposal = decision.proposal
    rows: list[tuple[str, str]] = []
    for name, value in (("target", proposal.target), ("team", proposal.team)):
        if value is not None:
            rows.append((name, value))
    rows.append(("p", _number(proposal.p, pct)))
    rows.append(("k", _number(proposal.k, times)))
    if proposal.baseline_ms is not None:
        rows.append(("baseline", ms(proposal.baseline_ms)))
    if proposal.cost_weeks is not None:
        rows.append(("cost", weeks(proposal.cost_weeks)))
    if proposal.p_end_to_end is not None:
        rows.append(("p end to end", pct(proposal.p_end_to_end)))
    scope = proposal.scope
    for name in ("workload", "model", "input", "dtype", "device", "measured", "method", "timing", "target_input"):
        value = getattr(scope, name)
        if value is not None:
            rows.append((f"scope.{name}", str(value)))
    if proposal.breakdown:
        rows.append(("breakdown", " · ".join(f"{phase.name} {ms(phase.ms)}" for phase in proposal.breakdown)))
    return rows


def outcome_rows(outcome: Outcome) -> list[tuple[str, str, str]]:
    """Predicted vs realized, side by side."""
    predicted, realized = outcome.predicted, outcome.realized

    def k(value: float | str | None) -> str:
        return "—" if value is None else ("∞" if isinstance(value, str) else times(value))

    def t(value: float | None) -> str:
        return "—" if value is None else ms(value)

    return [
        ("k of the target", k(predicted.k), k(realized.k)),
        ("target time", t(predicted.target_ms), t(realized.target_ms)),
        ("step time", t(predicted.step_ms), t(realized.step_ms)),
        ("speedup", times(predicted.speedup), "—" if realized.speedup is None else times(realized.speedup)),
    ]


def decision_context(decision: Decision, outcome: Outcome | None) -> dict[str, Any]:
    """Everything the decision page shows, formatted (the template only lays it out)."""
    target = label(decision.proposal.target) if decision.proposal.target else "the target"
    workload = decision.proposal.scope.workload
    return {
        "decision": decision,
        "heading": heading(decision),
        "chart": Markup(decision_chart(decision.proposal, decision.amdahl)),  # noqa: S704 - charts.py escapes
        "chart_caption": f"{target} is highlighted; the dashed line is the ceiling, the time with {target} at zero.",
        "figures": figure_rows(decision),
        "reasoning": [(stage.question, stage.answer, ", ".join(stage.rules)) for stage in decision.reasoning or ()],
        "proposal_rows": proposal_rows(decision),
        "outcome": outcome,
        "outcome_rows": outcome_rows(outcome) if outcome is not None else [],
        "created": _when(decision.created_at),
        "json_url": f"/v1/decisions/{quote(decision.id, safe='')}",
        "workload_url": f"/workloads/{quote(workload, safe='')}" if workload else None,
    }


def history_context(history: WorkloadHistory) -> dict[str, Any]:
    steps = [
        HistoryStep(
            label=f"step {index}",
            phases=tuple((phase.name, phase.ms) for phase in step.phases),
            bottleneck=step.bottleneck,
        )
        for index, step in enumerate(history.steps, start=1)
    ]
    rows = [
        {
            "label": f"step {index}",
            "breakdown": " · ".join(f"{phase.name} {ms(phase.ms)}" for phase in step.phases),
            "bottleneck": f"{step.bottleneck} ({pct(step.bottleneck_share)})",
            "url": f"/decisions/{quote(step.decision_id, safe='')}",
            "heading": step.title or step.target or step.decision_id[:8],
            "verdict": step.verdict,
        }
        for index, step in enumerate(history.steps, start=1)
    ]
    name = quote(history.workload, safe="")
    return {
        "history": history,
        "chart": Markup(history_chart(history.workload, steps)) if steps else "",  # noqa: S704 - charts.py escapes
        "rows": rows,
        "json_url": f"/v1/workloads/{name}",
        "list_url": "/decisions?" + urlencode({"workload": history.workload}),
    }


class PageController(Controller):
    path = "/"
    include_in_schema = False

    @get("/decisions/{decision_id:str}", opt={"scope": "read"}, include_in_schema=False)
    async def decision_page(
        self,
        decision_id: FromPath[str],
        decisions: NamedDependency[DecisionService],
        outcomes: NamedDependency[OutcomeService],
    ) -> Template:
        """One decision as a page: verdict, statement, chart of before/after, figures, findings, outcome."""
        try:
            decision = await decisions.get(decision_id)
        except NotFound as exc:
            return _error(404, str(exc))
        outcome = await outcomes.find(decision_id)
        # Building the figures and the chart is CPU work proportional to the decision: off the event loop.
        return _page("decision.html", await asyncio.to_thread(decision_context, decision, outcome))

    @get("/decisions", opt={"scope": "read"}, include_in_schema=False)
    async def decisions_page(
        self,
        decisions: NamedDependency[DecisionService],
        verdict: FilterText = None,
        target: FilterText = None,
        workload: FilterText = None,
        cursor: Annotated[str | None, QueryParameter(max_length=64, pattern=CURSOR_PATTERN)] = None,
    ) -> Template:
        """Stored decisions, newest first, filtered by verdict, target and workload (a form, no script)."""
        # An HTML form sends empty fields as empty strings: they mean "any".
        filters = {"verdict": verdict or None, "target": target or None, "workload": workload or None}
        if filters["verdict"] is not None and filters["verdict"] not in VERDICT_NAMES:
            return _error(400, f"Expected a verdict among {', '.join(VERDICT_NAMES)}, got {verdict!r}")
        where = DecisionFilter(verdict=filters["verdict"], target=filters["target"], workload=filters["workload"])
        ids: list[str] = []
        next_cursor: str | None = None
        # PostgreSQL text cannot hold NUL: nothing stored matches it, and asking would be a database error.
        if not any("\x00" in value for value in (*filters.values(), cursor) if value):
            ids, next_cursor = await decisions.page(where, cursor or None, PAGE_SIZE)
        # Worst case: PAGE_SIZE decisions of ~280 KB each; read a batch at a time and kept as a row of text each.
        rows = [
            {
                "url": f"/decisions/{quote(item.id, safe='')}",
                "heading": heading(item),
                "verdict": item.verdict,
                "statement": item.statement,
                "speedup": times(item.amdahl.speedup),
                "created": _when(item.created_at),
            }
            async for item in decisions.each(ids)
        ]
        given = {key: value for key, value in filters.items() if value is not None}
        next_url = "/decisions?" + urlencode(given | {"cursor": next_cursor}) if next_cursor else None
        return _page(
            "decisions.html",
            {"items": rows, "filters": filters, "verdicts": VERDICT_NAMES, "next_url": next_url},
        )

    @get("/workloads/{name:path}", opt={"scope": "read"}, include_in_schema=False)
    async def workload_page(self, name: FromPath[str], outcomes: NamedDependency[OutcomeService]) -> Template:
        """A workload's successive breakdowns as a chart, the bottleneck of each step outlined."""
        try:
            history = await outcomes.history(name.removeprefix("/"))  # a `path` parameter keeps its leading slash
        except NotFound as exc:
            return _error(404, str(exc))
        return _page("workload.html", await asyncio.to_thread(history_context, history))
