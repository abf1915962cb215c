"""`make bench`: every speed figure beside a baseline measured in the same run, as a ratio; writes RESULTS.md.

    python benchmarks/run.py [--quick] [--seconds 8] [--workers 1,2] [--no-postgres] [--engine-only]

Cases (each baseline is measured here, now, on this machine, so the ratios survive a slower or busier machine):
- engine: proposals evaluated per second through every rule (decode, evaluate, encode), against a msgspec decode and
  encode of the same payload alone, the floor for any per-request work;
- engine against GoRules Zen (bench_zen.py): the same proposals through worthit and through a Zen decision graph of
  one expression node (the Amdahl figures) and one decision table (saving and rate to a verdict), in alternating
  slices of one run, in CPU time, medians; the target is 5x Zen;
- HTTP: `POST /v1/evaluate` and `POST /v1/decisions` on SQLite, then `POST /v1/decisions` on PostgreSQL, each
  against a bare `GET /healthz` on the same server and worker count, driven by wrk (another process) at 32
  connections: req/s, p50, p99; with 1 worker, then with 2 (the image's setting on this 2-core machine);
- in process: decode + evaluate, and decode + evaluate + store (bench_inprocess.py), as CPU per call against the
  bare GET's server time per request, and a paragraph under the table that says where the time goes;
- profiles: a 1,000,000-row rocprofv3 kernel trace against the pandas script a performance engineer would write
  (read_csv, groupby, a numpy interval union), and a 100 MB PyTorch trace against HolisticTraceAnalysis loading it
  (time and peak memory; both peers come with the `bench` extra);
- streaming: a generated 1 GB PyTorch trace read in one pass (MB/s, peak RSS), in one process and over --jobs 2,
  HolisticTraceAnalysis' load of the largest of 100, 40, 20, 1 and 0.5 MB of the same shape that it finishes beside
  it, and worthit on that one too (the generated traces hold five long training steps, as real ones do: on thousands
  of short steps HTA's load was some forty times slower, which measured the input, not the peer);
- ranks: a generated 512-rank run mapped to per-rank summaries with `--jobs 2` (time per rank) and combined;
- replay: a generated 1 GB PyTorch trace read into a schedule, its dependency order built and five what-ifs
  replayed (time and peak RSS); the same on 100 MB beside HolisticTraceAnalysis's load and `critical_path_analysis`
  of the same five steps, each in its own subprocess (`--replay-only` runs these alone and prints them);
- Slack: p99 of signed slash commands from 32 concurrent clients against the 3-second limit;
- start-up (bench_startup.py): `worthit --version` and `worthit review proposal.json`, whole processes, median of 9,
  against `python -c pass` on the same interpreter;
- the image (bench_image.py, when podman is installed): its size against its base image's, and `podman run` to a
  ready `/readyz` against `worthit serve` started the same way on the host.
No assertions: this reports, it does not gate (nothing in `make test` depends on timing).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import msgspec

from benchmarks import bench_image, bench_inprocess, bench_profiles, bench_slack, bench_startup, bench_zen
from benchmarks.proposals import PROPOSALS
from tests.harness import POSTGRES_URL, admin, postgres_answers, start_server
from worthit.rules.engine import evaluate
from worthit.rules.model import Proposal
from worthit.rules.policy import default_policy

CONNECTIONS = 32


@dataclass
class Row:
    case: str
    figure: str
    baseline: str
    ratio: float | None
    target: str
    met: bool | None


def bench_engine(seconds: float) -> list[Row]:
    policy = default_policy()
    decoder = msgspec.json.Decoder(Proposal)
    encoder = msgspec.json.Encoder()

    def rate(work: object) -> float:
        count, started = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - started) < seconds:
            for body in PROPOSALS:
                work(body)  # type: ignore[operator]
            count += len(PROPOSALS)
        return count / elapsed

    floor = rate(lambda body: encoder.encode(decoder.decode(body)))
    full = rate(lambda body: encoder.encode(evaluate(decoder.decode(body), policy)))
    return [
        Row(
            "engine: proposals/s through every rule (1 core)",
            f"{full:,.0f}/s",
            f"decode+encode {floor:,.0f}/s",
            full / floor,
            ">= 40,000/s per core",
            full >= 40_000,
        )
    ]


def bench_engine_vs_zen(seconds: float) -> list[Row]:
    try:
        import zen  # noqa: F401 - the bench extra
    except ImportError:
        print("zen-engine not installed (the bench extra): the engine-against-Zen case skipped", file=sys.stderr)
        return []
    versus = bench_zen.measure(PROPOSALS, seconds)
    return [
        Row(
            f"engine against GoRules Zen: proposals per CPU-second, {len(PROPOSALS)} proposals",
            f"{versus.worthit:,.0f}/s",
            f"Zen 2.x, 1 expression node + 1 decision table: {versus.zen:,.0f}/s (medians of {versus.slices} slices); "
            f"decode + encode alone, no rule run: {versus.floor:,.0f}/s = {versus.floor_ratio:.1f}x Zen",
            versus.ratio,
            ">= 5x Zen",
            versus.ratio >= 5,
        )
    ]


def _wrk(url: str, seconds: float, body: bytes | None, workdir: Path) -> tuple[float, float, float, int]:
    """req/s, p50 ms, p99 ms, non-2xx count."""
    command = ["wrk", "-t2", f"-c{CONNECTIONS}", f"-d{seconds:.0f}s", "--latency"]
    if body is not None:
        script = workdir / "post.lua"
        script.write_text(
            f'wrk.method = "POST"\nwrk.body = [[{body.decode()}]]\nwrk.headers["Content-Type"] = "application/json"\n'
        )
        command += ["-s", str(script)]
    out = subprocess.run([*command, url], capture_output=True, text=True, check=True).stdout

    def ms(label: str) -> float:
        match = re.search(rf"{label}\s+([\d.]+)(us|ms|s)\b", out)
        if match is None:
            return float("nan")
        value, unit = float(match.group(1)), match.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return rps, ms("50%"), ms("99%"), int(non_2xx.group(1)) if non_2xx else 0


@dataclass
class HttpRun:
    rows: list[Row]
    rates: dict[str, float]  # req/s by case: "GET /healthz", "POST /v1/evaluate", "POST /v1/decisions"


def bench_http(database: str, label: str, seconds: float, workers: int, workdir: Path, evaluate_too: bool) -> HttpRun:
    env = {"WORTHIT_RATE_LIMIT": "100000000/minute", "WORTHIT_LOG_LEVEL": "warning"}
    server = start_server(database, workdir / f"server-{label}-{workers}.log", workers=workers, env=env)
    rows: list[Row] = []
    rates: dict[str, float] = {}
    try:
        _wrk(f"{server.url}/healthz", 2, None, workdir)  # warm up
        bare, _, bare_p99, _ = _wrk(f"{server.url}/healthz", seconds, None, workdir)
        rates["GET /healthz"] = bare
        baseline = f"GET /healthz {bare:,.0f} req/s (p99 {bare_p99:.1f} ms)"
        cases = [("/v1/evaluate", "POST /v1/evaluate")] if evaluate_too else []
        cases.append(("/v1/decisions", "POST /v1/decisions"))
        for path, name in cases:
            rps, p50, p99, errors = _wrk(f"{server.url}{path}", seconds, PROPOSALS[0], workdir)
            rates[name] = rps
            stored = path == "/v1/decisions"
            rows.append(
                Row(
                    f"HTTP {label}, {workers} worker{'s' if workers > 1 else ''}: {name}",
                    f"{rps:,.0f} req/s, p50 {p50:.1f} ms, p99 {p99:.1f} ms" + (f", {errors} non-2xx" if errors else ""),
                    baseline,
                    rps / bare,
                    ">= 0.5x bare, p99 < 50 ms" if stored else "-",
                    (rps / bare >= 0.5 and p99 < 50 and errors == 0) if stored else None,
                )
            )
    finally:
        server.stop()
    return HttpRun(rows, rates)


def bench_in_process(
    databases: dict[str, str], seconds: float, bare_rps: float | None
) -> tuple[list[Row], dict[str, float]]:
    """The decision path without HTTP, as CPU per call, beside the bare GET's server time per request."""
    cpu: dict[str, float] = {}
    rows: list[Row] = []
    bare_us = 1e6 / bare_rps if bare_rps else None
    baseline = f"GET /healthz over HTTP {bare_us:.0f} µs (1 worker)" if bare_us else "-"
    cases = [("decode + evaluate", "SQLite", False)] + [
        ("decode + evaluate + store", label, True) for label in databases
    ]
    for what, label, store in cases:
        rate = bench_inprocess.measure(databases[label], PROPOSALS[0], seconds, store=store)
        name = f"{what} ({label})" if store else what
        cpu[name] = rate.cpu_us
        rows.append(
            Row(
                f"in process, {bench_inprocess.CALLERS} callers: {name}",
                f"{rate.per_second:,.0f}/s, {rate.cpu_us:.0f} µs of CPU each",
                baseline,
                rate.cpu_us / bare_us if bare_us else None,
                "-",
                None,
            )
        )
    return rows, cpu


def where_the_time_goes(rates: dict[str, float], cpu: dict[str, float]) -> str:
    """The paragraph under the table: why `POST /v1/decisions` is where it is against the bare GET."""
    needed = ("GET /healthz", "POST /v1/evaluate", "POST /v1/decisions")
    if not all(name in rates for name in needed) or "decode + evaluate" not in cpu:
        return ""
    bare, evaluate_us, decision_us = (1e6 / rates[name] for name in needed)
    engine = cpu["decode + evaluate"]
    stores = {name: value for name, value in cpu.items() if "store" in name}
    store = stores.get("decode + evaluate + store (SQLite)", engine)
    post = evaluate_us - bare - engine
    return (
        "\n**Where the time goes** (SQLite, 1 worker; server time per request is 1,000,000 / req/s): "
        f"`GET /healthz` {bare:.0f} µs, `POST /v1/evaluate` {evaluate_us:.0f} µs, `POST /v1/decisions` "
        f"{decision_us:.0f} µs. Without HTTP, decode + evaluate costs {engine:.0f} µs, and decode + evaluate + store "
        + ", ".join(f"{value:.0f} µs ({name.split('(')[-1].rstrip(')')})" for name, value in stores.items())
        + f". A decision at 0.5x of the bare GET may add at most {bare:.0f} µs to a GET. The decision path alone, "
        f"with no HTTP at all, adds {store:.0f} µs ({store / bare:.2f}x the GET); Litestar's handling of a POST "
        f"(reading and checking the body, the response) adds about {post:.0f} µs more (evaluate over HTTP, less the "
        f"GET and the in-process evaluation). Even with a POST that cost nothing, the best ratio would be "
        f"{bare / (bare + store):.2f}x; the engine's own target (40,000/s, 25 µs) would by itself leave "
        f"{bare / (bare + 25):.2f}x.\n"
    )


def bench_profile_readers(quick: bool, workdir: Path) -> list[Row]:
    rows_count, torch_mb = (200_000, 20) if quick else (1_000_000, 100)
    inputs = bench_profiles.make_inputs(workdir / "profiles", rows_count, torch_mb)
    measured: dict[str, tuple[float, int, int]] = {}
    for name, (kind, code, preload) in bench_profiles.CASES.items():
        try:
            measured[name] = bench_profiles.run_case(code, inputs[kind], preload)
        except subprocess.CalledProcessError as exc:
            print(f"{name}: failed ({exc.stderr.strip().splitlines()[-1:]}); install the bench extra", file=sys.stderr)
    rows = []
    for name, (kind, _, _) in bench_profiles.CASES.items():
        base_name = bench_profiles.BASELINE[kind]
        if name == base_name or name not in measured or base_name not in measured:
            continue
        elapsed, _, peak = measured[name]
        base_elapsed, _, base_peak = measured[base_name]
        size = inputs[kind].stat().st_size
        rows.append(
            Row(
                f"profiles: {name} ({size / 1e6:.0f} MB)",
                f"{elapsed:.2f} s, peak {peak / 1e6:.0f} MB (peak {peak / base_peak:.2f}x the peer's)",
                f"{base_name.split(': ')[-1]} {base_elapsed:.2f} s, peak {base_peak / 1e6:.0f} MB",
                elapsed / base_elapsed,
                "<= 1.0x time" + (" and peak" if kind == "csv" else ""),
                None if quick else elapsed <= base_elapsed and (kind != "csv" or peak <= base_peak),
            )
        )
    return rows


def bench_streaming(quick: bool, workdir: Path) -> list[Row]:
    """The streaming Kineto reader on a 1 GB generated trace (peak RSS and MB/s against the issue's figures), beside
    HolisticTraceAnalysis' load of the largest size it finishes here (and the streaming reader on that size)."""
    big_mb, peer_mb = (100, 20) if quick else (1000, 100)
    measured = bench_profiles.run_streaming(workdir / "streaming", big_mb, peer_mb)
    rows = []
    elapsed, peak, size, _ = measured["worthit streaming"]
    small, small_peak, _, _ = measured.get("worthit streaming, peer's size", (0.0, 0, 0, 0))
    rate = size / 1e6 / elapsed
    peer = measured.get("HolisticTraceAnalysis load")
    peer_text = (
        f"HolisticTraceAnalysis load of {peer[2] / 1e6:.0f} MB: {peer[0]:.1f} s ({peer[2] / 1e6 / peer[0]:.2f} MB/s), "
        f"peak {peer[1] / 1e6:.0f} MB; worthit on it {small:.2f} s, peak {small_peak / 1e6:.0f} MB"
        if peer
        else "HolisticTraceAnalysis finished none of the sizes tried (bench extra missing?)"
    )
    rows.append(
        Row(
            f"profiles: pytorch trace, streaming ({size / 1e9:.2f} GB generated)",
            f"{elapsed:.1f} s ({rate:.0f} MB/s), peak RSS {peak / 1e6:.0f} MB",
            peer_text,
            (small / peer[0]) if peer else None,
            ">= 50 MB/s, peak <= 500 MB",
            None if quick else rate >= 50 and peak <= 500e6,
        )
    )
    jobs_elapsed, jobs_peak, _, _ = measured["worthit streaming, --jobs 2"]
    rows.append(
        Row(
            f"profiles: pytorch trace, streaming over --jobs 2 ({size / 1e9:.2f} GB generated)",
            f"{jobs_elapsed:.1f} s ({size / 1e6 / jobs_elapsed:.0f} MB/s), main peak RSS {jobs_peak / 1e6:.0f} MB",
            f"one process {elapsed:.1f} s",
            jobs_elapsed / elapsed,
            ">= 50 MB/s",
            None if quick else size / 1e6 / jobs_elapsed >= 50,
        )
    )
    return rows


def bench_ranks(quick: bool, workdir: Path) -> list[Row]:
    """A generated 512-rank run mapped to summaries with --jobs 2 (time per rank) and combined (the combine time)."""
    ranks = 64 if quick else 512
    mapped, combined, size = bench_profiles.run_ranks(workdir / "ranks", ranks, 2)
    return [
        Row(
            f"profiles: {ranks}-rank run, worthit profile --summary --jobs 2, then combined",
            f"{mapped / ranks * 1000:.0f} ms per rank ({mapped:.1f} s), combine {combined:.1f} s",
            f"summaries {size / ranks / 1e3:.0f} KB a rank",
            None,
            "-",
            None,
        )
    ]


def bench_replay(quick: bool, workdir: Path) -> list[Row]:
    """The trace replay: a generated 1 GB trace read into a schedule, its order built and five what-ifs replayed,
    against the issue's 60 s and 0.6 GB (skipped with --quick); the same on a 100 MB trace of the same shape beside
    HolisticTraceAnalysis's load and critical_path_analysis, against 10x faster; the real traces replayed as
    recorded."""
    rows = []
    if not quick:
        elapsed, peak, size = bench_profiles.run_replay(workdir / "replay", 1000)
        rows.append(
            Row(
                f"profiles: replay of a {size / 1e9:.2f} GB generated trace, five what-ifs",
                f"{elapsed:.1f} s, peak RSS {peak / 1e6:.0f} MB",
                "-",
                None,
                "<= 60 s, peak <= 600 MB",
                elapsed <= 60 and peak <= 600e6,
            )
        )
        print(f"{rows[-1].case}: {rows[-1].figure}", flush=True)
    peer = bench_profiles.run_replay_vs_hta(workdir / "replay", 100)
    ours = peer["worthit"]
    theirs = peer.get("HolisticTraceAnalysis")
    rows.append(
        Row(
            f"profiles: replay of a {ours[2] / 1e6:.0f} MB generated trace, five what-ifs, against HTA's critical path",
            f"{ours[0]:.1f} s, peak RSS {ours[1] / 1e6:.0f} MB",
            "HolisticTraceAnalysis load + critical_path_analysis (5 steps): "
            + (f"{theirs[0]:.1f} s, peak {theirs[1] / 1e6:.0f} MB" if theirs else "failed"),
            ours[0] / theirs[0] if theirs else None,
            "<= 0.1x time",
            ours[0] <= 0.1 * theirs[0] if theirs else None,
        )
    )
    print(f"{rows[-1].case}: {rows[-1].figure} ({rows[-1].baseline})", flush=True)
    for name, error, worst in bench_profiles.replay_real():
        rows.append(
            Row(
                f"profiles: replay of the real {name[:40]}",
                f"identity error {error} ns, explained {100 * worst:.1f}% (worst step)",
                "the measured steps",
                None,
                "0 ns, within 3%",
                error == 0 and abs(worst - 1) <= 0.03,
            )
        )
    return rows


def bench_slack_latency(quick: bool, workdir: Path) -> list[Row]:
    server = start_server(
        f"sqlite:///{workdir / 'slack.db'}",
        workdir / "slack.log",
        env={"WORTHIT_SLACK_SIGNING_SECRET": bench_slack.SECRET, "WORTHIT_RATE_LIMIT": "100000000/minute"},
    )
    try:
        asyncio.run(bench_slack.run(server.url, 64, CONNECTIONS))
        latencies, statuses, _ = asyncio.run(bench_slack.run(server.url, 500 if quick else 2000, CONNECTIONS))
    finally:
        server.stop()
    p50, p99 = bench_slack.percentile(latencies, 0.5), bench_slack.percentile(latencies, 0.99)
    return [
        Row(
            f"Slack: signed /worthit, {CONNECTIONS} concurrent",
            f"p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms",
            "Slack's 3 s limit",
            p99 / bench_slack.LIMIT_S,
            "p99 far under 3 s",
            p99 < 0.5 and set(statuses) == {200},
        )
    ]


def bench_cli_startup() -> list[Row]:
    figures, bare = bench_startup.measure()
    return [
        Row(
            f"CLI start-up: `{figure.command}` (whole process, median of {figure.runs})",
            f"{figure.seconds * 1000:.0f} ms",
            f"python -c pass {bare * 1000:.0f} ms",
            figure.seconds / bare,
            f"<= {bench_startup.TARGET_S * 1000:.0f} ms",
            figure.seconds <= bench_startup.TARGET_S,
        )
        for figure in figures
    ]


def bench_container_image() -> list[Row]:
    figures = bench_image.measure()
    if figures is None:
        missing = ", ".join(bench_image.podman.missing_tools())
        print(
            f"{missing} not found (apt-get install podman runc mmdebstrap podman-compose): image case skipped",
            file=sys.stderr,
        )
        return []
    ready, host = bench_image.median(figures.ready_seconds), bench_image.median(figures.host_ready_seconds)
    runs = len(figures.ready_seconds)
    return [
        Row(
            "image: deploy/Dockerfile on Debian's Python 3.11 (podman)",
            f"{figures.size_bytes / 1e6:.0f} MB",
            f"its base image {figures.base_bytes / 1e6:.0f} MB",
            figures.size_bytes / figures.base_bytes,
            "-",
            None,
        ),
        Row(
            f"image: podman run to /readyz 200 (new volume, SQLite, 2 workers; median of {runs})",
            f"{ready:.2f} s",
            f"worthit serve on the host {host:.2f} s",
            ready / host,
            "-",
            None,
        ),
    ]


def machine() -> str:
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    load = os.getloadavg()
    return (
        f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {platform.system()} "
        f"{platform.release()}; load average before the run {load[0]:.2f}"
    )


def render(rows: list[Row], header: str) -> str:
    lines = [header, "", "| case | figure | baseline (same run) | ratio | target | met |", "|---|---|---|---|---|---|"]
    for row in rows:
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x" if row.ratio >= 0.01 else f"{row.ratio:.4f}x"
        met = "-" if row.met is None else ("yes" if row.met else "no")
        lines.append(f"| {row.case} | {row.figure} | {row.baseline} | {ratio} | {row.target} | {met} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs and shorter runs")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per HTTP case (default 8, quick 3)")
    parser.add_argument(
        "--workers", default="1,2", help="server worker counts, comma-separated (default 1,2: 2 is the image's)"
    )
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument(
        "--engine-only", action="store_true", help="the engine's two cases alone, printed (RESULTS.md is left as it is)"
    )
    parser.add_argument(
        "--replay-only", action="store_true", help="the replay's cases alone, printed (RESULTS.md is left as it is)"
    )
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "RESULTS.md")
    args = parser.parse_args()
    seconds = args.seconds or (3.0 if args.quick else 8.0)
    header = (
        f"# Benchmark results\n\nMeasured by `make bench` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, on {machine()}."
        f"\nEvery ratio compares two figures measured in the same run; wrk -t2 -c{CONNECTIONS}, {seconds:.0f} s "
        "per HTTP case, server and load generator sharing the machine."
    )
    rows: list[Row] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if args.replay_only:
            print(render(bench_replay(args.quick, workdir), header))
            return
        rows += bench_engine(2.0 if args.quick else 5.0)
        print(f"engine: {rows[-1].figure} ({rows[-1].baseline})", flush=True)
        rows += bench_engine_vs_zen(4.0 if args.quick else 10.0)
        print(f"{rows[-1].case}: {rows[-1].figure} ({rows[-1].baseline}); HTTP, profiles and Slack follow", flush=True)
        if args.engine_only:
            print(render(rows, header))
            return
        rows += bench_cli_startup()
        databases = {"SQLite": f"sqlite:///{workdir / 'bench.db'}"}
        postgres = not args.no_postgres and postgres_answers()
        if postgres:
            name = f"worthit_bench_{os.getpid()}"
            asyncio.run(admin(f'CREATE DATABASE "{name}"'))
            databases["PostgreSQL"] = POSTGRES_URL.rsplit("/", 1)[0] + "/" + name
        rates: dict[str, float] = {}
        try:
            if shutil.which("wrk") is None:
                print("wrk not found (apt-get install wrk): HTTP cases skipped", file=sys.stderr)
            else:
                for index, workers in enumerate(int(count) for count in args.workers.split(",")):
                    for label, url in databases.items():
                        if label == "SQLite":
                            url = f"sqlite:///{workdir / f'bench-{workers}.db'}"
                        run = bench_http(
                            url, label, seconds, workers, workdir, evaluate_too=index == 0 and label == "SQLite"
                        )
                        rows += run.rows
                        if index == 0 and label == "SQLite":
                            rates = run.rates
            in_process, cpu = bench_in_process(databases, 2.0 if args.quick else 4.0, rates.get("GET /healthz"))
            rows += in_process
        finally:
            if postgres:
                asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        rows += bench_profile_readers(args.quick, workdir)
        rows += bench_streaming(args.quick, workdir)
        rows += bench_ranks(args.quick, workdir)
        rows += bench_replay(args.quick, workdir)
        rows += bench_slack_latency(args.quick, workdir)
        rows += bench_container_image()
    table = render(rows, header) + where_the_time_goes(rates, cpu)
    print(table)
    print(f"({time.monotonic() - started:.0f} s)")
    args.output.write_text(table)


if __name__ == "__main__":
    main()
