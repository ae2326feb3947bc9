"""UX metrics (seed 004, §10; SPEC §4): how users experience the system across questions.

- cache_hit_rate = (1/|Q|) Σ_q 1[max_{c earlier than q, within the look-back} cos(e_q, e_c) > τ]
  (τ = `cache_similarity_threshold`, default: the embedding model's calibrated value at
  the `threshold_mode` operating point, "balanced" = precision >= 0.9 so paraphrased
  repeats count, "strict" = precision 1.0; 0.85 for MiniLM; window `cache_lookback_s`,
  default 1 h).
  Per sample 1/0 (a proportion); questions without a timestamp are skipped.
- context_preservation: per session (questions ordered by turn, then timestamp)
  (1/(|S|-1)) Σ_i cos(e_{q_i}, e_{q_{i+1}}), averaged over sessions with >= 2 questions
  (a mean cosine, seed §10.3.2: it compares against no threshold).
- multi_turn_consistency: per session, among pairs of turns whose questions are near
  duplicates (cos >= `duplicate_question_threshold`) and both have answers, the share
  whose answers agree (cos >= `answer_agreement_threshold`); averaged over sessions
  that have such a pair. Only answers of near-duplicate questions are embedded.
- cache_hit_rate_actual: share of traces whose production cache reported `cache.hit`.

The session metrics are dataset metrics: `n` counts sessions, skip counts are samples.
Question embeddings come from `ctx.embedder`; the runner wraps it in a per-evaluation
cache, so the three metrics encode each question once. Cosines are not comparable across
embedding models, so the thresholds are per model (`evaluators.thresholds`): unset, each
is the model's calibrated default (MiniLM: 0.85, 0.85, 0.7); the result signature states
the values used.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from evaluators.aggregate import bootstrap_ci
from evaluators.embedder import TextEncoder
from evaluators.embedding_models import THRESHOLD_NAMES
from evaluators.outcome import Outcome, Score, Skipped
from evaluators.registry import DatasetValue, EvalContext, MetricSpec, register
from evaluators.sample import Sample
from evaluators.thresholds import similarity_threshold
from evaluators.ux_similarity import (
    agreeing_close_pairs,
    nearest_earlier_similarity,
    rows_in_close_pairs,
)

DEFAULTS: dict[str, float] = {"cache_lookback_s": 3600.0}
NO_EMBEDDER = "no embedder configured"
NO_SESSION = "no session"
SINGLE_TURN = "single-question session"
_ROWS = 8192  # rows per block of row-wise dot products
_HIT, _MISS = Score(1.0), Score(0.0)  # immutable, shared by all cache outcomes


def option(ctx: EvalContext, name: str) -> float:
    """A UX knob from `ctx.options` (names of the `ux` settings group) or its default; a
    similarity threshold left unset is the embedding model's calibrated default."""
    if name in THRESHOLD_NAMES:
        model = getattr(ctx.embedder, "model_name", None) if ctx.embedder is not None else None
        return similarity_threshold(ctx.options, name, model)
    value: Any = ctx.options.get(name)
    return float(value if value is not None else DEFAULTS[name])


def _seconds(ts: datetime) -> float:
    return (ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)).timestamp()


def _encode_questions(samples: Sequence[Sample], embedder: TextEncoder) -> np.ndarray:
    return np.asarray(embedder.encode([s.question for s in samples]), dtype=np.float32)


# --- cache_hit_rate -------------------------------------------------------------------


def cache_hit_rate(samples: Sequence[Sample], ctx: EvalContext, k: int | None) -> list[Outcome]:
    outcomes: list[Outcome] = [Skipped("no timestamp")] * len(samples)
    timed = [i for i, s in enumerate(samples) if s.timestamp is not None]
    if not timed:
        return outcomes
    if ctx.embedder is None:
        return [Skipped(NO_EMBEDDER)] * len(samples)
    times = np.array([_seconds(samples[i].timestamp) for i in timed])  # type: ignore[arg-type]
    order = np.argsort(times, kind="stable")
    ordered = [timed[j] for j in order]
    questions = [samples[i].question for i in ordered]
    emb = np.asarray(ctx.embedder.encode(questions), dtype=np.float32)
    lookback = option(ctx, "cache_lookback_s")
    threshold = option(ctx, "cache_similarity_threshold")
    # A question asked before within the look-back has that earlier copy's vector, so its
    # best similarity is at least cos(e, e): when that exceeds the threshold it is a hit
    # without comparing it with anything. Only the other rows are compared.
    self_sim = np.einsum("ij,ij->i", emb, emb)
    hit = asked_before(questions, times[order], lookback) & (self_sim > threshold)
    rest = np.flatnonzero(~hit)
    if rest.size:
        best = nearest_earlier_similarity(emb, times[order], lookback, rows=rest)
        hit[rest] = best > threshold
    for i, is_hit in zip(ordered, hit.tolist(), strict=True):
        outcomes[i] = _HIT if is_hit else _MISS
    return outcomes


def asked_before(questions: Sequence[str], times: np.ndarray, lookback_s: float) -> np.ndarray:
    """Per question (in time order): was the same text asked earlier within the look-back
    (an earlier position j with times[j] >= times[i] - lookback_s)?"""
    last: dict[str, float] = {}
    out = np.zeros(len(questions), dtype=bool)
    for i, (question, t) in enumerate(zip(questions, times.tolist(), strict=True)):
        previous = last.get(question)
        out[i] = previous is not None and previous >= t - lookback_s
        last[question] = t
    return out


def cache_hit_rate_actual(
    samples: Sequence[Sample], ctx: EvalContext, k: int | None
) -> list[Outcome]:
    return [
        Skipped("no cache information") if s.cache_hit is None else Score(float(s.cache_hit))
        for s in samples
    ]


# --- sessions -------------------------------------------------------------------------


def sessions(samples: Sequence[Sample]) -> tuple[list[list[int]], Counter[str]]:
    """Sample indices per session (>= 2 questions), ordered by turn, then timestamp, then
    input order; and the skip counts of samples left out."""
    groups: dict[str, list[int]] = defaultdict(list)
    skipped: Counter[str] = Counter()
    for i, s in enumerate(samples):
        if s.session_id is None:
            skipped[NO_SESSION] += 1
        else:
            groups[s.session_id].append(i)

    def key(i: int) -> tuple[bool, int, bool, float, int]:
        s = samples[i]
        ts = s.timestamp
        return (s.turn is None, s.turn or 0, ts is None, _seconds(ts) if ts else 0.0, i)

    out: list[list[int]] = []
    for members in groups.values():
        if len(members) < 2:
            skipped[SINGLE_TURN] += len(members)
        else:
            out.append(sorted(members, key=key))
    return out, skipped


def _session_mean(values: list[float], ctx: EvalContext, n_skip: Counter[str]) -> DatasetValue:
    lo, hi = bootstrap_ci(values, ctx.seed)
    return DatasetValue(float(np.mean(values)), len(values), lo, hi, dict(n_skip))


def context_preservation(
    samples: Sequence[Sample], ctx: EvalContext, k: int | None
) -> DatasetValue | Outcome:
    groups, skipped = sessions(samples)
    if not groups:
        return Skipped("no session with two or more questions")
    if ctx.embedder is None:
        return Skipped(NO_EMBEDDER)
    flat = [i for g in groups for i in g]
    emb = _encode_questions([samples[i] for i in flat], ctx.embedder)
    sizes = np.array([len(g) for g in groups])
    ends = np.cumsum(sizes)
    consecutive = np.concatenate(
        [  # row-wise dots in blocks: no float64 copy of the whole matrix
            np.einsum("ij,ij->i", emb[b:e], emb[b + 1 : e + 1])
            for b in range(0, len(flat) - 1, _ROWS)
            for e in (min(b + _ROWS, len(flat) - 1),)
        ]
    ).astype(np.float64)
    # Drop the pairs that straddle two sessions (last of one, first of the next).
    keep = np.ones(len(flat) - 1, dtype=bool)
    keep[ends[:-1] - 1] = False
    session_of_pair = np.repeat(np.arange(len(groups)), sizes - 1)
    sums = np.bincount(session_of_pair, weights=consecutive[keep], minlength=len(groups))
    per_session = np.clip(sums / (sizes - 1), -1.0, 1.0)
    return _session_mean(per_session.tolist(), ctx, skipped)


def multi_turn_consistency(
    samples: Sequence[Sample], ctx: EvalContext, k: int | None
) -> DatasetValue | Outcome:
    groups, skipped = sessions(samples)
    if not groups:
        return Skipped("no session with two or more questions")
    if ctx.embedder is None:
        return Skipped(NO_EMBEDDER)
    q_thr = option(ctx, "duplicate_question_threshold")
    a_thr = option(ctx, "answer_agreement_threshold")
    flat = [i for g in groups for i in g]
    emb = _encode_questions([samples[i] for i in flat], ctx.embedder)
    bounds = np.concatenate(([0], np.cumsum([len(g) for g in groups])))
    has_answer = np.array([bool(samples[i].answer) for i in flat])
    # Pass 1: rows with an answer and a near-duplicate question that also has an answer;
    # only their answers are embedded.
    involved = np.zeros(len(flat), dtype=bool)
    for g in range(len(groups)):
        rows = bounds[g] + np.flatnonzero(has_answer[bounds[g] : bounds[g + 1]])
        if rows.size >= 2:
            involved[rows] = rows_in_close_pairs(emb[rows], q_thr)
    answer_rows = np.flatnonzero(involved)
    answer_emb = (
        np.asarray(ctx.embedder.encode([samples[flat[r]].answer or "" for r in answer_rows]))
        if answer_rows.size
        else np.zeros((0, emb.shape[1]), dtype=np.float32)
    )
    shares: list[float] = []
    for g, members in enumerate(groups):
        lo, hi = bounds[g], bounds[g + 1]
        if not involved[lo:hi].any():
            skipped["no near-duplicate questions with answers in session"] += len(members)
            continue
        answers = np.zeros((hi - lo, emb.shape[1]), dtype=np.float32)
        first, last = np.searchsorted(answer_rows, [lo, hi])
        answers[answer_rows[first:last] - lo] = answer_emb[first:last]
        agree, total = agreeing_close_pairs(emb[lo:hi], answers, involved[lo:hi], q_thr, a_thr)
        if total == 0:
            skipped["no near-duplicate questions with answers in session"] += len(members)
        else:
            shares.append(agree / total)
    if not shares:
        return Skipped("no session has near-duplicate questions with answers")
    return _session_mean(shares, ctx, skipped)


_QUESTIONS = "questions + timestamps"
_SESSIONS = "questions + session_id (turn/timestamp order)"
_SESSION_FIELDS = frozenset({"question", "session_id", "turn", "timestamp"})
for _spec in (
    MetricSpec(
        family="cache_hit_rate",
        direction="higher",
        unit="ratio",
        kind="per_sample",
        compute=cache_hit_rate,
        needs=_QUESTIONS,
        description="Share of questions whose nearest earlier question within the look-back "
        "window has cosine similarity above the cache threshold (per embedding model).",
        proportion=True,
        uses_embedder=True,
        reads=frozenset({"question", "timestamp"}),
    ),
    MetricSpec(
        family="cache_hit_rate_actual",
        direction="higher",
        unit="ratio",
        kind="per_sample",
        compute=cache_hit_rate_actual,
        needs="cache.hit",
        description="Share of traces the production semantic cache answered (cache.hit).",
        proportion=True,
        reads=frozenset({"cache_hit"}),
    ),
    MetricSpec(
        family="context_preservation",
        direction="higher",
        unit="cosine",
        kind="dataset",
        compute=context_preservation,
        needs=_SESSIONS,
        description="Mean cosine similarity of consecutive questions of a session, averaged "
        "over sessions.",
        uses_embedder=True,
        reads=_SESSION_FIELDS,
    ),
    MetricSpec(
        family="multi_turn_consistency",
        direction="higher",
        unit="ratio",
        kind="dataset",
        compute=multi_turn_consistency,
        needs=_SESSIONS + " + answers",
        description="Per session, the share of near-duplicate question pairs whose answers "
        "agree (cos >= the answer threshold, per embedding model), averaged over sessions.",
        uses_embedder=True,
        reads=_SESSION_FIELDS | {"answer"},
    ),
):
    register(_spec)
