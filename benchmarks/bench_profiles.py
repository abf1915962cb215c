"""Benchmark the profile readers against a plain parse of the same file.

    python benchmarks/bench_profiles.py [--rows 1000000] [--torch-mb 100] [--keep DIR]

Generates, in a temporary directory, a rocprofv3 kernel_trace.csv (current header, ~150 bytes a row, four
queues with overlapping kernels) and a PyTorch-profiler-shaped Chrome trace. Each case runs in its own
subprocess so peak memory (its VmHWM) is its own. The peers are what a performance engineer would run instead:
the ten-line pandas script (read_csv of the three columns, groupby, a numpy interval union per kernel and over
all) on the same bytes in memory, and HolisticTraceAnalysis loading the trace. One line per case: seconds,
peak RSS, and both as ratios to the peer measured in the same run. Needs the `bench` extra (pandas, HTA).
No assertions: this reports, it does not gate.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
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

PANDAS_SCRIPT = """
import io
import numpy as np
import pandas as pd

def union(s, e):
    s, e = np.sort(s), np.sort(e)
    return int(e[-1] - s[0] - np.clip(s[1:] - e[:-1], 0, None).sum())

df = pd.read_csv(io.BytesIO(data), usecols=["Kernel_Name", "Start_Timestamp", "End_Timestamp"])
per_kernel = {
    name: (union(g["Start_Timestamp"].to_numpy(), g["End_Timestamp"].to_numpy()), len(g))
    for name, g in df.groupby("Kernel_Name")
}
busy = union(df["Start_Timestamp"].to_numpy(), df["End_Timestamp"].to_numpy())
"""

HTA_SCRIPT = """
import logging, os
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_dir=os.path.dirname(PATH))
"""

# Each case: (input, code, preload). With preload the file's bytes are in `data` before the clock starts (both
# sides of the CSV comparison parse the same bytes in memory); without, the code reads PATH itself, as HTA does.
CASES: dict[str, tuple[str, str, bool]] = {
    "rocprofv3 kernel trace: pandas + numpy script": ("csv", PANDAS_SCRIPT, True),
    "rocprofv3 kernel trace: worthit": ("csv", "from worthit.rules.profiles import read_any\nb = read_any(data)", True),
    "pytorch trace: HolisticTraceAnalysis load": ("json", HTA_SCRIPT, False),
    "pytorch trace: worthit": (
        "json",
        "from worthit.rules.profiles import read_any\nb = read_any(open(PATH, 'rb').read())",
        False,
    ),
}
BASELINE = {"csv": "rocprofv3 kernel trace: pandas + numpy script", "json": "pytorch trace: HolisticTraceAnalysis load"}

# The peak is the process's own high-water mark (VmHWM), not ru_maxrss: Linux carries ru_maxrss over from the parent
# across fork and exec, so a benchmark process that had just generated a 1 GB trace (600 MB) set every case's floor.
RUNNER = """
import sys, time
sys.path.insert(0, {root!r})
PATH = {path!r}

def high_water():
    with open('/proc/self/status') as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith('VmHWM:'))

data = open(PATH, 'rb').read() if {preload!r} else b''
before = high_water()
t = time.perf_counter()
exec(compile({code!r}, 'case', 'exec'))
elapsed = time.perf_counter() - t
peak = high_water()
print(elapsed, before, peak)
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


#: The steps of a generated PyTorch trace (ProfilerStep#5-#9).
REPLAY_STEPS = 5


def make_torch_trace(path: Path, megabytes: float) -> Path:
    """A trace of one training rank of about `megabytes` MB, shaped like the real Kineto files
    (../shared/fixtures/real/pytorch/, tests/kineto_traces.py): five long ProfilerSteps (#5-#9, as after a profiler
    schedule's wait and warmup steps) whose layers grow with the size, nested CPU ops on the main and autograd
    threads, fwdbwd and launch flows, GEMM and elementwise kernels, a copy, a memset and an NCCL all-reduce each step.
    Correlations leave the gaps real ones do and start where the four steps before the first left them."""
    sys.path.insert(0, str(ROOT))
    from tests.kineto_traces import Shape, layers_for, write

    shape = Shape(steps=REPLAY_STEPS, first_step=5, training=True, correlation_stride=5)
    layers = layers_for(shape, megabytes)
    # Correlations a step uses: a copy, four GEMM or elementwise launches a layer, a memset, the all-reduce.
    ids_per_step = (4 * layers + 3) * shape.correlation_stride
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as out:
        write(out, replace(shape, id_base=(shape.first_step - 1) * ids_per_step), megabytes=megabytes)
    return path


def make_inputs(where: Path, rows: int, torch_mb: int) -> dict[str, Path]:
    """The kernel trace and the PyTorch trace, the latter alone in its folder (HTA loads a folder)."""
    (where / "torch").mkdir(parents=True, exist_ok=True)
    inputs = {"csv": where / "kernel_trace.csv", "json": where / "torch" / "rank-0.json"}
    make_kernel_trace(inputs["csv"], rows)
    make_torch_trace(inputs["json"], torch_mb)
    return inputs


def run_case(code: str, path: Path, preload: bool = True, timeout: float | None = None) -> tuple[float, int, int]:
    """Seconds, RSS before the clock starts, and peak RSS of one case in a fresh interpreter."""
    script = RUNNER.format(root=str(ROOT), path=str(path), code=code, preload=preload)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=timeout)
    elapsed, before, peak = done.stdout.split()
    return float(elapsed), int(before), int(peak)


STREAM_CODE = """
from worthit.rules.profiles.kineto import chunks_of, read_stream
with open(PATH, 'rb') as handle:
    b = read_stream(chunks_of(handle))
"""
STREAM_JOBS_CODE = """
from worthit.service.profiles.ranks import load_run
b = load_run([PATH], None, None, jobs=2, show=False)
"""
HTA_TIMEOUT_S = 900


def run_streaming(where: Path, big_mb: float, peer_mb: float) -> dict[str, tuple[float, int, int, int]]:
    """The streaming reader on a `big_mb` trace (in one process, then over --jobs 2), and HTA's load of the largest
    of `peer_mb`, 2/5 and 1/5 of it, 1 and 0.5 MB that it finishes within HTA_TIMEOUT_S (it holds the whole trace in
    pandas frames), with the streaming reader on the same file. Name → (seconds, peak RSS, file bytes, 0).

    HTA failed on the traces generated before at 25 and 10 MB, not for their size: it seeds `index_correlation` with
    the `correlation` column downcast to the smallest integer type that holds it, then writes row numbers into it,
    and pandas 3 refuses the int16 it got from correlations numbered 1, 2, 3, ... (under 32,768) once the rows went
    past 32,767. Real correlations start far from 1 and leave gaps (see make_torch_trace), so they are int32."""
    big = make_torch_trace(where / "big" / "rank-0.json", big_mb)
    out: dict[str, tuple[float, int, int, int]] = {}
    elapsed, _, peak = run_case(STREAM_CODE, big, False)
    out["worthit streaming"] = (elapsed, peak, big.stat().st_size, 0)
    elapsed, _, peak = run_case(STREAM_JOBS_CODE, big, False)
    out["worthit streaming, --jobs 2"] = (elapsed, peak, big.stat().st_size, 0)
    big.unlink()
    for size in dict.fromkeys((peer_mb, peer_mb * 0.4, peer_mb * 0.2, 1.0, 0.5)):
        small = make_torch_trace(where / f"peer-{size:g}" / "rank-0.json", size)
        try:
            elapsed, _, peak = run_case(HTA_SCRIPT, small, False, timeout=HTA_TIMEOUT_S)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            print(f"HolisticTraceAnalysis on {size:g} MB: did not finish ({type(exc).__name__})", file=sys.stderr)
            continue
        out["HolisticTraceAnalysis load"] = (elapsed, peak, small.stat().st_size, 0)
        elapsed, _, peak = run_case(STREAM_CODE, small, False)
        out["worthit streaming, peer's size"] = (elapsed, peak, small.stat().st_size, 0)
        break
    return out


REPLAY_TARGETS = ("ampere*", "kind:comm", "kind:copy", "*elementwise*", "memset")
REPLAY_CODE = f"""
from worthit.rules.profiles.kineto import Target, chunks_of, prepare, read_schedule_stream, what_if
with open(PATH, 'rb') as handle:
    schedule = read_schedule_stream(chunks_of(handle))
prepared = prepare([schedule])
for pattern in {REPLAY_TARGETS!r}:
    what_if(prepared, [Target(pattern=pattern, k=2.0)])
"""


def run_replay(where: Path, megabytes: float) -> tuple[float, int, int]:
    """A generated trace of `megabytes` MB read into a schedule (streamed), its dependency order built and five
    what-ifs replayed (REPLAY_TARGETS at 2x): seconds, peak RSS and the file's bytes."""
    path = make_torch_trace(where / "replay" / "rank-0.json", megabytes)
    elapsed, _, peak = run_case(REPLAY_CODE, path, False)
    size = path.stat().st_size
    path.unlink()
    return elapsed, peak, size


# HolisticTraceAnalysis 0.5.0 (the PyPI release) calls ``DataFrame.drop(axis=1, columns=[...])`` in its critical path,
# which pandas 3 refuses ("Cannot specify both 'axis' and 'index'/'columns'"); pandas 2 let the columns win. The
# shim below gives HTA pandas 2's reading of that call (the axis ignored when index or columns name what to drop) in
# its own subprocess alone, so the peer runs on the pandas the bench extra installs, as its load case does.
HTA_CRITICAL_PATH_SCRIPT = """
import logging, os, warnings
logging.disable(logging.WARNING)
warnings.filterwarnings("ignore")
import pandas as pd
_drop = pd.DataFrame.drop
def _pandas2_drop(self, labels=None, *, axis=0, index=None, columns=None, **kwargs):
    if index is not None or columns is not None:
        return _drop(self, labels, index=index, columns=columns, **kwargs)
    return _drop(self, labels, axis=axis, **kwargs)
pd.DataFrame.drop = _pandas2_drop
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_dir=os.path.dirname(PATH))
graph, ok = analysis.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=(0, STEPS - 1))
assert ok, "critical_path_analysis failed"
"""


def run_replay_vs_hta(where: Path, megabytes: float) -> dict[str, tuple[float, int, int]]:
    """On one generated trace of `megabytes` MB: worthit's replay (read, order built, five what-ifs) and
    HolisticTraceAnalysis's load and ``critical_path_analysis`` over the same five steps, each in its own
    subprocess. Name → (seconds, peak RSS, file bytes); HTA is left out when it fails or runs past HTA_TIMEOUT_S."""
    path = make_torch_trace(where / "replay-peer" / "rank-0.json", megabytes)
    size = path.stat().st_size
    out: dict[str, tuple[float, int, int]] = {}
    elapsed, _, peak = run_case(REPLAY_CODE, path, False)
    out["worthit"] = (elapsed, peak, size)
    try:
        elapsed, _, peak = run_case(
            HTA_CRITICAL_PATH_SCRIPT.replace("STEPS", str(REPLAY_STEPS)), path, False, timeout=HTA_TIMEOUT_S
        )
        out["HolisticTraceAnalysis"] = (elapsed, peak, size)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        detail = exc.stderr[-300:] if isinstance(exc, subprocess.CalledProcessError) else ""
        print(f"HolisticTraceAnalysis critical path on {megabytes:g} MB: failed ({type(exc).__name__}) {detail}")
    path.unlink()
    return out


def replay_real() -> list[tuple[str, int, float]]:
    """Each shared real PyTorch trace with a device timeline replayed as recorded: its name, the largest difference
    between a replayed and a measured step (ns), and the share of the step the model explains without residuals in
    the step farthest from 1 (empty when ../shared is absent)."""
    sys.path.insert(0, str(ROOT))
    from tests.fixtures import fixtures_dir
    from worthit.rules.profiles.errors import ProfileError
    from worthit.rules.profiles.kineto import Target, read_schedule, what_if

    out = []
    for path in sorted((fixtures_dir() / "real" / "pytorch").glob("*.json.gz")):
        try:
            w = what_if([read_schedule(path.read_bytes(), path.name)], [Target(pattern="*", k=1.0)])
        except ProfileError:  # no device timeline: nothing to replay
            continue
        error = max(abs(s.replayed_ns - s.measured_ns) for s in w.steps)
        worst = max((s.explained_ns / s.measured_ns for s in w.steps), key=lambda x: abs(x - 1))
        out.append((path.name, error, worst))
    return out


def run_ranks(where: Path, ranks: int, jobs: int) -> tuple[float, float, int]:
    """A generated run of `ranks` ranks (rank 7 the straggler): seconds for `worthit profile --summary --jobs` over
    all of them, seconds to combine the summaries, and the summaries' total bytes."""
    sys.path.insert(0, str(ROOT))
    from tests.kineto_traces import Shape, write

    traces = where / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in range(ranks):
        path = traces / f"rank-{rank:03d}.json"
        with path.open("w") as out:
            shape = Shape(rank=rank, world_size=ranks, steps=5, layers=16, lead_scale=1.25)
            write(out, Shape(**{**shape.__dict__, "compute_scale": 1.25 if rank == 7 else 1.0}))
        paths.append(str(path))
    worthit = [sys.executable, "-m", "worthit.service.cli"]
    started = time.perf_counter()
    subprocess.run(
        [*worthit, "profile", "--summary", "--jobs", str(jobs), "-o", str(where / "run"), *paths],
        check=True,
        capture_output=True,
    )
    mapped = time.perf_counter() - started
    summaries = sorted(str(p) for p in (where / "run").glob("*.summary.json"))
    started = time.perf_counter()
    subprocess.run([*worthit, "profile", "--json", *summaries], check=True, capture_output=True)
    combined = time.perf_counter() - started
    return mapped, combined, sum(Path(p).stat().st_size for p in summaries)


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
        inputs = make_inputs(where, args.rows, args.torch_mb)
        measured: dict[str, tuple[float, int, int]] = {}
        for name, (kind, code, preload) in CASES.items():
            path = inputs[kind]
            size = path.stat().st_size
            elapsed, _, peak = measured[name] = run_case(code, path, preload)
            base = measured.get(BASELINE[kind])
            ratio = (
                f"time {elapsed / base[0]:5.2f}x, peak {peak / base[2]:4.2f}x"
                if base and name != BASELINE[kind]
                else "baseline"
            )
            print(
                f"{name:<46} file {size / 1e6:7.1f} MB  time {elapsed:6.2f} s  peak RSS {peak / 1e6:7.1f} MB  {ratio}"
            )


if __name__ == "__main__":
    main()
