"""Calibration: (epsilon, delta, sensitivity) -> noise scale, and the conversions the calibrations rest on.

Every function validates its arguments before computing (``spec/dp-testing-and-accounting.md`` §7): epsilon
finite > 0, delta in (0, 1) wherever a delta is required (Gaussian and generalized-Gaussian calibrations, zCDP
conversions) and never accepted by pure-DP ones, sensitivities and scales finite > 0. Errors name the parameter
and the offending value.

Conventions: ``sensitivity`` is the distance between the values of the released map on neighbouring inputs, in the
norm each function names (l2 for Gaussian, l1 for Laplace, the space's norm ``||.||`` for the generalized
Gaussian). Mechanism calibrations return the noise scale of :mod:`dpbandit.privacy.noise` with the same name.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
from scipy.optimize import minimize_scalar

from dpbandit.privacy.gaussian_calibration import (
    _delta_required,
    _positive,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
)
from dpbandit.privacy.noise import GaussianNoise, GeneralizedGaussianNoise, Noise
from dpbandit.validation import check_choice, check_epsilon, check_int, check_real

__all__ = [
    "gaussian_sigma_classic",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_sigma_analytic",
    "laplace_scale",
    "gamma_norm_scale",
    "KappaRegular",
    "kappa_regular_constants",
    "gg_sigma_paper",
    "zcdp_epsilon",
    "zcdp_rho_for",
    "gg_sigma_zcdp",
    "noisy_max_epsilon",
    "noisy_max_rho",
    "noisy_max_scale",
    "local_laplace_epsilon",
]

ZCDP_METHODS = ("cks", "closed-form")
NOISY_MAX_FORMS = ("laplace", "gumbel")


# ---------------------------------------------------------------------------------------------------------------
# Pure-DP noises
# ---------------------------------------------------------------------------------------------------------------


def laplace_scale(epsilon: float, sensitivity_l1: float) -> float:
    """Laplace scale ``b = Delta_1/epsilon``: iid Laplace(b) noise is epsilon-DP for l1 sensitivity ``Delta_1``
    (``spec/private-oco-learners.md`` §1)."""
    epsilon = check_epsilon(epsilon)
    sensitivity_l1 = _positive("sensitivity_l1", sensitivity_l1)
    return sensitivity_l1 / epsilon


def gamma_norm_scale(epsilon: float, sensitivity_l2: float) -> float:
    """Gamma-norm ("l2-Laplace") scale ``c = Delta_2/epsilon``: density ``exp(-||z||_2/c)`` gives epsilon-DP for l2
    sensitivity ``Delta_2``, for every epsilon (density ratio ``e^{||Delta||/c}``; ``spec/private-oco-learners.md``
    §1)."""
    epsilon = check_epsilon(epsilon)
    sensitivity_l2 = _positive("sensitivity_l2", sensitivity_l2)
    return sensitivity_l2 / epsilon


# ---------------------------------------------------------------------------------------------------------------
# Generalized Gaussian mechanism in kappa-regular spaces
# ---------------------------------------------------------------------------------------------------------------


class KappaRegular(NamedTuple):
    """A kappa-regular structure of ``(R^d, ||.||_q)`` (``spec/han-frank-wolfe.md`` §1, Definition 2.2).

    ``kappa``, ``kappa_plus``: the constants; the smooth norm is ``||x||_+ = norm_scale * ||x||_r``.
    ``norm_scale`` is 1 except in the Lemma 3.3 case (q < 2), where ``||x||_+ = d^(1/q - 1/2) ||x||_2``.
    """

    kappa: float
    kappa_plus: float
    r: float
    norm_scale: float

    def noise(self, sigma: float) -> Noise:
        """The noise ``GG_{||.||_+}(0, sigma^2)``, i.e. ``GG_{l_r}(0, (sigma/norm_scale)^2)``: a
        :class:`GaussianNoise` when ``r == 2``, otherwise a :class:`GeneralizedGaussianNoise` (last axis = d)."""
        sigma = _positive("sigma", sigma)
        if self.r == 2.0:
            return GaussianNoise(sigma / self.norm_scale)
        return GeneralizedGaussianNoise(sigma / self.norm_scale, self.r)


def kappa_regular_constants(q: float, d: int) -> KappaRegular:
    """kappa-regular constants of the gradient space ``(R^d, ||.||_q)``, ``1 <= q <= inf``.

    * ``q >= 2`` (``spec/errata.md`` E2, correcting ``spec/han-frank-wolfe.md`` §1 Lemma 3.2): if ``d >= 8`` and
      ``e^2 (ln d - 1) < q - 1``, ``(kappa, kappa_plus, r) = (e^2 (ln d - 1), ln d - 1, ln d)``; otherwise
      ``(q - 1, q - 1, q)``; noise norm ``l_r``. ``q = 2`` gives the Gaussian (kappa = kappa_plus = 1).
    * ``q = inf``: ``d >= 8`` takes the logarithmic branch above; for ``d < 8`` E2's second branch is void
      (``q - 1 = inf``) and the choice ``r = 2`` of E2's justification is used: ``(kappa, kappa_plus, r) = (d, 1, 2)``
      [derived: ``||x||_inf <= ||x||_2 <= sqrt(d) ||x||_inf`` and ``l_2^2`` is 1-smooth].
    * ``1 <= q < 2`` (p > 2; Lemma 3.3 of ``spec/han-frank-wolfe.md`` §1): ``kappa = d^(2/q - 1)``,
      ``kappa_plus = 1``, ``||x||_+ = d^(1/2 - 1/p) ||x||_2 = d^(1/q - 1/2) ||x||_2``, so the noise is
      ``N(0, sigma^2 d^(1 - 2/q) I)`` (``norm_scale = d^(1/q - 1/2)``; use :meth:`KappaRegular.noise`).
    """
    q = check_real("q", q, low=1.0, allow_inf=True)
    d = check_int("d", d, low=1)
    log_branch = d >= 8 and math.e**2 * (math.log(d) - 1.0) < q - 1.0
    if log_branch:
        return KappaRegular(math.e**2 * (math.log(d) - 1.0), math.log(d) - 1.0, math.log(d), 1.0)
    if math.isinf(q):
        return KappaRegular(float(d), 1.0, 2.0, 1.0)
    if q >= 2.0:
        return KappaRegular(q - 1.0, q - 1.0, q, 1.0)
    return KappaRegular(float(d) ** (2.0 / q - 1.0), 1.0, 2.0, float(d) ** (1.0 / q - 0.5))


def _check_kappa(kappa: Any) -> float:
    return check_real("kappa", kappa, low=1.0)


def gg_sigma_paper(epsilon: float, delta: float, sensitivity: float, kappa: float) -> float:
    """Lemma 2.1 calibration ``sigma = sqrt(2 kappa ln(1/delta)) * sensitivity / epsilon`` [code provenance].

    ``spec/han-frank-wolfe.md`` §1 with ``spec/errata.md`` E1 Correction 1: valid only for ``epsilon <= 1`` (the
    epsilon of this single release, e.g. epsilon/m per tree node); ``ValueError`` above. For any epsilon use
    :func:`gg_sigma_zcdp`. Known answer (E3): the DP-TOFW node sigma (3.2) is this at ``(eps/m, delta/m)`` with
    sensitivity ``2(L0 + L1 D)``: 1208.0 for T = 1000, kappa = 2, L0 = 1, L1 = 2, D = 4, (1, 1e-3).
    """
    epsilon = check_epsilon(epsilon)
    delta = _delta_required(delta)
    sensitivity = _positive("sensitivity", sensitivity)
    kappa = _check_kappa(kappa)
    if epsilon > 1.0:
        raise ValueError(
            f"epsilon must be <= 1 for the paper's generalized-Gaussian calibration (E1, docs/derivations.md#e1), "
            f"got {epsilon!r}; use gg_sigma_zcdp (valid for every epsilon)"
        )
    return math.sqrt(2.0 * kappa * math.log(1.0 / delta)) * sensitivity / epsilon


# ---------------------------------------------------------------------------------------------------------------
# zCDP <-> (epsilon, delta)
# ---------------------------------------------------------------------------------------------------------------


def _cks_offset(alpha: np.ndarray | float, log_delta: float):
    """``c(alpha)`` in the CKS bound ``eps(rho, delta) = min_{alpha>1} alpha rho + c(alpha)``,
    ``c(alpha) = ln(1 - 1/alpha) - ln(delta alpha)/(alpha - 1)`` (``spec/errata.md`` E1)."""
    return np.log1p(-1.0 / alpha) - (log_delta + np.log(alpha)) / (alpha - 1.0)


def _optimise_alpha(objective, *, maximise: bool) -> float:
    """Optimum over ``alpha = 1 + e^u`` of a unimodal objective: log-spaced grid, then bounded Brent refinement.
    Every alpha gives a valid bound, so the result is always valid; the search only affects tightness."""
    u = np.linspace(-20.0, 60.0, 1601)
    values = objective(1.0 + np.exp(u))
    sign = -1.0 if maximise else 1.0
    i = int(np.argmin(sign * values))
    lo, hi = u[max(i - 1, 0)], u[min(i + 1, u.size - 1)]
    res = minimize_scalar(
        lambda v: sign * float(objective(1.0 + math.exp(v))),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return sign * min(float(res.fun), sign * float(values[i]))


def zcdp_epsilon(rho: float, delta: float, method: str = "cks") -> float:
    """epsilon such that rho-zCDP implies (epsilon, delta)-DP.

    * ``"closed-form"``: ``rho + 2 sqrt(rho ln(1/delta))`` (Bun & Steinke 2016, Prop. 1.3);
    * ``"cks"``: Canonne–Kamath–Steinke 2020 (arXiv:2004.00010),
      ``min_{alpha>1} alpha rho + ln(1 - 1/alpha) - ln(delta alpha)/(alpha - 1)`` (``spec/errata.md`` E1); tighter.
      Known answers: rho = 1/32, delta = 1e-3 -> 0.68800 (OpenDP); rho = 0.5, delta = 1e-5 -> 4.7285
      (``spec/dp-testing-and-accounting.md`` §1.2, §3).
    """
    rho = _positive("rho", rho)
    delta = _delta_required(delta)
    method = check_choice("method", method, ZCDP_METHODS)
    if method == "closed-form":
        return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
    log_delta = math.log(delta)
    # epsilon >= 0 always holds; the optimiser can return -1e-5 for tiny rho.
    return max(0.0, _optimise_alpha(lambda a: a * rho + _cks_offset(a, log_delta), maximise=False))


def zcdp_rho_for(epsilon: float, delta: float, method: str = "cks") -> float:
    """The largest rho whose zCDP -> DP conversion ``method`` gives (epsilon, delta)-DP (``spec/errata.md`` E1).

    * ``"closed-form"``: ``(sqrt(ln(1/delta) + epsilon) - sqrt(ln(1/delta)))^2``;
    * ``"cks"``: inversion of the CKS bound, ``max_{alpha>1} (epsilon - c(alpha))/alpha``; e.g. 0.05939 at
      (1, 1e-3) and 0.03056 at (1, 1e-5).
    """
    epsilon = check_epsilon(epsilon)
    delta = _delta_required(delta)
    method = check_choice("method", method, ZCDP_METHODS)
    log_inv = math.log(1.0 / delta)
    if method == "closed-form":
        return (math.sqrt(log_inv + epsilon) - math.sqrt(log_inv)) ** 2
    log_delta = math.log(delta)
    return _optimise_alpha(lambda a: (epsilon - _cks_offset(a, log_delta)) / a, maximise=True)


def gg_sigma_zcdp(epsilon: float, delta: float, sensitivity: float, kappa: float, method: str = "cks") -> float:
    """Generalized-Gaussian calibration valid for every epsilon: ``sigma^2 = kappa s^2 / (2 rho*)``.

    ``spec/errata.md`` E1 Correction 2 [derived]: the GG mechanism of a kappa-regular space is rho-zCDP with
    ``rho <= kappa s^2/(2 sigma^2)`` (s the ``||.||``-sensitivity); ``rho* = zcdp_rho_for(epsilon, delta, method)``.
    For a tree releasing each leaf in L nodes pass ``kappa * L`` (composition adds rho; E6: T = 1000, L = 10,
    kappa = 2, s = 18, (1, 1e-3) -> 233.6 with CKS, 309.7 closed form). With kappa = 1 this is the Gaussian
    mechanism accounted through zCDP (looser than :func:`gaussian_sigma_analytic`).
    """
    epsilon = check_epsilon(epsilon)
    delta = _delta_required(delta)
    sensitivity = _positive("sensitivity", sensitivity)
    kappa = _check_kappa(kappa)
    method = check_choice("method", method, ZCDP_METHODS)
    rho = zcdp_rho_for(epsilon, delta, method)
    return sensitivity * math.sqrt(kappa / (2.0 * rho))


# ---------------------------------------------------------------------------------------------------------------
# Report-noisy-max and the local randomiser
# ---------------------------------------------------------------------------------------------------------------


def noisy_max_epsilon(scale: float, sensitivity: float, form: str = "laplace") -> float:
    """Pure-DP epsilon of ``noise.report_noisy_max`` with noise ``scale`` on scores of sensitivity ``sensitivity``.

    Both forms: ``epsilon = 2 Delta/scale`` (Laplace: non-monotone scores, Dwork–Roth Claim 3.9,
    ``spec/han-frank-wolfe.md`` §5; Gumbel = exponential mechanism ``P(i) ~ exp(score_i/scale)``,
    ``spec/errata.md`` E4 item 4).
    """
    scale = _positive("scale", scale)
    sensitivity = _positive("sensitivity", sensitivity)
    check_choice("form", form, NOISY_MAX_FORMS)
    return 2.0 * sensitivity / scale


def noisy_max_rho(scale: float, sensitivity: float, form: str = "laplace") -> float:
    """zCDP rho of ``noise.report_noisy_max``: ``epsilon^2/2`` for Laplace (epsilon-DP implies epsilon^2/2-zCDP,
    Bun & Steinke 2016 Prop. 1.4) and ``epsilon^2/8`` for Gumbel (epsilon-bounded range, Cesar & Rogers 2021),
    with ``epsilon = 2 Delta/scale`` (``spec/errata.md`` E4 items 3–4). The ``epsilon^2/8`` bound does not hold
    for the Laplace form."""
    form = check_choice("form", form, NOISY_MAX_FORMS)
    epsilon = noisy_max_epsilon(scale, sensitivity, form)
    return epsilon**2 / (2.0 if form == "laplace" else 8.0)


def noisy_max_scale(
    sensitivity: float, *, epsilon: float | None = None, rho: float | None = None, form: str = "laplace"
) -> float:
    """Noise scale of report-noisy-max for a pure-DP target ``epsilon`` or a zCDP target ``rho`` (exactly one).

    ``scale = 2 Delta/epsilon``; for ``rho``, ``epsilon = sqrt(2 rho)`` (Laplace) or ``sqrt(8 rho)`` (Gumbel), so
    the Gumbel form needs half the Laplace scale at the same rho (``spec/errata.md`` E4 items 3–4).
    """
    sensitivity = _positive("sensitivity", sensitivity)
    form = check_choice("form", form, NOISY_MAX_FORMS)
    if (epsilon is None) == (rho is None):
        raise ValueError("noisy_max_scale needs exactly one of epsilon or rho")
    if epsilon is not None:
        epsilon = check_epsilon(epsilon)
    else:
        rho = _positive("rho", rho)
        epsilon = math.sqrt((2.0 if form == "laplace" else 8.0) * rho)
    return 2.0 * sensitivity / epsilon


def local_laplace_epsilon(tau: Any, d: int) -> float:
    """Per-report LDP epsilon ``sum_j tau_j`` of ``noise.local_laplace`` with parameter ``tau`` (scalar or (d,)),
    for reports with ``|x_j| <= 1`` (van der Hoeven 2019, Lemma 1; ``spec/private-oco-learners.md`` §6).
    Infinite ``tau_j`` (no noise) gives ``inf``: that coordinate is not protected."""
    d = check_int("d", d, low=1)
    try:
        t = np.asarray(tau, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"tau must be a real number or an array of real numbers, got {tau!r}") from None
    if t.ndim > 1 or (t.ndim == 1 and t.shape[0] != d):
        raise ValueError(f"tau must be a scalar or have shape ({d},), got shape {t.shape}")
    if np.any(np.isnan(t)) or np.any(t <= 0):
        raise ValueError(f"tau must contain numbers in (0, inf], got {t.tolist()!r}")
    return float(np.sum(np.broadcast_to(t, (d,))))
