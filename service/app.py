"""The app factory: `create_app(settings)` builds everything; nothing is read or connected at import time."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar, Router, get
from litestar.datastructures import State
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import RedocRenderPlugin, SwaggerRenderPlugin
from litestar.openapi.spec import Server
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from worthit.service.api.decisions import DecisionController
from worthit.service.api.health import healthz, readyz
from worthit.service.api.links import decision_link
from worthit.service.api.outcomes import OutcomeController
from worthit.service.api.pages import PAGE_HEADERS, PageController, SignInController, explanation_page, template_config
from worthit.service.api.plans import PlanController
from worthit.service.api.policies import PolicyController
from worthit.service.api.profiles import ProfileController, SummariesController
from worthit.service.api.rules import list_rules
from worthit.service.api.slack import slack_command
from worthit.service.db import migrate
from worthit.service.db.decisions import DecisionStore
from worthit.service.db.engine import create_engine
from worthit.service.db.outcomes import OutcomeStore
from worthit.service.db.policies import PolicyStore
from worthit.service.db.profiles import ProfileStore
from worthit.service.db.sessions import SessionStore
from worthit.service.db.tokens import TokenStore
from worthit.service.db.writer import GroupCommitWriter
from worthit.service.decisions.service import DecisionService
from worthit.service.http.auth import Authenticator, AuthMiddleware
from worthit.service.http.bodies import BodyGuard
from worthit.service.http.observability import Observability, configure_logging
from worthit.service.http.openapi import DocumentJson
from worthit.service.http.page_access import PageAccess, PageAccessMiddleware
from worthit.service.http.problems import EXCEPTION_HANDLERS
from worthit.service.http.query import QueryCheck
from worthit.service.http.ratelimit import RateLimiter
from worthit.service.metrics import metrics_text
from worthit.service.outcomes.service import Calibrator, OutcomeService
from worthit.service.policies.service import PolicyService
from worthit.service.profiles.service import ParseLimits, ProfileService
from worthit.service.settings import Settings
from worthit.service.version import VERSION

log = logging.getLogger("worthit")


def openapi_config(*, schema_ui: bool = False) -> OpenAPIConfig:
    """The OpenAPI document at `/schema/openapi.json` (and `/schema`), public. The browsable pages (`/schema/redoc`,
    `/schema/swagger`, …) are Litestar's, which load their JavaScript from a CDN at `latest`, without subresource
    integrity: off unless `WORTHIT_SCHEMA_UI` turns them on, so that a public route never runs third-party code."""
    return OpenAPIConfig(
        title="worthit",
        version=VERSION,
        description="Is this optimization worth doing? Amdahl's law and scope checks under a versioned policy.",
        servers=[Server(url="/")],
        use_handler_docstrings=True,
        # The document is finished for clients' generators before it is served (service/http/openapi.py), at
        # /schema/openapi.json and /schema; with WORTHIT_SCHEMA_UI, Litestar's browsable pages beside it.
        render_plugins=[DocumentJson(), *([RedocRenderPlugin(), SwaggerRenderPlugin()] if schema_ui else [])],
        # The API's description is public, whoever may call the API itself.
        openapi_router=Router(path="/schema", route_handlers=[], opt={"scope": "public"}, include_in_schema=False),
    )


@get("/metrics", opt={"scope": "public"}, tags=["operations"], media_type="text/plain; version=0.0.4")
async def metrics() -> bytes:
    """Prometheus metrics: requests by route and status, latencies, decisions by verdict."""
    return metrics_text()


class SchemaMismatch(RuntimeError):
    """The database's schema is not the one this code was written for, and this process may not migrate it."""


async def schema_problem(engine: AsyncEngine, *, unreachable_ok: bool = False) -> str | None:
    """Why this code must not serve on the database's schema, or None when the schema is the code's own.

    `unreachable_ok`: a database that does not answer is no reason to stop (a worker restarted during an outage
    would take the whole server down); /readyz reports it until it answers.
    """
    try:
        current = await migrate.current_revision(engine)
    except (OSError, SQLAlchemyError) as exc:
        if not unreachable_ok:
            raise
        log.warning("could not check the database schema at start: %s", exc)
        return None
    head = migrate.head_revision()
    if migrate.schema_serves(current):
        return None
    return (
        f"the database schema is at revision {current or 'none (an empty database)'}, this code needs {head}; "
        "run `worthit migrate` first (migrations on start are off)"
    )


def create_app(settings: Settings | None = None) -> Litestar:
    """Build the app. Settings come from the environment unless given (tests pass their own)."""
    settings = settings or Settings.from_env()
    configure_logging(settings.log_level)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        engine = create_engine(settings)
        if settings.migrate_on_start:
            await migrate.upgrade(engine)
        elif problem := await schema_problem(engine, unreachable_ok=True):
            log.critical("refusing to serve: %s", problem)
            await engine.dispose()
            raise SchemaMismatch(problem)
        writer = GroupCommitWriter(engine)
        await writer.start()
        policies = PolicyService(PolicyStore(engine, writer), serves=settings.policy)
        app.state.engine = engine
        app.state.writer = writer
        app.state.authenticator = Authenticator(TokenStore(engine), require_auth=settings.auth_always_on)
        app.state.page_access = PageAccess(
            SessionStore(engine, writer), secret=settings.link_secret, explain=explanation_page, headers=PAGE_HEADERS
        )
        app.state.rate_limiter = None if settings.rate_limit == "off" else RateLimiter(settings.rate_limit)
        app.state.auth_failures = (
            None if settings.auth_failure_limit == "off" else RateLimiter(settings.auth_failure_limit)
        )
        app.state.policies = policies
        outcome_store = OutcomeStore(engine, writer)
        calibrator = Calibrator(outcome_store)
        limits = ParseLimits(
            max_inflated_bytes=settings.max_inflated_bytes,
            max_parse_memory_bytes=settings.max_parse_memory_bytes,
            max_profile_events=settings.max_profile_events,
            max_profile_names=settings.max_profile_names,
            max_stored_profile_bytes=settings.max_stored_profile_bytes,
            max_schedule_ops=settings.max_schedule_ops,
        )
        app.state.profiles = profiles = ProfileService(ProfileStore(engine, writer), limits=limits)
        app.state.decisions = DecisionService(
            DecisionStore(engine, writer),
            policies,
            settings.policy,
            calibrate=calibrator.for_proposal,
            resolve=profiles.resolve,
        )
        app.state.outcomes = OutcomeService(outcome_store, app.state.decisions, calibrator)
        # Everything built so far lives as long as the process: take it out of the collector's sight, so a full
        # collection scans only what requests allocate (p99 of POST /v1/decisions went from 63 to 12 ms).
        gc.freeze()
        try:
            yield
        finally:
            await writer.close()
            await engine.dispose()

    # The services live in app state from startup on. Providers take no arguments (they read `app`, bound below):
    # a provider that took `state` had Litestar extract and convert a State for it on every request.
    def provide_decisions() -> DecisionService:
        return app.state.decisions  # type: ignore[no-any-return]

    def provide_policies() -> PolicyService:
        return app.state.policies  # type: ignore[no-any-return]

    def provide_profiles() -> ProfileService:
        return app.state.profiles  # type: ignore[no-any-return]

    def provide_outcomes() -> OutcomeService:
        return app.state.outcomes  # type: ignore[no-any-return]

    app = Litestar(
        route_handlers=[
            healthz,
            readyz,
            metrics,
            list_rules,
            DecisionController,
            PolicyController,
            # Profiles are far larger than JSON proposals: their own upload limit, a setting like the API's.
            Router("/", route_handlers=[ProfileController], request_max_body_size=settings.max_profile_bytes),
            # Rank summaries are JSON, but one real rank's is 120-250 KB: the API's limit would not hold two ranks.
            Router("/", route_handlers=[SummariesController], request_max_body_size=settings.max_summaries_bytes),
            PlanController,
            # Read before its signature is checked, by anyone: a body limit of its own, far below the API's.
            Router("/", route_handlers=[slack_command], request_max_body_size=settings.max_slack_body_bytes),
            OutcomeController,
            PageController,
            SignInController,
            decision_link,
        ],
        # Page routes meet the signed link and the sign-in cookie first, then the bearer check like every route;
        # the API's query strings are checked last (unknown or repeated parameters are refused).
        middleware=[PageAccessMiddleware, AuthMiddleware, QueryCheck],
        dependencies={
            "decisions": Provide(provide_decisions, sync_to_thread=False),
            "policies": Provide(provide_policies, sync_to_thread=False),
            "profiles": Provide(provide_profiles, sync_to_thread=False),
            "outcomes": Provide(provide_outcomes, sync_to_thread=False),
        },
        lifespan=[lifespan],
        exception_handlers=EXCEPTION_HANDLERS,
        request_max_body_size=settings.max_body_bytes,
        openapi_config=openapi_config(schema_ui=settings.schema_ui),
        template_config=template_config(),
        state=State({"settings": settings}),
        # Our logs are JSON lines on the `worthit` logger (configure_logging). Litestar's default config would put a
        # queue handler of its own text format on the root logger: every library's INFO lines (httpx's requests)
        # in another format, on a stream captured once at start (closed under pytest, where the app runs in process).
        logging_config=None,
    )
    guarded = BodyGuard(
        app.asgi_handler,
        body_timeout=settings.body_timeout_seconds,
        slack_body_timeout=settings.slack_body_timeout_seconds,
        large_body_bytes=settings.max_body_bytes,
        max_uploads=settings.max_concurrent_uploads,
        max_waiting=settings.max_waiting_uploads,
    )
    app.asgi_handler = Observability(  # type: ignore[assignment]  # an ASGI app, typed loosely
        guarded, timeout_seconds=settings.request_timeout_seconds
    )
    return app
