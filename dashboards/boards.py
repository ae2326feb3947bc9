"""The shipped dashboards, assembled from the sections in `dashboards/panels/`.

- overview: the status row (what pages, what drifts, where the change is), a row per
  scheduled job (`metrics_view.scheduled` order, drawn by the section
  that claims the job: retrieval, generation, judge, UX; a job none claims still gets
  its row), then the versions and the alerting sections; tenant and version variables.
- operations: ingest, the OTLP traces per convention, the judge's calls and its agreement
  with humans, the scheduled jobs, the group labels' values.
- distributions: the drill-down heatmaps with exemplars; a tenant variable.
- topics: what users ask about, each topic's traffic and quality (`panels/topics.py`).
- conversations: the sessions job's outcomes (resolved, re-asked, escalated, abandoned,
  turns to resolution) with their intervals, and per tenant; its own board, as the
  overview is near Kubernetes' ConfigMap size limit; tenant variable.
- slo: a section per quality SLO (budget left, burn rate, events), built
  from `examples/slo.yaml`; a tenant variable.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from grafana_foundation_sdk.builders import dashboard as builders
from grafana_foundation_sdk.models import dashboard as model

from collector.settings import SloSpec
from collector.settings.openslo import load_openslo
from dashboards import metrics_view
from dashboards.panels import (
    alerting,
    conversations,
    drilldown,
    generation,
    judge,
    operations,
    quality,
    retrieval,
    slo,
    status,
    topics,
    ux,
    versions,
)
from dashboards.panels.common import DS
from dashboards.panels.layout import Section, place

QUALITY_SECTIONS = (retrieval, generation, judge, ux)
"""The sections that draw the scheduled jobs' rows on the overview, by the jobs they claim."""
TENANT_QUERY = "label_values(ragpulse_metric_value, tenant)"


def datasource_variable() -> builders.DatasourceVariable:
    return (
        builders.DatasourceVariable("datasource")
        .label("Data source")
        .type("prometheus")
        .hide(model.VariableHide.DONT_HIDE)
    )


def tenant_variable() -> builders.QueryVariable:
    """All (the default) is the overall value: the series whose tenant label is empty."""
    return (
        builders.QueryVariable("tenant")
        .label("Tenant")
        .datasource(DS)
        .query({"query": TENANT_QUERY, "refId": "tenant"})
        .include_all(True)
        .all_value("")
        .multi(False)
        .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .current(model.VariableOption(text="All", value="$__all"))
        .description("All = the overall value over every tenant (tenant label empty).")
    )


def _board(
    uid: str, title: str, description: str, sections: Iterable[Section]
) -> builders.Dashboard:
    board = (
        builders.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(["ragpulse"])
        .version(1)
        .editable()
        .refresh("1m")
        .time("now-24h", "now")
        .timezone("utc")
        .annotations([])
        .with_variable(datasource_variable())
    )
    return place(board, sections)


def quality_rows() -> list[Section]:
    """A row per scheduled job, each drawn by the section claiming it."""
    scheduled = metrics_view.scheduled()
    claimed = {job: row for section in QUALITY_SECTIONS for job, row in section.rows(scheduled)}
    return [
        claimed.get(job) or quality.job_section(title, metrics) for job, title, metrics in scheduled
    ]


def overview() -> builders.Dashboard:
    metrics_view.check_bands()
    sections = [
        status.section(),
        *quality_rows(),
        versions.section(),
        alerting.detectors(),
    ]
    board = _board(
        "ragpulse-overview",
        "ragpulse — RAG quality overview",
        "Quality of the RAG system per tier: the last hour with its 95% CI against the "
        "7-day baseline.",
        sections,
    )
    return board.with_variable(tenant_variable()).with_variable(versions.variable())


def operations_board() -> builders.Dashboard:
    sections = [
        operations.ingest(),
        operations.otlp(),
        judge.calls(),
        judge.against_humans(),
        operations.jobs(),
        operations.label_values(),
    ]
    return _board(
        "ragpulse-operations",
        "ragpulse — operations",
        "Ingest, consumer lag, LLM-judge calls and cost, and scheduled job health.",
        sections,
    )


def topics_board() -> builders.Dashboard:
    """The topics row on a dashboard of its own: the overview is at the size a Kubernetes
    ConfigMap can carry through `kubectl apply` (dashboards/kubernetes.py)."""
    return _board(
        "ragpulse-topics",
        "ragpulse — topics",
        "What users ask about: each topic's traffic, share and emerging flag, and each "
        "tier's headline metric per topic with its 95% CI against 7 days.",
        [topics.section()],
    )


def distributions() -> builders.Dashboard:
    board = _board(
        "ragpulse-distributions",
        "ragpulse — score distributions and exemplars",
        "Per-trace scores of every quality metric as heatmaps; the exemplars link a bucket "
        "to a trace in it.",
        drilldown.sections(),
    )
    return board.with_variable(tenant_variable())


def conversations_board() -> builders.Dashboard:
    board = _board(
        "ragpulse-conversations",
        "ragpulse — conversations",
        "Did the users get what they came for: the share of closed sessions resolved, "
        "re-asked, escalated to a person and abandoned, with 95% intervals, overall and "
        "per tenant.",
        [conversations.metrics_section(), conversations.tenants_section()],
    )
    return board.with_variable(tenant_variable())


SLO_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "slo.yaml"
"""The OpenSLO file the shipped SLO rules, their tests and the SLO dashboard are built from."""


def slo_variable() -> builders.QueryVariable:
    return (
        builders.QueryVariable("slo_tenant")
        .label("Tenant")
        .datasource(DS)
        .query({"query": slo.TENANT_QUERY, "refId": "slo_tenant"})
        .include_all(True)
        .all_value(".*")
        .multi(False)
        .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .current(model.VariableOption(text="All", value="$__all"))
        .description("An SLO's events are per tenant; All draws every tenant.")
    )


def slo_board(specs: Sequence[SloSpec] | None = None) -> builders.Dashboard:
    """One section per SLO (default: those of `SLO_EXAMPLE`)."""
    found = load_openslo(SLO_EXAMPLE) if specs is None else specs
    board = _board(
        "ragpulse-slo",
        "ragpulse — quality SLOs",
        "Each quality SLO's error budget left, burn rate and events, per tenant.",
        [slo.section(spec) for spec in found],
    )
    return board.time("now-7d", "now").with_variable(slo_variable())


BOARDS = {
    "overview.json": overview,
    "operations.json": operations_board,
    "distributions.json": distributions,
    "topics.json": topics_board,
    "conversations.json": conversations_board,
    "slo.json": slo_board,
}
"""Each shipped file and the dashboard in it."""
