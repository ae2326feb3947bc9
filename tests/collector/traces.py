"""Realistic test traces (Russian and English), deterministic in their index.

Shared by the decode/store tests, the Kafka tests and the ingest benchmark:
`make_trace(i)` is a SPEC §2 trace dict, `trace_bytes(i)` its UTF-8 JSON message value,
`make_feedback(i)` a feedback event for `trace_id(i)`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

BASE_TIME = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)

_RU_QUESTIONS = (
    "Как продлить срок действия загранпаспорта?",
    "Какие документы нужны для оформления ипотеки?",
    "Сколько дней отпуска положено по Трудовому кодексу?",
    "Как вернуть товар ненадлежащего качества?",
    "Где посмотреть историю операций по карте?",
)
_RU_SENTENCES = (
    "Заявление подаётся через портал госуслуг или в отделении МФЦ по месту жительства.",
    "Срок рассмотрения составляет не более тридцати календарных дней с момента подачи.",
    "К заявлению прилагаются паспорт, фотография и квитанция об оплате госпошлины.",
    "Ежегодный оплачиваемый отпуск предоставляется продолжительностью 28 календарных дней.",
    "Покупатель вправе потребовать замены товара или возврата уплаченной суммы.",
    "История операций доступна в мобильном приложении в разделе «Платежи и переводы».",
)
_EN_QUESTIONS = (
    "How do I renew my passport?",
    "Which documents are required for a mortgage application?",
    "How many vacation days does the labour code guarantee?",
    "How can I return a faulty product?",
    "Where can I see my card transaction history?",
)
_EN_SENTENCES = (
    "Applications are submitted online or at the service centre nearest to your address.",
    "Processing takes no longer than thirty calendar days from the date of submission.",
    "Attach your passport, a photograph and the receipt for the state fee to the form.",
    "Annual paid leave lasts twenty-eight calendar days for full-time employees.",
    "The buyer may demand a replacement or a refund of the amount paid.",
    "The history is available in the mobile app under Payments and transfers.",
)
TENANTS = ("acme", "globex", "initech")


def trace_id(i: int) -> str:
    return f"trace-{i:08d}"


def _text(sentences: tuple[str, ...], i: int, n: int) -> str:
    return " ".join(sentences[(i + k) % len(sentences)] for k in range(n))


def make_trace(
    i: int,
    lang: str = "ru",
    size_bytes: int | None = None,
    *,
    n_contexts: int = 4,
    ground_truth: bool = True,
    answer: bool = True,
) -> dict[str, Any]:
    """Trace number `i`; `size_bytes` pads the context texts to about that JSON size."""
    questions, sentences = (
        (_RU_QUESTIONS, _RU_SENTENCES) if lang == "ru" else (_EN_QUESTIONS, _EN_SENTENCES)
    )
    contexts: list[dict[str, Any]] = [
        {
            "id": f"doc-{(i * 7 + k) % 500}",
            "url": f"https://kb.example.org/{lang}/doc-{(i * 7 + k) % 500}",
            "text": _text(sentences, i + k, 2),
            "score": round(0.95 - 0.1 * k, 3),
        }
        for k in range(n_contexts)
    ]
    trace: dict[str, Any] = {
        "trace_id": trace_id(i),
        "timestamp": (BASE_TIME + timedelta(seconds=i)).isoformat().replace("+00:00", "Z"),
        "question": questions[i % len(questions)],
        "answer": _text(sentences, i, 3) if answer else None,
        "contexts": contexts,
        "session_id": f"session-{i // 3}",
        "user_id": f"user-{i % 97}",
        "turn": i % 3,
        "judge": {"decision": i % 5 != 0, "score": 0.8, "model": "judge-mini", "latency_ms": 42.0},
        "cache": {"hit": i % 4 == 0, "similarity": 0.91 if i % 4 == 0 else 0.3},
        "model": "gpt-4o-mini",
        "usage": {"prompt_tokens": 900 + i % 50, "completion_tokens": 120, "cost_usd": 0.0004},
        "latency_ms": 850.0 + i % 300,
        "tags": {"tenant": TENANTS[i % len(TENANTS)], "lang": lang},
        "metadata": {"app_version": "2.3.1"},
    }
    if ground_truth:
        trace["relevant_ids"] = [contexts[0]["id"]] if contexts else ["doc-0"]
    if size_bytes is not None:
        current = len(json.dumps(trace, ensure_ascii=False).encode("utf-8"))
        k = 0
        while current < size_bytes and contexts:
            extra = " " + sentences[k % len(sentences)]
            contexts[k % len(contexts)]["text"] += extra
            current += len(extra.encode("utf-8"))
            k += 1
    return trace


def trace_bytes(i: int, lang: str = "ru", size_bytes: int | None = None, **kw: Any) -> bytes:
    return json.dumps(make_trace(i, lang, size_bytes, **kw), ensure_ascii=False).encode("utf-8")


def make_feedback(
    i: int, *, seconds_after: int = 60, judge_label: bool | None = True, **fields: Any
) -> dict[str, Any]:
    """A feedback event for `trace_id(i)`; extra keyword fields are added as given."""
    event: dict[str, Any] = {
        "type": "feedback",
        "trace_id": trace_id(i),
        "timestamp": (BASE_TIME + timedelta(seconds=i + seconds_after)).isoformat(),
    }
    if judge_label is not None:
        event["judge_label"] = judge_label
    event.update(fields)
    return event
