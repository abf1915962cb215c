"""Helpers shared by the tests and the benchmarks: real servers, real databases, the command line as a user runs it.

Public on purpose: `benchmarks/` imports this module (never `tests.conftest`, whose fixtures are pytest's).
"""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from worthit.service.db import migrate
from worthit.service.db.engine import create_engine
from worthit.service.db.writer import GroupCommitWriter
from worthit.service.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
POSTGRES_URL = os.environ.get("WORTHIT_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def postgres_answers() -> bool:
    host_port = POSTGRES_URL.split("@", 1)[-1].split("/", 1)[0]
    host, _, port = host_port.partition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port or 5432)), timeout=1):
            return True
    except OSError:
        return False


async def admin(statement: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(POSTGRES_URL)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@asynccontextmanager
async def migrated(database_url: str, **writer_options: Any) -> AsyncIterator[tuple[AsyncEngine, GroupCommitWriter]]:
    """A migrated database and a running group-commit writer on it, for tests that use the services directly."""
    engine = create_engine(Settings(database_url=database_url))
    try:
        await migrate.upgrade(engine)
        writer = GroupCommitWriter(engine, **writer_options)
        await writer.start()
        try:
            yield engine, writer
        finally:
            await writer.close()
    finally:
        await engine.dispose()


def worthit(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the `worthit` command line as a user would, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "worthit.service.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        input=stdin,
        env=env,
        timeout=60,
        check=False,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@cache
def tls() -> ssl.SSLContext:
    """One TLS context for every client the tests make. httpx builds a new one (loading the CA bundle) per client,
    even for http:// URLs: ~50 ms of CPU each, taken from the server being started on the same two cores."""
    return ssl.create_default_context()


class PortTaken(RuntimeError):
    """The server could not bind its port: another process holds it."""


@dataclass
class Server:
    """A real `worthit serve` process."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def client(self, **kwargs: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, **({"timeout": 10, "verify": tls()} | kwargs))  # type: ignore[arg-type]

    def kill(self) -> None:
        """SIGKILL the server and all its workers at once, as a crash or an OOM kill would."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=15)

    def stop(self, sig: int | None = None) -> None:
        if self.process.poll() is None:
            if sig is None:
                self.process.terminate()
            else:
                self.process.send_signal(sig)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def start_server(
    database_url: str, log: Path, *, workers: int = 1, env: dict[str, str] | None = None, port: int | None = None
) -> Server:
    if port is None:
        # Under pytest-xdist another worker's server may take the port between free_port() and the bind: try again.
        for attempt in range(3):
            try:
                return start_server(database_url, log, workers=workers, env=env, port=free_port())
            except PortTaken:
                if attempt == 2:
                    raise
    environment = {key: value for key, value in os.environ.items() if not key.startswith("WORTHIT_")}
    environment |= {"WORTHIT_LOG_LEVEL": "warning"} | (env or {})
    with log.open("ab") as handle:  # the child keeps its own descriptor
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "worthit.service.cli",
                "serve",
                "--port",
                str(port),
                "--database",
                database_url,
                "--workers",
                str(workers),
            ],
            cwd=ROOT,
            env=environment,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so a kill takes the workers with it
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    # Every 20 ms: a refused connection costs next to nothing, and the server is used the moment it is ready.
    with httpx.Client(base_url=url, timeout=1, verify=tls()) as probe:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                text = log.read_text()
                if "in use" in text.lower():
                    raise PortTaken(text)
                raise RuntimeError(f"server exited with {process.returncode}:\n{text}")
            try:
                if probe.get("/readyz").status_code == 200:
                    return Server(url=url, process=process, log=log)
            except httpx.HTTPError:
                pass
            time.sleep(0.02)
    process.kill()
    raise RuntimeError(f"server did not become ready:\n{log.read_text()}")
