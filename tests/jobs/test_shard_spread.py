"""Three `ragpulse jobs run` processes started together share a job's shards (issue 31).

Run by the operator, the first process to reach the job leased all 32 shards before the
other two had registered, and they found nothing to do. Here three real CLI processes
are started one after another, with nothing to let them go together (unlike
`test_sharding.py`'s start file), on a judge job whose batches take about a second, so a
worker that claimed everything could not leave anything to the others.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from collector.store.models import JobOutcome
from collector.store.session import make_engine, make_session_factory
from tests.fixtures.llm_server import ScriptedLLM, auto_reply
from tests.jobs.helpers import add_trace

pytestmark = pytest.mark.timeout(240)
ROOT = Path(__file__).resolve().parents[2]
COUNT = 36


def _add(url: str, now: datetime) -> None:
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        for i in range(COUNT):
            add_trace(
                session,
                f"s{i}",
                now - timedelta(minutes=1 + i % 15),
                purposes=("judge",),
                question=f"What is item {i}?",
                answer=f"Item {i} is a test answer.",
                reference=f"Item {i} is a reference answer.",
                contexts=[{"id": "d1", "text": f"Item {i} is described here."}, {"id": "d2"}],
            )
        session.commit()
    engine.dispose()


def _jobs_run(url: str, server: ScriptedLLM, tmp: Path, i: int) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGPULSE_", "OPENAI_"))}
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "RAGPULSE_DATABASE__URL": url,
            "RAGPULSE_ALERTING__ENABLED": "false",
            "RAGPULSE_SCHEDULER__SHARDS": "12",
            "RAGPULSE_JUDGE__MODELS": "openai/judge-a",
            "RAGPULSE_JUDGE__API_BASE": server.base_url,
            "RAGPULSE_JUDGE__API_KEY": "sk-x",
            "RAGPULSE_JUDGE__MAX_CONCURRENCY": "4",
            "RAGPULSE_JUDGE__MAX_RETRIES": "0",
        }
    )
    return subprocess.Popen(
        [sys.executable, "-m", "ragpulse.cli", "jobs", "run", "rag_quality", "--json"],
        cwd=tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=(tmp / f"worker{i}.log").open("w"),
        text=True,
    )


def test_three_jobs_run_started_together_share_the_shards(
    postgres_url: str, tmp_path: Path, llm_server: ScriptedLLM
) -> None:
    _add(postgres_url, datetime.now(UTC))
    llm_server.fallback = auto_reply
    llm_server.latency_s = 0.1  # a worker's batch of a third of the traces: about a second
    processes = [_jobs_run(postgres_url, llm_server, tmp_path, i) for i in range(3)]
    reports: list[dict[str, Any]] = []
    for i, process in enumerate(processes):
        out, _ = process.communicate(timeout=200)
        log = (tmp_path / f"worker{i}.log").read_text()[-3000:]
        assert process.returncode == 0, log
        (report,) = json.loads(out)
        reports.append(report)
    shards = [r["shards"] for r in reports]
    assert sum(shards) == 12 and all(n >= 2 for n in shards), shards  # each took a share
    assert sum(r["new_traces"] for r in reports) == COUNT  # every trace once, by one of them
    engine = make_engine(postgres_url)
    try:
        with make_session_factory(engine)() as session:
            judged = session.scalars(
                select(JobOutcome.trace_id).where(JobOutcome.job == "rag_quality")
            ).all()
    finally:
        engine.dispose()
    assert sorted(judged) == sorted(f"s{i}" for i in range(COUNT))
