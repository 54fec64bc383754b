"""PQFTL: private quadratic follow-the-leader for online linear regression (Jain–Kothari–Thakurta 2012, §3.5;
``spec/private-oco-learners.md`` §5.4 [derived]).

Losses ``f_t(theta) = s (x_t^T theta - y_t)^2 + mu/2 ||theta||^2`` (a :class:`~dpbandit.optim.losses.SquaredLoss`
of scale s; s = 1/2 is the spec's ``1/2 (y - v^T x)^2``) on the l2 ball of ``radius``. Follow-the-leader plays the
minimiser of the cumulative loss, a quadratic in the statistics ``V_t = sum x x^T`` (d, d) and ``u_t = sum y x``
(d,). PQFTL releases both through binary trees sharing one clock (Dwork et al. 2010; ``spec/private-oco-
learners.md`` §2) and plays

    thetahat_{t+1} = argmin_{||theta|| <= R} 1/2 theta^T (2s (Vhat_t + gamma_t I) + mu t I) theta - 2s uhat_t^T theta,
    gamma_t = max(0, -lambda_min(Vhat_t))     (the smallest shift making Vhat_t + gamma_t I positive semi-definite)

(post-processing of the trees). The argmin is exact: one symmetric eigendecomposition of Vhat_t and, when the
unconstrained minimiser leaves the ball, the trust-region multiplier by Brent's method on the monotone secular
equation. Cost: O(d^2) tree work and O(d^3) for the eigendecomposition per round (meant for moderate d). With
noise off this is exactly ridge-regularised FTL.

Privacy: (epsilon, delta)-**DP**. Replace-one sensitivities with samples clipped to ``||x|| <= b``, ``|y| <= c``:
``||x x^T - x' x'^T||_F <= sqrt(2) b^2`` (``spec/errata.md`` E5; the spec's §5.4 bound 2 is looser) and
``||y x - y' x'||_2 <= 2 b c``. The V-tree's node noise is symmetric Gaussian (``Z = (Z' + Z'^T)/sqrt 2``, a change
D has Mahalanobis norm ``||D||_F/(sqrt(2) sigma_V)``, E5), the u-tree's iid Gaussian. Both trees get the same noise
multiplier z per unit sensitivity, so a user (who enters ``L = floor(log2 T) + 1`` nodes of each tree) faces one
Gaussian mechanism with ``mu = sqrt(2L)/z`` (``spec/dp-testing-and-accounting.md`` §1.1):
``z = sigma_analytic(epsilon, delta, sqrt(2L))``, ``sigma_V = z b^2``, ``sigma_u = 2 z b c``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import brentq

from dpbandit.optim.gradient_descent import ConstrainedLearner, check_privacy, readonly
from dpbandit.optim.losses import Loss, SquaredLoss, make_loss
from dpbandit.privacy.calibrate import gaussian_sigma_analytic
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.noise import GaussianNoise, SymmetricGaussianNoise
from dpbandit.privacy.report import PrivacyReport
from dpbandit.privacy.tree import TreeAggregator, tree_depth

__all__ = ["PQFTL", "ball_quadratic_argmin"]


def ball_quadratic_argmin(eigenvalues: np.ndarray, basis: np.ndarray, b: np.ndarray, radius: float) -> np.ndarray:
    """``argmin_{||theta|| <= radius} 1/2 theta^T A theta - b^T theta`` for ``A = basis diag(eigenvalues) basis^T``
    positive definite (eigenvalues (d,) > 0, basis (d, d) orthogonal, b (d,)).

    Inside the ball the answer is ``A^-1 b``; otherwise ``(A + lam I)^-1 b`` with the unique ``lam > 0`` at which
    its norm is ``radius`` (the norm decreases strictly in lam; bracket ``[0, ||b||/radius]``).
    """
    bq = basis.T @ b
    z = bq / eigenvalues
    if float(np.sqrt(z @ z)) <= radius:
        return basis @ z

    def excess(lam: float) -> float:
        w = bq / (eigenvalues + lam)
        return float(np.sqrt(w @ w)) - radius

    lam = brentq(excess, 0.0, float(np.linalg.norm(bq)) / radius, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    return basis @ (bq / (eigenvalues + lam))


class PQFTL(ConstrainedLearner):
    """Private quadratic FTL (module docstring). (epsilon, delta)-DP for every user; regret ``O(log^1.5 T)``-type
    (JKT's abstract; ``spec/private-oco-learners.md`` §5.4).

    Parameters: ``dim``, ``horizon``; ``mu > 0`` the ridge; ``loss`` a squared loss ("squared" or a
    :class:`~dpbandit.optim.losses.SquaredLoss`); ``radius`` of the l2-ball domain; ``x_bound``, ``y_bound`` the
    declared bounds (samples are clipped to them); ``epsilon`` (inf: noise off, guarantee "none"), ``delta`` in
    (0, 1); ``initial`` the first play (default 0); ``rng`` the privacy stream.
    Attributes: ``sigma_v``, ``sigma_u`` (per-node noise), ``noise_multiplier`` (z), ``sensitivity_v`` (Frobenius),
    ``sensitivity_u`` (l2).
    """

    name = "pqftl"
    guarantee = "DP"

    def __init__(self, dim: int, horizon: int, *, mu: float, loss: str | Loss = "squared", radius: float = 1.0,
                 x_bound: float = 1.0, y_bound: float = 1.0, epsilon: float = 1.0, delta: float = 1e-5,
                 initial: Any = None, rng: np.random.Generator | None = None):
        if not isinstance(make_loss(loss), SquaredLoss):
            raise ValueError(f"PQFTL is follow-the-leader for quadratic losses: loss must be 'squared', got {loss!r}")
        self.epsilon, self.delta, _ = check_privacy(epsilon, delta, "gaussian")
        self.private = math.isfinite(self.epsilon)
        self.needs_rng = self.private
        if not self.private:
            self.guarantee = "none"
        super().__init__(dim, horizon, mu=mu, loss=loss, domain="l2-ball", radius=radius, x_bound=x_bound,
                         y_bound=y_bound, initial=initial, rng=rng)

    def _calibrate(self, horizon: int) -> None:
        self.sensitivity_v = math.sqrt(2.0) * self.x_bound**2
        self.sensitivity_u = 2.0 * self.x_bound * self.y_bound
        self.depth = tree_depth(horizon)
        if self.private:
            self.noise_multiplier = gaussian_sigma_analytic(self.epsilon, self.delta, math.sqrt(2.0 * self.depth))
            self.sigma_v = self.noise_multiplier * self.sensitivity_v / math.sqrt(2.0)
            self.sigma_u = self.noise_multiplier * self.sensitivity_u
        else:
            self.noise_multiplier = self.sigma_v = self.sigma_u = 0.0

    def _reset_state(self) -> None:
        d, T = self.dim, self.horizon
        if self.private:
            self._v_tree = TreeAggregator((d, d), T, SymmetricGaussianNoise(self.sigma_v), self.rng)
            self._u_tree = TreeAggregator((d,), T, GaussianNoise(self.sigma_u), self.rng)
        else:
            self._v_tree = TreeAggregator((d, d), T)
            self._u_tree = TreeAggregator((d,), T)
        self.ledger = PrivacyLedger()
        self.ledger.add_tree(self._v_tree, self.sensitivity_v, mechanism="PQFTL tree of x x^T")
        self.ledger.add_tree(self._u_tree, self.sensitivity_u, mechanism="PQFTL tree of y x")
        self._x = self.initial.copy()
        self.gamma = 0.0

    def predict(self) -> np.ndarray:
        return readonly(self._x)

    def update(self, x: Any, y: Any) -> None:
        x, y = self._sample(x, y)
        v_hat = self._v_tree.add_and_release(np.outer(x, x))
        u_hat = self._u_tree.add_and_release(y * x)
        eigenvalues, basis = np.linalg.eigh(0.5 * (v_hat + v_hat.T))
        self.gamma = max(0.0, -float(eigenvalues[0]))
        s2 = 2.0 * self.loss.scale
        curvature = s2 * (eigenvalues + self.gamma) + self.mu * self.t
        self._x = ball_quadratic_argmin(curvature, basis, s2 * u_hat, self.domain.radius)

    @property
    def sensitivity_assumption(self) -> str:
        return (f"samples clipped to ||x||_2 <= {self.x_bound:g}, |y| <= {self.y_bound:g}; replace-one: "
                f"||x x^T - x' x'^T||_F <= {self.sensitivity_v:.6g} (spec/errata.md E5), "
                f"||y x - y' x'||_2 <= {self.sensitivity_u:.6g}")

    def privacy_report(self) -> PrivacyReport:
        if not self.private:
            return self.ledger.report(0.0, guarantee="none", sensitivity_assumption=self.sensitivity_assumption)
        return self.ledger.report(self.delta, guarantee="DP", sensitivity_assumption=self.sensitivity_assumption)
