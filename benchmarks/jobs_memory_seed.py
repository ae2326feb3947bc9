"""The stored state of the jobs-memory benchmark (`jobs_memory.py`), filled server-side.

`seed` fills a database migrated by the measured revision with `rows` synthetic traces
spread evenly over the 7 days (less an hour) before `end`, and one `job_outcomes` row per
trace for the measured job, as its earlier runs would have left them: its per-trace
metrics' values (`ux`: cache_hit_rate and cache_hit_rate_actual; its dataset metrics,
context_preservation and multi_turn_consistency, are computed from traces, not stored per
trace), the group labels tenant/version in `groups` and the slices
tenant/model/version/language. The job's `job_state` watermark is the newest seeded
version, so a run finds nothing new; `add_new` then adds traces that a run must score.
Everything is generate_series SQL (a million rows in seconds, where COPY from Python
would take minutes), with the trace-key trigger off during the fill and `trace_keys`
filled in one statement, like `partitions.py`.

Only the tables and columns every revision since the partitioned layout (rev. 0011) has
are written: the measured code decides what else it keeps (e.g. aggregates it builds).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, text

CHUNK = 1_000_000
SPAN = timedelta(days=7) - timedelta(hours=1)
"""The seeded traces' span: the longest window less an hour, so every seeded row is still
in the 7-day window of a run started within the hour (the check of the counts)."""
TENANT = "CASE WHEN g % 10 < 5 THEN 'acme' WHEN g % 10 < 8 THEN 'globex' ELSE 'initech' END"
DISTINCT_QUESTIONS = 2000
"""Distinct question texts: what the UX job encodes is bounded whatever the row count (the
embedding store keeps a text's vector once)."""

TRACES = f"""
INSERT INTO traces (trace_id, timestamp, received_at, updated_at, source, question, answer,
                    contexts, session_id, user_id, turn, model, latency_ms, cache_hit, tags)
SELECT :prefix || g, ts, ts, :updated, 'json',
       CASE WHEN g % 3 = 0
            THEN 'Как продлить пропуск, вопрос ' || (g % {DISTINCT_QUESTIONS}) || '?'
            ELSE 'How do I renew my badge, question ' || (g % {DISTINCT_QUESTIONS}) || '?' END,
       'Badges are renewed at the front desk within three business days.',
       CASE WHEN g % 50 = 0 THEN '[]'::json ELSE json_build_array(
           json_build_object('id', 'doc-' || (g % 5000), 'score', 0.91,
                             'text', 'Badges are renewed at the front desk.'))
       END,
       :prefix || 'session-' || (g / 4), 'user-' || (g % 100000), g % 4, 'gpt-4o-mini',
       800 + g % 1500, g % 5 = 0,
       jsonb_build_object('tenant', {TENANT},
                          'version', 'v' || (1 + (3 * g) / (CAST(:rows AS bigint) + 1)))
FROM (SELECT g, CAST(:start AS timestamptz)
                + (g::float8 / CAST(:rows AS bigint)) * CAST(:span AS float8)
                  * interval '1 second' AS ts
      FROM generate_series(CAST(:lo AS bigint), CAST(:hi AS bigint)) AS g) AS s
"""
"""`updated` NULL: a trace's version is its timestamp (seeded); else the time it came."""

OUTCOMES: dict[str, str] = {
    "ux": "jsonb_build_object('cache_hit_rate', CASE WHEN random() < 0.3 THEN 1.0 ELSE 0.0 END, "
    "'cache_hit_rate_actual', CASE WHEN cache_hit THEN 1.0 ELSE 0.0 END, "
    # log-normal latencies (median 1.5 s, sigma 0.6, Box-Muller): the spread decides how
    # many DDSketch bins a minute fills (job_bucket_bins), not the trace count
    "'latency_ms', round(CAST(1500 * exp(0.6 * sqrt(-2 * ln(1 - random())) "
    "* cos(2 * pi() * random())) AS numeric), 1))",
    "retrieval_health": "jsonb_build_object('retrieval_empty_rate', "
    "CASE WHEN json_array_length(contexts) = 0 THEN 1.0 ELSE 0.0 END)",
}
"""Per job: its stored per-trace outcomes (`job_outcomes.outcomes`) as SQL over a trace."""

FILL_OUTCOMES = """
INSERT INTO job_outcomes (job, trace_id, trace_updated_at, ts, groups, outcomes, slices)
SELECT :job, trace_id, updated_at, timestamp, tags, {outcomes},
       tags || jsonb_build_object('model', model, 'language',
                                  CASE WHEN question LIKE 'Как%' THEN 'ru' ELSE 'en' END)
FROM traces WHERE id BETWEEN :lo AND :hi AND trace_id LIKE 'seed-%'
"""


def make_partitions(conn: Connection, start: datetime, end: datetime) -> None:
    """The daily partitions of the seeded days (what maintenance would have made), so
    rows do not pile up in the default partition."""
    from collector.store import partitions

    days = [start.date() + timedelta(days=i) for i in range((end - start).days + 2)]
    partitions.ensure_partitions(conn, days)


def user_triggers(conn: Connection, enable: bool) -> None:
    conn.execute(text(f"ALTER TABLE traces {'ENABLE' if enable else 'DISABLE'} TRIGGER USER"))


def fill_keys(conn: Connection, prefix: str) -> None:
    """`trace_keys` rows of the traces just filled with the trigger off (when it exists)."""
    if conn.execute(text("SELECT to_regclass('trace_keys')")).scalar_one() is None:
        return
    conn.execute(
        text(
            "INSERT INTO trace_keys SELECT trace_id, "
            "CAST(timestamp AT TIME ZONE 'UTC' AS date) FROM traces "
            "WHERE trace_id LIKE :p ON CONFLICT DO NOTHING"
        ),
        {"p": prefix + "%"},
    )


def seed(engine: Engine, job: str, rows: int, end: datetime) -> None:
    """`rows` traces over the `SPAN` before `end` and their outcomes of `job`, evaluated
    up to the newest (`job_state`)."""
    if job not in OUTCOMES:
        raise ValueError(f"no seeded outcomes for job {job!r}; known: {', '.join(OUTCOMES)}")
    start = end - SPAN
    with engine.begin() as conn:
        make_partitions(conn, start, end)
        user_triggers(conn, enable=False)
    for lo in range(1, rows + 1, CHUNK):
        hi = min(rows, lo + CHUNK - 1)
        with engine.begin() as conn:
            conn.execute(
                text(TRACES.replace(":updated", "ts")),
                {
                    "prefix": "seed-",
                    "start": start,
                    "span": SPAN.total_seconds(),
                    "rows": rows,
                    "lo": lo,
                    "hi": hi,
                },
            )
    with engine.begin() as conn:
        fill_keys(conn, "seed-")
        user_triggers(conn, enable=True)
        top = conn.execute(text("SELECT coalesce(max(id), 0) FROM traces")).scalar_one()
    fill = FILL_OUTCOMES.format(outcomes=OUTCOMES[job])
    for lo in range(1, top + 1, CHUNK):
        with engine.begin() as conn:
            conn.execute(text(fill), {"job": job, "lo": lo, "hi": lo + CHUNK - 1})
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO job_state (job, watermark, last_status, last_message) "
                "SELECT :job, max(updated_at), 'ok', 'seeded by benchmarks/jobs_memory.py' "
                "FROM traces"
            ),
            {"job": job},
        )
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE"))


def add_new(engine: Engine, count: int, end: datetime, now: datetime) -> None:
    """`count` traces arriving now, their timestamps spread over the minutes after `end`
    (the last seeded one): the next run has exactly these to score."""
    span = max(1.0, (now - end).total_seconds() - 1.0)
    with engine.begin() as conn:
        conn.execute(
            text(TRACES.replace(":updated", "CAST(:now AS timestamptz)")),
            {
                "prefix": "new-",
                "start": end,
                "span": span,
                "rows": count,
                "lo": 1,
                "hi": count,
                "now": now,
            },
        )
