"""`/v1/evaluate` and `/v1/decisions`: evaluate a proposal, store it, read it back."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
from litestar import Controller, MediaType, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.exceptions import ClientException, PermissionDeniedException, ValidationException
from litestar.openapi import ResponseSpec
from litestar.params import FromPath, FromQuery, HeaderParameter, JSONBody, QueryParameter
from litestar.response import Stream

from worthit.rules.model import TEXT_PATTERN, Evaluation, Proposal, Verdict
from worthit.rules.names import LABEL_PATTERN, NAME_PATTERN
from worthit.service.db.decisions import DecisionFilter
from worthit.service.decisions.schemas import Decision, DecisionPage, Source
from worthit.service.decisions.service import DecisionService, request_hash
from worthit.service.http.auth import principal_of
from worthit.service.http.caching import REVALIDATE, IfNoneMatch, tagged
from worthit.service.http.codec import StrictJSON
from worthit.service.http.problems import BODY_PROBLEMS, problem_responses

__all__ = [
    "API",
    "CURSOR_PATTERN",
    "SOURCE_HEADER",
    "DecisionController",
    "IdempotencyKey",
    "PolicyParam",
    "Speaker",
    "parse_time",
    "service",
    "speaker",
]

SOURCE_HEADER = "worthit-source"
"""How our own surfaces say whom they speak for: `Worthit-Source: slack; user_id=U1; team_id=T1; channel_id=C1` (the
Socket Mode bot, whose token has the `slack` scope) or `gate; repository=o/n; pull_request=12` (the PR gate). It is
not in the API document: clients of the API store decisions as `api`, and the body has no field to say otherwise."""
DETAIL_KEY = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
DETAIL_VALUE = re.compile(TEXT_PATTERN)
MAX_DETAILS = 10


@dataclass(frozen=True, slots=True)
class Speaker:
    """The surface a request speaks for, and what it says of its origin."""

    source: Source
    detail: dict[str, str] | None = None

    @property
    def slack_user(self) -> str | None:
        """The Slack user behind the request: only a `slack` token (or a server with auth off) names one."""
        return self.detail.get("user_id") if self.source == "slack" and self.detail else None


API = Speaker("api")


def _bad_source(problem: str) -> ClientException:
    return ClientException(
        f"Expected `Worthit-Source: slack|gate; key=value; ...` ({problem}); API clients send no such header"
    )


def speaker(request: Request[Any, Any, Any]) -> Speaker:
    """Whom a request speaks for, from `Worthit-Source`; a plain API client when the header is absent.

    Slack is spoken for by a token with the `slack` scope alone (403 otherwise), which names the `user_id`: that
    user owns the decision, and only they (through Slack) or an admin record its outcome. The gate names a pull
    request, which grants nothing: its decisions are its token's."""
    header = request.headers.get(SOURCE_HEADER)
    if header is None:
        return API
    surface, *parts = (part.strip() for part in header.split(";"))
    if surface not in ("slack", "gate"):
        raise _bad_source(f"the surface is `slack` or `gate`, got {surface[:40]!r}")
    if len(parts) > MAX_DETAILS:
        raise _bad_source(f"at most {MAX_DETAILS} details, got {len(parts)}")
    detail: dict[str, str] = {}
    for part in parts:
        key, equals, value = (text.strip() for text in part.partition("="))
        if not equals or not DETAIL_KEY.match(key) or not 0 < len(value) <= 200 or not DETAIL_VALUE.match(value):
            raise _bad_source(f"each detail `key=value`, a lowercase key and 1 to 200 characters, got {part[:60]!r}")
        detail[key] = value
    principal = principal_of(request)
    if surface == "slack":
        if principal is not None and "slack" not in principal.scopes:
            raise PermissionDeniedException(
                f"Only a token with the `slack` scope (the Slack bot's) speaks for Slack; `{principal.name}` has not"
            )
        if "user_id" not in detail:
            raise _bad_source("Slack's requests name their `user_id`")
    return Speaker("slack" if surface == "slack" else "gate", detail or None)


CURSOR_PATTERN = r"^[0-9a-f-]{1,64}$"
"""Cursors are decision ids (UUIDs)."""

PolicyParam = Annotated[
    str | None,
    QueryParameter(description="Policy name to evaluate under (default: the server's).", pattern=NAME_PATTERN),
]
IdempotencyKey = Annotated[
    str | None,
    HeaderParameter(
        name="Idempotency-Key",
        description="Retries with the same key and body return the first answer.",
        min_length=1,
        max_length=255,
    ),
]


def parse_time(name: str, value: str | None) -> datetime | None:
    """An RFC 3339 time from a query parameter, strictly (Litestar would also take `0.5` as an epoch)."""
    if value is None:
        return None
    try:
        parsed: datetime = msgspec.convert(value, datetime, strict=True)
        # In UTC, as the database compares it: `0001-01-01T00:00:00+14:00` is in year 0, which PostgreSQL refused
        # with an error the service took for a database that takes no writes (503).
        return parsed.astimezone(UTC) if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    except (msgspec.ValidationError, OverflowError):
        raise ValidationException(
            extra=[
                {
                    "key": name,
                    "source": "query",
                    "message": f"Expected an RFC 3339 date-time within years 1 to 9999 in UTC, got {value!r}",
                }
            ]
        ) from None


def service(request: Request[Any, Any, Any]) -> DecisionService:
    """The app's decision service, for the two hot routes, without dependency injection: resolving even an
    argument-free dependency still cost 5% of `POST /v1/decisions`' throughput (5,430-5,550 against 5,730-5,830)."""
    decisions: DecisionService = request.app.state.decisions
    return decisions


class DecisionController(Controller):
    path = "/v1"
    tags = ("decisions",)

    @post(
        "/evaluate",
        dto=StrictJSON[Proposal],
        return_dto=None,
        status_code=200,
        opt={"scope": "read"},
        responses=problem_responses(*BODY_PROBLEMS, 404),
    )
    async def evaluate(
        self, request: Request[Any, Any, Any], data: JSONBody[Proposal], policy: PolicyParam = None
    ) -> Evaluation:
        """Evaluate a proposal: the verdict, the statement, the figures and the findings. Nothing is stored."""
        return await service(request).evaluate(data, policy)

    @post(
        "/decisions",
        dto=StrictJSON[Proposal],
        return_dto=None,
        status_code=201,
        opt={"scope": "write"},
        responses=problem_responses(*BODY_PROBLEMS, 404, 409),
    )
    async def create(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[Proposal],
        policy: PolicyParam = None,
        idempotency_key: IdempotencyKey = None,
    ) -> Response[Decision]:
        """Evaluate a proposal and store the decision; answers 201 with `Location` (200 for an idempotent replay).

        The decision's `source` is `api`: the server alone records a decision as made through Slack or the gate.
        """
        said = speaker(request)
        header = request.headers.get(SOURCE_HEADER)
        salt = (policy or "") + ("" if header is None else f"\n{header}")
        body_hash = request_hash(await request.body(), salt) if idempotency_key else None
        decision, created = await service(request).create(
            data,
            policy_name=policy,
            source=said.source,
            source_detail=said.detail,
            idempotency_key=idempotency_key,
            body_hash=body_hash,
            token_id=None if (principal := principal_of(request)) is None else principal.id,
        )
        return Response(
            decision,
            status_code=201 if created else 200,
            headers={"Location": f"/v1/decisions/{decision.id}"},
        )

    @get("/decisions/{decision_id:str}", opt={"scope": "read"}, responses=problem_responses(404))
    async def read(
        self, decision_id: FromPath[str], decisions: NamedDependency[DecisionService], if_none_match: IfNoneMatch = None
    ) -> Response[Decision]:
        """One stored decision, with its `ETag` (`If-None-Match` with it answers 304)."""
        return tagged(await decisions.get(decision_id), if_none_match)

    @get(
        "/decisions",
        opt={"scope": "read"},
        responses={
            200: ResponseSpec(DecisionPage, description="One page of decisions", generate_examples=False),
            **problem_responses(),
        },
        cache_control=REVALIDATE,
    )
    async def list_decisions(
        self,
        decisions: NamedDependency[DecisionService],
        verdict: FromQuery[Verdict | None] = None,
        target: Annotated[str | None, QueryParameter(max_length=200, pattern=LABEL_PATTERN)] = None,
        workload: Annotated[str | None, QueryParameter(max_length=200, pattern=TEXT_PATTERN)] = None,
        team: Annotated[
            str | None,
            QueryParameter(max_length=200, pattern=TEXT_PATTERN, description="Only the decisions of this team."),
        ] = None,
        since: Annotated[
            str | None,
            QueryParameter(description="Only decisions made at or after this RFC 3339 time.", format="date-time"),
        ] = None,
        cursor: Annotated[
            str | None,
            QueryParameter(max_length=64, pattern=r"^[0-9a-f-]{1,64}$", description="`next_cursor` of the last page."),
        ] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=200)] = 50,
    ) -> Stream:
        """Stored decisions, newest first, filtered; follow `next_cursor` for the next page."""
        # Worst case: a decision is stored at up to ~280 KB (a 256 KiB body echoed with its findings), so a page of
        # 200 is ~56 MB of JSON, and three at once reached 585 MiB when each was decoded and encoded whole. Streamed,
        # one request holds READ_BATCH documents and one decision (a few MB) whatever `limit`, and uvicorn waits for
        # a slow reader to drain its socket before it takes more; time is bounded by the request deadline.
        where = DecisionFilter(
            verdict=verdict, target=target, workload=workload, team=team, since=parse_time("since", since)
        )
        ids, next_cursor = await decisions.page(where, cursor, limit)
        return Stream(decisions.encoded_page(ids, next_cursor), media_type=MediaType.JSON)
