"""Benchmark the profile readers against a plain parse of the same file.

    python benchmarks/bench_profiles.py [--rows 1000000] [--torch-mb 100] [--keep DIR]

Generates, in a temporary directory, a rocprofv3 kernel_trace.csv (current header, ~150 bytes a row, four
queues with overlapping kernels) and a PyTorch-profiler-shaped Chrome trace. Each case runs in its own
subprocess so peak memory (ru_maxrss) is its own: the file's bytes are loaded first, then the parse is
timed. One line per case: seconds, ratio to the plain parse, peak RSS, and peak RSS over file size.
No assertions: this reports, it does not gate.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEADER = (
    '"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id",'
    '"Start_Timestamp","End_Timestamp","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count",'
    '"Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"\n'
)
KERNELS = (
    '"void addition_kernel<float>(float*, float const*, float const*, int, int)"',
    '"subtract_kernel(float*, float const*, float const*, int, int)"',
    '"Cijk_Alik_Bljk_SB_MT64x16x32_MI16x16x1_SN_1LDSB0"',
    '"void at::native::vectorized_elementwise_kernel<4>(int)"',
    '"multiply_kernel(float*, float const*, int)"',
)

# Each case: code run in a fresh interpreter with `data` (the file's bytes) already loaded.
CASES: dict[str, tuple[str, str]] = {
    "rocprofv3 kernel trace: csv.reader": (
        "csv",
        "import csv, io\nfor row in csv.reader(io.TextIOWrapper(io.BytesIO(data), encoding='utf-8', newline='')): pass",
    ),
    "rocprofv3 kernel trace: worthit": (
        "csv",
        "from rules.profiles import read_any\nb = read_any(data)",
    ),
    "pytorch trace: msgspec (untyped)": ("json", "import msgspec\nobj = msgspec.json.decode(data)"),
    "pytorch trace: json.loads": ("json", "import json\nobj = json.loads(data)"),
    "pytorch trace: worthit": ("json", "from rules.profiles import read_any\nb = read_any(data)"),
}
BASELINE = {"csv": "rocprofv3 kernel trace: csv.reader", "json": "pytorch trace: msgspec (untyped)"}

RUNNER = """
import resource, sys, time
sys.path.insert(0, {root!r})
data = open({path!r}, 'rb').read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
exec(compile({code!r}, 'case', 'exec'))
elapsed = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(elapsed, before * 1024, peak * 1024)
"""


def make_kernel_trace(path: Path, rows: int) -> None:
    """A kernel trace of `rows` dispatches over four queues; kernels on different queues overlap."""
    rnd = random.Random(7)
    t = 8_819_330_200_067_564
    with path.open("w") as out:
        out.write(HEADER)
        for i in range(rows):
            t += rnd.randint(200, 3000)
            duration = rnd.randint(1000, 12000)
            queue = i % 4 + 1
            out.write(
                f'"KERNEL_DISPATCH",1,{queue},{queue},69,{i + 1},{16 + i % 5},{KERNELS[i % 5]},{1451 + i},'
                f"{t},{t + duration},0,0,64,0,32,64,1,1,1024,1024,1\n"
            )


def make_torch_trace(path: Path, megabytes: int) -> None:
    """A Kineto-shaped trace of about `megabytes` MB: steps of nested cpu_ops, runtime calls and kernels."""
    rnd = random.Random(11)
    with path.open("w") as out:
        out.write('{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [\n')
        t = 1_694_039_968_955_744
        step = 0
        first = True
        while out.tell() < megabytes * 1_000_000:
            step += 1
            events = [
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": f"ProfilerStep#{step}",
                    "pid": 1,
                    "tid": 1,
                    "ts": t,
                    "dur": 5000,
                    "args": {"External id": step},
                }
            ]
            cursor = t + 10
            for op in range(40):
                events.append(
                    {
                        "ph": "X",
                        "cat": "cpu_op",
                        "name": "aten::linear",
                        "pid": 1,
                        "tid": 1,
                        "ts": cursor,
                        "dur": 100,
                        "args": {"External id": op, "Ev Idx": op},
                    }
                )
                events.append(
                    {
                        "ph": "X",
                        "cat": "cpu_op",
                        "name": "aten::addmm",
                        "pid": 1,
                        "tid": 1,
                        "ts": cursor + 10,
                        "dur": 80,
                        "args": {"External id": op, "Ev Idx": op},
                    }
                )
                events.append(
                    {
                        "ph": "X",
                        "cat": "cuda_runtime",
                        "name": "cudaLaunchKernel",
                        "pid": 1,
                        "tid": 1,
                        "ts": cursor + 20,
                        "dur": 8,
                        "args": {"correlation": op, "cbid": 211},
                    }
                )
                events.append(
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": "ampere_sgemm_32x32_sliced1x4_tn",
                        "pid": 0,
                        "tid": 7,
                        "ts": cursor + 30,
                        "dur": rnd.randint(20, 200),
                        "args": {"device": 0, "stream": 7, "correlation": op, "grid": [1, 2, 3]},
                    }
                )
                events.append(
                    {
                        "ph": "f",
                        "id": op,
                        "pid": 0,
                        "tid": 7,
                        "ts": cursor + 30,
                        "cat": "ac2g",
                        "name": "ac2g",
                        "bp": "e",
                    }
                )
                cursor += 120
            for event in events:
                out.write(("" if first else ",\n") + json.dumps(event))
                first = False
            t += 5100
        out.write('\n], "traceName": "bench"}\n')


def run_case(code: str, path: Path) -> tuple[float, int, int]:
    script = RUNNER.format(root=str(ROOT), path=str(path), code=code)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    elapsed, before, peak = done.stdout.split()
    return float(elapsed), int(before), int(peak)


def main() -> None:
    """Generate the inputs, run every case, print one line per case."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="kernel trace rows (default 1,000,000)")
    parser.add_argument("--torch-mb", type=int, default=100, help="PyTorch trace size in MB (default 100)")
    parser.add_argument("--keep", type=Path, help="write the inputs here and keep them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        inputs = {"csv": where / "kernel_trace.csv", "json": where / "trace.json"}
        make_kernel_trace(inputs["csv"], args.rows)
        make_torch_trace(inputs["json"], args.torch_mb)
        times: dict[str, float] = {}
        for name, (kind, code) in CASES.items():
            path = inputs[kind]
            size = path.stat().st_size
            elapsed, before, peak = run_case(code, path)
            times[name] = elapsed
            base = times.get(BASELINE[kind])
            ratio = f"{elapsed / base:5.2f}x" if base else "  -  "
            print(
                f"{name:<38} file {size / 1e6:7.1f} MB  time {elapsed:6.2f} s  ratio {ratio}  "
                f"peak RSS {peak / 1e6:7.1f} MB ({peak / size:4.2f}x file; {(peak - before) / 1e6:6.1f} MB above "
                "the loaded file)"
            )


if __name__ == "__main__":
    main()
