"""Human labels on a trace: kept when on the metric's scale, a field warning otherwise."""

from __future__ import annotations

from typing import Any

from collector.ingest.decode.trace_json import parse_trace_record

BASE: dict[str, Any] = {"trace_id": "t1", "timestamp": "2026-01-01T00:00:00Z", "question": "q"}


def test_good_labels_are_kept_with_the_labeler() -> None:
    rec = parse_trace_record(
        BASE
        | {
            "labels": {
                "faithfulness": 0.5,
                "context_relevance": 2,
                "e2e_score": "1",
                "answer_relevance": True,
            },
            "labeler": "anna",
        }
    )
    assert rec.labels == {
        "faithfulness": 0.5,
        "context_relevance": 2.0,
        "e2e_score": 1.0,
        "answer_relevance": 1.0,
    }
    assert rec.labeler == "anna"
    assert rec.field_warnings == ()


def test_bad_labels_are_warnings_one_by_one_never_a_lost_trace() -> None:
    rec = parse_trace_record(
        BASE
        | {
            "labels": {
                "faithfulness": 0.9,
                "context_relevance": 1.5,
                "e2e_score": 7,
                "mrr": 1,
                "answer_relevance": "good",
                "faithfulness_rating": None,
            }
        }
    )
    assert rec.labels == {"faithfulness": 0.9}
    assert rec.field_warnings == ("labels",) * 5
    assert rec.metadata is not None
    assert rec.metadata["_invalid"] == {
        "labels.context_relevance": 1.5,
        "labels.e2e_score": 7,
        "labels.mrr": 1,
        "labels.answer_relevance": "good",
        "labels.faithfulness_rating": None,
    }


def test_labels_of_the_wrong_shape() -> None:
    rec = parse_trace_record(BASE | {"labels": [1, 0], "labeler": {"name": "x"}})
    assert rec.labels is None and rec.labeler is None
    assert sorted(rec.field_warnings) == ["labeler", "labels"]
    assert parse_trace_record(BASE | {"labels": {}}).labels is None
