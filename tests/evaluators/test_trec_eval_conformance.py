"""Retrieval metrics reproduce NIST trec_eval's own test outputs to the printed 4 decimals.

Data: `tests/evaluators/data/trec_eval/`, an unchanged copy of the project's
`../shared/conformance/trec_eval/` (see its README and NIST's notice in LICENSE.md), kept in
the repository so a clone anywhere runs it; where the shared folder is beside the
repository, a test checks the copy still equals it.
`out.test.aq` is `trec_eval -m all_trec -q qrels.test results.test` and `out.test.aql` the
same on the graded `qrels.rel_level` with `-l2`. Every per-query value and the `all` row
(the mean over the evaluated queries) of success_1/5/10, recip_rank, P_k, recall_k and
ndcg_cut_k (k = 5, 10, 15, 20, 30, 100) is compared; each is its own test case, named
`<expected file>-<measure>-<query>`.

The run is ranked as trec_eval ranks it: by score descending, ties by docno descending
(the rank column is ignored); queries missing from the qrels are ignored.
"""

from __future__ import annotations

from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

from evaluators.outcome import Score
from evaluators.registry import EvalContext, resolve
from evaluators.sample import Context, Sample

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "trec_eval"
SHARED = REPO_ROOT.parent / "shared" / "conformance" / "trec_eval"

CUTOFFS = (5, 10, 15, 20, 30, 100)
MEASURES: dict[str, str] = {
    "success_1": "hit_rate@1",
    "success_5": "hit_rate@5",
    "success_10": "hit_rate@10",
    "recip_rank": "mrr",
    **{f"P_{k}": f"precision@{k}" for k in CUTOFFS},
    **{f"recall_{k}": f"recall@{k}" for k in CUTOFFS},
    **{f"ndcg_cut_{k}": f"ndcg@{k}" for k in CUTOFFS},
}
# expected output file -> (qrels file, relevance level given to trec_eval with -l)
RUNS = {"out.test.aq": ("qrels.test", 1), "out.test.aql": ("qrels.rel_level", 2)}


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        if line.strip():
            qid, _, docno, rel = line.split()
            qrels[qid][docno] = int(rel)
    return dict(qrels)


def read_run(path: Path) -> dict[str, list[str]]:
    """Query -> docnos in trec_eval's order: score descending, then docno descending."""
    scored: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        if line.strip():
            qid, _, docno, _rank, score, _run = line.split()
            scored[qid].append((float(score), docno))
    return {qid: [d for _, d in sorted(docs, reverse=True)] for qid, docs in scored.items()}


def read_expected(path: Path) -> dict[tuple[str, str], str]:
    """(measure, query or "all") -> the printed value."""
    expected: dict[tuple[str, str], str] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:
            expected[(parts[0], parts[1])] = parts[2]
    return expected


def samples_for(qrels_name: str) -> list[Sample]:
    qrels = read_qrels(DATA / qrels_name)
    run = read_run(DATA / "results.test")
    return [
        Sample(
            trace_id=qid,
            question=f"TREC topic {qid}",
            contexts=tuple(Context(id=docno) for docno in docs),
            relevance=qrels[qid],
        )
        for qid, docs in sorted(run.items())
        if qid in qrels  # trec_eval ignores queries that have no judgments
    ]


@cache
def computed(expected_name: str) -> dict[tuple[str, str], float]:
    """(measure, query or "all") -> our value, for every measure of MEASURES."""
    qrels_name, level = RUNS[expected_name]
    samples = samples_for(qrels_name)
    ctx = EvalContext(options={"relevance_threshold": level})
    values: dict[tuple[str, str], float] = {}
    for measure, metric in MEASURES.items():
        resolved = resolve(metric)
        outcomes = resolved.spec.compute(samples, ctx, resolved.k)
        scores = []
        for sample, outcome in zip(samples, outcomes, strict=True):
            if isinstance(outcome, Score):
                values[(measure, sample.trace_id)] = outcome.value
                scores.append(outcome.value)
        values[(measure, "all")] = sum(scores) / len(scores)
    values[("num_q", "all")] = float(len(scores))
    return values


def cases() -> list[object]:
    if not DATA.is_dir():
        return [pytest.param("missing", "", "", "", id="conformance-data-missing")]
    params = []
    for expected_name in RUNS:
        expected = read_expected(DATA / expected_name)
        for (measure, qid), value in sorted(expected.items()):
            if measure in MEASURES or measure == "num_q":
                params.append(
                    pytest.param(
                        expected_name, measure, qid, value, id=f"{expected_name}-{measure}-{qid}"
                    )
                )
    return params


@pytest.mark.parametrize(("expected_name", "measure", "qid", "printed"), cases())
def test_matches_trec_eval(expected_name: str, measure: str, qid: str, printed: str) -> None:
    assert DATA.is_dir(), f"trec_eval conformance data not found at {DATA}"
    ours = computed(expected_name).get((measure, qid))
    assert ours is not None, f"{measure} for query {qid}: we skipped a query trec_eval scored"
    if measure == "num_q":
        assert int(ours) == int(printed)
    else:
        assert f"{ours:.4f}" == printed, (
            f"{measure} query {qid}: ours {ours!r}, trec_eval {printed}"
        )


def test_every_requested_measure_is_printed_by_trec_eval() -> None:
    """All measures we check are in both expected files (none had to come from pytrec_eval)."""
    for expected_name in RUNS:
        printed = {measure for measure, _ in read_expected(DATA / expected_name)}
        assert set(MEASURES) <= printed, set(MEASURES) - printed


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"no shared conformance folder at {SHARED}")
def test_the_copy_equals_the_shared_conformance_data() -> None:
    shared = sorted(p.name for p in SHARED.iterdir())
    assert sorted(p.name for p in DATA.iterdir()) == shared
    for name in shared:
        assert (DATA / name).read_bytes() == (SHARED / name).read_bytes(), name
