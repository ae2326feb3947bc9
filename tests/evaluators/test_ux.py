"""UX metrics on hand-made vectors (exact values), blocked kernels against brute force,
one shared encoding for the three metrics, and a check on the real model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from evaluators.embedder import Embedder
from evaluators.outcome import Score, Skipped
from evaluators.registry import DatasetValue, EvalContext
from evaluators.runner import evaluate
from evaluators.sample import Sample
from evaluators.ux import (
    asked_before,
    cache_hit_rate,
    context_preservation,
    multi_turn_consistency,
)
from evaluators.ux_similarity import agreeing_close_pairs, nearest_earlier_similarity
from tests.fixtures.embedder import VectorEmbedder

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _unit(rows: np.ndarray) -> np.ndarray:
    unit: np.ndarray = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return unit


def test_nearest_earlier_similarity_matches_brute_force_across_blocks() -> None:
    rng = np.random.default_rng(0)
    n = 53
    emb = _unit(rng.normal(size=(n, 6)))
    times = np.sort(rng.uniform(0, 100, size=n))
    times[10:13] = times[10]  # ties keep input order
    got = nearest_earlier_similarity(emb, times, lookback_s=20.0, block=7)
    for i in range(n):
        earlier = [j for j in range(i) if times[i] - times[j] <= 20.0]
        want = max((float(emb[i] @ emb[j]) for j in earlier), default=-np.inf)
        assert got[i] == pytest.approx(want, abs=1e-6)


def test_nearest_earlier_similarity_of_chosen_rows() -> None:
    rng = np.random.default_rng(2)
    n = 40
    emb = _unit(rng.normal(size=(n, 5)))
    times = np.sort(rng.uniform(0, 100, size=n))
    rows = np.array([0, 3, 4, 17, 18, 30, 39])
    everything = nearest_earlier_similarity(emb, times, lookback_s=25.0)
    got = nearest_earlier_similarity(emb, times, lookback_s=25.0, block=3, rows=rows)
    np.testing.assert_allclose(got, everything[rows], atol=1e-6)
    assert got[0] == -np.inf


def test_asked_before_within_the_look_back() -> None:
    questions = ["a", "b", "a", "a", "b", "c"]
    times = np.array([0.0, 5.0, 10.0, 30.0, 30.0, 31.0])
    assert asked_before(questions, times, 20.0).tolist() == [
        False,
        False,
        True,  # a at 0, 10 s earlier
        True,  # a at 10, exactly 20 s earlier
        False,  # b at 5, 25 s earlier
        False,
    ]


def test_cache_hit_rate_matches_brute_force_with_repeated_questions() -> None:
    rng = np.random.default_rng(3)
    texts = [f"q{i}" for i in range(12)]
    vectors = {t: rng.normal(size=4) for t in texts}
    vectors["q0"] = vectors["q1"] + 0.1  # a near duplicate under another text
    vectors["zero"] = np.zeros(4)  # a repeated all-zero row is no hit (cos 0)
    embedder = VectorEmbedder(vectors)
    asked = [str(rng.choice([*texts, "zero"])) for _ in range(60)]
    samples = [Sample(f"t{i}", q, timestamp=_at(rng.uniform(0, 300))) for i, q in enumerate(asked)]
    times = np.array([_seconds_of(s) for s in samples])
    unit = embedder.encode(asked)
    for lookback, threshold in ((60.0, 0.85), (400.0, 0.5), (60.0, 1.5), (0.0, 0.85)):
        ctx = EvalContext(
            embedder=embedder,
            options={"cache_lookback_s": lookback, "cache_similarity_threshold": threshold},
        )
        want = []
        for i in range(len(samples)):
            earlier = [
                j
                for j in range(len(samples))
                if (times[j], j) < (times[i], i) and times[i] - times[j] <= lookback
            ]
            best = max((float(unit[i] @ unit[j]) for j in earlier), default=-np.inf)
            want.append(Score(1.0 if best > threshold else 0.0))
        assert cache_hit_rate(samples, ctx, None) == want, (lookback, threshold)


def _seconds_of(sample: Sample) -> float:
    assert sample.timestamp is not None
    return sample.timestamp.timestamp()


def test_agreeing_pairs_match_brute_force_across_blocks() -> None:
    rng = np.random.default_rng(1)
    q = _unit(rng.normal(size=(40, 3)))
    a = _unit(rng.normal(size=(40, 3)))
    has = rng.random(40) > 0.2
    got = agreeing_close_pairs(q, a, has, 0.5, 0.0, block=6)
    pairs = [
        (i, j)
        for i in range(40)
        for j in range(i + 1, 40)
        if q[i] @ q[j] >= 0.5 and has[i] and has[j]
    ]
    assert got == (sum(1 for i, j in pairs if a[i] @ a[j] >= 0.0), len(pairs))


CACHE_VECTORS = {"q1": [1, 0], "q2": [1, 0.1], "q3": [1, 0], "q4": [0, 1], "q5": [1, 0]}


def _cache_samples() -> list[Sample]:
    # Given out of time order on purpose.
    return [
        Sample("c3", "q3", timestamp=_at(5000)),
        Sample("c1", "q1", timestamp=_at(0)),
        Sample("c4", "q4", timestamp=_at(5010)),
        Sample("c2", "q2", timestamp=_at(10)),
        Sample("c5", "q5"),
    ]


def test_cache_hit_rate_hand_values() -> None:
    ctx = EvalContext(embedder=VectorEmbedder(CACHE_VECTORS))
    out = cache_hit_rate(_cache_samples(), ctx, None)
    # c2 repeats c1 ten seconds later; c3 repeats c1 but outside the 1 h look-back.
    assert out == [Score(0.0), Score(0.0), Score(0.0), Score(1.0), Skipped("no timestamp")]
    longer = EvalContext(embedder=ctx.embedder, options={"cache_lookback_s": 10_000})
    assert cache_hit_rate(_cache_samples(), longer, None)[0] == Score(1.0)
    strict = EvalContext(embedder=ctx.embedder, options={"cache_similarity_threshold": 0.999})
    assert cache_hit_rate(_cache_samples(), strict, None)[3] == Score(0.0)


def test_cache_hit_rate_actual_reads_the_trace() -> None:
    samples = [
        Sample("a", "q", cache_hit=True),
        Sample("b", "q", cache_hit=False),
        Sample("c", "q"),
    ]
    agg = evaluate(samples, ["cache_hit_rate_actual"], EvalContext()).aggregates
    assert agg["cache_hit_rate_actual"].value == 0.5 and agg["cache_hit_rate_actual"].skipped == 1


SESSION_VECTORS = {
    "a": [1, 0, 0],
    "b": [0.6, 0.8, 0],
    "c": [0, 1, 0],
    "x": [1, 0, 0],
    "y": [0, 0, 1],
    "solo": [1, 1, 1],
    "none": [0, 1, 1],
}


def _session_samples() -> list[Sample]:
    return [
        Sample("s1-3", "c", session_id="s1", turn=3),
        Sample("s1-1", "a", session_id="s1", turn=1),
        Sample("s1-2", "b", session_id="s1", turn=2),
        Sample("s2-2", "y", session_id="s2", turn=2),
        Sample("s2-1", "x", session_id="s2", turn=1),
        Sample("s3", "solo", session_id="s3", turn=1),
        Sample("n", "none"),
    ]


def test_context_preservation_hand_values() -> None:
    ctx = EvalContext(embedder=VectorEmbedder(SESSION_VECTORS))
    value = context_preservation(_session_samples(), ctx, None)
    assert isinstance(value, DatasetValue)
    # s1: cos(a,b) = 0.6, cos(b,c) = 0.8 -> 0.7; s2: cos(x,y) = 0 -> mean 0.35
    assert value.value == pytest.approx(0.35, abs=1e-6)
    assert value.n == 2
    assert dict(value.skip_reasons) == {"no session": 1, "single-question session": 1}


def test_context_preservation_orders_by_timestamp_when_turns_are_missing() -> None:
    ctx = EvalContext(embedder=VectorEmbedder(SESSION_VECTORS))
    samples = [
        Sample("3", "c", session_id="s", timestamp=_at(30)),
        Sample("1", "a", session_id="s", timestamp=_at(10)),
        Sample("2", "b", session_id="s", timestamp=_at(20)),
    ]
    value = context_preservation(samples, ctx, None)
    assert isinstance(value, DatasetValue) and value.value == pytest.approx(0.7, abs=1e-6)


MT_VECTORS = {
    "q1": [1, 0],
    "q2": [0, 1],
    "q3": [1, 0.05],
    "q4": [1, 0],
    "a1": [1, 0],
    "a2": [0, 1],
    "a3": [1, 0.1],
    "a4": [0, 1],
    "p1": [1, 0],
    "p2": [1, 0],
}


def _mt_samples() -> list[Sample]:
    return [
        Sample("1", "q1", answer="a1", session_id="s", turn=1),
        Sample("2", "q2", answer="a2", session_id="s", turn=2),
        Sample("3", "q3", answer="a3", session_id="s", turn=3),
        Sample("4", "q4", answer="a4", session_id="s", turn=4),
        # a repeated question but one answer is missing: no usable pair
        Sample("5", "p1", answer="a1", session_id="t", turn=1),
        Sample("6", "p2", answer=None, session_id="t", turn=2),
    ]


def test_multi_turn_consistency_hand_values_and_only_needed_answers_are_embedded() -> None:
    fake = VectorEmbedder(MT_VECTORS)
    value = multi_turn_consistency(_mt_samples(), EvalContext(embedder=fake), None)
    # near-duplicate pairs in s: (1,3), (1,4), (3,4); answers agree only for (1,3)
    assert isinstance(value, DatasetValue)
    assert value.value == pytest.approx(1 / 3) and value.n == 1
    assert dict(value.skip_reasons) == {"no near-duplicate questions with answers in session": 2}
    answers_encoded = [t for call in fake.calls for t in call if t.startswith("a")]
    assert "a2" not in answers_encoded and sorted(answers_encoded) == ["a1", "a3", "a4"]


def test_session_metrics_skip_without_sessions() -> None:
    ctx = EvalContext(embedder=VectorEmbedder({"q": [1, 0]}))
    out = multi_turn_consistency([Sample("1", "q")], ctx, None)
    assert isinstance(out, Skipped)


def test_three_ux_metrics_encode_each_question_once() -> None:
    fake = VectorEmbedder(MT_VECTORS)
    samples = [
        Sample(
            s.trace_id,
            s.question,
            answer=s.answer,
            session_id=s.session_id,
            turn=s.turn,
            timestamp=_at(i),
        )
        for i, s in enumerate(_mt_samples())
    ]
    result = evaluate(
        samples,
        ["cache_hit_rate", "context_preservation", "multi_turn_consistency"],
        EvalContext(embedder=fake),
    )
    questions = [t for call in fake.calls for t in call if t.startswith(("q", "p"))]
    assert sorted(questions) == sorted({s.question for s in samples})
    assert result.aggregates["multi_turn_consistency"].value == pytest.approx(1 / 3)
    assert result.aggregates["cache_hit_rate"].signature.embedding_model == "test-vectors"


def test_ux_on_the_real_model(embedder: Embedder) -> None:
    samples = [
        Sample(
            "1",
            "Как оформить отпуск?",
            answer="Через HR-портал.",
            session_id="s",
            turn=1,
            timestamp=_at(0),
        ),
        Sample(
            "2",
            "Как оформить отпуск?",
            answer="Через HR-портал.",
            session_id="s",
            turn=2,
            timestamp=_at(60),
        ),
        Sample(
            "3",
            "What is the capital of France?",
            answer="Paris.",
            session_id="u",
            turn=1,
            timestamp=_at(120),
        ),
        Sample(
            "4",
            "Where do I get a new laptop?",
            answer="Ask IT.",
            session_id="u",
            turn=2,
            timestamp=_at(180),
        ),
    ]
    agg = evaluate(
        samples,
        ["cache_hit_rate", "context_preservation", "multi_turn_consistency"],
        EvalContext(embedder=embedder),
    ).aggregates
    assert agg["cache_hit_rate"].value == pytest.approx(0.25)
    assert agg["multi_turn_consistency"].value == pytest.approx(1.0)
    assert agg["context_preservation"].n == 2
    assert 0.0 < agg["context_preservation"].value < 1.0  # type: ignore[operator]
