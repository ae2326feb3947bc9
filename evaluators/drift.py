"""Sequential drift detection: a one-sided CUSUM on standardised per-sample scores.

A series (one metric of one group) has per-sample values in time order. Against a
baseline mean mu0 and spread sigma0, each value becomes a standardised step towards
"worse", z_i = d * (x_i - mu0) / sigma0 with d = -1 when higher is better and +1 when
lower is better, and Page's CUSUM accumulates them:

    S_0 = 0,    S_t = max(0, S_{t-1} + z_t - k)

It alarms when S_t >= h. `k` is half the standardised shift it is tuned to catch fastest
(delta = relative drop x mu0 / sigma0); `h` sets how rarely it alarms on steady data: its
in-control average run length (ARL0, in samples) follows Siegmund's approximation for
normal steps (Siegmund 1985; Basseville & Nikiforov 1993, eq. 5.2.44),

    ARL0(h, k) = (exp(2 k b) - 2 k b - 1) / (2 k^2),    b = h + 1.166,

and `threshold` inverts it. A monitor with N series, each with r samples a week, that may
page falsely at most F times a week (family-wise) gives each series ARL0 = N r / F. The
expected delay to alarm after a shift delta > k is about b / (delta - k) samples
(`detection_delay`), from which `detectable_shift` gives the smallest shift caught within
a given number of samples.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

SIEGMUND_CORRECTION = 1.166
"""2 x 0.583, the overshoot correction of Siegmund's approximation for normal steps."""


def cusum(z: np.ndarray, k: float) -> np.ndarray:
    """S_t for every t (upper one-sided CUSUM with reference value k), vectorised:
    S_t = C_t - min(0, min_{j<=t} C_j) with C the cumulative sum of (z - k)."""
    c = np.cumsum(np.asarray(z, dtype=np.float64) - k)
    if c.size == 0:
        return c
    return c - np.minimum(np.minimum.accumulate(c), 0.0)


def log_arl0(h: float, k: float) -> float:
    """log of `arl0` (finite where the run length itself overflows a float)."""
    if k <= 0:
        raise ValueError("k must be positive")
    a = 2.0 * k * (h + SIEGMUND_CORRECTION)
    if a <= 30.0:
        return math.log(math.expm1(a) - a) - math.log(2.0 * k * k)
    # expm1(a) - a = e^a (1 - (a + 1) e^-a), without forming e^a
    return a + math.log1p(-(a + 1.0) * math.exp(-a)) - math.log(2.0 * k * k)


def log_run_length(h: float, drift: float) -> float:
    """log of Siegmund's run length of steps N(-drift, 1) against threshold h, for a drift
    of either sign (drift <= 0: the walk climbs, the run length is about b / |drift|)."""
    return float(log_run_lengths(np.array([h]), np.array([drift]))[0])


def log_run_lengths(h: np.ndarray, drift: np.ndarray) -> np.ndarray:
    """`log_run_length` of each (h, drift) pair, vectorised."""
    b = h + SIEGMUND_CORRECTION
    a = 2.0 * drift * b
    tiny = np.abs(a) < 1e-4
    large = a > 30.0
    safe_a = np.where(tiny | large, 1.0, a)
    safe_d = np.where(tiny | large, 1.0, drift)
    # expm1(a) - a = a^2 / 2 (1 + a / 3 + ...): the series near 0, no cancellation
    near = 2.0 * np.log(b) + np.log1p(a / 3.0 + a * a / 12.0)
    # expm1(a) - a = e^a (1 - (a + 1) e^-a) for a large a, without forming e^a
    big_a = np.where(large, a, 31.0)
    big_d = np.where(large, drift, 1.0)
    far = big_a + np.log1p(-(big_a + 1.0) * np.exp(-big_a)) - np.log(2.0 * big_d * big_d)
    middle = np.log(np.expm1(safe_a) - safe_a) - np.log(2.0 * safe_d * safe_d)
    return np.asarray(np.where(tiny, near, np.where(large, far, middle)), dtype=np.float64)


_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(48)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()
_SCALE_NODES, _SCALE_WEIGHTS = np.polynomial.hermite_e.hermegauss(9)
_SCALE_WEIGHTS = _SCALE_WEIGHTS / _SCALE_WEIGHTS.sum()


def alarm_rate(h: float, k: float, bias_sd: float, scale_sd: float = 0.0) -> float:
    """False alarms per step of a CUSUM with reference value k whose steps are standardised
    by an estimated baseline: the steps' true mean is N(0, bias_sd^2), not 0, and their
    true spread r = sigma / sigma-hat is log-normal with sd `scale_sd` of log r, not 1; so
    the rate is the average over both of 1 / ARL, where steps N(bias - k, r^2) against h
    are unit steps of drift (k - bias) / r against h / r (Gauss-Hermite quadrature)."""
    scales = np.exp(scale_sd * _SCALE_NODES) if scale_sd > 0 else np.ones(1)
    weights = _SCALE_WEIGHTS if scale_sd > 0 else np.ones(1)
    r = scales[:, None]
    drifts = (k - r * bias_sd * _NODES[None, :]) / r
    logs = log_run_lengths(np.broadcast_to(h / r, drifts.shape), drifts)
    return float(np.sum(weights[:, None] * _WEIGHTS[None, :] * np.exp(-logs)))


def estimated_threshold(
    target_arl0: float, k: float, bias_sd: float, scale_sd: float = 0.0
) -> float:
    """The h whose false-alarm rate, averaged over the baseline's estimation error, is one in
    `target_arl0` steps. `bias_sd` is the standard error of the baseline mean in step units,
    sqrt(traces per step / baseline traces), and `scale_sd` that of log(sigma-hat) (0 for
    a binary metric, whose spread follows from its mean): with both 0 this is `threshold`.
    A baseline of a few dozen values makes a CUSUM alarm several times more often than
    Siegmund's run length says when its mean happens to sit on the good side or its spread
    comes out small (Jones, Champ & Rigdon 2001), so the threshold is raised until the
    average rate is the target's (Gandy & Kvaloy 2013 take a quantile of the rate instead;
    the average is what a family-wise weekly budget counts)."""
    if bias_sd <= 0 and scale_sd <= 0:
        return threshold(target_arl0, k)
    if target_arl0 <= 1:
        raise ValueError("the target run length must exceed one sample")
    goal = -math.log(target_arl0)

    def excess(h: float) -> float:
        return math.log(alarm_rate(h, k, bias_sd, scale_sd)) - goal

    if excess(0.0) <= 0:
        return 0.0
    high = max(threshold(target_arl0, k), 1.0)
    while excess(high) > 0:
        high *= 2.0
        if high > 1e6:
            return math.inf
    return float(brentq(excess, 0.0, high, xtol=1e-6))


def arl0(h: float, k: float) -> float:
    """In-control average run length (samples) of the CUSUM (Siegmund's approximation)."""
    log = log_arl0(h, k)
    return math.exp(log) if log < 700 else math.inf


def threshold(target_arl0: float, k: float) -> float:
    """The h whose in-control average run length is `target_arl0` samples."""
    if target_arl0 <= 1:
        raise ValueError("the target run length must exceed one sample")
    goal = math.log(target_arl0)
    if log_arl0(0.0, k) >= goal:
        return 0.0
    high = 1.0
    while log_arl0(high, k) < goal:
        high *= 2.0
    return float(brentq(lambda h: log_arl0(h, k) - goal, 0.0, high))


def detection_delay(shift: float, k: float, h: float) -> float:
    """Expected samples from a shift of `shift` standard deviations to the alarm (inf when
    the shift is not above k)."""
    if shift <= k:
        return math.inf
    return (h + SIEGMUND_CORRECTION) / (shift - k)


def detectable_shift(samples: float, target_arl0: float) -> float:
    """The smallest shift (in standard deviations) a CUSUM tuned to it (k = shift / 2) and
    held to `target_arl0` catches within `samples` samples on average."""
    if samples <= 0:
        return math.inf

    def excess(shift: float) -> float:
        k = shift / 2.0
        return detection_delay(shift, k, threshold(target_arl0, k)) - samples

    low, high = 1e-3, 1.0
    if excess(low) <= 0:
        return low
    while excess(high) > 0:
        high *= 2.0
        if high > 1e3:
            return math.inf
    return float(brentq(excess, low, high, xtol=1e-4))


def samples_needed(shift: float, target_arl0: float) -> float:
    """Samples a CUSUM tuned to `shift` (k = shift / 2) and held to `target_arl0` takes,
    on average, to catch that shift: the inverse of `detectable_shift`."""
    if shift <= 0:
        return math.inf
    k = shift / 2.0
    return detection_delay(shift, k, threshold(target_arl0, k))
