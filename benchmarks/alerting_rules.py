"""Alert rules evaluated by a real Prometheus over back-filled history, for the benchmark.

`RulesProm` loads a timestamped OpenMetrics file into a TSDB with promtool, starts the
Debian `prometheus` binary on it (127.0.0.1, a free port, nothing scraped), and evaluates
every alerting rule's expression once a minute over a time range (`query_range`). The
rule manager's state machine is then applied to each label set's results: pending from
the first minute the expression returns it, firing once it held for `for:`, resolved the
first minute it is absent, or `keep_firing_for:` after that. `Episode`s are the firing
intervals.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from collector.settings import parse_duration

STEP = 60.0


@dataclass(frozen=True)
class Episode:
    alert: str
    severity: str
    labels: tuple[tuple[str, str], ...]
    start: float
    end: float


def _seconds(text: str | None) -> float:
    return 0.0 if not text else parse_duration(text)


def episodes_of(
    alert: str, severity: str, labels: tuple[tuple[str, str], ...], true_at: Iterable[float],
    start: float, end: float, hold: float, keep: float, step: float = STEP,
) -> list[Episode]:  # fmt: skip
    """Firing intervals of one label set whose expression returned it at `true_at`
    (evaluated every `step` seconds)."""
    present = set(true_at)
    out = []
    pending = firing = false_since = None
    t = start
    while t <= end:
        if t in present:
            false_since = None
            pending = t if pending is None else pending
            if firing is None and t - pending >= hold:
                firing = t
        else:
            false_since = t if false_since is None else false_since
            # keep_firing_for counts from the first evaluation that found it false
            if firing is None or t - false_since >= keep:
                if firing is not None:
                    out.append(Episode(alert, severity, labels, firing, t))
                pending = firing = None
        t += step
    if firing is not None:
        out.append(Episode(alert, severity, labels, firing, end))
    return out


def family_episodes(episodes: Sequence[Episode]) -> list[tuple[float, float]]:
    """Overlapping episodes merged: what one on-call person is interrupted by."""
    merged: list[tuple[float, float]] = []
    for e in sorted(episodes, key=lambda e: e.start):
        if merged and e.start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e.end))
        else:
            merged.append((e.start, e.end))
    return merged


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RulesProm:
    """A Prometheus over back-filled data; use as a context manager."""

    def __init__(self, openmetrics: Path, data: Path, lookback_s: float) -> None:
        self.openmetrics = openmetrics
        self.data = data
        self.lookback_s = lookback_s
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""

    def __enter__(self) -> RulesProm:
        promtool = shutil.which("promtool") or "/usr/bin/promtool"
        made = subprocess.run(
            [promtool, "tsdb", "create-blocks-from", "openmetrics", str(self.openmetrics),
             str(self.data)], capture_output=True, text=True,
        )  # fmt: skip
        if made.returncode != 0:
            raise RuntimeError(f"promtool: {made.stderr[-2000:]}")
        config = self.data / "prometheus.yml"
        config.write_text("global: {evaluation_interval: 1m}\n")
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        binary = shutil.which("prometheus") or "/usr/bin/prometheus"
        self.process = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={self.data}",
             f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=10y",
             f"--query.lookback-delta={int(self.lookback_s)}s"],
            stdout=subprocess.DEVNULL, stderr=(self.data / "prometheus.log").open("wb"),
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("prometheus did not become ready") from None
                time.sleep(0.3)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)

    def query_range(self, expr: str, start: float, end: float, step: float = STEP) -> list[Any]:
        params = urllib.parse.urlencode(
            {"query": expr, "start": start, "end": end, "step": f"{int(step)}s"}
        )
        with urllib.request.urlopen(f"{self.url}/api/v1/query_range?{params}", timeout=300) as r:
            body = json.loads(r.read())
        if body.get("status") != "success":
            raise RuntimeError(f"{expr}: {body}")
        return list(body["data"]["result"])

    def evaluate(self, files: Sequence[Path], start: float, end: float) -> list[Episode]:
        """Every alerting rule of `files`, every minute from `start` to `end`."""
        out: list[Episode] = []
        for path in files:
            for group in yaml.safe_load(path.read_text())["groups"]:
                for rule in group["rules"]:
                    if "alert" not in rule:
                        continue
                    out += self._rule(rule, start, end)
        return out

    def _rule(self, rule: dict[str, Any], start: float, end: float) -> list[Episode]:
        # a week at one-minute steps is under the API's 11,000 points: query in one go
        hold, keep = _seconds(rule.get("for")), _seconds(rule.get("keep_firing_for"))
        severity = str(rule.get("labels", {}).get("severity", ""))
        out = []
        for series in self.query_range(rule["expr"], start, end):
            labels = tuple(sorted((k, v) for k, v in series["metric"].items() if k != "__name__"))
            times = [float(t) for t, _ in series["values"]]
            out += episodes_of(rule["alert"], severity, labels, times, start, end, hold, keep)
        return out
