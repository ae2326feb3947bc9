"""From a number to the traces behind it, through the real CLI on SQLite and PostgreSQL.

A week of retrieval traffic (hit rate 0.6 for every tenant) and a last hour in which half
of tenant acme's traffic moved to retriever version v7, whose hit rate is 0.1. The real
`real_users_benchmark` job scores them (storing each trace's slices); then
`ragpulse traces` lists the misses of acme/v7, `traces show` prints one trace's scores,
and `ragpulse explain` attributes the drop to tenant acme, version v7.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from collector.jobs.outcomes.store import upsert_outcomes
from collector.store.models import Judgment
from collector.store.session import make_engine, make_session_factory
from collector.store.worst import trace_detail, worst_traces
from tests.fixtures.cli import ragpulse_in_process as ragpulse
from tests.jobs.helpers import add_trace

TENANTS = ("acme",) * 5 + ("globex",) * 3 + ("initech",) * 2


def _traffic(url: str, now: datetime) -> None:
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        for i in range(2000):  # the baseline: within the 7 days before the last hour
            ts = now - timedelta(hours=1) - timedelta(seconds=(i + 0.5) * 6.5 * 86400 / 2000)
            _trace(session, f"b{i}", ts, TENANTS[i % 10], "v6", hit=(i // 10) % 10 < 6)
        seen: dict[tuple[str, bool], int] = {}
        for i in range(300):  # the last hour
            ts = now - timedelta(seconds=(i + 0.5) * 3600 / 300)
            tenant = TENANTS[i % 10]
            v7 = tenant == "acme" and (i // 10) % 2 == 0
            k = seen[tenant, v7] = seen.get((tenant, v7), -1) + 1
            hit = k % 10 < (1 if v7 else 6)  # exactly 10% / 60% of each group
            _trace(session, f"w{i}", ts, tenant, "v7" if v7 else "v6", hit=hit)
        session.commit()
    engine.dispose()


def _trace(
    session: object, trace_id: str, ts: datetime, tenant: str, version: str, *, hit: bool
) -> None:
    add_trace(
        session,  # type: ignore[arg-type]
        trace_id,
        ts,
        purposes=("real_users_benchmark",),
        question="Как оформить возврат?" if tenant == "initech" else "How do I get a refund?",
        contexts=[{"id": "d1"}, {"id": "d2"}],
        relevant_ids=["d1" if hit else "d9"],
        tags={"tenant": tenant, "version": version},
        model="gpt-4o-mini",
    )


@pytest.mark.slow
def test_worst_traces_show_and_explain_through_the_cli(db_url: str, tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    _traffic(db_url, now)
    env = {"RAGPULSE_DATABASE__URL": db_url}
    done = ragpulse("jobs", "run", "real_users_benchmark", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    until = (now + timedelta(seconds=1)).isoformat()

    done = ragpulse(
        "traces", "--metric", "hit_rate@1", "--worst", "7", "--until", until, "--json",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == 7
    assert {r["value"] for r in rows} == {0.0}
    assert all(r["metric"] == "hit_rate@1" and r["trace_id"].startswith("w") for r in rows)
    assert all(
        now - timedelta(hours=1) <= datetime.fromisoformat(r["timestamp"]) <= now for r in rows
    )

    done = ragpulse(
        "traces", "--metric", "hit_rate@1", "--worst", "500", "--until", until, "--json",
        "--tenant", "acme", "--version", "v7", cwd=tmp_path, env=env,
    )  # fmt: skip
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    misses = [r for r in rows if r["value"] == 0.0]
    assert len(rows) == 75 and len(misses) == 67  # 75 acme/v7 traces, 8 hits
    assert {r["tenant"] for r in rows} == {"acme"}
    assert {r["slices"]["version"] for r in rows} == {"v7"}
    assert {r["slices"]["language"] for r in rows} == {"en"}

    done = ragpulse(
        "traces", "--metric", "hit_rate@1", "--until", until, "--tenant", "initech",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Как оформить возврат?" in done.stdout and "initech" in done.stdout

    done = ragpulse("traces", "show", misses[0]["trace_id"], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "hit_rate@1" in done.stdout and "0.000" in done.stdout and "version: v7" in done.stdout
    assert ragpulse("traces", "show", "nope", cwd=tmp_path, env=env).returncode == 1

    done = ragpulse("explain", "--metric", "hit_rate@1", "--until", until, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    headline = done.stdout.splitlines()[0]
    assert headline.startswith("hit_rate@1 fell 0.117 (0.6 -> 0.483)")
    assert "of the drop is tenant acme, version v7" in headline

    done = ragpulse(
        "explain", "--metric", "hit_rate@1", "--until", until, "--json", "--dimensions",
        "tenant,version,language,model", cwd=tmp_path, env=env,
    )  # fmt: skip
    found = json.loads(done.stdout)
    assert found["delta"] == pytest.approx(145 / 300 - 0.6)
    top = found["slices"][0]
    assert top["slice"] in (
        {"tenant": "acme", "version": "v7"},
        {"tenant": "acme"},
        {"version": "v7"},
    )
    assert top["fraction"] == pytest.approx(1.0, abs=0.1)
    assert top["low"] < top["contribution"] < top["high"] < 0
    by_name = {tuple(sorted(s["slice"].items())): s for s in found["slices"]}
    assert (("model", "gpt-4o-mini"),) not in by_name  # the whole traffic explains nothing
    assert abs(by_name[(("tenant", "globex"),)]["fraction"]) < 0.1

    done = ragpulse("traces", "--metric", "hit_rat@1", cwd=tmp_path, env=env)
    assert done.returncode == 2 and "did you mean hit_rate@1" in done.stderr


def test_judge_reasons_and_failed_evaluations(db_url: str) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    engine = make_engine(db_url)
    factory = make_session_factory(engine)
    with factory() as session:
        records = []
        for i, value in enumerate([0.9, 0.25, {"error": "JudgeTimeoutError"}, 0.5, 1.0]):
            ts = now - timedelta(minutes=5 * i + 1)
            add_trace(session, f"j{i}", ts, question=f"question {i}")
            records.append(
                {
                    "job": "rag_quality",
                    "trace_id": f"j{i}",
                    "trace_updated_at": ts,
                    "ts": ts,
                    "groups": {"tenant": "acme"},
                    "outcomes": {"faithfulness": value, "context_relevance": 0.5},
                    "slices": {"tenant": "acme", "language": "en"},
                }
            )
        upsert_outcomes(session, records)
        for parsed in (
            {"statements": ["Refunds take 14 days.", "They are free."]},
            {"verdicts": [{"item": 1, "supported": 1}, {"item": 2, "supported": 0}]},
        ):
            session.add(_judgment("j1", parsed))
        session.add(_judgment("j3", {"reason": "The answer ignores the second passage."}))
        session.commit()

        found = worst_traces(
            session,
            jobs=["rag_quality"],
            metric="faithfulness",
            since=now - timedelta(hours=1),
            until=now,
            limit=3,
        )
        assert [(f.trace_id, f.value) for f in found] == [("j1", 0.25), ("j3", 0.5), ("j0", 0.9)]
        assert found[0].reason == "1 of 2 rejected: #2 'They are free.'"
        assert found[1].reason == "The answer ignores the second passage."
        assert found[0].question == "question 1" and found[0].tenant == "acme"
        highest = worst_traces(
            session, jobs=["rag_quality"], metric="faithfulness", since=now - timedelta(hours=1),
            until=now, limit=1, order="highest",
        )  # fmt: skip
        assert [f.trace_id for f in highest] == ["j4"]
        failed = worst_traces(
            session, jobs=["rag_quality"], metric="faithfulness", since=now - timedelta(hours=1),
            until=now, errors=True,
        )  # fmt: skip
        assert [(f.trace_id, f.value, f.error) for f in failed] == [
            ("j2", None, "JudgeTimeoutError")
        ]
        none = worst_traces(
            session, jobs=["rag_quality"], metric="faithfulness", since=now - timedelta(hours=1),
            until=now, where={"tenant": "globex"},
        )  # fmt: skip
        assert none == []
        detail = trace_detail(session, "j1")
        assert detail is not None
        assert ("rag_quality", "faithfulness", 0.25) in detail.scores
        assert detail.reasons["faithfulness"].startswith("1 of 2 rejected")
    engine.dispose()


def _judgment(trace_id: str, parsed: dict[str, object]) -> Judgment:
    return Judgment(
        cache_key=f"k-{trace_id}-{len(str(parsed))}",
        metric="faithfulness",
        model="judge",
        prompt_version="1",
        input_hash="h",
        temperature=0.0,
        trace_id=trace_id,
        status="ok",
        parsed=parsed,
    )
