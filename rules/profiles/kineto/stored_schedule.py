"""A `Schedule` as bytes a store keeps beside a profile's breakdown, and back: what a what-if on an uploaded trace
replays without the trace.

The columns travel as their machine bytes (8 or 1 bytes a figure, as the schedule holds them), the rest as msgpack,
all of it deflated: the shared ResNet-50 trace's schedule takes 194 kB against its 1.16 MB gzipped trace. A
schedule of more than `MAX_STORED_OPS` device ops is not stored (`storable`): a what-if on it needs the trace itself
(`worthit profile TRACE --what-if`).
"""

from __future__ import annotations

import sys
import zlib
from array import array
from dataclasses import fields
from typing import Any

import msgspec

from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto.schedule import Schedule, StepSpan

MAX_STORED_OPS = 2_000_000
"""The most device ops a stored schedule holds (about 100 bytes an op stored, before deflating)."""

_VERSION = 1
_SETS = ("op_pageable_d2h",)
_INT_KEYED = ("op_events", "op_collective")


def storable(s: Schedule) -> bool:
    """Whether `s` is small enough to store (`MAX_STORED_OPS`)."""
    return len(s.op_start) <= MAX_STORED_OPS


def encode_schedule(s: Schedule) -> bytes:
    """`s` as deflated msgpack; `decode_schedule` gives it back equal, field for field."""
    doc: dict[str, Any] = {"v": _VERSION, "order": sys.byteorder}
    for f in fields(Schedule):
        value = getattr(s, f.name)
        if isinstance(value, array):
            doc[f.name] = [value.typecode, value.tobytes()]
        elif f.name in _SETS:
            doc[f.name] = sorted(value)
        elif f.name in _INT_KEYED:
            doc[f.name] = [[key, list(item) if isinstance(item, tuple) else item] for key, item in value.items()]
        elif f.name == "steps":
            doc[f.name] = [[st.name, st.number, st.start, st.end, st.thread] for st in value]
        elif f.name == "streams":
            doc[f.name] = [list(stream) for stream in value]
        else:
            doc[f.name] = value
    return zlib.compress(msgspec.msgpack.encode(doc), 6)


def decode_schedule(data: bytes) -> Schedule:
    """The schedule `encode_schedule` wrote; ProfileError when the bytes are not one (another version, damage)."""
    try:
        doc = msgspec.msgpack.decode(zlib.decompress(data))
        if not isinstance(doc, dict) or doc.get("v") != _VERSION:
            raise ValueError(f"expected a stored schedule of version {_VERSION}")
        swap = doc.get("order") != sys.byteorder
        values: dict[str, Any] = {}
        for f in fields(Schedule):
            if f.name not in doc:
                continue
            raw = doc[f.name]
            if isinstance(raw, list) and len(raw) == 2 and isinstance(raw[1], bytes) and isinstance(raw[0], str):
                column = array(raw[0])
                column.frombytes(raw[1])
                if swap:
                    column.byteswap()
                values[f.name] = column
            elif f.name in _SETS:
                values[f.name] = set(raw)
            elif f.name == "op_events":
                values[f.name] = {int(key): list(item) for key, item in raw}
            elif f.name == "op_collective":
                values[f.name] = {int(key): (item[0], item[1]) for key, item in raw}
            elif f.name == "steps":
                values[f.name] = [StepSpan(*step) for step in raw]
            elif f.name == "streams":
                values[f.name] = [(device, label) for device, label in raw]
            else:
                values[f.name] = raw
        return Schedule(**values)
    except (zlib.error, msgspec.DecodeError, ValueError, TypeError, KeyError, IndexError) as exc:
        raise ProfileError(f"the stored schedule cannot be read: {exc}") from exc


__all__ = ["MAX_STORED_OPS", "decode_schedule", "encode_schedule", "storable"]
