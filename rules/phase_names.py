"""What a phase's name says, read alike by the profile readers and the engine: a kernel's kind from its name, and the
prefix of a folded phase that stands for many.

A leaf: the readers (rules/profiles) and the engine's proposal and context both import it, so neither imports the
other for it.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["REST_PREFIX", "KernelKind", "kernel_kind"]

KernelKind = Literal["kernel", "comm"]
"""A device kernel's kind: communication (collectives, point-to-point) or compute."""

# NCCL/RCCL kernels (ncclKernel_…, ncclDevKernel_…, rccl_main_kernel) and collectives named by what they do. HTA
# classifies by `^nccl.*Kernel`; the wider net also catches RCCL and kernels that carry the collective's name.
_COMM_RE = re.compile(
    r"nccl|rccl|\b(?:all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|send_?recv)\w*kernel", re.IGNORECASE
)


def kernel_kind(name: str) -> KernelKind:
    """Kind of a device kernel from its name: communication (NCCL, RCCL, collectives) → comm, the rest → kernel."""
    return "comm" if _COMM_RE.search(name) else "kernel"


REST_PREFIX = "(the rest: "
"""How a phase that sums many others begins ("(the rest: 48,977 kernel phases)"): a bounded breakdown's fold
(rules/profiles/fold.py) writes it; the engine's `is_aggregate` reads it to never offer one as a target."""
