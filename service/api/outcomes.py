"""The feedback loop's API: outcomes of decisions, calibration of estimates, workload histories."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, QueryParameter

from worthit.rules.model import TEXT_PATTERN
from worthit.service.api.decisions import IdempotencyKey, speaker
from worthit.service.decisions.service import request_hash
from worthit.service.http.auth import principal_of
from worthit.service.http.caching import REVALIDATE
from worthit.service.http.codec import StrictJSON
from worthit.service.http.problems import BODY_PROBLEMS, Problem, ProblemError, problem_response, problem_responses
from worthit.service.outcomes.schemas import Calibration, Outcome, OutcomeReport, WorkloadHistory
from worthit.service.outcomes.service import OutcomeService, ScopeMismatch

__all__ = ["NameQuery", "OutcomeController", "scope_mismatch_problem"]

NameQuery = Annotated[str | None, QueryParameter(min_length=1, max_length=200, pattern=TEXT_PATTERN)]


def scope_mismatch_problem(_: Request[Any, Any, Any], exc: ScopeMismatch) -> Response[Problem]:
    """422 naming each differing field of the scope, with a pointer into the outcome's body."""
    errors = [
        ProblemError(
            detail=f"Expected `scope.{name}` {mine!r} (the proposal's), got {theirs!r}", pointer=f"/scope/{name}"
        )
        for name, mine, theirs in exc.differences
    ]
    return problem_response(422, exc.detail, errors, kind="scope-mismatch")


class OutcomeController(Controller):
    path = "/v1"
    tags = ("outcomes",)
    exception_handlers = {ScopeMismatch: scope_mismatch_problem}  # noqa: RUF012 - Litestar's API

    @post(
        "/decisions/{decision_id:str}/outcome",
        dto=StrictJSON[OutcomeReport],
        return_dto=None,
        status_code=201,
        opt={"scope": "write"},
        responses=problem_responses(*BODY_PROBLEMS, 403, 404, 409),
    )
    async def record(
        self,
        request: Request[Any, Any, Any],
        decision_id: FromPath[str],
        data: JSONBody[OutcomeReport],
        outcomes: NamedDependency[OutcomeService],
        idempotency_key: IdempotencyKey = None,
    ) -> Response[Outcome]:
        """Record what was measured after the work: realized k and speedup against the prediction.

        Only the decision's owner (or an admin token) records its outcome, 403 for any other: the token that made it,
        or, for a decision made from Slack, its Slack user through the Slack bot.
        The outcome must be measured on the proposal's model, input, dtype and device (422 naming the fields
        that differ; a field unstated on either side is not compared). One outcome per decision (409 for another).
        """
        body_hash = request_hash(await request.body(), decision_id)
        outcome, created = await outcomes.record(
            decision_id,
            data,
            idempotency_key=idempotency_key,
            body_hash=body_hash,
            caller=principal_of(request),
            slack_user=speaker(request).slack_user,
        )
        return Response(
            outcome,
            status_code=201 if created else 200,
            headers={"Location": f"/v1/decisions/{decision_id}/outcome"},
        )

    @get(
        "/decisions/{decision_id:str}/outcome",
        opt={"scope": "read"},
        responses=problem_responses(404),
        cache_control=REVALIDATE,
    )
    async def read(self, decision_id: FromPath[str], outcomes: NamedDependency[OutcomeService]) -> Outcome:
        """The outcome recorded for a decision: predicted vs realized."""
        return await outcomes.get(decision_id)

    @get("/calibration", opt={"scope": "read"}, responses=problem_responses(), cache_control=REVALIDATE)
    async def calibration(
        self, outcomes: NamedDependency[OutcomeService], workload: NameQuery = None, team: NameQuery = None
    ) -> Calibration:
        """How realized k compares with proposed k (median ratio, count, range), for a team and/or workload."""
        return await outcomes.calibration(team=team, workload=workload)

    @get("/workloads/{name:path}", opt={"scope": "read"}, responses=problem_responses(404), cache_control=REVALIDATE)
    async def workload(self, name: FromPath[str], outcomes: NamedDependency[OutcomeService]) -> WorkloadHistory:
        """A workload's successive breakdowns, oldest first, with the bottleneck (largest phase) at each step.

        The name may contain `/` (as `%2F` or as is).
        """
        return await outcomes.history(name.removeprefix("/"))  # a `path` parameter keeps its leading slash
