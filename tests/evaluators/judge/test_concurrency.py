"""Adaptive concurrency per judge model: AIMD on the limiter itself, and end to end over
real HTTP against a scripted server that has one slot and sheds the rest with 503."""

from __future__ import annotations

import asyncio

from evaluators.judge.api import score
from evaluators.judge.concurrency import AdaptiveLimit
from evaluators.outcome import Score
from tests.evaluators.judge.helpers import make_judge, sample
from tests.fixtures.llm_server import Reply, ScriptedLLM, auto_reply


def test_overload_halves_once_per_round_and_success_grows_back() -> None:
    async def scenario() -> list[int]:
        limit = AdaptiveLimit(8)
        seen = [limit.limit]
        tokens = [await limit.acquire() for _ in range(8)]
        # Eight requests sent under the same limit all time out: one halving, not eight.
        for token in tokens:
            limit.release(token, "overload")
        seen.append(limit.limit)
        token = await limit.acquire()
        limit.release(token, "overload")  # sent after the decrease: a new signal
        seen.append(limit.limit)
        for _ in range(40):  # the limit in use, every request succeeds
            tokens = [await limit.acquire() for _ in range(limit.limit)]
            for token in tokens:
                limit.release(token, "ok")
        seen.append(limit.limit)
        return seen

    assert asyncio.run(scenario()) == [8, 4, 2, 8]


def test_limit_never_falls_below_one_and_non_adaptive_stays() -> None:
    async def scenario() -> tuple[int, int]:
        adaptive, fixed = AdaptiveLimit(2), AdaptiveLimit(2, adaptive=False)
        for limit in (adaptive, fixed):
            for _ in range(5):
                limit.release(await limit.acquire(), "overload")
        return adaptive.limit, fixed.limit

    assert asyncio.run(scenario()) == (1, 2)


def test_waiters_beyond_the_limit_wait() -> None:
    async def scenario() -> int:
        limit = AdaptiveLimit(2)
        peak = 0

        async def job() -> None:
            nonlocal peak
            token = await limit.acquire()
            peak = max(peak, limit.in_flight)
            await asyncio.sleep(0.01)
            limit.release(token, "ok")

        await asyncio.gather(*(job() for _ in range(10)))
        return peak

    assert asyncio.run(scenario()) == 2


def _shed(server: ScriptedLLM, adaptive: bool) -> tuple[int, int, int]:
    server.reset()
    server.fallback = auto_reply
    server.latency_s = 0.05
    server.max_in_flight = 1
    judge = make_judge(server, max_concurrency=8, max_retries=8, adaptive_concurrency=adaptive)
    samples = [
        sample(f"Question {i}?", [f"Context {i}.", "Other."], trace_id=f"t{i}") for i in range(24)
    ]
    outcomes = score("context_relevance", samples, judge)
    failed = sum(not isinstance(o, Score) for o in outcomes)
    shed = len(server.requests) - (len(samples) - failed)
    return failed, shed, judge.concurrency_limits()["openai/judge-a"]


def test_one_slot_server_drives_the_limit_down(llm_server: ScriptedLLM) -> None:
    failed, shed_adaptive, limit = _shed(llm_server, adaptive=True)
    _failed, shed_fixed, fixed_limit = _shed(llm_server, adaptive=False)
    assert failed == 0
    # AIMD saws around what the server serves (1); it never climbs back to 8 here.
    assert limit <= 4 and fixed_limit == 8
    # Requests the server turned away (each a retry): far fewer once the limit adapts.
    assert shed_adaptive * 2 < shed_fixed


def test_one_slot_server_that_queues_drives_the_limit_down(llm_server: ScriptedLLM) -> None:
    # llama.cpp with a long timeout: one slot, the rest wait in its queue; nothing times
    # out and nothing is shed, so only the latency shows the overload.
    llm_server.fallback = auto_reply
    llm_server.latency_s = 0.05
    llm_server.max_in_flight = 1
    llm_server.queue = True
    judge = make_judge(llm_server, max_concurrency=8, timeout_s=30.0, max_retries=0)
    limits: list[int] = []
    for batch in range(3):
        samples = [
            sample(f"Question {batch}-{i}?", [f"Context {i}.", "Other."], trace_id=f"t{batch}{i}")
            for i in range(16)
        ]
        outcomes = score("context_relevance", samples, judge)
        assert all(isinstance(o, Score) for o in outcomes)
        limits.append(judge.concurrency_limits()["openai/judge-a"])
    assert llm_server.peak_in_flight == 1
    # Settles near what the server serves (1), not at the ceiling of 8.
    assert max(limits[1:]) <= 3, limits


def test_replies_of_different_lengths_are_not_queueing() -> None:
    async def scenario() -> int:
        limit = AdaptiveLimit(4)
        for i in range(40):  # one at a time (no queue); replies of 10 to 400 tokens
            tokens = 10 if i % 2 else 400
            token = await limit.acquire()
            limit.release(token, "ok", latency_s=0.2 + 0.01 * tokens, completion_tokens=tokens)
        return limit.decreases

    assert asyncio.run(scenario()) == 0


def test_queueing_latency_halves_once_per_round() -> None:
    async def scenario() -> list[int]:
        limit = AdaptiveLimit(8)
        tokens = [await limit.acquire() for _ in range(8)]
        # One slot: the k-th of 8 requests sent together takes k times as long.
        for k, token in enumerate(tokens, start=1):
            limit.release(token, "ok", latency_s=0.1 * k, completion_tokens=20)
        return [limit.limit, limit.decreases]

    assert asyncio.run(scenario()) == [4, 1]


def test_timeout_counts_from_sending_not_from_waiting(llm_server: ScriptedLLM) -> None:
    llm_server.fallback = auto_reply
    llm_server.latency_s = 0.4
    # One at a time: the third request waits ~0.8 s for its slot, then takes 0.4 s, well
    # inside its 1.0 s timeout; were the wait counted, it would time out.
    judge = make_judge(llm_server, max_concurrency=1, timeout_s=1.0, max_retries=0)
    samples = [sample(f"Q{i}?", ["C."], trace_id=f"t{i}") for i in range(3)]
    outcomes = score("context_relevance", samples, judge)
    assert all(isinstance(o, Score) for o in outcomes)
    assert len(llm_server.requests) == 3


def test_slow_replies_count_as_overload(llm_server: ScriptedLLM) -> None:
    llm_server.script("ragpulse judge task", Reply(content={"score": 0.5}, delay_s=0.3))
    judge = make_judge(llm_server, max_concurrency=4, timeout_s=0.35, max_retries=0)
    samples = [sample(f"Q{i}?", answer="A.", trace_id=f"t{i}") for i in range(4)]
    outcomes = score("answer_relevance", samples, judge)
    assert all(isinstance(o, Score) for o in outcomes)
    assert judge.concurrency_limits()["openai/judge-a"] == 2
