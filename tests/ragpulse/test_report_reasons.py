"""An empty panel of `ragpulse report` says the true reason, found from the facts: a job
that has not run yet is "waiting for the first run", one that ran over traces without
ground truth says "no ground truth", ground truth it has not scored yet says so, and a
metric per version is empty for its metric's reason when the versions table lists versions.
The facts come from a real Prometheus scraping the job counters and from a real store;
the command prints one summary line (counts by reason) and the list only with --verbose."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from collector.store.session import make_engine, make_session_factory
from dashboards import conditions
from exporters.report.empty import EmptyReason, counted, from_text
from ragpulse.cli import main
from ragpulse.report_reasons import (
    FAILING,
    NO_JUDGE,
    NOT_SCHEDULED,
    SKIPPED,
    UNSCRAPED,
    WAITING,
    EmptyReasons,
    Facts,
    ground_truth_traces,
)
from tests.fixtures.prometheus import free_port
from tests.jobs.helpers import add_trace

OVERVIEW = (
    Path(__file__).resolve().parents[2] / "dashboards" / "grafana" / "dashboards" / "overview.json"
)
HIT = ['ragpulse_metric_value{metric="hit_rate@1",window="1h",tenant=~"$tenant"}']
HIT_PER_VERSION = ['ragpulse_metric_value{metric="hit_rate@1",window="1h",version=~"$version"}']
FAITH_PER_VERSION = ['ragpulse_metric_value{metric="faithfulness",window="1h",version=~"$version"}']


class FactsExporter:
    """The series the report reads its facts from, served on /metrics for Prometheus."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.runs = Counter("ragpulse_job_runs", "runs", ["job", "status"], registry=self.registry)
        self.last = Gauge(
            "ragpulse_job_last_success_timestamp_seconds", "last", ["job"], registry=self.registry
        )
        self.value = Gauge(
            "ragpulse_metric_value",
            "value",
            ["metric", "window", "tenant", "version"],
            registry=self.registry,
        )
        self.port = free_port()
        self.server, _ = start_http_server(self.port, "127.0.0.1", registry=self.registry)

    def ran(self, job: str) -> None:
        self.runs.labels(job, "ok").inc()
        self.last.labels(job).set(time.time())


@pytest.fixture
def exporter() -> Iterator[FactsExporter]:
    served = FactsExporter()
    yield served
    served.server.shutdown()


def _report(
    capsys: pytest.CaptureFixture[str], url: str, out: Path, *extra: str
) -> tuple[str, str, str]:
    code = main(
        ["report", "--prometheus", url, "--output", str(out), "--dashboards", str(OVERVIEW), *extra]
    )
    stdout, err = capsys.readouterr()
    assert code == 0, err
    return stdout, err, out.read_text()


def _panel(html: str, title: str) -> str:
    """The text of the panel titled `title` (the first)."""
    start = html.index(f">{title}</h4>")
    end = html.find("<h4", start + 1)
    return unescape(re.sub(r"<[^>]+>", " ", html[start : end if end > 0 else None]))


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_empty_panels_say_the_true_reason_from_prometheus_and_the_store(
    exporter: FactsExporter,
    prometheus_server: Any,
    sqlite_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAGPULSE_DATABASE__URL", sqlite_url)
    monkeypatch.setenv("RAGPULSE_JUDGE__MODELS", "")
    # Versions v1 and v2 in the versions table (24h), none over the last hour; one job
    # ran, the retrieval benchmark has not yet.
    for version in ("v1", "v2"):
        exporter.value.labels("faithfulness", "24h", "", version).set(0.9)
        exporter.value.labels("hit_rate@1", "24h", "", version).set(0.5)
    exporter.ran("rag_quality")
    prom = prometheus_server([f"127.0.0.1:{exporter.port}"])
    assert prom.wait_for('ragpulse_job_runs_total{job="rag_quality"}')
    out = tmp_path / "report.html"

    stdout, err, html = _report(capsys, prom.url, out)
    lines = stdout.splitlines()
    assert len(lines) == 2, stdout
    assert re.fullmatch(
        r"\d+ panels with data; \d+ empty: .*\d+ waiting for the first run.*"
        r"\(--verbose lists them\)",
        lines[0],
    ), lines[0]
    assert "no judge configured" in lines[0]
    counts = lines[0].split(" panels with data", 1)[1].removesuffix(" (--verbose lists them)")
    assert f" panels with data{counts}</" in html  # the page's header counts them too
    assert lines[1].startswith(f"wrote {out} (")
    assert "no data:" not in err and "empty:" not in err
    # not run yet: waiting, with the schedule; not "no ground truth"
    hit = _panel(html, "hit_rate@1 per version (1h, 95% CI)")
    assert "Waiting for the first run of real_users_benchmark (the jobs run every 60 s" in hit
    assert "ground truth" not in hit.lower()
    # the versions table lists v1 and v2: no panel says there are no versions
    assert '<div class="status nodata">No versions' not in html
    assert "v1" in _panel(html, "Versions: latest 24h value, 95% CI and n")
    assert "No LLM judge configured" in _panel(html, "faithfulness per version (1h, 95% CI)")
    # the first screen's Retrieval tier says the same
    tier = html.split('data-tier="Retrieval (Tier 1', 1)[1].split("</tr>", 1)[0]
    assert "Waiting for the first run of real_users_benchmark" in tier

    # The benchmark ran over a store without ground truth: "no ground truth", listed with -v.
    exporter.ran("real_users_benchmark")
    assert prom.wait_for('ragpulse_job_runs_total{job="real_users_benchmark"}')
    engine = make_engine(sqlite_url)
    with make_session_factory(engine)() as session:
        add_trace(session, "plain", datetime.now(UTC) - timedelta(minutes=5))
        session.commit()
    stdout, err, html = _report(capsys, prom.url, out, "--verbose")
    hit = _panel(html, "hit_rate@1 per version (1h, 95% CI)")
    assert "No ground truth (versions: v1, v2): no trace of the last" in hit
    assert "real_users_benchmark last ran at" in hit
    assert "no ground truth" in stdout.splitlines()[0]
    assert "--verbose" not in stdout.splitlines()[0]
    listed = [ln for ln in stdout.splitlines() if ln.startswith("  empty: ")]
    assert len(listed) == int(re.search(r"; (\d+) empty", stdout).group(1))  # type: ignore[union-attr]
    assert any("hit_rate@1 per version" in ln and "No ground truth" in ln for ln in listed)

    # A trace with ground truth the job has not scored yet: said so, not "no ground truth".
    with make_session_factory(engine)() as session:
        add_trace(session, "truth", datetime.now(UTC), relevant_ids=["d1"])
        session.commit()
    engine.dispose()
    stdout, _, html = _report(capsys, prom.url, out)
    hit = _panel(html, "hit_rate@1 per version (1h, 95% CI)")
    assert "Ground truth not scored yet (versions: v1, v2): 1 trace of the last" in hit
    assert "after real_users_benchmark's last run at" in hit  # it arrived after the run
    assert "ground truth not scored yet" in stdout


def _facts(**kw: Any) -> Facts:
    base: dict[str, Any] = {"judge_models": ("openai/x",), "interval_s": 60.0}
    return Facts(**{**base, **kw})


def test_no_version_on_any_series_is_no_versions() -> None:
    reasons = EmptyReasons(_facts(runs={"rag_quality": {"ok": 3.0}}))
    found = reasons(FAITH_PER_VERSION)
    assert found is not None and found.short == conditions.VERSIONS.short
    assert found.text.startswith("No versions: no series carries a version")
    with_versions = EmptyReasons(_facts(runs={"rag_quality": {"ok": 3.0}}, versions=("v1",)))
    found = with_versions(FAITH_PER_VERSION)
    assert found is not None and found.short == "no judge scores yet", found


def test_a_failing_or_unscheduled_job_says_so() -> None:
    failing = EmptyReasons(_facts(runs={"real_users_benchmark": {"error": 4.0}}))(HIT)
    assert failing is not None and failing.short == FAILING
    assert "4 runs failed" in failing.text
    skipped = EmptyReasons(_facts(runs={"real_users_benchmark": {"skipped": 2.0}}))(HIT)
    assert skipped is not None and skipped.short == SKIPPED
    unscheduled = EmptyReasons(_facts(scheduled=("rag_quality",)))(HIT)
    assert unscheduled is not None and unscheduled.short == NOT_SCHEDULED
    waiting = EmptyReasons(_facts(runs={"rag_quality": {"ok": 1.0}}))(HIT)
    assert waiting is not None and waiting.short == WAITING
    # results in Prometheus but no job counters at all: the jobs' process is not scraped
    unscraped = EmptyReasons(_facts(results=True))(HIT)
    assert unscraped is not None and unscraped.short == UNSCRAPED
    assert EmptyReasons(_facts())(HIT) == EmptyReason(
        WAITING,
        "Waiting for the first run of real_users_benchmark (the jobs run every 60 s, "
        "the first 0 s after the scheduler starts)",
    )


def test_ground_truth_older_than_the_last_run_is_not_sampled_for_it() -> None:
    facts = _facts(
        runs={"real_users_benchmark": {"ok": 2.0}},
        last_success={"real_users_benchmark": 2000.0},
        ground_truth=3,
        ground_truth_newest=1000.0,
    )
    found = EmptyReasons(facts)(HIT)
    assert found is not None and found.short == "ground truth not scored yet"
    assert "3 traces of the last 24 h carry it" in found.text
    assert "scores only the traces sampled for it" in found.text
    none = EmptyReasons(replace(facts, ground_truth=0))(HIT)
    assert none is not None and none.short == conditions.GROUND_TRUTH.short


def test_an_slo_whose_metric_cannot_be_scored_says_why() -> None:
    burn = ['ragpulse_slo:burn_rate:rate1h{slo="faithfulness",tenant=~"$slo_tenant"}']
    facts = _facts(slo_metrics={"faithfulness": "faithfulness"}, judge_models=())
    found = EmptyReasons(facts)(burn)
    assert found is not None and found.short == NO_JUDGE
    assert found.text.startswith("The SLO faithfulness counts faithfulness: No LLM judge")
    # scored, but no events in the window yet: the SLO's own text
    ran = replace(facts, judge_models=("openai/x",), runs={"rag_quality": {"ok": 1.0}})
    found = EmptyReasons(ran)(burn)
    assert found == EmptyReason(conditions.SLO_EVENTS.short, conditions.SLO_EVENTS.text)


def test_reasons_by_design_keep_their_text() -> None:
    reasons = EmptyReasons(_facts())
    found = reasons(['ALERTS{alertstate="firing"}'])
    assert found == EmptyReason("nothing firing", conditions.NOTHING_FIRING.text)


def test_the_summary_counts_reasons_most_frequent_first() -> None:
    shorts = ["no judge configured", WAITING, WAITING, "no judge configured", WAITING]
    assert counted(shorts) == "3 waiting for the first run, 2 no judge configured"
    assert from_text("Needs history: the detectors ...").short == "needs history"
    assert from_text(None).short == "no data"


def test_ground_truth_in_the_store_is_counted_on_both_databases(db_url: str) -> None:
    """A JSON null is no ground truth; traces that are no request do not count."""
    now = datetime.now(UTC)
    engine = make_engine(db_url)
    try:
        with make_session_factory(engine)() as session:
            add_trace(session, "bare", now - timedelta(minutes=9))
            add_trace(session, "json-null", now - timedelta(minutes=8), relevant_ids=None)
            add_trace(session, "ids", now - timedelta(minutes=7), relevant_ids=["d1"])
            add_trace(session, "shown", now - timedelta(minutes=3), shown_url=["https://x/1"])
            add_trace(
                session,
                "index-build",
                now - timedelta(minutes=1),
                relevant_ids=["d2"],
                not_request="index_build",
            )
            add_trace(session, "old", now - timedelta(days=3), relevance={"d1": 2})
            session.commit()
        found = ground_truth_traces(engine, now.timestamp(), 86400.0)
    finally:
        engine.dispose()
    assert found is not None
    count, newest = found
    assert count == 2
    assert newest is not None and abs(newest - (now - timedelta(minutes=3)).timestamp()) < 1
