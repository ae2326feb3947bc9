"""A job's dataset metrics (sessions, clusters, confusion matrices) per window and group.

They are not means of per-trace outcomes, so they cannot come from the outcome columns:
they are computed from samples, over the most recent `dataset_cap` candidates of the
longest window (each window takes the part of them inside it). That costs seconds to
minutes (embeddings), so it is done when a run saw new or updated traces, or at least
every `DATASET_REFRESH_S`; in between the last values are given again.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from types import MappingProxyType

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from collector.jobs.recording.cursor import epoch, version_s
from collector.jobs.run.definition import JobDefinition, JobEnvironment
from collector.jobs.run.evaluation import eval_context
from collector.jobs.traces.candidates import requests
from collector.jobs.traces.trace_rows import SampleMemo
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.labels import LabelLimits, choose_kept, clean_value, folded_value
from collector.jobs.windows.versions import VERSION_LABEL, version_of
from collector.jobs.windows.window import OVERALL, Window, group_for
from collector.store.models import Trace
from evaluators.aggregate import Aggregate
from evaluators.registry import ResolvedMetric
from evaluators.sample import Sample

DATASET_REFRESH_S = 300.0
"""Dataset metrics are recomputed at least this often, even without new traces."""


def fold_tags(
    samples: list[tuple[float, Sample]], labels: Sequence[str], limits: LabelLimits
) -> list[tuple[float, Sample]]:
    """The samples with each group label's tag cleaned and, beyond the label's bound,
    folded into `other` (chosen over all of `samples`, the longest window), so dataset
    metrics make no more groups than the per-trace ones."""
    tags = [dict(sample.tags) for _, sample in samples]
    for label in labels:
        values = [
            None if t.get(label) is None else clean_value(t[label], limits.max_length) for t in tags
        ]
        names = sorted({v for v in values if v is not None})
        index = {v: i for i, v in enumerate(names)}
        counts = np.bincount([index[v] for v in values if v is not None], minlength=len(names))
        kept = choose_kept(label, names, counts, limits.policy(label)).kept
        for t, value in zip(tags, values, strict=True):
            if value is None:
                t.pop(label, None)
            else:
                t[label] = folded_value(value, kept)
    return [
        (ts, sample if t == sample.tags else replace(sample, tags=MappingProxyType(t)))
        for (ts, sample), t in zip(samples, tags, strict=True)
    ]


def tag_versions(
    samples: list[tuple[float, Sample]],
    models: Sequence[str | None],
    sources: Sequence[str],
    max_length: int,
) -> list[tuple[float, Sample]]:
    """The samples with tag `version` set to their version (`versions.version_of`, from
    their tags and their trace's `models`), or removed when they have none: the dataset
    metrics' version groups are the per-trace ones."""
    out = []
    for (ts, sample), model in zip(samples, models, strict=True):
        version = version_of(sample.tags, model, sources, max_length)
        if sample.tags.get(VERSION_LABEL) != version:
            tags = {k: v for k, v in sample.tags.items() if k != VERSION_LABEL}
            if version is not None:
                tags[VERSION_LABEL] = version
            sample = replace(sample, tags=MappingProxyType(tags))
        out.append((ts, sample))
    return out


class DatasetMetrics:
    """Computes a job's dataset metrics per window and keeps the last values."""

    def __init__(
        self,
        definition: JobDefinition,
        env: JobEnvironment,
        metrics: Sequence[ResolvedMetric],
        memo: SampleMemo,
        longest_s: float,
    ) -> None:
        self.definition = definition
        self.env = env
        self.names = [m.name for m in metrics]
        self.memo = memo
        self.longest_s = longest_s
        self._points: list[tuple[Window, WindowAggregate]] = []
        self._at = 0.0

    def points(
        self, session: Session, now: datetime, *, changed: bool
    ) -> list[tuple[Window, WindowAggregate]]:
        """Every dataset metric per window and group: recomputed when `changed`, when
        stale or at first, else the last values."""
        stale = time.monotonic() - self._at > DATASET_REFRESH_S
        if changed or stale or not self._points:
            # kept only when complete: a failure half-way must not leave partial values
            # for the next runs to reuse
            self._points = list(self._compute(session, now))
            self._at = time.monotonic()
        return list(self._points)

    def _compute(self, session: Session, now: datetime) -> Iterable[tuple[Window, WindowAggregate]]:
        longest = now - timedelta(seconds=self.longest_s)
        narrow = self.definition.dataset_candidates or self.definition.candidates
        columns = (Trace.id, Trace.trace_id, Trace.updated_at, Trace.timestamp, Trace.model)
        query = narrow(
            requests(select(*columns)).where(Trace.timestamp >= longest, Trace.timestamp <= now)
        )
        keys = []
        ts_of: dict[str, float] = {}
        model_of: dict[str, str | None] = {}
        for row_id, trace_id, updated, ts, model in session.execute(
            query.order_by(Trace.timestamp.desc()).limit(self.definition.dataset_cap)
        ):
            keys.append((row_id, trace_id, epoch(updated)))
            ts_of[trace_id] = epoch(ts)
            model_of[trace_id] = model
        found = self.memo.samples(session, keys, version_s, since=longest)
        samples = [(ts_of[trace_id], sample) for trace_id, sample in found]
        labels = self.env.group_labels
        if self.definition.dataset_groups and labels:
            if VERSION_LABEL in labels:
                models = [model_of[trace_id] for trace_id, _ in found]
                samples = tag_versions(
                    samples, models, self.env.version_sources, self.env.label_limits.max_length
                )
            samples = fold_tags(samples, labels, self.env.label_limits)
        # `samples` is newest first, so a window's subset is a prefix of it; windows whose
        # prefixes are equally long (all candidates are recent) share one evaluation.
        done: dict[int, list[WindowAggregate]] = {}
        for window in self.env.windows:
            start = epoch(now) - window.seconds
            size = sum(1 for ts, _ in samples if ts >= start)
            if size not in done:
                subset = [s for ts, s in samples if ts >= start]
                done[size] = self._items(subset)
            for item in done[size]:
                yield window, item

    def _items(self, subset: list[Sample]) -> list[WindowAggregate]:
        from evaluators.runner import evaluate

        names = self.names
        if not subset:
            return [
                WindowAggregate(
                    OVERALL, Aggregate(metric, None, 0, skip_reasons={"no traces in window": 0})
                )
                for metric in names
            ]
        items = []
        labels = self.env.group_labels if self.definition.dataset_groups else ()
        first = True
        for label in labels or (None,):
            result = evaluate(subset, names, eval_context(self.env), group_by=label)
            if first:
                items += [WindowAggregate(OVERALL, result.aggregates[m]) for m in names]
                first = False
            if label is None:
                continue
            for value, aggregates in result.groups.items():
                if value == "(none)":
                    continue
                group = group_for(label, value)
                items += [WindowAggregate(group, aggregates[m]) for m in names]
        return items
