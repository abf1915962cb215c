"""`/v1/plans` and `/v1/portfolio`: which phases reach a target, and which proposals return the most per week."""

from __future__ import annotations

from litestar import Controller, post
from litestar.di import NamedDependency
from litestar.params import JSONBody

from worthit.rules.plans import Plan, PlanRequest, plan_for
from worthit.rules.portfolio import Portfolio, PortfolioRequest, portfolio
from worthit.service.api.decisions import PolicyParam
from worthit.service.decisions.service import DecisionService
from worthit.service.http.codec import StrictJSON
from worthit.service.http.problems import BODY_PROBLEMS, problem_responses

__all__ = ["PlanController"]


class PlanController(Controller):
    path = "/v1"
    tags = ("plans",)

    @post(
        "/plans",
        dto=StrictJSON[PlanRequest],
        return_dto=None,
        status_code=200,
        opt={"scope": "read"},
        responses=problem_responses(*BODY_PROBLEMS, 404),
    )
    async def plan(
        self, data: JSONBody[PlanRequest], decisions: NamedDependency[DecisionService], policy: PolicyParam = None
    ) -> Plan:
        """The fewest phases to speed up to reach a target speedup or time, every phase that would complete the last
        step, and the ceilings: all kernels at k, all kernels at zero, and what is left (copies, host gaps)."""
        return plan_for(data, await decisions.policy(policy))

    @post(
        "/portfolio",
        dto=StrictJSON[PortfolioRequest],
        return_dto=None,
        status_code=200,
        opt={"scope": "read"},
        responses=problem_responses(*BODY_PROBLEMS, 404),
    )
    async def portfolio(
        self, data: JSONBody[PortfolioRequest], decisions: NamedDependency[DecisionService], policy: PolicyParam = None
    ) -> Portfolio:
        """Proposals on one workload ranked by return per engineer-week, the set funded under `budget_weeks`, and
        the combined speedup from summed ms savings (speedups never multiply)."""
        return portfolio(data.proposals, await decisions.policy(policy), data.budget_weeks)
