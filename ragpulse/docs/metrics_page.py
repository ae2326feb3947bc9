"""The metrics reference: every metric of the registry (`evaluators.registry.declared()`)
with its tier, direction, unit, what it needs, the jobs that compute it, the seeds it
comes from and its formula (the docstring of the module that computes it)."""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
from types import ModuleType

import evaluators.judge
import evaluators.quantiles
from dashboards import metrics_view
from dashboards.quality_rules import TIERS, tier
from evaluators.registry import JobMetric, MetricSpec, declared
from ragpulse.docs.markdown import BANNER, code, table

INTRO = """# Metrics

Every metric ragpulse computes, read from the registry (`evaluators/registry.py`): its
tier (the part of the RAG system it watches), its direction (which way is better: the
drift alerts and the dashboard colours follow it), its unit, what a trace needs for it,
the scheduled jobs that compute it, and its formula as the module computing it writes
it, with the seeds it cites. The choices behind the formulas are in
[Metrics and formulas](../concepts/metrics.md).

"""

_SEED = re.compile(r"seed \d{3}(?: §[\d.]+)?")


def _judge_modules() -> list[ModuleType]:
    return [
        importlib.import_module(f"evaluators.judge.{info.name}")
        for info in pkgutil.iter_modules(evaluators.judge.__path__)
    ]


def formula_module(name: str, spec: MetricSpec | JobMetric) -> ModuleType | None:
    """The module whose docstring defines the metric: the one holding its `compute`, or,
    for the judge metrics (one shared `compute`), the judge module written for it; for a
    window quantile (`latency_ms_p95`), `evaluators.quantiles`."""
    if isinstance(spec, JobMetric):
        return evaluators.quantiles if spec.quantile_of is not None else None
    module = sys.modules[spec.compute.__module__]
    if module.__name__ != "evaluators.judge.metric":
        return module
    for candidate in _judge_modules():
        first = (candidate.__doc__ or "").split("\n", 1)[0]
        if f"`{name}`" in first:
            return candidate
    return None


def formula(name: str, spec: MetricSpec | JobMetric) -> str:
    module = formula_module(name, spec)
    return (module.__doc__ or "").strip() if module is not None else ""


def seeds(text: str) -> list[str]:
    """The seed sections a text cites, in order, each once."""
    return list(dict.fromkeys(_SEED.findall(text)))


def jobs_of() -> dict[str, list[str]]:
    """Metric family -> the scheduled jobs reporting it (under any cutoff); a window
    quantile (`latency_ms_p95`) -> those of its metric."""
    out: dict[str, list[str]] = {}
    for job, _, metrics in metrics_view.scheduled():
        for metric in metrics:
            family = metric.partition("@")[0]
            for name in (family, *metrics_view.quantiles_of(family)):
                if job not in out.setdefault(name, []):
                    out[name].append(job)
    return out


def render() -> str:
    metrics = declared()
    jobs = jobs_of()
    header = ("metric", "tier", "direction", "unit", "jobs", "seeds")
    rows = []
    sections = []
    order = [name for name, _ in TIERS] + ["generation"]
    for name, spec in sorted(metrics.items(), key=lambda kv: (order.index(tier(kv[0])), kv[0])):
        text = formula(name, spec)
        cited = seeds(f"{spec.description}\n{text}")
        rows.append(
            [
                f"[{code(name)}](#{name.lower()})",
                tier(name),
                str(spec.direction),
                metrics_view.UNIT_TEXT[spec.unit],
                ", ".join(jobs.get(name, [])) or "offline (`ragpulse evaluate`)",
                ", ".join(cited) or "",
            ]
        )
        lines = [f"## {name}\n", f"{spec.description}\n"]
        direction = metrics_view.DIRECTION_TEXT.get(str(spec.direction), "not declared")
        facts = [
            f"- **Tier**: {tier(name)}",
            f"- **Direction**: {direction}",
            f"- **Unit**: {metrics_view.UNIT_TEXT[spec.unit]}",
            f"- **95% interval**: {'yes' if spec.interval else 'no'}",
        ]
        if isinstance(spec, MetricSpec):
            facts.append(f"- **Computed**: {spec.kind.replace('_', ' ')}; needs {spec.needs}")
            if spec.cutoff != "none":
                facts.append(f"- **Cutoff k**: {spec.cutoff} (`{name}@k`)")
        else:
            facts.append("- **Computed**: by its job, over a window")
        if jobs.get(name):
            facts.append("- **Jobs**: " + ", ".join(code(j) for j in jobs[name]))
        if cited:
            facts.append("- **Seeds**: " + ", ".join(cited))
        lines.append("\n".join(facts) + "\n")
        if text:
            lines.append(f"```text\n{text}\n```\n")
        sections.append("\n".join(lines))
    return BANNER + INTRO + table(header, rows) + "\n" + "\n".join(sections).rstrip("\n") + "\n"
