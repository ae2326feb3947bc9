"""Per-trace outcomes held in memory as numpy columns: the reference the product's sums are
checked against, and the simulated traffic's rows in the alerting benchmarks.

The product computes every window and detector from per-minute sums (`collector.jobs`);
`OutcomeColumns` keeps each trace's row instead and aggregates a window directly (Wilson
intervals for proportions, the evaluators' seeded bootstrap up to `BOOTSTRAP_MAX_N` values,
the normal interval above it), so a test can compare the sums with the rows of the same
traces. `frame_from_columns` and `drift_points` turn rows into the product's per-minute
sums and run the product's detectors on them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from collector.jobs.buckets.frame import BUCKET_S, BucketFrame, frame_of
from collector.jobs.drift.detector import DriftConfig, MetricFacts
from collector.jobs.drift.sums import drift_points_from_frame
from collector.jobs.outcomes import codec
from collector.jobs.outcomes.codec import kind_of
from collector.jobs.windows.aggregate import WindowAggregate
from collector.jobs.windows.labels import (
    DEFAULT_MAX_LENGTH,
    OTHER,
    Folding,
    LabelLimits,
    choose_kept,
    clean_value,
)
from collector.jobs.windows.window import OVERALL, Group, Window, group_for
from evaluators.aggregate import Aggregate, aggregate_scores
from evaluators.outcome import Outcome, Score, Skipped
from evaluators.signature import Signature

SCORE, SKIPPED, FAILED, ABSENT = 0, 1, 2, 3
BOOTSTRAP_MAX_N = 500


@dataclass(frozen=True, slots=True)
class LabelFold:
    """One label's `Folding` for a run, with `keep[code]` True for the codes kept."""

    folding: Folding
    keep: np.ndarray


class OutcomeColumns:
    """Growable column store of per-trace outcomes for one job's metrics."""

    def __init__(
        self,
        metrics: Sequence[str],
        group_labels: Sequence[str],
        max_length: int = DEFAULT_MAX_LENGTH,
    ) -> None:
        self.metrics = tuple(metrics)
        self.max_length = max_length
        self._metric_index = {m: i for i, m in enumerate(self.metrics)}
        self.group_labels = tuple(group_labels)
        self._size = 0
        self._cap = 0
        self._ts = np.zeros(0, dtype=np.float64)
        self._alive = np.zeros(0, dtype=bool)
        self._values = np.zeros((0, len(self.metrics)), dtype=np.float64)
        self._status = np.zeros((0, len(self.metrics)), dtype=np.int8)
        self._reason = np.zeros((0, len(self.metrics)), dtype=np.int32)
        self._codes = {label: np.zeros(0, dtype=np.int32) for label in self.group_labels}
        self._code_values: dict[str, list[str]] = {label: [] for label in self.group_labels}
        self._code_index: dict[str, dict[str, int]] = {label: {} for label in self.group_labels}
        self._raw_codes: dict[str, dict[str, int]] = {label: {} for label in self.group_labels}
        self._reasons: list[str] = []
        self._reason_index: dict[str, int] = {}
        self._pos: dict[str, int] = {}
        self._trace_at: list[str] = []
        self._grow(1024)

    def __len__(self) -> int:
        return len(self._pos)

    def _grow(self, need: int) -> None:
        if need <= self._cap:
            return
        cap = max(need, self._cap * 2, 1024)

        def widen(arr: np.ndarray, fill: Any) -> np.ndarray:
            out = np.full((cap, *arr.shape[1:]), fill, dtype=arr.dtype)
            out[: self._size] = arr[: self._size]
            return out

        self._ts = widen(self._ts, 0.0)
        self._alive = widen(self._alive, False)
        self._values = widen(self._values, 0.0)
        self._status = widen(self._status, ABSENT)
        self._reason = widen(self._reason, 0)
        self._codes = {k: widen(v, -1) for k, v in self._codes.items()}
        self._cap = cap

    def _code(self, label: str, raw: str) -> int:
        """The code of a tag value, cleaned first (values stored by older versions were
        not); -1 when nothing is left of it. Raw spellings of one clean value share a code."""
        known = self._raw_codes[label].get(raw)
        if known is not None:
            return known
        value = clean_value(raw, self.max_length)
        if value is None:
            code = -1
        else:
            index = self._code_index[label]
            code = index.get(value, -1)
            if code < 0:
                code = index[value] = len(self._code_values[label])
                self._code_values[label].append(value)
        self._raw_codes[label][raw] = code
        return code

    def _reason_code(self, reason: str) -> int:
        code = self._reason_index.get(reason)
        if code is None:
            code = self._reason_index[reason] = len(self._reasons)
            self._reasons.append(reason)
        return code

    def label_values(self, label: str) -> list[str]:
        """A label's values in code order (code i is `label_values(label)[i]`)."""
        return list(self._code_values[label])

    def put(
        self,
        trace_id: str,
        updated_at: float,
        ts: float,
        groups: Mapping[str, str] | None,
        outcomes: Mapping[str, Outcome],
    ) -> None:
        """Add (or replace) the contribution of one trace."""
        row = self._row(trace_id, ts, groups)
        for metric, outcome in outcomes.items():
            col = self._metric_index.get(metric)
            if col is None:
                continue
            if isinstance(outcome, Score):
                self._status[row, col] = SCORE
                self._values[row, col] = outcome.value
            elif isinstance(outcome, Skipped):
                self._status[row, col] = SKIPPED
                self._reason[row, col] = self._reason_code(outcome.reason)
            else:
                self._status[row, col] = FAILED
                self._reason[row, col] = self._reason_code(outcome.error_type)

    def put_encoded(
        self,
        trace_id: str,
        updated_at: float,
        ts: float,
        groups: Mapping[str, str] | None,
        encoded: Mapping[str, Any],
    ) -> None:
        """`put` from the stored form (`outcome_codec`), without building outcomes:
        loading a job's state after a restart reads one such row per trace in the window.
        An outcome waiting for a retry (`retry.py`) is left absent, like a metric not run."""
        row = self._row(trace_id, ts, groups)
        for metric, value in encoded.items():
            col = self._metric_index.get(metric)
            if col is None:
                continue
            kind = kind_of(value)
            if kind is None:
                continue  # waits for a retry (`retry.py`): not measured yet, not an error
            if kind[0] == codec.SCORED:
                self._status[row, col] = SCORE
                self._values[row, col] = float(value)
            else:
                self._status[row, col] = SKIPPED if kind[0] == codec.SKIPPED else FAILED
                self._reason[row, col] = self._reason_code(kind[1])

    def _row(self, trace_id: str, ts: float, groups: Mapping[str, str] | None) -> int:
        """A fresh row for the trace (its older row, if any, no longer counts)."""
        old = self._pos.get(trace_id)
        if old is not None:
            self._alive[old] = False
        self._grow(self._size + 1)
        row = self._size
        self._size += 1
        self._ts[row] = ts
        self._alive[row] = True
        for label in self.group_labels:
            value = (groups or {}).get(label)
            self._codes[label][row] = -1 if value is None else self._code(label, str(value))
        self._pos[trace_id] = row
        if len(self._trace_at) <= row:
            self._trace_at.extend([""] * (self._cap - len(self._trace_at)))
        self._trace_at[row] = trace_id
        return row

    def timestamps(self) -> tuple[np.ndarray, np.ndarray]:
        """(ts, alive) of every row (views: do not write)."""
        n = self._size
        return self._ts[:n], self._alive[:n]

    def scores(self, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """(values, holds a score) of one metric for every row (views: do not write)."""
        col = self._metric_index[metric]
        n = self._size
        return self._values[:n, col], self._status[:n, col] == SCORE

    def prune(self, before_ts: float) -> int:
        """Drop contributions older than `before_ts`; compact when most rows are dead."""
        n = self._size
        expired = np.nonzero(self._alive[:n] & (self._ts[:n] < before_ts))[0]
        for row in expired.tolist():
            trace_id = self._trace_at[row]
            self._pos.pop(trace_id, None)
        self._alive[expired] = False
        if n > 4096 and len(self._pos) < n // 2:
            self._compact()
        return int(expired.size)

    def _compact(self) -> None:
        keep = np.nonzero(self._alive[: self._size])[0]
        m = keep.size
        self._ts[:m] = self._ts[keep]
        self._alive[:m] = True
        self._alive[m:] = False
        self._values[:m] = self._values[keep]
        self._status[:m] = self._status[keep]
        self._status[m:] = ABSENT
        self._reason[:m] = self._reason[keep]
        for label, codes in self._codes.items():
            codes[:m] = codes[keep]
            self._recode(label, codes[:m])
        trace_at = [self._trace_at[i] for i in keep.tolist()]
        self._trace_at[:m] = trace_at
        self._pos = {t: i for i, t in enumerate(trace_at)}
        self._size = m

    def _recode(self, label: str, codes: np.ndarray) -> None:
        """Renumber a label's codes to the values live rows still use (in place), so a
        label whose values keep changing (a user id in a tag) does not grow the tables."""
        self._raw_codes[label] = {}
        used = np.unique(codes[codes >= 0])
        if used.size == len(self._code_values[label]):
            return
        remap = np.full(len(self._code_values[label]) + 1, -1, dtype=np.int32)
        remap[used] = np.arange(used.size, dtype=np.int32)
        codes[:] = remap[codes]  # -1 indexes the last entry, which stays -1
        values = [self._code_values[label][c] for c in used.tolist()]
        self._code_values[label] = values
        self._code_index[label] = {v: i for i, v in enumerate(values)}

    def folds(self, since_ts: float, limits: LabelLimits) -> dict[str, LabelFold]:
        """Which values of each label keep series of their own in this run: chosen once
        over the rows since `since_ts` (the longest window), so every window folds the
        same values into `other`."""
        n = self._size
        alive = self._alive[:n] & (self._ts[:n] >= since_ts)
        out = {}
        for label in self.group_labels:
            values = self._code_values[label]
            codes = self._codes[label][:n][alive]
            counts = np.bincount(codes[codes >= 0], minlength=len(values))
            folding = choose_kept(label, values, counts, limits.policy(label))
            keep = np.zeros(len(values), dtype=bool)
            index = self._code_index[label]
            keep[[index[v] for v in folding.kept]] = True
            out[label] = LabelFold(folding, keep)
        return out

    def groups_in(
        self, selected: np.ndarray, folds: Mapping[str, LabelFold] | None = None
    ) -> Iterator[tuple[Group, np.ndarray]]:
        """(group, boolean mask over all rows): overall (`selected` itself), then one per
        label value present among the selected rows; with `folds`, one per kept value and
        one `other` for the rows of every folded value."""
        yield OVERALL, selected
        for label in self.group_labels:
            codes = self._codes[label][: self._size]
            present = codes[selected]
            counts = np.bincount(present[present >= 0], minlength=len(self._code_values[label]))
            fold = (folds or {}).get(label)
            keep = np.ones(counts.size, dtype=bool) if fold is None else fold.keep
            for code in np.flatnonzero(counts * keep[: counts.size]).tolist():
                yield group_for(label, self._code_values[label][code]), selected & (codes == code)
            if fold is not None and counts[~keep[: counts.size]].any():
                folded = np.append(~keep, False)  # code -1 (no value) reads the last entry
                yield group_for(label, OTHER), selected & folded[codes]

    def aggregate(
        self,
        start_ts: float,
        end_ts: float,
        proportions: Mapping[str, bool],
        signatures: Mapping[str, Signature],
        seed: int = 0,
        folds: Mapping[str, LabelFold] | None = None,
    ) -> list[WindowAggregate]:
        """Aggregates of every metric and group over contributions with ts in the window.

        Boolean masks over whole columns, in row order: a window of a million rows is
        neither copied nor sorted per group, and each group's scored values come out in
        the same order as the rows, so sums (and values) do not depend on the grouping.
        """
        n = self._size
        ts = self._ts[:n]
        selected = self._alive[:n] & (ts >= start_ts) & (ts <= end_ts)
        columns = []
        for col in range(len(self.metrics)):
            status = self._status[:n, col]
            columns.append(
                (
                    self._values[:n, col],
                    self._reason[:n, col],
                    status == SCORE,
                    status == SKIPPED,
                    status == FAILED,
                )
            )
        out: list[WindowAggregate] = []
        for group, mask in self.groups_in(selected, folds):
            for metric, (values, reasons, scored, skipped, failed) in zip(
                self.metrics, columns, strict=True
            ):
                aggregate = summarize(
                    metric,
                    values[mask & scored],
                    proportion=proportions.get(metric, False),
                    seed=seed,
                    signature=signatures.get(metric, Signature()),
                    skip_reasons=self._count_reasons(reasons[mask & skipped]),
                    error_types=self._count_reasons(reasons[mask & failed]),
                )
                out.append(WindowAggregate(group, aggregate))
        return out

    def _count_reasons(self, codes: np.ndarray) -> dict[str, int]:
        """Reason text -> count for an array of reason codes (a window may hold a million)."""
        if codes.size == 0:
            return {}
        counts = np.bincount(codes, minlength=len(self._reasons))
        return {self._reasons[c]: int(counts[c]) for c in np.flatnonzero(counts).tolist()}


def summarize(
    metric: str,
    scored: np.ndarray,
    *,
    proportion: bool,
    seed: int,
    signature: Signature,
    skip_reasons: Mapping[str, int],
    error_types: Mapping[str, int],
) -> Aggregate:
    """Value, n and 95% CI of scored values (the evaluators' intervals, with the normal
    approximation above `BOOTSTRAP_MAX_N` values).

    Up to `BOOTSTRAP_MAX_N` values are sorted first: the seeded bootstrap resamples by
    position, so its interval would otherwise depend on the order the rows came in
    (a worker that scored the traces and one that loaded them hold them in different
    orders: `collector.jobs.sharding.sharded`). Above it the mean and spread are sums in row order,
    equal across orders to the last bits (sorting a million values would cost 250x the
    mean)."""
    if scored.size <= BOOTSTRAP_MAX_N:
        scored = np.sort(scored)
    return aggregate_scores(
        metric,
        scored,
        proportion=proportion,
        seed=seed,
        signature=signature,
        skip_reasons=skip_reasons,
        error_types=error_types,
        bootstrap_max_n=BOOTSTRAP_MAX_N,
    )


def frame_from_columns(
    columns: OutcomeColumns,
    since_ts: float,
    until_ts: float,
    folds: Mapping[str, LabelFold] | None = None,
) -> BucketFrame:
    """The frame of the live contributions with `since_ts <= ts <= until_ts`, grouped as
    `columns.groups_in` groups them (with `folds`: kept values and `other`)."""
    ts, alive = columns.timestamps()
    selected = alive & (ts >= since_ts) & (ts <= until_ts)
    minute = np.floor(ts / BUCKET_S).astype(np.int64)
    scores = [columns.scores(name) for name in columns.metrics]
    groups: list[Group] = []
    parts: list[tuple[int, int, np.ndarray, np.ndarray]] = []
    for group_code, (group, mask) in enumerate(columns.groups_in(selected, folds)):
        groups.append(group)
        rows = np.flatnonzero(mask)
        for metric_code, (values, scored) in enumerate(scores):
            held = rows[scored[rows]]
            if held.size:
                parts.append((metric_code, group_code, minute[held], values[held]))
    return frame_of(columns.metrics, tuple(groups), parts)


def drift_points(
    columns: OutcomeColumns,
    metrics: Sequence[MetricFacts],
    now_ts: float,
    longest_s: float,
    folds: Mapping[str, LabelFold] | None,
    config: DriftConfig,
) -> list[tuple[Window, WindowAggregate]]:
    """The detectors' points of rows in hand: their per-minute sums, then the same engine."""
    frame = frame_from_columns(columns, now_ts - longest_s, now_ts, folds)
    return drift_points_from_frame(frame, metrics, now_ts, longest_s, config)
