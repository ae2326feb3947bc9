"""The per-trace score histograms: buckets, exemplars, bounded labels, concurrent use."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import MappingProxyType

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from collector.jobs.recording.observers import Evaluated, notify
from collector.jobs.windows.labels import OTHER, LabelLimits, LabelPolicy
from evaluators.outcome import Failed, Outcome, Score, Skipped
from evaluators.registry import declared
from exporters.score_histograms import FAMILY, UNIT_EDGES, ScoreHistograms, unit_edges


def _evaluated(trace_id: str, tenant: str | None, outcomes: Mapping[str, Outcome]) -> Evaluated:
    groups = MappingProxyType({} if tenant is None else {"tenant": tenant})
    return Evaluated("rag_quality", trace_id, 1.7e9, groups, MappingProxyType(dict(outcomes)))


def _setup(**kwargs: object) -> tuple[ScoreHistograms, CollectorRegistry]:
    histograms = ScoreHistograms(clock=lambda: 1_800_000_000.0, **kwargs)  # type: ignore[arg-type]
    registry = CollectorRegistry()
    registry.register(histograms)
    return histograms, registry


def _buckets(registry: CollectorRegistry, metric: str, tenant: str) -> dict[str, float]:
    families = text_string_to_metric_families(openmetrics_latest(registry).decode())
    return {
        s.labels["le"]: s.value
        for f in families
        for s in f.samples
        if s.name == f"{FAMILY}_bucket"
        and s.labels["metric"] == metric
        and s.labels["tenant"] == tenant
    }


def test_scores_land_in_cumulative_tenths_with_the_last_trace_as_exemplar() -> None:
    histograms, registry = _setup()
    histograms.observe(
        [
            _evaluated("t-miss", "acme", {"hit_rate@5": Score(0.0), "mrr": Score(0.25)}),
            _evaluated("t-hit", "acme", {"hit_rate@5": Score(1.0), "mrr": Score(0.3)}),
            _evaluated("t-hit2", "acme", {"hit_rate@5": Score(1.0), "mrr": Score(0.3)}),
        ]
    )
    buckets = _buckets(registry, "hit_rate@5", "acme")
    assert list(buckets) == [f"{i / 10:.1f}" for i in range(11)] + ["+Inf"]
    assert buckets["0.0"] == 1 and buckets["0.9"] == 1 and buckets["1.0"] == 3
    assert buckets["+Inf"] == 3
    labels = {"metric": "mrr", "tenant": "acme"}
    assert registry.get_sample_value(f"{FAMILY}_sum", labels) == pytest.approx(0.85)
    assert registry.get_sample_value(f"{FAMILY}_count", labels) == 3
    # 0.3 is in le="0.3" (upper bounds are inclusive), 0.25 in le="0.3" as well
    assert registry.get_sample_value(f"{FAMILY}_bucket", {**labels, "le": "0.2"}) == 0

    exemplars = {
        (s.labels["metric"], s.labels["le"]): s.exemplar
        for f in text_string_to_metric_families(openmetrics_latest(registry).decode())
        for s in f.samples
        if s.exemplar is not None
    }
    assert set(exemplars) == {("hit_rate@5", "0.0"), ("hit_rate@5", "1.0"), ("mrr", "0.3")}
    miss = exemplars[("hit_rate@5", "0.0")]
    assert miss.labels == {"trace_id": "t-miss"} and miss.value == 0.0
    assert miss.timestamp is not None and float(miss.timestamp) == 1_800_000_000.0
    assert exemplars[("hit_rate@5", "1.0")].labels == {"trace_id": "t-hit2"}  # the last one
    assert exemplars[("mrr", "0.3")].labels == {"trace_id": "t-hit2"}
    # the classic text format has no exemplars, but the same counts
    text = generate_latest(registry).decode()
    assert "t-miss" not in text and "# {" not in text
    assert f'{FAMILY}_bucket{{le="0.0",metric="hit_rate@5",tenant="acme"}} 1.0' in text


def test_skips_failures_unknown_and_non_finite_values_are_not_observations() -> None:
    histograms, registry = _setup()
    histograms.observe(
        [
            _evaluated(
                "t1",
                "acme",
                {
                    "faithfulness": Skipped("no contexts"),
                    "context_recall": Failed("Timeout"),
                    "not_a_metric": Score(0.5),
                    "mrr": Score(float("nan")),
                },
            )
        ]
    )
    assert histograms.observed == 0
    assert f"{FAMILY}_bucket" not in openmetrics_latest(registry).decode()


def test_units_pick_their_edges_and_counts_are_left_out() -> None:
    assert unit_edges("bleu") == UNIT_EDGES["bleu"] and UNIT_EDGES["bleu"][-1] == 100.0
    assert unit_edges("judge_latency_ms") == UNIT_EDGES["ms"]
    assert unit_edges("semantic_similarity") == UNIT_EDGES["cosine"]
    assert unit_edges("n_clusters") is None
    assert unit_edges("nonsense") is None
    units = {
        spec.unit for spec in declared().values() if getattr(spec, "kind", "").endswith("sample")
    }
    assert units and units <= set(UNIT_EDGES)  # every per-sample metric has a histogram
    histograms, registry = _setup()
    histograms.observe([_evaluated("slow", "acme", {"judge_latency_ms": Score(70_000.0)})])
    assert _buckets(registry, "judge_latency_ms", "acme")["60000.0"] == 0
    assert _buckets(registry, "judge_latency_ms", "acme")["+Inf"] == 1


def test_label_values_are_cleaned_and_bounded_first_come() -> None:
    histograms, registry = _setup(limits=LabelLimits(LabelPolicy(max_values=3)))
    items = [_evaluated(f"t{i}", f"user-{i}", {"mrr": Score(0.5)}) for i in range(500)]
    items += [_evaluated("untagged", None, {"mrr": Score(1.0)})]
    items += [_evaluated("ctl", "user-1\n", {"mrr": Score(1.0)})]  # cleans to user-1
    histograms.observe(items)
    tenants = {
        s.labels["tenant"]
        for f in registry.collect()
        for s in f.samples
        if s.name == f"{FAMILY}_count"
    }
    assert tenants == {"user-0", "user-1", "user-2", OTHER, ""}
    assert registry.get_sample_value(f"{FAMILY}_count", {"metric": "mrr", "tenant": OTHER}) == 497
    assert registry.get_sample_value(f"{FAMILY}_count", {"metric": "mrr", "tenant": "user-1"}) == 2
    assert histograms.folded == 497
    assert registry.get_sample_value(f"{FAMILY}_count", {"metric": "mrr", "tenant": ""}) == 502


def test_allow_list_keeps_exactly_the_allowed_values() -> None:
    limits = LabelLimits(per_label={"tenant": LabelPolicy(allow=frozenset({"acme"}))})
    histograms, registry = _setup(limits=limits)
    histograms.observe(
        [
            _evaluated("a", "evil", {"mrr": Score(0.1)}),
            _evaluated("b", "acme", {"mrr": Score(0.1)}),
        ]
    )
    tenants = {s.labels["tenant"] for f in registry.collect() for s in f.samples}
    assert tenants == {"acme", OTHER, ""}


def test_trace_ids_too_long_for_an_exemplar_are_counted_without_one() -> None:
    histograms, registry = _setup()
    histograms.observe([_evaluated("x" * 121, "acme", {"mrr": Score(0.5)})])
    histograms.observe([_evaluated("y" * 120, "acme", {"mrr": Score(0.9)})])
    body = openmetrics_latest(registry).decode()
    assert "x" * 121 not in body and 'trace_id="' + "y" * 120 + '"' in body
    assert registry.get_sample_value(f"{FAMILY}_count", {"metric": "mrr", "tenant": "acme"}) == 2


def test_without_a_group_label_the_family_is_by_metric() -> None:
    histograms, registry = _setup(label=None)
    notify([histograms], [_evaluated("t", "acme", {"mrr": Score(0.5)})])
    assert registry.get_sample_value(f"{FAMILY}_count", {"metric": "mrr"}) == 1


def test_concurrent_observers_and_scrapes_lose_nothing() -> None:
    histograms, registry = _setup()
    threads_n, batches, per_batch = 4, 200, 10
    errors: list[BaseException] = []
    done = threading.Event()

    def job(k: int) -> None:
        for b in range(batches):
            histograms.observe(
                [
                    _evaluated(
                        f"{k}-{b}-{i}", f"t{i % 5}", {"mrr": Score(i / 10), "bleu": Score(50.0)}
                    )
                    for i in range(per_batch)
                ]
            )

    def scrape() -> None:
        while not done.is_set():
            try:
                text_string_to_metric_families(openmetrics_latest(registry).decode())
            except BaseException as exc:  # a torn read would not parse
                errors.append(exc)
                return

    scraper = threading.Thread(target=scrape)
    scraper.start()
    jobs = [threading.Thread(target=job, args=(k,)) for k in range(threads_n)]
    for t in jobs:
        t.start()
    for t in jobs:
        t.join()
    done.set()
    scraper.join()
    assert not errors
    total = sum(
        registry.get_sample_value(f"{FAMILY}_count", {"metric": "mrr", "tenant": f"t{j}"}) or 0
        for j in range(5)
    )
    assert total == threads_n * batches * per_batch
    assert histograms.observed == 2 * threads_n * batches * per_batch
