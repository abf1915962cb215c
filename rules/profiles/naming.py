"""Shared naming: copy directions under one spelling, and the kind of an API call from its name.

One spelling across formats ("H2D copy") lets a proposal name the same phase whichever profiler
measured it.
"""

from __future__ import annotations

import hashlib
import re

from worthit.rules.profiles.model import Kind

_DIRECTIONS: dict[str, str] = {
    "host_to_device": "H2D copy",
    "htod": "H2D copy",
    "host-to-device": "H2D copy",
    "device_to_host": "D2H copy",
    "dtoh": "D2H copy",
    "device-to-host": "D2H copy",
    "device_to_device": "D2D copy",
    "dtod": "D2D copy",
    "device-to-device": "D2D copy",
    "host_to_host": "H2H copy",
    "htoh": "H2H copy",
    "host-to-host": "H2H copy",
    "peer-to-peer": "P2P copy",
    "ptop": "P2P copy",
    "peer_to_peer": "P2P copy",
}
_DIRECTION_RE = re.compile("|".join(re.escape(k) for k in sorted(_DIRECTIONS, key=len, reverse=True)))

_ALLOC_RE = re.compile(r"malloc|free|alloc|mempool|memory_pool", re.IGNORECASE)
_COPY_RE = re.compile(r"memcpy|memory_copy|async_copy|copy_on_engine", re.IGNORECASE)


def copy_name(direction: str) -> str:
    """ "MEMORY_COPY_HOST_TO_DEVICE", "[CUDA memcpy HtoD]", "Memcpy HtoD (Pageable -> Device)" → "H2D copy"."""
    found = _DIRECTION_RE.search(direction.lower())
    if found is None:
        return f"{direction.strip() or 'unknown'} copy"
    return _DIRECTIONS[found.group(0)]


def api_kind(name: str) -> Kind:
    """Kind of a host API call: allocation and free calls → alloc, memcpy calls → copy, the rest → api.

    The split follows the seed's reading of a summary ("the 85% that is allocation and host↔device
    copy"): a hipMemcpy's host time contains the copy it waits for, so it is counted as copy time.
    """
    if _ALLOC_RE.search(name):
        return "alloc"
    if _COPY_RE.search(name):
        return "copy"
    return "api"


# PyTorch's profiler records each batch fetched from a DataLoader as ``enumerate(DataLoader)#<Iter>.__next__``.
_INPUT_RE = re.compile(r"^enumerate\(DataLoader\)|DataLoaderIter\.__next__")


def is_input_op(name: str) -> bool:
    """Whether a host op is the input pipeline handing the step its next batch (a DataLoader's ``__next__``)."""
    return _INPUT_RE.search(name) is not None


#: Longest name a proposal's breakdown or display keeps (rules/model.py's Name limit).
DISPLAY_MAX = 200
#: Longest phase name a stored profile keeps (rules/model.py's LONG_NAME_MAX: no target can be longer). Kernels
#: named by 400,000 characters made a 48 MB profile document; cut here, 60 of them make 2 MB.
STORED_NAME_MAX = 16384
# 64 bits: at 32, two names forged to collide took 34,000 tries (0.05 s: the state after a shared 16 KB head is
# copied, not rehashed), and once stored cut their step figures merged into one kernel's.
_HASH_LEN = 16
# A cut name ends with the digest of the whole: 16 hex characters, or 8 in profiles stored before they were widened.
_CUT = re.compile(r"… \[([0-9a-f]{16}|[0-9a-f]{8})\]$")


UNNAMED = "(unnamed)"
"""How a phase whose file gave it no name is shown and named in a proposal (a breakdown's names cannot be empty)."""


def short_name(name: str, limit: int = DISPLAY_MAX) -> str:
    """`name` cut for display to at most `limit` characters, with a digest of the whole so two never collide.

    Kernel names are C++ signatures hundreds of characters long that often differ only near the end (template
    arguments); cutting them alone would make ``void gemm<…, 128>`` and ``void gemm<…, 256>`` one name. An empty
    name is shown as ``(unnamed)``. A name already cut (a stored profile's, at `STORED_NAME_MAX`) keeps the digest
    of the whole it was cut from, so it shows as the whole would: the CLI's table and the server's agree. That digest
    is 16 hex characters (64 bits), or 8 in a profile stored before: such a name still reads, shows and is found
    by the display name it had, which differs from the one the CLI now gives the whole file.
    """
    if not name:
        return UNNAMED
    if len(name) <= limit:
        return name
    digest = name_digest(name)
    return f"{name[: limit - len(digest) - 4]}… [{digest}]"


def name_digest(name: str) -> str:
    """The digest `short_name` shows in brackets after a cut name: of the whole name, or the one a stored cut kept."""
    # Only a stored cut is exactly STORED_NAME_MAX long: a longer name ending in "… [digest]" is a whole one, and
    # taking its tail on trust would let two wholes with one head and one forged tail share a name.
    cut = _CUT.search(name) if len(name) == STORED_NAME_MAX else None
    if cut is not None:
        return cut.group(1)
    return hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=_HASH_LEN // 2).hexdigest()


def cut_digest(name: str) -> str | None:
    """The digest a name cut by `short_name` (at any width) ends with, None for a name not cut."""
    cut = _CUT.search(name)
    return None if cut is None else cut.group(1)


def cut_head(name: str) -> str | None:
    """What a name `short_name` cut keeps of the whole (the part before ``… [digest]``), None for a name not cut."""
    cut = _CUT.search(name)
    return None if cut is None else name[: cut.start()]


__all__ = [
    "DISPLAY_MAX",
    "STORED_NAME_MAX",
    "UNNAMED",
    "api_kind",
    "copy_name",
    "cut_digest",
    "cut_head",
    "is_input_op",
    "name_digest",
    "short_name",
]
