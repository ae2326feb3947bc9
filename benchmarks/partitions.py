"""Partitioned vs plain storage at 10M stored traces (issue 21), PostgreSQL, same run.

Two fresh databases: `ragpulse_bench_part` migrated to head (traces and job_outcomes
partitioned by day, `trace_keys`) and `ragpulse_bench_plain` migrated to 0010 (the plain
layout before rev. 0011). Each is filled server-side (generate_series) with `--traces`
synthetic traces spread evenly over the last `--days` days (~600 bytes each: question,
answer, two contexts, session, tenant tag, relevant ids) and one `job_outcomes` row per
trace for a job `bench` (two retrieval metrics, groups, slices). The partitioned fill
turns the key trigger off and fills `trace_keys` in one statement, for speed; everything
measured afterwards runs with it. Then, in each layout:

- ingest: `Ingestor.ingest_batch` of `--ingest` new ~2 KB traces (timestamps in the last
  hours) in batches of 2,000, one transaction each, as the consumer writes them: traces/s;
- incremental job run: an `IncrementalJob` (metrics mrr, hit_rate@5; windows 1h/24h/7d)
  whose watermark is the fill: a first run loads the 7 days of outcomes (not timed as
  the figure), the ingest adds its traces, then the run that evaluates them is timed, and
  a run with nothing new (the fixed cost of a run); also the candidate query alone
  (`TraceCursor.pending`), median of 5;
- worst traces: `collector.store.worst.worst_traces` of 1 h windows, median of 7;
- retention of the oldest day: `collector.store.retention.expire` (drops that day's
  partitions) against the DELETE of the same rows of `traces` and `job_outcomes` in the
  plain layout; then the tables' total size (heap + indexes + TOAST) and dead tuples, and
  the VACUUM that makes the deleted rows' space reusable (plain: traces and job_outcomes;
  partitioned: trace_keys, whose day's keys were deleted).

    .venv/bin/python -m benchmarks.partitions [--traces 10000000] [--days 30]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from collector.ingest.pipeline import Ingestor, RawMessage
from collector.jobs.run.definition import JobDefinition, JobEnvironment
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.windows.window import parse_windows
from collector.settings import load_settings
from collector.store import partitions
from collector.store.models import JobState
from collector.store.retention import expire
from collector.store.session import make_engine, make_session_factory
from collector.store.worst import worst_traces
from migrations.runner import upgrade
from tests.collector.traces import make_trace

CHUNK = 1_000_000
JOB = "bench"

FILL_TRACES = """
INSERT INTO traces (trace_id, timestamp, received_at, updated_at, source, question, answer,
                    contexts, session_id, user_id, turn, model, latency_ms, tags, relevant_ids)
SELECT 'syn-' || g, ts, ts, ts, 'json',
       'How do I renew my passport, question ' || g || '?',
       'Applications are submitted online or at the service centre nearest to your address. '
       || 'Processing takes no longer than thirty calendar days from submission.',
       json_build_array(
           json_build_object('id', 'doc-' || (g % 5000), 'score', 0.91,
                             'text', 'Passports are renewed at the service centre.'),
           json_build_object('id', 'doc-' || (g % 7001), 'score', 0.72,
                             'text', 'Processing takes no longer than thirty days.')),
       'session-' || (g / 4), 'user-' || (g % 100000), g % 4, 'gpt-4o-mini',
       800 + g % 1500,
       jsonb_build_object('tenant', CASE WHEN g % 10 < 5 THEN 'acme'
                                         WHEN g % 10 < 8 THEN 'globex' ELSE 'initech' END),
       jsonb_build_array('doc-' || (g % 5000))
FROM (SELECT g, CAST(:start AS timestamptz)
                + (g::float8 / :rows) * :span * interval '1 second' AS ts
      FROM generate_series(:lo, :hi) AS g) AS s
"""

FILL_OUTCOMES = """
INSERT INTO job_outcomes (job, trace_id, trace_updated_at, ts, groups, outcomes, slices)
SELECT :job, trace_id, updated_at, timestamp, tags,
       jsonb_build_object('mrr', round(random()::numeric, 4),
                          'hit_rate@5', CASE WHEN random() < 0.7 THEN 1 ELSE 0 END),
       tags || '{"language": "en", "model": "gpt-4o-mini"}'
FROM traces WHERE id BETWEEN :lo AND :hi
"""


@dataclass
class Layout:
    name: str
    url: str
    engine: Engine
    figures: dict[str, Any] = field(default_factory=dict)


def _median_s(run: Callable[[int], object], repeat: int) -> float:
    times = []
    for i in range(repeat):
        started = time.perf_counter()
        run(i)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _create(admin: Engine, base: str, name: str) -> str:
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        conn.execute(text(f"CREATE DATABASE {name}"))
    return make_url(base).set(database=name).render_as_string(hide_password=False)


def _fill(layout: Layout, rows: int, start: datetime, end: datetime) -> None:
    engine = layout.engine
    part = layout.name == "partitioned"
    started = time.perf_counter()
    with engine.begin() as conn:
        if part:
            days = [start.date() + timedelta(days=i) for i in range((end - start).days + 2)]
            partitions.ensure_partitions(conn, days)
            conn.execute(text("ALTER TABLE traces DISABLE TRIGGER ragpulse_claim_trace_key"))
    span = end.timestamp() - start.timestamp()
    for lo in range(1, rows + 1, CHUNK):
        hi = min(rows, lo + CHUNK - 1)
        with engine.begin() as conn:
            conn.execute(
                text(FILL_TRACES),
                {"start": start, "span": span, "rows": rows, "lo": lo, "hi": hi},
            )
            if part:
                conn.execute(
                    text(
                        "INSERT INTO trace_keys SELECT trace_id, "
                        "CAST(timestamp AT TIME ZONE 'UTC' AS date) FROM traces "
                        "WHERE id BETWEEN :lo AND :hi"
                    ),
                    {"lo": lo, "hi": hi},
                )
        print(f"  {layout.name}: {hi:,} traces ({time.perf_counter() - started:.0f} s)", flush=True)
    with engine.begin() as conn:
        if part:
            conn.execute(text("ALTER TABLE traces ENABLE TRIGGER ragpulse_claim_trace_key"))
        top = conn.execute(text("SELECT max(id) FROM traces")).scalar_one()
    for lo in range(1, top + 1, CHUNK):
        with engine.begin() as conn:
            conn.execute(text(FILL_OUTCOMES), {"job": JOB, "lo": lo, "hi": lo + CHUNK - 1})
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(
            text("VACUUM ANALYZE traces, job_outcomes, trace_keys" if part else "VACUUM ANALYZE")
        )
    layout.figures["fill_s"] = time.perf_counter() - started
    print(f"  {layout.name}: filled in {layout.figures['fill_s']:.0f} s", flush=True)


def _messages(count: int, now: datetime) -> list[RawMessage]:
    out = []
    for i in range(count):
        record = make_trace(i, "ru" if i % 2 else "en")
        record["trace_id"] = f"new-{i:08d}"
        record["timestamp"] = (now - timedelta(hours=2) + timedelta(seconds=i * 0.3)).isoformat()
        value = json.dumps(record, ensure_ascii=False).encode()
        out.append(RawMessage("rag.traces", 0, i, None, value))
    return out


def _ingest(layout: Layout, messages: list[RawMessage], batch: int) -> None:
    ingestor = Ingestor(load_settings())
    factory = make_session_factory(layout.engine)
    started = time.perf_counter()
    stored = 0
    for lo in range(0, len(messages), batch):
        with factory() as session:
            stored += ingestor.ingest_batch(session, messages[lo : lo + batch]).stored
            session.commit()
    elapsed = time.perf_counter() - started
    if stored != len(messages):
        raise RuntimeError(f"{layout.name}: stored {stored} of {len(messages)}")
    layout.figures["ingest_per_s"] = len(messages) / elapsed
    # a replay of the first batch: every trace a duplicate
    started = time.perf_counter()
    with factory() as session:
        again = ingestor.ingest_batch(session, messages[:batch])
        session.commit()
    if again.duplicates != batch:
        raise RuntimeError(f"{layout.name}: replay stored {again.stored}")
    layout.figures["replay_per_s"] = batch / (time.perf_counter() - started)


def _job(layout: Layout) -> IncrementalJob:
    env = JobEnvironment(
        session_factory=make_session_factory(layout.engine),
        windows=parse_windows(["1h", "24h", "7d"]),
        group_labels=["tenant"],
    )
    return IncrementalJob(JobDefinition(JOB, ("mrr", "hit_rate@5"), "benchmark"), env)


def _measure(layout: Layout, args: argparse.Namespace, now: datetime) -> None:
    figures = layout.figures
    engine = layout.engine
    with Session(engine) as session:
        session.merge(JobState(job=JOB, watermark=now))
        session.commit()
    job = _job(layout)
    started = time.perf_counter()
    first = job.run()
    figures["first_run_s"] = time.perf_counter() - started
    print(f"  {layout.name}: first run (loads 7 d of outcomes) {first.seconds:.1f} s", flush=True)
    _ingest(layout, _messages(args.ingest, now), args.batch)
    print(f"  {layout.name}: ingest {figures['ingest_per_s']:,.0f} traces/s", flush=True)
    report = job.run()
    if report.new_traces != args.ingest:
        raise RuntimeError(f"{layout.name}: the run evaluated {report.new_traces} traces")
    figures["incremental_run_s"] = report.seconds
    figures["idle_run_s"] = _median_s(lambda _: job.run(), 3)
    cursor = job._cursor  # the candidate query alone, as a run sends it
    with Session(engine) as session:
        figures["pending_ms"] = 1000 * _median_s(
            lambda _: cursor.pending(session, datetime.now(UTC), job.definition.candidates, None),
            5,
        )

    def worst(i: int) -> None:
        until = now - timedelta(hours=7 + 7 * i)
        with Session(engine) as session:
            found = worst_traces(
                session, jobs=[JOB], metric="mrr", since=until - timedelta(hours=1), until=until
            )
        if len(found) != 20:
            raise RuntimeError(f"{layout.name}: {len(found)} worst traces")

    figures["worst_ms"] = 1000 * _median_s(worst, 7)


def _sizes(engine: Engine) -> dict[str, float]:
    out = {}
    with engine.connect() as conn:
        conn.execute(text("SELECT pg_stat_force_next_flush()"))
        for table in ("traces", "job_outcomes", "trace_keys"):
            exists = conn.execute(text("SELECT to_regclass(:t)"), {"t": table}).scalar_one()
            if exists is None:
                continue
            # a plain table is no partition tree: then the table alone
            size, dead = conn.execute(
                text(
                    "SELECT sum(pg_total_relation_size(r.relid)), "
                    "coalesce(sum(s.n_dead_tup), 0) FROM ("
                    "  SELECT relid FROM pg_partition_tree(:t) "
                    "  UNION SELECT CAST(:t AS regclass)) r "
                    "LEFT JOIN pg_stat_user_tables s ON s.relid = r.relid"
                ),
                {"t": table},
            ).one()
            out[f"{table}_gb"] = float(size) / 1e9
            out[f"{table}_dead"] = float(dead)
    return out


def _retention(layout: Layout, cutoff: datetime) -> None:
    figures = layout.figures
    figures["before"] = _sizes(layout.engine)
    started = time.perf_counter()
    if layout.name == "partitioned":
        report = expire(layout.engine, cutoff)
        figures["expired_traces"] = report.traces
    else:
        with layout.engine.begin() as conn:
            figures["expired_traces"] = conn.execute(
                text("DELETE FROM traces WHERE timestamp < :c"), {"c": cutoff}
            ).rowcount
            conn.execute(text("DELETE FROM job_outcomes WHERE ts < :c"), {"c": cutoff})
    figures["retention_s"] = time.perf_counter() - started
    time.sleep(1.0)
    figures["after"] = _sizes(layout.engine)
    # what makes the deleted rows' space reusable: the plain tables' dead rows, the keys'
    tables = "trace_keys" if layout.name == "partitioned" else "traces, job_outcomes"
    started = time.perf_counter()
    with layout.engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text(f"VACUUM {tables}"))
    figures["vacuum_s"] = time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=10_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--ingest", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=2_000)
    parser.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--keep", action="store_true", help="keep the two databases")
    args = parser.parse_args()

    free = shutil.disk_usage("/").free / 1e9
    print(f"free disk: {free:.0f} GB; {args.traces:,} traces over {args.days} days", flush=True)
    admin = create_engine(args.url, isolation_level="AUTOCOMMIT")
    names = {"partitioned": "ragpulse_bench_part", "plain": "ragpulse_bench_plain"}
    layouts = []
    try:
        for name, db in names.items():
            url = _create(admin, args.url, db)
            upgrade(url, "head" if name == "partitioned" else "0010")
            layouts.append(Layout(name, url, make_engine(url)))
        now = datetime.now(UTC)
        start = now - timedelta(days=args.days)
        for layout in layouts:
            _fill(layout, args.traces, start, now - timedelta(hours=6))
        for layout in layouts:
            _measure(layout, args, now)
        # a second ingest round, the layouts taking turns again (the machine is shared)
        later = [
            dataclasses.replace(m, value=(m.value or b"").replace(b'"new-', b'"again-'))
            for m in _messages(args.ingest, now)
        ]
        for layout in layouts:
            first = layout.figures["ingest_per_s"]
            _ingest(layout, later, args.batch)
            layout.figures["ingest_rounds"] = [first, layout.figures["ingest_per_s"]]
            layout.figures["ingest_per_s"] = statistics.mean(layout.figures["ingest_rounds"])
        cutoff = partitions.day_start(start.date() + timedelta(days=2))
        for layout in layouts:
            _retention(layout, cutoff)
        print(json.dumps({x.name: x.figures for x in layouts}, indent=1, default=str))
        _print(layouts, cutoff)
    finally:
        for layout in layouts:
            layout.engine.dispose()
        if not args.keep:
            with admin.connect() as conn:
                for db in names.values():
                    conn.execute(text(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
        admin.dispose()


def _print(layouts: list[Layout], cutoff: datetime) -> None:
    part, plain = (x.figures for x in layouts)
    rows = [
        ("fill (server-side, s)", "fill_s", "{:.0f}"),
        ("ingest (traces/s)", "ingest_per_s", "{:,.0f}"),
        ("replayed batch (traces/s)", "replay_per_s", "{:,.0f}"),
        ("incremental job run, new traces (s)", "incremental_run_s", "{:.2f}"),
        ("job run, nothing new (s)", "idle_run_s", "{:.2f}"),
        ("candidate query (ms)", "pending_ms", "{:.1f}"),
        ("worst 20 of 1 h (ms)", "worst_ms", "{:.1f}"),
        (f"retention before {cutoff:%Y-%m-%d} (s)", "retention_s", "{:.2f}"),
        ("VACUUM after it (s)", "vacuum_s", "{:.2f}"),
        ("traces expired", "expired_traces", "{:,}"),
    ]
    print(f"{'':40} {'partitioned':>14} {'plain':>14}")
    for label, key, fmt in rows:
        print(f"{label:40} {fmt.format(part[key]):>14} {fmt.format(plain[key]):>14}")
    for when in ("before", "after"):
        for key in sorted(set(part[when]) | set(plain[when])):
            values = [f.get(when, {}).get(key) for f in (part, plain)]
            shown = ["-" if v is None else f"{v:,.2f}" for v in values]
            print(f"{when + ' ' + key:40} {shown[0]:>14} {shown[1]:>14}")


if __name__ == "__main__":
    main()
