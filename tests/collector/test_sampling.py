"""Deterministic, per-purpose hash sampling (like OpenTelemetry's TraceIdRatioBased)."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
from typing import Any

import pytest

from collector.ingest.sampling import JUDGE, REAL_USERS_BENCHMARK, Sampler, trace_hash
from collector.settings import SamplingSettings

IDS = [f"trace-{i:08d}" for i in range(20_000)]


def sampler(**kw: Any) -> Sampler:
    return Sampler(SamplingSettings(**kw))


def test_hash_is_the_documented_one() -> None:
    digest = hashlib.sha256(b"judge:abc").digest()
    assert trace_hash("abc", "judge") == int.from_bytes(digest[:8], "big")


@pytest.mark.parametrize(("purpose", "rate"), [(REAL_USERS_BENCHMARK, 0.1), (JUDGE, 0.05)])
def test_rate_within_statistical_tolerance(purpose: str, rate: float) -> None:
    s = sampler(real_users_benchmark=rate, judge=rate)
    hits = sum(s.decide(t, purpose) for t in IDS)
    sd = math.sqrt(len(IDS) * rate * (1 - rate))
    assert abs(hits - len(IDS) * rate) < 4 * sd


def test_purposes_decide_independently() -> None:
    s = sampler(real_users_benchmark=0.1, judge=0.05)
    both = sum(s.decide(t, REAL_USERS_BENCHMARK) and s.decide(t, JUDGE) for t in IDS)
    expected = len(IDS) * 0.1 * 0.05  # 100 if independent; 1000 if nested
    assert abs(both - expected) < 4 * math.sqrt(expected)


def test_edges_and_unknown_purpose() -> None:
    assert not any(sampler(judge=0.0).decide(t, JUDGE) for t in IDS[:500])
    assert all(sampler(judge=1.0).decide(t, JUDGE) for t in IDS[:500])
    with pytest.raises(ValueError, match="known: real_users_benchmark, judge"):
        sampler().decide("t", "other")


def test_decisions_are_stable_across_processes() -> None:
    here = [sampler().decide(t, p) for t in IDS[:300] for p in (REAL_USERS_BENCHMARK, JUDGE)]
    code = (
        "import json; from collector.ingest.sampling import Sampler; "
        "from collector.settings import SamplingSettings; s = Sampler(SamplingSettings()); "
        "print(json.dumps([s.decide(f'trace-{i:08d}', p) for i in range(300) "
        "for p in ('real_users_benchmark', 'judge')]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    assert json.loads(out.stdout) == here


def test_eligibility_rules() -> None:
    s = sampler(real_users_benchmark=1.0, judge=1.0)
    kw = {"tags": None}
    assert s.purposes_for("t", has_ground_truth=True, has_answer=True, **kw) == [
        REAL_USERS_BENCHMARK,
        JUDGE,
    ]
    assert s.purposes_for("t", has_ground_truth=False, has_answer=True, **kw) == [JUDGE]
    assert s.purposes_for("t", has_ground_truth=True, has_answer=False, **kw) == [
        REAL_USERS_BENCHMARK
    ]
    assert s.purposes_for("t", has_ground_truth=False, has_answer=False, **kw) == []


def test_tag_filters() -> None:
    s = sampler(real_users_benchmark=1.0, judge=1.0, tag_filters={"tenant": ["acme", "42"]})
    facts = {"has_ground_truth": True, "has_answer": True}
    assert s.purposes_for("t", tags={"tenant": "acme"}, **facts)
    assert s.purposes_for("t", tags={"tenant": 42}, **facts)  # numbers compare as text
    assert s.purposes_for("t", tags={"tenant": "globex"}, **facts) == []
    assert s.purposes_for("t", tags={"lang": "ru"}, **facts) == []
    assert s.purposes_for("t", tags=None, **facts) == []
