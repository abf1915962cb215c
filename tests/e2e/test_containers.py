"""deploy/ run for real: the image built from deploy/Dockerfile serves, keeps its SQLite data in a volume across a
restart, runs as a non-root user on a read-only root; deploy/compose.yaml comes up with PostgreSQL, its migration and
two replicas that share the data; and a release with a new migration rolls through the replicas one at a time
while decisions are being written, with no failed request and no acknowledged decision lost.

Podman stands in for Docker (tests/podman.py); base images are made from Debian's packages. The tests talk to the
containers through `worthit` commands run inside them and over HTTP on loopback ports only.
"""

from __future__ import annotations

import hashlib
import secrets
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic.script import ScriptDirectory

from tests import podman
from tests.conftest import IN_CI, ROOT

pytestmark = [pytest.mark.container, pytest.mark.e2e]

COMPOSE_FILE = ROOT / "deploy" / "compose.yaml"
PROPOSAL = {"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3}
APP_UID = 10001
# A release's migration, made for the rolling-upgrade test only: it adds a nullable column, as migrations here do.
PROBE_REVISION = "e2e_rolling_probe"
PROBE_MIGRATION = '''"""A column the old code does not know (the rolling-upgrade test's release).

Revision ID: {revision}
Revises: {down}
"""

import sqlalchemy as sa
from alembic import op

revision = "{revision}"
down_revision = "{down}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.add_column(sa.Column("rolling_probe", sa.String(length=40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("rolling_probe")
'''


def head_revision(migrations: Path = ROOT / "migrations") -> str:
    head = ScriptDirectory(str(migrations)).get_current_head()
    assert head is not None
    return head


# The images' tags name this checkout: two checkouts on one machine (another branch's suite running) share podman's
# storage, and a tag the other suite moved mid-test would run its code here.
CHECKOUT = hashlib.sha256(str(ROOT).encode()).hexdigest()[:8]


def _name(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


# --- images, made once per session ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def podman_base() -> str:
    """The locally made base image the Dockerfile is built on (`--build-arg PYTHON_IMAGE=localhost/…`)."""
    if missing := podman.missing_tools():
        message = f"{', '.join(missing)} not installed (apt-get install podman runc mmdebstrap podman-compose)"
        if IN_CI:
            pytest.fail(f"{message}; CI must run the container tests")
        pytest.skip(message)
    return podman.python_image()


@pytest.fixture(scope="session")
def app_image(podman_base: str) -> str:
    return podman.build(ROOT, f"localhost/worthit-test:current-{CHECKOUT}", podman_base)


@pytest.fixture(scope="session")
def next_image(podman_base: str, app_image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The same code plus a new migration, built from a copy of the build context (never committed)."""
    context = tmp_path_factory.mktemp("next-release")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("rules", "service", "migrations"):
        shutil.copytree(ROOT / name, context / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md", ".dockerignore"):
        shutil.copy2(ROOT / name, context / name)
    (context / "deploy").mkdir()
    shutil.copy2(ROOT / "deploy" / "Dockerfile", context / "deploy" / "Dockerfile")
    migration = context / "migrations" / "versions" / "2099_01_01_9999_rolling_probe.py"
    migration.write_text(PROBE_MIGRATION.format(revision=PROBE_REVISION, down=head_revision()))
    assert head_revision(context / "migrations") == PROBE_REVISION
    return podman.build(context, f"localhost/worthit-test:next-{CHECKOUT}", podman_base)


@pytest.fixture(scope="session")
def postgres_image(podman_base: str) -> str:
    return podman.postgres_image()


@pytest.fixture
def resources() -> Iterator[podman.Resources]:
    made = podman.Resources()
    try:
        yield made
    finally:
        made.close()


def _override(path: Path, api: str, db: str) -> Path:
    """Only what cannot be pulled here: the images' names. The topology is deploy/compose.yaml's own."""
    path.write_text(
        f"services:\n  db:\n    image: {db}\n  migrate:\n    image: {api}\n  api:\n    image: {api}\n", encoding="utf-8"
    )
    return path


@pytest.fixture
def stack(tmp_path: Path, app_image: str, postgres_image: str) -> Iterator[podman.Compose]:
    """deploy/compose.yaml up (`up -d`, as a user runs it) under a project of its own; torn down afterwards."""
    compose = podman.Compose(
        project=_name("wtt").replace("-", ""),
        files=[COMPOSE_FILE, _override(tmp_path / "images.yaml", app_image, postgres_image)],
        env={"POSTGRES_PASSWORD": secrets.token_hex(16)},  # compose refuses to start without one
    )
    try:
        compose("up", "--detach", "--no-build")
        yield compose
    finally:
        compose.down()
        left = podman.podman(
            "ps", "--all", "--quiet", "--filter", f"label=io.podman.compose.project={compose.project}"
        ).stdout
        assert left.strip() == "", "compose down left containers behind"


def _ready_replicas(compose: podman.Compose, revision: str) -> list[str]:
    migrate = compose.container("migrate")
    deadline = time.monotonic() + 90
    while podman.state(migrate) != "exited" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert podman.exit_code(migrate) == 0, podman.logs(migrate)
    assert f"database at revision {revision}" in podman.logs(migrate)
    urls = []
    for index in (1, 2):
        container = compose.container("api", index)
        url = podman.published(container)
        assert url.startswith("http://127.0.0.1:")
        podman.wait_for(f"{url}/readyz", container, timeout=90, restarting=True)
        urls.append(url)
    return urls


def _token(compose: podman.Compose, scope: str = "write") -> str:
    """`docker compose run --rm migrate worthit token create …`, as deploy/README.md says."""
    result = compose(
        "run",
        "--rm",
        "--no-deps",
        "-T",
        "migrate",
        "worthit",
        "token",
        "create",
        "--scope",
        scope,
        "--name",
        _name("e2e"),
    )
    (token,) = [line for line in result.stdout.splitlines() if line.startswith("wt_")]
    return token


def _auth(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


# --- the image -----------------------------------------------------------------------------------------------------


def test_the_image_serves_keeps_its_data_across_a_restart_and_runs_unprivileged_on_a_read_only_root(
    app_image: str, resources: podman.Resources
) -> None:
    volume = resources.volume(_name("worthit-data"))
    # As deploy/README.md runs it, plus what the Kubernetes manifests promise: a read-only root (/tmp stays a tmpfs).
    run_args = ("--read-only", "--publish", "127.0.0.1::8000", "--volume", f"{volume}:/var/lib/worthit")
    first = resources.run(app_image, *run_args, name=_name("worthit-test"))
    url = podman.published(first)
    podman.wait_for(f"{url}/readyz", first)

    health = httpx.get(f"{url}/healthz")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    ready = httpx.get(f"{url}/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "database": "sqlite", "schema_revision": head_revision()}
    assert podman.podman("healthcheck", "run", first, check=False).returncode == 0, "the image's HEALTHCHECK"

    # The image requires tokens from the start; one made inside the container opens the API.
    assert httpx.post(f"{url}/v1/decisions", json=PROPOSAL).status_code == 401
    made = podman.podman("exec", first, "worthit", "token", "create", "--scope", "write", "--name", "e2e")
    token = made.stdout.strip()
    assert token.startswith("wt_"), made
    created = httpx.post(f"{url}/v1/decisions", json=PROPOSAL | {"title": "kept"}, headers=_auth(token))
    assert created.status_code == 201, created.text
    location = created.headers["location"]
    assert location == f"/v1/decisions/{created.json()['id']}"

    uid = podman.podman("exec", first, "id", "-u").stdout.strip()
    assert uid == str(APP_UID)
    assert uid != "0"
    for path in ("/probe", "/opt/worthit/probe", "/etc/probe"):
        write = podman.podman("exec", first, "touch", path, check=False)
        assert write.returncode != 0
        assert "Read-only file system" in write.stderr, write.stderr
    assert podman.podman("exec", first, "touch", "/tmp/probe", "/var/lib/worthit/probe").returncode == 0

    # SIGTERM: in-flight work finished, the writer committed, exit 0. Then a new container on the same volume.
    podman.podman("stop", "--time", "15", first, timeout=60)
    assert podman.exit_code(first) == 0, podman.logs(first)
    second = resources.run(app_image, *run_args, name=_name("worthit-test"))
    url = podman.published(second)
    podman.wait_for(f"{url}/readyz", second)
    read = httpx.get(f"{url}{location}", headers=_auth(token))
    assert read.status_code == 200
    assert read.json() == created.json()


# --- compose -------------------------------------------------------------------------------------------------------


def test_compose_brings_up_postgres_a_migration_and_two_replicas_that_share_the_data(stack: podman.Compose) -> None:
    first, second = _ready_replicas(stack, head_revision())
    for url in (first, second):
        assert httpx.get(f"{url}/readyz").json() == {
            "status": "ready",
            "database": "postgresql",
            "schema_revision": head_revision(),
        }
    token = _token(stack)
    created = httpx.post(f"{first}/v1/decisions", json=PROPOSAL | {"title": "shared"}, headers=_auth(token))
    assert created.status_code == 201, created.text
    read = httpx.get(f"{second}{created.headers['location']}", headers=_auth(token))
    assert read.status_code == 200
    assert read.json() == created.json()
    # Optional settings left unset stay unset: without a signing secret the Slack endpoint is off.
    assert httpx.post(f"{second}/slack/commands", data={"text": "p=21%"}).status_code == 404


# --- a rolling release with a new migration ------------------------------------------------------------------------


@dataclass
class Balancer:
    """What a load balancer does for the test: sends each request to a replica in rotation, and tells how many are
    in flight to each, so a replica leaves the rotation and drains before it is stopped (Kubernetes: the endpoint
    is removed, then the preStop pause, then SIGTERM)."""

    rotation: list[str]
    in_flight: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    turn: int = 0

    def pick(self) -> str:
        with self.lock:
            self.turn += 1
            url = self.rotation[self.turn % len(self.rotation)]
            self.in_flight[url] = self.in_flight.get(url, 0) + 1
            return url

    def done(self, url: str) -> None:
        with self.lock:
            self.in_flight[url] -= 1

    def add(self, url: str) -> None:
        with self.lock:
            self.rotation.append(url)

    def remove_and_drain(self, url: str, timeout: float = 10) -> None:
        with self.lock:
            self.rotation.remove(url)
        deadline = time.monotonic() + timeout
        while self.in_flight.get(url, 0) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert self.in_flight.get(url, 0) == 0


@dataclass
class Writer:
    """Posts decisions until told to stop (bounded in count and time), keeping every answer."""

    balancer: Balancer
    token: str
    acknowledged: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    # Under the default rate limit (1200 a minute per token per process), whichever replicas are in rotation.
    pause: float = 0.08
    limit: int = 2000

    def run(self, worker: int) -> None:
        with httpx.Client(timeout=10, headers=_auth(self.token)) as client:
            for n in range(self.limit):
                if self.stop.is_set():
                    return
                url = self.balancer.pick()
                title = f"rolling {worker}-{n}"
                try:
                    response = client.post(f"{url}/v1/decisions", json=PROPOSAL | {"title": title})
                    if response.status_code == 201:
                        self.acknowledged[response.json()["id"]] = response.json()
                    else:
                        self.failures.append(f"{url}: {response.status_code} {response.text[:200]}")
                except httpx.HTTPError as exc:
                    self.failures.append(f"{url}: {type(exc).__name__} {exc}")
                finally:
                    self.balancer.done(url)
                time.sleep(self.pause)


def test_a_release_with_a_new_migration_rolls_through_the_replicas_without_a_failed_request(
    stack: podman.Compose, next_image: str, postgres_image: str, tmp_path: Path
) -> None:
    old = head_revision()
    urls = _ready_replicas(stack, old)
    token = _token(stack)
    release = podman.Compose(
        project=stack.project,
        files=[COMPOSE_FILE, _override(tmp_path / "next.yaml", next_image, postgres_image)],
        env=stack.env,  # the same stack, the same database password
    )
    balancer = Balancer(rotation=list(urls))
    writer = Writer(balancer, token)
    threads = [threading.Thread(target=writer.run, args=(worker,)) for worker in range(2)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(2)
        # 1. The release's migration runs once, while the old replicas serve.
        migrated = release("run", "--rm", "--no-deps", "-T", "migrate")
        assert f"Running upgrade {old} -> {PROBE_REVISION}" in migrated.stdout + migrated.stderr
        # The claim: the old code stays ready on a schema newer than its own.
        for url in urls:
            ready = httpx.get(f"{url}/readyz")
            assert ready.status_code == 200, ready.text
            assert ready.json()["schema_revision"] == PROBE_REVISION
        # 2. One replica at a time: a new one joins once ready, then an old one leaves, drains and stops.
        for index, url in enumerate(urls, start=1):
            new = f"{stack.project}_api_next{index}"
            release("run", "--detach", "--no-deps", "--service-ports", "-T", "--name", new, "api")
            new_url = podman.published(new)
            podman.wait_for(f"{new_url}/readyz", new, timeout=90)
            balancer.add(new_url)
            balancer.remove_and_drain(url)
            old_container = stack.container("api", index)
            podman.podman("stop", "--time", "15", old_container, timeout=60)
            assert podman.exit_code(old_container) == 0, podman.logs(old_container)
        time.sleep(2)
    finally:
        writer.stop.set()
        for thread in threads:
            thread.join(30)

    assert writer.failures == []
    assert len(writer.acknowledged) > 100, "the writes went on through the whole release"
    column = podman.podman(
        "exec",
        stack.container("db"),
        "psql",
        "-At",
        "-U",
        "worthit",
        "-d",
        "worthit",
        "-c",
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'decisions' "
        "AND column_name = 'rolling_probe'",
    )
    assert column.stdout.strip() == "rolling_probe"
    with httpx.Client(timeout=10, headers=_auth(token)) as client:
        for decision_id, written in writer.acknowledged.items():
            url = balancer.pick()
            try:
                read = client.get(f"{url}/v1/decisions/{decision_id}")
            finally:
                balancer.done(url)
            assert read.status_code == 200, read.text
            assert read.json() == written
