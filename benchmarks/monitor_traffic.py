"""Realistic help-desk traffic for the monitoring benchmark, bulk-loaded with COPY.

Three tenants, Russian and English questions, sessions, ground truth, production-judge
decisions and labels, references and cache information; each trace's sampling decisions
come from the real `Sampler`. Beside each COPY row, the `Facts` the job-state seeding
needs (`monitor_state`).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
import psycopg
from sqlalchemy.engine import make_url

from collector.ingest.sampling import Sampler
from collector.settings import Settings
from collector.store.repository import TRACE_COLUMNS as STORED_COLUMNS

TENANTS = (("acme", 0.5), ("globex", 0.3), ("initech", 0.2))
TOPICS = (
    ("отпуск", "vacation"),
    ("пароль", "password"),
    ("VPN", "VPN"),
    ("зарплата", "payroll"),
    ("ноутбук", "laptop"),
    ("больничный", "sick leave"),
    ("командировка", "business trip"),
    ("пенсионный план", "pension plan"),
    ("авансовый отчёт", "expense report"),
    ("пропуск", "badge access"),
    ("Wi-Fi в офисе", "office Wi-Fi"),
    ("парковка", "parking"),
    ("страховка", "health insurance"),
    ("обучение", "training budget"),
    ("удалённая работа", "remote work"),
    ("увольнение", "resignation"),
)
FORMS_RU = (
    "Как оформить {t}?",
    "Где найти информацию про {t}?",
    "Что делать, если {t} не работает?",
    "Сколько ждать {t}?",
    "Кто согласует {t} в отделе {d}?",
    "Можно ли перенести {t} на {d} число?",
    "Какие документы нужны для {t}, заявка {d}?",
)
FORMS_EN = (
    "How do I request {t}?",
    "Who approves {t} for team {d}?",
    "Is there a deadline for {t}?",
    "What should I do if {t} stops working?",
    "Can I move my {t} to the {d}th?",
    "Which form do I need for {t}, ticket {d}?",
)
ANSWERS_RU = (
    "Чтобы оформить {t}, подайте заявку в портале сотрудника; срок рассмотрения три дня.",
    "Информация про {t} есть в разделе «Кадры» внутреннего портала.",
    "Если {t} не работает, обратитесь в службу поддержки по номеру 1234.",
)
ANSWERS_EN = (
    "To request {t}, file a ticket in the employee portal; it takes three business days.",
    "Everything about {t} is in the HR section of the intranet.",
    "If {t} stops working, call the help desk at extension 1234.",
)


@dataclass(slots=True)
class Facts:
    """What the job-state seeding needs to know about each generated trace."""

    trace_id: str
    ts: datetime
    updated: datetime
    tenant: str
    benchmark: bool
    judge_sampled: bool
    rank: int  # rank of the relevant document, 0 = not retrieved, -1 = no ground truth
    labelled: bool
    judge_latency: float | None
    reference: bool
    cache_hit: bool


# The stored columns the generated rows fill, in the table's order (no graded relevance,
# no metadata, no per-stage latencies and no shown URL in this traffic).
TRACE_COLUMNS = tuple(
    c for c in STORED_COLUMNS if c not in ("relevance", "metadata", "latency_stages", "shown_url")
)


def generate_traces(
    n: int, start: datetime, end: datetime, *, seed: int, prefix: str, sampler: Sampler
) -> Iterator[tuple[tuple[Any, ...], list[tuple[str, str, datetime]], Facts]]:
    """`n` traces in time order between `start` and `end`: (COPY row, samples rows, facts).

    About 60% of traces belong to sessions of 2-5 turns, 30% carry ground truth, 15% a
    reference answer, 90% a production-judge decision (a fifth of those a label), all a
    cache flag; ~15% of questions repeat a popular one, the rest vary by topic, form and a
    number, like real help-desk traffic.
    """
    rng = random.Random(seed)
    step = (end - start) / max(n, 1)
    popular: list[str] = []
    session = ""
    turns_left = 0
    turn = 0
    topic = 0
    lang = "ru"
    tenant = "acme"
    user = ""
    for i in range(n):
        ts = start + step * i
        if turns_left == 0:
            tenant = rng.choices([t for t, _ in TENANTS], [w for _, w in TENANTS])[0]
            lang = "ru" if rng.random() < 0.6 else "en"
            user = f"u{rng.randrange(50_000)}"
            topic = rng.randrange(len(TOPICS))
            if rng.random() < 0.6:
                turns_left = rng.randint(2, 5)
                session = f"{prefix}-s{i}"
                turn = 0
            else:
                session = ""
        if session:
            turns_left -= 1
            turn += 1
        if rng.random() < 0.3:
            topic = rng.randrange(len(TOPICS))
        t = TOPICS[topic][0 if lang == "ru" else 1]
        if popular and rng.random() < 0.15:
            question = rng.choice(popular)
        else:
            forms = FORMS_RU if lang == "ru" else FORMS_EN
            question = rng.choice(forms).format(t=t, d=rng.randint(1, 9999))
            if len(popular) < 400 and rng.random() < 0.01:
                popular.append(question)
        answer = rng.choice(ANSWERS_RU if lang == "ru" else ANSWERS_EN).format(t=t)
        docs = [f"doc-{topic}-{rng.randrange(40)}" for _ in range(5)]
        contexts = [
            {"id": d, "text": f"{t}: раздел {d} регламента", "score": round(0.9 - 0.1 * k, 3)}
            for k, d in enumerate(docs)
        ]
        trace_id = f"{prefix}-{i:08d}"
        rank = -1
        relevant = None
        if rng.random() < 0.3:
            roll = rng.random()
            rank = 1 if roll < 0.55 else 2 if roll < 0.7 else 4 if roll < 0.8 else 0
            relevant = [docs[rank - 1] if rank else f"doc-{topic}-missing"]
        reference = None
        if rng.random() < 0.15:
            reference = answer if rng.random() < 0.3 else answer.replace("три", "пять")
        judged = rng.random() < 0.9
        decision = rng.random() < 0.8 if judged else None
        latency = round(rng.uniform(150, 900), 1) if judged else None
        label = None
        if judged and rng.random() < 0.2:
            label = decision if rng.random() < 0.85 else not decision
        hit = rng.random() < 0.25
        tags = {"tenant": tenant, "lang": lang}
        received = ts + timedelta(milliseconds=rng.randint(5, 900))
        row = (
            trace_id,
            ts,
            received,
            received,
            "json",
            question,
            answer,
            orjson.dumps(contexts).decode(),
            reference,
            orjson.dumps(relevant).decode() if relevant is not None else None,
            session or None,
            user,
            turn if session else None,
            decision,
            (0.9 if decision else 0.2) if judged else None,
            "mistral-small" if judged else None,
            latency,
            label,
            hit,
            round(rng.uniform(0.86, 0.99), 3) if hit else round(rng.uniform(0.2, 0.84), 3),
            "gpt-4o-mini",
            round(rng.uniform(300, 3000), 1),
            orjson.dumps({"prompt_tokens": 900, "completion_tokens": 120}).decode(),
            orjson.dumps(tags).decode(),
        )
        purposes = sampler.purposes_for(
            trace_id, has_ground_truth=relevant is not None, has_answer=True, tags=tags
        )
        samples = [(trace_id, p, received) for p in purposes]
        facts = Facts(
            trace_id,
            ts,
            received,
            tenant,
            "real_users_benchmark" in purposes,
            "judge" in purposes,
            rank,
            label is not None,
            latency,
            reference is not None,
            hit,
        )
        yield row, samples, facts


def psycopg_url(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def copy_traces(
    url: str, n: int, start: datetime, end: datetime, *, seed: int, prefix: str, settings: Settings
) -> list[Facts]:
    """Bulk-load generated traces and their sampling decisions with COPY; return the facts."""
    sampler = Sampler(settings.sampling)
    facts: list[Facts] = []
    samples: list[tuple[str, str, datetime]] = []
    with psycopg.connect(psycopg_url(url)) as conn, conn.cursor() as cur:
        columns = ", ".join(f'"{c}"' for c in TRACE_COLUMNS)
        with cur.copy(f"COPY traces ({columns}) FROM STDIN") as copy:
            for row, sample_rows, fact in generate_traces(
                n, start, end, seed=seed, prefix=prefix, sampler=sampler
            ):
                copy.write_row(row)
                samples.extend(sample_rows)
                facts.append(fact)
        with cur.copy("COPY samples (trace_id, purpose, sampled_at) FROM STDIN") as copy:
            for sample in samples:
                copy.write_row(sample)
        conn.commit()
        cur.execute("ANALYZE traces")
        cur.execute("ANALYZE samples")
        conn.commit()
    return facts
