"""The image: its size, and the time from `podman run` to a ready `/readyz`, against `worthit serve` on the host.

    python benchmarks/bench_image.py [--runs 3]

The image is deploy/Dockerfile built with podman on the Debian-made base the container tests use (tests/podman.py);
each run starts a new container on a new volume, so the time includes the SQLite migration on first start, and the
image's two workers. The baseline starts the same code the same way outside a container.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import podman
from tests.harness import start_server

TAG = "localhost/worthit-test:current"


@dataclass
class ImageFigures:
    size_bytes: int
    base_bytes: int
    ready_seconds: list[float]
    host_ready_seconds: list[float]


def run_to_ready(image: str) -> float:
    """Seconds from `podman run` until /readyz answers 200, in a new container on a new volume."""
    made = podman.Resources()
    try:
        volume = made.volume(f"worthit-bench-{secrets.token_hex(3)}")
        started = time.monotonic()
        name = made.run(
            image,
            "--read-only",
            "--publish",
            "127.0.0.1::8000",
            "--volume",
            f"{volume}:/var/lib/worthit",
            name=f"worthit-bench-{secrets.token_hex(3)}",
        )
        podman.wait_for(f"{podman.published(name)}/readyz", name, timeout=60)
        return time.monotonic() - started
    finally:
        made.close()


def host_to_ready(workdir: Path) -> float:
    started = time.monotonic()
    server = start_server(f"sqlite:///{workdir / f'{secrets.token_hex(3)}.db'}", workdir / "host.log", workers=2)
    elapsed = time.monotonic() - started
    server.stop()
    return elapsed


def measure(runs: int = 3) -> ImageFigures | None:
    """None when podman (or what makes its base images) is not installed."""
    if podman.missing_tools():
        return None
    base = podman.python_image()
    image = podman.build(ROOT, TAG, base)
    with tempfile.TemporaryDirectory() as tmp:
        return ImageFigures(
            size_bytes=podman.image_size(image),
            base_bytes=podman.image_size(base),
            ready_seconds=[run_to_ready(image) for _ in range(runs)],
            host_ready_seconds=[host_to_ready(Path(tmp)) for _ in range(runs)],
        )


def median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    figures = measure(args.runs)
    if figures is None:
        print(f"not installed: {', '.join(podman.missing_tools())}")
        return
    print(
        f"image {figures.size_bytes / 1e6:.0f} MB (base {figures.base_bytes / 1e6:.0f} MB); run -> /readyz "
        f"{median(figures.ready_seconds):.2f} s (host {median(figures.host_ready_seconds):.2f} s)"
    )


if __name__ == "__main__":
    main()
