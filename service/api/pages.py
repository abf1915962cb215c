"""HTML pages for people following a link: a decision, the list of decisions, a workload's history.

Server-rendered (Jinja, autoescaped), no JavaScript, readable on a phone. Every user-supplied string (titles,
targets, phase names, notes) reaches the page through autoescaping or `service.present.charts` (which escapes its
own SVG); a Content-Security-Policy without any script source backs that up.

Pages need the `read` scope like the JSON API. Browsers cannot send bearer tokens, so where tokens are enforced a
page opens from a signed link (one decision, read-only, until it expires) or after a sign-in (a form posting a token,
which sets a cookie); a browser with neither gets a page that explains, with the form (service/http/page_access.py).
"""

from __future__ import annotations

import asyncio
import math
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, get_args
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from litestar import Controller, Request, Response, get, post
from litestar.datastructures import Cookie
from litestar.di import NamedDependency
from litestar.params import FromPath, QueryParameter
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Redirect, Template
from litestar.template.config import TemplateConfig
from markupsafe import Markup

from worthit.rules.model import TEXT_PATTERN, Range, Verdict
from worthit.rules.text import k_text, label, ms, pct, times, weeks
from worthit.service.api.decisions import CURSOR_PATTERN
from worthit.service.db.decisions import DecisionFilter
from worthit.service.decisions.schemas import Decision
from worthit.service.decisions.service import DecisionService
from worthit.service.errors import NotFound
from worthit.service.http import page_access
from worthit.service.outcomes.schemas import Outcome, WorkloadHistory
from worthit.service.outcomes.service import OutcomeService
from worthit.service.present import render
from worthit.service.present.charts import HistoryStep, decision_chart, history_chart

__all__ = [
    "PAGE_HEADERS",
    "PAGE_SIZE",
    "SIGN_IN_REASONS",
    "TEMPLATES",
    "VERDICT_NAMES",
    "FilterText",
    "PageController",
    "SignInController",
    "decision_context",
    "explanation_page",
    "figure_rows",
    "heading",
    "history_context",
    "link_days",
    "origin_mismatch",
    "outcome_rows",
    "proposal_rows",
    "shortened",
    "sign_in_context",
    "template_config",
]

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


HEADING_CHARS = 100
"""A page's title at most (a kernel signature can be 2,000 characters); the whole of it is the `title` attribute."""
LIST_HEADING_CHARS = 90
BREAKDOWN_SHOWN = 8
"""Phases a breakdown's row names; the others are counted (the chart and the JSON have them)."""


def shortened(text: str, chars: int) -> str:
    """`text` cut to `chars` characters with an ellipsis, whitespace folded (the full text goes in a `title`)."""
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def _phases_text(phases: Any) -> str:
    """A breakdown as one line: its largest phases by name and time, the others counted."""
    ranked = sorted(phases, key=lambda phase: -phase.ms)
    shown = " · ".join(f"{shortened(phase.name, 60)} {ms(phase.ms)}" for phase in ranked[:BREAKDOWN_SHOWN])
    more = len(ranked) - BREAKDOWN_SHOWN
    return shown + (
        f" · and {more} more phases ({ms(sum(phase.ms for phase in ranked[BREAKDOWN_SHOWN:]))})" if more > 0 else ""
    )


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
        # What was asked is the build estimate; "cost" is the decision's figure (build plus upkeep), said once above.
        rows.append(("build estimate", weeks(proposal.cost_weeks)))
    if proposal.p_end_to_end is not None:
        rows.append(("p end to end", pct(proposal.p_end_to_end)))
    scope = proposal.scope
    for name in ("workload", "model", "input", "dtype", "device", "measured", "method", "timing", "target_input"):
        value = getattr(scope, name)
        if value is not None:
            rows.append((f"scope.{name}", str(value)))
    if proposal.breakdown:
        rows.append(("breakdown", _phases_text(proposal.breakdown)))
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
        "heading": shortened(heading(decision), HEADING_CHARS),
        "full_heading": heading(decision),
        "chart": Markup(decision_chart(decision.proposal, decision.amdahl)),  # noqa: S704 - charts.py escapes
        "chart_caption": f"{target} is outlined; the dashed line is the ceiling, the time with {target} at zero.",
        "figures": figure_rows(decision),
        "reasoning": [
            (row.label, row.value, ", ".join(stage.rules))
            for row, stage in zip(render.reasoning(decision), decision.reasoning or (), strict=True)
        ],
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
            "breakdown": _phases_text(step.phases),
            "bottleneck": f"{shortened(step.bottleneck, 60)} ({pct(step.bottleneck_share)})",
            "url": f"/decisions/{quote(step.decision_id, safe='')}",
            "heading": shortened(step.title or step.target or step.decision_id[:8], LIST_HEADING_CHARS),
            "full_heading": step.title or step.target or step.decision_id[:8],
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

    @get("/", opt={"scope": "public"}, include_in_schema=False)
    async def home(self) -> Redirect:
        """The site's root leads to the list of decisions (a browser opening the bare address lands somewhere)."""
        return Redirect("/decisions", status_code=302)

    @get("/decisions/{decision_id:str}", opt={"scope": "read", "page": True}, include_in_schema=False)
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

    @get("/decisions", opt={"scope": "read", "page": True}, include_in_schema=False)
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
                "heading": shortened(heading(item), LIST_HEADING_CHARS),
                "full_heading": heading(item),
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

    @get("/workloads/{name:path}", opt={"scope": "read", "page": True}, include_in_schema=False)
    async def workload_page(self, name: FromPath[str], outcomes: NamedDependency[OutcomeService]) -> Template:
        """A workload's successive breakdowns as a chart, the bottleneck of each step outlined."""
        try:
            history = await outcomes.history(name.removeprefix("/"))  # a `path` parameter keeps its leading slash
        except NotFound as exc:
            return _error(404, str(exc))
        return _page("workload.html", await asyncio.to_thread(history_context, history))


SIGN_IN_REASONS = {
    "none": (
        "Sign in to see this page",
        "This server asks for a worthit token before it shows decisions. Open a decision from the link in its "
        "Slack message (signed links open their decision without a token), or sign in with a token.",
    ),
    "expired": ("This link has expired", ""),
    "invalid": (
        "This link does not open this page",
        "Its signature does not match: the link was changed or cut short, or the server's key changed since. Open it "
        "again from its Slack message, or sign in with a token.",
    ),
    "session": ("Sign in again", "Your sign-in has ended (it lasts a few hours, and ends when its token is revoked)."),
    "refused": ("Sign in to see this page", "That token is not valid: unknown, revoked, or mistyped."),
    "origin": ("This sign-in came from another address", ""),
    "scope": ("Sign in to see this page", "That token cannot read decisions: it has no `read` scope."),
    "limited": ("Too many attempts", ""),
}


def sign_in_context(next_path: str, reason: str, expired_at: datetime | None = None, **extra: Any) -> dict[str, Any]:
    """What the sign-in page says: why it is shown, and the form that comes back to `next_path`."""
    heading, why = SIGN_IN_REASONS[reason]
    if reason == "expired":
        when = f" on {_when(expired_at)}" if expired_at is not None else ""
        why = f"Signed links open their decision for a limited time; this one ended{when}. Sign in with a token."
    if reason == "limited":
        why = f"Too many failed sign-ins from this address; retry in {extra.get('retry_after', 60)} s."
    if reason == "origin":
        why = str(extra["why"])
    link_days: int | None = extra.get("link_days")
    if reason == "none" and link_days is None:
        why = "This server asks for a worthit token before it shows decisions: sign in with a token."
    return {
        "heading": heading,
        "why": why,
        "next": next_path,
        "hours": page_access.SESSION_SECONDS // 3600,
        "link_days": link_days,
    }


def link_days(settings: Any) -> int | None:
    """How long signed links open their decision, in days; None where the server signs none (no link secret), so
    that no page promises them."""
    return round(settings.link_ttl_days) if settings.link_secret is not None else None


def explanation_page(app: Any, denied: page_access.Denied) -> str:
    """The page a browser gets instead of a 401 JSON: why it may not see the page, and the sign-in form."""
    days = link_days(app.state.settings)
    context = sign_in_context(denied.next, denied.reason, denied.expired_at, link_days=days)
    return str(app.template_engine.get_template("sign_in.html").render(**context))


def origin_mismatch(origin: str, served: str, public_url: str | None) -> str:
    """Why a sign-in posted from `origin` is refused, when this server sees itself as `served` (scheme://host), and
    the setting that fixes it when the browser was at this server all along."""
    browser = urlsplit(origin)
    seen = urlsplit(served)
    if browser.netloc == seen.netloc and browser.scheme != seen.scheme:
        return (
            f"Your browser is at {origin}, but this server received the sign-in as {served}: a proxy in front of it "
            "ends TLS, and the server does not trust the proxy's forwarded headers. Set WORTHIT_TRUSTED_PROXIES to "
            "the proxy's address (and WORTHIT_PUBLIC_URL to the address people use)."
        )
    hint = (
        f" If {origin} is this server's public address, set WORTHIT_PUBLIC_URL to it"
        + ("" if public_url is None else f" (it is {public_url} now)")
        + ", and WORTHIT_TRUSTED_PROXIES to the proxy's address."
    )
    return (
        f"The sign-in was posted from {origin}, not from this server ({served}): a token is taken only from this "
        f"server's own form, so no other site can sign your browser in.{hint}"
    )


def _safe_next(value: str) -> str:
    """Only a path of this site: `//host` or `/\\host` would leave it (an open redirect)."""
    if not value.startswith("/") or value.startswith(("//", "/\\")) or any(ord(c) < 0x20 for c in value):
        return "/decisions"
    return value


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _secure(request: Request[Any, Any, Any]) -> bool:
    public_url = request.app.state.settings.public_url or ""
    return request.url.scheme == "https" or public_url.startswith("https://")


class SignInController(Controller):
    """The small sign-in of the pages: a form that posts a token, and a cookie that lets the pages through."""

    path = "/"
    include_in_schema = False

    @get("/sign-in", opt={"scope": "public"}, include_in_schema=False)
    async def sign_in_form(
        self, request: Request[Any, Any, Any], next: Annotated[str, QueryParameter(max_length=2000)] = "/decisions"
    ) -> Template:
        """The sign-in form; it comes back to `next` (a path of this site)."""
        days = link_days(request.app.state.settings)
        return _page("sign_in.html", sign_in_context(_safe_next(next), "none", link_days=days))

    @post("/sign-in", opt={"scope": "public"}, include_in_schema=False, status_code=303)
    async def sign_in(self, request: Request[Any, Any, Any]) -> Response[Any]:
        """Check the posted token (`read` scope at least), start a session and set its cookie; back to `next`.

        The token is looked up before the address's failures are consulted, as for bearer tokens
        (service/http/auth.py): made-up tokens posted from a shared address must not lock out a valid one."""
        state = request.app.state
        address = request.client.host if request.client else "?"
        failures = state.auth_failures
        form = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=4)
        token = (form.get("token") or [""])[0].strip()
        back = _safe_next((form.get("next") or ["/decisions"])[0])
        days = link_days(state.settings)
        origin = request.headers.get("origin")
        served = f"{request.url.scheme}://{request.url.netloc}"
        public_url: str | None = state.settings.public_url
        public = public_url.rstrip("/") if public_url else None
        if origin is not None and origin not in (served, public and _origin_of(public)):
            # Another site posting a token of its own would sign this browser in as someone else.
            why = origin_mismatch(origin, served, public_url)
            return _page("sign_in.html", sign_in_context(back, "origin", link_days=days, why=why), 403)
        principal = (await state.authenticator.principal(token))[0] if 0 < len(token) <= 200 else None
        if principal is None or "read" not in principal.scopes:
            if failures is not None:
                if (retry_after := failures.check(address)) is not None:
                    context = sign_in_context(back, "limited", retry_after=retry_after, link_days=days)
                    return _page("sign_in.html", context, 429)
                failures.hit(address)
            reason, status = ("refused", 401) if principal is None else ("scope", 403)
            return _page("sign_in.html", sign_in_context(back, reason, link_days=days), status)
        access: page_access.PageAccess = state.page_access
        cookie = Cookie(
            key=page_access.SESSION_COOKIE,
            value=await access.sign_in(principal),
            max_age=page_access.SESSION_SECONDS,
            path="/",
            httponly=True,
            samesite="lax",
            secure=_secure(request),
        )
        return Redirect(back, status_code=303, cookies=[cookie], headers={"cache-control": "no-store"})

    @post("/sign-out", opt={"scope": "public"}, include_in_schema=False, status_code=303)
    async def sign_out(self, request: Request[Any, Any, Any]) -> Response[Any]:
        """End the sign-in: its session opens nothing from now on, and the cookie is cleared."""
        await request.app.state.page_access.sign_out(page_access.session_cookie(request.scope["headers"]))
        cookie = Cookie(
            key=page_access.SESSION_COOKIE,
            value="",
            max_age=0,
            path="/",
            httponly=True,
            samesite="lax",
            secure=_secure(request),
        )
        return Redirect("/sign-in", status_code=303, cookies=[cookie])
