"""Window aggregation of the outcome columns against a plain per-trace reference."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np

from benchmarks.outcome_columns import OutcomeColumns, summarize
from collector.jobs.windows.window import OVERALL, group_for
from evaluators.outcome import Failed, Outcome, Score, Skipped
from evaluators.signature import Signature

METRICS = ("m_prop", "m_mean")
PROPORTIONS = {"m_prop": True, "m_mean": False}
SIGNATURES = {"m_mean": Signature(embedding_model="e")}


def _outcome(rng: random.Random, proportion: bool) -> Outcome:
    draw = rng.random()
    if draw < 0.1:
        return Skipped(rng.choice(["no reference", "no session"]))
    if draw < 0.15:
        return Failed("ValueError")
    return Score(float(rng.random() < 0.4) if proportion else rng.random())


def test_aggregate_matches_a_per_trace_reference() -> None:
    rng = random.Random(5)
    columns = OutcomeColumns(METRICS, ["tenant", "model"])
    # trace -> its last version, keyed by when it was put (the columns' row order)
    latest: dict[str, tuple[int, float, dict[str, str], dict[str, Outcome]]] = {}
    for i in range(3000):
        trace = f"t{rng.randrange(2500)}"  # some traces are replaced by a newer version
        ts = rng.uniform(0, 1000)
        groups = {"tenant": rng.choice(["acme", "beta", "zeta"])}
        if rng.random() < 0.7:
            groups["model"] = rng.choice(["m1", "m2"])
        outcomes = {m: _outcome(rng, PROPORTIONS[m]) for m in METRICS}
        if rng.random() < 0.05:
            del outcomes["m_mean"]  # a metric without an outcome for this trace
        columns.put(trace, float(i), ts, groups, outcomes)
        latest[trace] = (i, ts, groups, outcomes)
    columns.prune(50.0)

    for start, end in ((0.0, 1000.0), (300.0, 400.0), (999.5, 1000.0)):
        got = {
            (item.group.key, item.aggregate.metric): item.aggregate
            for item in columns.aggregate(start, end, PROPORTIONS, SIGNATURES)
        }
        members: dict[str, list[tuple[dict[str, str], dict[str, Outcome]]]] = {}
        for _, ts, groups, outcomes in sorted(latest.values(), key=lambda v: v[0]):
            if max(start, 50.0) <= ts <= end:
                members.setdefault(OVERALL.key, []).append((groups, outcomes))
                for label, value in groups.items():
                    members.setdefault(group_for(label, value).key, []).append((groups, outcomes))
        assert {key for key, _ in got} == set(members)
        for key, rows in members.items():
            for metric in METRICS:
                found = [o[metric] for _, o in rows if metric in o]
                scores = [o.value for o in found if isinstance(o, Score)]
                want = summarize(
                    metric,
                    np.array(scores, dtype=np.float64),
                    proportion=PROPORTIONS[metric],
                    seed=0,
                    signature=SIGNATURES.get(metric, Signature()),
                    skip_reasons=Counter(o.reason for o in found if isinstance(o, Skipped)),
                    error_types=Counter(o.error_type for o in found if isinstance(o, Failed)),
                )
                agg = got[(key, metric)]
                assert (agg.n, agg.skip_reasons, agg.error_types) == (
                    want.n,
                    want.skip_reasons,
                    want.error_types,
                ), (key, metric)
                assert agg.value == want.value
                assert (agg.ci_lower, agg.ci_upper) == (want.ci_lower, want.ci_upper)
                assert agg.signature == want.signature
