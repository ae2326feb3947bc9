"""A small client of Prometheus's HTTP API (query, query_range, alerts, config) for the
static report."""

from __future__ import annotations

import json
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

import yaml


class PrometheusUnreachable(RuntimeError):
    """Prometheus cannot be reached at all (the report cannot be drawn)."""


class QueryError(RuntimeError):
    """Prometheus rejected one query (shown on its panel)."""


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    times: tuple[float, ...]
    values: tuple[float, ...]


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def parse_duration(text: str) -> float:
    """A Prometheus/Grafana duration (`90s`, `1h30m`, `7d`) in seconds."""
    parts = _DURATION.findall(text.strip())
    if not parts or "".join(a + b for a, b in parts) != text.strip():
        raise ValueError(f"not a duration: {text!r} (e.g. 30m, 6h, 7d)")
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def format_duration(seconds: float) -> str:
    """Seconds as a PromQL duration (whole seconds, at least 1s)."""
    return f"{max(1, math.ceil(seconds))}s"


class PromClient:
    def __init__(self, url: str, timeout_s: float = 30.0):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def _get(self, path: str, params: dict[str, str]) -> Any:
        address = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(address, timeout=self.timeout_s) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            try:
                body = json.loads(exc.read())
            except (ValueError, OSError):
                raise QueryError(f"HTTP {exc.code} from {path}") from None
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise PrometheusUnreachable(
                f"cannot reach Prometheus at {self.url}: {reason}"
            ) from None
        if not isinstance(body, dict) or body.get("status") != "success":
            error = body.get("error") if isinstance(body, dict) else body
            raise QueryError(str(error))
        return body["data"]

    def check(self) -> None:
        """Raise PrometheusUnreachable unless the API answers."""
        try:
            self._get("query", {"query": "1"})
        except QueryError as exc:
            raise PrometheusUnreachable(f"{self.url} is not a Prometheus API: {exc}") from None

    def scrape_interval(self, default: float = 15.0) -> float:
        """The global scrape interval of the server's configuration (Grafana's
        `$__rate_interval` is derived from it)."""
        try:
            config = yaml.safe_load(self._get("status/config", {})["yaml"])
            return parse_duration(str(config["global"]["scrape_interval"]))
        except (QueryError, KeyError, TypeError, ValueError, yaml.YAMLError):
            return default

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[Series]:
        data = self._get(
            "query_range",
            {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"},
        )
        out = []
        for item in data.get("result", []):
            times: list[float] = []
            values: list[float] = []
            for t, v in item.get("values", []):
                number = float(v)
                if math.isfinite(number):  # NaN/Inf points are gaps, not values
                    times.append(float(t))
                    values.append(number)
            out.append(Series(dict(item.get("metric", {})), tuple(times), tuple(values)))
        return out

    def query(self, expr: str, at: float) -> list[tuple[dict[str, str], float]]:
        """An instant vector at `at`: (labels, value) of every finite sample."""
        data = self._get("query", {"query": expr, "time": f"{at:.3f}"})
        out = []
        for item in data.get("result", []) if data.get("resultType") == "vector" else []:
            number = float(item.get("value", [0, "NaN"])[1])
            if math.isfinite(number):
                out.append((dict(item.get("metric", {})), number))
        return out

    def alerts(self) -> list[dict[str, Any]]:
        """The active alerts with their labels, state, `activeAt` and annotations (the
        rule's runbook text, templates already expanded by Prometheus)."""
        data = self._get("alerts", {})
        found = data.get("alerts", []) if isinstance(data, dict) else []
        return [a for a in found if isinstance(a, dict)]

    def alerting_rules(self) -> list[dict[str, Any]]:
        """The alerting rules Prometheus evaluates (`/api/v1/rules?type=alert`): name,
        labels and annotations as written (templates not expanded)."""
        data = self._get("rules", {"type": "alert"})
        groups = data.get("groups", []) if isinstance(data, dict) else []
        return [
            rule
            for group in groups
            if isinstance(group, dict)
            for rule in group.get("rules", [])
            if isinstance(rule, dict) and rule.get("type", "alerting") == "alerting"
        ]

    def exemplars(self, expr: str, start: float, end: float) -> list[dict[str, Any]]:
        """`/api/v1/query_exemplars` of the selectors in `expr` over [start, end]: groups of
        `seriesLabels` and `exemplars` (empty when the server keeps none)."""
        data = self._get(
            "query_exemplars", {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}"}
        )
        return [g for g in data if isinstance(g, dict)] if isinstance(data, list) else []

    def first_sample_time(self, start: float, end: float) -> float | None:
        """When the server first scraped anything in [start, end] (`up` exists from the
        first scrape on), so a young server's report is not a thin line at the right."""
        step = max(1.0, (end - start) / 500)
        try:
            series = self.query_range("count(up)", start, end, step)
            times = [s.times[0] for s in series if s.times]
            if not times or step <= 1.0:
                return min(times) if times else None
            # the coarse step finds it up to a step late (minutes on a day's range):
            # look again at that step before it, to the second
            coarse = min(times)
            fine = max(1.0, step / 200)
            series = self.query_range("count(up)", max(start, coarse - step), coarse, fine)
        except QueryError:
            return None
        found = [s.times[0] for s in series if s.times]
        return min(found, default=coarse)

    def has_series(self, pattern: str, start: float, end: float) -> bool:
        """Whether any series whose name matches `pattern` (a PromQL regex) has a sample in
        [start, end]: the report's "is ragpulse scraped at all?" (a panel with a constant
        fallback, `or vector(0)`, has data either way)."""
        step = max(1.0, (end - start) / 500)
        try:
            found = self.query_range(f'count({{__name__=~"{pattern}"}})', start, end, step)
        except QueryError:
            return False
        return any(s.times for s in found)
