"""The engine decides on the replayed saving: `worthit review --profile TRACE` replays the proposal's change on the
trace and the figures, the money and the statement use what the replay saves; Amdahl's arithmetic decides a
hand-entered proposal.

The real traces are the shared ones (skipped without ../shared); the generated ones (`tests/replay_traces.py`, µs)
always run, their figures worked out in each docstring.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.replay_traces import TraceBuilder
from worthit.rules.engine import evaluate
from worthit.rules.model import Evaluation, Proposal
from worthit.rules.policy import default_policy
from worthit.rules.profiles.kineto import read
from worthit.rules.profiles.proposal import proposal_from_profile
from worthit.service.cli import load_profile, main

RESNET = "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"
NCCL = "nccl_parser_config_nccl_data.json.gz"
STEPS_6_TO_8 = ("ProfilerStep#6", "ProfilerStep#7", "ProfilerStep#8")


def review(
    tmp_path: Path, proposal: dict[str, Any], trace: Path, capsys: pytest.CaptureFixture[str], *more: str
) -> Any:
    """`worthit review --json PROPOSAL --profile TRACE [MORE…]`, its evaluation as JSON."""
    path = tmp_path / "proposal.json"
    path.write_text(json.dumps(proposal), encoding="utf-8")
    capsys.readouterr()
    main(["review", "--json", str(path), "--profile", str(trace), *more])
    out = capsys.readouterr().out
    return json.loads(out)


def amdahl_only(proposal: dict[str, Any], trace: Path) -> Evaluation:
    """The same proposal measured on the same trace without the replay: Amdahl's arithmetic, as before it."""
    measured = proposal_from_profile(
        msgspec.convert({**proposal, "profile_id": trace.name}, Proposal), load_profile([str(trace)], None)
    )
    assert measured.replay is None
    return evaluate(measured, default_policy())


def finding(evaluation: Any, rule: str) -> Any:
    return next(f for f in evaluation["findings"] if f["rule"] == rule)


def step_savings(data: bytes, saved: Callable[[dict[str, Any]], float]) -> tuple[float, float, int]:
    """From the trace's JSON: the mean step (µs), the mean time (µs) Amdahl's share saves per step — `saved` of
    each device op launched inside the steps — and the number of steps."""
    events = json.loads(gzip.decompress(data))["traceEvents"]
    # Older traces name the categories Operator, Runtime and Kernel; newer ones user_annotation, cuda_runtime, kernel.
    steps = [
        e
        for e in events
        if e.get("name", "").startswith("ProfilerStep#") and e.get("cat") in ("Operator", "user_annotation")
    ]
    launches = {e["args"]["correlation"]: e["ts"] for e in events if e.get("cat") in ("Runtime", "cuda_runtime")}
    lo, hi = steps[0]["ts"], steps[-1]["ts"] + steps[-1]["dur"]
    total = 0.0
    for e in events:
        corr = (e.get("args") or {}).get("correlation")
        if e.get("cat") in ("Kernel", "kernel") and corr in launches and lo <= launches[corr] < hi:
            total += saved(e)
    return sum(s["dur"] for s in steps) / len(steps), total / len(steps), len(steps)


# -- the shared real traces ----------------------------------------------------------------------------------------


def test_resnet_dgrad_twice_as_fast_on_512_gpus_is_redirected_to_the_hosts_launch_work(
    tmp_path: Path, fixture_bytes: Callable[[str], bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    """Amdahl's share funds it (fund_if, 3.7% of the run, 19 GPU-equivalents, $335k a year); the replay of the
    trace, where the host sets every step, saves nothing: redirected to the host's launch work, no money."""
    data = fixture_bytes(f"real/pytorch/{RESNET}")
    trace = tmp_path / RESNET
    trace.write_bytes(data)
    proposal = {
        "title": "the cuDNN dgrad kernel 2x faster",
        "target": "*dgrad_engine*",
        "k": 2,
        "cost_weeks": 4,
        "flags": {"fleet_gpus": 512},
    }
    before = amdahl_only(proposal, trace)
    assert before.verdict == "fund_if"
    fleet = next(f for f in before.findings if f.rule == "fleet_multiplication")
    assert fleet.figures["saving_fraction"] == pytest.approx(0.0374, abs=5e-4)
    assert round(float(fleet.figures["gpu_equivalents"] or 0)) == 19

    after = review(tmp_path, proposal, trace, capsys)
    assert (after["verdict"], after["deciding_rule"]) == ("redirect", "replayed_saving")
    figures = finding(after, "replayed_saving")["figures"]
    step_us, saved_us, n = step_savings(data, lambda e: e["dur"] / 2 if "dgrad_engine" in e["name"] else 0.0)
    assert figures["step_ms"] == pytest.approx(step_us / 1000, abs=1e-3)
    assert figures["amdahl_saving_ms"] == pytest.approx(saved_us / 1000, abs=1e-3 * n)
    assert figures["replayed_saving_ms"] == 0.0
    assert figures["lost_launch_ms"] + figures["lost_sync_ms"] == pytest.approx(figures["amdahl_saving_ms"], abs=1e-6)
    assert figures["steps"] == "ProfilerStep#5..ProfilerStep#10"
    money = finding(after, "fleet_multiplication")["figures"]
    assert (money["saving_fraction"], money["gpu_equivalents"], money["annual_value_usd"]) == (0.0, 0.0, 0.0)
    statement = after["statement"]
    assert statement.startswith("Replaying the trace with void cudnn::detail::dgrad_engin… 2× faster shortens each")
    assert f"each step by 0 ms, not {saved_us / 1000:.1f} ms: the GPU waits on the host for " in statement
    assert f"of each {step_us / 1000:,.3f} ms step" in statement
    assert statement.endswith(
        "the host's launch work (CUDA graphs, fusion or fewer, larger kernels) is where the effort belongs."
    )
    assert "cut short" not in statement

    # --steps chooses the steps the replay speaks of, as it does those p is measured on.
    chosen = review(tmp_path, proposal, trace, capsys, "--steps", "6:8")
    figures = finding(chosen, "replayed_saving")["figures"]
    events = json.loads(gzip.decompress(data))["traceEvents"]
    lengths = [e["dur"] for e in events if e.get("cat") == "Operator" and e.get("name") in STEPS_6_TO_8]
    assert len(lengths) == 3
    assert figures["steps"] == "ProfilerStep#6..ProfilerStep#8"
    assert figures["step_ms"] == pytest.approx(sum(lengths) / 3 / 1000, abs=1e-3)


def test_nccl_twice_as_fast_is_redirected_to_the_work_it_runs_under(
    tmp_path: Path, fixture_bytes: Callable[[str], bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    """The all-reduce runs under compute on another stream: Amdahl's share of it at 2x is lost to overlap, and the
    one-rank trace's call for a trace across ranks is moot (even the wait made faster saves nothing)."""
    data = fixture_bytes(f"real/pytorch/{NCCL}")
    trace = tmp_path / NCCL
    trace.write_bytes(data)
    proposal = {"target": "ncclKernel_AllReduce*", "k": 2, "cost_weeks": 4}
    assert amdahl_only(proposal, trace).verdict == "remeasure"

    after = review(tmp_path, proposal, trace, capsys)
    assert (after["verdict"], after["deciding_rule"]) == ("redirect", "replayed_saving")
    assert all(f["rule"] != "barrier_denominator" for f in after["findings"])
    figures = finding(after, "replayed_saving")["figures"]
    _, saved_us, n = step_savings(data, lambda e: e["dur"] / 2 if e["name"].startswith("ncclKernel_AllReduce") else 0.0)
    assert figures["amdahl_saving_ms"] == pytest.approx(saved_us / 1000, abs=1e-3 * n)
    assert figures["replayed_saving_ms"] == 0.0
    lost = [figures[f"lost_{part}_ms"] for part in ("overlap", "launch", "sync", "ranks")]
    assert sum(lost) == pytest.approx(figures["amdahl_saving_ms"], abs=1e-6)
    assert max(lost) == figures["lost_overlap_ms"]
    assert after["statement"] == (
        f"Replaying the trace with ncclKernel_AllReduce_RING_LL_Su… 2× faster shortens each step by 0 ms, not "
        f"{saved_us / 1000:.1f} ms: the targets run under other streams' work, which then sets the step; the exposed "
        "part of the work the targets run under (on the other streams) is where the effort belongs."
    )


def test_a_kernel_of_two_ranks_is_replayed_across_both(
    tmp_path: Path, fixture_bytes: Callable[[str], bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    """The target named as the measurement names it (one phase on the straggler, though the pattern finds two
    kernels in the run), made faster on every rank that runs it: Amdahl's saving is the rank that saves most's."""
    kernel = "void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1<"
    traces = []
    saved = []
    for i in (0, 1):
        name = f"trace_filter_sampled_rank-{i}.json.gz"
        data = fixture_bytes(f"real/pytorch/{name}")
        traces.append(tmp_path / name)
        traces[-1].write_bytes(data)
        saved.append(step_savings(data, lambda e: e["dur"] / 2 if e["name"].startswith(kernel) else 0.0)[1])
    path = tmp_path / "proposal.json"
    path.write_text(json.dumps({"target": "*cta_per_row_1*", "k": 2, "cost_weeks": 2}), encoding="utf-8")
    capsys.readouterr()
    main(["review", "--json", str(path), "--profile", str(traces[0]), "--profile", str(traces[1])])
    after = json.loads(capsys.readouterr().out)
    assert (after["verdict"], after["deciding_rule"]) == ("redirect", "replayed_saving")
    figures = finding(after, "replayed_saving")["figures"]
    assert figures["amdahl_saving_ms"] == pytest.approx(max(saved) / 1000, abs=2e-3)
    assert figures["replayed_saving_ms"] == 0.0


# -- generated traces ----------------------------------------------------------------------------------------------


def test_a_gpu_bound_serial_step_is_decided_as_amdahl_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 5-115, B 115-315 (the target), C 315-365 on one stream; the sync waits for C; the step is 0-375. B at 2x:
    the replay saves Amdahl's 100 µs exactly, so the verdict and every figure are Amdahl's."""
    b = TraceBuilder()
    b.launch(10, "A", 15, 100)
    b.launch(20, "B", 115, 200)
    b.launch(30, "C", 315, 50)
    b.call("cudaDeviceSynchronize", 40, 330)
    b.step(1, 0, 375)
    trace = tmp_path / "serial.json"
    trace.write_bytes(b.bytes())
    proposal = {"target": "B", "k": 2, "cost_weeks": 2}
    before = amdahl_only(proposal, trace)
    after = review(tmp_path, proposal, trace, capsys)
    assert after["verdict"] == before.verdict
    assert after["statement"] == before.statement
    figures = finding(after, "replayed_saving")["figures"]
    assert (figures["step_ms"], figures["amdahl_saving_ms"], figures["replayed_saving_ms"]) == pytest.approx(
        (0.375, 0.1, 0.1), abs=1e-9
    )
    assert figures["replay_share"] == 1.0
    assert finding(after, "replayed_saving")["effect"] == "info"
    assert after["amdahl"] == msgspec.to_builtins(before.amdahl)


def test_a_kernel_hidden_under_a_collective_is_declined_by_the_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """NCCL 15-415 on stream 20 and K 25-125 on stream 7; the sync waits for both; the step is 0-425. K is 25% of
    device activity, and Amdahl's share at 2x is worth funding; the replay saves nothing (K ends under the
    collective): redirected to the collective it runs under, 50 µs lost to overlap."""
    b = TraceBuilder()
    b.launch(10, "ncclKernel_AllReduce_RING_LL_Sum_float", 15, 400, stream=20)
    b.launch(20, "K", 25, 100)
    b.call("cudaDeviceSynchronize", 30, 390)
    b.step(1, 0, 425)
    trace = tmp_path / "hidden.json"
    trace.write_bytes(b.bytes())
    proposal = {"target": "K", "k": 2, "cost_weeks": 1}
    before = amdahl_only(proposal, trace)
    assert before.verdict in ("fund", "fund_if")
    after = review(tmp_path, proposal, trace, capsys)
    assert (after["verdict"], after["deciding_rule"]) == ("redirect", "replayed_saving")
    figures = finding(after, "replayed_saving")["figures"]
    assert (figures["amdahl_saving_ms"], figures["replayed_saving_ms"], figures["lost_overlap_ms"]) == pytest.approx(
        (0.05, 0.0, 0.05), abs=1e-9
    )
    assert figures["end_to_end_saving"] == 0.0
    assert after["statement"] == (
        "Replaying the trace with K 2× faster shortens each step by 0 ms, not 50 µs: the targets run under other "
        "streams' work, which then sets the step; the exposed part of the work the targets run under (on the other "
        "streams) is where the effort belongs."
    )


# -- who sets the replay -------------------------------------------------------------------------------------------

_REPLAY = {"steps": "ProfilerStep#1", "step_ms": 10.0, "amdahl_ms": 5.0, "predicted_ms": 5.0}


def test_a_clients_replay_is_refused_without_a_profile_and_replaced_with_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(msgspec.ValidationError, match="Expected no `replay`"):
        msgspec.convert({"target": "K", "p": 0.5, "k": 2, "replay": _REPLAY}, Proposal)
    path = tmp_path / "proposal.json"
    path.write_text(json.dumps({"target": "K", "p": 0.5, "k": 2, "profile_id": "t", "replay": _REPLAY}))
    assert main(["review", str(path)]) == 2
    assert "Expected no `replay`" in capsys.readouterr().err
    b = TraceBuilder()
    b.launch(10, "K", 15, 100)
    b.call("cudaDeviceSynchronize", 20, 100)
    b.step(1, 0, 125)
    trace = tmp_path / "t.json"
    trace.write_bytes(b.bytes())
    given = msgspec.convert({"target": "K", "k": 2, "profile_id": "t", "replay": _REPLAY}, Proposal)
    assert proposal_from_profile(given, load_profile([str(trace)], None)).replay is None


def test_a_range_of_k_keeps_amdahls_arithmetic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One replay answers one k: a range is judged as before, by Amdahl's share at its ends."""
    b = TraceBuilder()
    b.launch(10, "ncclKernel_AllReduce_RING_LL_Sum_float", 15, 400, stream=20)
    b.launch(20, "K", 25, 100)
    b.call("cudaDeviceSynchronize", 30, 390)
    b.step(1, 0, 425)
    trace = tmp_path / "hidden.json"
    trace.write_bytes(b.bytes())
    path = tmp_path / "proposal.json"
    path.write_text(json.dumps({"target": "K", "k": {"low": 1.5, "high": 2}, "cost_weeks": 1}), encoding="utf-8")
    capsys.readouterr()
    main(["review", "--json", str(path), "--profile", str(trace)])
    out, err = capsys.readouterr()
    assert all(f["rule"] != "replayed_saving" for f in json.loads(out)["findings"])
    assert err == (
        "worthit: the change is not replayed on the trace (k is a range, and one replay answers one k): Amdahl's "
        "share decides\n"
    )


def test_a_trace_without_steps_is_not_replayed_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = TraceBuilder()
    b.launch(10, "K", 15, 100)
    b.call("cudaDeviceSynchronize", 20, 100)
    trace = tmp_path / "nosteps.json"
    trace.write_bytes(b.bytes())
    path = tmp_path / "proposal.json"
    path.write_text(json.dumps({"target": "K", "k": 2, "cost_weeks": 1}), encoding="utf-8")
    capsys.readouterr()
    main(["review", "--json", str(path), "--profile", str(trace)])
    out, err = capsys.readouterr()
    assert all(f["rule"] != "replayed_saving" for f in json.loads(out)["findings"])
    assert err.startswith("worthit: the change is not replayed on the trace (nosteps.json marks no ProfilerStep#N")
    assert err.endswith("): Amdahl's share decides\n")


# -- the step a note speaks of ---------------------------------------------------------------------------------------


def _two_steps(last_kernel_end: int) -> bytes:
    """Steps 0-100 and 100-200, a kernel launched in each (the second's end given); the host's last call ends 190."""
    b = TraceBuilder()
    b.launch(10, "K", 20, 50)
    b.step(1, 0, 100)
    b.launch(110, "K", 120, last_kernel_end - 120)
    b.call("cudaDeviceSynchronize", 180, 10)
    b.step(2, 100, 200)
    return b.bytes()


def test_the_last_step_is_called_cut_short_only_when_its_device_work_is() -> None:
    """Left out by default either way; cut short only when work launched in it runs past the end of the host's
    recording (the kernel ends at 250, after the step's 200), complete when it ends inside (170)."""
    complete = read(_two_steps(170)).notes[0]
    assert complete.startswith("ProfilerStep#2, the last step, is left out: ")
    assert "cut short" not in complete
    assert "device work is complete" in complete
    assert "its device work is cut short" in read(_two_steps(250)).notes[0]
