"""The LLM judge: `litellm.acompletion` over asyncio, paced, retried, cached and budgeted.

One `JudgeClient.ask` call turns (prompt, input, model) into validated JSON. The client
only orders the steps; each step is a module of its own:

1. the cache key hashes model, prompt version, rendered input and temperature (the input
   as rendered with fence marks, before the request's random fence code is sealed in, so
   the code never defeats the cache); a stored successful answer is returned without any
   request, and identical requests in flight at the same moment share one HTTP call
   (`cache.py`);
2. the budget (calls per hour, USD per 24 h) is checked; over budget -> `BudgetExceeded`
   (`budget.py`);
3. the request runs under the model's adaptive concurrency limit (`concurrency.py`: starts
   at `max_concurrency`, halves on overload, grows back on success) and an optional
   requests-per-minute pacer (`pacing.py`), with a timeout counted from when it is sent
   (`transport.py`: litellm, its errors mapped to typed `JudgeError`s); timeouts, 429,
   5xx and connection errors are retried with exponential backoff and full jitter,
   anything else fails at once (`retry.py`);
4. the schema is asked for in the structured-output mode the model's server enforces
   (`structured.py`); a server refusing a mode moves the model to the next mode for the
   rest of the process (`modes.py`; logged, counted in `structured_output_fallbacks`);
5. the reply is checked (empty choices, refusals), its JSON found (also in a tool call)
   and validated (`reply.py`, `parsing.py`); a malformed, out-of-range or truncated reply
   gets at most one repair request (`repair.py`; a truncated one is first closed locally,
   kept when its check passes);
6. every request is recorded in the `JudgmentStore` (`records.py`: tokens, cost from
   `cost.py`, latency, status) and counted in `JudgeStats` (`stats.py`).

litellm is imported lazily with its price map read locally, so importing this module (or
building a client) touches no network.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from evaluators.judge import structured
from evaluators.judge.budget import Budget, UsageLedger
from evaluators.judge.cache import InFlight, cache_key, input_hash, stored_answer
from evaluators.judge.concurrency import ModelLimits
from evaluators.judge.config import JudgeConfig
from evaluators.judge.cost import response_cost
from evaluators.judge.errors import BudgetExceeded, JudgeError
from evaluators.judge.metric import prompt_hash
from evaluators.judge.modes import StructuredModes
from evaluators.judge.pacing import Pacer
from evaluators.judge.prompts.base import Prompt
from evaluators.judge.prompts.fencing import new_nonce, seal
from evaluators.judge.records import RequestMeta, judgment_record
from evaluators.judge.repair import REPAIRABLE, repair_messages
from evaluators.judge.reply import (
    Check,
    Reply,
    parse_reply,
    read_reply,
    reply_of,
    token_usage,
)
from evaluators.judge.retry import RetryPolicy, note_attempts
from evaluators.judge.routing import Transports
from evaluators.judge.schemas import bounded
from evaluators.judge.stats import JudgeStats
from evaluators.judge.store import STATUS_ERROR, STATUS_OK, InMemoryJudgmentStore, JudgmentStore
from evaluators.signature import Signature


class _LoopState:
    """Asyncio primitives bound to one event loop (each `asyncio.run` gets fresh ones)."""

    def __init__(self, config: JudgeConfig, ledger: UsageLedger) -> None:
        self.loop = asyncio.get_running_loop()
        self.inflight = InFlight(self.loop)
        self.budget = Budget(
            ledger,
            max_calls_per_hour=config.max_calls_per_hour,
            max_usd_per_day=config.max_usd_per_day,
        )
        self.pacer = Pacer(config.requests_per_minute)


class JudgeClient:
    """Ask judge models for JSON verdicts; see the module docstring for the pipeline."""

    def __init__(self, config: JudgeConfig, store: JudgmentStore | None = None) -> None:
        self.config = config
        self.store: JudgmentStore = store if store is not None else InMemoryJudgmentStore()
        self.stats = JudgeStats()
        self._transports = Transports(config)
        self._retry = RetryPolicy.from_config(config)
        self._state: _LoopState | None = None
        self._modes = StructuredModes(config.structured_output, self._transports)
        self._limits = ModelLimits(config.max_concurrency, adaptive=config.adaptive_concurrency)

    @classmethod
    def from_settings(cls, settings: Any, store: JudgmentStore | None = None) -> JudgeClient:
        """From `collector.settings.JudgeSettings` or anything with the same attributes."""
        return cls(JudgeConfig.from_settings(settings), store)

    @property
    def models(self) -> tuple[str, ...]:
        return self.config.models

    def signature(self, metric: str, embedding_model: str | None = None) -> Signature:
        """Judge models and the metric's prompt hash (what the runner stamps on results)."""
        return Signature(
            judge_model=",".join(self.config.models),
            prompt_hash=prompt_hash(metric.partition("@")[0], self.config),
            embedding_model=embedding_model,
        )

    def _loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            self._state = _LoopState(self.config, self.store)
            self._limits.reset_loop()  # waiters and slots of a finished loop are gone
        return self._state

    def concurrency_limits(self) -> dict[str, int]:
        """Requests each model may have in flight now (the configured concurrency until
        the model first ran into overload)."""
        return {m: self._limits.of(m).limit for m in self.config.models}

    def structured_output_modes(self) -> dict[str, str]:
        """The structured-output mode each model is asked in now (see `structured.py`)."""
        return {m: self._modes.current(m) for m in self.config.models}

    @property
    def structured_output_fallbacks(self) -> dict[tuple[str, str, str], int]:
        """(model, refused mode, next mode) -> times a server refused (once per model)."""
        return self._modes.fallbacks

    # ------------------------------------------------------------------ public entry point

    async def ask(
        self,
        prompt: Prompt,
        user: str,
        *,
        model: str,
        metric: str,
        trace_id: str | None = None,
        check: Check | None = None,
        schema: Mapping[str, Any] | None = None,
    ) -> Any:
        """Validated JSON answer of `model` to `prompt` on `user`; raises `JudgeError`.

        `schema` narrows `prompt.schema` for this input (e.g. exactly N verdicts numbered
        1..N, see `schemas.py`) in the structured-output request only: a server that
        enforces schemas while decoding then steers a small model away from the usual
        mistakes. The prompt text, its version, the cache key and the validation of the
        reply stay those of `prompt` (the metric's checks judge the reply). Strings are
        capped (`schemas.bounded`) either way.
        """
        decode = bounded(schema if schema is not None else prompt.schema)
        template = prompt.messages(user)
        digest = input_hash(template)
        key = cache_key(model, prompt.version, digest, self.config.temperature)
        state = self._loop_state()

        data = await stored_answer(self.store, key, prompt.schema, check)
        if data is not None:
            self.stats.cache_hits += 1
            return data

        shared = state.inflight.follow(key)
        if shared is not None:
            self.stats.cache_hits += 1
            return await shared

        async def request() -> Any:
            meta = RequestMeta(
                cache_key=key,
                metric=metric,
                model=model,
                prompt_version=prompt.version,
                input_hash=digest,
                temperature=float(self.config.temperature),
                trace_id=trace_id,
            )
            messages = seal(template, new_nonce())
            return await self._answer(prompt, messages, model, meta, check, decode)

        return await state.inflight.lead(key, request)

    # ------------------------------------------------------------------ internals

    async def _answer(
        self,
        prompt: Prompt,
        messages: list[dict[str, str]],
        model: str,
        meta: RequestMeta,
        check: Check | None,
        decode: Mapping[str, Any],
    ) -> Any:
        reply = await self._call(prompt, messages, model, meta, decode)
        try:
            raw, data = parse_reply(prompt, reply, check)
        except REPAIRABLE as exc:
            # One repair request: show the model its reply and what was wrong with it.
            await self._record(meta, STATUS_ERROR, exc, reply)
            self.stats.repairs += 1
            repair = repair_messages(messages, reply.text, exc)
            reply = await self._call(prompt, repair, model, meta, decode)
            try:
                raw, data = parse_reply(prompt, reply, check)
            except JudgeError as exc2:
                await self._record(meta, STATUS_ERROR, exc2, reply)
                self.stats.errors += 1
                raise
        except JudgeError as exc:
            await self._record(meta, STATUS_ERROR, exc, reply)
            self.stats.errors += 1
            raise
        await self._record(meta, STATUS_OK, None, reply, parsed=raw)
        return data

    async def _record(
        self,
        meta: RequestMeta,
        status: str,
        exc: JudgeError | None,
        reply: Reply | None,
        parsed: Any = None,
    ) -> None:
        try:
            await self.store.record(judgment_record(meta, status, exc, reply, parsed))
        finally:
            if self._state is not None:
                self._state.budget.release()

    async def _call(
        self,
        prompt: Prompt,
        messages: list[dict[str, str]],
        model: str,
        meta: RequestMeta,
        decode: Mapping[str, Any],
    ) -> Reply:
        """One logical request with retries; every failed attempt is recorded."""
        state = self._loop_state()
        attempt = 0
        while True:
            try:
                await state.budget.reserve()
            except BudgetExceeded:
                self.stats.budget_skips += 1
                raise
            try:
                reply = await self._attempt(state, prompt, messages, model, decode)
                self.stats.answered += 1
                return reply
            except JudgeError as exc:
                if reply_of(exc) is not None:
                    self.stats.answered += 1
                await self._record(meta, STATUS_ERROR, exc, reply_of(exc))
                if self._retry.gives_up(exc, attempt):
                    self.stats.errors += 1
                    failures = self.stats.failures
                    failures[exc.error_type] = failures.get(exc.error_type, 0) + 1
                    note_attempts(exc, attempt)
                    raise
                attempt += 1
                self.stats.retries += 1
                await self._retry.wait(attempt)

    async def _attempt(
        self,
        state: _LoopState,
        prompt: Prompt,
        messages: list[dict[str, str]],
        model: str,
        decode: Mapping[str, Any],
    ) -> Reply:
        limit = self._limits.of(model)
        transport = self._transports.of(model)
        token = await limit.acquire()
        outcome = "other"
        try:
            await state.pacer.pace()
            # The timeout starts here, after the wait for a slot.
            started = time.perf_counter()
            while True:
                mode = self._modes.current(model)
                fields = structured.request_fields(mode, model, prompt.task, decode)
                self.stats.calls += 1
                try:
                    response = await transport.send(model, messages, fields)
                    break
                except Exception as exc:
                    error = transport.to_error(exc)
                    status = getattr(exc, "status_code", None)
                    if not self._modes.move_on(model, mode, error, status, str(exc)):
                        if error.retriable:
                            outcome = "overload"
                        raise error from exc
                    started = time.perf_counter()
            latency_ms = (time.perf_counter() - started) * 1000.0
            slow = latency_ms / 1000.0 > self.config.slow_fraction * self.config.timeout_s
            outcome = "overload" if slow else "ok"
        finally:
            if outcome == "ok":
                tokens = getattr(getattr(response, "usage", None), "completion_tokens", None)
                limit.release(
                    token,
                    outcome,
                    latency_ms / 1000.0,
                    tokens if isinstance(tokens, int) else None,
                )
            else:
                limit.release(token, outcome)
        return self._read(response, model, latency_ms)

    def _read(self, response: object, model: str, latency_ms: float) -> Reply:
        prompt_tokens, completion_tokens = token_usage(response)
        prices = self._transports.of(model)
        cost = response_cost(response, model, prices, self.stats.unpriced_models)
        self.stats.prompt_tokens += int(prompt_tokens or 0)
        self.stats.completion_tokens += int(completion_tokens or 0)
        self.stats.cost_usd += cost
        return read_reply(
            response,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost,
            latency_ms=latency_ms,
        )
