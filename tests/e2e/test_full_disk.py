"""Readiness on a full disk: a SQLite file on a 3 MiB filesystem (a tmpfs mounted for the test, which needs root)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Server

pytestmark = pytest.mark.e2e

# Decisions of ~30 KB each (a hundred named phases): the last write that fails leaves tens of KB free, room for a
# probe that rewrites a page in place, none for one that writes what a decision writes.
PHASES = 100
PROPOSAL = {
    "target": "attention_softmax",
    "p": 0.21,
    "k": 10,
    "baseline_ms": 100,
    "cost_weeks": 3,
    "breakdown": [{"name": "attention_softmax", "ms": 21}]
    + [{"name": f"phase_{i:04d}_" + "z" * 60, "ms": 79 / PHASES} for i in range(PHASES)],
}


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30, check=False)


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB tmpfs, unmounted after the servers using it have stopped (this fixture is set up before theirs)."""
    where = tmp_path / "small"
    where.mkdir()
    mounted = _mount("-t", "tmpfs", "-o", "size=3m", "tmpfs", str(where))
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a 3 MiB tmpfs (needs root): {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30, check=False)


def test_a_full_disk_is_not_ready_until_writes_fit_again(
    small_filesystem: Path, server_factory: Callable[..., Server]
) -> None:
    server = server_factory(f"sqlite:///{small_filesystem / 'worthit.db'}")
    with server.client() as client:
        stored = 0
        while (answer := client.post("/v1/decisions", json=PROPOSAL)).status_code == 201:
            stored += 1
            assert stored < 200, "3 MiB holds far fewer than 200 decisions of ~30 KB"
        assert answer.status_code == 503, answer.text
        assert stored > 10, "the filesystem took a few decisions before it filled"
        for _ in range(3):
            ready = client.get("/readyz")
            assert ready.status_code == 503, "the probe writes what a real write writes, and the disk is full"
            assert ready.headers["content-type"].startswith("application/problem+json")
            detail = ready.json()["detail"]
            assert detail.startswith("Writes are failing: the last one, at "), detail
            assert "database or disk is full" in detail
            assert client.post("/v1/decisions", json=PROPOSAL).status_code == 503
        # Room again (tmpfs grows in place): the probe's own write succeeds, with no client traffic needed.
        grown = _mount("-o", "remount,size=16m", str(small_filesystem))
        assert grown.returncode == 0, grown.stderr
        assert client.get("/readyz").status_code == 200
        assert client.post("/v1/decisions", json=PROPOSAL).status_code == 201
        assert len(client.get("/v1/decisions", params={"limit": 200}).json()["items"]) == stored + 1
