"""Worst-traces benchmark: `ragpulse traces --worst 20 --since 1h` over 10M stored outcomes.

A fresh PostgreSQL database (`--url`, default the local test server; the database
`ragpulse_bench_worst` is created and dropped) is migrated to head, then `job_outcomes`
is filled server-side (generate_series) with `--rows` outcomes of one job over the last
`--days` days: each row has a faithfulness score (Beta-like: mostly high, a tail near 0),
a context_relevance score or an error for 2% of the rows, a tenant (50/30/20%) in
`groups` and `slices`. Then `collector.store.worst.worst_traces` is timed (median of
`--repeat` runs, each over a different 1 h window) in three ways:

- `window scan` — the shipped schema: the `(job, ts)` index narrows to the window;
- `window, one tenant` — the same with `--tenant`;
- `explain` — `ragpulse explain` of the last hour against the days before it (one
  grouped query over the baseline's rows, attribution in numpy);
- `no index` (the reference for what the index buys): the same query after dropping
  `ix_job_outcomes_job_ts`, so PostgreSQL reads the whole table.

Reported: each median in ms and the no-index time as a ratio of the indexed one.

Run: `.venv/bin/python -m benchmarks.worst_traces [--rows 10000000] [--days 7]
[--url postgresql+psycopg://postgres@127.0.0.1:5432/test]`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from collector.jobs.queries.explain import explain
from collector.store import partitions
from collector.store.worst import worst_traces
from migrations.runner import upgrade

DB = "ragpulse_bench_worst"

FILL = """
INSERT INTO job_outcomes (job, trace_id, trace_updated_at, ts, groups, outcomes, slices)
SELECT 'rag_quality',
       'trace-' || g,
       ts, ts,
       jsonb_build_object('tenant', tenant),
       jsonb_build_object(
           'faithfulness', round((1 - power(random(), 4))::numeric, 4),
           'context_relevance',
           CASE WHEN random() < 0.02 THEN '{"error": "JudgeTimeoutError"}'::jsonb
                ELSE to_jsonb(round(random()::numeric, 4)) END),
       jsonb_build_object('tenant', tenant, 'language', CASE WHEN g % 3 = 0 THEN 'en'
                                                            ELSE 'ru' END)
FROM (
    SELECT g,
           :start + (g::float8 / :rows) * :span * interval '1 second' AS ts,
           CASE WHEN g % 10 < 5 THEN 'acme' WHEN g % 10 < 8 THEN 'globex'
                ELSE 'initech' END AS tenant
    FROM generate_series(1, :rows) AS g
) AS s
"""


def _median_ms(run: Callable[[int], object], repeat: int) -> float:
    times = []
    for i in range(repeat):
        started = time.perf_counter()
        run(i)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()

    admin = create_engine(args.url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"DROP DATABASE IF EXISTS {DB}"))
        conn.execute(text(f"CREATE DATABASE {DB}"))
    url = make_url(args.url).set(database=DB).render_as_string(hide_password=False)
    try:
        upgrade(url)
        engine = create_engine(url)
        end = datetime.now(UTC)
        start = end - timedelta(days=args.days)
        started = time.perf_counter()
        with engine.begin() as conn:
            # the daily partitions the service keeps (rev. 0011); nothing on a plain layout
            days = int(args.days) + 2
            partitions.ensure_partitions(
                conn, [end.date() - timedelta(days=i) for i in range(days)]
            )
            conn.execute(
                text(FILL),
                {"start": start, "span": end.timestamp() - start.timestamp(), "rows": args.rows},
            )
            conn.execute(text("ANALYZE job_outcomes"))
        print(
            f"filled {args.rows:,} outcomes over {args.days:g} days "
            f"in {time.perf_counter() - started:.0f} s"
        )

        def query(i: int, tenant: str | None = None) -> None:
            until = end - timedelta(hours=1 + 7 * i)
            with Session(engine) as session:
                found = worst_traces(
                    session,
                    jobs=["rag_quality"],
                    metric="faithfulness",
                    since=until - timedelta(hours=1),
                    until=until,
                    limit=20,
                    where={"tenant": tenant} if tenant else None,
                )
            if len(found) != 20:
                raise RuntimeError(f"expected 20 traces, got {len(found)}")

        per_hour = args.rows / (args.days * 24)
        indexed = _median_ms(query, args.repeat)
        tenant = _median_ms(lambda i: query(i, "globex"), args.repeat)

        def errors(i: int) -> None:
            with Session(engine) as session:
                worst_traces(
                    session,
                    jobs=["rag_quality"],
                    metric="context_relevance",
                    since=end - timedelta(hours=2 + i),
                    until=end - timedelta(hours=1 + i),
                    errors=True,
                )

        errors_ms = _median_ms(errors, args.repeat)

        def explained(i: int) -> None:
            with Session(engine) as session:
                made = explain(
                    session,
                    jobs=["rag_quality"],
                    metric="faithfulness",
                    since=end - timedelta(hours=1 + i),
                    until=end - timedelta(hours=i),
                    baseline=timedelta(days=args.days - 1),
                    dimensions=("tenant", "model", "version", "language"),
                )
            if made is None:
                raise RuntimeError("nothing to explain")

        explain_ms = _median_ms(explained, 3)
        with engine.begin() as conn:
            conn.execute(text("DROP INDEX ix_job_outcomes_job_ts"))
            conn.execute(text("ANALYZE job_outcomes"))
        no_index = _median_ms(query, max(3, args.repeat // 2))
        print(f"{args.rows:,} outcomes, ~{per_hour:,.0f} per 1 h window; worst 20, median of runs:")
        print(f"  window scan (shipped index)   {indexed:8.1f} ms")
        print(f"  window, one tenant            {tenant:8.1f} ms")
        print(f"  newest 20 errors (--errors)   {errors_ms:8.1f} ms")
        print(f"  explain: 1 h vs {args.days - 1:g} d before  {explain_ms:8.1f} ms")
        print(f"  no index (reference)          {no_index:8.1f} ms   ({no_index / indexed:.0f}x)")
        engine.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)"))
        admin.dispose()


if __name__ == "__main__":
    main()
