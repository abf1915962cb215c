"""Profiles: parse uploaded profiler output off the event loop, keep the breakdown, resolve proposals from it."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import msgspec

from worthit.rules.errors import InvalidInput
from worthit.rules.model import Proposal
from worthit.rules.profiles import Breakdown, ProfileError, combine, read_any
from worthit.rules.profiles.compression import MAX_INFLATED_BYTES, Stopped, gunzip, is_gzip
from worthit.rules.profiles.fold import fold_breakdown
from worthit.rules.profiles.kineto import parse_steps
from worthit.rules.profiles.kineto.summary import RankSummary, combine_summaries
from worthit.rules.profiles.proposal import proposal_from_profile
from worthit.service.db.profiles import ProfileStore
from worthit.service.errors import NotFound
from worthit.service.ids import new_id
from worthit.service.profiles.schemas import ProfileDoc


def parse(
    files: Sequence[bytes],
    format: str | None = None,
    steps: str | None = None,
    names: Sequence[str] | None = None,
    *,
    max_inflated_bytes: int = MAX_INFLATED_BYTES,
    stop: Callable[[], bool] | None = None,
) -> Breakdown:
    """One breakdown from one file, or from several files of one run combined (a trace, its copies, its stats; the
    PyTorch traces of a distributed run's ranks). `steps` ("2:5") chooses ProfilerStep#2..#5 of a PyTorch trace;
    `names` label the files in errors and per-rank figures.

    Gzip is inflated here, streamed, at most `max_inflated_bytes` over all files together (beyond it
    ProfileTooLarge, a 413); `stop()` is asked between chunks and before reading, and answering True ends the work
    with Stopped."""
    chosen = parse_steps(steps) if steps is not None else None
    files = _inflated(files, format, max_inflated_bytes, stop)
    if stop is not None and stop():
        raise Stopped
    try:
        if len(files) == 1:
            return read_any(files[0], format, chosen)
        return combine(list(files), [format] * len(files) if format else None, names=names, steps=chosen)
    except (OverflowError, ZeroDivisionError) as exc:
        # Every reader turns numbers into times: a timestamp of 1e23 or 1e308 overflows that arithmetic, whichever
        # reader meets it. It is the file's figure, so the file's error (422), never a 500.
        raise ProfileError(
            f"expected timestamps and durations a profiler can write, got one too large to compute with ({exc})",
            format_expected=format,
        ) from exc


def _inflated(files: Sequence[bytes], format: str | None, limit: int, stop: Callable[[], bool] | None) -> list[bytes]:
    out: list[bytes] = []
    left = limit
    for data in files:
        if is_gzip(data):
            data = gunzip(data, format, left, stop)
            left -= len(data)
        out.append(data)
    return out


log = logging.getLogger(__name__)


class ProfileService:
    def __init__(self, store: ProfileStore, *, max_inflated_bytes: int = MAX_INFLATED_BYTES) -> None:
        self._store = store
        self._max_inflated_bytes = max_inflated_bytes
        # One parse at a time per process: each may build several times its input in memory, so two at once
        # would double the peak the pod limit has to hold; the others wait their turn (within their deadline).
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
        """Parse (in a worker thread: a large trace takes seconds) and store the breakdown.

        When the request is abandoned (its deadline passed, the client left), the task is cancelled: the flag
        tells the worker thread to stop too, instead of inflating and parsing on for nobody."""
        stopped = threading.Event()

        def work() -> Breakdown | None:
            try:
                limit = self._max_inflated_bytes
                # Stored bounded: a 50,000-kernel trace must not make every decision citing it megabytes.
                return fold_breakdown(parse(files, format, steps, names, max_inflated_bytes=limit, stop=stopped.is_set))
            except Stopped:
                log.warning("stopped parsing a profile: its request was abandoned")
                return None

        try:
            async with self._parsing:
                breakdown = await asyncio.to_thread(work)
        except asyncio.CancelledError:
            stopped.set()
            raise
        assert breakdown is not None  # noqa: S101 - only a set flag stops a parse, and only a cancel sets it
        doc = ProfileDoc(
            id=new_id(),
            created_at=datetime.now(UTC),
            name=name,
            size_bytes=sum(len(data) for data in files),
            breakdown=breakdown,
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

    async def get(self, profile_id: str) -> ProfileDoc:
        if "\x00" in profile_id:  # PostgreSQL cannot even compare it; no id holds one
            raise NotFound(f"No profile with id {profile_id!r}")
        document = await self._store.document(profile_id)
        if document is None:
            raise NotFound(f"No profile with id `{profile_id}`")
        return msgspec.json.decode(document, type=ProfileDoc)

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


__all__ = ["ProfileError", "ProfileService", "parse"]
