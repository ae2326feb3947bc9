"""Judge benchmark: LLM calls per sample against RAGAS, throughput against the concurrency
bound, and a second run served from the cache.

A local OpenAI-compatible server (tests/fixtures/llm_server.py, in its own process like a
remote provider) answers every judge prompt with valid JSON after a fixed latency; litellm
reaches it over real HTTP and the server counts the requests it receives. 200 samples with
4 contexts each run through all judge metrics via `evaluators.runner.evaluate`, with the
`judgments` table on SQLite as the cache.

(a) calls per sample of each metric run alone (fresh cache) beside RAGAS's count for the
    same N (from RAGAS's source: faithfulness 2, context precision N, context recall 1,
    entity recall 2, noise sensitivity 2N+3 per mode, NVIDIA context relevance 2 to 10,
    response relevancy 1 request with n=3); target: our total <= 0.5x RAGAS's.
(b) throughput of the full run in calls/s against the bound max_concurrency / latency,
    and this process's CPU per call (at 32 in flight the bound is 160 calls/s, so the
    client has ~6 ms of one core per call); targets >= 0.9x at concurrency 8 and >= 0.8x
    at 32 (issue 21).
(c) the same run again with a new client on the same table: zero HTTP calls.

Run: .venv/bin/python -m benchmarks.judge [--samples 200] [--concurrency 16] [--latency 0.2]
[--transport auto|litellm|http] (auto: straight HTTP to the local server, as the service
does with judge.transport=auto; the service's default is litellm)
Response relevancy uses a deterministic hashing embedder here: embedding speed is measured
by the embedding benchmarks, this one measures the judge.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from collector.store.judgments import SqlJudgmentStore
from collector.store.session import make_engine, make_session_factory
from evaluators.judge import InMemoryJudgmentStore, JudgeClient, JudgeConfig, JudgmentStore
from evaluators.registry import EvalContext
from evaluators.runner import evaluate
from evaluators.sample import Context, Sample
from migrations.runner import upgrade
from tests.fixtures.llm_server import serve_in_subprocess

N_CONTEXTS = 4
METRICS = [
    "context_relevance",
    "context_entity_recall",
    "context_precision",
    "context_recall",
    "faithfulness",
    "noise_sensitivity_relevant",
    "noise_sensitivity_irrelevant",
    "response_relevancy",
    "answer_relevance",
    "e2e_score",
]
# LLM calls per sample in RAGAS for N contexts (None: RAGAS has no such metric).
RAGAS_CALLS: dict[str, int | None] = {
    "context_relevance": 2,  # NVIDIA ContextRelevance: two judge prompts, more on retries
    "context_entity_recall": 2,
    "context_precision": N_CONTEXTS,
    "context_recall": 1,
    "faithfulness": 2,
    "noise_sensitivity_relevant": 2 * N_CONTEXTS + 3,
    "noise_sensitivity_irrelevant": 2 * N_CONTEXTS + 3,
    "response_relevancy": 1,
    "answer_relevance": None,
    "e2e_score": None,
}


class HashEmbedder:
    """Deterministic unit vectors from a text hash (no model, no CPU contention)."""

    model_name = "hash-64"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
            rows.append(np.random.default_rng(seed).normal(size=64))
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(texts), 64)
        normalized: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        return normalized


def make_samples(n: int) -> list[Sample]:
    return [
        Sample(
            trace_id=f"bench-{i}",
            question=f"Вопрос номер {i}: как работает поиск в системе?",
            answer=f"Ответ {i}: система ищет документы и составляет ответ.",
            reference=f"Эталон {i}: поиск находит документы, модель пишет ответ.",
            contexts=tuple(
                Context(id=f"d{i}-{j}", text=f"Фрагмент {j} документа {i} о поиске.")
                for j in range(N_CONTEXTS)
            ),
        )
        for i in range(n)
    ]


def client(
    base_url: str, store: JudgmentStore, concurrency: int, transport: str = "auto"
) -> JudgeClient:
    config = JudgeConfig(
        models=("openai/bench-judge",),
        api_base=base_url,
        api_key="dummy",
        max_concurrency=concurrency,
        timeout_s=30.0,
        transport=transport,
    )
    return JudgeClient(config, store)


def run(samples: list[Sample], metrics: list[str], judge: JudgeClient) -> tuple[Any, float]:
    ctx = EvalContext(judge=judge, embedder=HashEmbedder())
    started = time.perf_counter()
    result = evaluate(samples, metrics, ctx)
    return result, time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=200, help="samples in the full run")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=8,
        help="judge max_concurrency (default: the settings default, 8)",
    )
    parser.add_argument("--latency", type=float, default=0.2, help="server latency, seconds")
    parser.add_argument(
        "--per-metric-samples", type=int, default=20, help="samples for the per-metric call counts"
    )
    parser.add_argument(
        "--transport",
        choices=("auto", "litellm", "http"),
        default="auto",
        help="judge transport (default: auto, straight HTTP to an openai/ model at api_base)",
    )
    args = parser.parse_args(argv)

    base_url, requests, stop = serve_in_subprocess(args.latency)
    samples = make_samples(args.samples)
    try:
        # (a) each metric alone, fresh cache.
        print(f"(a) LLM calls per sample, N = {N_CONTEXTS} contexts, one judge model")
        print(f"{'metric':30} {'ragpulse':>8} {'RAGAS':>6}")
        ours_total = ragas_total = 0.0
        subset = samples[: args.per_metric_samples]
        for name in METRICS:
            before = requests()
            judge = client(base_url, InMemoryJudgmentStore(), args.concurrency, args.transport)
            run(subset, [name], judge)
            per_sample = (requests() - before) / len(subset)
            ragas = RAGAS_CALLS[name]
            if ragas is not None:
                ours_total += per_sample
                ragas_total += ragas
            print(f"{name:30} {per_sample:8.2f} {ragas if ragas is not None else '-':>6}")
        print(
            f"{'total (metrics RAGAS has)':30} {ours_total:8.2f} {ragas_total:6.0f}"
            f"   ratio {ours_total / ragas_total:.2f} (target <= 0.50)"
        )

        # (b) all metrics together, SQL cache on SQLite.
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{Path(tmp) / 'bench.db'}"
            upgrade(url)
            engine = make_engine(url)
            sessions = make_session_factory(engine)
            judge = client(base_url, SqlJudgmentStore(sessions), args.concurrency, args.transport)
            before = requests()
            cpu_before = time.process_time()
            result, seconds = run(samples, METRICS, judge)
            cpu_ms = (time.process_time() - cpu_before) * 1000
            calls = requests() - before
            errors = sum(a.errors for a in result.aggregates.values())
            throughput = calls / seconds
            bound = args.concurrency / args.latency
            print(
                f"\n(b) full run: {len(samples)} samples x {len(METRICS)} metrics, "
                f"concurrency {args.concurrency}, latency {args.latency * 1000:.0f} ms"
            )
            print(
                f"    {calls} calls ({calls / len(samples):.2f} per sample, all metrics, "
                f"shared answer splits), {errors} errors, {seconds:.1f} s"
            )
            target = 0.9 if args.concurrency <= 8 else 0.8
            print(
                f"    throughput {throughput:.1f} calls/s vs bound {bound:.1f} calls/s: "
                f"{throughput / bound:.2f}x (target >= {target:.2f}); client CPU "
                f"{cpu_ms / calls:.2f} ms per call (transport {args.transport}, load average "
                f"{os.getloadavg()[0]:.2f})"
            )

            # (c) again, new client, same table.
            judge2 = client(base_url, SqlJudgmentStore(sessions), args.concurrency, args.transport)
            before = requests()
            result2, seconds2 = run(samples, METRICS, judge2)
            again = requests() - before
            same = all(result2.aggregates[m].value == result.aggregates[m].value for m in METRICS)
            print(
                f"\n(c) second run: {again} HTTP calls, {judge2.stats.cache_hits} cache hits, "
                f"{seconds2:.1f} s, identical values: {same}"
            )
            engine.dispose()
    finally:
        stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
