"""Bounded label values: cleaning, the kept values, folding into `other`, flat memory."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import numpy as np
import pytest

from benchmarks.outcome_columns import OutcomeColumns, summarize
from collector.jobs.run.dataset import fold_tags
from collector.jobs.windows.labels import (
    OTHER,
    LabelLimits,
    LabelPolicy,
    choose_kept,
    clean_value,
)
from collector.jobs.windows.window import group_values
from evaluators.outcome import Score, Skipped
from evaluators.sample import Sample
from evaluators.signature import Signature


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("acme", "acme"),
        ("Сбербанк", "Сбербанк"),
        ("  two\twords\n here ", "two words here"),
        ("bell\x07\x00", "bell"),
        ("zero\u200bwidth", "zerowidth"),  # a format character
        ("e\u0301", "\u00e9"),  # NFC: one spelling of é
        ("\x00\x01", None),
        ("   ", None),
        (42, "42"),
    ],
)
def test_clean_value(raw: object, clean: str | None) -> None:
    assert clean_value(raw) == clean


def test_long_values_are_cut_but_stay_distinct() -> None:
    a, b = "x" * 300 + "a", "x" * 300 + "b"
    ca, cb = clean_value(a, 128), clean_value(b, 128)
    assert ca is not None and cb is not None
    assert len(ca) == len(cb) == 128 and ca != cb and ca.startswith("x" * 100)
    assert clean_value(ca, 128) == ca  # idempotent


def test_group_values_cleans_and_leaves_out_empty() -> None:
    tags = {"tenant": " acme\n", "model": "\x00", "lang": "ru"}
    assert group_values(tags, ["tenant", "model"]) == {"tenant": "acme"}


def test_choose_kept_is_most_frequent_then_by_value() -> None:
    values = ["d", "c", "b", "a", OTHER]
    counts = np.array([5, 3, 3, 3, 9])
    folding = choose_kept("tenant", values, counts, LabelPolicy(max_values=2))
    # `other` is never kept as a value of its own; ties (3) are broken by the value
    assert folding.kept == {"d", "a"}
    assert (folding.seen, folding.capped, folding.folded) == (5, 2, 3)
    allowed = choose_kept("tenant", values, counts, LabelPolicy(allow=frozenset({"c", "z"})))
    assert allowed.kept == {"c"} and allowed.capped == 0
    under = choose_kept("tenant", values[:2], counts[:2], LabelPolicy(max_values=2))
    assert under.kept == {"d", "c"} and under.capped == 0


def _columns(rows: list[tuple[str, float, str, float]]) -> OutcomeColumns:
    columns = OutcomeColumns(["m"], ["tenant"])
    for i, (trace, ts, tenant, value) in enumerate(rows):
        columns.put(trace, float(i), ts, {"tenant": tenant}, {"m": Score(value)})
    return columns


def test_folded_values_make_one_exact_other_group() -> None:
    rng = random.Random(3)
    rows = []
    for i in range(4000):
        tenant = rng.choice(["acme", "globex", "initech"]) if i % 2 else f"user-{i}"
        rows.append((f"t{i}", rng.uniform(0, 1000), tenant, float(rng.random() < 0.3)))
    columns = _columns(rows)
    limits = LabelLimits(LabelPolicy(max_values=3))
    folds = columns.folds(0.0, limits)
    assert folds["tenant"].folding.kept == {"acme", "globex", "initech"}
    assert folds["tenant"].folding.capped == 2000
    for start in (0.0, 600.0):
        unfolded = {
            i.group.key: i.aggregate for i in columns.aggregate(start, 1000.0, {"m": True}, {})
        }
        folded = {
            i.group.key: i.aggregate
            for i in columns.aggregate(start, 1000.0, {"m": True}, {}, folds=folds)
        }
        assert set(folded) == {"", "tenant=acme", "tenant=globex", "tenant=initech", "tenant=other"}
        for key in ("", "tenant=acme", "tenant=globex", "tenant=initech"):
            assert folded[key] == unfolded[key]
        rest = np.array(
            [v for _, ts, t, v in rows if t.startswith("user-") and start <= ts <= 1000.0]
        )
        expected = summarize(
            "m",
            rest,
            proportion=True,
            seed=0,
            signature=Signature(),
            skip_reasons={},
            error_types={},
        )
        assert folded["tenant=other"] == expected


def test_a_tag_named_other_counts_in_other() -> None:
    columns = _columns([("a", 1.0, "acme", 1.0), ("b", 2.0, OTHER, 0.0), ("c", 3.0, "zeta", 1.0)])
    folds = columns.folds(0.0, LabelLimits(LabelPolicy(max_values=1)))
    got = {i.group.key: i.aggregate for i in columns.aggregate(0, 10, {"m": True}, {}, folds=folds)}
    assert set(got) == {"", "tenant=acme", "tenant=other"}
    assert got["tenant=other"].n == 2


def test_code_tables_stay_flat_when_values_keep_changing() -> None:
    """A user id in the tag: every hour brings new values, the old ones leave the window."""
    columns = OutcomeColumns(["m"], ["tenant"])
    sizes = []
    for hour in range(12):
        for i in range(3000):
            ts = hour * 3600.0 + i
            columns.put(f"h{hour}-{i}", ts, ts, {"tenant": f"user-{hour}-{i}"}, {"m": Score(1.0)})
        columns.prune(hour * 3600.0 - 3600.0)
        sizes.append(len(columns._code_values["tenant"]) + len(columns._raw_codes["tenant"]))
    # A sawtooth (tables shrink when dead rows are compacted away), bounded by a few
    # windows' rows, not growing with every value ever seen (12 x 3000 here).
    assert max(sizes) <= 2 * 4 * 3000, sizes
    assert max(sizes[6:]) <= max(sizes[:6]), sizes


def test_values_stored_by_older_versions_are_cleaned_on_load() -> None:
    columns = OutcomeColumns(["m"], ["tenant"])
    columns.put_encoded("a", 1.0, 1.0, {"tenant": "acme\n"}, {"m": 1.0})
    columns.put_encoded("b", 2.0, 2.0, {"tenant": "acme"}, {"m": 0.0})
    keys = {i.group.key: i.aggregate.n for i in columns.aggregate(0, 10, {"m": True}, {})}
    assert keys == {"": 2, "tenant=acme": 2}


def test_dataset_samples_fold_like_the_columns() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    samples = [
        (float(i), Sample(f"t{i}", "q", timestamp=at, tags={"tenant": t}))
        for i, t in enumerate(["a", "a", "b", "c\n", "d", "", "a"])
    ]
    folded = fold_tags(samples, ["tenant"], LabelLimits(LabelPolicy(max_values=2)))
    assert [s.tags.get("tenant") for _, s in folded] == ["a", "a", "b", OTHER, OTHER, None, "a"]
    assert folded[0][1] is samples[0][1]  # unchanged samples are not copied


def test_skips_and_errors_fold_too() -> None:
    columns = OutcomeColumns(["m"], ["tenant"])
    columns.put("a", 1.0, 1.0, {"tenant": "x"}, {"m": Skipped("no reference")})
    columns.put("b", 1.0, 1.0, {"tenant": "y"}, {"m": Score(1.0)})
    columns.put("c", 1.0, 1.0, {"tenant": "y"}, {"m": Score(1.0)})
    folds = columns.folds(0.0, LabelLimits(LabelPolicy(max_values=1)))
    got = {i.group.key: i.aggregate for i in columns.aggregate(0, 10, {"m": True}, {}, folds=folds)}
    assert got["tenant=other"].skip_reasons == {"no reference": 1}
