"""Per-trace cost of decode + store (no Kafka): `Ingestor.ingest_batch` into a fresh database.

20,000 generated ~8 KB Russian/English traces in batches of 2,000, one transaction per
batch (as the consumer does). Reports, per trace: decoding alone, the whole ingest
(decode, validate, bulk insert, feedback, sampling, commit) in wall time and in this
process's CPU, the PostgreSQL backend's CPU (from /proc), and a replay of one batch.

    .venv/bin/python benchmarks/ingest_store.py            # PostgreSQL (RAGPULSE_TEST_...)
    .venv/bin/python benchmarks/ingest_store.py --sqlite
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from collector.ingest.decode.trace_json import decode_json_message, parse_message  # noqa: E402
from collector.ingest.pipeline import Ingestor, RawMessage  # noqa: E402
from collector.settings import load_settings  # noqa: E402
from collector.store.session import make_engine, make_session_factory  # noqa: E402
from migrations.runner import upgrade  # noqa: E402
from tests.collector.traces import trace_bytes  # noqa: E402
from tests.fixtures.db import create_postgres_database, drop_postgres_database  # noqa: E402


def _backend_cpu_s(pid: int | None) -> float:
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=20_000, help="traces to ingest")
    parser.add_argument("--batch", type=int, default=2_000, help="traces per transaction")
    parser.add_argument("--size", type=int, default=8_000, help="approximate trace size (bytes)")
    parser.add_argument("--sqlite", action="store_true", help="use a SQLite file, not PostgreSQL")
    args = parser.parse_args()

    messages = [
        RawMessage("rag.traces", 0, i, None, trace_bytes(i, "ru" if i % 2 else "en", args.size))
        for i in range(args.traces)
    ]
    n = len(messages)
    mean_size = sum(len(m.value or b"") for m in messages) / n

    start = time.process_time()
    for m in messages:
        parse_message(decode_json_message(m.value))
    decode_us = (time.process_time() - start) / n * 1e6

    tmp = tempfile.TemporaryDirectory()
    url = f"sqlite:///{tmp.name}/bench.db" if args.sqlite else create_postgres_database()
    try:
        upgrade(url)
        engine = make_engine(url)
        sessions = make_session_factory(engine)
        ingestor = Ingestor(load_settings())
        with sessions() as session:
            pid = None if args.sqlite else session.execute(text("SELECT pg_backend_pid()")).scalar()
        server0 = _backend_cpu_s(pid)
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for k in range(0, n, args.batch):
            with sessions() as session:
                ingestor.ingest_batch(session, messages[k : k + args.batch])
                session.commit()
        wall = time.perf_counter() - wall0
        cpu_us = (time.process_time() - cpu0) / n * 1e6
        server_us = (_backend_cpu_s(pid) - server0) / n * 1e6
        replay0 = time.perf_counter()
        with sessions() as session:
            replay = ingestor.ingest_batch(session, messages[: args.batch])
            session.commit()
        replay_us = (time.perf_counter() - replay0) / args.batch * 1e6
        engine.dispose()
    finally:
        if not args.sqlite:
            drop_postgres_database(url)
        tmp.cleanup()

    backend = "SQLite" if args.sqlite else "PostgreSQL"
    print(f"{n} traces of {mean_size:.0f} bytes into {backend}, batches of {args.batch}")
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"decode + validate only      {decode_us:7.1f} us/trace (CPU)")
    print(f"ingest_batch, wall          {wall / n * 1e6:7.1f} us/trace = {n / wall:,.0f} traces/s")
    print(
        f"ingest_batch, client CPU    {cpu_us:7.1f} us/trace (store part ~{cpu_us - decode_us:.0f})"
    )
    if not args.sqlite:
        print(f"PostgreSQL backend CPU      {server_us:7.1f} us/trace")
    print(f"replay of one batch, wall   {replay_us:7.1f} us/trace ({replay.duplicates} duplicates)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
