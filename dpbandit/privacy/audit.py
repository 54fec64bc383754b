"""Empirical differential-privacy audits: statistical **lower bounds** on a mechanism's epsilon.

``spec/dp-testing-and-accounting.md`` §5. An audit runs a mechanism many times on two neighbouring inputs and
looks for an output event whose probabilities differ by more than the claimed guarantee allows. It can catch a
violation; it can never prove privacy. Compare :attr:`AuditResult.epsilon_lower_bound` with the *claimed* epsilon:
a lower bound above the claim is a bug (at the stated confidence); a lower bound below it is no evidence of
privacy. Lower bounds at small delta are loose.

Two tools:

* :func:`audit` — the threshold-sweep lower bound recommended by the spec: a scalar statistic of the output, the
  events ``{statistic > t}`` and ``{statistic <= t}`` for a grid of thresholds, Clopper–Pearson intervals with a
  Bonferroni correction over every interval, both directions (A vs B and B vs A).
* :func:`histogram_test` — the Gilbert–McMillan (2018, arXiv:1806.06427) tester of dp_auditorium's
  ``HistogramTester``: estimates delta at a claimed epsilon from histograms and reports whether it exceeds the
  claimed delta beyond the error term.

User guide: ``docs/auditor.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import beta as beta_dist

from dpbandit.validation import check_delta, check_generator, check_int, check_real

__all__ = ["AuditResult", "audit", "projection", "HistogramTestResult", "histogram_test"]

Mechanism = Callable[[Any, np.random.Generator, int], Any]
Statistic = Callable[[np.ndarray], Any]


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit`.

    With probability at least ``confidence`` over the mechanism's randomness, the mechanism is **not**
    ``(epsilon, delta)``-DP for any ``epsilon < epsilon_lower_bound`` (at this ``delta``). A pass (a lower bound
    below the claimed epsilon) is never a proof of privacy.

    Attributes:
        epsilon_lower_bound: the bound (>= 0; 0 when no event beats the confidence intervals).
        delta: the delta at which the bound holds.
        n_samples: outputs drawn per input for the estimate (the pilot draws for thresholds not counted).
        confidence: simultaneous confidence level of all intervals.
        threshold: the threshold ``t`` of the best event (``None`` if the bound is 0).
        event: the best event, e.g. ``"statistic > 1.02"`` (``"none"`` if the bound is 0).
        direction: ``"A vs B"`` (bounds ``P_A(S) <= e^eps P_B(S) + delta``) or ``"B vs A"``.
        p_lower: lower Clopper–Pearson bound on the probability of the event under the first input.
        p_upper: upper Clopper–Pearson bound on its probability under the second input.
        n_thresholds: number of thresholds swept.
        method: description of the estimator.
    """

    epsilon_lower_bound: float
    delta: float
    n_samples: int
    confidence: float
    threshold: float | None
    event: str
    direction: str
    p_lower: float
    p_upper: float
    n_thresholds: int
    method: str

    def violates(self, claimed_epsilon: float) -> bool:
        """True if the lower bound exceeds ``claimed_epsilon``: the claim is refuted at ``confidence``."""
        claimed_epsilon = check_real("claimed_epsilon", claimed_epsilon, low=0.0, allow_inf=True)
        return self.epsilon_lower_bound > claimed_epsilon

    def __str__(self) -> str:
        head = (
            f"epsilon >= {self.epsilon_lower_bound:.4f} at delta = {self.delta:g} "
            f"with {100 * self.confidence:g}% confidence ({self.n_samples} samples per input)"
        )
        if self.threshold is None:
            detail = "no event separates the two inputs beyond the confidence intervals"
        else:
            first, second = self.direction.split(" vs ")
            detail = (
                f"best event: {self.event} ({self.direction}: P_{first}(S) >= {self.p_lower:.4g}, "
                f"P_{second}(S) <= {self.p_upper:.4g})"
            )
        return f"Empirical DP audit [{self.method}]: {head}; {detail}. A lower bound only: passing is no proof."


def projection(direction: Any) -> Statistic:
    """The statistic ``y -> <y, direction/||direction||_2>`` for vector outputs of shape ``(n, d)``.

    With ``direction = f(A) - f(B)`` this is the likelihood-ratio (most powerful) statistic for Gaussian noise and
    a good white-box choice for other spherical noises (``spec/dp-testing-and-accounting.md`` §5).
    """
    u = np.asarray(direction, dtype=float)
    if u.ndim != 1 or u.size == 0 or not np.all(np.isfinite(u)) or not np.any(u):
        raise ValueError(f"direction must be a finite, non-zero 1-D array, got {direction!r}")
    u = u / np.linalg.norm(u)

    def statistic(outputs: np.ndarray) -> np.ndarray:
        return np.asarray(outputs, dtype=float) @ u

    return statistic


def _draw_statistic(mechanism: Mechanism, data: Any, rng: np.random.Generator, n: int, statistic) -> np.ndarray:
    outputs = np.asarray(mechanism(data, rng, n))
    if outputs.ndim == 0 or outputs.shape[0] != n:
        raise ValueError(f"mechanism(input, rng, n) must return n = {n} outputs on axis 0, got shape {outputs.shape}")
    if statistic is None:
        if outputs.ndim != 1:
            raise ValueError(
                f"outputs have shape {outputs.shape[1:]} per sample; pass a scalar statistic "
                "(e.g. projection(f(A) - f(B)))"
            )
        values = outputs.astype(float)
    else:
        values = np.asarray(statistic(outputs), dtype=float)
        if values.shape != (n,):
            raise ValueError(f"statistic must map the n outputs to shape ({n},), got {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("the statistic of the mechanism's outputs must be finite (got NaN or inf)")
    return values


def _pilot_thresholds(pooled: np.ndarray, n_thresholds: int) -> np.ndarray:
    """Quantiles of the pilot statistic at tail levels spaced geometrically from ``1/len(pooled)`` to 1/2, on both
    sides: dense in the tails, where the likelihood ratio of most mechanisms is largest."""
    half = max(n_thresholds // 2, 1)
    tails = np.geomspace(1.0 / pooled.size, 0.5, half)
    levels = np.unique(np.concatenate([tails, 1.0 - tails]))
    return np.unique(np.quantile(pooled, levels))


def _tail_counts(values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Number of ``values > t`` for each threshold ``t``."""
    return values.size - np.searchsorted(np.sort(values), thresholds, side="right")


def _clopper_pearson(k: np.ndarray, n: int, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided-``tail`` Clopper–Pearson bounds (lower, upper) on a binomial proportion with k successes in n."""
    k = k.astype(float)
    with np.errstate(invalid="ignore"):
        lower = np.where(k > 0, beta_dist.ppf(tail, k, n - k + 1), 0.0)
        upper = np.where(k < n, beta_dist.ppf(1.0 - tail, k + 1, n - k), 1.0)
    return lower, upper


def audit(
    mechanism: Mechanism,
    input_a: Any,
    input_b: Any,
    *,
    n_samples: int,
    delta: float,
    rng: np.random.Generator,
    statistic: Statistic | None = None,
    confidence: float = 0.95,
    thresholds: Any = None,
    n_thresholds: int = 64,
    n_pilot: int | None = None,
) -> AuditResult:
    """Empirical lower bound on the epsilon of ``mechanism`` at ``delta`` from two neighbouring inputs.

    Contract (vectorised): ``mechanism(input, rng, n)`` returns ``n`` independent outputs stacked on axis 0
    (shape ``(n,)`` or ``(n, ...)``), drawing all randomness from ``rng``. ``statistic(outputs)`` maps them to
    ``n`` reals (default: the outputs themselves, which must then be scalars). Choose the statistic white-box: the
    likelihood ratio of the two output laws is optimal; :func:`projection` gives it for Gaussian noise.

    Estimator (``spec/dp-testing-and-accounting.md`` §5): for every threshold ``t`` and each event
    ``S in {statistic > t, statistic <= t}``, (epsilon, delta)-DP requires ``P_A(S) <= e^eps P_B(S) + delta`` and
    the same with A and B swapped, so ``eps >= ln((P_A(S) - delta) / P_B(S))``. The probabilities are replaced by
    Clopper–Pearson bounds (lower for the numerator, upper for the denominator); each of the ``2K`` proportions
    (K thresholds, two inputs) gets a two-sided interval at level ``1 - (1 - confidence)/(2K)`` (Bonferroni), so
    all bounds hold simultaneously and the maximum over events and directions is a valid lower bound at
    ``confidence``.

    Thresholds: ``thresholds`` if given (a fixed 1-D array), else quantiles of ``n_thresholds`` tail levels of a
    separate pilot run of ``n_pilot`` draws per input (default ``max(1000, n_samples // 10)``), so that the events
    are chosen independently of the samples that estimate their probabilities. Draw order from ``rng``: pilot A,
    pilot B, then A, B.

    A pass is never proof of privacy; the result is a lower bound only, and loose at small delta.
    """
    if not callable(mechanism):
        raise TypeError(f"mechanism must be callable as mechanism(input, rng, n), got {type(mechanism).__name__}")
    if statistic is not None and not callable(statistic):
        raise TypeError(f"statistic must be callable or None, got {type(statistic).__name__}")
    n_samples = check_int("n_samples", n_samples, low=1)
    delta = check_delta(delta)
    check_generator(rng)
    confidence = check_real("confidence", confidence, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    if thresholds is not None:
        grid = np.asarray(thresholds, dtype=float)
        if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid)):
            raise ValueError("thresholds must be a non-empty 1-D array of finite numbers")
        grid = np.unique(grid)
    else:
        n_thresholds = check_int("n_thresholds", n_thresholds, low=1)
        n_pilot = max(1000, n_samples // 10) if n_pilot is None else check_int("n_pilot", n_pilot, low=1)
        pilot_a = _draw_statistic(mechanism, input_a, rng, n_pilot, statistic)
        pilot_b = _draw_statistic(mechanism, input_b, rng, n_pilot, statistic)
        grid = _pilot_thresholds(np.concatenate([pilot_a, pilot_b]), n_thresholds)

    s_a = _draw_statistic(mechanism, input_a, rng, n_samples, statistic)
    s_b = _draw_statistic(mechanism, input_b, rng, n_samples, statistic)
    k = grid.size
    tail = (1.0 - confidence) / (4.0 * k)  # two-sided intervals at level alpha/(2k) for 2k proportions
    a_lo, a_hi = _clopper_pearson(_tail_counts(s_a, grid), n_samples, tail)
    b_lo, b_hi = _clopper_pearson(_tail_counts(s_b, grid), n_samples, tail)

    # (numerator lower bound, denominator upper bound, event text, direction) for the four event/direction pairs
    candidates = [
        (a_lo, b_hi, ">", "A vs B"),
        (b_lo, a_hi, ">", "B vs A"),
        (1.0 - a_hi, 1.0 - b_lo, "<=", "A vs B"),
        (1.0 - b_hi, 1.0 - a_lo, "<=", "B vs A"),
    ]
    method = f"threshold sweep, Clopper-Pearson, Bonferroni over {2 * k} intervals"
    best = (0.0, None, "none", "A vs B", 0.0, 1.0)
    for p_lo, p_hi, op, direction in candidates:
        num = p_lo - delta
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = np.where((num > 0) & (p_hi > 0), np.log(np.maximum(num, 1e-300) / p_hi), -np.inf)
        i = int(np.argmax(bound))
        if bound[i] > best[0]:
            best = (float(bound[i]), float(grid[i]), f"statistic {op} {grid[i]:.6g}", direction,
                    float(p_lo[i]), float(p_hi[i]))
    eps_lb, threshold, event, direction, p_lower, p_upper = best
    return AuditResult(
        epsilon_lower_bound=eps_lb,
        delta=delta,
        n_samples=n_samples,
        confidence=confidence,
        threshold=threshold,
        event=event,
        direction=direction,
        p_lower=p_lower,
        p_upper=p_upper,
        n_thresholds=k,
        method=method,
    )


@dataclass(frozen=True)
class HistogramTestResult:
    """Outcome of :func:`histogram_test`; truthy iff a violation was detected.

    ``delta_estimate``: the plug-in ``max`` over both directions of ``sum_bins max(0, p_1 - e^eps p_2)``;
    ``error_tolerance``: the Gilbert–McMillan error term subtracted from it; ``violation`` iff
    ``delta_estimate - error_tolerance >= delta``. No violation is no proof of privacy.
    """

    violation: bool
    delta_estimate: float
    error_tolerance: float
    epsilon: float
    delta: float
    n_samples: int
    n_bins: int
    beta: float

    def __bool__(self) -> bool:
        return self.violation


def histogram_test(
    samples_a: Any,
    samples_b: Any,
    epsilon: float,
    delta: float,
    bins: int | Any,
    beta: float = 0.05,
    *,
    value_range: tuple[float, float] | None = None,
) -> HistogramTestResult:
    """Gilbert–McMillan approximate-DP tester (dp_auditorium ``HistogramTester``, original error term).

    ``samples_a``, ``samples_b``: 1-D arrays of scalar outputs (or statistics) of the mechanism on neighbouring
    inputs. ``bins``: a number of equal-width bins over ``value_range`` (default: the pooled sample range — then
    the bins depend on the data, a mild departure from the fixed-bin analysis), or an increasing array of bin
    edges. Samples outside the range are clipped into the end bins, as dp_auditorium does.

    With ``n = min(len(samples_a), len(samples_b))`` and ``m`` bins, the error term is
    ``2(1 + e^eps) sqrt(m/n) + 6(1 + e^eps) sqrt(ln(4/beta')/(2n))`` (``spec/dp-testing-and-accounting.md`` §5);
    both directions are tested, each with ``beta' = beta/2``, so a correct (epsilon, delta)-DP mechanism is
    flagged with probability at most ``beta``.
    """
    a = np.asarray(samples_a, dtype=float)
    b = np.asarray(samples_b, dtype=float)
    for name, x in (("samples_a", a), ("samples_b", b)):
        if x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)):
            raise ValueError(f"{name} must be a non-empty 1-D array of finite numbers")
    epsilon = check_real("epsilon", epsilon, low=0.0)
    delta = check_delta(delta)
    beta = check_real("beta", beta, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    if np.ndim(bins) == 0:
        m = check_int("bins", bins, low=1)
        if value_range is None:
            lo, hi = float(min(a.min(), b.min())), float(max(a.max(), b.max()))
        else:
            lo = check_real("value_range[0]", value_range[0])
            hi = check_real("value_range[1]", value_range[1])
        if hi <= lo:
            hi = lo + 1.0
        edges = np.linspace(lo, hi, m + 1)
    else:
        edges = np.asarray(bins, dtype=float)
        if edges.ndim != 1 or edges.size < 2 or not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
            raise ValueError("bins must be a positive integer or a strictly increasing 1-D array of >= 2 edges")
        m = edges.size - 1
    p_a = np.histogram(np.clip(a, edges[0], edges[-1]), bins=edges)[0] / a.size
    p_b = np.histogram(np.clip(b, edges[0], edges[-1]), bins=edges)[0] / b.size
    e_eps = math.exp(epsilon)
    delta_estimate = max(np.maximum(p_a - e_eps * p_b, 0.0).sum(), np.maximum(p_b - e_eps * p_a, 0.0).sum())
    n = min(a.size, b.size)
    error = 2.0 * (1.0 + e_eps) * math.sqrt(m / n) + 6.0 * (1.0 + e_eps) * math.sqrt(
        math.log(4.0 / (beta / 2.0)) / (2.0 * n)
    )
    return HistogramTestResult(
        violation=bool(delta_estimate - error >= delta),
        delta_estimate=float(delta_estimate),
        error_tolerance=float(error),
        epsilon=epsilon,
        delta=delta,
        n_samples=n,
        n_bins=m,
        beta=beta,
    )
