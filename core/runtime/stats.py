"""Statistics for latency samples: percentiles, a distribution-free interval for the median, and a bootstrap
interval for the ratio of two medians (a speedup). Pure numpy, deterministic for a given seed."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Interval", "Summary", "interval", "median_interval", "quantile_interval", "speedup_interval", "summarize"]

Z95 = 1.959963984540054


@dataclass(kw_only=True)
class Summary:
    n: int
    median: float
    mean: float
    p90: float
    p99: float
    min: float
    max: float
    std: float
    median_low: float  # 95 % confidence interval of the median
    median_high: float

    @property
    def relative_interval(self) -> float:
        """Width of the median's interval relative to the median (0.1 = ±5 %)."""
        return (self.median_high - self.median_low) / self.median if self.median > 0 else math.inf


@dataclass(frozen=True, kw_only=True)
class Interval:
    """A median over the runs and its 95 % interval (``interval``)."""

    median: float
    low: float
    high: float


def median_interval(sorted_values: np.ndarray, z: float = Z95) -> tuple[float, float]:
    """The order-statistic interval of the median: ranks n/2 ± z·√n/2 (no assumption about the distribution)."""
    n = len(sorted_values)
    if n == 0:
        return math.nan, math.nan
    half = z * math.sqrt(n) / 2
    low = max(math.floor(n / 2 - half), 0)
    high = min(math.ceil(n / 2 + half), n - 1)
    return float(sorted_values[low]), float(sorted_values[high])


def quantile_interval(sorted_values: np.ndarray, q: float, z: float = Z95) -> tuple[float, float]:
    """The order-statistic interval of the ``q`` quantile (0.5 for the median, 0.99 for p99): ranks
    n·q ± z·√(n·q·(1−q)), the same distribution-free method as ``median_interval``."""
    n = len(sorted_values)
    if n == 0:
        return math.nan, math.nan
    half = z * math.sqrt(n * q * (1 - q))
    # ranks counted from 1 (the k-th smallest of n), as the method has them, then as indices from 0: counted from
    # 0, a p99 of 16 requests got [max, max], an interval that left out its own estimate (230 ms, "248–248")
    low = min(max(math.floor(n * q - half), 1), n) - 1
    high = min(max(math.ceil(n * q + half), 1), n) - 1
    estimate = float(np.percentile(sorted_values, q * 100))
    return min(float(sorted_values[low]), estimate), max(float(sorted_values[high]), estimate)


def summarize(values: list[float] | np.ndarray) -> Summary:
    data = np.sort(np.asarray(values, dtype=np.float64))
    if data.size == 0:
        nan = math.nan
        return Summary(
            n=0, median=nan, mean=nan, p90=nan, p99=nan, min=nan, max=nan, std=nan, median_low=nan, median_high=nan
        )
    low, high = median_interval(data)
    return Summary(
        n=int(data.size),
        median=float(np.median(data)),
        mean=float(data.mean()),
        p90=float(np.percentile(data, 90)),
        p99=float(np.percentile(data, 99)),
        min=float(data[0]),
        max=float(data[-1]),
        std=float(data.std(ddof=1)) if data.size > 1 else 0.0,
        median_low=low,
        median_high=high,
    )


def speedup_interval(
    baseline: list[float] | np.ndarray, candidate: list[float] | np.ndarray, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """median(baseline) / median(candidate) and its 95 % bootstrap interval (percentile method)."""
    a = np.asarray(baseline, dtype=np.float64)
    b = np.asarray(candidate, dtype=np.float64)
    if a.size == 0 or b.size == 0:
        return math.nan, math.nan, math.nan
    ratio = float(np.median(a) / np.median(b))
    resamples = max(200, min(resamples, 4_000_000 // max(a.size, b.size)))  # bounded memory for long runs
    rng = np.random.default_rng(seed)
    medians_a = np.median(rng.choice(a, (resamples, a.size)), axis=1)
    medians_b = np.median(rng.choice(b, (resamples, b.size)), axis=1)
    ratios = medians_a / medians_b
    low, high = np.percentile(ratios, [2.5, 97.5])
    return ratio, float(low), float(high)


def interval(values: list[float]) -> Interval:
    """The median of ``values`` and its 95 % interval."""
    summary = summarize(values)
    return Interval(median=summary.median, low=summary.median_low, high=summary.median_high)
