"""Comparison benchmark: what `ragpulse compare`'s statistics cost at scale, and whether
their p-values keep their promise (issue 20).

Three parts:

- **Scale.** `compare_paired` on `--metrics` metrics (a third 0/1 hit rates, the rest
  continuous scores, a quarter of them with ~10% of questions unscored) over `--questions`
  paired questions with `--resamples` resamples for both the sign-flip permutation
  p-values and the paired bootstrap intervals: wall and CPU time (median of `--repeat`),
  the two halves timed apart, and the process's peak RSS above its RSS before the call.
- **Reference, same run.** `scipy.stats.permutation_test` (paired, `permutation_type=
  'samples'`, vectorized, batches of 100) and `scipy.stats.bootstrap` (paired,
  percentile, vectorized, batches of 100) on ONE of those metrics with
  `--reference-resamples` resamples, scaled to `--resamples` and × `--metrics`: the ratio
  says how much the shared-draw matrix products save over running scipy per metric.
- **Calibration.** The data model of `hit_rate_pair`: `--datasets` seeded datasets of
  `--calibration-n` questions, a hit-rate metric with a latent per-question difficulty;
  how often identical systems are declared different (false-positive rate, nominal 5%)
  and how often a true +0.1 hit-rate difference is found (power), for the paired test on
  shared questions and the unpaired test on two independent question sets, with
  `--calibration-resamples` resamples (the test's 2,000 by default).

The machine is shared: the load average at the start is printed beside the figures.

Run: `.venv/bin/python -m benchmarks.comparison [--questions N] [--metrics M]
[--resamples R] [--reference-resamples R] [--datasets D] [--repeat K]`.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, special, stats

from evaluators.comparison import compare_paired, compare_unpaired
from evaluators.comparison.paired import bootstrap_mean_intervals, sign_flip_p_values

BASE_RATE = 0.6
"""A's expected hit rate in the calibration data."""
DIFFERENCE = 0.1
"""B's expected hit rate minus A's under the alternative."""
DIFFICULTY_SD = 3.5
"""sd of the per-question logit difficulty: identical systems then agree on ~80% of the
questions (discordance 2·E[p(1 − p)] ≈ 0.197), A and B (+0.1) on ~79%."""
CALIBRATION_SEED = 20


@dataclass(frozen=True)
class HitRateModel:
    """P(hit | question i, system S) = expit(μ_S + σ·z_i), z_i ~ N(0, 1) shared by A and B
    (a question's difficulty), outcomes independent given z. μ_A and μ_B are solved so that
    the expected hit rates are exactly `base` and `base + difference`."""

    sigma: float
    mu_a: float
    mu_b: float

    @classmethod
    def of(cls, base: float, difference: float, sigma: float) -> HitRateModel:
        nodes, weights = np.polynomial.hermite_e.hermegauss(80)
        weights = weights / weights.sum()

        def solve(rate: float) -> float:
            def gap(mu: float) -> float:
                return float((special.expit(mu + sigma * nodes) * weights).sum()) - rate

            root: float = optimize.brentq(gap, -30.0, 30.0)
            return root

        return cls(sigma, solve(base), solve(base + difference))


def hit_rate_pair(
    model: HitRateModel, n: int, different: bool, paired: bool, rng: np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """One dataset: A's and B's 0/1 hits on n questions — the same questions when `paired`
    (one difficulty per question for both), else two independent sets of n questions. B
    is a copy of A's system unless `different`."""
    z_a = rng.standard_normal(n)
    z_b = z_a if paired else rng.standard_normal(n)
    mu_b = model.mu_b if different else model.mu_a
    a = (rng.random(n) < special.expit(model.mu_a + model.sigma * z_a)).astype(np.float64)
    b = (rng.random(n) < special.expit(mu_b + model.sigma * z_b)).astype(np.float64)
    return a, b


def calibration_datasets(count: int, seed: int = CALIBRATION_SEED) -> Iterator[np.random.Generator]:
    """One independent generator per dataset (SeedSequence(seed).spawn(count))."""
    for child in np.random.SeedSequence(seed).spawn(count):
        yield np.random.default_rng(child)


def calibration_rates(
    datasets: int, n: int, resamples: int, model: HitRateModel | None = None
) -> dict[str, float]:
    """Share of datasets declared significant (alpha 0.05): {paired,unpaired}_{fpr,power}."""
    model = model or HitRateModel.of(BASE_RATE, DIFFERENCE, DIFFICULTY_SD)
    hits = dict.fromkeys(("paired_fpr", "paired_power", "unpaired_fpr", "unpaired_power"), 0)
    for i, rng in enumerate(calibration_datasets(datasets)):
        for different, suffix in ((False, "fpr"), (True, "power")):
            a, b = hit_rate_pair(model, n, different, True, rng)
            c = compare_paired(a[:, None], b[:, None], ["hit"], resamples=resamples, seed=i)
            hits[f"paired_{suffix}"] += c.metrics[0].significant
            a, b = hit_rate_pair(model, n, different, False, rng)
            u = compare_unpaired({"hit": a}, {"hit": b}, resamples=resamples, seed=i)
            hits[f"unpaired_{suffix}"] += u.metrics[0].significant
    return {k: v / datasets for k, v in hits.items()}


def scale_data(
    n: int, m: int, seed: int = 7
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], list[str]]:
    """m metrics on n paired questions: a third 0/1 hit rates (latent difficulty, B a bit
    better), the rest scores in [0, 1] with per-question noise, a quarter with ~10% of
    questions unscored."""
    rng = np.random.default_rng(seed)
    binary = m // 3
    z = rng.standard_normal((n, 1))
    a = np.empty((n, m))
    b = np.empty((n, m))
    a[:, :binary] = rng.random((n, binary)) < special.expit(0.4 + 2.0 * z)
    b[:, :binary] = rng.random((n, binary)) < special.expit(0.45 + 2.0 * z)
    quality = special.expit(z + rng.normal(0.0, 0.5, (n, m - binary)))
    a[:, binary:] = np.clip(quality + rng.normal(0.0, 0.1, quality.shape), 0.0, 1.0)
    b[:, binary:] = np.clip(quality + rng.normal(0.003, 0.1, quality.shape), 0.0, 1.0)
    valid = np.ones((n, m), dtype=bool)
    partial = rng.choice(m, size=max(1, m // 4), replace=False)
    valid[:, partial] = rng.random((n, partial.size)) >= 0.1
    return a, b, valid, [f"metric_{j}" for j in range(m)]


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _timed(fn: Callable[[], object], repeat: int) -> tuple[float, float, float]:
    """Median wall, fastest wall and median CPU seconds of `repeat` calls."""
    walls, cpus = [], []
    for _ in range(repeat):
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), min(walls), statistics.median(cpus)


def scale(n: int, m: int, resamples: int, repeat: int) -> dict[str, float]:
    a, b, valid, names = scale_data(n, m)
    gc.collect()
    before = _rss_mb()
    wall, fastest, cpu = _timed(
        lambda: compare_paired(a, b, names, valid=valid, resamples=resamples), repeat
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # kB on Linux
    d = np.where(valid, b - a, 0.0)
    perm_wall, _, _ = _timed(
        lambda: sign_flip_p_values(d, resamples, np.random.SeedSequence(0)), repeat
    )
    boot_wall, _, _ = _timed(
        lambda: bootstrap_mean_intervals(d, valid, resamples, 0.95, np.random.SeedSequence(0)),
        repeat,
    )
    return {
        "wall": wall,
        "fastest": fastest,
        "cpu": cpu,
        "perm": perm_wall,
        "boot": boot_wall,
        "peak_extra_mb": peak - before,
        "peak_mb": peak,
    }


def _mean_diff(x: NDArray[np.float64], y: NDArray[np.float64], axis: int) -> NDArray[np.float64]:
    result: NDArray[np.float64] = np.mean(y - x, axis=axis)
    return result


def scipy_reference(n: int, resamples: int) -> dict[str, float]:
    """Seconds of scipy's permutation test and bootstrap on one metric."""
    a, b, _, _ = scale_data(n, 3)
    x, y = a[:, -1], b[:, -1]
    started = time.perf_counter()
    stats.permutation_test(
        (x, y),
        _mean_diff,
        permutation_type="samples",
        vectorized=True,
        n_resamples=resamples,
        batch=100,
        rng=np.random.default_rng(0),
    )
    perm = time.perf_counter() - started
    started = time.perf_counter()
    stats.bootstrap(
        (x, y),
        _mean_diff,
        paired=True,
        vectorized=True,
        n_resamples=resamples,
        batch=100,
        method="percentile",
        rng=np.random.default_rng(0),
    )
    return {"perm": perm, "boot": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=100_000)
    parser.add_argument("--metrics", type=int, default=20)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--reference-resamples", type=int, default=10_000)
    parser.add_argument("--datasets", type=int, default=200)
    parser.add_argument("--calibration-n", type=int, default=200)
    parser.add_argument("--calibration-resamples", type=int, default=2_000)
    parser.add_argument(
        "--parts", default="scale,reference,calibration", help="comma-separated parts to run"
    )
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    load = os.getloadavg()
    print(
        f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
        f"{os.cpu_count()} CPUs, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}"
    )
    if "scale" in parts or "reference" in parts:
        ours = _print_scale(args)
        if "reference" in parts:
            _print_reference(args, ours)
    if "calibration" in parts:
        _print_calibration(args)
    return 0


def _print_scale(args: argparse.Namespace) -> float:
    big = scale(args.questions, args.metrics, args.resamples, args.repeat)
    print(
        f"\nScale: {args.metrics} metrics x {args.questions:,} paired questions x "
        f"{args.resamples:,} resamples (permutation p-values and bootstrap intervals), "
        f"median of {args.repeat}"
    )
    print(
        "| compare_paired wall (fastest) | CPU | of it: permutation | bootstrap "
        "| peak RSS above inputs |"
    )
    print("| ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| {big['wall']:.2f} s ({big['fastest']:.2f} s) | {big['cpu']:.2f} s "
        f"| {big['perm']:.2f} s | {big['boot']:.2f} s "
        f"| {big['peak_extra_mb']:.0f} MB (process {big['peak_mb']:.0f} MB) |"
    )
    return big["wall"]


def _print_reference(args: argparse.Namespace, ours: float) -> None:
    ref = scipy_reference(args.questions, args.reference_resamples)
    factor = args.resamples / args.reference_resamples * args.metrics
    scipy_total = (ref["perm"] + ref["boot"]) * factor
    print(
        f"\nReference: scipy on ONE metric, {args.reference_resamples:,} resamples, scaled "
        f"x{factor:g} (to {args.resamples:,} resamples and {args.metrics} metrics)"
    )
    print(
        "| scipy permutation_test (1 metric) | scipy bootstrap (1 metric) | scaled total "
        "| ratio to compare_paired (median) |"
    )
    print("| ---: | ---: | ---: | ---: |")
    print(
        f"| {ref['perm']:.1f} s | {ref['boot']:.1f} s | {scipy_total:,.0f} s | "
        f"{scipy_total / ours:,.0f}x |"
    )


def _print_calibration(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    rates = calibration_rates(args.datasets, args.calibration_n, args.calibration_resamples)
    seconds = time.perf_counter() - started
    print(
        f"\nCalibration: {args.datasets} datasets of {args.calibration_n} questions, hit rate "
        f"{BASE_RATE} (difficulty sd {DIFFICULTY_SD} logits), alpha 0.05, "
        f"{args.calibration_resamples:,} resamples ({seconds:.1f} s for "
        f"{4 * args.datasets} comparisons)"
    )
    print("| design | identical systems: declared different | +0.1 hit rate: found |")
    print("| --- | ---: | ---: |")
    print(
        f"| paired (shared questions) | {rates['paired_fpr']:.1%} | {rates['paired_power']:.1%} |"
    )
    print(
        f"| unpaired (independent question sets) | {rates['unpaired_fpr']:.1%} | "
        f"{rates['unpaired_power']:.1%} |"
    )


if __name__ == "__main__":
    raise SystemExit(main())
