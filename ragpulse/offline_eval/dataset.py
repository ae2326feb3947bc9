"""A JSONL dataset of traces for `ragpulse evaluate`, read line by line into samples.

Every line is validated with the same code the Kafka consumer uses
(`collector.ingest.decode.trace_json`), so a dataset that evaluates offline also ingests
online. A bad line is reported with its number and a one-line reason.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO

from collector.ingest.decode.errors import INVALID_JSON, INVALID_VALUE, OVERSIZED, DecodeError
from collector.ingest.decode.limits import DEFAULT_MAX_DEPTH
from collector.ingest.decode.trace_json import decode_json_message, parse_trace_record
from collector.store.samples import record_to_sample
from evaluators.ground_truth import DEFAULT_PRIORITY
from evaluators.sample import Sample

MAX_REPORTED_LINES = 20
MAX_LINE_BYTES = 64 * 1024 * 1024
_CHUNK = 1024 * 1024
_NO_LABELS: Mapping[str, float] = MappingProxyType({})


class DatasetError(ValueError):
    """The dataset cannot be evaluated; the message names the file, line and problem."""


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
