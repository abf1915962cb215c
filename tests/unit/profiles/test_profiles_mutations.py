"""Damaged real files: every mutation of a real profiler file is read or refused as a ProfileError, never raised as
another exception (a 500 on `POST /v1/profiles`, a traceback on `worthit profile`), and what is read makes a
proposal the engine decides on. Mutations reach the values that broke readers before: floats past any clock,
integers past 64 bits, NaN, empty and absurdly long names, duplicated and dropped events, cut files."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from worthit.rules.engine import evaluate
from worthit.rules.errors import WorthitError
from worthit.rules.model import Proposal
from worthit.rules.policy import default_policy
from worthit.rules.profiles import read_any
from worthit.rules.profiles.model import Breakdown, largest_first
from worthit.rules.profiles.proposal import proposal_from_profile

# The real files small enough to mutate a hundred times in a second or two (the two large traces are read whole
# by tests/unit/profiles/test_profiles_real.py).
FILES = [
    "rocprofv3_kernel_trace_v0.csv",
    "rocprofv3_memory_copy_trace.csv",
    "rocprofv3_kernel_stats_jacobi.csv",
    "rocprofv3_hip_api_stats.csv",
    "nsys_cuda_gpu_kern_sum_trimmed.csv",
    "rocprofv3_summary_trimmed.txt",
    "torch_trace_mi250_kineto.json.gz",
    "torch_trace_a100_simple_add.json.gz",
    "real/rocprofv3/sdk_481f7ff_kernel_trace.csv",
    "real/rocprofv3/sdk_a6af0d4_memory_copy_trace.csv",
    "real/rocprofv3/hpctraining_jacobi_kernel_stats.csv",
    "real/nsys/dotllm_prefill_cuda_gpu_kern_sum.csv",
    "real/nsys/vernier_doc_kern_sum_with_preamble.csv",
    "real/pytorch/cupti_profiler_benchmark_result_924719_1679055439_trace.json.gz",
    "real/pytorch/amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
]

VALUES: list[Any] = [
    None,
    0,
    -1,
    1,
    2**63,
    2**64,
    -(2**63),
    10**30,
    1e308,
    -1e308,
    0.5,
    1e-300,
    "",
    "x" * 5000,
    "12",
    [],
    {},
    True,
    "ProfilerStep#3",
    "nccl:all_reduce",
    "Kernel",
    "kernel",
    "gpu_memcpy",
    "cpu_op",
    "X",
    "B",
]
CELLS = ["", "-1", "0", "9" * 25, "1e308", "nan", "inf", "x", str(-(2**63)), str(2**63 - 1), str(2**64 - 1), "1.5"]
KEYS = ["ts", "dur", "ph", "cat", "name", "pid", "tid", "args"]
ARGS = ["correlation", "stream", "device", "External id", "rank", "Collective name", "Group size"]


def _json(doc: Any, draw: Callable[..., Any]) -> Any:
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not events:
        return doc
    for _ in range(draw(st.integers(1, 6))):
        event = events[draw(st.integers(0, len(events) - 1))]
        how = draw(st.sampled_from(["set", "arg", "drop", "copy", "top"]))
        if how == "set":
            event[draw(st.sampled_from(KEYS))] = draw(st.sampled_from(VALUES))
        elif how == "arg" and isinstance(event.get("args", {}), dict):
            event.setdefault("args", {})[draw(st.sampled_from(ARGS))] = draw(st.sampled_from(VALUES))
        elif how == "drop":
            event.pop(draw(st.sampled_from(KEYS)), None)
        elif how == "copy":
            events.append(dict(event))
        else:
            key = draw(st.sampled_from(["distributedInfo", "deviceProperties", "schemaVersion"]))
            doc[key] = draw(st.sampled_from([*VALUES, {"rank": 1, "world_size": 2}, {"rank": "a"}, {"rank": 10**30}]))
    return doc


def _csv(text: str, draw: Callable[..., Any]) -> str:
    rows = list(csv.reader(io.StringIO(text)))
    for _ in range(draw(st.integers(1, 5))):
        if len(rows) < 2:
            break
        row = rows[draw(st.integers(1, len(rows) - 1))]
        if row:
            row[draw(st.integers(0, len(row) - 1))] = draw(st.sampled_from([*CELLS, "nccl_AllReduce_kernel"]))
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def _bytes(data: bytes, draw: Callable[..., Any]) -> bytes:
    how = draw(st.sampled_from(["cut", "flip", "crlf", "drop_line"]))
    if how == "cut":
        return data[: draw(st.integers(0, len(data)))]
    if how == "flip":
        flipped = bytearray(data)
        for _ in range(draw(st.integers(1, 8))):
            flipped[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return bytes(flipped)
    if how == "crlf":
        return data.replace(b"\n", b"\r\n")
    lines = data.split(b"\n")
    del lines[draw(st.integers(0, len(lines) - 1))]
    return b"\n".join(lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_damaged_real_file_is_read_or_refused_never_raised(
    fixture_bytes: Callable[[str], bytes], data: st.DataObject
) -> None:
    name = data.draw(st.sampled_from(FILES), label="file")
    raw = fixture_bytes(name)
    text = gzip.decompress(raw) if name.endswith(".gz") else raw
    how = data.draw(st.sampled_from(["structure", "bytes"]), label="mutation")
    if how == "structure" and text.lstrip().startswith(b"{"):
        mutated = json.dumps(_json(json.loads(text), data.draw)).encode()
    elif how == "structure" and name.endswith(".csv"):
        mutated = _csv(text.decode(), data.draw).encode()
    else:
        mutated = _bytes(text, data.draw)
    if data.draw(st.booleans(), label="gzip"):
        mutated = gzip.compress(mutated)
    try:
        breakdown = read_any(mutated)
    except WorthitError:
        event("refused by the reader")
    else:
        event(_read_and_decided(breakdown))


def _read_and_decided(breakdown: Breakdown) -> str:
    """Check what a damaged file read as: phases that add up, and a decision on its largest (or a refusal naming
    why); the outcome, for hypothesis's statistics."""
    for phase in breakdown.phases:
        assert phase.total_ns >= 0
        assert phase.share_of_device is None or (0 <= phase.share_of_device <= 1 + 1e-9)
    phases = largest_first(breakdown.phases)
    if not phases:
        return "read, no phase"
    proposal = Proposal(target=phases[0].name, k=2, cost_weeks=1, profile_id="mutated")
    try:
        decided = evaluate(proposal_from_profile(proposal, breakdown), default_policy())
    except WorthitError:
        return "read, refused by the engine"
    assert decided.verdict in ("fund", "fund_if", "remeasure", "redirect", "decline")
    assert math.isfinite(decided.amdahl.saving_fraction)
    return "read and decided"


@pytest.mark.parametrize("name", FILES)
def test_every_file_mutated_here_reads_as_it_is(fixture_bytes: Callable[[str], bytes], name: str) -> None:
    """The list above names real files the readers take, so the mutations start from something readable."""
    assert read_any(fixture_bytes(name)).phases
