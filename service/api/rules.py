"""`/v1/rules`: every rule's explanation, served from its docstring so docs and behaviour cannot drift."""

from __future__ import annotations

from litestar import get

from worthit.rules.checks import explanations
from worthit.service.api.schemas import RuleDoc
from worthit.service.http.caching import REVALIDATE
from worthit.service.http.problems import problem_responses

__all__ = ["list_rules", "rule_docs"]


def rule_docs() -> list[RuleDoc]:
    return [RuleDoc(id=rule, explanation=explanation) for rule, explanation in explanations()]


@get("/v1/rules", tags=["rules"], opt={"scope": "read"}, responses=problem_responses(), cache_control=REVALIDATE)
async def list_rules() -> list[RuleDoc]:
    """Every rule the engine runs, in order, with its explanation (What it checks / Why it matters / Example)."""
    return rule_docs()
