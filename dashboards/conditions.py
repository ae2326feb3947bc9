"""Why a panel can be empty, said on the panel: Grafana's `noValue` text and a line of its
description, derived from what the panel queries, so every panel (a new one too) says it.

An empty panel on a fresh install is normal, but "No data" does not tell a person whether
to wait, to configure something, or to worry. The condition of a panel is the first of
`RULES` whose series its queries read; a quality panel's is that of the job computing its
metric (`JOB_CONDITIONS`): the judge jobs need a judge, the retrieval benchmark ground
truth, and so on; a metric's percentiles (`latency_ms_p95`) need its values. Grafana
shows one fixed text, so a job-input condition says both what the job needs and that it
must have run; the report (`ragpulse report`, `ragpulse/report_reasons.py`) looks at the
facts (job runs, judge, versions, ground truth in the store) and says which one holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from grafana_foundation_sdk.models import dashboard as model

from dashboards import metrics_view


@dataclass(frozen=True)
class Condition:
    """What an empty panel lacks, and how to change it (one line)."""

    name: str
    text: str
    short: str = ""
    """A few words for a count of empty panels by reason (`ragpulse report`'s summary)."""
    lacks: str = ""
    """A job-input condition: what its job found none of, once it has run."""


JUDGE = Condition(
    "judge",
    "No judge scores yet: needs an LLM judge (RAGPULSE_JUDGE__MODELS, and "
    "RAGPULSE_JUDGE__API_BASE for a server of your own; in the demo: make demo JUDGE=local) "
    "and a run of its job",
    short="no judge configured",
)
GROUND_TRUTH = Condition(
    "ground_truth",
    "No retrieval scores yet: needs traces with ground truth (relevant_ids, relevance or "
    "shown_url, in the trace or by feedback) and a run of its job over them",
    short="no ground truth",
    lacks="no trace in its windows carries ground truth (relevant_ids, relevance or "
    "shown_url, in the trace or by feedback)",
)
JUDGE_LABELS = Condition(
    "judge_labels",
    "No labelled production-judge decisions yet: needs traces with judge and judge_label "
    "(the label often arrives by feedback) and a run of its job over them",
    short="no labelled judge decisions",
    lacks="no trace in its windows has both judge and judge_label (the label often "
    "arrives by feedback)",
)
REFERENCES = Condition(
    "references",
    "No reference scores yet: needs traces with a reference answer (reference) and a run of "
    "its job over them",
    short="no reference answers",
    lacks="no trace in its windows has a reference answer (reference)",
)
SESSIONS = Condition(
    "sessions",
    "No dialogs or cache data yet: needs traces with session_id (dialog metrics) or cache "
    "(cache hit rate) and a run of its job over them",
    short="no sessions or cache data",
    lacks="no trace in its windows has session_id or cache",
)
CONVERSATIONS = Condition(
    "conversations",
    "No closed sessions yet: needs traces with session_id; the sessions job closes a session "
    "sessions.idle (5 min) after its last turn",
    short="no closed sessions",
)
HUMAN_LABELS = Condition(
    "human_labels",
    "No human labels yet: send feedback events with labels (docs: LLM judge and human labels)",
    short="no human labels",
)
CANARY = Condition(
    "canary",
    "No canary comparison: needs a candidate and a baseline version, each with "
    "canary.min_traces scored traces in the window",
    short="no canary comparison",
)
VERSIONS = Condition(
    "versions",
    "No value per version yet: needs traces with a version (tags.version, OTLP "
    "service.version, or versions.sources) and a run of the jobs over them",
    short="no versions",
)
HISTORY = Condition(
    "history",
    "Needs history: the detectors compare the last 24h with the 7 days before and start "
    "after 1h of results",
    short="needs history",
)
NOT_WORSE = Condition(
    "not_worse",
    "Nothing to explain: no metric is worse than its 7-day baseline now",
    short="nothing worse to explain",
)
NONE_INCOMPLETE = Condition(
    "none_incomplete",
    "None incomplete: every OTLP trace carried its question, answer and contexts (or no OTLP "
    "trace arrived)",
    short="no incomplete OTLP traces",
)
TOPICS = Condition(
    "topics",
    "No topics yet: needs the questions' vectors stored (embeddings.persist; on by default "
    "on PostgreSQL) and a run of the topics job over enough of them (2 x "
    "topics.min_topic_size); per-topic metrics need topic among scheduler.group_labels",
    short="no topics yet",
)
NOTHING_FIRING = Condition("nothing_firing", "Nothing firing", short="nothing firing")
SLO_EVENTS = Condition(
    "slo_events",
    "No SLO events yet: declare SLOs (RAGPULSE_SLO__OPENSLO_FILE or slo.objectives) and let "
    "the jobs score their metrics; a burn rate needs events in its window",
    short="no SLO events",
)
PERCENTILES = Condition(
    "percentiles",
    "No values in the window yet: needs traces that report the metric "
    "(latency_ms: the trace's latency_ms, or its stages)",
    short="no values in the window",
    lacks="no trace in the window reports the metric (latency_ms: the trace's latency_ms, "
    "or its stages)",
)
NOT_YET = Condition(
    "not_yet",
    "No data yet: appears once traces arrive and the jobs have run over them "
    "(first run after scheduler.initial_delay_s)",
    short="no data yet",
)

JOB_CONDITIONS: dict[str, Condition] = {
    "rag_quality": JUDGE,
    "judge_consistency": JUDGE,
    "real_users_benchmark": GROUND_TRUTH,
    "embedding_quality": GROUND_TRUTH,
    "judge_pipeline": JUDGE_LABELS,
    "text_quality": REFERENCES,
    "ux": SESSIONS,
}
"""A quality panel's condition by the job that computes its metric (others: `NOT_YET`)."""

RULES: tuple[tuple[re.Pattern[str], Condition], ...] = (
    (re.compile(r"\bALERTS\b"), NOTHING_FIRING),
    (re.compile(r"\bragpulse_otlp_traces_incomplete"), NONE_INCOMPLETE),
    (re.compile(r"\bragpulse_topic_"), TOPICS),
    (re.compile(r"\bragpulse_canary_"), CANARY),
    (re.compile(r"\bragpulse_change_"), NOT_WORSE),
    (re.compile(r"\bragpulse_slo"), SLO_EVENTS),
    (re.compile(r"\bragpulse_(drift_score|detectable_drop)\b"), HISTORY),
    (re.compile(r"\bragpulse_(metric_corrected|judge_agreement)"), HUMAN_LABELS),
    (re.compile(r"\bragpulse_judge_(requests|latency|cost|tokens)"), JUDGE),
    (re.compile(r'metric=~?"\(?(session_|turn_|turns_to_resolution)'), CONVERSATIONS),
)
"""Series (or selectors) -> condition, first match wins; before the per-metric jobs."""

VERSION_RULE = re.compile(r'version=~"\$version"')
"""A per-version panel: after its metric's own condition (the versions table above it
shows whether there are versions; a metric per version is empty for its metric's reason)."""

_METRIC = re.compile(r'metric="([^"$]+)"')


def _job_of() -> dict[str, str]:
    return {m: job for job, _title, metrics in metrics_view.scheduled() for m in metrics}


def job_of(exprs: Iterable[str]) -> str | None:
    """The job computing the first metric these expressions read (`metric="..."`)."""
    jobs = _job_of()
    for expr in exprs:
        for metric in _METRIC.findall(expr):
            if metric in jobs:
                return jobs[metric]
    return None


def _metric_condition(exprs: Iterable[str]) -> Condition | None:
    jobs = _job_of()
    for expr in exprs:
        for metric in _METRIC.findall(expr):
            spec = metrics_view.describe(metric)
            # a latency and its percentiles: empty only without latencies (not sessions)
            if getattr(spec, "quantile_of", None) is not None or getattr(spec, "quantiles", False):
                return PERCENTILES
            job = jobs.get(metric)
            if job in JOB_CONDITIONS:
                return JOB_CONDITIONS[job]
    return None


def rule_condition(exprs: Iterable[str]) -> Condition | None:
    """The condition of a panel whose emptiness is about its series, not a job's inputs
    (nothing firing, no canary, no history, ...), or None."""
    exprs = list(exprs)
    return next((found for pattern, found in RULES if any(pattern.search(e) for e in exprs)), None)


def condition(exprs: Iterable[str]) -> Condition:
    """The condition of a panel reading these PromQL expressions."""
    exprs = list(exprs)
    found = rule_condition(exprs) or _metric_condition(exprs)
    if found is not None:
        return found
    if any(VERSION_RULE.search(e) for e in exprs):
        return VERSIONS
    return NOT_YET


def annotate(panel: model.Panel) -> None:
    """Give a built panel its no-data text and a description line naming its condition."""
    exprs = [str(getattr(t, "expr", "") or "") for t in panel.targets or []]
    if not exprs:
        return
    found = condition(exprs)
    if panel.field_config is None:
        panel.field_config = model.FieldConfigSource(defaults=model.FieldConfig())
    panel.field_config.defaults.no_value = found.text
    # the short reason: the whole text is the panel's no-data text already, and the
    # overview's Kubernetes ConfigMap must stay under kubectl's 256 KiB annotation
    line = f"Empty when: {found.short or found.text}."
    job = job_of(exprs)
    if job is not None:
        line += f" Computed by the job {job}."
    if line not in (panel.description or ""):
        panel.description = f"{panel.description} {line}".strip() if panel.description else line
