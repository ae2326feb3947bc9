"""The two sides of `ragpulse compare RUN_A.json RUN_B.json`: per-sample scores of two
`ragpulse evaluate --output` documents, keyed for pairing.

A sample is keyed by its trace id when the two runs share trace ids (the same traces
scored twice, e.g. before and after a change of judge or metric), else by its question
(two systems answering one dataset produce different traces for the same questions);
a sample without a question (an output of an older ragpulse) keeps its trace id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from evaluators.comparison.rows import Row

SHARED_IDS = 0.5
"""Key by trace id when at least this share of the smaller run's ids is in the other."""


@dataclass(frozen=True)
class RunFile:
    path: Path
    samples: tuple[tuple[str | None, str | None, Mapping[str, float | None]], ...]
    """(trace id, question, {metric: value or None}) per sample, in file order."""
    metrics: tuple[str, ...]
    """The metrics of its `aggregate` section, in order."""


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def load_run(path: Path) -> RunFile:
    """Read an `evaluate --output` document; raises `UserError` saying what is wrong."""
    from collector.errors import UserError

    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: not a JSON document ({exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("samples"), list):
        raise UserError(
            f"{path}: not an `ragpulse evaluate --output` document (no `samples` list); "
            "write one with `ragpulse evaluate DATA.jsonl --metrics ... --output RUN.json`"
        )
    aggregate = document.get("aggregate")
    metrics = tuple(aggregate) if isinstance(aggregate, dict) else ()
    samples = []
    for item in document["samples"]:
        if not isinstance(item, dict):
            continue
        trace_id = item.get("trace_id")
        question = item.get("question")
        scores = {m: _number(item.get(m)) for m in metrics}
        samples.append(
            (
                str(trace_id) if trace_id is not None else None,
                question if isinstance(question, str) else None,
                MappingProxyType(scores),
            )
        )
    return RunFile(path, tuple(samples), metrics)


def keyed_rows(a: RunFile, b: RunFile) -> tuple[list[Row], list[Row], str]:
    """Both runs' rows keyed for pairing, and what the key is ("trace id" / "question")."""
    ids_a = {t for t, _q, _s in a.samples if t}
    ids_b = {t for t, _q, _s in b.samples if t}
    smaller = min(len(ids_a), len(ids_b))
    by_id = smaller > 0 and len(ids_a & ids_b) >= SHARED_IDS * smaller

    def rows(run: RunFile) -> list[Row]:
        return [(t if by_id else (q or t), s) for t, q, s in run.samples]

    return rows(a), rows(b), "trace id" if by_id else "question"


def shared_metrics(a: RunFile, b: RunFile, wanted: Sequence[str] | None) -> list[str]:
    """The metrics to compare: `wanted` (each must be in both runs) or all both have."""
    from collector.errors import UserError

    if not wanted:
        found = [m for m in a.metrics if m in b.metrics]
        if not found:
            raise UserError(f"{a.path} and {b.path} have no metric in common")
        return found
    missing = [
        f"{m} (not in {', '.join(str(r.path) for r in (a, b) if m not in r.metrics)})"
        for m in wanted
        if m not in a.metrics or m not in b.metrics
    ]
    if missing:
        raise UserError("cannot compare " + "; ".join(missing))
    return list(wanted)
