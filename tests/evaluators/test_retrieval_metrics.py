"""Retrieval metrics: skip reasons, key handling, hand-checked values, and agreement with
pytrec_eval (trec_eval's C code) on random graded data, at cutoffs trec_eval's test
outputs do not print (1, 2, 3, 7, 50)."""

from __future__ import annotations

import math
import random

import pytest
import pytrec_eval

from evaluators.outcome import Outcome, Score, Skipped
from evaluators.registry import EvalContext, resolve
from evaluators.retrieval.keys import normalize_key
from evaluators.sample import Context, Sample


def run(name: str, samples: list[Sample], threshold: int = 1) -> list[Outcome]:
    resolved = resolve(name)
    ctx = EvalContext(options={"relevance_threshold": threshold})
    return list(resolved.spec.compute(samples, ctx, resolved.k))


def sample(ids: list[str | None], relevance: dict[str, int] | None) -> Sample:
    contexts = tuple(Context(id=i) for i in ids)
    return Sample(trace_id="t", question="q", contexts=contexts, relevance=relevance)


ALL = ["hit_rate@3", "mrr", "mrr@2", "precision@3", "recall@3", "ndcg@3"]


@pytest.mark.parametrize("name", ALL)
def test_skip_reasons(name: str) -> None:
    samples = [
        sample(["a"], None),
        sample(["a"], {"a": 0, "b": -1}),
        sample([], {"a": 1}),
        Sample(trace_id="t", question="q", contexts=(Context(text="no key"),), relevance={"a": 1}),
        sample([], {"a": 0}),
        sample(["a", "b", "c"], {"a": 1, "b": 1, "c": 1}),
    ]
    assert run(name, samples) == [
        Skipped("no ground truth"),
        Skipped("no relevant documents"),
        Score(0.0),  # ground truth but nothing retrieved: a miss (trec_eval -c)
        Skipped("no retrieved contexts with id or url"),
        Skipped("no relevant documents"),
        Score(1.0),
    ]
    # With threshold 2 a grade-1 document is not relevant: the query is undefined.
    assert run(name, [sample(["a"], {"a": 1})], threshold=2) == [Skipped("no relevant documents")]


@pytest.mark.parametrize("name", [*ALL, "hit_rate@1", "ndcg@10", "recall@1", "precision@1"])
@pytest.mark.parametrize(
    "truth", [{"a": 1}, {"https://docs.example.com/a": 1}], ids=["ids", "urls"]
)
def test_an_empty_retrieval_with_ground_truth_is_a_miss(name: str, truth: dict[str, int]) -> None:
    # Seed 004 §4.4.1-4.4.2 average over every question with ground truth (trec_eval -c):
    # a question whose retrieval returned nothing scores 0, it is not left out.
    key = next(iter(truth))
    samples = [sample([key], truth), sample([], truth), sample(["x"], truth)]
    outcomes = run(name, samples)
    assert outcomes[1:] == [Score(0.0), Score(0.0)]
    assert isinstance(outcomes[0], Score) and outcomes[0].value > 0
    # ... also when the whole batch retrieved nothing
    assert run(name, [sample([], truth), sample([], truth)]) == [Score(0.0), Score(0.0)]


def test_hit_plus_empty_plus_miss_gives_one_third() -> None:
    from evaluators.runner import evaluate

    truth = {"a": 1}
    samples = [sample(["a"], truth), sample([], truth), sample(["b"], truth), sample([], None)]
    metrics = ["hit_rate@1", "mrr", "recall@1", "precision@1", "ndcg@5"]
    result = evaluate(samples, metrics, EvalContext())
    for metric in metrics:
        aggregate = result.aggregates[metric]
        assert aggregate.value == pytest.approx(1 / 3), metric
        assert (aggregate.n, aggregate.skipped) == (3, 1), metric


def test_hand_computed_values() -> None:
    # ranks: 1 x (unjudged), 2 b (grade 1), 3 a (grade 3), 4 y; judged relevant: a, b, c(2)
    s = [sample(["x", "b", "a", "y"], {"a": 3, "b": 1, "c": 2, "z": 0})]
    assert run("hit_rate@1", s) == [Score(0.0)]
    assert run("hit_rate@2", s) == [Score(1.0)]
    assert run("mrr", s) == [Score(0.5)]
    assert run("mrr@1", s) == [Score(0.0)]
    assert run("precision@3", s) == [Score(2 / 3)]
    assert run("precision@10", s) == [Score(2 / 10)]  # divides by k, as trec_eval P_k
    assert run("recall@3", s) == [Score(2 / 3)]  # c was never retrieved but counts
    dcg = 1 / math.log2(3) + 3 / math.log2(4)
    idcg = 3 + 2 / math.log2(3) + 1 / math.log2(4)  # over ALL judged: a, c, b
    (ndcg,) = run("ndcg@3", s)
    assert isinstance(ndcg, Score) and ndcg.value == pytest.approx(dcg / idcg, abs=1e-12)
    # threshold 2: only a and c are relevant; NDCG keeps the graded gains (trec_eval -l)
    assert run("mrr", s, threshold=2) == [Score(1 / 3)]
    assert run("recall@3", s, threshold=2) == [Score(0.5)]
    (ndcg2,) = run("ndcg@3", s, threshold=2)
    assert isinstance(ndcg2, Score) and ndcg2.value == pytest.approx(dcg / idcg, abs=1e-12)


def test_a_document_retrieved_twice_counts_once() -> None:
    s = [sample(["a", "a", "b", "a"], {"a": 1, "c": 1})]
    assert run("precision@4", s) == [Score(0.25)]
    assert run("recall@4", s) == [Score(0.5)]
    assert run("hit_rate@1", s) == [Score(1.0)]


def test_urls_are_normalized_and_url_falls_back_when_id_is_missing() -> None:
    contexts = (
        Context(id="chunk-1", url="https://other.example.com/x"),
        Context(url="HTTPS://Wiki.Example.com:443/Page/#intro"),
        Context(url="http://wiki.example.com:8080/Page"),
    )
    relevance = {"https://wiki.example.com/Page": 1, "http://wiki.example.com:8080/Page/": 2}
    s = [Sample(trace_id="t", question="q", contexts=contexts, relevance=relevance)]
    assert run("mrr", s) == [Score(0.5)]
    assert run("recall@3", s) == [Score(1.0)]
    # Ids work on the fast path too when only some contexts lack one.
    mixed = (Context(id="a"), Context(url="http://h.com/b/"), Context(id="c"))
    s2 = [Sample(trace_id="t", question="q", contexts=mixed, relevance={"c": 1})]
    assert run("mrr", s2) == [Score(1 / 3)]


def test_normalize_key() -> None:
    assert normalize_key("HTTPS://Wiki.Example.com:443/Page/#intro") == (
        "https://wiki.example.com/Page"
    )
    assert normalize_key("http://a.com:8080/x/?q=1#f") == "http://a.com:8080/x?q=1"
    assert normalize_key("http://A.com:80/") == "http://a.com"
    assert normalize_key("Doc-17/") == "Doc-17/"  # not a url: used as given


def test_threshold_must_be_a_positive_integer() -> None:
    with pytest.raises(ValueError, match="relevance_threshold"):
        run("mrr", [sample(["a"], {"a": 1})], threshold=0)


def test_batches_do_not_leak_into_each_other() -> None:
    first = [sample(["a"], {"a": 1})]
    second = [sample(["b"], {"a": 1})]
    assert run("hit_rate@1", first) == [Score(1.0)]
    assert run("hit_rate@1", second) == [Score(0.0)]
    assert run("hit_rate@1", first) == [Score(1.0)]


CUTS = (1, 2, 3, 7, 50)
PYTREC_MEASURES = {
    **{f"success_{k}": f"hit_rate@{k}" for k in CUTS},
    "recip_rank": "mrr",
    **{f"P_{k}": f"precision@{k}" for k in CUTS},
    **{f"recall_{k}": f"recall@{k}" for k in CUTS},
    **{f"ndcg_cut_{k}": f"ndcg@{k}" for k in CUTS},
}


def random_collection(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    runs: dict[str, dict[str, float]] = {}
    for q in range(300):
        pool = [f"d{i}" for i in range(40)]
        qrels[f"q{q}"] = {d: rng.choice([-1, 0, 0, 1, 1, 2, 3]) for d in rng.sample(pool, 12)}
        depth = rng.randint(1, 30)
        # Coarse scores make ties, which trec_eval breaks by docno descending.
        runs[f"q{q}"] = {d: float(rng.randint(0, 5)) for d in rng.sample(pool, depth)}
    return qrels, runs


@pytest.mark.parametrize("level", [1, 2])
def test_agrees_with_pytrec_eval_on_random_graded_data(level: int) -> None:
    qrels, runs = random_collection(level)
    cuts = ",".join(map(str, CUTS))
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels,
        {f"success.{cuts}", "recip_rank", f"P.{cuts}", f"recall.{cuts}", f"ndcg_cut.{cuts}"},
        relevance_level=level,
    )
    expected = evaluator.evaluate(runs)
    samples = [
        Sample(
            trace_id=qid,
            question="q",
            contexts=tuple(
                Context(id=d) for _, d in sorted(((s, d) for d, s in docs.items()), reverse=True)
            ),
            relevance=qrels[qid],
        )
        for qid, docs in runs.items()
    ]
    scored = 0
    for measure, metric in PYTREC_MEASURES.items():
        for s, outcome in zip(samples, run(metric, samples, threshold=level), strict=True):
            if isinstance(outcome, Skipped):
                assert outcome.reason == "no relevant documents"
                assert not any(g >= level for g in qrels[s.trace_id].values())
                continue
            assert isinstance(outcome, Score)
            theirs = expected[s.trace_id][measure]
            assert outcome.value == pytest.approx(theirs, abs=1e-9), (measure, s.trace_id)
            scored += 1
    assert scored > 250 * len(PYTREC_MEASURES)


def test_whole_list_mrr_reads_past_the_cutoff_depth() -> None:
    contexts = tuple(Context(url=f"http://h.com/{i}") for i in range(40))
    s = [Sample(trace_id="t", question="q", contexts=contexts, relevance={"HTTP://H.com/29/": 2})]
    assert run("hit_rate@10", s) == [Score(0.0)]  # builds the shallow matrix first
    assert run("mrr", s) == [Score(1 / 30)]
    assert run("mrr", s, threshold=3) == [Skipped("no relevant documents")]
    assert run("recall@100", s) == [Score(1.0)]


def test_whole_list_mrr_tail_falls_back_to_the_url_of_a_context_without_id() -> None:
    contexts = [Context(id=f"d{i}") for i in range(40)]
    contexts[24] = Context(url="doc-x")  # no id: its url is the key
    s = [Sample(trace_id="t", question="q", contexts=tuple(contexts), relevance={"doc-x": 1})]
    assert run("mrr", s) == [Score(1 / 25)]
    s2 = [Sample(trace_id="t", question="q", contexts=tuple(contexts), relevance={"d33": 1})]
    assert run("mrr", s2) == [Score(1 / 34)]
