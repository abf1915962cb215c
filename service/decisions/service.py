"""Evaluating and storing decisions: the service the HTTP handlers, Slack and the CLI share."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime

import msgspec

from worthit.rules.calibration import Calibration
from worthit.rules.engine import evaluate
from worthit.rules.errors import InvalidInput
from worthit.rules.model import Evaluation, Proposal
from worthit.rules.policy import Policy
from worthit.service.db.decisions import DecisionFilter, DecisionStore, NewDecision, Owner
from worthit.service.decisions.schemas import Change, Decision, Reevaluation, Source
from worthit.service.errors import Conflict, NotFound, Unreadable
from worthit.service.ids import new_id, scoped_key
from worthit.service.metrics import VERDICTS
from worthit.service.policies.service import PolicyService

__all__ = ["READ_BATCH", "Calibrate", "DecisionService", "Resolve", "read_decision", "request_hash"]

log = logging.getLogger(__name__)
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Decision)
READ_BATCH = 8
"""Stored decisions read per query when many are read (a page, a list): 8 of the largest (~280 KB) are ~2 MB."""


def read_decision(document: str | bytes, decision_id: str) -> Decision:
    """A stored decision as the reads serve it; `Unreadable` (a 500 naming it, logged) when it does not decode."""
    try:
        return _decoder.decode(document)
    except msgspec.ValidationError as exc:
        raise Unreadable(f"Decision `{decision_id}` is stored in a form this service cannot read back: {exc}") from None


def request_hash(body: bytes, policy: str) -> str:
    return hashlib.sha256(policy.encode() + b"\0" + body).hexdigest()


Calibrate = Callable[[Proposal, Policy], Awaitable[Calibration | None]]
"""The team's calibration the engine evaluates a proposal under (service.outcomes.service.Calibrator.for_proposal)."""

Resolve = Callable[[Proposal], Awaitable[Proposal]]
"""Fills in `p` from the profile a proposal names (service.profiles.service.ProfileService.resolve)."""


class DecisionService:
    def __init__(
        self,
        store: DecisionStore,
        policies: PolicyService,
        default_policy: str,
        calibrate: Calibrate | None = None,
        resolve: Resolve | None = None,
    ) -> None:
        self._store = store
        self._policies = policies
        self._default_policy = default_policy
        self._calibrate = calibrate
        self._resolve = resolve

    async def resolve(self, proposal: Proposal) -> Proposal:
        """The proposal as it will be evaluated and stored: `p` measured from its profile, when it names one."""
        return proposal if self._resolve is None else await self._resolve(proposal)

    async def evaluate(self, proposal: Proposal, policy_name: str | None = None) -> Evaluation:
        """The verdict only; nothing is stored. Under `calibrate = true`, also at the team's calibrated k."""
        return await self._evaluate(await self.resolve(proposal), policy_name)

    async def policy(self, policy_name: str | None) -> Policy:
        """The policy a request names, else the service's default (`WORTHIT_POLICY`): plans and portfolios too."""
        return await self._policies.get(policy_name or self._default_policy)

    async def _evaluate(self, proposal: Proposal, policy_name: str | None) -> Evaluation:
        policy = await self.policy(policy_name)
        calibration = None
        if policy.calibrate and self._calibrate is not None:
            calibration = await self._calibrate(proposal, policy)
        return evaluate(proposal, policy, calibration=calibration)

    async def create(
        self,
        proposal: Proposal,
        *,
        policy_name: str | None = None,
        source: Source = "api",
        source_detail: dict[str, str] | None = None,
        idempotency_key: str | None = None,
        body_hash: str | None = None,
        token_id: str | None = None,
    ) -> tuple[Decision, bool]:
        """Evaluate and store; returns the decision and whether it is new (False: an idempotent replay).

        `token_id`: the token making it, recorded as its owner (only it, or an admin, records its outcome). Made from
        Slack (`source` slack, its `user_id` in `source_detail`), the Slack user owns it instead."""
        proposal = await self.resolve(proposal)
        evaluation = await self._evaluate(proposal, policy_name)
        decision = Decision(
            id=new_id(),
            created_at=datetime.now(UTC),
            source=source,
            source_detail=source_detail,
            proposal=proposal,
            **{field: getattr(evaluation, field) for field in evaluation.__struct_fields__},
        )
        encoded = _encoder.encode(decision)
        try:
            # Stored only if it reads back as the reads decode it: the encoder writes a non-finite float as null and
            # checks no constraint, so a figure the engine let through (a k of 5.6e-309 made saving_fraction -inf)
            # was stored, then every read of it was a 422 and the listing cut its stream mid-body. One decode of the
            # bytes about to be stored is the check that cannot drift from the reads (~20 µs of a ~1 ms request).
            _decoder.decode(encoded)
        except msgspec.ValidationError as exc:
            log.error("refused to store a decision that does not read back: %s", exc)
            raise InvalidInput(
                f"Expected a proposal whose decision has finite figures within their bounds, got one whose {exc}", ""
            ) from None
        document = encoded.decode()
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
                idempotency_key=scoped_key(idempotency_key, token_id),
                request_hash=body_hash,
                document=document,
                token_id=token_id,
                slack_user=(source_detail or {}).get("user_id") if source == "slack" else None,
                team=proposal.team,
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
        return read_decision(existing.document, decision.id), False

    async def owner(self, decision_id: str) -> Owner:
        """Who made the decision: its token, and its Slack user when made from Slack."""
        return await self._store.owner(decision_id)

    async def get(self, decision_id: str) -> Decision:
        if "\x00" in decision_id:  # PostgreSQL cannot even compare it; no id holds one
            raise NotFound(f"No decision with id {decision_id!r}")
        document = await self._store.get(decision_id)
        if document is None:
            raise NotFound(f"No decision with id `{decision_id}`")
        return read_decision(document, decision_id)

    async def reevaluate(self, decision_id: str, policy_name: str) -> Reevaluation:
        """Evaluate a stored decision's proposal under `policy_name` and say what changed."""
        decision = await self.get(decision_id)
        after = await self._evaluate(decision.proposal, policy_name)
        changes = [
            Change(field=field, before=before, after=now)
            for field, before, now in (
                ("verdict", decision.verdict, after.verdict),
                ("statement", decision.statement, after.statement),
                ("deciding_rule", decision.deciding_rule, after.deciding_rule),
            )
            if before != now
        ]
        fired_before = {f.rule for f in decision.findings if f.overridden_by is None}
        fired_after = {f.rule for f in after.findings if f.overridden_by is None}
        return Reevaluation(
            decision_id=decision.id,
            before=Evaluation(**{name: getattr(decision, name) for name in Evaluation.__struct_fields__}),
            after=after,
            changed=bool(changes),
            changes=changes,
            rules_fired=sorted(fired_after - fired_before),
            rules_silent=sorted(fired_before - fired_after),
        )

    async def page(self, where: DecisionFilter, cursor: str | None, limit: int) -> tuple[list[str], str | None]:
        """The ids of a page of decisions, newest first, and the cursor of the next page (None on the last)."""
        return await self._store.page(where, cursor, limit)

    async def each(self, ids: list[str]) -> AsyncIterator[Decision]:
        """The decisions of `ids`, in order, read `READ_BATCH` at a time: what a reader of many holds at once is a
        batch of documents and one decision, whatever the page size (a stored decision can be megabytes).

        A stored document that does not read back is left out and logged: a listing is newest first, so one such
        document would otherwise break every reader's first page, and a streamed page cannot turn into a problem
        once its first byte is sent."""
        for start in range(0, len(ids), READ_BATCH):
            for decision_id, document in await self._store.documents(ids[start : start + READ_BATCH]):
                try:
                    decision = read_decision(document, decision_id)
                except Unreadable as exc:
                    log.error("left out of a listing: %s", exc)
                    continue
                yield decision

    async def encoded_page(self, ids: list[str], next_cursor: str | None) -> AsyncIterator[bytes]:
        """A `DecisionPage` as JSON, in pieces of one decision each (for a streamed response)."""
        yield b'{"items":['
        first = True
        async for decision in self.each(ids):
            yield (b"" if first else b",") + _encoder.encode(decision)
            first = False
        yield b'],"next_cursor":' + _encoder.encode(next_cursor) + b"}"
