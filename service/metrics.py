"""The Prometheus metrics: requests and latency (counted by the HTTP layer) and decisions by verdict (counted by the
decision service)."""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client import multiprocess as prometheus_multiprocess

__all__ = ["LATENCY", "REQUESTS", "VERDICTS", "metrics_text"]

REQUESTS = Counter("worthit_requests_total", "HTTP requests answered.", ["method", "route", "status"])
LATENCY = Histogram(
    "worthit_request_duration_seconds",
    "Time to answer an HTTP request.",
    ["route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
VERDICTS = Counter("worthit_decisions_total", "Decisions stored, by verdict and source.", ["verdict", "source"])


def metrics_text() -> bytes:
    """The exposition text; across all worker processes when they share a multiprocess directory."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        prometheus_multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)
    return generate_latest()
