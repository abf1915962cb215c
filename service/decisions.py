"""Evaluating and storing decisions: the service the HTTP handlers, Slack and the CLI share."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import msgspec

from rules.engine import evaluate
from rules.model import Evaluation, Proposal
from service.api.schemas import Decision, Source
from service.db.repository import DecisionFilter, DecisionStore, NewDecision
from service.errors import Conflict, NotFound
from service.ids import new_id
from service.observability import VERDICTS
from service.policies import PolicyService

_encoder = msgspec.json.Encoder()


def request_hash(body: bytes, policy: str) -> str:
    return hashlib.sha256(policy.encode() + b"\0" + body).hexdigest()


class DecisionService:
    def __init__(self, store: DecisionStore, policies: PolicyService, default_policy: str) -> None:
        self._store = store
        self._policies = policies
        self._default_policy = default_policy

    async def evaluate(self, proposal: Proposal, policy_name: str | None = None) -> Evaluation:
        """The verdict only; nothing is stored."""
        policy = await self._policies.get(policy_name or self._default_policy)
        return evaluate(proposal, policy)

    async def create(
        self,
        proposal: Proposal,
        *,
        policy_name: str | None = None,
        source: Source = "api",
        source_detail: dict[str, str] | None = None,
        idempotency_key: str | None = None,
        body_hash: str | None = None,
    ) -> tuple[Decision, bool]:
        """Evaluate and store; returns the decision and whether it is new (False: an idempotent replay)."""
        evaluation = await self.evaluate(proposal, policy_name)
        decision = Decision(
            id=new_id(),
            created_at=datetime.now(UTC),
            source=source,
            source_detail=source_detail,
            proposal=proposal,
            **{field: getattr(evaluation, field) for field in evaluation.__struct_fields__},
        )
        document = _encoder.encode(decision).decode()
        existing = await self._store.add(
            NewDecision(
                id=decision.id,
                created_at=decision.created_at,
                verdict=decision.verdict,
                target=proposal.target,
                workload=proposal.scope.workload,
                policy_name=decision.policy.name,
                policy_version=decision.policy.version,
                source=source,
                idempotency_key=idempotency_key,
                request_hash=body_hash,
                document=document,
            )
        )
        if existing is None:
            VERDICTS.labels(decision.verdict, source).inc()
            return decision, True
        if existing.request_hash != body_hash:
            raise Conflict(
                f"Idempotency-Key {idempotency_key!r} was already used with a different request body; "
                "use a new key for a new proposal"
            )
        return msgspec.json.decode(existing.document, type=Decision), False

    async def get(self, decision_id: str) -> Decision:
        document = await self._store.get(decision_id)
        if document is None:
            raise NotFound(f"No decision with id `{decision_id}`")
        return msgspec.json.decode(document, type=Decision)

    async def page(self, where: DecisionFilter, cursor: str | None, limit: int) -> tuple[list[Decision], str | None]:
        documents, next_cursor = await self._store.page(where, cursor, limit)
        return [msgspec.json.decode(document, type=Decision) for document in documents], next_cursor
