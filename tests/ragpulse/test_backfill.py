"""`ragpulse jobs backfill`: past windows in metric_results and as OpenMetrics Prometheus loads."""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import func, select

from collector.store.models import MetricResult
from collector.store.session import make_engine, make_session_factory
from migrations.runner import upgrade
from tests.fixtures.cli import ragpulse_in_process as ragpulse
from tests.jobs.helpers import add_retrieval_traces

PROMTOOL = shutil.which("promtool")
STEP = 6 * 3600


def _traces(url: str, now: datetime) -> list[tuple[datetime, float]]:
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        hits = add_retrieval_traces(session, now, 300, 50, seed=3)
        session.commit()
    engine.dispose()
    return hits


def _rows(url: str) -> list[MetricResult]:
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        rows = list(
            session.scalars(
                select(MetricResult).where(
                    MetricResult.metric == "hit_rate@1",
                    MetricResult.window == "24h",
                    MetricResult.group_key == "",
                )
            )
        )
    engine.dispose()
    return rows


@pytest.mark.slow
def test_backfill_writes_past_windows_and_openmetrics(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'b.db'}"
    upgrade(url)
    now = datetime.now(UTC)
    hits = _traces(url, now)
    out = tmp_path / "history.om"
    argv = ["jobs", "backfill", "real_users_benchmark", "--since", "1d", "--step", "6h"]
    env = {"RAGPULSE_DATABASE__URL": url}
    done = ragpulse(*argv, "--output", str(out), "--no-progress", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "real_users_benchmark   ok       steps=5" in done.stdout
    rows = _rows(url)
    assert len(rows) == 5
    for row in rows:
        at = row.computed_at.replace(tzinfo=UTC)
        assert at.timestamp() % STEP == 0
        inside = [h for ts, h in hits if at - timedelta(hours=24) <= ts <= at]
        assert row.n == len(inside)
        assert row.value == pytest.approx(np.mean(inside), abs=1e-12)
    # again: the same rows are replaced, not added
    again = ragpulse(*argv, "--no-progress", cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr
    assert len(_rows(url)) == 5
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        drift_rows = session.scalar(
            select(func.count()).select_from(MetricResult).where(MetricResult.window == "mde")
        )
    engine.dispose()
    assert drift_rows and drift_rows > 0

    text = out.read_text()
    assert text.endswith("# EOF\n")
    if PROMTOOL is None:
        pytest.skip("promtool is not installed (Debian package prometheus)")
    data = tmp_path / "tsdb"
    made = subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(out), str(data)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    (data / "wal").mkdir()  # promtool tsdb dump reads a WAL, which back-filled data has not
    dump = subprocess.run(
        [PROMTOOL, "tsdb", "dump", str(data)], capture_output=True, text=True, timeout=120
    )
    assert dump.returncode == 0, dump.stderr
    loaded = {}
    for line in dump.stdout.splitlines():
        if line.startswith('{__name__="ragpulse_metric_value"') and 'window="24h"' in line:
            if 'metric="hit_rate@1"' in line and 'tenant=""' not in line and "tenant=" in line:
                continue
            if 'metric="hit_rate@1"' in line:
                value, ms = line.rsplit(" ", 2)[1:]
                loaded[int(ms) // 1000] = float(value)
    expected = {int(r.computed_at.replace(tzinfo=UTC).timestamp()): r.value for r in rows}
    assert loaded == pytest.approx(expected)
    assert re.search(r'__name__="ragpulse_drift_score".*detector="page"', dump.stdout)
