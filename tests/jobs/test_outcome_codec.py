"""The stored form of a trace's outcomes: what is written (pinned byte for byte, rows stored
by earlier versions must still read), what each form decodes to, and that every reader of
`job_outcomes.outcomes` (the outcome columns, the bucket sums, the retry cursor, the SLO
events) agrees on which outcomes wait for a retry."""

from __future__ import annotations

import re
from typing import Any

import pytest

from benchmarks.outcome_columns import OutcomeColumns
from collector.jobs.buckets.stats import SCORED, outcome_key
from collector.jobs.outcomes import codec
from collector.jobs.outcomes.retry import waiting_of
from collector.slo.events import _decoded
from evaluators.outcome import Failed, Outcome, Score, Skipped

WAITING = codec.encode_waiting("rate_limited", 2)
FINAL = codec.with_attempts(codec.encode(Failed("rate_limited")), 3)


@pytest.mark.parametrize(
    ("outcome", "text"),
    [
        (Score(0.25), b"0.25"),
        (Score(1), b"1.0"),
        (Skipped("no ground truth"), b'{"skipped":"no ground truth"}'),
        (Failed("timeout"), b'{"error":"timeout"}'),
    ],
)
def test_an_outcome_is_written_as_before_and_reads_back(outcome: Outcome, text: bytes) -> None:
    stored = codec.encode(outcome)
    assert codec.write_json(stored) == text
    read = codec.read_outcomes(codec.write_json({"m": stored}))["m"]
    assert codec.decode(read) == outcome
    assert not codec.is_waiting(read)


def test_a_waiting_failure_is_marked_and_decodes_to_nothing() -> None:
    assert codec.write_json(WAITING) == b'{"error":"rate_limited","transient":true,"attempts":2}'
    assert codec.is_waiting(WAITING) and codec.attempts_of(WAITING) == 2
    assert codec.kind_of(WAITING) is None and codec.decode(WAITING) is None
    assert codec.write_json(FINAL) == b'{"error":"rate_limited","attempts":3}'
    assert not codec.is_waiting(FINAL) and codec.attempts_of(FINAL) == 3
    assert codec.decode(FINAL) == Failed("rate_limited")
    assert codec.attempts_of({"error": "timeout"}) == 1


def test_the_sql_marker_finds_exactly_the_waiting_rows() -> None:
    like = re.compile(
        "^" + ".*".join(re.escape(p) for p in codec.MARKER_PATTERN.split("%")) + "$", re.S
    )
    assert like.match(codec.write_json({"m": 0.5, "j": WAITING}).decode())
    assert not like.match(codec.write_json({"m": 0.5, "j": FINAL}).decode())


@pytest.mark.parametrize(
    ("stored", "kind"),
    [
        (0.5, (codec.SCORED, "")),
        (0, (codec.SCORED, "")),
        ({"skipped": "no labels"}, (codec.SKIPPED, "no labels")),
        ({"error": "timeout"}, (codec.ERROR, "timeout")),
        ({}, (codec.ERROR, "unknown")),  # an error that does not name its type
        ({"error": "x", "transient": False}, (codec.ERROR, "x")),
    ],
)
def test_how_each_stored_form_counts(stored: Any, kind: tuple[str, str]) -> None:
    assert codec.kind_of(stored) == kind


def test_empty_columns_read_as_nothing() -> None:
    assert codec.read_outcomes(None) == {} and codec.read_outcomes("") == {}
    assert codec.read_groups(None) is None and codec.read_groups(b"") is None
    assert codec.read_groups('{"tenant":"acme"}') == {"tenant": "acme"}


def test_every_reader_agrees_on_what_waits() -> None:
    stored = {
        "a": 0.5,
        "b": {"skipped": "no labels"},
        "c": {"error": "timeout"},
        "d": WAITING,
        "e": FINAL,
    }
    # the bucket sums
    keys = {m: outcome_key(v) for m, v in stored.items()}
    assert keys == {
        "a": SCORED,
        "b": "skipped:no labels",
        "c": "error:timeout",
        "d": None,
        "e": "error:rate_limited",
    }
    # the outcome columns
    columns = OutcomeColumns(list(stored), [])
    columns.put_encoded("t", 1.0, 1.0, None, stored)
    counted = {
        w.aggregate.metric: (
            w.aggregate.n,
            dict(w.aggregate.skip_reasons),
            dict(w.aggregate.error_types),
        )
        for w in columns.aggregate(0.0, 2.0, dict.fromkeys(stored, False), {})
    }
    assert counted == {
        "a": (1, {}, {}),
        "b": (0, {"no labels": 1}, {}),
        "c": (0, {}, {"timeout": 1}),
        "d": (0, {}, {}),
        "e": (0, {}, {"rate_limited": 1}),
    }
    # the retry cursor
    found = waiting_of(7.0, stored)
    assert found is not None and found.metrics == frozenset({"d"}) and found.attempts == 2
    assert waiting_of(7.0, {m: v for m, v in stored.items() if m != "d"}) is None
    # the SLO events
    assert _decoded(stored, set(stored)) == {
        "a": Score(0.5),
        "b": Skipped("no labels"),
        "c": Failed("timeout"),
        "e": Failed("rate_limited"),
    }
