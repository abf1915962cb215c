"""`/v1/policies`: the named, versioned thresholds decisions are made under; `reevaluate` a decision under another."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, delete, get, post, put
from litestar.di import NamedDependency
from litestar.exceptions import ClientException
from litestar.params import FromPath, PathParameter, QueryParameter

from worthit.rules.names import NAME_PATTERN
from worthit.rules.policy import Policy, parse_policy
from worthit.service.decisions.schemas import Reevaluation
from worthit.service.decisions.service import DecisionService
from worthit.service.http.auth import principal_of
from worthit.service.http.caching import REVALIDATE
from worthit.service.http.codec import is_json
from worthit.service.http.problems import BODY_PROBLEMS, problem_responses
from worthit.service.policies.schemas import PolicySummary
from worthit.service.policies.service import PolicyService

__all__ = ["NewPolicyName", "PolicyController", "PolicyName"]

PolicyName = Annotated[str, QueryParameter(pattern=NAME_PATTERN)]
NewPolicyName = Annotated[
    str, PathParameter(pattern=NAME_PATTERN, description="Lowercase letters, digits, `_`, `.` and `-`; 64 at most.")
]


class PolicyController(Controller):
    path = "/v1"
    tags = ("policies",)

    @get("/policies", opt={"scope": "read"}, responses=problem_responses(), cache_control=REVALIDATE)
    async def list_policies(self, policies: NamedDependency[PolicyService]) -> list[PolicySummary]:
        """Every policy name with its newest version."""
        return [PolicySummary(name=p.name, version=p.version) for p in await policies.all_latest()]

    @get("/policies/{name:str}", opt={"scope": "read"}, responses=problem_responses(404), cache_control=REVALIDATE)
    async def read_policy(
        self,
        name: FromPath[str],
        policies: NamedDependency[PolicyService],
        version: Annotated[
            int | None, QueryParameter(ge=1, le=2**31 - 1, description="A past version; default the newest.")
        ] = None,
    ) -> Policy:
        """One policy: its newest version, or `?version=N`."""
        return await policies.get(name, version)

    @put(
        "/policies/{name:str}",
        opt={"scope": "admin"},
        status_code=200,
        responses=problem_responses(*BODY_PROBLEMS),
        request_body_description="The policy's keys as JSON (or TOML with `Content-Type: application/toml`).",
    )
    async def put_policy(
        self, name: NewPolicyName, request: Request[Any, Any, Any], policies: NamedDependency[PolicyService]
    ) -> Policy:
        """Store a new version of a policy (admin). Every key is validated; a malformed one is a 422 naming it."""
        body = await request.body()
        content_type = request.headers.get("content-type", "")
        if is_json(content_type):
            try:
                raw = msgspec.json.decode(body)
            except msgspec.DecodeError as exc:
                raise ClientException(f"Expected a JSON object of policy keys: {exc}") from exc
            except RecursionError as exc:
                raise ClientException("Expected a JSON object of policy keys, got one nested too deeply") from exc
        elif content_type.split(";", 1)[0].strip() in ("application/toml", "text/toml"):
            raw = msgspec.to_builtins(parse_policy(body, name=name))
        else:
            raise ClientException(
                status_code=415, detail=f"Expected application/json or application/toml, got {content_type!r}"
            )
        return await policies.put(name, raw)

    @delete("/policies/{name:str}", opt={"scope": "admin"}, status_code=204, responses=problem_responses(404, 409))
    async def delete_policy(
        self, name: FromPath[str], request: Request[Any, Any, Any], policies: NamedDependency[PolicyService]
    ) -> None:
        """Delete a policy, every version of it (admin); the deletion is recorded with the token's name. Decisions
        made under it keep the name and version they record; re-evaluating under it answers 404 from then on, and a
        new policy of the name starts after the deleted versions (a version is never numbered twice). The bundled
        `default` and the server's own policy (`WORTHIT_POLICY`) cannot be deleted (409). Any stored name may be
        deleted, even one stored before names were checked."""
        principal = principal_of(request)
        await policies.delete(name, None if principal is None else principal.name)

    @post(
        "/decisions/{decision_id:str}/reevaluate",
        opt={"scope": "read"},
        status_code=200,
        responses=problem_responses(404),
    )
    async def reevaluate(
        self,
        decision_id: FromPath[str],
        decisions: NamedDependency[DecisionService],
        policy: PolicyName,
    ) -> Reevaluation:
        """The stored decision's proposal evaluated under another policy, and what changed. Nothing is stored."""
        return await decisions.reevaluate(decision_id, policy)
