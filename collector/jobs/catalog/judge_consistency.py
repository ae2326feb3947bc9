"""Tier Judge: re-judge a small recent sample; consistency, error rate and latency.

Every run
1. tops up the re-judged sample: when fewer than `scheduler.consistency_sample` traces had
   a judgment repeated within the shortest window, it takes the most recently judged
   traces that were judged only once (by `rag_quality`, metrics in `REJUDGED`) and judges
   them again with the same metrics and models, the judgment cache bypassed (so the
   model is really asked again; the calls are recorded in `judgments` like any other and
   count against the judge's budgets). The cost is bounded: about `consistency_sample`
   traces x their metrics per shortest window;
2. computes, per window, from the `judgments` rows (evaluators/judge_quality.py):
   `judge_consistency` over the inputs (cache keys: model, prompt version, rendered input,
   temperature) judged successfully at least twice, latest within the window;
   `judge_error_rate` and `judge_latency_ms_avg` over the judgments made in the window
   (the newest `JUDGMENTS_CAP`);
3. writes `metric_results` rows and publishes them like the other jobs.

A judgment's score is the direct score of the 0-1 prompts (answer relevance, E2E,
faithfulness rating), or the mean verdict of the per-context / per-statement prompts scaled
to 0-1 (`judgment_score`); for response relevancy's generated questions, the share flagged
noncommittal (its only verdict: a repeat that flips it moves the metric between 0 and the
cosine mean).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from collector.jobs.run.definition import JobDefinition, JobEnvironment, JobReport
from collector.jobs.run.engine import NO_JUDGE, IncrementalJob
from collector.jobs.run.job_state import load_state, record_run
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.window import OVERALL, Window
from collector.settings import Settings
from collector.store.models import Judgment, Trace
from evaluators.aggregate import Aggregate
from evaluators.judge.protocol import Judge
from evaluators.judge.store import JudgmentRecord, JudgmentStore, Usage
from evaluators.judge_quality import (
    OK,
    judge_consistency,
    judge_error_rate,
    judge_latency_ms_avg,
)
from evaluators.outcome import Skipped
from evaluators.registry import DatasetValue, EvalContext
from evaluators.sample import Sample
from evaluators.signature import Signature

if TYPE_CHECKING:
    from evaluators.judge.client import JudgeClient

logger = logging.getLogger(__name__)

NAME = "judge_consistency"
METRICS = ("judge_consistency", "judge_error_rate", "judge_latency_ms_avg")
REJUDGED = (
    "answer_relevance",
    "e2e_score",
    "faithfulness_rating",
    "context_relevance",
    "context_precision",
    "context_recall",
    "response_relevancy",
)
"""Every judge metric made of one request per model (one prompt in the registry, see
`tests/jobs/test_judge_consistency.py`), so a repeat asks the very same input."""
JUDGMENTS_CAP = 20_000
_VERDICTS = {
    "useful": 1.0,
    "supported": 1.0,
    "found": 1.0,
    "attributed": 1.0,
    "score": 2.0,
    "noncommittal": 1.0,
}
"""Per-item verdict fields of the list prompts and their largest value."""


def definition(settings: Settings) -> JobDefinition:
    return JobDefinition(
        name=NAME,
        metrics=METRICS,
        description="consistency, error rate and latency of our LLM judge (re-judges a sample)",
        uses_judge=True,
        dataset_cap=settings.scheduler.consistency_sample,
        dataset_groups=False,
        factory=JudgeConsistencyJob,
    )


def judgment_score(parsed: Any) -> float | None:
    """One number in 0..1 per successful judgment, or None when the reply has none."""
    if not isinstance(parsed, Mapping):
        return None
    score = parsed.get("score")
    if isinstance(score, int | float) and not isinstance(score, bool):
        return float(score)
    for items in parsed.values():
        if not isinstance(items, list) or not items:
            continue
        values = []
        for item in items:
            if not isinstance(item, Mapping):
                break
            for key, top in _VERDICTS.items():
                value = item.get(key)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    values.append(float(value) / top)
                    break
        if values and len(values) == len(items):
            return sum(values) / len(values)
    return None


class _UncachedReads:
    """A judgment store that never answers from the cache but records every call."""

    def __init__(self, inner: JudgmentStore) -> None:
        self.inner = inner

    async def get(self, cache_key: str) -> Mapping[str, Any] | None:
        return None

    async def record(self, record: JudgmentRecord) -> None:
        await self.inner.record(record)

    async def usage(self, since: datetime) -> Usage:
        return await self.inner.usage(since)


def uncached(judge: Judge) -> JudgeClient:
    """A client like `judge` (same models, settings, store for records and budgets) that
    asks the model even when an identical judgment is cached."""
    from evaluators.judge.client import JudgeClient

    return JudgeClient(judge.config, _UncachedReads(judge.store))


class JudgeConsistencyJob(IncrementalJob):
    """Not a per-trace job: its input is the `judgments` table (see the module docstring)."""

    def __init__(self, definition: JobDefinition, env: JobEnvironment) -> None:
        self.definition = definition
        self.env = env
        self.name = definition.name
        self._longest = max(w.seconds for w in env.windows)
        self._shortest = min(w.seconds for w in env.windows)
        self.delta = env.options.judge.consistency_delta

    def run(self, now: datetime | None = None) -> JobReport:
        started = time.perf_counter()
        now = now or datetime.now(UTC)
        if self.env.judge is None:
            written = self._record_skip(now, NO_JUDGE)
            return JobReport(
                self.name, "skipped", 0, written, time.perf_counter() - started, NO_JUDGE
            )
        rejudged = self._rejudge(now, self.env.judge)
        with self.env.session_factory() as session:
            points = self._points(session, now)
            written = self._write(session, now, points)
            message = f"{rejudged} traces re-judged"
            record_run(session, load_state(session, self.name), now, message, started=started)
        return JobReport(self.name, "ok", rejudged, written, time.perf_counter() - started)

    # -- re-judging ---------------------------------------------------------------------

    def _rejudge(self, now: datetime, judge: Judge) -> int:
        sample = self.definition.dataset_cap
        since = now - timedelta(seconds=self._longest)
        recent = now - timedelta(seconds=self._shortest)
        with self.env.session_factory() as session:
            rows = session.execute(
                select(Judgment.trace_id, Judgment.metric, Judgment.cache_key, Judgment.created_at)
                .where(
                    Judgment.status == OK,
                    Judgment.trace_id.is_not(None),
                    Judgment.metric.in_(REJUDGED),
                    Judgment.created_at >= since,
                )
                .order_by(Judgment.created_at.desc(), Judgment.id.desc())
                .limit(JUDGMENTS_CAP)
            ).all()
            times: dict[str, list[datetime]] = {}
            for _trace, _metric, key, created in rows:
                times.setdefault(key, []).append(created)
            repeated_traces = {
                trace
                for trace, _metric, key, _created in rows
                if len(times[key]) >= 2 and max(times[key]) >= recent
            }
            need = sample - len(repeated_traces)
            if need <= 0:
                return 0
            already = {t for t, _m, key, _c in rows if len(times[key]) >= 2}
            chosen: dict[str, set[str]] = {}
            for trace, metric, _key, _created in rows:
                if trace in already:
                    continue
                if trace not in chosen and len(chosen) >= need:
                    continue
                chosen.setdefault(trace, set()).add(metric)
            if not chosen:
                return 0
            traces = list(session.scalars(select(Trace).where(Trace.trace_id.in_(list(chosen)))))
            samples = {t.trace_id: self._to_sample(t) for t in traces}
        ctx = EvalContext(
            embedder=self.env.embedder,
            judge=uncached(judge),
            options=self.env.options.metric_options,
        )
        from evaluators.runner import evaluate

        for metric in REJUDGED:
            subset = [s for trace, s in samples.items() if metric in chosen[trace]]
            if subset:
                evaluate(subset, [metric], ctx)
        logger.info("judge_consistency: re-judged %d traces", len(samples))
        return len(samples)

    def _to_sample(self, row: Trace) -> Sample:
        if self.env.to_sample is not None:
            return self.env.to_sample(row)
        from collector.store.samples import trace_to_sample

        return trace_to_sample(row)

    # -- metrics --------------------------------------------------------------------------

    def _points(self, session: Session, now: datetime) -> list[tuple[Window, WindowAggregate]]:
        since = now - timedelta(seconds=self._longest)
        signature = Signature(judge_model=",".join(getattr(self.env.judge, "models", ())) or None)
        points: list[tuple[Window, WindowAggregate]] = []
        for window in self.env.windows:
            start = window.start(now)
            repeated = (
                select(Judgment.cache_key)
                .where(Judgment.status == OK, Judgment.created_at >= since)
                .group_by(Judgment.cache_key)
                .having(func.count() >= 2, func.max(Judgment.created_at) >= start)
            )
            pairs = session.execute(
                select(Judgment.cache_key, Judgment.parsed).where(
                    Judgment.status == OK,
                    Judgment.created_at >= since,
                    Judgment.cache_key.in_(repeated),
                )
            ).all()
            keys = [key for key, _parsed in pairs]
            scores = [judgment_score(parsed) for _key, parsed in pairs]
            consistency = judge_consistency(keys, scores, [OK] * len(keys), self.delta)
            recent = session.execute(
                select(Judgment.status, Judgment.latency_ms)
                .where(Judgment.created_at >= start)
                .order_by(Judgment.id.desc())
                .limit(JUDGMENTS_CAP)
            ).all()
            errors = judge_error_rate([status for status, _latency in recent])
            latency = judge_latency_ms_avg([latency for _status, latency in recent])
            for metric, value in (
                ("judge_consistency", consistency),
                ("judge_error_rate", errors),
                ("judge_latency_ms_avg", latency),
            ):
                points.append(
                    (window, WindowAggregate(OVERALL, _aggregate(metric, value, signature)))
                )
        return points


def _aggregate(metric: str, value: DatasetValue | Skipped, signature: Signature) -> Aggregate:
    if isinstance(value, Skipped):
        return Aggregate(metric, None, 0, skip_reasons={value.reason: 0}, signature=signature)
    reasons = dict(value.skip_reasons)
    return Aggregate(
        metric,
        value.value,
        value.n,
        value.ci_lower,
        value.ci_upper,
        skipped=sum(reasons.values()),
        skip_reasons=reasons,
        signature=signature,
    )
