"""The cost of closing sessions: the real `sessions` job on PostgreSQL, per 1,000 sessions.

    python -m benchmarks.session_closing [--sessions 1000] [--turns 4] [--embedder default|stub]

Plants SESSIONS idle sessions of TURNS turns each (Russian and English help-desk questions,
some asked again in other words, some asking for a person) in a fresh PostgreSQL database
(RAGPULSE_TEST_POSTGRES_URL, default postgresql+psycopg://postgres@127.0.0.1/test), then
times one run of the sessions job with the default settings that closes them all: reading
the turns, embedding the questions (`default`: the default model, as the product runs;
`stub`: hashed vectors, the job's own cost without the model), detecting the outcomes and
storing the per-trace outcomes, window buckets and results. A second run (nothing new)
times the idle check. Prints the seconds and the cost per 1,000 sessions.
"""

from __future__ import annotations

import argparse
import random
import time
from datetime import UTC, datetime, timedelta

from collector.store.session import make_engine, make_session_factory
from migrations.runner import upgrade
from tests.fixtures.db import create_postgres_database, drop_postgres_database
from tests.jobs.helpers import add_trace
from tests.jobs.session_plant import sessions_job_of

QUESTIONS = (
    "How do I reset my password?",
    "Сколько идёт доставка в Москву?",
    "Можно ли вернуть товар без чека?",
    "What is the daily cash withdrawal limit?",
    "Как оформить больничный?",
    "How many days a week can I work from home?",
    "Какая ставка по вкладу?",
    "Do you ship abroad?",
)
AGAIN = (
    "I forgot my password, how can I change it?",
    "Сколько дней везут заказ до Москвы?",
    "Верните деньги за товар, чека нет",
    "How much cash can I take out per day?",
)
PERSON = ("Соедините меня с оператором", "Can I talk to a human?")


def plant(url: str, sessions: int, turns: int, now: datetime, seed: int = 1) -> int:
    """`sessions` sessions ending at least 10 minutes before `now`; returns the traces."""
    rng = random.Random(seed)
    factory = make_session_factory(make_engine(url))
    count = 0
    with factory() as session:
        for s in range(sessions):
            start = now - timedelta(minutes=10 + rng.uniform(0, 600))
            for t in range(turns):
                roll = rng.random()
                if t and roll < 0.1:
                    question = rng.choice(AGAIN)
                elif t == turns - 1 and roll < 0.15:
                    question = rng.choice(PERSON)
                else:
                    question = f"{rng.choice(QUESTIONS)} ({s}-{t})"
                add_trace(
                    session,
                    f"bench-{s}-{t}",
                    start + timedelta(seconds=30 * t),
                    question=question,
                    answer="an answer",
                    session_id=f"bench-s{s}",
                    turn=t,
                    tags={"tenant": ("bank", "shop", "hr")[s % 3]},
                )
                count += 1
            if s % 200 == 199:
                session.commit()
        session.commit()
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--embedder", choices=("default", "stub"), default="default")
    args = parser.parse_args()
    url = create_postgres_database("ragpulse_bench")
    try:
        upgrade(url)
        now = datetime.now(UTC)
        traces = plant(url, args.sessions, args.turns, now)
        embedder = None
        if args.embedder == "default":
            from evaluators.embedder import Embedder

            embedder = Embedder()
            embedder.encode(["warm-up"])
        engine = make_engine(url)
        job = sessions_job_of(engine, embedder=embedder)
        started = time.perf_counter()
        report = job.run(now)
        closing = time.perf_counter() - started
        started = time.perf_counter()
        job.run(now + timedelta(seconds=1))
        idle = time.perf_counter() - started
        engine.dispose()
        per = closing / args.sessions * 1000
        print(
            f"{args.sessions} sessions x {args.turns} turns ({traces} traces), embedder "
            f"{args.embedder}: closed in {closing:.2f} s ({report.status}, "
            f"{report.new_traces} sessions closed) = {per:.2f} s per 1,000 sessions; "
            f"a run with nothing new: {idle:.3f} s"
        )
    finally:
        drop_postgres_database(url)


if __name__ == "__main__":
    main()
