"""replayed_saving — judge a change measured on a trace by what the replay of that trace says it saves.

What it checks: a proposal measured on a PyTorch trace carries the change replayed on the trace's own schedule
(`Proposal.replay`, set by worthit from the profile: host threads, launches, streams, syncs and ranks, with the
targets k times faster). The run's saving every check reads is then the replayed one (`Context.replay_share`).
When the replay saves materially less per step than Amdahl's share of the same steps (by more than 1% of it, or
1 µs), this rule says by how much and why (the largest of the losses to overlap, launch, sync and ranks); when that
leaves the run's saving under the noise floor and the value of the work does not carry it, it redirects to the
target the replay finds instead (the host's launch work, the exposed part of a collective, the straggler), or
declines where it names none. When the replay delivers Amdahl's share, it says so (info).

Why it matters: Amdahl's arithmetic assumes the target runs alone on the step's critical path. Real steps are not
serial: a kernel hides under a collective on another stream, the GPU idles while the host enqueues the next
kernels, a sync serialises host and device, a rank waits for the slowest. On such a step a faster kernel saves
nothing, and funding it on Amdahl's share spends the money on a saving the schedule cannot deliver.

Example: ResNet-50, the cuDNN dgrad kernel 2× faster: Amdahl's share promises 6.7 ms of each 174.8 ms step; the
replay saves 0 ms, since the GPU waits on the host for 76.9 ms of each step: redirect to the host's launch work.
"""

from __future__ import annotations

import math

from worthit.rules.context import Context
from worthit.rules.examples import Example
from worthit.rules.model import Figure, Finding, Range, Replay
from worthit.rules.text import join, k_text, ms, saves

ID = "replayed_saving"
STAGE = "worth"

_RESNET_REPLAY = {
    "steps": "ProfilerStep#5..ProfilerStep#10",
    "step_ms": 174.829,
    "amdahl_ms": 168.1,
    "predicted_ms": 174.829,
    "lost_ms": {"launch": 5.607, "sync": 1.122},
    "reason": "the GPU waits on the host for 76.889 ms of each 174.829 ms step",
    "better_target": "the host's launch work (CUDA graphs, fusion or fewer, larger kernels)",
}
_RESNET = {
    "target": "dgrad",
    "p": 0.1337,
    "p_end_to_end": 0.0748,
    "k": 2,
    "cost_weeks": 4,
    "profile_id": "resnet50.pt.trace.json.gz",
    "scope": {"measured": "device_activity"},
    "flags": {"fleet_gpus": 512},
}

EXAMPLES = (
    Example(
        {**_RESNET, "replay": _RESNET_REPLAY},
        fires=True,
        verdict="redirect",
        decision="redirect",
        figures={
            "replayed_saving_ms": 0.0,
            "amdahl_saving_ms": 6.729,
            "end_to_end_saving": 0.0,
            "lost_launch_ms": 5.607,
        },
    ),
    Example(
        {**_RESNET, "replay": {**_RESNET_REPLAY, "better_target": None}},
        fires=True,
        verdict="decline",
    ),
    Example(
        # Half of Amdahl's saving still clears the noise floor (3.74% · 0.5 of the run): said, not opposed.
        {**_RESNET, "replay": {**_RESNET_REPLAY, "predicted_ms": 171.4645}},
        fires=True,
        figures={"end_to_end_saving": 0.0187, "replay_share": 0.5},
    ),
    Example(
        # The replay delivers Amdahl's saving (a GPU-bound serial step): said, and the verdict is Amdahl's.
        {**_RESNET, "replay": {**_RESNET_REPLAY, "predicted_ms": 168.1, "lost_ms": {}, "better_target": None}},
        fires=True,
        figures={"replay_share": 1.0, "end_to_end_saving": 0.0374},
    ),
    Example(_RESNET, fires=False),
)


def check(ctx: Context) -> Finding | None:
    """The replayed saving against Amdahl's: the same (info), or less, said with why and where the time is."""
    replay = ctx.proposal.replay
    if replay is None:
        return None
    amdahl_ms, saving_ms = replay.amdahl_saving_ms, replay.saving_ms
    short = amdahl_ms - saving_ms > max(1e-3, amdahl_ms / 100)
    run, floor = ctx.run_saving, ctx.policy.noise_floor
    opposes = short and run < floor and not ctx.worth.clears
    if ctx.verdict_only and not opposes:
        return None  # an info: nobody reads its sentence where only the verdict is asked
    figures: dict[str, Figure] = {
        "step_ms": replay.step_ms,
        "amdahl_saving_ms": amdahl_ms,
        "replayed_saving_ms": saving_ms,
        "replay_share": ctx.replay_share,
        "end_to_end_saving": run,
        "lost_overlap_ms": replay.lost_ms.overlap,
        "lost_launch_ms": replay.lost_ms.launch,
        "lost_sync_ms": replay.lost_ms.sync,
        "lost_ranks_ms": replay.lost_ms.ranks,
    }
    figures["steps"] = replay.steps
    # The step is named by its length (the reason says it) and its numbers are in `steps`: a statement holds 300
    # characters, and a kernel's name takes a sixth of them.
    what = f"Replaying the trace with {ctx.target} {_k(ctx)}"
    if not short:
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"{what} shortens each {ms(replay.step_ms)} step ({replay.steps}) by {ms(saving_ms)}, as "
            "Amdahl's share says: nothing on the trace's schedule hides or delays it.",
        )
    head = f"{what} shortens each step by {ms(max(saving_ms, 0.0))}, not {ms(amdahl_ms)}{_why(replay)}"
    if not opposes:
        return Finding(
            rule=ID,
            effect="info",
            figures=figures,
            message=f"{head}; on the replayed saving the change {saves(run, ' of the run')}{_losses(replay)}.",
        )
    if replay.better_target is None:
        return Finding(
            rule=ID,
            effect="opposes",
            verdict="decline",
            figures=figures,
            message=f"{head}, so the change {saves(run, ' of the run')}{_losses(replay)}.",
        )
    figures["better_target"] = replay.better_target
    return Finding(
        rule=ID,
        effect="opposes",
        verdict="redirect",
        figures=figures,
        message=f"{head}; {replay.better_target} is where the effort belongs.",
    )


def _k(ctx: Context) -> str:
    """The speedup the replay ran at: the proposal's own k (one value: a range is never replayed)."""
    k = ctx.proposal.k
    if isinstance(k, Range):
        return k_text(ctx.given_k)
    return k_text(math.inf if isinstance(k, str) else k)


def _why(replay: Replay) -> str:
    return f": {replay.reason}" if replay.reason else ""


def _losses(replay: Replay) -> str:
    """` (lost to launch 5.6 ms and sync 1.1 ms)`: the losses that count, in the replay's fixed order."""
    lost = replay.lost_ms
    parts = [
        f"{name} {ms(value)}"
        for name, value in (
            ("overlap", lost.overlap),
            ("launch", lost.launch),
            ("sync", lost.sync),
            ("ranks", lost.ranks),
        )
        if abs(value) >= 1e-3
    ]
    return f" (lost to {join(parts)})" if parts else ""
