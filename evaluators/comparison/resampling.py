"""Resampled column sums for many metrics at once: the bootstrap and sign-flip kernels.

Both statistics of `compare` are linear in per-question weights, so R resamples of all
k metrics are one matrix product W (R × n) @ X (n × k):

- bootstrap (resample the n rows with replacement): w_ri = how often row i was drawn in
  resample r, a multinomial(n, 1/n) count vector; Σ_i w_ri x_i is the resampled sum.
- sign flip (the paired permutation null): s_ri = ±1 with probability ½ each;
  Σ_i s_ri x_i = 2 Σ_i b_ri x_i − Σ_i x_i with b_ri = (s_ri + 1) / 2 ∈ {0, 1}.

Resamples are made in chunks of rows (about `_CHUNK_BYTES` of float32 weights each), so
memory stays bounded whatever the number of resamples. Chunk c draws from its own
generator, `default_rng(seed.spawn(chunks)[c])`: the result depends on the seed, n and
the number of resamples only — not on how many threads ran the chunks. Two threads run
the chunks where there are several: drawing bits, the index arithmetic and the product
release the interpreter lock (bincount only partly), which measured ~15% faster than one
thread at 100,000 questions; the product itself already uses OpenBLAS's threads.

Bootstrap indices are exactly uniform on 0..n−1: Lemire's multiply-shift of 32 random
bits, i = ⌊u·n / 2³²⌋, rejecting the u whose low product bits fall below 2³² mod n. The
products run in float32 (a count matrix is 4 bytes per entry, the memory traffic is the
cost); counts and integer-valued sums stay exact below 2²⁴.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numpy.typing import NDArray

_CHUNK_BYTES = 32 << 20
"""float32 weights held per chunk (and per thread)."""
_BINCOUNT_BINS = 1 << 17
"""Bins counted per bincount call: small rows are counted many at a time (row offsets
keep them apart) while the count array stays in cache."""
_WORKERS = max(1, min(2, os.cpu_count() or 1))

Weights = Callable[[np.random.Generator, int, NDArray[np.float32]], None]
"""Fill the (rows × n) float32 array with one chunk's weights, drawn from the generator."""


def bootstrap_sums(
    values: NDArray[np.float32], resamples: int, seed: np.random.SeedSequence
) -> NDArray[np.float64]:
    """(resamples × k) sums Σ_i w_ri x_ij over bootstrap resamples of the n rows of
    `values` (n × k): each resample draws n rows with replacement, a row with all its
    columns."""
    return _sums(values, resamples, seed, _multinomial_counts).astype(np.float64)


def sign_flip_sums(
    values: NDArray[np.float32], resamples: int, seed: np.random.SeedSequence
) -> NDArray[np.float64]:
    """(resamples × k) sums Σ_i s_ri x_ij with independent random signs s_ri = ±1."""
    picked = _sums(values, resamples, seed, _random_bits).astype(np.float64)
    result: NDArray[np.float64] = 2.0 * picked - values.sum(axis=0, dtype=np.float64)
    return result


def all_sign_flip_sums(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """(2ⁿ × k) sums Σ_i s_i x_ij over every sign vector s ∈ {−1, 1}ⁿ, in float64 (the
    exact permutation distribution; n small)."""
    n, k = values.shape
    if n > 30:
        raise ValueError(f"exhaustive sign flips need n <= 30, got {n}")
    total = 1 << n
    per = max(1, _CHUNK_BYTES // (8 * max(n, 1)))
    out = np.empty((total, k), dtype=np.float64)
    shifts = np.arange(n, dtype=np.int64)
    for start in range(0, total, per):
        codes = np.arange(start, min(total, start + per), dtype=np.int64)
        bits = ((codes[:, None] >> shifts) & 1).astype(np.float64)
        np.matmul(bits, values, out=out[start : start + codes.size])
    result: NDArray[np.float64] = 2.0 * out - values.sum(axis=0)
    return result


def _sums(
    values: NDArray[np.float32],
    resamples: int,
    seed: np.random.SeedSequence,
    weights: Weights,
) -> NDArray[np.float32]:
    if values.ndim != 2 or values.dtype != np.float32:
        raise ValueError("values must be a 2-d float32 array")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    n, k = values.shape
    if n < 1:
        raise ValueError("resampling needs at least one row")
    values = np.ascontiguousarray(values)
    per = max(1, min(resamples, _CHUNK_BYTES // (4 * n)))
    bounds = [(s, min(resamples, s + per)) for s in range(0, resamples, per)]
    seeds = seed.spawn(len(bounds))
    out = np.empty((resamples, k), dtype=np.float32)
    workers = min(_WORKERS, len(bounds))

    def run(worker: int) -> None:
        buffer = np.empty((per, n), dtype=np.float32)  # reused: no page faults per chunk
        for c in range(worker, len(bounds), workers):
            start, stop = bounds[c]
            w = buffer[: stop - start]
            weights(np.random.default_rng(seeds[c]), n, w)
            np.matmul(w, values, out=out[start:stop])

    if workers == 1:
        run(0)
    else:
        with ThreadPoolExecutor(workers) as pool:
            for done in [pool.submit(run, w) for w in range(workers)]:
                done.result()
    return out


def _multinomial_counts(rng: np.random.Generator, n: int, out: NDArray[np.float32]) -> None:
    """Each row of `out` := bincount of n uniform draws from 0..n−1 (a bootstrap resample)."""
    rows = out.shape[0]
    per = max(1, min(rows, _BINCOUNT_BINS // n))
    scratch = _Scratch(per * n)
    offsets = (np.arange(per, dtype=np.int64) * n)[:, None]
    for start in range(0, rows, per):
        r = min(per, rows - start)
        idx = scratch.uniform_indices(rng.bit_generator, n, r * n)
        if r > 1:
            idx.reshape(r, n)[:] += offsets[:r]
        out[start : start + r] = np.bincount(idx, minlength=r * n).reshape(r, n)


class _Scratch:
    """Buffers for drawing up to `size` indices at a time (reused: no page faults)."""

    def __init__(self, size: int) -> None:
        self.product = np.empty(size, dtype=np.uint64)
        self.low = np.empty(size, dtype=np.uint32)
        self.rejected = np.empty(size, dtype=np.bool_)

    def uniform_indices(self, bits: np.random.BitGenerator, n: int, size: int) -> NDArray[np.int64]:
        """`size` exactly uniform indices in 0..n−1: Lemire's i = ⌊u·n / 2³²⌋, redrawing
        the u whose product's low 32 bits, u·n mod 2³², fall below 2³² mod n."""
        u = _raw32(bits, size)
        threshold = (1 << 32) % n
        if threshold:
            low = np.multiply(u, np.uint32(n), out=self.low[:size])  # wraps: mod 2³²
            bad = np.flatnonzero(np.less(low, threshold, out=self.rejected[:size]))
            while bad.size:
                fresh = _raw32(bits, bad.size)
                u[bad] = fresh
                bad = bad[np.multiply(fresh, np.uint32(n)) < threshold]
        product = self.product[:size]
        np.multiply(u, np.uint64(n), out=product, dtype=np.uint64)
        np.right_shift(product, np.uint64(32), out=product)
        return product.view(np.int64)


def _raw32(bits: np.random.BitGenerator, size: int) -> NDArray[np.uint32]:
    raw: NDArray[np.uint64] = bits.random_raw((size + 1) // 2)
    return raw.view(np.uint32)[:size]


def _random_bits(rng: np.random.Generator, n: int, out: NDArray[np.float32]) -> None:
    """Each entry of `out` := an independent fair 0/1 bit."""
    rows = out.shape[0]
    width = (n + 7) // 8
    raw: NDArray[np.uint64] = rng.bit_generator.random_raw((rows * width + 7) // 8)
    packed = raw.view(np.uint8)[: rows * width].reshape(rows, width)
    np.copyto(out, np.unpackbits(packed, axis=1, count=n))
