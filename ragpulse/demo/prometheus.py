"""A real Prometheus for `ragpulse demo`: scrapes the demo's /metrics with the shipped rules
and keeps exemplars (`--enable-feature=exemplar-storage`), so the score histograms' trace
ids can be queried (`/api/v1/query_exemplars`). Its SLO rules are those of the demo's own
SLOs (`rule_files`: the example OpenSLO file's unless the settings name others), generated
on every start.

The Debian `prometheus` binary is used when it is installed; its configuration and data
live under the demo directory (the data survive a restart, so the charts keep their
history), it listens on 9090 or, when that is taken, on a free port, and the demo stops it
by its PID on exit.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from collector.ingest.kafka.broker import _die_with_parent, free_port
from collector.settings import SloSpec

HOST = "127.0.0.1"
DEFAULT_PORT = 9090
SLO_RULES_PREFIX = "slo-"
"""The shipped SLO rules files (`slo-NAME.yml`, generated from examples/slo.yaml)."""
INSTALL_HINT = (
    "install the `prometheus` package (Debian/Ubuntu: sudo apt-get install prometheus) "
    "to see the dashboards"
)


class PrometheusError(RuntimeError):
    """Prometheus could not be started."""


def find_prometheus() -> str | None:
    """The prometheus binary on PATH (or Debian's /usr/bin/prometheus), else None."""
    found = shutil.which("prometheus")
    if found:
        return found
    return "/usr/bin/prometheus" if Path("/usr/bin/prometheus").is_file() else None


def shipped_rules() -> list[Path]:
    """The alert and recording rules of the source tree (dashboards/prometheus/rules)."""
    rules = Path(__file__).resolve().parents[2] / "dashboards" / "prometheus" / "rules"
    return sorted(rules.glob("*.yml")) if rules.is_dir() else []


def rule_files(directory: Path, specs: Sequence[SloSpec]) -> list[Path]:
    """The rules the demo's Prometheus loads: the shipped ones, but the SLO rules generated
    from the demo's own SLOs (`specs`: the example OpenSLO file's, unless the settings name
    others) into `directory/rules`, so the SLOs whose events the demo records are the ones
    its Prometheus alerts on (for the example file they equal the shipped `slo-*.yml`)."""
    from dashboards import slo_rules

    out = directory / "rules"
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("slo-*.yml"):  # a previous start's SLOs
        old.unlink()
    generated = []
    for spec in specs:
        path = out / slo_rules.file_name(spec)
        path.write_text(slo_rules.render([spec]), encoding="utf-8")
        generated.append(path)
    kept = [p for p in shipped_rules() if not p.name.startswith(SLO_RULES_PREFIX)]
    return [*kept, *generated]


def port_is_free(host: str, port: int) -> bool:
    """Whether a server that sets SO_REUSEADDR (as Prometheus does) can listen on `port`:
    the previous demo's closed connections in TIME_WAIT do not count as taken."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def write_config(directory: Path, target: str, rules: list[Path], interval: str) -> Path:
    config = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "rule_files": [str(p) for p in rules],
        "scrape_configs": [
            {
                "job_name": "ragpulse",
                # ragpulse's own `job` label (ragpulse_job_runs_total{job}) must win over
                # the scrape job's name, or every job's series collapse into one.
                "honor_labels": True,
                "static_configs": [{"targets": [target]}],
            }
        ],
    }
    path = directory / "prometheus.yml"
    path.write_text(
        "# Written by `ragpulse demo` on every start.\n" + yaml.safe_dump(config, sort_keys=False)
    )
    return path


@dataclass
class DemoPrometheus:
    """A started Prometheus process; `stop()` ends it (by its PID) and is idempotent."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path
    rules: list[Path] = field(default_factory=list)

    def stop(self, timeout_s: float = 10.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_prometheus(
    binary: str,
    directory: Path,
    target: str,
    *,
    port: int = DEFAULT_PORT,
    interval: str = "5s",
    timeout_s: float = 30.0,
    slo_specs: Sequence[SloSpec] | None = None,
) -> DemoPrometheus:
    """Start Prometheus scraping `target` (host:port), wait until it is ready; with
    `slo_specs`, the SLO rules are generated from them (`rule_files`)."""
    directory.mkdir(parents=True, exist_ok=True)
    rules = shipped_rules() if slo_specs is None else rule_files(directory, slo_specs)
    config = write_config(directory, target, rules, interval)
    if not port or not port_is_free(HOST, port):
        port = free_port(HOST)
    log = directory / "prometheus.log"
    with log.open("ab") as output:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address={HOST}:{port}",
                "--storage.tsdb.retention.time=15d",
                # keeps the trace_id exemplars of ragpulse_trace_score (OpenMetrics scrape)
                "--enable-feature=exemplar-storage",
            ],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches the demo, which stops it in order
            preexec_fn=_die_with_parent,
        )
    handle = DemoPrometheus(f"http://{HOST}:{port}", process, log, rules)
    if wait_until_ready(handle.url, process, timeout_s):
        return handle
    handle.stop()
    tail = log.read_text(errors="replace").strip().splitlines()[-3:]
    raise PrometheusError(f"prometheus did not start (log {log}): " + " | ".join(tail))


def wait_until_ready(url: str, process: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """True once Prometheus at `url` answers /-/ready; False if it exits or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.2)
