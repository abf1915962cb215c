"""The trace replay and its what-if: exact at k = 1 on the real traces, hand-computed answers on generated ones.

Generated traces are in µs (`tests/replay_traces.py`); each expected figure below is worked out in its docstring
from the events the test writes, and checked to the ns (1 µs tolerance where the issue allows it).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable

import pytest

from tests.replay_traces import TraceBuilder
from worthit.rules.profiles.errors import ProfileError
from worthit.rules.profiles.kineto.schedule import read_schedule
from worthit.rules.profiles.kineto.steps import parse_steps
from worthit.rules.profiles.kineto.whatif import Losses, WhatIf, parse_target, what_if

US = 1000

REAL = (
    "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "critical_path_cuda_event_sync_event_sync_trace.json.gz",
    "nccl_parser_config_nccl_data.json.gz",
    "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz",
    "trace_filter_sampled_rank-0.json.gz",
    "trace_filter_sampled_rank-1.json.gz",
)


def run(*traces: TraceBuilder, targets: tuple[str, ...]) -> WhatIf:
    schedules = [read_schedule(t.bytes(), f"rank{i}") for i, t in enumerate(traces)]
    return what_if(schedules, [parse_target(t) for t in targets])


def check(w: WhatIf, *, measured: int, predicted: int, amdahl: int, lost: tuple[int, int, int, int]) -> None:
    """Figures in µs: the per-step means, and the four losses (overlap, launch, sync, ranks)."""
    assert w.measured_ns == measured * US
    assert w.replayed_ns == w.measured_ns
    assert abs(w.predicted_ns - predicted * US) <= US
    assert w.amdahl_ns == amdahl * US
    assert w.lost_ns == Losses(overlap=lost[0] * US, launch=lost[1] * US, sync=lost[2] * US, ranks=lost[3] * US)
    assert sum((w.lost_ns.overlap, w.lost_ns.launch, w.lost_ns.sync, w.lost_ns.ranks)) == (
        (w.measured_ns - w.amdahl_ns) - (w.replayed_ns - w.predicted_ns)
    )
    for step in w.steps:
        assert step.replayed_ns == step.measured_ns


# -- the real traces -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", REAL)
def test_real_traces_replay_exactly_and_the_model_explains_each_step(
    name: str, fixture_bytes: Callable[[str], bytes]
) -> None:
    """At k = 1 every complete step is reproduced to the µs; without residuals each step is within 3%."""
    s = read_schedule(fixture_bytes(f"real/pytorch/{name}"), name)
    w = what_if([s], [parse_target("*=1")])
    assert w.steps
    for step in w.steps:
        assert abs(step.replayed_ns - step.measured_ns) < US
        assert abs(step.predicted_ns - step.measured_ns) < US
        assert abs(step.explained_ns / step.measured_ns - 1) <= 0.03, (step.name, step.explained_ns)


def test_resnet_cudnn_dgrad_twice_as_fast_saves_nothing(fixture_bytes: Callable[[str], bytes]) -> None:
    """The host sets every ResNet-50 step: halving the dgrad kernels leaves each step as measured, though Amdahl
    promises the kernels' halved time (computed here from the JSON itself)."""

    name = "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"
    data = fixture_bytes(f"real/pytorch/{name}")
    w = what_if([read_schedule(data, name)], [parse_target("*dgrad*=2")])
    assert w.predicted_ns == w.measured_ns
    events = json.loads(gzip.decompress(data))["traceEvents"]
    steps = [e for e in events if e.get("name", "").startswith("ProfilerStep#") and e.get("cat") == "Operator"]
    launches = {e["args"]["correlation"]: e["ts"] for e in events if e.get("cat") == "Runtime"}
    saved = 0
    for e in events:
        if e.get("cat") == "Kernel" and "dgrad" in e["name"].lower():
            at = launches[e["args"]["correlation"]]
            if steps[0]["ts"] <= at < steps[-1]["ts"] + steps[-1]["dur"]:
                saved += round(e["dur"] * 1000) - round(e["dur"] * 1000 / 2)
    assert w.measured_ns - w.amdahl_ns == round(saved / len(steps))
    assert w.lost_ns.overlap == 0  # one stream: nothing hides the kernels
    assert w.lost_ns.launch + w.lost_ns.sync == w.measured_ns - w.amdahl_ns
    # The GPU's idle time in the steps, from the JSON: each step less the union of its device intervals.
    device = sorted(
        (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
        for e in events
        if e.get("cat") in ("Kernel", "Memcpy", "Memset")
    )
    idle = 0
    for st in steps:
        lo, hi = round(st["ts"] * 1000), round((st["ts"] + st["dur"]) * 1000)
        busy, reach = 0, lo
        for s, e in device:
            s, e = max(s, reach), min(e, hi)
            if e > s:
                busy += e - s
                reach = e
        idle += hi - lo - busy
    assert w.statement == (
        f"replaying the trace with *dgrad* 2x faster shortens each step by 0.000 ms, not "
        f"{(w.measured_ns - w.amdahl_ns) / 1e6:,.3f} ms: the GPU waits on the host for "
        f"{round(idle / len(steps)) / 1e6:,.3f} ms of each {w.measured_ns / 1e6:,.3f} ms step."
    )
    assert w.better_target is not None
    assert "launch" in w.better_target


def test_nccl_parser_config_nccl_twice_as_fast_saves_nothing(fixture_bytes: Callable[[str], bytes]) -> None:
    """The host never waits on the GPU in nccl_parser_config's steps: NCCL 2x saves nothing per step."""
    name = "nccl_parser_config_nccl_data.json.gz"
    w = what_if([read_schedule(fixture_bytes(f"real/pytorch/{name}"), name)], [parse_target("kind:comm=2")])
    assert w.predicted_ns == w.measured_ns
    assert w.amdahl_ns < w.measured_ns - 5_000 * US
    assert w.targets[0].phases
    assert all("nccl" in p.lower() for p in w.targets[0].phases)


def test_a_trace_without_a_device_timeline_is_refused(fixture_bytes: Callable[[str], bytes]) -> None:
    name = "cupti_profiler_benchmark_result_924719_1679055439_trace.json.gz"
    with pytest.raises(ProfileError, match="no device timeline"):
        read_schedule(fixture_bytes(f"real/pytorch/{name}"), name)


# -- generated traces with hand-computed answers ----------------------------------------------------------------


def test_gpu_bound_serial_saves_what_amdahl_says() -> None:
    """A 5-115, B 115-315 (target), C 315-365 on one stream; the sync waits C and ends 370; the step is 0-375.
    B at 2x lasts 100: C ends 265, the sync 270, the step 275: Amdahl's 100 exactly."""
    b = TraceBuilder()
    b.launch(10, "A", 15, 100)
    b.launch(20, "B", 115, 200)
    b.launch(30, "C", 315, 50)
    b.call("cudaDeviceSynchronize", 40, 330)
    b.step(1, 0, 375)
    w = run(b, targets=("B=2",))
    check(w, measured=375, predicted=275, amdahl=275, lost=(0, 0, 0, 0))
    assert (
        w.statement
        == "replaying the trace with B 2x faster shortens each step by 0.100 ms, as Amdahl's share says (0.100 ms)."
    )
    assert w.better_target is None


def test_a_kernel_hidden_under_a_collective_saves_nothing() -> None:
    """NCCL 15-415 on stream 20 and K 25-125 on stream 7; the sync waits for both (ends 420), the step is 0-425.
    K at 2x ends at 75, under the collective: no saving; Amdahl's 50 is lost to overlap."""
    b = TraceBuilder()
    b.launch(10, "ncclKernel_AllReduce_RING_LL_Sum_float", 15, 400, stream=20)
    b.launch(20, "K", 25, 100)
    b.call("cudaDeviceSynchronize", 30, 390)
    b.step(1, 0, 425)
    check(run(b, targets=("K=2",)), measured=425, predicted=425, amdahl=375, lost=(50, 0, 0, 0))


def test_partial_overlap_saves_down_to_the_other_stream() -> None:
    """NCCL 15-115 on stream 20, K 25-225 on stream 7; the sync ends 230, the step 235. K at 4x ends at 75: the
    sync now waits for NCCL (115), ends 120, the step 125: 110 saved of Amdahl's 150, 40 lost to overlap."""
    b = TraceBuilder()
    b.launch(10, "ncclKernel_AllReduce_RING_LL_Sum_float", 15, 100, stream=20)
    b.launch(20, "K", 25, 200)
    b.call("cudaDeviceSynchronize", 30, 200)
    b.step(1, 0, 235)
    check(run(b, targets=("K=4",)), measured=235, predicted=125, amdahl=85, lost=(40, 0, 0, 0))


def test_a_launch_bound_loop_saves_only_the_last_kernel() -> None:
    """Five 10 µs kernels, launched every 12 µs (each 5 µs after its launch: the GPU waits for the host); the sync
    starts at 50 and waits for the last (53-63), ending 66; the step is 0-70. At 2x Amdahl saves 25, the replay
    the last kernel's 5; 20 lost to the launches."""
    b = TraceBuilder()
    for i in range(5):
        b.launch(12 * i, "tiny", 12 * i + 5, 10, call_dur=12 if i < 4 else 2)
    b.call("cudaDeviceSynchronize", 50, 16)
    b.step(1, 0, 70)
    check(run(b, targets=("tiny=2",)), measured=70, predicted=65, amdahl=45, lost=(0, 20, 0, 0))


def test_a_host_sync_after_host_work_that_outlasts_the_target_saves_nothing() -> None:
    """K 5-105 (target); the host works until 300, then a D2H copy into pageable memory (305-310) whose
    cudaMemcpyAsync returns at 320; the step is 0-330. K at 2x: the copy still starts when launched, nothing saved;
    on the device alone the copy would have moved up, so Amdahl's 50 is lost to the launch."""
    b = TraceBuilder()
    b.launch(0, "K", 5, 100)
    corr = b.call("cudaMemcpyAsync", 300, 20)
    b.op("Memcpy DtoH (Device -> Pageable)", 305, 5, corr, cat="gpu_memcpy")
    b.step(1, 0, 330)
    check(run(b, targets=("K=2",)), measured=330, predicted=330, amdahl=280, lost=(0, 50, 0, 0))


def test_an_event_wait_chain_across_streams_carries_the_saving() -> None:
    """A 5-105 on stream 7 (target); B on stream 20 waits for it through an event (107-157), C on stream 7 waits
    for B (159-209); the sync ends 214, the step 0-220. No cuda_sync events: the edges are inferred. A at 2x moves
    the chain up by 50: Amdahl exact."""
    b = TraceBuilder()
    b.launch(0, "A", 5, 100)
    b.call("cudaEventRecord", 10, 2)
    b.call("cudaStreamWaitEvent", 15, 2)
    b.launch(20, "B", 107, 50, stream=20)
    b.call("cudaEventRecord", 30, 2)
    b.call("cudaStreamWaitEvent", 35, 2)
    b.launch(40, "C", 159, 50)
    b.call("cudaDeviceSynchronize", 50, 164)
    b.step(1, 0, 220)
    w = run(b, targets=("A=2",))
    check(w, measured=220, predicted=170, amdahl=170, lost=(0, 0, 0, 0))
    assert any("inferred" in note for note in w.notes)


def test_a_cuda_graph_launch_replays_its_kernels_in_order() -> None:
    """One cudaGraphLaunch (corr shared) runs G1 15-65, G2 65-165 (target), G3 165-195; the stream sync ends 200,
    the step 0-205. G2 at 2x: G3 ends 145, the sync 150, the step 155; the note names the graph."""
    b = TraceBuilder()
    corr = b.call("cudaGraphLaunch", 0, 10)
    b.op("G1", 15, 50, corr)
    b.op("G2", 65, 100, corr)
    b.op("G3", 165, 30, corr)
    b.call("cudaStreamSynchronize", 20, 180)
    b.step(1, 0, 205)
    w = run(b, targets=("G2=2",))
    check(w, measured=205, predicted=155, amdahl=155, lost=(0, 0, 0, 0))
    assert any("CUDA graph" in note for note in w.notes)


def _two_ranks() -> tuple[TraceBuilder, TraceBuilder]:
    """Rank 0 (the straggler) computes 5-205 then all-reduces 205-255; rank 1 computes 5-105, enters the all-reduce
    at 105 and waits in it for rank 0 until 255. Each syncs (ends 260); each step is 0-265."""
    ranks = []
    for rank, (name, dur) in enumerate((("straggler_kernel", 200), ("other_kernel", 100))):
        b = TraceBuilder(rank=rank, world_size=2)
        b.launch(0, name, 5, dur)
        b.launch(10, "ncclKernel_AllReduce_RING_LL_Sum_float", 5 + dur, 250 - dur)
        b.call("cudaDeviceSynchronize", 20, 240)
        b.step(1, 0, 265)
        ranks.append(b)
    return ranks[0], ranks[1]


def test_the_straggler_saves_what_the_next_slowest_rank_allows() -> None:
    """The straggler's kernel at 4x ends at 55 (Amdahl: 150 saved); the all-reduce then waits for rank 1 (105) and
    ends 155 on both: each step 165, 100 saved, 50 lost to the waiting rank."""
    w = run(*_two_ranks(), targets=("straggler*=4",))
    check(w, measured=265, predicted=165, amdahl=115, lost=(0, 0, 0, 50))
    assert [(s.rank, s.predicted_ns) for s in w.steps] == [(0, 165 * US), (1, 165 * US)]
    assert w.statement.endswith("not 0.150 ms: the collectives then wait for the slowest rank (rank 1).")
    assert w.better_target == "the next-slowest rank (rank 1) with it"


def test_a_waiting_rank_saves_nothing() -> None:
    """Rank 1's kernel at 2x ends at 55, but the all-reduce still waits for rank 0 until 205: nothing saved;
    Amdahl's 50 (on rank 1, where the target is) is lost to the ranks."""
    w = run(*_two_ranks(), targets=("other*=2",))
    check(w, measured=265, predicted=265, amdahl=215, lost=(0, 0, 0, 50))
    assert w.statement.endswith("not 0.050 ms: the collectives then wait for the slowest rank (rank 0).")
    assert w.better_target == "the straggler (rank 0)"


def test_several_targets_each_with_its_own_k() -> None:
    """A 5-105 (2x), B 105-305 (4x), C 305-355 on one stream; the sync ends 360, the step 0-365. Saved 50 + 150."""
    b = TraceBuilder()
    b.launch(0, "A", 5, 100)
    b.launch(10, "B", 105, 200)
    b.launch(20, "C", 305, 50)
    b.call("cudaDeviceSynchronize", 30, 330)
    b.step(1, 0, 365)
    w = run(b, targets=("A=2", "B=4"))
    check(w, measured=365, predicted=165, amdahl=165, lost=(0, 0, 0, 0))
    assert [(t.pattern, t.phases, t.device_ns) for t in w.targets] == [("A", ["A"], 100 * US), ("B", ["B"], 200 * US)]


def test_work_the_host_never_waits_for_saves_nothing() -> None:
    """K 5-305 on stream 20 (target), M 15-215 on stream 7; the host syncs stream 7 only (ends 220), the step 0-225.
    K at 2x ends at 155: the device's work ends at 215 (M), 90 earlier (60 of Amdahl's 150 hidden under M), the
    step not at all: 90 lost to sync."""
    b = TraceBuilder()
    b.launch(0, "K", 5, 300, stream=20)
    b.launch(10, "M", 15, 200)
    b.call("cudaStreamSynchronize", 20, 200)
    b.step(1, 0, 225)
    check(run(b, targets=("K=2",)), measured=225, predicted=225, amdahl=75, lost=(60, 0, 90, 0))


def test_cuda_sync_events_name_what_an_event_synchronize_waits_on() -> None:
    """A 5-105 on stream 7 and B 15-108 on stream 20; an event recorded after A is synchronized on (ends 110), then
    the host works until 400; the step is 0-410. The cuda_sync event names the record (B, ending later inside the
    call, would be the guess): A at 2x moves the host up by 50. On the device alone B hides A (50 lost to overlap);
    the host waiting on A gives it back (-50 to sync)."""
    b = TraceBuilder()
    b.launch(0, "A", 5, 100)
    b.launch(10, "B", 15, 93, stream=20)
    record = b.call("cudaEventRecord", 20, 2)
    sync = b.call("cudaEventSynchronize", 25, 85)
    b.sync_event("Event Sync", sync, wait_on_stream=7, wait_on_cuda_event_record_corr_id=record, device=0)
    b.call("cudaMemsetAsync", 400, 2)
    b.step(1, 0, 410)
    check(run(b, targets=("A=2",)), measured=410, predicted=360, amdahl=360, lost=(50, 0, -50, 0))


# -- targets and refusals --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "match"),
    [("cudnn", "PATTERN=K"), ("*=0.5", "between 1"), ("kind:gpu=2", "a kind among"), ("*=1e9", "between 1")],
)
def test_a_malformed_target_is_refused_naming_what_was_expected(text: str, match: str) -> None:
    with pytest.raises(ProfileError, match=match):
        parse_target(text)


def test_a_target_matching_nothing_names_the_largest_phases() -> None:
    b = TraceBuilder()
    b.launch(0, "gemm", 5, 100)
    b.call("cudaDeviceSynchronize", 10, 100)
    b.step(1, 0, 120)
    with pytest.raises(ProfileError, match="gemm"):
        run(b, targets=("*cudnn*=2",))


def test_a_trace_without_steps_is_refused() -> None:
    b = TraceBuilder()
    b.launch(0, "gemm", 5, 100)
    with pytest.raises(ProfileError, match="ProfilerStep"):
        run(b, targets=("gemm=2",))


def test_the_streamed_schedule_is_the_whole_file_one(fixture_bytes: Callable[[str], bytes]) -> None:
    """Read in one pass from small gzip chunks, the ResNet-50 trace gives the same what-if as read whole."""
    from worthit.rules.profiles.kineto.schedule import read_schedule_stream

    name = "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"
    data = fixture_bytes(f"real/pytorch/{name}")
    chunks = (data[i : i + 65536] for i in range(0, len(data), 65536))
    whole = what_if([read_schedule(data, name)], [parse_target("*gemm*=3")])
    streamed = what_if([read_schedule_stream(chunks, name)], [parse_target("*gemm*=3")])
    assert streamed == whole


def test_a_single_rank_collective_target_says_its_time_includes_the_wait() -> None:
    b = TraceBuilder()
    b.launch(0, "ncclKernel_AllReduce_RING_LL_Sum_float", 5, 100)
    b.call("cudaDeviceSynchronize", 10, 100)
    b.step(1, 0, 120)
    w = run(b, targets=("kind:comm=2",))
    assert any("includes its wait" in note for note in w.notes)


def _waiting_on_an_event(recorded: bool) -> TraceBuilder:
    """A 5-105 on stream 7 (target); an event recorded after it, stream 20 waits on it; B on stream 20 starts at 135,
    30 µs after A ends (too late to be guessed from the timeline); the sync ends 190, the step 0-200."""
    b = TraceBuilder()
    b.launch(0, "A", 5, 100)
    record = b.call("cudaEventRecord", 10, 2)
    wait = b.call("cudaStreamWaitEvent", 15, 2)
    if recorded:
        b.sync_event(
            "Stream Wait Event", wait, stream=20, wait_on_stream=7, wait_on_cuda_event_record_corr_id=record, device=0
        )
    b.launch(20, "B", 135, 50, stream=20)
    b.call("cudaDeviceSynchronize", 30, 160)
    b.step(1, 0, 200)
    return b


def test_a_recorded_stream_wait_event_orders_the_streams() -> None:
    """With the cuda_sync event, B waits on A: A at 2x moves B, the sync and the step up by 50. Without it nothing
    explains B's start but its own delay, kept as measured: B stays, nothing saved, Amdahl's 50 lost to overlap."""
    check(run(_waiting_on_an_event(True), targets=("A=2",)), measured=200, predicted=150, amdahl=150, lost=(0, 0, 0, 0))
    check(
        run(_waiting_on_an_event(False), targets=("A=2",)), measured=200, predicted=200, amdahl=150, lost=(50, 0, 0, 0)
    )


def test_ranks_are_replayed_on_the_steps_they_share() -> None:
    """Rank 0 recorded steps 1 and 2, rank 1 step 2 alone: the run's what-if speaks of step 2 on both."""
    ranks = []
    for rank, steps in ((0, (1, 2)), (1, (2,))):
        b = TraceBuilder(rank=rank, world_size=2)
        for n in steps:
            t0 = 1000 * n
            b.launch(t0, "gemm", t0 + 5, 100)
            b.launch(t0 + 10, "ncclKernel_AllReduce_RING_LL_Sum_float", t0 + 105, 50)
            b.call("cudaDeviceSynchronize", t0 + 20, 140)
            b.step(n, t0, t0 + 165)
        ranks.append(b)
    w = run(*ranks, targets=("gemm=2",))
    assert [(s.name, s.rank) for s in w.steps] == [("ProfilerStep#2", 0), ("ProfilerStep#2", 1)]
    assert w.predicted_ns == 115 * US
    assert any("every rank has" in note for note in w.notes)


def test_a_device_id_past_64_bits_reads_as_an_unknown_device() -> None:
    """A damaged trace's device 2**63 (the mutation test's find) is a device the replay cannot name, not a crash."""
    b = TraceBuilder()
    b.launch(0, "gemm", 5, 100)
    b.events[-1]["args"]["device"] = 2**63
    b.call("cudaDeviceSynchronize", 10, 100)
    b.step(1, 0, 120)
    check(run(b, targets=("gemm=2",)), measured=120, predicted=70, amdahl=70, lost=(0, 0, 0, 0))


def test_clocks_that_round_against_the_order_are_replayed_exactly() -> None:
    """The D2H copy into pageable memory is recorded at 111-116, after its cudaMemcpyAsync (100-110) returned: the
    host's and the device's clocks disagree, so recorded time is no order for the replay (it falls back to a
    topological one). K 5-105 at 2x: the copy still waits for its launch, nothing saved; exact at k = 1."""
    b = TraceBuilder()
    b.launch(0, "K", 5, 100)
    corr = b.call("cudaMemcpyAsync", 100, 10)
    b.op("Memcpy DtoH (Device -> Pageable)", 111, 5, corr, cat="gpu_memcpy")
    b.step(1, 0, 120)
    check(run(b, targets=("K=2",)), measured=120, predicted=120, amdahl=70, lost=(0, 50, 0, 0))


def test_a_last_step_the_profiler_stopped_inside_is_left_out_and_said() -> None:
    """Step 2's kernel runs past every host call recorded (the profiler stopped inside it): steps 1 only, and a note;
    chosen explicitly, step 2 is replayed all the same."""
    b = TraceBuilder()
    b.launch(0, "gemm", 5, 100)
    b.call("cudaDeviceSynchronize", 10, 100)
    b.step(1, 0, 120)
    b.launch(120, "gemm", 125, 500)
    b.step(2, 120, 130)
    w = run(b, targets=("gemm=2",))
    assert [s.name for s in w.steps] == ["ProfilerStep#1"]
    assert any("ProfilerStep#2, the last step, is left out" in note for note in w.notes)
    schedule = read_schedule(b.bytes(), "t")
    both = what_if([schedule], [parse_target("gemm=2")], parse_steps("all"))
    assert [s.name for s in both.steps] == ["ProfilerStep#1", "ProfilerStep#2"]


def test_device_work_without_a_launch_says_how_much() -> None:
    """An op with no correlation (a sampled trace) keeps its stream order; the note gives its share of device time:
    B's 300 of 400 µs."""
    b = TraceBuilder()
    b.launch(0, "A", 5, 100)
    b.op("B", 105, 300, None)
    b.call("cudaDeviceSynchronize", 10, 400)
    b.step(1, 0, 420)
    w = run(b, targets=("A=2",))
    check(w, measured=420, predicted=370, amdahl=370, lost=(0, 0, 0, 0))
    assert any(note.startswith("75.0% of the device time has no launching call") for note in w.notes)
