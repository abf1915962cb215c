"""Generated Kineto traces shaped like the real ones (../shared/fixtures/real/pytorch/): a rank of a data-parallel run.

Each ``ProfilerStep#N`` holds a host-to-device copy, `layers` forward layers (``aten::linear`` → ``aten::t``,
``aten::addmm`` → ``cudaLaunchKernel`` → a GEMM kernel, then an elementwise kernel whose name has braces), a memset,
and an NCCL all-reduce (``record_param_comms`` with ``Concrete Inputs`` strings holding brackets, braces and escaped
quotes, a ``nccl:all_reduce`` annotation, its kernel on the communication stream), with the flow events (``ac2g``)
Kineto writes between launches and kernels. ``distributedInfo`` names the rank.

With `training` a step is a training step as Kineto records one (as in ``nccl_parser_config_nccl_data.json.gz``):
after the forward layers, each layer's backward runs on the autograd thread (``autograd::engine::evaluate_function:
AddmmBackward0`` → ``AddmmBackward0`` → two ``aten::mm``, each launching a GEMM), tied to its forward ``aten::addmm``
by ``Sequence number``, ``Fwd thread id`` and a ``fwdbwd`` flow, and every CPU op and annotation is numbered in order
by ``Ev Idx``. `id_base` is where the process-wide counters (correlation, External id) stood when the profiler's
first active step began, and `correlation_stride` how far the correlation moves from one recorded call to the next:
CUPTI numbers every CUDA API call of the process, Kineto keeps the launches, copies and memsets, so a real trace's
correlations start far from 1 and leave gaps (``nccl_parser_config_nccl_data.json.gz``: 8,740 calls over
19,762-64,889; the two ``trace_filter`` ranks start at 6,935,929). `write(..., megabytes=...)` keeps `steps` and grows
`layers` to reach the size: real traces hold a few long steps, not thousands of short ones.

The straggler is planted: a rank's kernels last `compute_scale` times the base, and every rank's all-reduce kernel
lasts `comm_ns` plus the time it waits for the slowest rank's compute (`lead_scale`), as a collective does.
Timestamps are µs with ns decimals, as newer Kineto writes them. Times are integers of ns underneath, so a test
can compute what a reader must find from the same parameters (`planted`) or from the JSON it decodes itself.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
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
    training: bool = False  # a backward pass on the autograd thread, fwdbwd flows, Ev Idx on every CPU op
    id_base: int = 0  # correlations and External ids already used by the process before the first step
    correlation_stride: int = 1  # CUDA API calls CUPTI numbers per call Kineto keeps (about 5 in the real files)


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def _x(cat: str, name: str, pid: int | str, tid: int | str, start: int, dur: int, args: str) -> str:
    return (
        f'{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": {pid}, "tid": {tid}, '
        f'"ts": {_us(start)}, "dur": {_us(dur)}, "args": {{{args}}}}}'
    )


def _flow(ph: str, corr: int, pid: int, tid: int, at: int, cat: str = "ac2g") -> str:
    bp = ', "bp": "e"' if ph == "f" else ""
    where = f'"pid": {pid}, "tid": {tid}, "ts": {_us(at)}'
    return f'{{"ph": "{ph}", "id": {corr}, {where}, "cat": "{cat}", "name": "{cat}"{bp}}}'


def step_ns(shape: Shape, scale: float | None = None) -> tuple[int, int, int]:
    """(gemm, elementwise, collective) kernel durations of a rank with `scale` (default its own)."""
    s = shape.compute_scale if scale is None else scale
    return round(shape.gemm_ns * s), round(shape.elementwise_ns * s), shape.comm_ns


def events(shape: Shape) -> Iterator[str]:
    """The trace's events as JSON texts, step after step."""
    for step in events_by_step(shape):
        yield from step


def events_by_step(shape: Shape) -> Iterator[list[str]]:
    """The events of each of the trace's steps."""
    yield from (step for _, step in zip(range(shape.steps), _steps(shape), strict=False))


def _steps(shape: Shape) -> Iterator[list[str]]:
    """The events of each step, step after step, without end."""
    rnd = random.Random(shape.seed * 7919 + shape.rank)
    pid, main, autograd, comm_stream, stream = 4000 + shape.rank, 4001, 4002, 20, 7
    gemm, elementwise, _ = step_ns(shape)
    lead_gemm, lead_elementwise, _ = step_ns(shape, shape.lead_scale)
    corr = 1 + shape.id_base
    op_id = 1 + shape.id_base
    ev_idx = flow = sequence = 0
    t = T0
    number = shape.first_step - 1

    def idx(untrained: str = "") -> str:
        """The `Ev Idx` argument: Kineto's running count of CPU events when training, else what `untrained` says."""
        nonlocal ev_idx
        if not shape.training:
            return untrained
        ev_idx += 1
        return f', "Ev Idx": {ev_idx - 1}'

    while True:
        number += 1
        step_start = t
        step_idx = idx()  # Kineto numbers the step's annotation before the ops it holds
        out: list[str] = []
        host = t + 2_000
        device = t + 10_000
        forward: list[tuple[int, int]] = []  # each layer's (Sequence number, its aten::addmm's start)
        # A host-to-device copy of the batch.
        out.append(
            _x("cpu_op", "aten::to", pid, main, host, 9_000, f'"External id": {op_id}' + idx(f', "Ev Idx": {op_id}'))
        )
        out.append(_x("cpu_op", "aten::copy_", pid, main, host + 1_000, 7_000, f'"External id": {op_id + 1}' + idx()))
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
        corr, op_id, host, device = corr + shape.correlation_stride, op_id + 2, host + 10_000, device + 3_000 + 1_000
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
                    f'"Input type": ["float", "float", "float"]' + idx(f', "Ev Idx": {layer}'),
                )
            )
            out.append(_x("cpu_op", "aten::t", pid, main, host + 1_000, 3_000, f'"External id": {op_id + 1}' + idx()))
            addmm = f'"External id": {op_id + 2}' + idx()
            if shape.training:
                sequence += 1
                forward.append((sequence, host + 5_000))
                addmm += f', "Sequence number": {sequence}, "Fwd thread id": 0'
            out.append(_x("cpu_op", "aten::addmm", pid, main, host + 5_000, 20_000, addmm))
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
                corr += shape.correlation_stride
                device += dur + 1_000
            op_id += 3
            host += 32_000
        if shape.training:
            # The backward pass, last layer first, on the autograd thread; each op tied to its forward op.
            grad = host
            for sequence_number, forward_at in reversed(forward):
                flow += 1
                out.append(_flow("s", flow, pid, main, forward_at, "fwdbwd"))
                tie = f'"Sequence number": {sequence_number}, "Fwd thread id": 1'
                out.append(
                    _x(
                        "cpu_op",
                        "autograd::engine::evaluate_function: AddmmBackward0",
                        pid,
                        autograd,
                        grad,
                        40_000,
                        f'"External id": {op_id}, "Record function id": {op_id}, {tie}' + idx(),
                    )
                )
                out.append(
                    _x(
                        "cpu_op",
                        "AddmmBackward0",
                        pid,
                        autograd,
                        grad + 1_000,
                        37_000,
                        f'"External id": {op_id + 1}, {tie}' + idx(),
                    )
                )
                out.append(_flow("f", flow, pid, autograd, grad + 1_000, "fwdbwd"))
                for half in (0, 1):
                    start = grad + 2_000 + half * 17_000
                    out.append(
                        _x(
                            "cpu_op",
                            "aten::mm",
                            pid,
                            autograd,
                            start,
                            16_000,
                            f'"External id": {op_id + 2 + half}' + idx(),
                        )
                    )
                    out.append(
                        _x(
                            "cuda_runtime",
                            "cudaLaunchKernel",
                            pid,
                            autograd,
                            start + 2_000,
                            5_000,
                            f'"External id": {op_id + 2 + half}, "cbid": 211, "correlation": {corr}',
                        )
                    )
                    out.append(_flow("s", corr, pid, autograd, start + 2_000))
                    out.append(
                        _x(
                            "kernel",
                            GEMM,
                            0,
                            stream,
                            device,
                            gemm,
                            f'"External id": {op_id + 2 + half}, "queued": 0, "device": 0, "context": 1, '
                            f'"stream": {stream}, "correlation": {corr}, "registers per thread": 128, '
                            f'"shared memory": 16384, "grid": [{rnd.randint(1, 512)}, 1, 1], "block": [256, 1, 1], '
                            '"est. achieved occupancy %": 50',
                        )
                    )
                    out.append(_flow("f", corr, 0, stream, device))
                    corr += shape.correlation_stride
                    device += gemm + 1_000
                op_id += 4
                grad += 42_000
            host = max(host, grad)
        # A memset between the layers and the collective.
        out.append(_x("cuda_runtime", "cudaMemsetAsync", pid, main, host, 3_000, f'"correlation": {corr}'))
        out.append(
            _x("gpu_memset", "Memset (Device)", 0, stream, device, 1_000, f'"stream": {stream}, "correlation": {corr}')
        )
        corr, host, device = corr + shape.correlation_stride, host + 4_000, device + 2_000
        # The all-reduce: it ends when the slowest rank's compute has ended, so a faster rank waits inside it.
        backward = 2 * (lead_gemm - gemm) if shape.training else 0
        wait = shape.layers * ((lead_gemm - gemm) + (lead_elementwise - elementwise) + backward)
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
                f'"Concrete Inputs": {inputs}, "Group size": {shape.world_size}' + idx(),
            )
        )
        out.append(
            _x("user_annotation", "nccl:all_reduce", pid, main, host + 500, 7_000, f'"External id": {op_id}' + idx())
        )
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
        corr, op_id, host = corr + shape.correlation_stride, op_id + 1, host + 10_000
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
                f'"External id": {op_id}' + step_idx,
            ),
        )
        op_id += 1
        yield out
        t = end + STEP_GAP_NS - (end - step_start) % 1000


def layers_for(shape: Shape, megabytes: float) -> int:
    """How many layers each of `shape.steps` steps needs for the trace to come to about `megabytes` MB."""
    one, two = (sum(len(e) + 4 for e in next(_steps(replace(shape, layers=n)))) for n in (1, 2))
    per_layer, fixed = two - one, 2 * one - two
    return max(1, round((megabytes * 1e6 / shape.steps - fixed) / per_layer))


def write(out: TextIO, shape: Shape, *, megabytes: float | None = None) -> int:
    """Write the trace to `out` (with `megabytes`, as many layers as its `steps` need to reach that size, as a real
    trace of that size holds a few long steps); the number of layers a step holds."""
    out.write(
        '{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {"id": 0, "name": "NVIDIA A100-SXM4-80GB", '
        '"totalGlobalMem": 85100068864, "computeMajor": 8, "computeMinor": 0}\n  ],\n'
        f'  "distributedInfo": {{"backend": "nccl", "rank": {shape.rank}, "world_size": {shape.world_size}}},\n'
        '  "traceEvents": [\n'
    )
    if megabytes is not None:
        shape = replace(shape, layers=layers_for(shape, megabytes))
    separator = "  "
    for step in events_by_step(shape):
        for event in step:
            out.write(separator)
            out.write(event)
            separator = ",\n  "
    out.write('\n  ],\n  "traceName": "generated", "displayTimeUnit": "ms", "baseTimeNanoseconds": 0\n}\n')
    return shape.layers


__all__ = ["Shape", "events", "events_by_step", "layers_for", "step_ns", "write"]
