"""Jain–Kothari–Thakurta private online convex programming (``spec/private-oco-learners.md`` §4, §5.1–§5.3): the
POCP wrapper (output perturbation of a sensitivity-tracking OCP algorithm of :mod:`dpbandit.optim.gradient_descent`)
and the private learners PIGD (of IGD) and PGIGA (of GIGA). The setting, the declared bounds and the sensitivity
argument are those of :mod:`dpbandit.optim.gradient_descent`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpbandit.optim.gradient_descent import GIGA, IGD, OCPAlgorithm, check_privacy, readonly
from dpbandit.optim.losses import Loss
from dpbandit.optim.projections import Domain
from dpbandit.optim.protocol import StreamingLearner
from dpbandit.privacy.calibrate import gaussian_sigma_analytic
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.report import PrivacyEvent, PrivacyReport

__all__ = ["POCP", "PIGD", "PGIGA"]


class POCP(StreamingLearner):
    """Private OCP (Jain–Kothari–Thakurta Alg. 1; ``spec/private-oco-learners.md`` §5.1): output perturbation of a
    sensitivity-tracking OCP algorithm. Guarantee: (epsilon, delta)-**DP** of the whole release stream.

    Each round the wrapped ``algorithm`` updates its *uncorrupted, secret* iterate ``x_{t+1}`` and the learner
    releases ``xhat_{t+1} = Proj_C(x_{t+1} + b_{t+1})``, ``b_{t+1} ~ N(0, (Delta_{t+1} sigma_0)^2 I_d)``, with
    ``Delta_{t+1}`` the algorithm's sensitivity bound. ``xhat_1`` is the data-independent initial point.

    Calibration (``spec/private-oco-learners.md`` §4 [derived]): given the released history the other samples'
    losses coincide, so release t is a Gaussian mechanism with ``Delta_{t+1}/beta_{t+1} = 1/sigma_0``; the T
    releases compose (adaptively) into one Gaussian mechanism with ``mu = sqrt(T)/sigma_0``.
    ``sigma_0 = sqrt(T) * sigma_analytic(epsilon, delta, 1)`` (Balle–Wang analytic Gaussian, valid for every
    epsilon; the spec's classic ``sqrt(T) sqrt(2 ln(1.25/delta))/epsilon`` holds only for epsilon < 1). The ledger
    records T Gaussian releases of noise multiplier ``sigma_0``. ``epsilon = inf``: noise off, guarantee "none",
    and the releases are the algorithm's iterates.
    """

    name = "pocp"
    guarantee = "DP"

    def __init__(self, algorithm: OCPAlgorithm, *, epsilon: float = 1.0, delta: float = 1e-5,
                 rng: np.random.Generator | None = None):
        if not isinstance(algorithm, OCPAlgorithm):
            raise TypeError(f"algorithm must be an OCPAlgorithm (IGD, GIGA, ...), got {type(algorithm).__name__}")
        self.algorithm = algorithm
        self.epsilon, self.delta, _ = check_privacy(epsilon, delta, "gaussian")
        self.private = math.isfinite(self.epsilon)
        self.needs_rng = self.private
        if not self.private:
            self.guarantee = "none"
        self.domain = algorithm.domain
        T = algorithm.horizon
        self.sigma0 = gaussian_sigma_analytic(self.epsilon, self.delta, math.sqrt(T)) if self.private else 0.0
        super().__init__(algorithm.dim, T, algorithm.loss, rng)

    def _reset_state(self) -> None:
        self.algorithm.reset(None)
        self._xhat = self.algorithm.predict().copy()
        self.ledger = PrivacyLedger()
        if self.private:
            self.ledger.add_event(PrivacyEvent(
                "gaussian", self.sigma0, self.horizon, f"POCP output perturbation of {self.algorithm.name}",
                bound="docs/derivations.md#oco-4: T releases of multiplier sigma_0 = one Gaussian, "
                      "mu = sqrt(T)/sigma_0"))
        else:
            self.ledger.add_non_private(f"{self.algorithm.name} iterates, noise off")

    @property
    def n_clipped(self) -> int:
        return self.algorithm.n_clipped

    def predict(self) -> np.ndarray:
        return readonly(self._xhat)

    def update(self, x: Any, y: Any) -> None:
        self.algorithm.update(x, y)  # validates, clips and counts the sample first
        self.t += 1
        x_next = np.asarray(self.algorithm.predict())
        if not self.private:
            self._xhat = x_next.copy()
            return
        scale = self.algorithm.sensitivity() * self.sigma0
        self._xhat = self.domain.project(x_next + scale * self.rng.standard_normal(self.dim))

    def privacy_report(self) -> PrivacyReport:
        assumption = (f"{self.algorithm.sensitivity_assumption}; per-iterate sensitivity Delta_(t+1) of "
                      f"{self.algorithm.name} (docs/derivations.md#oco-5)")
        if not self.private:
            return self.ledger.report(0.0, guarantee="none", sensitivity_assumption=assumption)
        return self.ledger.report(self.delta, guarantee="DP", sensitivity_assumption=assumption)


class _PrivateOCP(POCP):
    """POCP of the OCP algorithm ``_algorithm``, built from that algorithm's parameters (those of
    :class:`ConstrainedLearner`) plus ``epsilon`` (inf: noise off) and ``delta``."""

    _algorithm: type[OCPAlgorithm]

    def __init__(self, dim: int, horizon: int, *, mu: float, loss: str | Loss = "squared",
                 domain: str | Domain = "l2-ball", radius: float = 1.0, x_bound: float = 1.0, y_bound: float = 1.0,
                 epsilon: float = 1.0, delta: float = 1e-5, initial: Any = None,
                 rng: np.random.Generator | None = None):
        algorithm = self._algorithm(dim, horizon, mu=mu, loss=loss, domain=domain, radius=radius, x_bound=x_bound,
                                    y_bound=y_bound, initial=initial)
        super().__init__(algorithm, epsilon=epsilon, delta=delta, rng=rng)


class PIGD(_PrivateOCP):
    """Private implicit gradient descent: :class:`POCP` of :class:`IGD` (``spec/private-oco-learners.md`` §5.2).
    (epsilon, delta)-DP; regret ``O(L^2 ln T/mu) + O(L sqrt(d) (L_loss/mu) sqrt(T) ln T sqrt(ln(1/delta))/epsilon)``.
    Parameters: those of :class:`ConstrainedLearner` plus ``epsilon`` (inf: noise off), ``delta``."""

    name = "pigd"
    _algorithm = IGD


class PGIGA(_PrivateOCP):
    """Private projected gradient descent: :class:`POCP` of :class:`GIGA` (``spec/private-oco-learners.md`` §5.3).
    (epsilon, delta)-DP. Parameters as :class:`PIGD`."""

    name = "pgiga"
    _algorithm = GIGA
