"""The Gaussian mechanism's calibration: the classic bound and the exact (analytic) privacy curve of Balle & Wang
2018, delta(epsilon) -> epsilon(delta) and sigma(epsilon, delta), computed without cancellation for every epsilon
(``spec/dp-testing-and-accounting.md`` §1.1-§1.2). Re-exported by :mod:`dpbandit.privacy.calibrate`, whose
conventions apply: l2 sensitivity, arguments validated before computing, errors naming the parameter.
"""

from __future__ import annotations

import math
from typing import Any

from scipy.special import erfcx, log_ndtr

from dpbandit.validation import check_delta, check_epsilon, check_real

__all__ = ["gaussian_sigma_classic", "gaussian_delta", "gaussian_epsilon", "gaussian_sigma_analytic"]


def _positive(name: str, value: Any) -> float:
    return check_real(name, value, low=0.0, low_inclusive=False)


def _delta_required(delta: Any) -> float:
    return check_delta(delta, allow_zero=False)


def gaussian_sigma_classic(epsilon: float, delta: float, sensitivity: float) -> float:
    """Classic Gaussian calibration ``sigma = sqrt(2 ln(1.25/delta)) * sensitivity / epsilon`` (l2 sensitivity).

    (epsilon, delta)-DP only for ``epsilon < 1`` (Dwork–Roth Thm A.1; ``spec/private-oco-learners.md`` §1,
    ``spec/dp-testing-and-accounting.md`` §1.2); raises ``ValueError`` otherwise. Use
    :func:`gaussian_sigma_analytic`, which is valid for every epsilon and never larger.
    """
    epsilon = check_epsilon(epsilon)
    delta = _delta_required(delta)
    sensitivity = _positive("sensitivity", sensitivity)
    if epsilon >= 1.0:
        raise ValueError(
            f"epsilon must be < 1 for the classic Gaussian calibration, got {epsilon!r}; "
            "use gaussian_sigma_analytic (valid for every epsilon)"
        )
    return math.sqrt(2.0 * math.log(1.25 / delta)) * sensitivity / epsilon


def _gaussian_delta(mu: float, epsilon: float) -> float:
    """Balle–Wang privacy curve of the Gaussian mechanism with ``mu = sensitivity/sigma``:
    ``delta = Phi(a) - e^epsilon Phi(b)``, ``a = mu/2 - epsilon/mu``, ``b = -mu/2 - epsilon/mu``, in log space.

    ``log(e^epsilon Phi(b) / Phi(a))`` is computed as ``L(b) - L(a)`` with ``L(x) = log Phi(x) + x^2/2``: the terms
    ``epsilon - b^2/2 + a^2/2`` cancel exactly (``a^2 - b^2 = -2 epsilon``), so no two huge numbers are subtracted
    and the curve stays accurate (and finite) for every epsilon, also where ``epsilon/mu`` is 1e12."""
    a, b = mu / 2.0 - epsilon / mu, -mu / 2.0 - epsilon / mu
    log_a = float(log_ndtr(a))
    if log_a == -math.inf:
        return 0.0
    return max(0.0, -math.exp(log_a) * math.expm1(_log_ndtr_scaled(b) - _log_ndtr_scaled(a)))


def _log_ndtr_scaled(x: float) -> float:
    """``log Phi(x) + x^2/2``, stable for very negative ``x`` (``Phi(x) = erfcx(-x/sqrt 2) e^{-x^2/2} / 2``)."""
    if x < 0.0:
        return math.log(float(erfcx(-x / math.sqrt(2.0))) / 2.0)
    return float(log_ndtr(x)) + x * x / 2.0


def _bisect(bad, lo: float, hi: float) -> float:
    """Smallest ``x`` in ``[lo, hi]`` (to float precision) with ``bad(x)`` False, for ``bad`` True at ``lo``,
    False at ``hi`` and monotone. Returns an ``x`` at which ``bad`` was evaluated False (fail-closed)."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if bad(mid):
            lo = mid
        else:
            hi = mid
    return hi


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """Exact delta(epsilon) of the Gaussian mechanism with noise ``sigma`` and l2 sensitivity ``sensitivity``.

    Balle & Wang 2018 (arXiv:1805.06530), ``spec/dp-testing-and-accounting.md`` §1.1:
    ``delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)`` with ``mu = sensitivity/sigma``.
    ``epsilon = 0`` is allowed here (it gives the total-variation distance).
    """
    sigma = _positive("sigma", sigma)
    epsilon = check_real("epsilon", epsilon, low=0.0)
    sensitivity = _positive("sensitivity", sensitivity)
    return _gaussian_delta(sensitivity / sigma, epsilon)


def gaussian_epsilon(sigma: float, delta: float, sensitivity: float) -> float:
    """Smallest epsilon >= 0 with ``gaussian_delta(sigma, epsilon, sensitivity) <= delta`` (analytic Gaussian).

    Balle & Wang 2018; ``spec/dp-testing-and-accounting.md`` §1.1–§1.2 (sigma = 1, delta = 1e-5 -> 4.3772). A tree
    releasing every leaf in L nodes of per-node std sigma is exactly this with ``sigma / sqrt(L)`` (§1.1).
    The result errs on the safe side: the returned epsilon satisfies the delta constraint in floating point.
    """
    sigma = _positive("sigma", sigma)
    delta = _delta_required(delta)
    sensitivity = _positive("sensitivity", sensitivity)
    mu = sensitivity / sigma

    def bad(eps: float) -> bool:
        return _gaussian_delta(mu, eps) > delta

    if not bad(0.0):
        return 0.0
    hi = 1.0
    while bad(hi):
        hi *= 2.0
    return _bisect(bad, 0.0, hi)


def gaussian_sigma_analytic(epsilon: float, delta: float, sensitivity: float) -> float:
    """Smallest sigma making the Gaussian mechanism (epsilon, delta)-DP, for every epsilon > 0 (analytic Gaussian).

    Balle & Wang 2018 (the same calibration as ``dp_accounting.get_sigma_gaussian``, which it matches to 1e-9);
    ``spec/dp-testing-and-accounting.md`` §1.2, §3: (1, 1e-5, 1) -> 3.731. Errs on the safe side in floating point.
    """
    epsilon = check_epsilon(epsilon)
    delta = _delta_required(delta)
    sensitivity = _positive("sensitivity", sensitivity)

    def bad(sigma: float) -> bool:
        return _gaussian_delta(sensitivity / sigma, epsilon) > delta

    lo = hi = sensitivity
    while not bad(lo):
        lo /= 2.0
    while bad(hi):
        hi *= 2.0
    return _bisect(bad, lo, hi)
