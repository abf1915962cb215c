"""A schedule stored and read back replays as the trace it was read from: every field equal, every what-if equal."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import fields

import msgspec
import pytest

from tests.replay_traces import TraceBuilder
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto.schedule import Schedule, read_schedule
from worthit.rules.profiles.kineto.stored_schedule import (
    MAX_STORED_OPS,
    decode_schedule,
    encode_schedule,
    storable,
)
from worthit.rules.profiles.kineto.whatif import parse_target, what_if

REAL = (
    "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "critical_path_cuda_event_sync_event_sync_trace.json.gz",
    "nccl_parser_config_nccl_data.json.gz",
    "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz",
    "trace_filter_sampled_rank-0.json.gz",
)


def same(a: Schedule, b: Schedule) -> None:
    for f in fields(Schedule):
        assert getattr(a, f.name) == getattr(b, f.name), f.name
    for target in ("kind:kernel=2", "kind:comm=3", "*=1"):
        try:
            expected = msgspec.json.encode(what_if([a], [parse_target(target)]))
        except ProfileError:
            continue  # nothing of that kind in the steps
        assert msgspec.json.encode(what_if([b], [parse_target(target)])) == expected


@pytest.mark.parametrize("name", REAL)
def test_a_real_traces_schedule_comes_back_equal(name: str, fixture_bytes: Callable[[str], bytes]) -> None:
    data = fixture_bytes(f"real/pytorch/{name}")
    s = read_schedule(data, name)
    stored = encode_schedule(s)
    assert len(stored) < len(data)
    same(s, decode_schedule(stored))


def test_a_generated_schedule_with_events_syncs_and_collectives_comes_back_equal() -> None:
    b = TraceBuilder(rank=0, world_size=2)
    b.launch(10, "ncclKernel_AllReduce_RING_LL_Sum_float", 15, 400, stream=20)
    b.launch(20, "K", 25, 100)
    corr = b.call("cudaMemcpyAsync", 300, 20)
    b.op("Memcpy DtoH (Device -> Pageable)", 305, 5, corr, cat="gpu_memcpy")
    b.call("cudaDeviceSynchronize", 330, 90)
    b.step(1, 0, 425)
    b.step(2, 425, 500)
    s = read_schedule(b.bytes(), "rank0")
    same(s, decode_schedule(encode_schedule(s)))


def test_damaged_bytes_are_a_profile_error() -> None:
    stored = encode_schedule(read_schedule(_one_kernel(), "t"))
    for damaged in (stored[:-5], b"not a schedule", zlib.compress(b"\x93\x01\x02\x03")):
        with pytest.raises(ProfileError, match="stored schedule cannot be read"):
            decode_schedule(damaged)


def test_only_schedules_up_to_the_cap_are_storable() -> None:
    s = read_schedule(_one_kernel(), "t")
    assert storable(s)
    s.op_start.extend([0] * MAX_STORED_OPS)  # one op past the cap
    assert not storable(s)


def _one_kernel() -> bytes:
    b = TraceBuilder()
    b.launch(10, "K", 15, 100)
    b.call("cudaDeviceSynchronize", 20, 100)
    b.step(1, 0, 125)
    return b.bytes()
