"""Every series a shipped dashboard or rule reads is one ragpulse exports or Prometheus
derives, so a renamed series can never leave a panel silently empty or an alert silently
unable to fire.

The names come from every PromQL expression: each panel's targets, each dashboard
variable's query, each rule's `expr` and the queries in the rules' annotation templates
(`tests/dashboards/promql_names.py`). The exported names are read from a live `/metrics`
of the service, wired as `ragpulse run --role exporter` with a store holding two tenants,
two versions, human labels, a judged slice and a 2-day-old baseline, after every scheduled
job ran (the traffic of `test_prometheus_e2e`, where the same panels return data from a
real Prometheus), plus what some families need to have a sample at all: a baseline that
retrieved better than the last hour, so the exporter attributes that drop to slices
(`ragpulse_change_attribution`, which the alerts' annotations query, exists only while a
metric is worse), and a consumer failing its batch (`ragpulse_consumer_stuck_offset`
exists only while it is stuck). A series counts only if it has a sample, not merely a
`# TYPE` line. Prometheus itself derives `ALERTS`, `ALERTS_FOR_STATE` and each recording
rule's `record`.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine

from collector.ingest.kafka.stats import ConsumerStats
from collector.ingest.pipeline import BatchResult
from collector.settings import load_settings
from collector.store.session import make_engine, make_session_factory
from dashboards import boards
from dashboards.boards import SLO_EXAMPLE
from ragpulse.monitoring import Monitoring
from ragpulse.slo_setup import catch_up
from tests.dashboards.promql_names import series_names, template_queries, variable_series
from tests.dashboards.test_prometheus_e2e import _traffic
from tests.exporters.test_report_live import _run_jobs
from tests.fixtures.llm_server import ScriptedLLM, auto_reply
from tests.jobs.helpers import add_trace, ok_or_no_vectors
from tests.jobs.topic_plant import Planted, plant

ROOT = Path(__file__).resolve().parents[2] / "dashboards"
DASHBOARDS = ROOT / "grafana" / "dashboards"
RULES = ROOT / "prometheus" / "rules"
PROMETHEUS_DERIVED = frozenset({"ALERTS", "ALERTS_FOR_STATE"})

Read = tuple[str, set[str]]
"""Where an expression is (file: panel or rule) and the series names it reads."""


def _panels(items: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    for panel in items:
        yield panel
        yield from _panels(panel.get("panels") or [])  # a collapsed row's own panels


def dashboard_reads(name: str, board: Mapping[str, Any]) -> list[Read]:
    reads = []
    for panel in _panels(board.get("panels") or []):
        for target in panel.get("targets") or []:
            where = f"{name}: {panel.get('title')} [{target.get('refId')}]"
            reads.append((where, series_names(str(target.get("expr", "")))))
    for variable in (board.get("templating") or {}).get("list") or []:
        query = variable.get("query")
        text = query.get("query") if isinstance(query, dict) else query
        if variable.get("type") == "query" and text:
            reads.append((f"{name}: variable {variable['name']}", variable_series(str(text))))
    return reads


def rule_reads(name: str, rules: Mapping[str, Any]) -> list[Read]:
    reads = []
    for group in rules.get("groups") or []:
        for rule in group.get("rules") or []:
            where = f"{name}: {rule.get('alert') or rule.get('record')}"
            reads.append((where, series_names(str(rule["expr"]))))
            for key, text in (rule.get("annotations") or {}).items():
                for query in template_queries(str(text)):
                    reads.append((f"{where} annotation {key}", series_names(query)))
    return reads


def recorded(rules: Mapping[str, Any]) -> set[str]:
    return {
        str(rule["record"])
        for group in rules.get("groups") or []
        for rule in group.get("rules") or []
        if "record" in rule
    }


def unknown(reads: Iterable[Read], known: set[str]) -> list[tuple[str, str]]:
    """(where, name) of every series read that is not known."""
    return sorted((where, n) for where, names in reads for n in sorted(names - known))


def exported(metrics_text: str) -> set[str]:
    """Names of the series with at least one sample (a histogram's `_bucket`, `_sum` and
    `_count` are its samples' names, a counter's `_total` too)."""
    return {
        sample.name
        for family in text_string_to_metric_families(metrics_text)
        for sample in family.samples
    }


def _shipped_rules() -> dict[str, Mapping[str, Any]]:
    return {p.name: yaml.safe_load(p.read_text()) for p in sorted(RULES.glob("*.yml"))}


def shipped_reads() -> tuple[list[Read], set[str]]:
    """Every series the committed dashboards and rules read, and the recorded names."""
    reads = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        reads += dashboard_reads(path.name, json.loads(path.read_text()))
    rules = _shipped_rules()
    for name, doc in rules.items():
        reads += rule_reads(name, doc)
    return reads, set().union(*(recorded(doc) for doc in rules.values()))


def _better_baseline(engine: Engine) -> None:
    """Three days ago every retrieval hit: the last hour's hit rate is a drop to explain."""
    then = datetime.now(UTC) - timedelta(days=3)
    with make_session_factory(engine)() as session:
        for i in range(120):
            add_trace(
                session,
                f"series-old-{i}",
                then - timedelta(minutes=i),
                purposes=("real_users_benchmark",),
                contexts=[{"id": "d1"}, {"id": "d9"}],
                relevant_ids=["d1"],
                tags={"tenant": "acme" if i % 2 else "beta", "version": "v1"},
            )
        session.commit()


def _live_metrics(sqlite_url: str, llm_server: ScriptedLLM, embedder: Any) -> str:
    """/metrics of an exporter over a store every scheduled job has run on."""
    llm_server.fallback = auto_reply
    settings = load_settings(
        database={"url": sqlite_url},
        exporter={"port": 0},
        judge={
            "models": ["openai/judge-series"],
            "api_base": llm_server.base_url,
            "api_key": "test",
            "max_usd_per_day": 5.0,
        },
        # no background reload: the test refreshes once, after the jobs ran
        scheduler={"consistency_sample": 4, "judge_traces_per_run": 40, "interval_s": 3600},
        canary={"min_traces": 5},
        slo={"openslo_file": str(SLO_EXAMPLE)},
    )
    engine = make_engine(sqlite_url)
    _traffic(engine)
    _better_baseline(engine)
    with make_session_factory(engine)() as session:  # topics for ragpulse_topic_*
        # traffic the day before too: the baseline that ragpulse_topic_share_change needs
        planted = [Planted(0, ("card", "delivery"), [30, 30])]
        plant(session, datetime.now(UTC), planted, outcomes=False)
    registry = CollectorRegistry()
    stats = ConsumerStats(registry)
    monitoring = Monitoring(settings, engine, registry, role="exporter", embedder=embedder)
    monitoring.start()
    try:
        runner, feed = _run_jobs(settings, engine, embedder, monitoring)
        batch = BatchResult(consumed=10, stored=9, invalid=1, sampled=3)
        batch.invalid_by_reason = {"invalid_json": 1}
        batch.field_warnings = {"turn": 1}
        batch.sampled_by_purpose = {"judge": 1, "real_users_benchmark": 2}
        batch.consumed_by_topic = {"rag.traces": 10}
        batch.otlp_traces = {"openinference": 3, "genai": 1}
        batch.otlp_incomplete = {("genai", "answer"): 1, ("openinference", "contexts"): 1}
        stats.record(batch)
        stats.set_lag("rag.traces", 0, 5)
        stats.failed({("rag.traces", 0): 42}, "OperationalError")  # a consumer stuck
        reports = runner.run_many()
        # the topics job has no stored vectors to cluster on SQLite by default
        assert all(ok_or_no_vectors(r) for r in reports)
        feed.sync()
        # the SLO events: recorded by the jobs' observer, so catching up finds none new
        assert catch_up(settings, make_session_factory(engine)) == 0
        assert monitoring.refresher is not None and monitoring.server is not None
        monitoring.refresher.refresh()  # the exporter's pass: reload, explain the drop
        url = f"http://127.0.0.1:{monitoring.server.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            return str(response.read().decode("utf-8"))
    finally:
        monitoring.stop()
        engine.dispose()


@pytest.mark.slow
def test_every_series_a_dashboard_or_rule_reads_is_exported(
    sqlite_url: str, llm_server: ScriptedLLM, embedder: Any
) -> None:
    reads, records = shipped_reads()
    live = exported(_live_metrics(sqlite_url, llm_server, embedder))
    assert "ragpulse_metric_value" in live and "ragpulse_canary_diff" in live
    assert "ragpulse_change_attribution" in live  # the drop was attributed
    missing = unknown(reads, live | PROMETHEUS_DERIVED | records)
    assert missing == [], "these series are read but not exported (renamed?)"


def test_a_renamed_series_is_reported() -> None:
    """The check can fail: a panel of the built overview whose series was renamed, and a
    rule reading a series nobody exports, are both named."""
    board = json.loads(json.dumps(boards.overview().build(), cls=JSONEncoder))
    reads = dashboard_reads("overview.json", board)
    known = set().union(*(names for _, names in reads))
    assert unknown(reads, known) == []
    target = next(
        t
        for p in board["panels"]
        if p["type"] == "stat"
        for t in p["targets"]
        if "ragpulse_metric_value" in t["expr"]
    )
    target["expr"] = target["expr"].replace("ragpulse_metric_value", "ragpulse_metric_val")
    stale = unknown(dashboard_reads("overview.json", board), known)
    assert [name for _, name in stale] == ["ragpulse_metric_val"]
    assert stale[0][0].startswith("overview.json: ") and stale[0][0].endswith("[A]")
    rule = {
        "groups": [
            {
                "rules": [
                    {
                        "alert": "Renamed",
                        "expr": "sum(rate(ragpulse_judge_request_total[5m])) > 0",
                        "annotations": {
                            "description": '{{ with printf "ragpulse_canary_dif{metric=%q}" '
                            "$labels.metric | query }}{{ . | first | value }}{{ end }}"
                        },
                    }
                ]
            }
        ]
    }
    assert unknown(rule_reads("r.yml", rule), known) == [
        ("r.yml: Renamed", "ragpulse_judge_request_total"),
        ("r.yml: Renamed annotation description", "ragpulse_canary_dif"),
    ]


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        (
            'ragpulse_metric_value{metric="mrr",window="1h",tenant=~"$tenant"}',
            {"ragpulse_metric_value"},
        ),
        (
            "histogram_quantile(0.95, sum by (le) (rate(a_bucket[$__rate_interval])))",
            {"a_bucket"},
        ),
        ("sum without (x, y) (a) / ignoring (z) group_left (w) b offset 1h30m", {"a", "b"}),
        ('max by (m) (a{s=~"x|}y"} and on (m, w) b) > bool 0.5e-3', {"a", "b"}),
        ("time() - a @ start()", {"a"}),
        ('{__name__="a", job="b"} or vector(0) unless c[1h:5m] * -Inf', {"a", "c"}),
        ("-a + 0x1F * NaN or job:b:rate5m", {"a", "job:b:rate5m"}),
        ('topk(3, a) or count_values("v", b) or quantile(0.9, c)', {"a", "b", "c"}),
        ('absent(a{l="by (x)"}) and `str` != "(b)"', {"a"}),
    ],
)
def test_series_names_of_promql(expr: str, names: set[str]) -> None:
    assert series_names(expr) == names


def test_unknown_functions_and_name_patterns_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown PromQL function 'rate5m'"):
        series_names("rate5m(a[5m])")
    with pytest.raises(ValueError, match="by pattern"):
        series_names('{__name__=~"ragpulse_.*"}')


def test_variable_and_template_queries() -> None:
    assert variable_series('label_values(a{v!=""}, v)') == {"a"}
    assert variable_series("label_values(v)") == set()
    assert variable_series("query_result(topk(5, b))") == {"b"}
    text = '{{ with query "a{x=\\"1\\"}" }}{{ . | first | value | printf "%.2f" }}{{ end }}'
    assert template_queries(text) == ['a{x="1"}']
    text = '{{ with printf "b{m=%q,n=%q}" $labels.m $labels.n | query }}{{ end }}'
    assert template_queries(text) == ['b{m="x",n="x"}']
