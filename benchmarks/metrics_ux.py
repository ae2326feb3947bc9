"""UX metrics benchmark: time against one batched encode, and memory at 100,000 questions.

1. Speed: the three UX metrics (cache_hit_rate, context_preservation,
   multi_turn_consistency) run through `evaluators.runner.evaluate` on n synthetic
   questions with the real offline model, against one `Embedder.encode` of the same
   questions measured in the same run. Target: ratio <= 1.2 (the metrics encode each
   question once, plus the answers of near-duplicate questions only).
2. Memory: the same three metrics over 100,000 questions in a fresh process, with
   precomputed random unit embeddings (encoding 100k texts on a 2-core CPU takes minutes
   and is not what is measured); peak RSS growth sampled every 5 ms. Target: < 500 MB.

Run: `.venv/bin/python -m benchmarks.metrics_ux [n]`.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from evaluators.registry import EvalContext
from evaluators.runner import evaluate
from evaluators.sample import Sample

UX_METRICS = ["cache_hit_rate", "context_preservation", "multi_turn_consistency"]
T0 = datetime(2025, 3, 1, tzinfo=UTC)

_TOPICS = [
    "отпуск",
    "пароль",
    "VPN",
    "зарплата",
    "ноутбук",
    "больничный",
    "командировка",
    "pension plan",
    "expense report",
    "badge access",
    "Wi-Fi",
    "parking",
]
_FORMS = [
    "Как оформить {t}?",
    "Где найти информацию про {t}?",
    "Что делать, если {t} не работает?",
    "How do I request {t}?",
    "Who approves {t}?",
    "Сколько ждать {t}?",
    "Можно ли перенести {t} на следующую неделю?",
    "Is there a deadline for {t}?",
]


def synthetic_samples(n: int, seed: int = 0, span_s: float = 86_400.0) -> list[Sample]:
    """n questions in sessions of 1-6 turns over `span_s` seconds; about a quarter repeat
    an earlier popular question (cache candidates), some sessions repeat themselves."""
    rng = np.random.default_rng(seed)
    times = np.sort(rng.uniform(0, span_s, size=n))
    samples: list[Sample] = []
    session = 0
    turn = 0
    history: list[str] = []
    for i in range(n):
        if turn == 0 or rng.random() < 0.25:
            session += 1
            turn = 0
            history = []
        turn += 1
        roll = rng.random()
        if history and roll < 0.08:
            question = history[int(rng.integers(len(history)))]
        elif roll < 0.30:
            question = _FORMS[int(rng.integers(3))].format(t=_TOPICS[int(rng.integers(4))])
        else:
            form = _FORMS[int(rng.integers(len(_FORMS)))]
            question = f"{form.format(t=_TOPICS[int(rng.integers(len(_TOPICS)))])} (#{i})"
        history.append(question)
        answer = f"Ответ на вопрос: {question[:40]}" if rng.random() < 0.9 else f"Другой ответ {i}"
        samples.append(
            Sample(
                f"t{i}",
                question,
                answer=answer,
                session_id=f"s{session}",
                turn=turn,
                timestamp=T0 + timedelta(seconds=float(times[i])),
            )
        )
    return samples


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def speed(n: int, repeats: int = 1) -> dict[str, float]:
    """Best-of-`repeats` seconds of one encode and of the three UX metrics, and the ratio."""
    from evaluators.embedder import Embedder

    samples = synthetic_samples(n)
    questions = [s.question for s in samples]
    embedder = Embedder()
    embedder.encode(questions[:64])  # load the model outside the timings
    encode_s = ux_s = float("inf")
    for _ in range(repeats):
        encode_s = min(encode_s, _timed(lambda: embedder.encode(questions)))
        ux_s = min(
            ux_s, _timed(lambda: evaluate(samples, UX_METRICS, EvalContext(embedder=embedder)))
        )
    return {
        "n": n,
        "distinct_questions": len(set(questions)),
        "encode_s": encode_s,
        "ux_s": ux_s,
        "ratio": ux_s / encode_s,
    }


class PrecomputedEmbedder:
    """Text -> row of a fixed matrix; stands in for the model in the memory measurement."""

    model_name = "precomputed-random"

    def __init__(self, rows: dict[str, int], matrix: np.ndarray):
        self.rows = rows
        self.matrix = matrix

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.matrix[np.fromiter((self.rows[t] for t in texts), np.int64, len(texts))]


def memory_child(n: int) -> None:
    """Runs in a fresh process: prints the peak RSS growth (MB) and seconds of the metrics."""
    import psutil

    rng = np.random.default_rng(1)
    samples = synthetic_samples(n, span_s=7 * 86_400.0)
    texts = list(dict.fromkeys([s.question for s in samples] + [s.answer or "" for s in samples]))
    rows = {t: i for i, t in enumerate(texts)}
    matrix = rng.standard_normal((len(texts), 384), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    # Repeated questions share a row already; make repeated answers agree a little less.
    embedder = PrecomputedEmbedder(rows, matrix)
    proc = psutil.Process()
    base = proc.memory_info().rss
    peak = base
    done = threading.Event()

    def sample_rss() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, proc.memory_info().rss)
            time.sleep(0.005)

    watcher = threading.Thread(target=sample_rss, daemon=True)
    watcher.start()
    start = time.perf_counter()
    result = evaluate(samples, UX_METRICS, EvalContext(embedder=embedder))
    seconds = time.perf_counter() - start
    done.set()
    watcher.join()
    peak = max(peak, proc.memory_info().rss)
    values = {k: a.value for k, a in result.aggregates.items()}
    print(f"{(peak - base) / 2**20:.1f} {seconds:.2f} {values}")


def memory(n: int = 100_000) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            f"from benchmarks.metrics_ux import memory_child; memory_child({n})",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split(maxsplit=2)
    return {
        "n": n,
        "peak_rss_growth_mb": float(out[0]),
        "seconds": float(out[1]),
        "values": out[2].strip(),
    }


def run_ux_benchmark(n: int = 10_000) -> dict[str, Any]:
    """Both measurements; prints a short report and returns the figures."""
    fast = speed(n)
    print(
        f"UX metrics over {fast['n']:,} questions ({fast['distinct_questions']:,} distinct): "
        f"{fast['ux_s']:.2f} s; one encode: {fast['encode_s']:.2f} s; "
        f"ratio {fast['ratio']:.2f} (target <= 1.2)"
    )
    mem = memory()
    print(
        f"UX metrics over {mem['n']:,} questions (precomputed random embeddings): "
        f"peak RSS growth {mem['peak_rss_growth_mb']:.0f} MB (target < 500 MB), "
        f"{mem['seconds']:.1f} s; values {mem['values']}"
    )
    return {"speed": fast, "memory": mem}


if __name__ == "__main__":
    run_ux_benchmark(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
