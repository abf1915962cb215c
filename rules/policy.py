"""Policies: named, versioned sets of thresholds and prices (PRODUCT §6). Rules read thresholds only from here."""

from __future__ import annotations

import math
import re
from functools import cache
from importlib import resources
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from worthit.rules.errors import PolicyError
from worthit.rules.model import Verdict
from worthit.rules.names import NAME_PATTERN

__all__ = [
    "Gate",
    "NonNegative",
    "Policy",
    "PolicyName",
    "Share",
    "default_policy",
    "parse_policy",
    "policy_from_mapping",
]

PolicyName = Annotated[str, Meta(pattern=NAME_PATTERN)]
Share = Annotated[float, Meta(ge=0, le=1)]
NonNegative = Annotated[float, Meta(ge=0)]


class Gate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """How the PR review gate treats each verdict."""

    fail_on: list[Verdict] = msgspec.field(default_factory=lambda: ["remeasure", "redirect", "decline"])
    warn_on: list[Verdict] = msgspec.field(default_factory=lambda: ["fund_if"])
    missing_block: Literal["skip", "fail"] = "skip"


class Policy(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Every threshold and price a rule may read. Defaults mirror `rules/policies/default.toml`."""

    name: PolicyName
    version: Annotated[int, Meta(ge=1)] = 1
    description: str = ""
    noise_floor: Share = 0.01
    min_rate: NonNegative = 0.01
    non_kernel_share: Share = 0.2
    max_slips: Annotated[int, Meta(ge=0)] = 2
    gpu_hour_usd: NonNegative = 2.0
    engineer_week_usd: NonNegative = 5000.0
    horizon_months: Annotated[float, Meta(gt=0)] = 12.0
    maintenance_weeks_per_year: NonNegative = 2.0
    default_k: Annotated[float, Meta(gt=1)] = 10.0
    breakdown_tolerance: Share = 0.01
    max_unaccounted: Share = 0.25
    alternative_ratio: Annotated[float, Meta(ge=1)] = 2.0
    estimate_margin: Annotated[float, Meta(ge=1)] = 10.0
    calibrate: bool = False
    calibration_min_outcomes: Annotated[int, Meta(ge=1)] = 3
    calibration_max_ratio: Annotated[float, Meta(ge=1)] = 10.0
    # A breakdown this many times its step, or its step this many times it, is in another unit (unit_slip).
    unit_slip_ratio: Annotated[float, Meta(gt=1)] = 300.0
    # What a change is worth when it is not time on GPUs the company pays for (0: unpriced, said to be so)
    slo_met_usd_per_year: NonNegative = 0.0
    unowned_device_usd_per_year: NonNegative = 0.0
    port_weeks_per_generation: NonNegative = 4.0
    gate: Gate = msgspec.field(default_factory=Gate)

    def __post_init__(self) -> None:
        # TOML has `inf` and `nan`, JSON has 1e999: a threshold that is not a number makes every evaluation fail.
        for field in self.__struct_fields__:
            value = getattr(self, field)
            if type(value) is float and not math.isfinite(value):
                raise ValueError(f"Expected `{field}` to be a finite number, got {value}")


_AT = re.compile(r" - at `\$\.?(?P<path>[^`]*)`$")


def parse_policy(text: str | bytes, *, name: str | None = None, version: int | None = None) -> Policy:
    """Parse a policy from TOML; a malformed one raises `PolicyError` naming the key.

    `name` and `version`, when given, override what the file says (the store owns versions).
    """
    try:
        raw = msgspec.toml.decode(text)
    except msgspec.DecodeError as exc:
        raise PolicyError(f"Expected a TOML document: {exc}") from exc
    except RecursionError as exc:  # the TOML parser recurses once per level of nesting
        raise PolicyError("Expected a TOML document of policy keys, got one nested too deeply") from exc
    return policy_from_mapping(raw, name=name, version=version)


def policy_from_mapping(raw: object, *, name: str | None = None, version: int | None = None) -> Policy:
    """Validate a policy given as a mapping (decoded JSON or TOML), naming the offending key on error."""
    if not isinstance(raw, dict):
        raise PolicyError("Expected a table (object) of policy keys")
    raw = dict(raw)
    if name is not None:
        raw["name"] = name
    if version is not None:
        raw["version"] = version
    try:
        policy = msgspec.convert(raw, Policy)
        # What is stored is its JSON, read back on every evaluation: it must read back as this policy.
        return msgspec.json.decode(msgspec.json.encode(policy), type=Policy)
    except RecursionError as exc:
        raise PolicyError("Expected a table of policy keys, got values nested too deeply") from exc
    except msgspec.ValidationError as exc:
        message = str(exc)
        match = _AT.search(message)
        key = match.group("path") if match else ""
        if not key and (unknown := re.search(r"unknown field `([^`]+)`", message)):
            key = unknown.group(1)
        if not key and (named := re.match(r"Expected `([a-z_.]+)` ", message)):  # from __post_init__
            key = named.group(1)
        raise PolicyError(message, key=key) from exc


@cache
def default_policy() -> Policy:
    """The policy shipped in `rules/policies/default.toml`."""
    return parse_policy(resources.files("worthit.rules.policies").joinpath("default.toml").read_bytes())
