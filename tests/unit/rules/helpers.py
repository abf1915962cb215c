"""Small helpers for the rule tests: evaluate a proposal given as JSON-like data, find a rule's finding."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from worthit.rules.engine import evaluate
from worthit.rules.model import Evaluation, Finding, Proposal
from worthit.rules.policy import default_policy, policy_from_mapping

SEED_BREAKDOWN: list[dict[str, Any]] = [
    {"name": "gemm_qkv", "ms": 34},
    {"name": "attention_softmax", "ms": 21},
    {"name": "matmul_out", "ms": 12},
    {"name": "layernorm", "ms": 6},
    {"name": "elementwise_gelu", "ms": 4},
    {"name": "H2D copy", "ms": 18, "kind": "copy"},
    {"name": "host gaps", "ms": 5, "kind": "host"},
]


def review(raw: dict[str, Any], **policy: Any) -> Evaluation:
    """Evaluate a proposal decoded as the API would, under the default policy with `policy` overrides."""
    base = default_policy()
    chosen = policy_from_mapping({**msgspec.to_builtins(base), **policy}) if policy else base
    return evaluate(msgspec.convert(raw, Proposal), chosen)


def finding(evaluation: Evaluation, rule: str) -> Finding:
    found = [f for f in evaluation.findings if f.rule == rule]
    assert found, f"{rule} did not fire: {[f.rule for f in evaluation.findings]}"
    return found[0]


def fired(evaluation: Evaluation) -> set[str]:
    return {f.rule for f in evaluation.findings}


_SECOND_SENTENCE = re.compile(r"[.!?]\s+[A-Z]")


def assert_one_sentence(text: str) -> None:
    """One sentence a reviewer can read out: ends with a period, no sentence break inside, ≤ 300 chars, a figure."""
    assert text.endswith("."), text
    assert not _SECOND_SENTENCE.search(text[:-1]), text
    assert "\n" not in text, text
    assert len(text) <= 300, (len(text), text)
    assert any(ch.isdigit() for ch in text), text
