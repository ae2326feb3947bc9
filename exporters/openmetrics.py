"""Timestamped OpenMetrics text of back-filled points, for `promtool tsdb create-blocks-from
openmetrics`: the same families, label values and bounds as `/metrics` serves, at past times.

OpenMetrics wants every family's samples in one block, and promtool wants each series'
samples in time order. Back-fill produces one time step after another, so each family is
written to a spool file of its own as the steps come, and `close` joins them (with their
TYPE and HELP lines) and ends the text with `# EOF`.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO

from collector.jobs.run.publish import QualityPoint
from collector.jobs.windows.labels import LabelLimits
from exporters.families import quality_families


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(names: Iterable[str], values: Iterable[str]) -> str:
    pairs = [f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True)]
    return "{" + ",".join(pairs) + "}" if pairs else ""


class OpenMetricsWriter:
    """Collects timestamped samples of quality families; `close` writes the file."""

    def __init__(
        self, path: Path, group_labels: Sequence[str], limits: LabelLimits | None = None
    ) -> None:
        self.path = path
        self.group_labels = tuple(group_labels)
        self.limits = limits or LabelLimits()
        self.samples = 0
        self._spool = Path(tempfile.mkdtemp(prefix="ragpulse-openmetrics-"))
        self._files: dict[str, IO[str]] = {}
        self._headers: dict[str, str] = {}

    def add(self, at: datetime, points: Iterable[QualityPoint]) -> None:
        """Every sample `points` make in the exported families, at time `at`."""
        ts = f"{at.timestamp():.3f}"
        for family in quality_families(points, self.group_labels, self.limits):
            out = self._files.get(family.name)
            if out is None:
                out = self._files[family.name] = open(  # noqa: SIM115 - closed in close()
                    self._spool / family.name, "w", encoding="utf-8"
                )
                self._headers[family.name] = (
                    f"# TYPE {family.name} {family.type}\n"
                    f"# HELP {family.name} {_escape(family.documentation)}\n"
                )
            for sample in family.samples:
                labels = _labels(sample.labels.keys(), sample.labels.values())
                out.write(f"{sample.name}{labels} {_number(sample.value)} {ts}\n")
                self.samples += 1

    def close(self) -> None:
        """Write the OpenMetrics file (families in name order) and drop the spool."""
        try:
            with open(self.path, "w", encoding="utf-8") as target:
                for name in sorted(self._files):
                    self._files[name].close()
                    target.write(self._headers[name])
                    with open(self._spool / name, encoding="utf-8") as part:
                        shutil.copyfileobj(part, target)
                target.write("# EOF\n")
        finally:
            for handle in self._files.values():
                handle.close()
            shutil.rmtree(self._spool, ignore_errors=True)
