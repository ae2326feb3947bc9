"""The resampling kernels: draws are exact resamples, rows move as a whole, and the numbers
depend on the seed only — not on threads or chunking."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from evaluators.comparison import resampling
from evaluators.comparison.resampling import (
    _Scratch,
    all_sign_flip_sums,
    bootstrap_sums,
    sign_flip_sums,
)


class _ScriptedBits:
    """A bit generator that returns preset 32-bit words (two per raw 64-bit draw)."""

    def __init__(self, words: list[int]) -> None:
        self.words = np.array(words, dtype=np.uint32)

    def random_raw(self, size: int) -> np.ndarray:
        taken, self.words = self.words[: 2 * size], self.words[2 * size :]
        return taken.view(np.uint64).copy()


def test_bootstrap_rows_are_multinomial_resamples_of_the_rows() -> None:
    n = 5
    sums = bootstrap_sums(np.eye(n, dtype=np.float32), 20_000, np.random.SeedSequence(1))
    assert np.all(sums.sum(axis=1) == n)  # each resample draws n rows
    assert np.all(sums == np.round(sums)) and sums.min() >= 0
    assert sums.mean(axis=0) == pytest.approx(np.ones(n), abs=0.03)  # E count = 1
    assert sums.var(axis=0) == pytest.approx(np.full(n, 1 - 1 / n), abs=0.05)


def test_a_row_moves_with_all_its_columns() -> None:
    x = np.random.default_rng(0).random(300).astype(np.float32)
    sums = bootstrap_sums(np.column_stack([x, x, 2 * x]), 500, np.random.SeedSequence(3))
    np.testing.assert_array_equal(sums[:, 0], sums[:, 1])
    np.testing.assert_allclose(sums[:, 2], 2 * sums[:, 0], rtol=1e-6)


def test_rejected_words_are_drawn_again() -> None:
    # n = 3: 2^32 mod 3 = 1, so u = 0 (u·3 mod 2^32 = 0 < 1) is the one biased word.
    bits = _ScriptedBits([0, 2**31, 2**32 - 1, 0])
    idx = _Scratch(2).uniform_indices(bits, 3, 2)  # type: ignore[arg-type]
    # u = 0 rejected and replaced by 2^32 - 1 -> ⌊(2^32 - 1)·3 / 2^32⌋ = 2; 2^31 -> 1
    assert idx.tolist() == [2, 1]


@pytest.mark.parametrize("n", [1_000, 99_991])
def test_indices_are_uniform(n: int) -> None:
    bits = np.random.default_rng(5).bit_generator
    idx = _Scratch(2_000_000).uniform_indices(bits, n, 2_000_000)
    assert idx.min() >= 0 and idx.max() < n
    counts = np.bincount(idx, minlength=n)
    assert stats.chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize("kernel", [bootstrap_sums, sign_flip_sums])
def test_threads_and_chunks_do_not_change_the_numbers(
    kernel: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = np.random.default_rng(2).random((1_000, 3)).astype(np.float32)
    monkeypatch.setattr(resampling, "_CHUNK_BYTES", 4 * 1_000 * 64)  # 64 resamples a chunk
    runs = []
    for workers in (1, 2):
        monkeypatch.setattr(resampling, "_WORKERS", workers)
        runs.append(kernel(values, 1_000, np.random.SeedSequence(9)))  # type: ignore[operator]
    np.testing.assert_array_equal(runs[0], runs[1])
    other = kernel(values, 1_000, np.random.SeedSequence(10))  # type: ignore[operator]
    assert not np.array_equal(runs[0], other)


def test_sign_flips_are_fair_and_independent() -> None:
    n = 64
    sums = sign_flip_sums(np.ones((n, 1), dtype=np.float32), 20_000, np.random.SeedSequence(4))
    plus = (sums[:, 0] + n) / 2  # number of +1 signs
    assert np.all(plus == np.round(plus))
    assert plus.mean() == pytest.approx(n / 2, abs=0.1)
    assert plus.var() == pytest.approx(n / 4, rel=0.05)


def test_every_sign_pattern_once() -> None:
    sums = all_sign_flip_sums(np.array([[1.0], [2.0], [4.0]]))
    assert sorted(sums[:, 0].tolist()) == [-7.0, -5.0, -3.0, -1.0, 1.0, 3.0, 5.0, 7.0]


def test_kernel_input_checks() -> None:
    seed = np.random.SeedSequence(0)
    with pytest.raises(ValueError, match="float32"):
        bootstrap_sums(np.ones((3, 1)), 10, seed)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 1"):
        bootstrap_sums(np.ones((3, 1), dtype=np.float32), 0, seed)
    with pytest.raises(ValueError, match="n <= 30"):
        all_sign_flip_sums(np.ones((31, 1)))
