"""Every user-fixable failure of the CLI ends in one line on stderr and exit code 2, never a
traceback: missing or unreachable databases, unmigrated ones, an unreachable judge. The
commands run as real subprocesses against real SQLite files and a real PostgreSQL."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from migrations.runner import upgrade
from tests.fixtures.db import create_postgres_database, drop_postgres_database, postgres_admin_url
from tests.jobs.helpers import add_trace

pytestmark = pytest.mark.timeout(180)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ragpulse(
    *argv: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RAGPULSE_", "OPENAI_"))}
    clean["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    clean.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "ragpulse.cli", *argv],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=170,
    )


def assert_one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> str:
    """Exit 2, stderr exactly one `ragpulse: ...` line holding `words`, no traceback."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ragpulse: ")
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


# --- migrate ---------------------------------------------------------------------------


def test_migrate_a_postgresql_database_that_does_not_exist(tmp_path: Path) -> None:
    name = f"ragpulse_missing_{uuid.uuid4().hex[:10]}"
    url = make_url(postgres_admin_url()).set(database=name, password="hunter2")
    done = ragpulse(
        "migrate",
        cwd=tmp_path,
        env={"RAGPULSE_DATABASE__URL": url.render_as_string(hide_password=False)},
    )
    line = assert_one_line_error(done, name, "does not exist", "createdb")
    assert "hunter2" not in done.stderr + done.stdout and "***" in line


def test_migrate_an_unreachable_database_server(tmp_path: Path) -> None:
    port = _closed_port()
    done = ragpulse(
        "migrate",
        cwd=tmp_path,
        env={"RAGPULSE_DATABASE__URL": f"postgresql+psycopg://postgres@127.0.0.1:{port}/x"},
    )
    assert_one_line_error(done, f"127.0.0.1:{port}", "refused")


def test_migrate_sqlite_in_a_missing_directory(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir" / "ragpulse.db"
    done = ragpulse("migrate", cwd=tmp_path, env={"RAGPULSE_DATABASE__URL": f"sqlite:///{target}"})
    assert_one_line_error(done, str(target.parent), "does not exist")
    assert not (tmp_path / "no").exists()


# --- jobs run on a database that is missing or not migrated -----------------------------


def test_jobs_run_without_a_sqlite_database_leaves_no_file_behind(tmp_path: Path) -> None:
    done = ragpulse("jobs", "run", cwd=tmp_path)  # the default sqlite:///ragpulse.db
    assert_one_line_error(done, "ragpulse.db", "ragpulse migrate")
    assert list(tmp_path.iterdir()) == []


def test_jobs_run_on_an_unmigrated_sqlite_database(tmp_path: Path) -> None:
    database = tmp_path / "empty.db"
    sqlite3.connect(database).close()
    done = ragpulse(
        "jobs", "run", cwd=tmp_path, env={"RAGPULSE_DATABASE__URL": f"sqlite:///{database}"}
    )
    assert_one_line_error(done, "not migrated", "ragpulse migrate")


def test_jobs_run_on_an_unmigrated_postgresql_database(tmp_path: Path) -> None:
    url = create_postgres_database()
    try:
        done = ragpulse("jobs", "run", cwd=tmp_path, env={"RAGPULSE_DATABASE__URL": url})
        assert_one_line_error(done, "not migrated", "ragpulse migrate")
    finally:
        drop_postgres_database(url)


# --- an unreachable judge ------------------------------------------------------------------

DATASET: list[dict[str, Any]] = [
    {
        "trace_id": f"t{i}",
        "timestamp": "2026-01-01T00:00:00Z",
        "question": f"What is the capital of France? ({i})",
        "answer": f"Paris is the capital of France ({i}).",
        "contexts": [{"id": "d1", "text": "Paris is the capital and largest city of France."}],
    }
    for i in range(3)
]


def _dataset(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in DATASET), encoding="utf-8")
    return path


def test_evaluate_with_an_unreachable_judge_server_fails_before_any_sample(
    tmp_path: Path,
) -> None:
    port = _closed_port()
    done = ragpulse(
        "evaluate",
        str(_dataset(tmp_path)),
        "--metrics",
        "faithfulness",
        "--no-progress",
        "--no-record",
        cwd=tmp_path,
        env={
            "RAGPULSE_JUDGE__MODELS": "openai/x",
            "RAGPULSE_JUDGE__API_BASE": f"http://127.0.0.1:{port}/v1",
        },
    )
    assert_one_line_error(done, f"http://127.0.0.1:{port}/v1", "cannot be reached", "API_BASE")
    assert done.stdout == ""  # no table of errors: nothing was evaluated


@pytest.mark.slow
def test_evaluate_where_every_judge_request_fails_to_connect_says_so(tmp_path: Path) -> None:
    """The judge's address comes from the provider's own variable (OPENAI_API_BASE), which
    ragpulse cannot check first: the run's per-sample errors are typed `connection_error`,
    and one final line says the judge was never reached."""
    port = _closed_port()
    done = ragpulse(
        "evaluate",
        str(_dataset(tmp_path)),
        "--metrics",
        "faithfulness",
        "--no-progress",
        "--no-record",
        cwd=tmp_path,
        env={
            "RAGPULSE_JUDGE__MODELS": "openai/x",
            "RAGPULSE_JUDGE__MAX_RETRIES": "1",
            "OPENAI_API_BASE": f"http://127.0.0.1:{port}/v1",
            "OPENAI_API_KEY": "sk-test",
        },
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "error connection_error ×3" in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "ragpulse: the judge could not be reached: all 3 judge requests "
        "(openai/x at its provider) failed to connect"
    )


def _judge_sampled_traces(url: str) -> None:
    upgrade(url)
    engine = create_engine(url)
    now = datetime.now(UTC).replace(tzinfo=None)
    with Session(engine) as session:
        for i, record in enumerate(DATASET):
            add_trace(
                session,
                record["trace_id"],
                now - timedelta(minutes=5 + i),
                purposes=("judge",),
                question=record["question"],
                answer=record["answer"],
                contexts=record["contexts"],
            )
        session.commit()
    engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_jobs_run_rag_quality_with_an_unreachable_judge(tmp_path: Path, backend: str) -> None:
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'ragpulse.db'}"
    else:
        url = create_postgres_database()
    try:
        _judge_sampled_traces(url)
        port = _closed_port()
        done = ragpulse(
            "jobs",
            "run",
            "rag_quality",
            cwd=tmp_path,
            env={
                "RAGPULSE_DATABASE__URL": url,
                "RAGPULSE_JUDGE__MODELS": "openai/x",
                "RAGPULSE_JUDGE__API_BASE": f"http://127.0.0.1:{port}/v1",
            },
        )
        assert_one_line_error(done, f"http://127.0.0.1:{port}/v1", "cannot be reached")
    finally:
        if backend == "postgresql":
            drop_postgres_database(url)


@pytest.mark.slow
def test_jobs_run_where_every_judge_request_fails_to_connect_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ragpulse.db'}"
    _judge_sampled_traces(url)
    port = _closed_port()
    done = ragpulse(
        "jobs",
        "run",
        "rag_quality",
        cwd=tmp_path,
        env={
            "RAGPULSE_DATABASE__URL": url,
            "RAGPULSE_JUDGE__MODELS": "openai/x",
            "RAGPULSE_JUDGE__MAX_RETRIES": "0",
            "OPENAI_API_BASE": f"http://127.0.0.1:{port}/v1",
            "OPENAI_API_KEY": "sk-test",
        },
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout.startswith("rag_quality")  # the job's own summary line comes first
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ragpulse: the judge could not be reached: all ")
    assert last.endswith("judge requests (openai/x at its provider) failed to connect")


# --- the /metrics endpoint cannot start ----------------------------------------------------


def test_run_with_the_metrics_port_taken(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = ragpulse(
            "--log-level",
            "WARNING",
            "run",
            "--role",
            "exporter",
            cwd=tmp_path,
            env={
                "RAGPULSE_DATABASE__URL": f"sqlite:///{tmp_path / 'ragpulse.db'}",
                "RAGPULSE_EXPORTER__PORT": str(port),
            },
        )
    line = assert_one_line_error(done, f"127.0.0.1:{port}", "in use", "RAGPULSE_EXPORTER__")
    assert "cannot serve /metrics" in line


def test_run_with_a_missing_tls_certificate(tmp_path: Path) -> None:
    done = ragpulse(
        "--log-level",
        "WARNING",
        "run",
        "--role",
        "exporter",
        cwd=tmp_path,
        env={
            "RAGPULSE_DATABASE__URL": f"sqlite:///{tmp_path / 'ragpulse.db'}",
            "RAGPULSE_EXPORTER__PORT": "0",
            "RAGPULSE_EXPORTER__TLS_CERT_FILE": str(tmp_path / "cert.pem"),
            "RAGPULSE_EXPORTER__TLS_KEY_FILE": str(tmp_path / "key.pem"),
        },
    )
    assert_one_line_error(done, str(tmp_path / "cert.pem"), "does not exist")


# --- Kafka is not there ----------------------------------------------------------------------


@pytest.mark.parametrize("wait", [None, "2s"])
def test_run_where_no_kafka_listens_fails_fast_with_one_line(
    tmp_path: Path, wait: str | None
) -> None:
    port = _closed_port()
    argv = ["run"] + (["--wait-for-kafka", wait] if wait else [])
    done = ragpulse(
        *argv,
        cwd=tmp_path,
        env={
            "RAGPULSE_KAFKA__BOOTSTRAP_SERVERS": f"127.0.0.1:{port}",
            "RAGPULSE_EXPORTER__PORT": "0",
        },
    )
    line = assert_one_line_error(done, f"127.0.0.1:{port}", "RAGPULSE_KAFKA__BOOTSTRAP_SERVERS")
    assert f"waited {wait[:-1] if wait else '5'}s" in line
    assert not (tmp_path / "ragpulse.db").exists()  # nothing set up for a service that can't run


def test_run_waits_for_a_kafka_that_starts_late(tmp_path: Path) -> None:
    from collector.ingest.kafka.reachable import wait_for_kafka

    with socket.socket() as late:
        late.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{late.getsockname()[1]}"
        ticks = iter(range(100))

        def sleep(_: float) -> None:
            if next(ticks) == 2:
                late.listen()  # the broker comes up on the third try

        assert wait_for_kafka([address], 30, sleep=sleep) == address


FLOOD = """
import sys
from ragpulse import cli

real = cli.build_parser


def build():
    parser = real()
    parse = parser.parse_args

    def parse_args(argv=None):
        args = parse(argv)

        def flood(_):
            for _ in range(100_000):
                print("x" * 80)
            return 0

        args.func = flood
        return args

    parser.parse_args = parse_args
    return parser


cli.build_parser = build
sys.exit(cli.main(["jobs", "list"]))
"""


def test_a_reader_that_goes_away_is_no_traceback(tmp_path: Path) -> None:
    """`ragpulse traces ... | head` printed a BrokenPipeError traceback (issue 39's first
    hour): a command whose output outgrows a closed pipe ends quietly with 141, as shells
    report it."""
    done = subprocess.run(
        [
            "bash",
            "-c",
            f'"{sys.executable}" -c \'{FLOOD}\' | head -1; echo "rc=${{PIPESTATUS[0]}}"',
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.splitlines() == ["x" * 80, "rc=141"], done.stdout[-500:]
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
