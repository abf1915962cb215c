"""Shared fixtures: real SQLite files, a real PostgreSQL database per test, real servers.

PostgreSQL: `WORTHIT_TEST_POSTGRES_URL` (default postgresql://postgres@127.0.0.1:5432/test). Tests that need it skip
when no server answers, except under CI=true, where they fail: CI must run them.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.harness import (
    IN_CI,
    POSTGRES_URL,
    ROOT,
    Server,
    admin,
    free_port,
    migrated,
    postgres_answers,
    start_server,
    worthit,
)

# Re-exported for the tests that import them from here.
__all__ = ["IN_CI", "POSTGRES_URL", "ROOT", "Server", "free_port", "migrated", "start_server", "worthit"]

# Some machines set PYTHONDONTWRITEBYTECODE=1 (this one does), and then every process the suite starts (servers, the
# command line, the bot: several hundred) compiles the project's ~22k lines again: importing the app and the command
# line took 1.45 s instead of 1.26 s, on cores the servers share. Unset here, before pytest-xdist starts the workers,
# so the first process writes the bytecode (in __pycache__, which .gitignore and .dockerignore leave out) and the
# rest read it. (PYTHONPYCACHEPREFIX would keep the tree clean but moves site-packages' bytecode too: in a new
# checkout the first processes compiled all of it again, and in that run a parse worker went over test_memory's limit.)
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile(
    "ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=False
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    if not postgres_answers():
        if IN_CI:
            pytest.fail(f"PostgreSQL does not answer at {POSTGRES_URL}; CI must run these tests")
        pytest.skip("no PostgreSQL server answers (set WORTHIT_TEST_POSTGRES_URL)")
    name = f"worthit_test_{secrets.token_hex(6)}"
    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield POSTGRES_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'worthit.db'}"


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    """Each test using this runs once on a SQLite file and once on PostgreSQL."""
    fixture = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    return str(request.getfixturevalue(fixture))


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Start real servers; every one is stopped at the end of the test."""
    servers: list[Server] = []

    def start(database_url: str, **kwargs: object) -> Server:
        server = start_server(database_url, tmp_path / f"server-{len(servers)}.log", **kwargs)  # type: ignore[arg-type]
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


# The files that take longest go to the workers first (`--no-loadscope-reorder` keeps this order; xdist's own puts
# the files with most tests first, which left the container and fuzz files, few tests but minutes long, to run last,
# one of them alone on a worker). Seconds from --durations on the 2-core machine under load (a run of 1,436 s of
# test time in all): test_fuzz 277 (4 tests, spread), test_containers 155, test_memory 128, test_hardening 99,
# test_slackbot 70, test_trust 60, test_engine_properties 53. The rest keep their order.
SLOW_FIRST = (
    "tests/e2e/test_containers.py",
    "tests/e2e/test_fuzz.py",
    "tests/e2e/test_memory.py",
    "tests/e2e/test_hardening.py",
    "tests/e2e/test_slackbot.py",
    "tests/e2e/test_trust.py",
    "tests/property/test_engine_properties.py",
)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """One xdist group per file (what `--dist loadfile` did: module-scoped servers and session-scoped images are made
    once per file), except the tests marked `spread`: each starts all it needs, so it may run on either worker."""
    for item in items:
        if not item.get_closest_marker("spread"):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    rank = {path: index for index, path in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
