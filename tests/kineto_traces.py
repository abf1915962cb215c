"""Generated Kineto traces shaped like the real ones (../shared/fixtures/real/pytorch/): a rank of a data-parallel run.

Each ``ProfilerStep#N`` holds a host-to-device copy, `layers` forward layers (``aten::linear`` → ``aten::t``,
``aten::addmm`` → ``cudaLaunchKernel`` → a GEMM kernel, then an elementwise kernel whose name has braces), a memset,
and an NCCL all-reduce (``record_param_comms`` with ``Concrete Inputs`` strings holding brackets, braces and escaped
quotes, a ``nccl:all_reduce`` annotation, its kernel on the communication stream), with the flow events (``ac2g``)
Kineto writes between launches and kernels. ``distributedInfo`` names the rank.

The straggler is planted: a rank's kernels last `compute_scale` times the base, and every rank's all-reduce kernel
lasts `comm_ns` plus the time it waits for the slowest rank's compute (`lead_scale`), as a collective does.
Timestamps are µs with ns decimals, as newer Kineto writes them. Times are integers of ns underneath, so a test
can compute what a reader must find from the same parameters (`planted`) or from the JSON it decodes itself.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TextIO

T0 = 1_700_000_000_000_000_000  # ns on an epoch clock
STEP_GAP_NS = 20_000
GEMM = "ampere_sgemm_128x64_tn"
ELEMENTWISE = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar("
    "at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() "
    "const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, "
    "at::native::{lambda(float)#1}, at::detail::Array<char*, 2>)"
)
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
COPY = "Memcpy HtoD (Pageable -> Device)"


@dataclass(frozen=True)
class Shape:
    """What one rank's trace holds: its rank, the run's size, the steps and how long each part runs."""

    rank: int = 0
    world_size: int = 1
    steps: int = 4
    layers: int = 8
    gemm_ns: int = 40_000
    elementwise_ns: int = 6_000
    comm_ns: int = 30_000
    compute_scale: float = 1.0
    lead_scale: float = 1.0  # the slowest rank's compute_scale: every rank's collective waits for it
    seed: int = 0
    first_step: int = 1


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def _x(cat: str, name: str, pid: int | str, tid: int | str, start: int, dur: int, args: str) -> str:
    return (
        f'{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": {pid}, "tid": {tid}, '
        f'"ts": {_us(start)}, "dur": {_us(dur)}, "args": {{{args}}}}}'
    )


def _flow(ph: str, corr: int, pid: int, tid: int, at: int) -> str:
    bp = ', "bp": "e"' if ph == "f" else ""
    where = f'"pid": {pid}, "tid": {tid}, "ts": {_us(at)}'
    return f'{{"ph": "{ph}", "id": {corr}, {where}, "cat": "ac2g", "name": "ac2g"{bp}}}'


def step_ns(shape: Shape, scale: float | None = None) -> tuple[int, int, int]:
    """(gemm, elementwise, collective) kernel durations of a rank with `scale` (default its own)."""
    s = shape.compute_scale if scale is None else scale
    return round(shape.gemm_ns * s), round(shape.elementwise_ns * s), shape.comm_ns


def events(shape: Shape) -> Iterator[str]:
    """The trace's events as JSON texts, step after step."""
    for _, step in zip(range(shape.steps), _steps(shape), strict=False):
        yield from step


def _steps(shape: Shape) -> Iterator[list[str]]:
    """The events of each step, step after step, without end."""
    rnd = random.Random(shape.seed * 7919 + shape.rank)
    pid, main, comm_stream, stream = 4000 + shape.rank, 4001, 20, 7
    gemm, elementwise, _ = step_ns(shape)
    lead_gemm, lead_elementwise, _ = step_ns(shape, shape.lead_scale)
    corr = 1
    op_id = 1
    t = T0
    number = shape.first_step - 1
    while True:
        number += 1
        step_start = t
        out: list[str] = []
        host = t + 2_000
        device = t + 10_000
        # A host-to-device copy of the batch.
        out.append(_x("cpu_op", "aten::to", pid, main, host, 9_000, f'"External id": {op_id}, "Ev Idx": {op_id}'))
        out.append(_x("cpu_op", "aten::copy_", pid, main, host + 1_000, 7_000, f'"External id": {op_id + 1}'))
        out.append(_x("cuda_runtime", "cudaMemcpyAsync", pid, main, host + 2_000, 4_000, f'"correlation": {corr}'))
        out.append(_flow("s", corr, pid, main, host + 2_000))
        out.append(
            _x(
                "gpu_memcpy",
                COPY,
                0,
                stream,
                device,
                3_000,
                f'"device": 0, "stream": {stream}, "correlation": {corr}, "bytes": 4194304',
            )
        )
        out.append(_flow("f", corr, 0, stream, device))
        corr, op_id, host, device = corr + 1, op_id + 2, host + 10_000, device + 3_000 + 1_000
        for layer in range(shape.layers):
            dims = rnd.choice(("[[64, 1024], [1024, 1024], [1024]]", "[[64, 4096], [4096, 1024], [1024]]"))
            out.append(
                _x(
                    "cpu_op",
                    "aten::linear",
                    pid,
                    main,
                    host,
                    30_000,
                    f'"External id": {op_id}, "Record function id": {op_id}, "Input Dims": {dims}, '
                    f'"Input type": ["float", "float", "float"], "Ev Idx": {layer}',
                )
            )
            out.append(_x("cpu_op", "aten::t", pid, main, host + 1_000, 3_000, f'"External id": {op_id + 1}'))
            out.append(_x("cpu_op", "aten::addmm", pid, main, host + 5_000, 20_000, f'"External id": {op_id + 2}'))
            for kernel, dur in ((GEMM, gemm), (ELEMENTWISE, elementwise)):
                launch = host + 6_000 if kernel == GEMM else host + 16_000
                out.append(
                    _x(
                        "cuda_runtime",
                        "cudaLaunchKernel",
                        pid,
                        main,
                        launch,
                        5_000,
                        f'"External id": {op_id + 2}, "cbid": 211, "correlation": {corr}',
                    )
                )
                out.append(_flow("s", corr, pid, main, launch))
                out.append(
                    _x(
                        "kernel",
                        kernel,
                        0,
                        stream,
                        device,
                        dur,
                        f'"External id": {op_id + 2}, "queued": 0, "device": 0, "context": 1, "stream": {stream}, '
                        f'"correlation": {corr}, "registers per thread": 128, "shared memory": 16384, '
                        f'"grid": [{rnd.randint(1, 512)}, 1, 1], "block": [256, 1, 1], "est. achieved occupancy %": 50',
                    )
                )
                out.append(_flow("f", corr, 0, stream, device))
                corr += 1
                device += dur + 1_000
            op_id += 3
            host += 32_000
        # A memset between the layers and the collective.
        out.append(_x("cuda_runtime", "cudaMemsetAsync", pid, main, host, 3_000, f'"correlation": {corr}'))
        out.append(
            _x("gpu_memset", "Memset (Device)", 0, stream, device, 1_000, f'"stream": {stream}, "correlation": {corr}')
        )
        corr, host, device = corr + 1, host + 4_000, device + 2_000
        # The all-reduce: it ends when the slowest rank's compute has ended, so a faster rank waits inside it.
        wait = shape.layers * ((lead_gemm - gemm) + (lead_elementwise - elementwise))
        comm = shape.comm_ns + wait
        inputs = '["", "[[1024, 1024]]", "{\\"group\\": [0, 1]}", "\\"sum\\" ]}{["]'
        out.append(
            _x(
                "cpu_op",
                "record_param_comms",
                pid,
                main,
                host,
                8_000,
                f'"External id": {op_id}, "Collective name": "allreduce", "Process Group Ranks": "[0, 1]", '
                f'"Concrete Inputs": {inputs}, "Group size": {shape.world_size}',
            )
        )
        out.append(_x("user_annotation", "nccl:all_reduce", pid, main, host + 500, 7_000, f'"External id": {op_id}'))
        out.append(
            _x(
                "cuda_runtime",
                "cudaLaunchKernel",
                pid,
                main,
                host + 1_000,
                5_000,
                f'"External id": {op_id}, "cbid": 211, "correlation": {corr}',
            )
        )
        out.append(
            _x(
                "kernel",
                NCCL,
                0,
                comm_stream,
                device,
                comm,
                f'"device": 0, "stream": {comm_stream}, "correlation": {corr}, "Collective name": "allreduce", '
                f'"In msg nelems": 1048576, "Group size": {shape.world_size}, "dtype": "Float"',
            )
        )
        corr, op_id, host = corr + 1, op_id + 1, host + 10_000
        end = max(host, device + comm) + 5_000
        out.insert(
            0,
            _x(
                "user_annotation",
                f"ProfilerStep#{number}",
                pid,
                main,
                step_start,
                end - step_start,
                f'"External id": {op_id}',
            ),
        )
        op_id += 1
        yield out
        t = end + STEP_GAP_NS - (end - step_start) % 1000


def write(out: TextIO, shape: Shape, *, megabytes: float | None = None) -> int:
    """Write the trace to `out` (`megabytes` of it: steps repeat until then); the number of steps written."""
    out.write(
        '{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {"id": 0, "name": "NVIDIA A100-SXM4-80GB", '
        '"totalGlobalMem": 85100068864, "computeMajor": 8, "computeMinor": 0}\n  ],\n'
        f'  "distributedInfo": {{"backend": "nccl", "rank": {shape.rank}, "world_size": {shape.world_size}}},\n'
        '  "traceEvents": [\n'
    )
    target = None if megabytes is None else int(megabytes * 1e6)
    written = steps = 0
    for step in _steps(shape):
        chunk = ("  " if steps == 0 else ",\n  ") + ",\n  ".join(step)
        out.write(chunk)
        written += len(chunk)
        steps += 1
        if (target is None and steps >= shape.steps) or (target is not None and written >= target):
            break
    out.write('\n  ],\n  "traceName": "generated", "displayTimeUnit": "ms", "baseTimeNanoseconds": 0\n}\n')
    return steps


__all__ = ["Shape", "events", "step_ns", "write"]
