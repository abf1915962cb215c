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
from worthit.rules.profiles.fold import PROFILE_MAX_BYTES
from worthit.rules.profiles.kineto import (
    MAX_STORED_OPS,
    SUMMARY_FORMAT,
    Schedule,
    Target,
    WhatIf,
    check_target,
    decode_schedule,
    parse_steps,
    prepare,
    what_if,
)
from worthit.rules.profiles.proposal import proposal_from_profile
from worthit.service.db.profiles import ProfileStore, StoredSchedule
from worthit.service.errors import NotFound
from worthit.service.ids import new_id
from worthit.service.profiles.parsing import parse
from worthit.service.profiles.schemas import ProfileDoc, ProfilePage, ProfileSummary
from worthit.service.profiles.worker import Abandoned, Job, Parsed, parse_in_child

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ParseLimits:
    """What one upload's parse may use (the settings of the same names): see README's settings table."""

    max_inflated_bytes: int = MAX_INFLATED_BYTES
    max_parse_memory_bytes: int = 200 * 1024**2
    max_profile_events: int = MAX_EVENTS
    max_profile_names: int = MAX_NAMES
    max_stored_profile_bytes: int = PROFILE_MAX_BYTES
    max_schedule_ops: int = MAX_STORED_OPS


class ProfileService:
    def __init__(self, store: ProfileStore, *, limits: ParseLimits | None = None) -> None:
        self._store = store
        self._limits = limits or ParseLimits()
        # One parse at a time per process: each may use up to its memory limit, so two at once would double the
        # peak the pod limit has to hold; the others wait their turn (within their deadline). A turn ends only when
        # its worker process has exited, never while it still runs for an abandoned request.
        self._parsing = asyncio.Semaphore(1)
        # Reads of stored profiles (a GET, a proposal naming one), a few at a time per process: each holds the
        # document (at most `max_stored_profile_bytes` as stored) a few times over while it is loaded, so a read token's
        # concurrent requests wait their turn instead of adding up (eight GETs of a 26 MB profile held 640 MB).
        self._loading = asyncio.Semaphore(LOADS_AT_ONCE)
        # Decoded into objects (a proposal naming it), a stored profile takes several times its size: one at a time.
        self._decoding = asyncio.Semaphore(1)

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
            max_stored_bytes=limits.max_stored_profile_bytes,
            max_schedule_ops=limits.max_schedule_ops,
        )
        parsed = await self._in_worker(files, job)
        stored = [StoredSchedule(ops=x.ops, steps=steps, data=x.data) for x in parsed.schedules]
        return await self._store_doc(parsed.breakdown, name, sum(len(data) for data in files), stored)

    async def create_from_summaries(self, body: bytes, *, name: str | None) -> ProfileDoc:
        """Decode a JSON array of ranks' summaries, hold it to the summaries' caps, combine it and store the run.

        All of it in the parse worker, like an upload's parse: under its memory limit, one at a time in the pod,
        stopped with its request (`create`)."""
        limits = self._limits
        job = Job(
            format=SUMMARY_FORMAT,
            steps=None,
            names=None,
            sizes=[len(body)],
            max_inflated_bytes=limits.max_inflated_bytes,
            max_events=limits.max_profile_events,
            max_names=limits.max_profile_names,
            max_stored_bytes=limits.max_stored_profile_bytes,
            summaries=True,
        )
        parsed = await self._in_worker([body], job)
        return await self._store_doc(parsed.breakdown, name, len(body))

    async def _in_worker(self, files: Sequence[bytes], job: Job) -> Parsed:
        """`job` done in a parse worker, its turn of the parse semaphore held until the worker has exited."""
        abandoned = threading.Event()
        async with self._parsing:
            work = asyncio.ensure_future(
                asyncio.to_thread(
                    parse_in_child, files, job, memory_limit=self._limits.max_parse_memory_bytes, abandoned=abandoned
                )
            )
            try:
                return await asyncio.shield(work)
            except asyncio.CancelledError:
                abandoned.set()
                await asyncio.wait({work})  # the child is killed within a poll; the turn ends once it has exited
                if not work.cancelled() and isinstance(work.exception(), Abandoned):
                    log.warning("stopped parsing a profile: its request was abandoned")
                raise

    async def _store_doc(
        self, breakdown: Breakdown, name: str | None, size_bytes: int, schedules: Sequence[StoredSchedule] = ()
    ) -> ProfileDoc:
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
            schedules=schedules,
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
        async with self._decoding:
            return await asyncio.to_thread(_decode_doc, await self.document(profile_id))

    async def document(self, profile_id: str) -> bytes:
        """The stored profile as JSON, as it is stored: the response form (`_store_doc` encodes the `ProfileDoc`
        with the encoder a response uses), so a read serves it without decoding it into objects and encoding it
        again (a 48 MB profile was held four times over per read: text, objects, the tag's encoding, the body's).
        Loaded `LOADS_AT_ONCE` at a time per process."""
        if "\x00" in profile_id:  # PostgreSQL cannot even compare it; no id holds one
            raise NotFound(f"No profile with id {profile_id!r}")
        async with self._loading:
            document = await self._store.document(profile_id)
            if document is None:
                raise NotFound(f"No profile with id `{profile_id}`")
            return document.encode()

    async def resolve(self, proposal: Proposal) -> Proposal:
        """The proposal with `p` measured from its profile, when it names one; unchanged otherwise.

        The profile is loaded (`LOADS_AT_ONCE` at a time per process) and decoded and measured one at a time, off the
        event loop; what is kept of it (the proposal's folded breakdown) is small."""
        if proposal.profile_id is None:
            return proposal
        if proposal.p is not None:
            raise InvalidInput("Expected either `p` or `profile_id`, got both: the profile measures `p`", "/p")
        async with self._decoding:
            try:
                document = await self.document(proposal.profile_id)
            except NotFound as exc:
                raise InvalidInput(f"Expected `profile_id` to name a stored profile: {exc}", "/profile_id") from exc
            schedules, steps = await self._schedules(proposal.profile_id)
            return await asyncio.to_thread(_measured, proposal, document, schedules, steps)

    async def _schedules(self, profile_id: str) -> tuple[list[Schedule], str | None]:
        """The profile's stored schedules decoded (none for a profile stored without them) and the steps it was read
        over: each row read and decoded in turn, so one encoded schedule is held at a time. The caller holds a turn
        of `_decoding`."""
        schedules: list[Schedule] = []
        steps: str | None = None
        for position in range(await self._store.schedule_count(profile_id)):
            stored = await self._store.schedule(profile_id, position)
            if stored is None:  # written in one transaction with the rest: a row gone is a profile gone
                break
            steps = stored.steps
            schedules.append(await asyncio.to_thread(decode_schedule, stored.data))
            del stored
        return schedules, steps

    async def what_if(self, profile_id: str, targets: Sequence[Target], steps: str | None) -> WhatIf:
        """The what-if of the stored profile's traces with each target's device ops k times faster, over `steps`
        (the steps the profile was read over when None): NotFound for an unknown profile, InvalidInput naming the
        field when the profile has no schedule, the steps are not in it or a target matches nothing.

        One at a time per process (`_decoding`, shared with the proposals that name a profile): the decoded
        schedules and the replay's columns are held only while it runs."""
        if "\x00" in profile_id:
            raise NotFound(f"No profile with id {profile_id!r}")
        for i, target in enumerate(targets):
            try:
                check_target(target)
            except ProfileError as exc:
                field = "k" if "expected k " in exc.detail else "pattern"
                raise InvalidInput(_sentence(exc.detail), f"/targets/{i}/{field}") from exc
        async with self._decoding:
            if not await self._store.exists(profile_id):
                raise NotFound(f"No profile with id `{profile_id}`")
            schedules, stored_steps = await self._schedules(profile_id)
            if not schedules:
                raise InvalidInput(
                    f"Expected a profile stored with its replay schedule (PyTorch traces with a device timeline, "
                    f"within {self._limits.max_schedule_ops:,} device ops a trace), got `{profile_id}`, stored "
                    "without one (its notes say why)",
                    "/profile_id",
                )
            return await asyncio.to_thread(_what_if, schedules, targets, steps or stored_steps, steps is not None)


#: Stored profiles loaded at once per process (`ProfileService._loading`).
LOADS_AT_ONCE = 2


def _decode_doc(document: bytes) -> ProfileDoc:
    return msgspec.json.decode(document, type=ProfileDoc)


def _measured(proposal: Proposal, document: bytes, schedules: list[Schedule], steps: str | None) -> Proposal:
    return proposal_from_profile(proposal, _decode_doc(document).breakdown, schedules or None, steps=steps)


def _what_if(schedules: list[Schedule], targets: Sequence[Target], steps: str | None, asked: bool) -> WhatIf:
    """`what_if` with its refusals as InvalidInput naming the body's field: the steps when the window cannot be
    chosen, the targets when one matches nothing."""
    try:
        prepared = prepare(schedules, parse_steps(steps) if steps is not None else None)
    except ProfileError as exc:
        raise InvalidInput(f"Expected steps the profile can replay: {exc.detail}", "/steps" if asked else "") from exc
    try:
        return what_if(prepared, targets)
    except ProfileError as exc:
        # The one refusal a valid target meets here is matching nothing; the message quotes its pattern.
        at = next((i for i, t in enumerate(targets) if repr(t.pattern) in exc.detail), None)
        raise InvalidInput(_sentence(exc.detail), "/targets" if at is None else f"/targets/{at}/pattern") from exc


def _sentence(detail: str) -> str:
    return detail[:1].upper() + detail[1:]


__all__ = ["ParseLimits", "ProfileError", "ProfileService", "parse"]
