"""The scrape step of `jobs_memory.py`: the exporter of a revision, started on the
benchmark's database, timed until its `/metrics` gives the job's 7-day sample count, then
scraped. Today it renders `metric_results` and never reads outcome rows; a design that
reads aggregates on a scrape is measured the same way."""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        body: bytes = response.read()
    return body


def exported(body: bytes, metric: str) -> float | None:
    """The 7-day overall sample count of `metric` on a /metrics page (None: not there)."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            labels = sample.labels
            if (
                sample.name == "ragpulse_metric_samples"
                and labels.get("metric") == metric
                and labels.get("window") == "7d"
                and not any(v for k, v in labels.items() if k not in ("metric", "window"))
            ):
                return float(sample.value)
    return None


def scrape(
    env: Callable[[int], dict[str, str]], metric: str, expected: int, log: Path
) -> tuple[float, float, float]:
    """Seconds until the exporter's /metrics gives `metric`'s 7-day overall sample count
    as `expected`, the median of 5 scrapes after (ms), and the exporter's RSS then (MB)."""
    import psutil

    from tests.fixtures.prometheus import free_port

    port = free_port()
    cmd = [sys.executable, "-m", "ragpulse", "run", "--role", "exporter"]
    with open(log, "ab") as err, tempfile.TemporaryDirectory() as cwd:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env(port), stderr=err)
        try:
            endpoint = f"http://127.0.0.1:{port}/metrics"
            found = None
            while found != expected:
                if proc.poll() is not None:
                    raise RuntimeError(f"the exporter exited {proc.returncode}; see {log}")
                if time.perf_counter() - started > 120:
                    raise RuntimeError(f"{endpoint}: 7d {metric} samples {found}, not {expected}")
                time.sleep(0.1)
                try:
                    found = exported(_get(endpoint), metric)
                except OSError:
                    continue
            ready = time.perf_counter() - started
            times = []
            for _ in range(5):
                at = time.perf_counter()
                _get(endpoint)
                times.append((time.perf_counter() - at) * 1000)
            rss = psutil.Process(proc.pid).memory_info().rss / 2**20
        finally:
            proc.terminate()
            proc.wait(60)
    return ready, statistics.median(times), rss
