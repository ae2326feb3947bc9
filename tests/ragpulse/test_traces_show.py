"""`ragpulse traces show ID` prints the whole stored trace, and `--json` gives it as one object.

A trace with every field is decoded and stored as the ingest does (`parse_trace_record`,
`insert_traces`), feedback applied to it, a human label and a job's outcomes stored; then
the real CLI shows it on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from collector.ingest.decode.trace_json import parse_feedback_event, parse_trace_record
from collector.jobs.outcomes.store import upsert_outcomes
from collector.store.feedback_store import apply_feedback, insert_feedback, store_labels
from collector.store.repository import insert_traces
from collector.store.session import make_engine, make_session_factory
from tests.fixtures.cli import ragpulse_in_process as ragpulse

LONG = "Refunds are accepted within 30 days of purchase. " * 12


def _store(url: str, now: datetime) -> None:
    trace = parse_trace_record(
        {
            "trace_id": "t-full",
            "timestamp": now.isoformat(),
            "question": "How do I get a refund?",
            "answer": "Within 30 days.\nAsk support for a label.",
            "contexts": [
                {"id": "d1", "url": "https://kb.example/refunds", "text": LONG, "score": 0.83},
                {"id": "d2", "text": "Shipping takes 3 days.", "score": 0.41},
            ],
            "session_id": "s-9",
            "turn": 3,
            "user_id": "u-7",
            "model": "gpt-4o-mini",
            "usage": {"prompt_tokens": 812, "completion_tokens": 64},
            "latency_ms": {"retrieval": 172, "generation": 640.5},
            "cache": {"hit": False, "similarity": 0.42},
            "tags": {"tenant": "acme", "version": "v7"},
            "metadata": {"app": "shop"},
            "judge": {"decision": True, "score": 0.91, "model": "guard-1", "latency_ms": 120},
            "reference": "Refunds within 30 days.",
            "relevant_ids": ["d1"],
            "shown_url": "https://kb.example/refunds",
            "labels": {"faithfulness": 1.0},
            "labeler": "ann",
        }
    )
    feedback = parse_feedback_event(
        {
            "trace_id": "t-full",
            "timestamp": (now + timedelta(minutes=1)).isoformat(),
            "rating": 2,
            "comment": "too short",
        }
    )
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        insert_traces(session, [trace])
        store_labels(session, [trace])
        insert_feedback(session, [feedback])
        apply_feedback(session, ["t-full"])
        upsert_outcomes(
            session,
            [
                {
                    "job": "real_users_benchmark",
                    "trace_id": "t-full",
                    "trace_updated_at": now,
                    "ts": now,
                    "groups": {"tenant": "acme"},
                    "outcomes": {"hit_rate@1": 1.0, "mrr": {"skipped": "no_contexts"}},
                    "slices": {"tenant": "acme", "version": "v7"},
                }
            ],
        )
        session.commit()
    engine.dispose()


@pytest.mark.slow
def test_traces_show_prints_the_whole_trace(db_url: str, tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    _store(db_url, now)
    env = {"RAGPULSE_DATABASE__URL": db_url}

    done = ragpulse("traces", "show", "t-full", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for shown in (
        "question: How do I get a refund?",
        "answer:   Within 30 days.",
        "          Ask support for a label.",
        "contexts (2):",
        "[1] id=d1 score=0.83 url=https://kb.example/refunds",
        "[2] id=d2 score=0.41",
        "Shipping takes 3 days.",
        "model: gpt-4o-mini   session: s-9 (turn 3)   user: u-7",
        "usage: completion_tokens=64 prompt_tokens=812",
        "latency: 812.5 ms (stages: generation 640.5 ms, retrieval 172 ms)",
        "cache: miss (similarity 0.42)",
        "tags: tenant=acme version=v7",
        "judge: shown, score 0.91, model guard-1, 120 ms",
        "ground truth: relevant_ids d1; shown_url https://kb.example/refunds",
        "reference: Refunds within 30 days.",
        "label faithfulness: 1 (by ann)",
        'feedback: rating 2 "too short"',
        "version: v7",
        "hit_rate@1",
        "1.000",
        "skipped: no_contexts",
    ):
        assert shown in out, (shown, out)
    excerpt = next(line for line in out.splitlines() if "Refunds are accepted" in line)
    assert excerpt.endswith("…") and len(excerpt.strip()) == 200  # an excerpt, not the text

    expected_keys = [
        "trace_id", "timestamp", "received_at", "updated_at", "source", "not_request",
        "question", "answer", "contexts", "model", "session_id", "turn", "user_id", "usage",
        "latency_ms", "latency_stages", "cache", "tags", "metadata", "judge", "ground_truth",
        "feedback", "labels", "evaluations", "spans", "slices", "scores", "reasons",
    ]  # fmt: skip
    for argv in (("traces", "show", "t-full", "--json"), ("traces", "--json", "show", "t-full")):
        done = ragpulse(*argv, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        assert len(done.stdout.splitlines()) == 1
        got = json.loads(done.stdout)
        assert list(got) == expected_keys
        assert got["contexts"][0] == {
            "rank": 1,
            "id": "d1",
            "url": "https://kb.example/refunds",
            "score": 0.83,
            "text": LONG,
        }
        assert got["contexts"][1]["url"] is None and got["contexts"][1]["rank"] == 2
        assert (got["session_id"], got["turn"], got["user_id"]) == ("s-9", 3, "u-7")
        assert got["latency_stages"] == {"retrieval": 172, "generation": 640.5}
        assert got["usage"] == {"prompt_tokens": 812, "completion_tokens": 64}
        assert got["judge"] == {
            "decision": True,
            "score": 0.91,
            "model": "guard-1",
            "latency_ms": 120,
        }
        assert got["ground_truth"]["relevant_ids"] == ["d1"]
        assert got["feedback"] == {"rating": 2, "comment": "too short"}
        assert got["labels"] == [{"metric": "faithfulness", "labeler": "ann", "value": 1.0}]
        assert {"job": "real_users_benchmark", "metric": "hit_rate@1", "outcome": 1.0} in got[
            "scores"
        ]
        assert got["spans"] is None and got["not_request"] is None

    done = ragpulse("traces", "show", "nope", "--json", cwd=tmp_path, env=env)
    assert done.returncode == 1 and "no stored trace 'nope'" in done.stderr


@pytest.mark.slow
def test_an_otlp_trace_shows_its_contexts_and_span_summaries(db_url: str, tmp_path: Path) -> None:
    from tests.collector.otlp_traces import DOCS, QUESTION, proto_message, rag_spans, trace_hex
    from tests.instrumentation.harness import ingest

    spans = rag_spans()
    ingest(db_url, [proto_message(spans)])
    env = {"RAGPULSE_DATABASE__URL": db_url}
    tid = trace_hex(spans)

    done = ragpulse("traces", "show", tid, "--json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["source"] == "otlp" and got["question"] == QUESTION
    assert [(c["rank"], c["id"], c["score"]) for c in got["contexts"]] == [
        (rank, doc_id, score) for rank, (doc_id, _, score) in enumerate(DOCS, 1)
    ]
    assert got["contexts"][0]["url"] == "https://kb.example.org/doc-1"
    assert len(got["spans"]) == 3 and got["model"] == "gpt-4o-mini"
    assert got["usage"]["prompt_tokens"] == 900 and set(got["latency_stages"]) == {
        "retrieval",
        "generation",
    }

    done = ragpulse("traces", "show", tid, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "[1] id=doc-1 score=0.92 url=https://kb.example.org/doc-1" in done.stdout
    assert "session: session-7" in done.stdout and "spans: 3 stored" in done.stdout
