"""Calibration of DP-POFW (``spec/han-frank-wolfe.md`` §5 as corrected by ``spec/errata.md`` E3, E4).

:func:`glm_lipschitz` bounds the per-sample gradient (L0) of a GLM loss on the l1 ball from the declared feature
and response bounds; :class:`POFWCalibration` turns (epsilon, delta, T, L0, L1, radius) into the per-step noise
scale of the noisy vertex selection (Gumbel / exponential-mechanism form by default, Laplace report-noisy-max as an
option) with the zCDP budget rho* of E1/E4, valid for every epsilon.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import digamma, expit

from dpbandit.optim.losses import LogisticLoss, Loss, SquaredLoss
from dpbandit.privacy.calibrate import ZCDP_METHODS, zcdp_rho_for
from dpbandit.validation import check_choice, check_delta, check_epsilon, check_int, check_real

__all__ = ["FORMS", "POFWCalibration", "glm_lipschitz"]

#: Noisy-selection forms: the exponential mechanism (Gumbel-max law, default) or Laplace report-noisy-max.
FORMS: tuple[str, ...] = ("gumbel", "laplace")
_EULER_GAMMA = 0.5772156649015329


def glm_lipschitz(loss: Loss, radius: float, feature_bound: float, response_low: float, response_high: float) -> float:
    """``L0 = sup ||grad f(theta; (x, y))||_inf`` over ``||theta||_1 <= radius``, ``||x||_inf <= feature_bound``,
    ``y in [response_low, response_high]``, for the GLM losses of :mod:`dpbandit.optim.losses`.

    With ``z = x^T theta``, ``|z| <= radius * feature_bound`` (Hoelder) and ``grad f = phi'(z, y) x``:
    ``SquaredLoss(c)``: ``2c (radius feature_bound + max(-low, high)) feature_bound``; ``LogisticLoss``:
    ``max(expit(radius feature_bound) - low, high - expit(-radius feature_bound)) feature_bound``.
    Other losses raise ``TypeError`` (pass the Lipschitz constant explicitly).
    """
    radius = check_real("radius", radius, low=0.0, low_inclusive=False)
    feature_bound = check_real("feature_bound", feature_bound, low=0.0, low_inclusive=False)
    low = check_real("response_low", response_low)
    high = check_real("response_high", response_high)
    if high < low:
        raise ValueError(f"response_high must be >= response_low, got [{low!r}, {high!r}]")
    z = radius * feature_bound
    if isinstance(loss, SquaredLoss):
        return 2.0 * loss.scale * (z + max(-low, high)) * feature_bound
    if isinstance(loss, LogisticLoss):
        return max(float(expit(z)) - low, high - float(expit(-z))) * feature_bound
    raise TypeError(f"no Lipschitz bound is known for {loss!r}; pass lipschitz= explicitly")


@dataclass(frozen=True)
class POFWCalibration:
    """The noise schedule of a DP-POFW stream (``spec/han-frank-wolfe.md`` §5, ``spec/errata.md`` E3, E4).

    ``rho`` is the stream's zCDP budget rho* (inf when the noise is off), ``harmonic`` is
    ``H = sum_{t=1}^T 1/(t+1)``, ``coefficient`` is c in the step-t noise scale ``c/sqrt(t+1)`` (``beta_t`` for
    the Gumbel form, ``lambda_t`` for Laplace; 0 when the noise is off). Build it with :meth:`build`.
    """

    epsilon: float  # inf = noise off
    delta: float
    horizon: int  # T
    radius: float  # r
    lipschitz: float  # L0 (l_inf gradient clip)
    smoothness: float  # L1 (E3)
    form: str
    zcdp_method: str
    rho: float  # rho*
    harmonic: float  # H
    coefficient: float  # scale_t = coefficient / sqrt(t+1)

    @classmethod
    def build(cls, *, epsilon: float, delta: float, horizon: int, radius: float, lipschitz: float, smoothness: float,
              form: str = "gumbel", zcdp_method: str = "cks") -> POFWCalibration:
        """Validate the parameters and compute rho*, H and the scale coefficient (E4 items 1-4)."""
        epsilon = check_epsilon(epsilon, allow_inf=True)
        delta = check_delta(delta, allow_zero=False)
        horizon = check_int("horizon", horizon, low=1)
        radius = check_real("radius", radius, low=0.0, low_inclusive=False)
        lipschitz = check_real("lipschitz", lipschitz, low=0.0, low_inclusive=False)
        smoothness = check_real("smoothness", smoothness, low=0.0)
        form = check_choice("form", form, FORMS)
        zcdp_method = check_choice("zcdp_method", zcdp_method, ZCDP_METHODS)
        harmonic = float(digamma(horizon + 2.0)) + _EULER_GAMMA - 1.0  # H_{T+1} - 1
        if math.isinf(epsilon):
            rho, coefficient = math.inf, 0.0
        else:
            rho = zcdp_rho_for(epsilon, delta, zcdp_method)
            spread = radius * (lipschitz + smoothness * 2.0 * radius)  # r (L0 + L1 D), D = 2r
            factor = math.sqrt(2.0) if form == "gumbel" else 2.0 * math.sqrt(2.0)
            coefficient = factor * spread * math.sqrt(harmonic / rho)
        return cls(epsilon, delta, horizon, radius, lipschitz, smoothness, form, zcdp_method, rho, harmonic,
                   coefficient)

    @property
    def noise_off(self) -> bool:
        """True for epsilon = inf (exact LMO, no guarantee)."""
        return self.coefficient == 0.0

    @property
    def diameter(self) -> float:
        """D = 2r."""
        return 2.0 * self.radius

    def sensitivity(self, t: Any) -> Any:
        """Score sensitivity ``Delta_t = 2r(L0 + L1 D)/(t+1)`` (replace-one; E3). Vectorised in ``t``."""
        return 2.0 * self.radius * (self.lipschitz + self.smoothness * self.diameter) / (np.asarray(t) + 1.0)

    def scale(self, t: Any) -> Any:
        """Noise scale of step t: ``beta_t`` (Gumbel) or ``lambda_t`` (Laplace), ``coefficient/sqrt(t+1)``."""
        if isinstance(t, int):
            return self.coefficient / math.sqrt(t + 1.0)
        return self.coefficient / np.sqrt(np.asarray(t) + 1.0)

    def step_epsilon(self, t: Any) -> Any:
        """Pure/bounded-range epsilon of step t, ``2 Delta_t/scale_t`` (inf when the noise is off)."""
        if self.noise_off:
            return np.full(np.shape(t), math.inf)
        return 2.0 * self.sensitivity(t) / self.scale(t)

    def step_rho(self, t: Any) -> Any:
        """zCDP rho of step t: ``eps_t^2/8`` (Gumbel, bounded range) or ``eps_t^2/2`` (Laplace); sums to rho*."""
        return self.step_epsilon(t) ** 2 / (8.0 if self.form == "gumbel" else 2.0)

    @property
    def mechanism(self) -> str:
        name = "exponential mechanism (Gumbel-max law)" if self.form == "gumbel" else "Laplace report-noisy-max"
        return f"DP-POFW l1-ball vertex selection, {name}, T={self.horizon} adaptive steps"

    @property
    def bound(self) -> str:
        item = ("E4 item 4 (docs/derivations.md#e4): eps_t-bounded range => eps_t^2/8-zCDP" if self.form == "gumbel"
                else "E4 item 3 (docs/derivations.md#e4): eps_t-DP => eps_t^2/2-zCDP")
        return f"{item}; sum over t = rho* (adaptive composition)"
