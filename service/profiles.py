"""Profiles: parse uploaded profiler output off the event loop, keep the breakdown, resolve proposals from it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

import msgspec

from worthit.rules.errors import InvalidInput
from worthit.rules.model import Proposal
from worthit.rules.profiles import Breakdown, ProfileError, combine, read_any
from worthit.rules.profiles.proposal import proposal_from_profile
from worthit.rules.profiles.torch_trace import parse_steps
from worthit.service.db.profiles import ProfileStore
from worthit.service.errors import NotFound
from worthit.service.ids import new_id
from worthit.service.records import ProfileDoc


def parse(
    files: Sequence[bytes],
    format: str | None = None,
    steps: str | None = None,
    names: Sequence[str] | None = None,
) -> Breakdown:
    """One breakdown from one file, or from several files of one run combined (a trace, its copies, its stats; the
    PyTorch traces of a distributed run's ranks). `steps` ("2:5") chooses ProfilerStep#2..#5 of a PyTorch trace;
    `names` label the files in errors and per-rank figures."""
    chosen = parse_steps(steps) if steps is not None else None
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


class ProfileService:
    def __init__(self, store: ProfileStore) -> None:
        self._store = store

    async def create(
        self,
        files: Sequence[bytes],
        *,
        format: str | None,
        name: str | None,
        steps: str | None = None,
        names: Sequence[str] | None = None,
    ) -> ProfileDoc:
        """Parse (in a worker thread: a large trace takes seconds) and store the breakdown."""
        breakdown = await asyncio.to_thread(parse, files, format, steps, names)
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
