"""The decision path without HTTP: what storing a decision costs in process, to set against a bare GET.

    python benchmarks/bench_inprocess.py [--database URL] [--seconds 4]

32 concurrent callers each decode a proposal strictly and call `DecisionService.create` (evaluate through every rule,
build the document, submit it to the group-commit writer and wait for its commit) on the event loop the server
uses (uvloop), against a real database. Reports decisions per second and the loop thread's CPU per decision.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import uvloop

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.proposals import PROPOSALS
from tests.harness import migrated
from worthit.rules.model import Proposal
from worthit.service.db.decisions import DecisionStore
from worthit.service.db.policies import PolicyStore
from worthit.service.decisions.service import DecisionService
from worthit.service.policies.service import PolicyService
from worthit.service.validation import decode_strict

CALLERS = 32


@dataclass(frozen=True)
class Rate:
    per_second: float
    cpu_us: float  # the loop thread's CPU per call


async def _measure(database_url: str, body: bytes, seconds: float, store: bool) -> Rate:
    async with migrated(database_url) as (engine, writer):
        service = DecisionService(DecisionStore(engine, writer), PolicyService(PolicyStore(engine, writer)), "default")
        done = 0
        running = True

        async def caller() -> None:
            nonlocal done
            while running:
                proposal = decode_strict(body, Proposal)
                if store:
                    await service.create(proposal)
                else:
                    await service.evaluate(proposal)
                done += 1

        for duration in (min(1.0, seconds), seconds):  # warm up, then measure
            running, done = True, 0
            callers = [asyncio.create_task(caller()) for _ in range(CALLERS)]
            cpu, started = time.thread_time(), time.perf_counter()
            await asyncio.sleep(duration)
            running = False
            await asyncio.gather(*callers)
            elapsed, cpu = time.perf_counter() - started, time.thread_time() - cpu
        return Rate(done / elapsed, cpu / done * 1e6)


def measure(database_url: str, body: bytes, seconds: float, *, store: bool = True) -> Rate:
    """Decisions (store=True) or evaluations per second from `CALLERS` concurrent callers, and CPU per call."""
    return uvloop.run(_measure(database_url, body, seconds, store))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", help="a database URL (default: a fresh SQLite file)")
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database or f"sqlite:///{Path(tmp) / 'inprocess.db'}"
        for store in (False, True):
            rate = measure(url, PROPOSALS[0], args.seconds, store=store)
            what = "decode + evaluate + store" if store else "decode + evaluate"
            print(f"{what}: {rate.per_second:,.0f}/s, {rate.cpu_us:.0f} µs of CPU each")


if __name__ == "__main__":
    main()
