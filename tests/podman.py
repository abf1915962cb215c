"""Podman as the container tests drive it (see CONTAINERS.md in the team's shared docs): the runc runtime and low
ulimits on every build and run, base images made from Debian's packages with mmdebstrap (registries cannot be
pulled from here), podman-compose with the same flags. Only the `worthit` command and HTTP are used to talk to what
runs inside.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent / "containers"
# The default crun fails on these machines; runc with explicit, low limits works (CONTAINERS.md).
GLOBAL_ARGS = ("--runtime", "runc")
LIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")
# Base images are made here, so a tag that names their recipe is a cache key: a changed recipe makes a new image.
SUITE = "bookworm"
# What the official python:3.11-slim image has that bare Debian lacks: no documentation, a `python` command, and
# (for pip in a build) this machine's CA bundle, which reaches the package index the way the host does.
SLIM = (
    "--dpkgopt=path-exclude=/usr/share/doc/*",
    "--dpkgopt=path-include=/usr/share/doc/*/copyright",
    "--dpkgopt=path-exclude=/usr/share/man/*",
    "--dpkgopt=path-exclude=/usr/share/info/*",
    "--dpkgopt=path-exclude=/usr/share/locale/*",
    '--aptopt=APT::Install-Recommends "false"',
    '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*',
)
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
IMAGE_CA = "/usr/local/share/ca-certificates-host/ca-certificates.crt"
PYTHON_RECIPE = (
    "--include=python3,python3-venv,ca-certificates,usr-is-merged",
    *SLIM,
    # Debian pulls in usrmerge (and with it all of perl) only to merge /usr, which mmdebstrap has done already.
    '--customize-hook=chroot "$1" dpkg --purge usrmerge libfile-find-rule-perl libnumber-compare-perl '
    "libtext-glob-perl perl perl-modules-5.36 libperl5.36 libgdbm-compat4",
    '--customize-hook=ln -s /usr/bin/python3 "$1"/usr/local/bin/python',
    f'--customize-hook=mkdir -p "$1"{Path(IMAGE_CA).parent} && cp {HOST_CA} "$1"{IMAGE_CA}',
)
PYTHON_CHANGES = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    "ENV PIP_BREAK_SYSTEM_PACKAGES=1",
    f"ENV PIP_CERT={IMAGE_CA}",
    f"ENV SSL_CERT_FILE={IMAGE_CA}",
    'CMD ["python3"]',
)
POSTGRES_RECIPE = (
    "--include=postgresql,ca-certificates",
    *SLIM,
    # The package's own cluster is not the one the container makes (in PGDATA, from the environment).
    '--customize-hook=rm -rf "$1"/var/lib/postgresql/* "$1"/etc/postgresql/*',
    '--customize-hook=chroot "$1" sh -c "ln -s /usr/lib/postgresql/*/bin/* /usr/local/bin/"',
    f"--customize-hook=copy-in {HERE / 'postgres-entrypoint.sh'} /usr/local/bin",
)
POSTGRES_CHANGES = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    "ENV PGDATA=/var/lib/postgresql/data",
    "VOLUME /var/lib/postgresql/data",
    "EXPOSE 5432",
    "STOPSIGNAL SIGINT",
    'ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]',
)


class PodmanError(RuntimeError):
    pass


def missing_tools() -> list[str]:
    return [tool for tool in ("podman", "runc", "mmdebstrap", "podman-compose") if shutil.which(tool) is None]


def podman(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["podman", *GLOBAL_ARGS, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    if check and result.returncode != 0:
        raise PodmanError(f"podman {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


def image_exists(tag: str) -> bool:
    return podman("image", "exists", tag, check=False).returncode == 0


def debian_mirror() -> str:
    """apt's own mirror, the one the host reaches."""
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    if sources.exists():
        for line in sources.read_text().splitlines():
            if line.startswith("URIs:"):
                return line.split()[1]
    return "http://deb.debian.org/debian"


def _recipe_tag(name: str, recipe: Sequence[str], changes: Sequence[str], *files: Path) -> str:
    digest = hashlib.sha256(json.dumps([SUITE, list(recipe), list(changes)]).encode())
    for path in files:
        digest.update(path.read_bytes())
    return f"localhost/{name}:{SUITE}-{digest.hexdigest()[:10]}"


def debian_image(name: str, recipe: Sequence[str], changes: Sequence[str], *files: Path) -> str:
    """A base image made by mmdebstrap from Debian's packages; made once, then found by its tag."""
    tag = _recipe_tag(name, recipe, changes, *files)
    if image_exists(tag):
        return tag
    with tempfile.TemporaryDirectory(prefix="worthit-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs.tar"
        result = subprocess.run(
            ["mmdebstrap", "--quiet", "--variant=minbase", *recipe, SUITE, str(rootfs), debian_mirror()],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if result.returncode != 0:
            raise PodmanError(f"mmdebstrap for {name} exited {result.returncode}:\n{result.stderr[-4000:]}")
        podman("import", *(arg for change in changes for arg in ("--change", change)), str(rootfs), tag, timeout=300)
    return tag


def python_image() -> str:
    """Debian's Python 3.11, standing in for python:3.11-slim-bookworm."""
    return debian_image("worthit-test-python", PYTHON_RECIPE, PYTHON_CHANGES, HOST_CA)


def postgres_image() -> str:
    """Debian's PostgreSQL, standing in for the official postgres image (its environment and data directory)."""
    return debian_image("worthit-test-postgres", POSTGRES_RECIPE, POSTGRES_CHANGES, HERE / "postgres-entrypoint.sh")


def build(context: Path, tag: str, base: str) -> str:
    """`docker build -f deploy/Dockerfile -t TAG .` with podman, on a locally made base image."""
    podman(
        "build",
        "--network",
        "host",
        *LIMITS,
        # Podman keeps HEALTHCHECK only in Docker's image format.
        "--format",
        "docker",
        "--file",
        str(context / "deploy" / "Dockerfile"),
        "--build-arg",
        f"PYTHON_IMAGE={base}",
        "--tag",
        tag,
        str(context),
        timeout=900,
    )
    return tag


def image_size(tag: str) -> int:
    return int(podman("image", "inspect", "--format", "{{.Size}}", tag).stdout.strip())


def published(container: str, port: int = 8000) -> str:
    """The loopback URL a container's port is published on."""
    out = podman("port", container, f"{port}/tcp").stdout.split()
    if not out:
        raise PodmanError(f"{container} publishes no port {port}")
    host, _, host_port = out[0].rpartition(":")
    return f"http://{host or '127.0.0.1'}:{host_port}"


def wait_for(
    url: str, container: str | None = None, timeout: float = 60, status: int = 200, *, restarting: bool = False
) -> float:
    """Seconds until GET url answers `status`; fails early when the container has stopped, unless it is `restarting`
    (a replica that refuses an unmigrated schema exits and is started again by its restart policy)."""
    started = time.monotonic()
    last: object = None
    while (elapsed := time.monotonic() - started) < timeout:
        try:
            response = httpx.get(url, timeout=2)
            last = f"{response.status_code} {response.text[:300]}"
            if response.status_code == status:
                return elapsed
        except httpx.HTTPError as exc:
            last = exc
        if container and not restarting and state(container) not in ("running", "created", "configured", "initialized"):
            raise PodmanError(f"{container} is {state(container)} before {url} answered:\n{logs(container)}")
        time.sleep(0.1)
    raise PodmanError(
        f"{url} did not answer {status} within {timeout} s (last: {last})"
        + (f"\n{logs(container)}" if container else "")
    )


def state(container: str) -> str:
    result = podman("container", "inspect", "--format", "{{.State.Status}}", container, check=False)
    return result.stdout.strip() if result.returncode == 0 else "gone"


def exit_code(container: str) -> int:
    return int(podman("container", "inspect", "--format", "{{.State.ExitCode}}", container).stdout.strip())


def logs(container: str) -> str:
    result = podman("logs", container, check=False)
    return (result.stdout + result.stderr)[-6000:]


@dataclass
class Resources:
    """Containers and volumes a test made, removed at the end whatever happened."""

    containers: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)

    def run(self, image: str, *args: str, name: str, command: Sequence[str] = ()) -> str:
        self.containers.append(name)
        podman("run", "--detach", "--name", name, *LIMITS, *args, image, *command)
        return name

    def volume(self, name: str) -> str:
        self.volumes.append(name)
        podman("volume", "create", name)
        return name

    def close(self) -> None:
        for container in reversed(self.containers):
            podman("rm", "--force", "--time", "2", container, check=False, timeout=60)
        for volume in self.volumes:
            podman("volume", "rm", "--force", volume, check=False)


@dataclass
class Compose:
    """podman-compose on deploy/compose.yaml plus an override that names local images, under a project of its own."""

    project: str
    files: Sequence[Path]
    env: dict[str, str] = field(default_factory=dict)

    def __call__(self, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [
            "podman-compose",
            "--project-name",
            self.project,
            *(arg for path in self.files for arg in ("--file", str(path))),
            "--podman-args",
            " ".join(GLOBAL_ARGS),
            "--podman-run-args",
            " ".join(LIMITS),
            *args,
        ]
        environment = {key: value for key, value in os.environ.items() if not key.startswith("WORTHIT_")}
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=environment | self.env,
            stdin=subprocess.DEVNULL,
        )
        if check and result.returncode != 0:
            raise PodmanError(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
        return result

    def container(self, service: str, index: int = 1) -> str:
        return f"{self.project}_{service}_{index}"

    def down(self) -> None:
        self("down", "--volumes", check=False)
        # What `down` does not know of: containers made by `run` and replicas a test started by hand.
        names = podman(
            "ps", "--all", "--format", "{{.Names}}", "--filter", f"label=io.podman.compose.project={self.project}"
        ).stdout.split()
        for name in names:
            podman("rm", "--force", "--time", "2", name, check=False, timeout=60)
        for volume in podman("volume", "ls", "--format", "{{.Name}}").stdout.split():
            if volume.startswith(f"{self.project}_"):
                podman("volume", "rm", "--force", volume, check=False)
        podman("network", "rm", "--force", f"{self.project}_default", check=False)
