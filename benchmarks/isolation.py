"""Cost of poison isolation: a batch with one record the database refuses, written in halves
(`collector.ingest.kafka.isolation.store_bisecting`), against the same batch without it written
whole, in the same run, on SQLite and PostgreSQL.

The refusal is real: a trigger on `traces` raises for one trace id. Reported per back end:
wall time of each, their ratio, the transactions and the records attempted by isolation.

    .venv/bin/python -m benchmarks.isolation            # 5,000 traces (the default batch)
    .venv/bin/python -m benchmarks.isolation --batch 2000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from collector.ingest.kafka.isolation import DeadLetterWriter, store_bisecting
from collector.ingest.pipeline import BatchResult, Ingestor, RawMessage
from collector.settings import load_settings
from collector.store.session import make_engine, make_session_factory
from migrations.runner import upgrade
from tests.collector.test_poison import REFUSE_TRACE, _execute
from tests.collector.traces import trace_bytes
from tests.fixtures.db import create_postgres_database, drop_postgres_database


def _run(url: str, backend: str, batch: int, poisoned: bool) -> tuple[float, int, int]:
    upgrade(url)
    _execute(url, REFUSE_TRACE[backend])
    ingestor = Ingestor(load_settings(database={"url": url}))
    engine = make_engine(url)
    factory = make_session_factory(engine)
    values = [trace_bytes(i) for i in range(batch)]
    if poisoned:
        values[batch // 3] = json.dumps(
            {"trace_id": "refused-1", "timestamp": "2026-11-20T09:00:00Z", "question": "?"}
        ).encode()
    messages = [RawMessage("rag.traces", 0, i, None, v) for i, v in enumerate(values)]
    pieces: list[int] = []

    def store(piece: Sequence[RawMessage]) -> BatchResult:
        pieces.append(len(piece))
        with factory() as session:
            result = ingestor.ingest_batch(session, piece)
            session.commit()
            return result

    try:
        start = time.perf_counter()
        result = store_bisecting(messages, store, DeadLetterWriter(factory), known_to_fail=poisoned)
        elapsed = time.perf_counter() - start
    finally:
        engine.dispose()
    assert result.stored == batch - int(poisoned) and result.invalid == int(poisoned)
    return elapsed, len(pieces), sum(pieces)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=5000)
    args = parser.parse_args()
    columns = ("clean batch, whole", "one poison, isolated", "ratio", "transactions")
    print(f"| back end | {' | '.join(columns)} | records attempted |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for backend in ("sqlite", "postgresql"):
        times = []
        for poisoned in (False, True):
            with tempfile.TemporaryDirectory() as tmp:
                if backend == "sqlite":
                    url = f"sqlite:///{Path(tmp) / 'bench.db'}"
                    times.append(_run(url, backend, args.batch, poisoned))
                else:
                    url = create_postgres_database("ragpulse_bench")
                    try:
                        times.append(_run(url, backend, args.batch, poisoned))
                    finally:
                        drop_postgres_database(url)
        (clean, _, _), (isolated, transactions, attempted) = times
        print(
            f"| {backend} | {clean:.2f} s | {isolated:.2f} s | {isolated / clean:.1f}x "
            f"| {transactions} | {attempted:,} |"
        )


if __name__ == "__main__":
    main()
