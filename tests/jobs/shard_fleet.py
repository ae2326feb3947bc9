"""Worker-process fleets for the sharding tests: start `tests.jobs.shard_worker` processes
on one database, let them go together, wait for them, and read what a job wrote; and the
reference they are compared with, one in-process worker running the job whole
(`scheduler.shards = 0`, the unsharded path) on a copy of the data (the two databases:
the `two_databases` fixture of `tests/jobs/conftest.py`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from collector.jobs.scheduler import build_runner
from collector.settings import load_settings
from collector.store.models import MetricResult
from collector.store.session import make_engine, make_session_factory
from ragpulse.job_setup import job_environment
from tests.jobs.shard_worker import HashEncoder

WORKER = (sys.executable, "-m", "tests.jobs.shard_worker")
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Worker:
    process: subprocess.Popen[str]
    log: Path

    def reports(self) -> list[dict[str, Any]]:
        """The runs it reported (read once it has exited, or been killed)."""
        assert self.process.stdout is not None
        lines = [json.loads(line) for line in self.process.stdout.read().splitlines() if line]
        return [r for r in lines if "status" in r]


def start(
    job: str, url: str, env: dict[str, str], count: int, tmp: Path, *flags: str
) -> list[Worker]:
    """`count` workers of `job` on `url` (with `flags`), let go together once all have
    started."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RAGPULSE_", "OPENAI_"))}
    clean.update(
        {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "RAGPULSE_DATABASE__URL": url,
            "RAGPULSE_ALERTING__ENABLED": "false",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            **env,
        }
    )
    go = tmp / "go"
    workers = []
    for i in range(count):
        log = tmp / f"worker{i}.log"
        process = subprocess.Popen(
            [*WORKER, job, "--until-idle", "--start-file", str(go), *flags],
            cwd=ROOT,
            env=clean,
            stdout=subprocess.PIPE,
            stderr=log.open("w"),
            text=True,
        )
        workers.append(Worker(process, log))
    for w in workers:  # each has registered as a live worker
        assert w.process.stdout is not None
        line = w.process.stdout.readline()
        assert '"ready"' in line, w.log.read_text()[-3000:]
    go.touch()
    return workers


def finish(workers: list[Worker], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    for w in workers:
        try:
            code = w.process.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in workers:
                other.process.kill()
            raise AssertionError(f"worker did not finish: {w.log.read_text()[-3000:]}") from None
        assert code == 0, w.log.read_text()[-3000:]


def latest(engine: Engine, job: str) -> dict[tuple[str, str, str], tuple[Any, ...]]:
    """The job's last written results: (metric, window, group) -> value, n, CI, counts."""
    with make_session_factory(engine)() as session:
        last = session.scalar(
            select(func.max(MetricResult.computed_at)).where(MetricResult.job == job)
        )
        rows = session.scalars(
            select(MetricResult).where(MetricResult.job == job, MetricResult.computed_at == last)
        ).all()
    return {
        (r.metric, r.window, r.group_key): (
            r.value,
            r.n,
            r.ci_lower,
            r.ci_upper,
            r.skipped,
            r.errors,
            r.skip_reasons,
            r.signature,
        )
        for r in rows
    }


def single_worker(
    url: str, job: str, embedder: Any = None, **settings: Any
) -> dict[tuple[str, str, str], Any]:
    """The job run whole, once, by one in-process worker (the unsharded path), with the
    hashing encoder unless an `embedder` is given."""
    cfg = load_settings(
        database={"url": url}, scheduler={"shards": 0}, alerting={"enabled": False}, **settings
    )
    engine = make_engine(url)
    try:
        runner = build_runner(
            cfg,
            engine,
            job_environment(cfg, engine, embedder=embedder or HashEncoder()),
            names=[job],
        )
        assert runner.sharding is None
        (report,) = runner.run_many()
        assert report.status == "ok" and report.shards is None
        return latest(engine, job)
    finally:
        engine.dispose()


def fill(urls: tuple[str, ...], add: Callable[[Any], object]) -> None:
    """The same rows (`add(session)`) into every database of `urls`."""
    for url in urls:
        engine = make_engine(url)
        with make_session_factory(engine)() as session:
            add(session)
            session.commit()
        engine.dispose()


def assert_same_results(
    got: dict[tuple[str, str, str], tuple[Any, ...]],
    want: dict[tuple[str, str, str], tuple[Any, ...]],
) -> None:
    """Every series of `want` in `got`: counts, reasons and signatures exactly; values and
    intervals to the last bits of the sums, which workers add in their own order."""
    assert got.keys() == want.keys()
    for key, theirs in want.items():
        mine = got[key]
        assert mine[1] == theirs[1] and mine[4:] == theirs[4:], key
        for a, b in zip(mine[:4], theirs[:4], strict=True):
            if b is None or isinstance(b, int):
                assert a == b, key
            else:
                assert a == pytest.approx(b, rel=1e-9, abs=1e-12), key
