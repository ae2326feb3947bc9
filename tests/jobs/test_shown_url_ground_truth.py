"""Ground truth from the document shown to the user (seed 004 §7): an application that
sends only its normal traces (no relevant_ids, no relevance, no feedback) gets Tier 1.

Traces go through the real ingest path (sampling included) into SQLite and PostgreSQL,
then the scheduled `real_users_benchmark` job runs with the configured priority; the
offline `evaluate` command reads the same field.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from collector.ingest.pipeline import Ingestor, RawMessage
from collector.jobs.run.definition import JobEnvironment
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.scheduler import definitions
from collector.jobs.windows.window import parse_windows
from collector.settings import Settings, load_settings
from collector.store.models import MetricResult
from collector.store.session import make_engine, make_session_factory
from evaluators.sample import Context
from exporters.quality import ResultsCache
from ragpulse.job_setup import sample_mapper

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
WIKI = "https://wiki.example.com"


def _trace(i: int, **fields: Any) -> dict[str, Any]:
    """A trace as a bot logs it: the retrieved chunks (ids and page urls) and the page shown."""
    return {
        "trace_id": f"shown-{i}",
        "timestamp": (NOW - timedelta(minutes=10 + i)).isoformat(),
        "question": f"Вопрос {i}?",
        "answer": "Ответ.",
        "contexts": [
            {"id": f"chunk-{i}-1", "url": f"{WIKI}/passport", "text": "a"},
            {"id": f"chunk-{i}-2", "url": f"{WIKI}/passport", "text": "b"},
            {"id": f"chunk-{i}-3", "url": f"{WIKI}/mortgage", "text": "c"},
        ],
        **fields,
    }


TRACES = [
    _trace(1, shown_url=f"{WIKI}/passport"),  # hit at rank 1 (two chunks of one page)
    _trace(2, shown_url=["HTTPS://Wiki.Example.com:443/mortgage/#terms"]),  # the page at rank 3
    _trace(3, shown_url=f"{WIKI}/vacation"),  # the shown page was not retrieved: a miss
    _trace(4, shown_url=""),  # NULL in the bot's table: no ground truth
    _trace(5, shown_url=f"{WIKI}/mortgage", relevant_ids=["chunk-5-1"]),  # explicit wins
]


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


def _run(engine: Engine, settings: Settings) -> dict[str, MetricResult]:
    ingestor = Ingestor(settings)
    factory = make_session_factory(engine)
    messages = [
        RawMessage("rag.traces", 0, i, None, json.dumps(t, ensure_ascii=False).encode())
        for i, t in enumerate(TRACES)
    ]
    with factory() as session:
        ingestor.ingest_batch(session, messages)
        session.commit()
    env = JobEnvironment(
        session_factory=factory,
        windows=parse_windows(["1h"]),
        group_labels=[],
        results=ResultsCache(),
        to_sample=sample_mapper(settings),
    )
    job = IncrementalJob(definitions(settings)["real_users_benchmark"], env)
    assert job.run(NOW).status == "ok"
    with factory() as session:
        rows = session.scalars(select(MetricResult).where(MetricResult.window == "1h")).all()
    return {r.metric: r for r in rows}


def test_shown_url_is_the_relevant_set_when_nothing_better_is_known(engine: Engine) -> None:
    settings = load_settings(sampling={"real_users_benchmark": 1.0})
    results = _run(engine, settings)
    hit = results["hit_rate@1"]
    # traces 1 (hit), 2 (page at rank 3), 3 (miss), 5 (relevant_ids chunk-5-1: hit)
    assert (hit.n, hit.value) == (4, pytest.approx(2 / 4))
    assert results["mrr"].value == pytest.approx((1 + 1 / 3 + 0 + 1) / 4)
    # per page: the two chunks of the shown page count once, so recall@5 is 1 when found
    assert results["recall@5"].value == pytest.approx(3 / 4)


def test_the_priority_setting_chooses_the_source(engine: Engine) -> None:
    settings = load_settings(
        sampling={"real_users_benchmark": 1.0},
        ground_truth={"priority": "shown_url,relevant_ids"},
    )
    results = _run(engine, settings)
    # trace 5 now scores its shown page (rank 3) instead of chunk-5-1 (rank 1)
    assert results["mrr"].value == pytest.approx((1 + 1 / 3 + 0 + 1 / 3) / 4)


def test_without_shown_url_in_the_priority_only_explicit_truth_counts(engine: Engine) -> None:
    settings = load_settings(
        sampling={"real_users_benchmark": 1.0},
        ground_truth={"priority": "relevance,relevant_ids"},
    )
    results = _run(engine, settings)
    assert (results["hit_rate@1"].n, results["hit_rate@1"].value) == (1, 1.0)


def test_unknown_ground_truth_source_is_a_clear_error() -> None:
    from collector.settings import ConfigError

    with pytest.raises(ConfigError, match=r"unknown ground-truth source.*feedbak"):
        load_settings(ground_truth={"priority": "relevance,feedbak"})


def test_sample_mapping_keys_contexts_by_page_for_shown_url() -> None:
    from collector.ingest.decode.trace_json import parse_trace_record
    from collector.store.samples import record_to_sample

    sample = record_to_sample(parse_trace_record(TRACES[0]))
    assert sample.ground_truth == "shown_url"
    assert sample.shown_urls == (f"{WIKI}/passport",)
    assert sample.relevance == {f"{WIKI}/passport": 1}
    assert sample.contexts[0] == Context(url=f"{WIKI}/passport", text="a")
    explicit = record_to_sample(parse_trace_record(TRACES[4]))
    assert explicit.ground_truth == "relevant_ids" and explicit.contexts[0].id == "chunk-5-1"


def test_offline_evaluate_uses_shown_url(tmp_path: Path) -> None:
    data = tmp_path / "traces.jsonl"
    data.write_text("\n".join(json.dumps(t, ensure_ascii=False) for t in TRACES) + "\n")
    out = tmp_path / "result.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    args = ["evaluate", str(data), "--metrics", "hit_rate@1,mrr", "--output", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "ragpulse.cli", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(Path(__file__).parents[2])},
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    aggregate = json.loads(out.read_text())["aggregate"]
    assert aggregate["hit_rate@1"]["n"] == 4
    assert aggregate["mrr"]["value"] == pytest.approx((1 + 1 / 3 + 0 + 1) / 4)
