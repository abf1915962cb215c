"""Check the replay's what-if on a GPU: profile a slow program, predict the fast one's step, run the fast one.

    python benchmarks/gpu/what_if.py [--out DIR] [--k 2] [--steps 5] [--results-md benchmarks/RESULTS.md]

Each program's target is a kernel of known duration: ``torch.cuda._sleep(cycles)`` (Kineto names it
``spin_kernel``) against ``cycles / k``, in four shapes:

- ``main``: on the main stream between GEMMs, the step ending with a device synchronize (GPU-bound: Amdahl holds);
- ``hidden``: on the main stream while a longer GEMM chain runs on a side stream that the step waits for (the
  replay should predict little or no saving);
- ``launch``: a launch-bound loop of tiny kernels, one of them the sleep (the GPU waits for the host);
- ``item``: before an ``.item()`` that follows host work three times the slow sleep (the host sets the step);

plus one real pair: FP32 GEMMs with TF32 off (slow) and on (fast), the target the GEMM kernels and k the ratio of
their measured device time.

For each: the slow program is profiled (``torch.profiler`` with ``cuda_sync`` events where the PyTorch build has
them), its trace replayed with the target k times faster (`what_if`), the fast program profiled, and the predicted
step set beside the fast program's measured step and Amdahl's. Traces are kept gzipped in --out (default
benchmarks/.work/gpu, ignored by git; a few steps each, small enough to copy into tests/data as fixtures); the
table goes to --out/what_if.md and, with --results-md, replaces the section of that file headed ``## GPU what-if``.
Without a CUDA device it says so and exits 2.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib
import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from worthit.rules.profiles.kineto import Target, read_schedule, what_if

SECTION = "## GPU what-if"
SLEEP = "*spin_kernel*"


def main() -> int:
    """Run every shape; 2 when there is no GPU."""
    args = _parser().parse_args()
    try:
        # Imported here, by name: where torch is absent the script must still run to say it needs a GPU.
        torch = importlib.import_module("torch")
    except ImportError:
        print("what_if.py needs PyTorch with CUDA and a GPU: torch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("what_if.py needs a CUDA GPU: torch.cuda.is_available() is False", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cycles_per_us = _calibrate(torch)
    rows = []
    for shape in ("main", "hidden", "launch", "item"):
        rows.append(_sleep_case(torch, shape, args.k, cycles_per_us, args.steps, out))
    rows.append(_tf32_case(torch, args.steps, out))
    table = _table(rows, torch)
    (out / "what_if.md").write_text(table)
    (out / "what_if.json").write_text(json.dumps(rows, indent=1))
    print(table)
    if args.results_md:
        _replace_section(Path(args.results_md), table)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / ".work" / "gpu"), help="traces and results")
    parser.add_argument("--k", type=float, default=2.0, help="how many times faster the fast sleep is")
    parser.add_argument("--steps", type=int, default=5, help="profiled steps per program")
    parser.add_argument("--results-md", help="replace this file's GPU what-if section with the table")
    return parser


def _calibrate(torch: Any) -> float:
    """Sleep cycles per µs on this GPU (median of three timed 20 ms sleeps)."""
    cycles = 20_000_000
    rates = []
    for _ in range(3):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        torch.cuda.synchronize()
        rates.append(cycles / (start.elapsed_time(end) * 1000))
    return float(sorted(rates)[1])


def _program(torch: Any, shape: str, sleep_us: float, cycles_per_us: float, host_us: float) -> Callable[[], None]:
    """One step of `shape` with a sleep of `sleep_us` (and, for ``item``, `host_us` of host work: the same in the
    slow and the fast program, which differ in the sleep alone)."""
    cycles = max(1, int(sleep_us * cycles_per_us))
    a = torch.randn(2048, 2048, device="cuda")
    tiny = torch.zeros(16, device="cuda")
    side = torch.cuda.Stream()

    def main_step() -> None:
        b = a @ a
        torch.cuda._sleep(cycles)
        c = b @ a
        torch.cuda.synchronize()
        del c

    def hidden_step() -> None:
        done = torch.cuda.Event()
        with torch.cuda.stream(side):
            b = a
            for _ in range(12):  # far longer than the sleep
                b = b @ a
            done.record(side)
        torch.cuda._sleep(cycles)
        torch.cuda.current_stream().wait_event(done)
        torch.cuda.synchronize()
        del b

    def launch_step() -> None:
        for i in range(200):
            tiny.add_(1)
            if i == 100:
                torch.cuda._sleep(cycles)
        torch.cuda.synchronize()

    def item_step() -> None:
        torch.cuda._sleep(cycles)
        deadline = time.perf_counter() + host_us / 1e6
        while time.perf_counter() < deadline:
            pass
        tiny.sum().item()

    return {"main": main_step, "hidden": hidden_step, "launch": launch_step, "item": item_step}[shape]


def _profile(torch: Any, step: Callable[[], None], steps: int, path: Path) -> Path:
    """Profile `steps` active steps of `step` (after one wait and one warm-up) into a gzipped Chrome trace."""
    profiler = torch.profiler
    kwargs: dict[str, Any] = {}
    config = getattr(profiler, "_ExperimentalConfig", None)
    # An older build without cuda_sync events: the replay infers what each synchronize waits on.
    if config is not None:
        with contextlib.suppress(TypeError):
            kwargs["experimental_config"] = config(enable_cuda_sync_events=True)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    raw = path.with_suffix("")
    with profiler.profile(
        activities=[profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.CUDA],
        # One cycle: a second would start recording again and export a partial trace over this one at exit.
        schedule=profiler.schedule(wait=1, warmup=1, active=steps, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(raw)),
        **kwargs,
    ) as prof:
        for _ in range(steps + 3):
            step()
            prof.step()
    with raw.open("rb") as src, gzip.open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    raw.unlink()
    return path


def _replay(path: Path, pattern: str, k: float) -> dict[str, Any]:
    w = what_if([read_schedule(path.read_bytes(), path.name)], [Target(pattern=pattern, k=k)])
    return {
        "measured_ns": w.measured_ns,
        "replayed_ns": w.replayed_ns,
        "predicted_ns": w.predicted_ns,
        "amdahl_ns": w.amdahl_ns,
        "explained_share": w.explained_share,
        "lost_ns": {"overlap": w.lost_ns.overlap, "launch": w.lost_ns.launch, "sync": w.lost_ns.sync},
        "target_ns": sum(t.device_ns for t in w.targets),
        "notes": w.notes,
    }


def _sleep_case(torch: Any, shape: str, k: float, cycles_per_us: float, steps: int, out: Path) -> dict[str, Any]:
    sleep_us = {"main": 2000.0, "hidden": 1000.0, "launch": 20.0, "item": 2000.0}[shape]
    host_us = 3 * sleep_us  # the item shape's host work: three times the slow sleep, in both programs
    slow_step = _program(torch, shape, sleep_us, cycles_per_us, host_us)
    fast_step = _program(torch, shape, sleep_us / k, cycles_per_us, host_us)
    slow = _profile(torch, slow_step, steps, out / f"{shape}_slow.json.gz")
    fast = _profile(torch, fast_step, steps, out / f"{shape}_fast.json.gz")
    predicted = _replay(slow, SLEEP, k)
    measured = _replay(fast, SLEEP, 1.0)
    return _row(shape, SLEEP, k, predicted, measured)


def _tf32_case(torch: Any, steps: int, out: Path) -> dict[str, Any]:
    a = torch.randn(4096, 4096, device="cuda")

    def step() -> None:
        b = a @ a
        c = b @ a
        torch.cuda.synchronize()
        del c

    torch.backends.cuda.matmul.allow_tf32 = False
    slow = _profile(torch, step, steps, out / "tf32_off.json.gz")
    torch.backends.cuda.matmul.allow_tf32 = True
    fast = _profile(torch, step, steps, out / "tf32_on.json.gz")
    torch.backends.cuda.matmul.allow_tf32 = False
    pattern = "kind:kernel"
    # k: the ratio of the GEMMs' device time, measured on the two traces themselves.
    k = _replay(slow, pattern, 1.0)["target_ns"] / max(1, _replay(fast, pattern, 1.0)["target_ns"])
    predicted = _replay(slow, pattern, max(1.0, k))
    measured = _replay(fast, pattern, 1.0)
    return _row("tf32", pattern, k, predicted, measured)


def _row(shape: str, pattern: str, k: float, predicted: dict[str, Any], measured: dict[str, Any]) -> dict[str, Any]:
    fast = measured["measured_ns"]
    return {
        "shape": shape,
        "target": pattern,
        "k": k,
        "slow_ns": predicted["measured_ns"],
        "identity_error_ns": predicted["replayed_ns"] - predicted["measured_ns"],
        "explained_share": predicted["explained_share"],
        "predicted_ns": predicted["predicted_ns"],
        "amdahl_ns": predicted["amdahl_ns"],
        "fast_measured_ns": fast,
        "replay_error": (predicted["predicted_ns"] - fast) / fast if fast else None,
        "amdahl_error": (predicted["amdahl_ns"] - fast) / fast if fast else None,
        "lost_ns": predicted["lost_ns"],
        "notes": predicted["notes"],
    }


def _table(rows: list[dict[str, Any]], torch: Any) -> str:
    lines = [
        SECTION,
        "",
        f"`benchmarks/gpu/what_if.py` on {torch.cuda.get_device_name()} (PyTorch {torch.__version__}): each slow "
        "program profiled, its step predicted with the target k times faster, the fast program profiled; step times "
        "are means over the profiled steps, ms.",
        "",
        "| shape | target | k | slow | predicted | Amdahl | fast, measured | replay error | Amdahl error | explained |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['shape']} | `{r['target']}` | {r['k']:.2f} | {r['slow_ns'] / 1e6:.3f} | "
            f"{r['predicted_ns'] / 1e6:.3f} | {r['amdahl_ns'] / 1e6:.3f} | {r['fast_measured_ns'] / 1e6:.3f} | "
            f"{_pct(r['replay_error'])} | {_pct(r['amdahl_error'])} | {100 * r['explained_share']:.1f}% |"
        )
    return "\n".join(lines) + "\n"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def _replace_section(path: Path, table: str) -> None:
    text = path.read_text() if path.exists() else ""
    start = text.find(SECTION)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + table
    else:
        following = text.find("\n## ", start + len(SECTION))
        text = text[:start] + table + (text[following + 1 :] if following >= 0 else "")
    path.write_text(text)


if __name__ == "__main__":
    raise SystemExit(main())
