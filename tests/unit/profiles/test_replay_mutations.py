"""Damaged traces replayed: every mutation of a real or generated Kineto trace is replayed or refused as a
ProfileError, never raised as another exception, and what is replayed is exact at k = 1 and never predicts a
longer step. The mutations are the breakdown readers' (test_profiles_mutations), with the replay's own arguments
(sync kinds, the records they name, graph ids, process groups) among the values."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.replay_traces import TraceBuilder
from tests.unit.profiles.test_profiles_mutations import _bytes, _json
from worthit.rules.errors import WorthitError
from worthit.rules.profiles.kineto import Target, read_schedule, what_if

FILES = [
    "real/pytorch/amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "real/pytorch/critical_path_cuda_event_sync_event_sync_trace.json.gz",
]
REPLAY_ARGS = [
    "cuda_sync_kind",
    "wait_on_stream",
    "wait_on_cuda_event_record_corr_id",
    "graph id",
    "Process Group Name",
    "Seq",
    "correlation",
    "stream",
]
REPLAY_VALUES = ["Stream Wait Event", "Event Sync", "Context Sync", "Stream Sync", 7, -1, 1533, 2**70, None, "x"]


def _generated() -> bytes:
    b = TraceBuilder()
    b.launch(0, "A", 5, 100)
    record = b.call("cudaEventRecord", 10, 2)
    wait = b.call("cudaStreamWaitEvent", 15, 2)
    b.sync_event("Stream Wait Event", wait, stream=20, wait_on_stream=7, wait_on_cuda_event_record_corr_id=record)
    corr = b.call("cudaGraphLaunch", 20, 5)
    b.op("G1", 110, 20, corr, stream=20)
    b.op("G2", 130, 20, corr, stream=20)
    b.call("cudaDeviceSynchronize", 30, 125)
    b.step(1, 0, 160)
    b.step(2, 160, 170)
    return b.bytes()


@settings(
    max_examples=int(os.environ.get("REPLAY_MUTATIONS", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.data())
def test_a_damaged_trace_is_replayed_or_refused_never_raised(
    fixture_bytes: Callable[[str], bytes], data: st.DataObject
) -> None:
    name = data.draw(st.sampled_from([*FILES, "generated"]), label="file")
    text = _generated() if name == "generated" else gzip.decompress(fixture_bytes(name))
    if data.draw(st.booleans(), label="structure"):
        doc = _json(json.loads(text), data.draw)
        events = doc.get("traceEvents") if isinstance(doc, dict) else None
        if isinstance(events, list) and events:
            for _ in range(data.draw(st.integers(0, 3))):
                chosen = events[data.draw(st.integers(0, len(events) - 1))]
                if isinstance(chosen, dict) and isinstance(chosen.get("args", {}), dict):
                    chosen.setdefault("args", {})[data.draw(st.sampled_from(REPLAY_ARGS))] = data.draw(
                        st.sampled_from(REPLAY_VALUES)
                    )
        mutated = json.dumps(doc).encode()
    else:
        mutated = _bytes(text, data.draw)
    if data.draw(st.booleans(), label="gzip"):
        mutated = gzip.compress(mutated)
    try:
        schedule = read_schedule(mutated, "mutated")
        same = what_if([schedule], [Target(pattern="*", k=1.0)])
        faster = what_if([schedule], [Target(pattern="*", k=2.0)])
    except WorthitError:
        event("refused")
    else:
        event("replayed")
        for step in same.steps:
            assert step.replayed_ns == step.measured_ns
        assert faster.predicted_ns <= same.predicted_ns
