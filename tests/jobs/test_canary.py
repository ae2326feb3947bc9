"""The canary job: candidate against baseline on live traffic, on real databases, through
to the `ragpulse_canary_*` series of a fresh registry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select

from collector.jobs.catalog.canary import NO_PAIR, choose_versions
from collector.jobs.scheduler import build_runner
from collector.settings import load_settings
from collector.store.models import JobOutcome, JobState, MetricResult
from collector.store.session import make_engine, make_session_factory
from collector.store.version_scores import VersionSeen
from evaluators.comparison import compare_paired, compare_unpaired
from exporters.prometheus import QualityCollector
from exporters.quality import ResultsCache
from ragpulse.job_setup import job_environment
from tests.jobs.helpers import add_trace

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def _seed(
    factory: Any, *, shadow: bool, hits: dict[str, float], n: int = 80, now: datetime = NOW
) -> dict[str, Any]:
    """`n` traces per version (v1 from 20 h ago, v2 from 10 h ago) scored by the
    real_users_benchmark job; with `shadow` both versions answer the same questions."""
    rng = np.random.default_rng(3)
    difficulty = rng.random(n)
    scores: dict[str, list[tuple[str, float, float]]] = {"v1": [], "v2": []}
    with factory() as session:
        for version, start in (("v1", 20.0), ("v2", 10.0)):
            for i in range(n):
                ts = now - timedelta(hours=start) + timedelta(minutes=5 * i)
                question = f"вопрос {i}" if shadow else f"{version} question {i}"
                hit = float(rng.random() < hits[version] * (0.5 + difficulty[i]))
                rr = hit or float(rng.random() < 0.3) * 0.5
                trace = f"{version}-{i}"
                add_trace(session, trace, ts, question=question, tags={"version": version})
                session.add(
                    JobOutcome(
                        job="real_users_benchmark",
                        trace_id=trace,
                        trace_updated_at=ts,
                        ts=ts,
                        groups={"version": version},
                        outcomes={"hit_rate@1": hit, "mrr": rr, "recall@5": {"skipped": "x"}},
                        slices={"version": version, "tenant": "acme"},
                    )
                )
                scores[version].append((question, hit, rr))
        session.commit()
    return scores


def _settings(**canary: Any) -> Any:
    return load_settings(
        scheduler={"jobs": ["canary"]},
        canary={"metrics": ["hit_rate@1", "mrr"], "resamples": 2000, **canary},
    )


def _exported(settings: Any, engine: Any) -> dict[tuple[str, frozenset[Any]], float]:
    """The canary samples of a fresh registry over the stored results: (name, labels) ->
    value."""
    cache = ResultsCache()
    with make_session_factory(engine)() as session:
        cache.load_latest(session)
    registry = CollectorRegistry()
    registry.register(QualityCollector(cache, settings.scheduler.group_labels))
    text = generate_latest(registry).decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        if family.name.startswith("ragpulse_canary")
        for s in family.samples
    }


def _key(name: str, metric: str, **extra: str) -> tuple[str, frozenset[Any]]:
    labels = {"metric": metric, "baseline": "v1", "candidate": "v2", "window": "24h", **extra}
    return name, frozenset(labels.items())


def test_worse_candidate_unpaired_matches_the_statistics_and_alerts(db_url: str) -> None:
    settings = _settings()
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    scores = _seed(factory, shadow=False, hits={"v1": 0.8, "v2": 0.35})
    runner = build_runner(settings, engine, job_environment(settings, engine))
    report = runner.jobs["canary"].run(NOW)
    assert report.status == "ok", report
    assert "v2 vs v1: unpaired" in report.message and "worse on hit_rate@1" in report.message
    with factory() as session:
        rows = session.scalars(select(MetricResult).where(MetricResult.job == "canary")).all()
    by = {(r.metric, r.group_key): r for r in rows}
    expected = compare_unpaired(
        {m: np.array([s[k] for s in scores["v1"]]) for m, k in (("hit_rate@1", 1), ("mrr", 2))},
        {m: np.array([s[k] for s in scores["v2"]]) for m, k in (("hit_rate@1", 1), ("mrr", 2))},
        resamples=2000,
        seed=0,
    )
    hit = expected.get("hit_rate@1")
    assert hit is not None and hit.significant and hit.diff < 0
    assert by[("hit_rate@1", "diff")].value == hit.diff
    assert by[("hit_rate@1", "diff")].ci_lower == hit.ci_lower
    assert by[("hit_rate@1", "p_adjusted")].value == hit.p_adjusted
    assert by[("hit_rate@1", "worse")].value == 1.0
    assert by[("hit_rate@1", "n_candidate")].value == 80
    assert by[("hit_rate@1", "diff")].group_labels == {
        "baseline": "v1",
        "candidate": "v2",
        "stat": "diff",
    }
    found = _exported(settings, engine)
    assert found[_key("ragpulse_canary_worse", "hit_rate@1")] == 1.0
    assert found[_key("ragpulse_canary_samples", "hit_rate@1", side="candidate")] == 80
    assert found[_key("ragpulse_canary_detectable_diff", "hit_rate@1")] == hit.mde
    assert found[_key("ragpulse_canary_p_value", "hit_rate@1", adjusted="true")] == hit.p_adjusted
    assert found[_key("ragpulse_canary_diff_ci_upper", "hit_rate@1")] == hit.ci_upper
    engine.dispose()


def test_shadow_traffic_is_paired_and_the_pair_leaves_when_the_rollout_ends(
    sqlite_url: str,
) -> None:
    settings = _settings(every="1s")
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    scores = _seed(factory, shadow=True, hits={"v1": 0.6, "v2": 0.6})
    runner = build_runner(settings, engine, job_environment(settings, engine))
    report = runner.jobs["canary"].run(NOW)
    assert "paired on 80 shared questions" in report.message, report.message
    a = np.array([[s[1], s[2]] for s in scores["v1"]])
    b = np.array([[s[1], s[2]] for s in scores["v2"]])
    expected = compare_paired(a, b, ["hit_rate@1", "mrr"], resamples=2000, seed=0)
    found = _exported(settings, engine)
    assert found[_key("ragpulse_canary_samples", "hit_rate@1", side="pairs")] == 80
    hit = expected.get("hit_rate@1")
    assert hit is not None and hit.paired
    assert found[_key("ragpulse_canary_diff", "hit_rate@1")] == hit.diff
    assert found[_key("ragpulse_canary_diff_ci_lower", "hit_rate@1")] == hit.ci_lower
    # two days later neither version has traffic in the window: the comparison leaves /metrics
    report = runner.jobs["canary"].run(NOW + timedelta(days=2))
    assert "no two versions" in report.message
    assert _exported(settings, engine) == {}
    engine.dispose()


def test_recomputed_at_most_every(sqlite_url: str) -> None:
    settings = _settings(every="10m")
    engine = make_engine(sqlite_url)
    _seed(make_session_factory(engine), shadow=False, hits={"v1": 0.6, "v2": 0.6}, n=40)
    job = build_runner(settings, engine, job_environment(settings, engine)).jobs["canary"]
    assert job.run(NOW).results > 0
    assert job.run(NOW + timedelta(minutes=5)).results == 0
    assert job.run(NOW + timedelta(minutes=11)).results > 0
    engine.dispose()


def test_a_run_that_found_no_pair_does_not_start_the_throttle(sqlite_url: str) -> None:
    """On a fresh service the first comparison comes as soon as two versions qualify, not
    `every` later: only a run that compared starts the throttle."""
    settings = _settings(every="10m", min_traces=30)
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    _seed(factory, shadow=False, hits={"v1": 0.6, "v2": 0.6}, n=40)
    job = build_runner(settings, engine, job_environment(settings, engine)).jobs["canary"]
    # v2's traces arrive every 5 minutes from 10 h before NOW: 141 minutes in it has 29
    # (one short of min_traces), 5 minutes later 30
    first = NOW - timedelta(hours=10) + timedelta(minutes=141)
    report = job.run(first)
    assert report.status == "ok" and "no two versions" in report.message, report
    assert report.results > 0  # the empty rows, so no earlier comparison lingers
    with factory() as session:
        state = session.get(JobState, "canary")
        assert state is not None and state.last_status == NO_PAIR
    # still no pair a minute later: looked for, but the empty rows are not written again
    report = job.run(first + timedelta(minutes=1))
    assert "no two versions" in report.message and report.results == 0, report
    report = job.run(first + timedelta(minutes=5))
    assert "v2 vs v1" in report.message and report.results > 0, report
    throttled = job.run(first + timedelta(minutes=10))
    assert throttled.results == 0 and "at most every" in throttled.message, throttled
    engine.dispose()


def _seen(name: str, hours_ago: float, traces: int) -> VersionSeen:
    ts = NOW - timedelta(hours=hours_ago)
    return VersionSeen(name, ts, NOW, traces)


def test_choose_versions() -> None:
    seen = [_seen("v5", 100, 500), _seen("v6", 50, 400), _seen("v7", 2, 40), _seen("v8", 1, 3)]
    first = {s.version: s.first_seen for s in seen}
    # v8 has too few traces: the newest eligible is v7, against the one before it
    assert choose_versions(seen, first, min_traces=30) == ("v6", "v7")
    assert choose_versions(seen, first, min_traces=2) == ("v7", "v8")
    assert choose_versions(seen, first, min_traces=30, baseline="v5") == ("v5", "v7")
    assert choose_versions(seen, first, min_traces=30, candidate="v6") == ("v5", "v6")
    assert choose_versions(seen, first, min_traces=30, candidate="v8") is None
    assert choose_versions(seen[:1], first, min_traces=30) is None
    assert choose_versions([], {}, min_traces=30) is None
