"""Pieces of `ragpulse evaluate`: read a JSONL dataset of traces, check that the asked
metrics can run on it, render the results (table, SPEC §5 JSON) and record the run.

Every line is validated with the same code the Kafka consumer uses
(`collector.ingest.decode.trace_json`), so a dataset that evaluates offline also ingests online.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, BinaryIO

from collector.ingest.decode.errors import INVALID_JSON, INVALID_VALUE, OVERSIZED, DecodeError
from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH
from collector.ingest.decode.trace_json import decode_json_message, parse_trace_record
from collector.store.samples import record_to_sample
from evaluators.aggregate import Aggregate
from evaluators.ground_truth import DEFAULT_PRIORITY
from evaluators.outcome import Score
from evaluators.registry import ResolvedMetric
from evaluators.runner import EvaluationResult
from evaluators.sample import Sample

if TYPE_CHECKING:
    from evaluators.labelled import LabelledMetric

logger = logging.getLogger(__name__)

MAX_REPORTED_LINES = 20
MAX_LINE_BYTES = 64 * 1024 * 1024
_CHUNK = 1024 * 1024
_NO_LABELS: Mapping[str, float] = MappingProxyType({})


class DatasetError(ValueError):
    """The dataset cannot be evaluated; the message names the file, line and problem."""


_PRESENT: dict[str, Callable[[Sample], bool]] = {
    "question": lambda s: bool(s.question),
    "answer": lambda s: bool(s.answer),
    "reference": lambda s: bool(s.reference),
    "contexts": lambda s: bool(s.contexts),
    "contexts[].text": lambda s: any(c.text for c in s.contexts),
    "relevant_ids/relevance": lambda s: bool(s.relevance),
    "judge.decision": lambda s: s.judge is not None and s.judge.decision is not None,
    "judge_label": lambda s: s.judge_label is not None,
    "judge.latency_ms": lambda s: s.judge is not None and s.judge.latency_ms is not None,
    "cache.hit": lambda s: s.cache_hit is not None,
    "timestamp": lambda s: s.timestamp is not None,
    "session_id": lambda s: s.session_id is not None,
}

# Words of a metric's `needs` text -> trace field; words not listed (a judge model, an
# embedder) are not fields of the data.
_TERMS: dict[str, str] = {
    "question": "question",
    "questions": "question",
    "answer": "answer",
    "answers": "answer",
    "reference": "reference",
    "contexts": "contexts",
    "ranked contexts": "contexts",
    "contexts with text": "contexts[].text",
    "ground truth": "relevant_ids/relevance",
    "judge.decision": "judge.decision",
    "`judge.decision`": "judge.decision",
    "judge_label": "judge_label",
    "`judge_label`": "judge_label",
    "judge.latency_ms": "judge.latency_ms",
    "cache.hit": "cache.hit",
    "timestamp": "timestamp",
    "timestamps": "timestamp",
    "session_id": "session_id",
    "sessions": "session_id",
}


def required_fields(needs: str) -> list[list[str]]:
    """Parse a metric's `needs` text into fields; each inner list is "any of" (`a or b`)."""
    text = re.sub(r"\([^)]*\)", "", needs)
    out: list[list[str]] = []
    for term in re.split(r"[,+]", text):
        options = [_TERMS.get(o.strip().lower()) for o in term.split(" or ")]
        known = [o for o in options if o is not None]
        if known and len(known) == len(options):
            out.append(known)
    return out


def missing_fields(metric: ResolvedMetric, samples: Sequence[Sample]) -> list[str]:
    """Fields the metric needs that no sample has (the metric could only skip)."""
    missing = []
    for options in required_fields(metric.spec.needs):
        if not any(_PRESENT[f](s) for f in options for s in samples):
            missing.append(" or ".join(options))
    return missing


@dataclass(frozen=True)
class InvalidLine:
    """A line of the dataset that is not a valid trace record."""

    line: int
    reason: str
    detail: str

    def describe(self, path: Path) -> str:
        return f"{path}:{self.line}: {self.reason}: {self.detail}"

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "reason": self.reason, "detail": self.detail}


@dataclass(frozen=True)
class Dataset:
    samples: list[Sample]
    invalid: list[InvalidLine] = field(default_factory=list)
    labels: list[Mapping[str, float]] = field(default_factory=list)
    """Human labels per sample (parallel to `samples`; empty mappings when none)."""

    @property
    def has_labels(self) -> bool:
        return any(self.labels)


def read_dataset(
    path: Path,
    ground_truth: Sequence[str] = DEFAULT_PRIORITY,
    max_depth: int = DEFAULT_MAX_DEPTH,
    *,
    skip_invalid: bool = False,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Dataset:
    """Validate every line (SPEC §2 trace JSON) and map it to a Sample.

    Blank lines are ignored. A line longer than `max_line_bytes` is refused as soon as the
    limit is passed: the rest of it is skipped in chunks, never held in memory. Any
    failure to decode a line (a `DecodeError`, and also a `RecursionError` of deep nesting
    or an `OverflowError` of a timestamp) makes it invalid with a one-line reason. Invalid
    lines raise `DatasetError` naming them, unless `skip_invalid`, which returns them.
    Ground truth follows the `ground_truth` priority (`evaluators.ground_truth`).
    """
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from None
    samples: list[Sample] = []
    labels: list[Mapping[str, float]] = []
    invalid: list[InvalidLine] = []
    with handle:
        for number, raw in _lines(handle, max_line_bytes):
            if raw is None:
                invalid.append(
                    InvalidLine(
                        number, OVERSIZED, f"line is longer than the {max_line_bytes}-byte limit"
                    )
                )
                continue
            if not raw.strip():
                continue
            try:
                sample, labelled = _parse_line(raw, ground_truth, max_depth, max_line_bytes)
                samples.append(sample)
                labels.append(labelled)
            except Exception as exc:  # any failure to decode is this line's, whatever its type
                reason, detail = _why(exc)
                invalid.append(InvalidLine(number, reason, detail))
    if invalid and not skip_invalid:
        raise DatasetError(_invalid_message(path, invalid))
    if not samples and invalid:
        raise DatasetError(
            _invalid_message(path, invalid, hint=f"(and {path} holds no valid line)")
        )
    if not samples:
        raise DatasetError(f"{path} holds no trace records")
    return Dataset(samples, invalid, labels)


def _lines(handle: BinaryIO, limit: int) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) per line; None for a line over `limit` bytes, whose rest is
    read in chunks and dropped."""
    number = 0
    while True:
        raw = handle.readline(limit + 1)
        if not raw:
            return
        number += 1
        if len(raw) > limit and not (len(raw) == limit + 1 and raw.endswith(b"\n")):
            while raw and not raw.endswith(b"\n"):
                raw = handle.readline(_CHUNK)
            yield number, None
            continue
        yield number, raw


def _why(exc: Exception) -> tuple[str, str]:
    """A decode failure as (reason, one-line detail)."""
    if isinstance(exc, DecodeError):
        return exc.reason, _one_line(exc.detail)
    if isinstance(exc, RecursionError):
        return INVALID_JSON, "JSON nested too deeply to decode"
    if isinstance(exc, OverflowError):
        if "date" in str(exc):
            return INVALID_VALUE, "a date-time (e.g. timestamp) is outside years 1-9999 in UTC"
        return INVALID_VALUE, f"a number is out of range ({_one_line(str(exc))})"
    return INVALID_VALUE, _one_line(f"{type(exc).__name__}: {exc}")


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _invalid_message(
    path: Path,
    invalid: Sequence[InvalidLine],
    hint: str = "(--skip-invalid evaluates the other lines)",
) -> str:
    if len(invalid) == 1:
        return f"{invalid[0].describe(path)} {hint}"
    shown = [i.describe(path) for i in invalid[:MAX_REPORTED_LINES]]
    more = len(invalid) - len(shown)
    if more:
        shown.append(f"... and {more} more invalid lines")
    return f"{len(invalid)} invalid lines in {path} {hint}:\n  " + "\n  ".join(shown)


def _parse_line(
    raw: bytes, ground_truth: Sequence[str], max_depth: int, max_bytes: int
) -> tuple[Sample, Mapping[str, float]]:
    obj = decode_json_message(raw.rstrip(b"\r\n"), max_bytes, max_depth)
    record = parse_trace_record(obj)
    return record_to_sample(record, ground_truth), record.labels or _NO_LABELS


# --- output ---------------------------------------------------------------------------


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if abs(value) < 1e6 else f"{value:.4g}"


def render_table(aggregates: dict[str, Aggregate]) -> str:
    """A fixed-width table: metric, value, 95% CI, n, skipped, errors."""
    header = ("metric", "value", "95% CI", "n", "skipped", "errors")
    rows: list[Sequence[str]] = [header]
    for name, agg in aggregates.items():
        ci = (
            f"[{_fmt(agg.ci_lower)}, {_fmt(agg.ci_upper)}]"
            if agg.ci_lower is not None and agg.ci_upper is not None
            else "-"
        )
        rows.append((name, _fmt(agg.value), ci, str(agg.n), str(agg.skipped), str(agg.errors)))
    return _layout(rows)


def _layout(rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """Rows as fixed-width text: the first `left` columns left-aligned, the others
    right-aligned, a rule under the header row."""
    header = rows[0]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for r in rows:
        cells = [
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        lines.append("  ".join(cells))
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def skip_notes(aggregates: dict[str, Aggregate]) -> list[str]:
    """One line per metric that skipped or failed samples, with the reasons."""
    notes = []
    for name, agg in aggregates.items():
        parts = [f"{r} ×{c}" for r, c in agg.skip_reasons.items()]
        parts += [f"error {t} ×{c}" for t, c in agg.error_types.items()]
        if parts:
            notes.append(f"{name}: " + "; ".join(parts))
    return notes


def to_json(
    result: EvaluationResult,
    samples: Sequence[Sample],
    invalid: Sequence[InvalidLine] = (),
) -> dict[str, Any]:
    """SPEC §5: {"aggregate": {...}, "samples": [{"trace_id", "question", metric: value}]}
    (+ groups, + `invalid_lines` left out by --skip-invalid: line number, reason, detail).
    The question lets `ragpulse compare` pair two runs' samples question by question."""
    out: dict[str, Any] = {
        "aggregate": {name: agg.to_dict() for name, agg in result.aggregates.items()},
        "samples": [],
    }
    for i, s in enumerate(samples):
        row: dict[str, Any] = {"trace_id": s.trace_id, "question": s.question}
        for name, outcomes in result.per_sample.items():
            o = outcomes[i]
            row[name] = o.value if isinstance(o, Score) else None
        out["samples"].append(row)
    if invalid:
        out["invalid_lines"] = [i.to_dict() for i in invalid]
    if result.group_by:
        out["group_by"] = result.group_by
        out["groups"] = {
            value: {name: agg.to_dict() for name, agg in aggs.items()}
            for value, aggs in result.groups.items()
        }
    return out


def compare_judges_with_labels(
    result: EvaluationResult, labels: Sequence[Mapping[str, float]], seed: int = 0
) -> dict[str, LabelledMetric]:
    """Each evaluated judge metric that has labelled, scored samples, against the labels."""
    out: dict[str, LabelledMetric] = {}
    if not any(labels):
        return out
    from evaluators.labelled import compare_with_labels  # scipy.stats: only when labelled

    for name, outcomes in result.per_sample.items():
        found = compare_with_labels(name, outcomes, labels, seed=seed)
        if found is not None:
            out[name] = found
    return out


def add_label_results(document: dict[str, Any], labelled: Mapping[str, LabelledMetric]) -> None:
    """Into the JSON document: `judge_agreement` {metric: {scale, n, stats, by_model?}} and
    `aggregate[metric].corrected` {value, ci_lower, ci_upper, n_labelled}."""
    if not labelled:
        return
    document["judge_agreement"] = {m: lm.agreement_dict() for m, lm in labelled.items()}
    for metric, lm in labelled.items():
        if metric in document["aggregate"]:
            document["aggregate"][metric]["corrected"] = lm.corrected_dict()


def render_agreement_table(labelled: Mapping[str, LabelledMetric]) -> str:
    """metric, judge model, statistic, value, 95% CI, n — then each corrected mean."""
    rows: list[tuple[str, ...]] = [("metric", "model", "statistic", "value", "95% CI", "n")]
    for metric, lm in labelled.items():
        per_model = {"all": lm.agreement.to_dict()}
        per_model |= {m: a.to_dict() for m, a in lm.by_model.items()}
        for model, stats in per_model.items():
            for stat, d in stats.items():
                ci = _ci(d.get("ci_lower"), d.get("ci_upper"))
                if "undefined" in d:
                    ci = f"undefined: {d['undefined']}"
                rows.append((metric, model, stat, _fmt(d["value"]), ci, str(d["n"])))
        c = lm.corrected_dict()
        ci = _ci(c["ci_lower"], c["ci_upper"])
        if "undefined" in c:
            ci = f"undefined: {c['undefined']}"
        rows.append((metric, "all", "corrected mean", _fmt(c["value"]), ci, str(c["n_labelled"])))
    return _layout(rows, left=3)


def _ci(lo: float | None, hi: float | None) -> str:
    return f"[{_fmt(lo)}, {_fmt(hi)}]" if lo is not None and hi is not None else "-"


def combined_signature(aggregates: Iterable[Aggregate]) -> str:
    """Distinct signatures of the run's metrics, joined (fits the runs.signature column)."""
    seen = dict.fromkeys(str(a.signature) for a in aggregates)
    return " ; ".join(seen)[:512]


# --- runs table -----------------------------------------------------------------------


def usable_database(url: str) -> bool:
    """True when the database exists and is migrated (has the `runs` table).

    A SQLite file that does not exist is not created just to record a run.
    """
    from sqlalchemy import inspect
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        db = parsed.database
        if not db or db == ":memory:" or not Path(db).exists():
            return False
    from collector.store.session import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return bool(inspect(conn).has_table("runs"))
    except Exception:
        logger.info(
            "database %s is not reachable; the run is not recorded", parsed.render_as_string()
        )
        return False
    finally:
        engine.dispose()


class RunRecorder:
    """Writes one `runs` row: inserted as running, finished as succeeded/failed."""

    def __init__(
        self, session_factory: Any, dataset: str, metrics: Sequence[str], config: dict[str, Any]
    ):
        from collector.store.models import Run

        self._factory = session_factory
        with session_factory() as session:
            run = Run(
                kind="evaluate",
                status="running",
                dataset=dataset,
                metrics=list(metrics),
                config=config,
            )
            session.add(run)
            session.commit()
            self.run_id = run.id

    def finish(self, status: str, aggregate: dict[str, Any] | None, signature: str | None) -> None:
        from collector.store.models import Run, utcnow

        with self._factory() as session:
            run = session.get(Run, self.run_id)
            if run is None:
                return
            run.status = status
            run.finished_at = utcnow()
            run.aggregate = aggregate
            run.signature = signature
            session.commit()
