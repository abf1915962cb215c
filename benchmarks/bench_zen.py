"""worthit's engine against GoRules Zen's Python engine (`zen-engine`, the `bench` extra), in one process, interleaved.

The peer is what a team would write in Zen for the same core decision: one decision graph (JDM) of an input node,
one expression node computing the Amdahl figures of PRODUCT §2 (saving, speedup, saving in ms, the return per
engineer-week, the GPUs a fleet frees) and one first-hit decision table mapping saving and rate to a verdict and the
rule that decides it (the default policy's 1% noise floor and 1%-of-the-step-per-week return), then the output node.
It knows nothing of scopes, breakdowns, barriers, ranges or wording; worthit runs all of its checks and writes its
statement and reasoning, so the ratio says what the whole engine costs against the smallest useful Zen graph.

Both sides start from the same proposal's JSON bytes and end with JSON bytes: worthit decodes into `Proposal`,
evaluates and encodes the `Evaluation`; Zen is handed the same proposal (its `p` and `k` ranges resolved to the
point worthit evaluates, the midpoint, because the graph reads numbers), parses it itself, evaluates, and its
result is encoded with msgspec. The two are timed in alternating slices of the same run, in CPU time of the whole
process (Zen's engine runs part of each call on threads of its own, which this counts): on a loaded machine wall
time mostly measures the scheduler, and it moved the ratio between 0.5x and 3x from one run to the next. The figures
are proposals per CPU-second, medians over the slices.

A third contender runs in the same slices: decoding each proposal and encoding its answer, computed beforehand, and
nothing else. It is the floor of any engine that takes this proposal and gives this answer in JSON, so its ratio to
Zen bounds what any engine could reach against Zen here, whatever it decides in between.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from worthit.rules.engine import evaluate
from worthit.rules.model import Proposal
from worthit.rules.policy import default_policy

NOISE_FLOOR = 0.01
MIN_RATE = 0.01
"""The default policy's thresholds (rules/policies/default.toml), written into the table as a Zen user would."""

GRAPH: dict[str, Any] = {
    "contentType": "application/vnd.gorules.decision",
    "nodes": [
        {"id": "request", "type": "inputNode", "name": "proposal", "position": {"x": 0, "y": 0}},
        {
            "id": "figures",
            "type": "expressionNode",
            "name": "amdahl",
            "position": {"x": 250, "y": 0},
            "content": {
                "passThrough": False,
                "expressions": [
                    {"id": "saving", "key": "saving", "value": "p * (1 - 1 / k)"},
                    {"id": "speedup", "key": "speedup", "value": "1 / ((1 - p) + p / k)"},
                    {"id": "ceiling", "key": "ceiling_speedup", "value": "p < 1 ? 1 / (1 - p) : null"},
                    {"id": "ms", "key": "saving_ms", "value": "baseline_ms != null ? baseline_ms * $.saving : null"},
                    {"id": "new", "key": "new_ms", "value": "baseline_ms != null ? baseline_ms - $.saving_ms : null"},
                    {
                        "id": "rate",
                        "key": "rate",
                        "value": "cost_weeks != null and cost_weeks > 0 ? $.saving / cost_weeks : null",
                    },
                    {
                        "id": "gpus",
                        "key": "gpus_freed",
                        "value": "flags.fleet_gpus != null ? flags.fleet_gpus * $.saving : 0",
                    },
                ],
            },
        },
        {
            "id": "table",
            "type": "decisionTableNode",
            "name": "verdict",
            "position": {"x": 500, "y": 0},
            "content": {
                "hitPolicy": "first",
                "passThrough": True,
                "inputs": [
                    {"id": "in_saving", "name": "Saving", "field": "saving"},
                    {"id": "in_rate", "name": "Rate", "field": "rate"},
                    {"id": "in_gpus", "name": "GPUs freed", "field": "gpus_freed"},
                ],
                "outputs": [
                    {"id": "out_verdict", "name": "Verdict", "field": "verdict"},
                    {"id": "out_rule", "name": "Rule", "field": "deciding_rule"},
                ],
                "rules": [
                    {
                        "_id": "fleet",
                        "in_saving": "",
                        "in_rate": "",
                        "in_gpus": ">= 1",
                        "out_verdict": "'fund'",
                        "out_rule": "'fleet_multiplication'",
                    },
                    {
                        "_id": "noise",
                        "in_saving": f"< {NOISE_FLOOR}",
                        "in_rate": "",
                        "in_gpus": "",
                        "out_verdict": "'decline'",
                        "out_rule": "'noise_floor'",
                    },
                    {
                        "_id": "rate",
                        "in_saving": "",
                        "in_rate": f"< {MIN_RATE}",
                        "in_gpus": "",
                        "out_verdict": "'decline'",
                        "out_rule": "'rate_of_return'",
                    },
                    {
                        "_id": "fund",
                        "in_saving": "",
                        "in_rate": "",
                        "in_gpus": "",
                        "out_verdict": "'fund'",
                        "out_rule": "'amdahl'",
                    },
                ],
            },
        },
        {"id": "response", "type": "outputNode", "name": "decision", "position": {"x": 750, "y": 0}},
    ],
    "edges": [
        {"id": "e1", "sourceId": "request", "targetId": "figures", "type": "edge"},
        {"id": "e2", "sourceId": "figures", "targetId": "table", "type": "edge"},
        {"id": "e3", "sourceId": "table", "targetId": "response", "type": "edge"},
    ],
}


def zen_context(body: bytes) -> bytes:
    """The proposal as Zen is handed it: the same JSON, with a range of `p` or `k` resolved to its midpoint."""
    proposal = json.loads(body)
    for name in ("p", "k"):
        value = proposal.get(name)
        if isinstance(value, dict):
            proposal[name] = (value["low"] + value["high"]) / 2
    return json.dumps(proposal, separators=(",", ":")).encode()


@dataclass
class Versus:
    worthit: float
    """Proposals per CPU-second, median over the slices."""
    zen: float
    ratio: float
    """Median of each slice pair's worthit/Zen ratio."""
    slices: int
    floor: float
    """Proposals per CPU-second of what any engine with this contract pays before it decides anything: decoding the
    proposal and encoding its answer (each proposal's own evaluation, computed beforehand)."""
    floor_ratio: float
    """Median of each slice's floor/Zen ratio: the most any engine answering in this JSON could reach against Zen."""


def measure(proposals: list[bytes], seconds: float, slice_seconds: float = 0.25) -> Versus:
    """Both engines over `proposals`, `seconds` of CPU each in all, in alternating slices of `slice_seconds`."""
    import zen  # the bench extra: imported here so that the module loads without it

    policy = default_policy()
    decoder = msgspec.json.Decoder(Proposal)
    encoder = msgspec.json.Encoder()
    decision = zen.ZenEngine().create_decision(json.dumps(GRAPH))
    contexts = [zen_context(body) for body in proposals]

    def ours() -> None:
        for body in proposals:
            encoder.encode(evaluate(decoder.decode(body), policy))

    def theirs() -> None:
        for context in contexts:
            encoder.encode(decision.evaluate(context)["result"])

    answers = [evaluate(decoder.decode(body), policy) for body in proposals]

    def floor() -> None:
        for body, answer in zip(proposals, answers, strict=True):
            decoder.decode(body)
            encoder.encode(answer)

    def rate(work: Callable[[], None]) -> float:
        count, started = 0, time.process_time()
        while (elapsed := time.process_time() - started) < slice_seconds:
            work()
            count += len(proposals)
        return count / elapsed

    for work in (ours, theirs, floor):  # warm all three: first calls compile and fill caches
        rate(work)
    rounds = []
    for index in range(max(2, round(seconds / slice_seconds))):
        order = (ours, theirs, floor) if index % 2 == 0 else (floor, theirs, ours)
        measured = {work: rate(work) for work in order}
        rounds.append((measured[ours], measured[theirs], measured[floor]))
    return Versus(
        worthit=statistics.median(a for a, _, _ in rounds),
        zen=statistics.median(b for _, b, _ in rounds),
        ratio=statistics.median(a / b for a, b, _ in rounds),
        slices=len(rounds),
        floor=statistics.median(c for _, _, c in rounds),
        floor_ratio=statistics.median(c / b for _, b, c in rounds),
    )


def verdicts(proposals: list[bytes]) -> list[tuple[str, str]]:
    """Each proposal's verdict by worthit and by the Zen graph, to show what each side decides (not timed)."""
    import zen

    decision = zen.ZenEngine().create_decision(json.dumps(GRAPH))
    policy = default_policy()
    decoder = msgspec.json.Decoder(Proposal)
    return [
        (evaluate(decoder.decode(body), policy).verdict, decision.evaluate(zen_context(body))["result"]["verdict"])
        for body in proposals
    ]
