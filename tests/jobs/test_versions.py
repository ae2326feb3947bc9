"""A trace's version: derived once (`version_of`), the same for the group label, the slice
and the dataset metrics' groups; capped like other labels; never watched for drift."""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pytest

from benchmarks.outcome_columns import OutcomeColumns, drift_points
from collector.jobs.drift.detector import Detector, DriftConfig, MetricFacts
from collector.jobs.run.dataset import fold_tags, tag_versions
from collector.jobs.windows.labels import OTHER
from collector.jobs.windows.slices import slice_values
from collector.jobs.windows.versions import version_of
from collector.jobs.windows.window import group_values
from collector.settings import load_settings
from evaluators.outcome import Score
from evaluators.sample import Sample
from evaluators.signature import Signature
from ragpulse.job_setup import label_limits

H = 3600.0
SOURCES = ("retriever_version", "prompt_version", "model")


@pytest.mark.parametrize(
    ("tags", "model", "sources", "expected"),
    [
        ({"version": "v7"}, None, ("version",), "v7"),
        ({"tenant": "acme"}, "gpt-4o", ("version",), None),  # no version tag: none
        (None, None, ("version",), None),
        ({}, "gpt-4o", ("model",), "gpt-4o"),  # the trace's model field
        ({"model": "tagged"}, "gpt-4o", ("model",), "tagged"),  # a tag of that name wins
        ({"retriever_version": "r3", "prompt_version": 12}, "gpt-4o", SOURCES, "r3/12/gpt-4o"),
        ({"prompt_version": "p2"}, None, SOURCES, "-/p2/-"),  # missing parts are "-"
        ({"retriever_version": " \x00"}, None, SOURCES, None),  # cleans to nothing: missing
        ({"version": "  релиз\t2.1\n"}, None, ("version",), "релиз 2.1"),  # cleaned
        ({"version": "v\u200b1", "x": "y"}, None, ("version", "x"), "v1/y"),  # format char out
        ({"version": "a/b"}, "m", ("version", "model"), "a/b/m"),
    ],
)
def test_version_of(
    tags: dict[str, object] | None, model: str | None, sources: tuple[str, ...], expected: str
) -> None:
    assert version_of(tags, model, sources) == expected


def test_long_versions_are_cut_like_label_values_and_stay_distinct() -> None:
    a = version_of({"version": "x" * 200 + "a"}, None, ("version",), 32)
    b = version_of({"version": "x" * 200 + "b", "p": "1"}, None, ("version", "p"), 32)
    assert a is not None and b is not None and len(a) == len(b) == 32 and a != b
    assert version_of({"version": a}, None, ("version",), 32) == a  # idempotent


def test_label_slice_and_dataset_groups_read_the_same_version() -> None:
    tags = {"tenant": "acme", "version": "raw-tag", "retriever_version": "r3"}
    groups = group_values(
        tags, ["tenant", "version"], model="gpt-4o", version_sources=("retriever_version", "model")
    )
    assert groups == {"tenant": "acme", "version": "r3/gpt-4o"}  # not the raw tag
    slices = slice_values(
        tags,
        model="gpt-4o",
        question="Где мой заказ?",
        dimensions=("version", "language"),
        version_sources=("retriever_version", "model"),
    )
    assert slices == {"version": "r3/gpt-4o", "language": "ru"}
    samples = [(0.0, Sample("t1", "q", tags=MappingProxyType(tags))), (0.0, Sample("t2", "q"))]
    tagged = tag_versions(samples, ["gpt-4o", None], ("retriever_version", "model"), 128)
    assert tagged[0][1].tags["version"] == "r3/gpt-4o"
    assert "version" not in tagged[1][1].tags
    # a model alone is a version with model among the sources; no tags are needed
    assert group_values(None, ["version"], model="gpt-4o", version_sources=("model",)) == {
        "version": "gpt-4o"
    }


def test_versions_past_the_cap_fold_into_other() -> None:
    """The default cap (versions.max_values, 10): the 10 most frequent versions keep series,
    the rest make one `other` group of exactly their traces; tenants keep their bound."""
    limits = label_limits(load_settings())
    assert limits.policy("version").max_values == 10
    assert limits.policy("tenant").max_values == 50
    columns = OutcomeColumns(["m"], ["tenant", "version"])
    row = 0
    for v in range(12):
        for _ in range(20 - v):  # v0 the most frequent
            columns.put(f"t{row}", 0, 1.0, {"tenant": "acme", "version": f"v{v}"}, {"m": Score(v)})
            row += 1
    folds = columns.folds(0.0, limits)
    assert sorted(folds["version"].folding.kept) == sorted(f"v{v}" for v in range(10))
    assert folds["version"].folding.capped == 2
    points = columns.aggregate(0.0, 2.0, {"m": False}, {"m": Signature()}, folds=folds)
    by_key = {p.group.key: p.aggregate for p in points}
    assert sorted(k for k in by_key if k.startswith("version=")) == sorted(
        [f"version=v{v}" for v in range(10)] + [f"version={OTHER}"]
    )
    other = by_key[f"version={OTHER}"]
    assert (other.n, other.value) == (10 + 9, pytest.approx((10 * 10 + 11 * 9) / 19))
    assert by_key["tenant=acme"].n == by_key[""].n == row


def test_dataset_samples_fold_versions_with_the_same_cap() -> None:
    samples = [
        (0.0, Sample(f"t{i}", "q", tags=MappingProxyType({"version": f"v{i % 12}"})))
        for i in range(120)
    ]
    folded = fold_tags(samples, ["version"], label_limits(load_settings()))
    assert len({s.tags["version"] for _, s in folded}) == 11  # 10 versions and `other`


def _columns(labels: list[str], seed: int) -> OutcomeColumns:
    rng = np.random.default_rng(seed)
    n = 3000
    ts = np.sort(rng.uniform(0, 8 * 24 * H, n))
    hits = rng.random(n) < 0.6
    columns = OutcomeColumns(["hit_rate@1"], labels)
    for i in range(n):
        groups = {"tenant": f"t{i % 3}", "version": "v1" if ts[i] < 7 * 24 * H else "v2"}
        columns.put(f"t{i}", ts[i], ts[i], groups, {"hit_rate@1": Score(float(hits[i]))})
    return columns


def test_drift_detectors_skip_version_groups_and_keep_their_family() -> None:
    """No detector series per version, and the others' statistics and detectable drops are
    exactly those computed without the version label (same family of series)."""
    config = DriftConfig(
        (Detector("page", 0.15, 0.5, H), Detector("ticket", 0.05, 2.0, H)), span_s=24 * H
    )
    facts = [MetricFacts("hit_rate@1", "higher", "ratio")]
    now = 8 * 24 * H

    def points(labels: list[str]) -> dict[tuple[str, str], float | None]:
        made = drift_points(_columns(labels, 5), facts, now, 7 * 24 * H, None, config)
        return {(w.name, item.group.key): item.aggregate.value for w, item in made}

    with_versions = points(["tenant", "version"])
    assert not [key for key in with_versions if key[1].startswith("version=")]
    assert with_versions == points(["tenant"])
    assert any(v is not None for v in with_versions.values())
