"""`ragpulse jobs run --json` reports each job's label folding as JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from collector.store.session import make_engine, make_session_factory
from migrations.runner import upgrade
from tests.fixtures.cli import ragpulse_in_process as ragpulse
from tests.jobs.helpers import add_trace


def test_jobs_run_json_reports_label_folding(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    upgrade(url)
    engine = make_engine(url)
    now = datetime.now(UTC)
    with make_session_factory(engine)() as session:
        for i in range(8):
            add_trace(
                session,
                f"t{i}",
                now - timedelta(minutes=i),
                purposes=("real_users_benchmark",),
                contexts=[{"id": "d1"}, {"id": "d2"}],
                relevant_ids=["d1"],
                tags={"tenant": "acme" if i % 2 else f"user-{i}"},
            )
        session.commit()
    engine.dispose()
    done = ragpulse(
        "jobs",
        "run",
        "--json",
        "real_users_benchmark",
        cwd=tmp_path,
        env={"RAGPULSE_DATABASE__URL": url, "RAGPULSE_LABELS__MAX_VALUES": "2"},
    )
    assert done.returncode == 0, done.stderr
    (report,) = json.loads(done.stdout)
    assert report["status"] == "ok" and report["new_traces"] == 8
    assert report["labels"] == {
        "tenant": {"seen": 5, "kept": 2, "folded": 3},
        "version": {"seen": 0, "kept": 0, "folded": 0},  # a group label by default
        "topic": {"seen": 0, "kept": 0, "folded": 0},  # no topics without stored vectors
    }
    assert "fold into 'other'" in done.stderr
