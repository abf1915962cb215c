"""Profiles: parse uploaded profiler output off the event loop, keep the breakdown, resolve proposals from it."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import msgspec

from worthit.rules.errors import InvalidInput
from worthit.rules.model import Proposal
from worthit.rules.profiles import Breakdown, ProfileError
from worthit.rules.profiles.budget import MAX_EVENTS, MAX_NAMES
from worthit.rules.profiles.compression import MAX_INFLATED_BYTES
from worthit.rules.profiles.fold import fold_breakdown
from worthit.rules.profiles.kineto import RankSummary, combine_summaries
from worthit.rules.profiles.proposal import proposal_from_profile
from worthit.service.db.profiles import ProfileStore
from worthit.service.errors import NotFound
from worthit.service.ids import new_id
from worthit.service.profiles.parsing import parse
from worthit.service.profiles.schemas import ProfileDoc, ProfilePage, ProfileSummary
from worthit.service.profiles.worker import Abandoned, Job, parse_in_child

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ParseLimits:
    """What one upload's parse may use (the settings of the same names): see README's settings table."""

    max_inflated_bytes: int = MAX_INFLATED_BYTES
    max_parse_memory_bytes: int = 200 * 1024**2
    max_profile_events: int = MAX_EVENTS
    max_profile_names: int = MAX_NAMES


class ProfileService:
    def __init__(self, store: ProfileStore, *, limits: ParseLimits | None = None) -> None:
        self._store = store
        self._limits = limits or ParseLimits()
        # One parse at a time per process: each may use up to its memory limit, so two at once would double the
        # peak the pod limit has to hold; the others wait their turn (within their deadline). A turn ends only when
        # its worker process has exited, never while it still runs for an abandoned request.
        self._parsing = asyncio.Semaphore(1)

    async def create(
        self,
        files: Sequence[bytes],
        *,
        format: str | None,
        name: str | None,
        steps: str | None = None,
        names: Sequence[str] | None = None,
    ) -> ProfileDoc:
        """Parse (in a worker process: a large trace takes seconds and, per event, memory) and store the breakdown.

        When the request is abandoned (its deadline passed, the client left), the task is cancelled: the worker
        process is killed, and this turn of the parse semaphore ends only once it has exited."""
        limits = self._limits
        job = Job(
            format=format,
            steps=steps,
            names=list(names) if names is not None else None,
            sizes=[len(data) for data in files],
            max_inflated_bytes=limits.max_inflated_bytes,
            max_events=limits.max_profile_events,
            max_names=limits.max_profile_names,
        )
        abandoned = threading.Event()
        async with self._parsing:
            work = asyncio.ensure_future(
                asyncio.to_thread(
                    parse_in_child, files, job, memory_limit=limits.max_parse_memory_bytes, abandoned=abandoned
                )
            )
            try:
                breakdown = await asyncio.shield(work)
            except asyncio.CancelledError:
                abandoned.set()
                await asyncio.wait({work})  # the child is killed within a poll; the turn ends once it has exited
                if not work.cancelled() and isinstance(work.exception(), Abandoned):
                    log.warning("stopped parsing a profile: its request was abandoned")
                raise
        return await self._store_doc(breakdown, name, sum(len(data) for data in files))

    async def create_from_summaries(self, summaries: list[RankSummary], *, name: str | None) -> ProfileDoc:
        """Combine ranks' summaries (small: no worker thread needed beyond the combination itself) and store."""
        breakdown = fold_breakdown(await asyncio.to_thread(combine_summaries, summaries))
        return await self._store_doc(breakdown, name, sum(len(s.step_figures) for s in summaries))

    async def _store_doc(self, breakdown: Breakdown, name: str | None, size_bytes: int) -> ProfileDoc:
        doc = ProfileDoc(
            id=new_id(), created_at=datetime.now(UTC), name=name, size_bytes=size_bytes, breakdown=breakdown
        )
        await self._store.add(
            id=doc.id,
            created_at=doc.created_at,
            name=name,
            format=breakdown.format,
            size_bytes=doc.size_bytes,
            document=msgspec.json.encode(doc).decode(),
        )
        return doc

    async def page(self, cursor: str | None, limit: int) -> ProfilePage:
        """A page of stored profiles, newest first, without their breakdowns."""
        rows, next_cursor = await self._store.page(cursor, limit)
        items = [
            ProfileSummary(id=r.id, created_at=r.created_at, name=r.name, format=r.format, size_bytes=r.size_bytes)
            for r in rows
        ]
        return ProfilePage(items=items, next_cursor=next_cursor)

    async def get(self, profile_id: str) -> ProfileDoc:
        return msgspec.json.decode(await self.document(profile_id), type=ProfileDoc)

    async def document(self, profile_id: str) -> bytes:
        """The stored profile as JSON, as it is stored: the response form (`_store_doc` encodes the `ProfileDoc`
        with the encoder a response uses), so a read serves it without decoding it into objects and encoding it
        again (a 48 MB profile was held four times over per read: text, objects, the tag's encoding, the body's)."""
        if "\x00" in profile_id:  # PostgreSQL cannot even compare it; no id holds one
            raise NotFound(f"No profile with id {profile_id!r}")
        document = await self._store.document(profile_id)
        if document is None:
            raise NotFound(f"No profile with id `{profile_id}`")
        return document.encode()

    async def resolve(self, proposal: Proposal) -> Proposal:
        """The proposal with `p` measured from its profile, when it names one; unchanged otherwise."""
        if proposal.profile_id is None:
            return proposal
        if proposal.p is not None:
            raise InvalidInput("Expected either `p` or `profile_id`, got both: the profile measures `p`", "/p")
        try:
            doc = await self.get(proposal.profile_id)
        except NotFound as exc:
            raise InvalidInput(f"Expected `profile_id` to name a stored profile: {exc}", "/profile_id") from exc
        return proposal_from_profile(proposal, doc.breakdown)


__all__ = ["ParseLimits", "ProfileError", "ProfileService", "parse"]
