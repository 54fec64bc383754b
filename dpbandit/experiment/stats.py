"""Paired statistics behind every verdict dpbandit prints.

Agents of one comparison run on common random numbers: seed ``s`` gives every agent the same instance, users and
reward noise (``dpbandit.seeding``). Differences between two agents are therefore taken *per seed* and their
uncertainty is the spread of those paired differences, which is much tighter than two independent intervals.

* :func:`paired_difference` — mean of ``a - b`` over common seeds with a Student-t interval.
* :func:`ratio_interval` — ``mean(num) / mean(den)`` with a paired percentile bootstrap over seeds (resampling seed
  indices, so each resample keeps the pairing).
* :func:`ratio_to_published` — ``published mean / mean(values)`` against a published mean ± sd over its own seeds
  (not paired: the published runs' seeds are not ours).
* :func:`verdict` — the one wording every command uses: "A beats B" only when the interval of the paired
  difference excludes zero, otherwise "not distinguishable (n seeds)".

Inputs are 1-D arrays in matching seed order or ``pandas.Series`` indexed by seed (paired on common seeds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dpbandit.validation import check_int, check_real

__all__ = ["BOOTSTRAP_MIN_SEEDS", "Interval", "paired", "paired_difference", "ratio_interval", "ratio_to_published",
           "verdict"]


#: Fewest seeds for which the verdicts use a bootstrap interval: with n seeds there are only C(2n-1, n) distinct
#: resamples (3 for n = 2, 10 for n = 3), and the percentile interval is then far too narrow to support a claim.
BOOTSTRAP_MIN_SEEDS = 5


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided interval at ``level`` over ``n`` paired seeds (nan bounds when n < 2)."""

    estimate: float
    low: float
    high: float
    n: int
    level: float
    method: str

    @property
    def determined(self) -> bool:
        """True when the interval exists (at least two seeds and finite bounds)."""
        return math.isfinite(self.low) and math.isfinite(self.high)

    def excludes(self, value: float) -> bool:
        """True when ``value`` lies outside the closed interval (False when the interval is undetermined)."""
        return self.determined and (value < self.low or value > self.high)

    def __str__(self) -> str:
        if not self.determined:
            return f"{self.estimate:.4g} (n={self.n}: no interval)"
        return f"{self.estimate:.4g} [{self.low:.4g}, {self.high:.4g}] ({self.level:.0%} {self.method}, n={self.n})"


def paired(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    """Two float arrays of equal length: Series are aligned on their common index (seeds), arrays taken as given."""
    if isinstance(a, pd.Series) and isinstance(b, pd.Series):
        joined = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
        a, b = joined["a"], joined["b"]
    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"paired samples need equal lengths (one value per seed), got {x.size} and {y.size}")
    if x.size == 0:
        raise ValueError("paired samples are empty: the two agents share no seed")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("paired samples contain nan or inf")
    return x, y


def _level(level: Any) -> float:
    return check_real("level", level, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)


def paired_difference(a: Any, b: Any, *, level: float = 0.95) -> Interval:
    """Mean of the per-seed differences ``a - b`` with a Student-t interval (nan bounds with one seed)."""
    level = _level(level)
    x, y = paired(a, b)
    d = x - y
    mean, n = float(d.mean()), d.size
    if n < 2:
        return Interval(mean, math.nan, math.nan, n, level, "paired t")
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * d.std(ddof=1) / math.sqrt(n))
    return Interval(mean, mean - half, mean + half, n, level, "paired t")


def ratio_interval(num: Any, den: Any, *, level: float = 0.95, n_boot: int = 10_000, seed: int = 0) -> Interval:
    """``mean(num) / mean(den)`` with a paired percentile-bootstrap interval over seeds.

    Each bootstrap resample draws seed indices with replacement and keeps both values of a seed together. The
    bootstrap stream is ``numpy.random.default_rng(SeedSequence(seed))``, so the interval is reproducible. With few
    seeds (< 10) percentile intervals are somewhat too narrow; the seed count is always printed beside them.
    """
    level = _level(level)
    n_boot = check_int("n_boot", n_boot, low=100)
    x, y = paired(num, den)
    if y.mean() <= 0 or (y < 0).any():
        raise ValueError("ratio_interval needs a non-negative denominator sample with a positive mean")
    n = x.size
    point = float(x.mean() / y.mean())
    if n < 2:
        return Interval(point, math.nan, math.nan, n, level, "paired bootstrap")
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    idx = rng.integers(0, n, size=(n_boot, n))
    dens = y[idx].mean(axis=1)
    ratios = np.divide(x[idx].mean(axis=1), dens, out=np.full(n_boot, np.inf), where=dens > 0)
    low, high = np.quantile(ratios, [0.5 - level / 2, 0.5 + level / 2])
    return Interval(point, float(low), float(high), n, level, "paired bootstrap")


def ratio_to_published(published_mean: float, published_sd: float, published_n: int, values: Any, *,
                       level: float = 0.95, n_boot: int = 10_000, seed: int = 0) -> Interval:
    """``published_mean / mean(values)`` with a percentile-bootstrap interval that carries both uncertainties:
    each resample draws ``values`` with replacement (our seeds) and the published mean from
    ``N(published_mean, published_sd^2 / published_n)`` (the sampling law of a mean over ``published_n`` seeds,
    normal approximation). ``n`` of the result is the number of our seeds; nan bounds with one seed.
    """
    level = _level(level)
    n_boot = check_int("n_boot", n_boot, low=100)
    published_mean = check_real("published_mean", published_mean, low=0.0, low_inclusive=False)
    published_sd = check_real("published_sd", published_sd, low=0.0)
    published_n = check_int("published_n", published_n, low=1)
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0 or not np.isfinite(x).all() or (x < 0).any() or x.mean() <= 0:
        raise ValueError("values must be a non-empty finite non-negative sample with a positive mean")
    point = float(published_mean / x.mean())
    if x.size < 2:
        return Interval(point, math.nan, math.nan, x.size, level, "bootstrap vs published mean")
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    published = published_mean + published_sd / math.sqrt(published_n) * rng.standard_normal(n_boot)
    ratios = np.divide(published, means, out=np.full(n_boot, np.inf), where=means > 0)
    low, high = np.quantile(ratios, [0.5 - level / 2, 0.5 + level / 2])
    return Interval(point, float(low), float(high), x.size, level, "bootstrap vs published mean")


def verdict(a_name: str, b_name: str, a: Any, b: Any, *, lower_is_better: bool = True, level: float = 0.95,
            quantity: str = "regret") -> str:
    """One line comparing two agents on common seeds: who beats whom, or "not distinguishable (n seeds)".

    ``a`` and ``b`` are per-seed values of ``quantity`` (final regret by default, where lower is better). The line
    states the paired difference ``b - a`` (positive = ``a_name`` better when lower is better) with its interval.
    """
    diff = paired_difference(b, a, level=level) if lower_is_better else paired_difference(a, b, level=level)
    detail = f"{quantity} advantage of {a_name}: {diff}"
    if not diff.determined:
        return f"{a_name} vs {b_name}: undetermined (one seed); {detail}"
    if diff.low > 0:
        return f"{a_name} beats {b_name}; {detail}"
    if diff.high < 0:
        return f"{b_name} beats {a_name}; {detail}"
    return f"{a_name} vs {b_name}: not distinguishable ({diff.n} seeds); {detail}"
