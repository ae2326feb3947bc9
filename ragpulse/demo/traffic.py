"""Deterministic, realistic sample traffic for `ragpulse demo` (and `python -m ...` to a file).

`generate_round(n)` returns one round of Kafka messages: JSON traces of multi-turn sessions
in three tenants (some asking a question again in other words, `ESCALATION_SHARE` of them
ending by asking for a person: the conversations' planted failures; ranked contexts,
answers, references, relevant_ids or graded relevance, semantic-cache hits, the
production judge's decision and sometimes its label, model, usage, latency), feedback
events that arrive later (some on the traces topic, some before their trace), OTLP traces
(protobuf, split over two messages, children first) and a few malformed messages (bad
JSON, missing question, wrong type, non-UTF-8 bytes, empty).
Each round has fresh trace and session ids and timestamps near `now`, so it looks live;
the same `(round_no, seed, now, run, not_before)` always gives the same bytes. A round's
times span the ten minutes before `now`, squeezed into `[not_before, now]` when that is
shorter: `ragpulse demo` passes its start time, so a demo started a minute ago holds a
minute of traffic (the history `explain` and `plan` report is true), not ten. It passes a
fresh `run` tag (`new_run_tag()`) on every start, so the ids of a restarted demo never meet
the ones kept in its database (a replayed id would be a duplicate, and the 1h windows
would not move until the new round numbers passed the old ones).
"""

from __future__ import annotations

import argparse
import json
import random
import secrets
import time
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from collector.ingest.kafka.producer import OutgoingMessage, encode_record
from ragpulse.demo.knowledge import DOCS_BY_ID, DOCUMENTS, JUDGE_MODEL, MODELS, QUESTIONS, Question
from ragpulse.demo.otlp import otlp_trace_messages


@dataclass(frozen=True)
class DemoTopics:
    traces: str = "rag.traces"
    feedback: str = "rag.feedback"
    otlp: str = "otlp_spans"


SESSIONS_PER_TENANT = 10
REPHRASED = 0.15
"""A later turn asks the previous question again in other words this often (a semantic
cache hit, and a re-ask that fails the session): with 0.45 before, five of six demo
sessions failed, no help desk's numbers."""
ESCALATION_SHARE = 0.1
"""Planted failure sessions: this share of the sessions ends by asking for a person (drawn
per session id from a generator of its own, so the rest of a round stays as it was)."""
ESCALATIONS = {
    "ru": (
        "Соедините меня с оператором",
        "Позовите оператора, пожалуйста",
        "Хочу поговорить с живым человеком",
    ),
    "en": (
        "Can I talk to a human?",
        "I want to speak to an operator",
        "Connect me to a real person, please",
    ),
}
HANDOFF = {"ru": "Передаю ваш вопрос оператору.", "en": "Connecting you to an operator."}
ROUND_SPAN = timedelta(minutes=10)
"""The time a round's sessions take (its traces' timestamps end before `now`)."""


def new_run_tag() -> str:
    """12 hex digits unique to this start: the Unix time in seconds and 16 random bits."""
    return f"{int(time.time()) & 0xFFFFFFFF:08x}{secrets.randbits(16):04x}"


GAP_EMPTY = 0.4
"""The share of a knowledge gap's retrievals that come back empty (the rest: unrelated
chunks with low scores)."""
GAP_HALLUCINATED = 0.2
"""The share of a knowledge gap's answers that make something up instead of saying that
the bot does not know."""


def ranked_contexts(rng: random.Random, tenant: str, question: Question) -> list[dict[str, Any]]:
    """3-5 ranked chunks of the tenant's documents; the answering one usually ranks high.
    A knowledge gap (no answering document) gets nothing or 1-3 unrelated low-scored ones."""
    others = [d for d in DOCUMENTS if d.tenant == tenant and d.id != question.doc_id]
    rng.shuffle(others)
    if question.doc_id is None:
        if rng.random() < GAP_EMPTY:
            return []
        score = rng.uniform(0.3, 0.5)
        return [
            {"id": d.id, "url": d.url, "text": d.text, "score": round(score - 0.05 * i, 4)}
            for i, d in enumerate(others[: rng.randint(1, 3)])
        ]
    ranked = others[: rng.randint(2, 4)]
    roll = rng.random()
    if roll < 0.85:  # retrieval found it: rank 1 most of the time
        position = 0 if rng.random() < 0.65 else rng.randint(1, len(ranked))
        ranked.insert(position, DOCS_BY_ID[question.doc_id])
    score = rng.uniform(0.78, 0.93)
    contexts = []
    for doc in ranked:
        contexts.append({"id": doc.id, "url": doc.url, "text": doc.text, "score": round(score, 4)})
        score -= rng.uniform(0.03, 0.12)
    return contexts


def answer_for(
    rng: random.Random, question: Question, contexts: list[dict[str, Any]]
) -> tuple[str, bool]:
    """(the bot's answer, whether it is right): right 85% of the time when the answering
    chunk was retrieved, else the hallucinated answer. A knowledge gap is never answered
    right: the bot says it does not know, or (`GAP_HALLUCINATED`) makes something up."""
    if not question.answerable:
        made_up = rng.random() < GAP_HALLUCINATED
        return (question.wrong_answer if made_up else question.answer), False
    found = any(c["id"] == question.doc_id for c in contexts)
    correct = found and rng.random() < 0.85
    return (question.answer if correct else question.wrong_answer), correct


def canary_version(session_id: str) -> str:
    """A fifth of the sessions are served by the candidate `v2` (same quality as `v1`): the
    versions row and the canary have something to compare. A hash, not the generator, so
    every other field of the traffic stays as it was."""
    return "v2" if zlib.crc32(session_id.encode()) % 5 == 0 else "v1"


def _trace(
    rng: random.Random,
    *,
    round_no: int,
    run: str,
    tenant: str,
    session_id: str,
    user_id: str,
    turn: int,
    question: Question,
    text: str,
    rephrased: bool,
    at: datetime,
) -> dict[str, Any]:
    trace_id = f"{run}r{round_no:05d}-{rng.getrandbits(64):016x}"
    contexts = ranked_contexts(rng, tenant, question)
    answer, correct = answer_for(rng, question, contexts)
    prompt_tokens = 120 + sum(len(c["text"]) // 4 for c in contexts)
    completion_tokens = len(answer) // 4 + rng.randint(5, 30)
    generation_ms = rng.uniform(400, 2200)
    record: dict[str, Any] = {
        "trace_id": trace_id,
        "timestamp": at.isoformat().replace("+00:00", "Z"),
        "question": text,
        "answer": answer,
        "contexts": contexts,
        "session_id": session_id,
        "user_id": user_id,
        "turn": turn,
        "model": MODELS[tenant],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "cost_usd": round((prompt_tokens * 0.15 + completion_tokens * 0.6) / 1e6, 8),
        },
        "latency_ms": round(generation_ms + rng.uniform(30, 180), 1),
        "tags": {
            "tenant": tenant,
            "channel": rng.choice(["web", "web", "app"]),
            "version": canary_version(session_id),
        },
        "metadata": {"retrieval_ms": round(rng.uniform(20, 160), 1), "demo_round": round_no},
        "cache": {
            "hit": rephrased and rng.random() < 0.7,
            "similarity": round(rng.uniform(0.86, 0.97) if rephrased else rng.uniform(0.2, 0.8), 4),
        },
    }
    ground_truth = rng.random()
    if question.doc_id is None:  # a knowledge gap: no document to label as relevant
        pass
    elif ground_truth < 0.45:
        record["relevant_ids"] = [question.doc_id]
    elif ground_truth < 0.65 and question.related_id is not None:
        record["relevance"] = {question.doc_id: 2, question.related_id: 1}
    if rng.random() < 0.5 and question.reference:
        record["reference"] = question.reference
    if rng.random() < 0.75:  # the production guard judged whether to show the answer
        decision = correct if rng.random() < 0.85 else not correct
        record["judge"] = {
            "decision": decision,
            "score": round(rng.uniform(0.6, 0.98) if decision else rng.uniform(0.05, 0.45), 3),
            "model": JUDGE_MODEL,
            "latency_ms": round(rng.uniform(80, 450), 1),
        }
        if rng.random() < 0.4:
            record["judge_label"] = correct
    record["_correct"] = correct
    return record


def _feedback(rng: random.Random, record: dict[str, Any], at: datetime) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "feedback",
        "trace_id": record["trace_id"],
        "timestamp": at.isoformat().replace("+00:00", "Z"),
    }
    correct = bool(record["_correct"])
    if "judge" in record and "judge_label" not in record:
        event["judge_label"] = correct
    if "relevant_ids" not in record and "relevance" not in record and rng.random() < 0.5:
        event["relevant_ids"] = [record["contexts"][0]["id"]] if correct else []
    event["rating"] = rng.choice([4, 5]) if correct else rng.choice([1, 2])
    if not correct and rng.random() < 0.5:
        ru = record["tags"]["tenant"] != "shop"
        event["comment"] = "Ответ неверный" if ru else "This answer is wrong"
    return event


def _escalation(
    *,
    round_no: int,
    run: str,
    tenant: str,
    session_id: str,
    user_id: str,
    turn: int,
    question: Question,
    at: datetime,
) -> dict[str, Any] | None:
    """The session's last turn asking for a person, for `ESCALATION_SHARE` of the sessions
    (None for the others): the planted failures the conversations row counts."""
    own = random.Random(f"escalation:{session_id}")
    if own.random() >= ESCALATION_SHARE:
        return None
    language = "en" if tenant == "shop" else "ru"
    record = _trace(
        own, round_no=round_no, run=run, tenant=tenant, session_id=session_id,
        user_id=user_id, turn=turn, question=question, text=own.choice(ESCALATIONS[language]),
        rephrased=False, at=at,
    )  # fmt: skip
    record["answer"] = HANDOFF[language]
    return record


MALFORMED: tuple[bytes, ...] = (
    b'{"trace_id": "broken-json", "question": "Where is my order?"',
    json.dumps({"trace_id": "no-question", "timestamp": "2026-01-01T00:00:00Z"}).encode(),
    json.dumps(
        {"trace_id": "wrong-type", "timestamp": "2026-01-01T00:00:00Z", "question": 42}
    ).encode(),
    "Где мой заказ?".encode("cp1251"),
    b"",
)


def generate_round(
    round_no: int,
    *,
    now: datetime | None = None,
    seed: int = 7,
    topics: DemoTopics = DemoTopics(),
    malformed: bool = True,
    run: str = "",
    not_before: datetime | None = None,
) -> list[OutgoingMessage]:
    """One round of traffic (about 200 messages) ending at `now`, deterministic per round.

    `run` (hex digits, see `new_run_tag`) starts every trace and session id of the round;
    `not_before` squeezes the round's ten minutes into the time since then (no trace
    before it).
    """
    if run and (len(run) % 2 or any(ch not in "0123456789abcdef" for ch in run)):
        raise ValueError(f"run tag must be an even number of lower-case hex digits: {run!r}")
    rng = random.Random(f"{seed}:{run}:{round_no}" if run else seed * 1_000_003 + round_no)
    prefix = f"{run}-" if run else ""
    otlp_prefix = bytes.fromhex(run[:16]) if run else b""
    now = now or datetime.now(UTC)
    span = ROUND_SPAN
    if not_before is not None:
        span = max(min(span, now - not_before), timedelta(0))
    start = now - span
    scale = span / ROUND_SPAN
    traces: list[dict[str, Any]] = []
    escalations: list[dict[str, Any]] = []  # no feedback drawn for them: `rng` is untouched
    for tenant, questions in QUESTIONS.items():
        for s in range(SESSIONS_PER_TENANT):
            session_id = f"{prefix}{tenant}-s{round_no:05d}-{s:02d}-{rng.getrandbits(32):08x}"
            user_id = f"{tenant}-u{rng.randint(1, 40):03d}"
            at = start + timedelta(seconds=rng.uniform(0, 420) * scale)
            question = rng.choice(questions)
            asked = [question]
            for turn in range(1, rng.randint(2, 4) + 1):
                rephrased = turn > 1 and rng.random() < REPHRASED
                if turn > 1 and not rephrased:  # a new question (the same again is a re-ask)
                    fresh = [q for q in questions if q not in asked] or list(questions)
                    question = rng.choice(fresh)
                    asked.append(question)
                # a session opens with any phrasing of the intent, Russian or English
                text = (
                    rng.choice(question.rephrasings) if rephrased else rng.choice(question.openings)
                )
                traces.append(
                    _trace(
                        rng,
                        round_no=round_no,
                        run=prefix,
                        tenant=tenant,
                        session_id=session_id,
                        user_id=user_id,
                        turn=turn,
                        question=question,
                        text=text,
                        rephrased=rephrased,
                        at=at,
                    )
                )
                at += timedelta(seconds=rng.uniform(8, 40) * scale)
            handoff = _escalation(
                round_no=round_no, run=prefix, tenant=tenant, session_id=session_id,
                user_id=user_id, turn=turn + 1, question=question, at=at,
            )  # fmt: skip
            if handoff is not None:
                escalations.append(handoff)
    traces.sort(key=lambda t: t["timestamp"])
    messages: list[OutgoingMessage] = []
    late: list[OutgoingMessage] = []
    for record in traces:
        key = record["session_id"].encode()
        fb = _feedback(rng, record, now) if rng.random() < 0.3 else None
        if fb is not None and rng.random() < 0.15:  # feedback that overtakes its trace
            messages.append(OutgoingMessage(encode_record(fb), topics.feedback, key))
            fb = None
        body = {k: v for k, v in record.items() if not k.startswith("_")}
        messages.append(OutgoingMessage(encode_record(body), topics.traces, key))
        if fb is not None:
            topic = topics.traces if rng.random() < 0.2 else topics.feedback
            late.append(OutgoingMessage(encode_record(fb), topic, key))
    for record in escalations:
        body = {k: v for k, v in record.items() if not k.startswith("_")}
        messages.append(
            OutgoingMessage(encode_record(body), topics.traces, body["session_id"].encode())
        )
    for i in range(12):
        tenant = rng.choice(list(QUESTIONS))
        question = rng.choice(QUESTIONS[tenant])
        messages.extend(
            otlp_trace_messages(
                rng,
                tenant=tenant,
                question=question,
                contexts=ranked_contexts(rng, tenant, question),
                model=MODELS[tenant],
                session_id=f"{prefix}{tenant}-otel-{round_no:05d}-{i:02d}",
                at=start + timedelta(seconds=rng.uniform(0, 480) * scale),
                topic=topics.otlp,
                trace_prefix=otlp_prefix,
            )
        )
    if malformed:
        messages.extend(OutgoingMessage(value, topics.traces) for value in MALFORMED)
    return messages + late


def write_jsonl(
    path: Path,
    rounds: int = 3,
    *,
    feedback: bool = True,
    seed: int = 7,
    now: datetime | None = None,
) -> int:
    """The JSON traces (and feedback events) of `rounds` rounds as JSONL: a file for
    `ragpulse produce`, or without feedback a dataset for `ragpulse evaluate`."""
    topics = DemoTopics()
    count = 0
    with open(path, "wb") as out:
        for round_no in range(rounds):
            for message in generate_round(round_no, now=now, seed=seed, malformed=False):
                if message.topic == topics.otlp:
                    continue
                if not feedback and message.value.startswith(b'{"type":"feedback"'):
                    continue
                out.write(message.value + b"\n")
                count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description="Write the demo's JSON sample traffic as JSONL.")
    parser.add_argument("output", type=Path, help="JSONL file to write")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of traffic (default: 3)")
    parser.add_argument(
        "--no-feedback",
        action="store_true",
        help="traces only (a dataset for `ragpulse evaluate`)",
    )
    args = parser.parse_args()
    count = write_jsonl(args.output, args.rounds, feedback=not args.no_feedback)
    print(f"wrote {count} records to {args.output}")


if __name__ == "__main__":
    main()
