"""Benchmark `/worthit` against Slack's 3-second limit: signed slash commands from 32 concurrent clients.

    python benchmarks/bench_slack.py [--requests 2000] [--concurrency 32] [--database URL] [--workers 1]

Starts a real `worthit serve` (on a fresh SQLite file unless `--database` names another), signs every request
with Slack's SDK as Slack would, and sends them from `--concurrency` keep-alive connections at once, each request a
new decision that is evaluated and stored (committed) before it is answered. The client is plain asyncio streams:
on a small machine an HTTP library's own overhead (httpx: several ms of CPU a request, on the same cores as the
server) would be most of what is measured. Prints p50, p99 and max latency, each also as a ratio of the 3-second
limit. No assertions: this reports, it does not gate.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.harness import start_server

SECRET = "bench-signing-secret"
LIMIT_S = 3.0
TEXTS = (
    "p=21% k=10 cost=3w baseline=100ms target=attention_softmax",
    "p=5% k=2 fleet=20000 cost=3w target=gemm_qkv public",
    "p=3% k=1.5 cost=3w asm target=layernorm",
    "p=1.2% p_e2e=0.014% k=inf cost=1w target=elementwise_gelu",
)


def signed(body: bytes, verifier: SignatureVerifier) -> dict[str, str]:
    stamp = str(int(time.time()))
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": verifier.generate_signature(timestamp=stamp, body=body) or "",
    }


async def run(url: str, requests: int, concurrency: int) -> tuple[list[float], dict[int, int], float]:
    """Send `requests` signed commands from `concurrency` keep-alive connections; latency of each, statuses, wall."""
    host, port = url.removeprefix("http://").split(":")
    verifier = SignatureVerifier(SECRET)
    pending = list(range(requests))
    latencies: list[float] = []
    statuses: dict[int, int] = {}

    async def client() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            while pending:
                i = pending.pop()
                body = urlencode(
                    {"command": "/worthit", "text": TEXTS[i % len(TEXTS)], "user_id": f"U{i}", "team_id": "T1"}
                ).encode()
                headers = signed(body, verifier) | {"Host": f"{host}:{port}", "Content-Length": str(len(body))}
                head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
                started = time.perf_counter()
                writer.write(f"POST /slack/commands HTTP/1.1\r\n{head}\r\n".encode() + body)
                await writer.drain()
                status_line, _, rest = (await reader.readuntil(b"\r\n\r\n")).partition(b"\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in rest.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                await reader.readexactly(length)
                latencies.append(time.perf_counter() - started)
                status = int(status_line.split()[1])
                statuses[status] = statuses.get(status, 0) + 1
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return latencies, statuses, time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--database", help="database URL (default: a fresh SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        database = args.database or f"sqlite:///{Path(tmp) / 'bench.db'}"
        server = start_server(
            database, Path(tmp) / "server.log", workers=args.workers, env={"WORTHIT_SLACK_SIGNING_SECRET": SECRET}
        )
        try:
            asyncio.run(run(server.url, min(64, args.requests), args.concurrency))  # warm up
            latencies, statuses, elapsed = asyncio.run(run(server.url, args.requests, args.concurrency))
        finally:
            server.stop()
    p50, p99, worst = percentile(latencies, 0.50), percentile(latencies, 0.99), max(latencies)
    print(
        f"/slack/commands: {len(latencies)} signed commands, {args.concurrency} concurrent clients, "
        f"{args.workers} worker(s), {'SQLite' if args.database is None else args.database.split(':', 1)[0]}"
    )
    print(f"  statuses  {dict(sorted(statuses.items()))}   throughput {len(latencies) / elapsed:.0f} req/s")
    print(f"  mean      {statistics.fmean(latencies) * 1000:8.1f} ms")
    for name, value in (("p50", p50), ("p99", p99), ("max", worst)):
        print(f"  {name:<9} {value * 1000:8.1f} ms   {value / LIMIT_S:.3f} of Slack's {LIMIT_S:.0f} s limit")


if __name__ == "__main__":
    main()
