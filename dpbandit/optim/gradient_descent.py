"""The shared base of dpbandit's constrained OCO learners and Jain–Kothari–Thakurta's sensitivity-tracking OCP
algorithms IGD and GIGA (``spec/private-oco-learners.md`` §4, §5.2–§5.3); their private wrapper POCP and the private
learners PIGD and PGIGA are in :mod:`dpbandit.optim.pocp`.

Setting shared by every learner of this family (and by ``ftal.py``, ``cocol.py``, ``quadratic_ftl.py``): the
sample ``z_t = (x_t, y_t)`` defines the convex loss

    f_t(theta) = phi(x_t^T theta, y_t) + mu/2 ||theta||^2        (:class:`RidgeLoss`; the ridge supplies the
                                                                   strong convexity mu, spec §7 "Losses")

over a convex domain C (:mod:`dpbandit.optim.projections`). The constructor takes the *declared* bounds the
calibration rests on — ``||x_t||_2 <= x_bound``, ``|y_t| <= y_bound`` (squared loss; logistic labels lie in
[0, 1]) — and every sample is clipped to them before it is used (features rescaled, responses clamped; counted in
``n_clipped``), so the stated sensitivities hold for any input stream (``spec/private-oco-learners.md`` §5.4
"(clip)"). With ``G = sup |phi'(z, y)|`` over ``|z| <= x_bound * max_{theta in C} ||theta||_2``
(:func:`derivative_bound`), ``L_loss = G x_bound`` bounds ``||grad phi||`` on C.

Sensitivity [derived]: neighbouring streams differ in one sample z_t (replace-one). The ridge term is common to
both, so ``f_t - f'_t`` is ``2 L_loss``-Lipschitz on C and ``||grad f_t(theta) - grad f'_t(theta)|| <= 2 L_loss``
at any common theta. This is the ``2L`` of ``spec/private-oco-learners.md`` §2 "Sensitivity" with the (data-free)
ridge gradient ``mu theta`` cancelled, hence never larger than the spec's value.
"""

from __future__ import annotations

import abc
import math
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit

from dpbandit.optim.losses import LogisticLoss, Loss, SquaredLoss, make_loss
from dpbandit.optim.projections import Domain, make_domain
from dpbandit.optim.protocol import StreamingLearner
from dpbandit.validation import check_choice, check_delta, check_epsilon, check_int, check_real

__all__ = [
    "RidgeLoss",
    "derivative_bound",
    "check_privacy",
    "readonly",
    "ConstrainedLearner",
    "OCPAlgorithm",
    "IGD",
    "GIGA",
]


class RidgeLoss:
    """``f(theta; (x, y)) = loss.phi(x^T theta, y) + mu/2 ||theta||^2``: a GLM loss made ``mu``-strongly convex.

    Shapes as :class:`~dpbandit.optim.losses.Loss`: ``theta`` (d,), ``x`` (d,) or (n, d), ``y`` scalar or (n,).
    ``smoothness(x_bound) = curvature * x_bound^2 + mu`` bounds the Hessian for ``||x||_2 <= x_bound``.
    """

    def __init__(self, loss: str | Loss, mu: float):
        self.base = make_loss(loss)
        self.mu = check_real("mu", mu, low=0.0, low_inclusive=False)

    def value(self, theta: np.ndarray, x: np.ndarray, y) -> np.ndarray:
        return self.base.value(theta, x, y) + 0.5 * self.mu * float(theta @ theta)

    def gradient(self, theta: np.ndarray, x: np.ndarray, y) -> np.ndarray:
        return self.base.gradient(theta, x, y) + self.mu * theta

    def smoothness(self, x_bound: float) -> float:
        return self.base.smoothness(x_bound) + self.mu

    def __repr__(self) -> str:
        return f"RidgeLoss({self.base!r}, mu={self.mu:g})"


def derivative_bound(loss: Loss, z_max: float, y_bound: float) -> float:
    """``G = sup |phi'(z, y)|`` over ``|z| <= z_max`` and the admissible responses.

    Squared loss ``s (z - y)^2``, ``|y| <= y_bound``: ``G = 2 s (z_max + y_bound)``. Logistic loss, labels in
    [0, 1]: ``|sigmoid(z) - y| <= max(sigmoid(z), 1 - sigmoid(z)) <= sigmoid(z_max)``. Other losses raise TypeError
    (their bound is not known here).
    """
    z_max = check_real("z_max", z_max, low=0.0)
    if isinstance(loss, SquaredLoss):
        return 2.0 * loss.scale * (z_max + y_bound)
    if isinstance(loss, LogisticLoss):
        return float(expit(z_max))
    raise TypeError(f"no derivative bound is known for loss {loss!r}: use 'squared' or 'logistic'")


def _clip_response(loss: Loss, y: float, y_bound: float) -> float:
    low, high = (0.0, 1.0) if isinstance(loss, LogisticLoss) else (-y_bound, y_bound)
    return min(max(y, low), high)


def check_privacy(epsilon: Any, delta: Any, noise: str) -> tuple[float, float, str]:
    """Validate ``(epsilon, delta, noise)`` of a private learner; ``epsilon = inf`` means noise off.

    ``noise="gaussian"`` needs ``delta`` in (0, 1) (unless noise is off); ``noise="gamma"`` (pure DP) needs
    ``delta`` None or 0. Returns ``(epsilon, delta, noise)`` with ``delta`` a float.
    """
    epsilon = check_epsilon(epsilon, allow_inf=True)
    noise = check_choice("noise", noise, ("gamma", "gaussian"))
    if noise == "gamma":
        if delta not in (None, 0, 0.0):
            raise ValueError(f"delta must be None or 0 with gamma noise (pure epsilon-DP), got {delta!r}")
        return epsilon, 0.0, noise
    if delta is None:
        raise ValueError("delta is required with gaussian noise: pass a delta in (0, 1)")
    return epsilon, check_delta(delta, allow_zero=math.isinf(epsilon)), noise


def readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (what ``predict()`` releases)."""
    v = a.view()
    v.flags.writeable = False
    return v


class ConstrainedLearner(StreamingLearner):
    """Base of the constrained OCO learners: losses :class:`RidgeLoss`, a :class:`Domain`, declared data bounds.

    Parameters (all validated before any work): ``dim``, ``horizon``; ``mu > 0`` the ridge / strong convexity;
    ``loss`` ("squared", "logistic" or a Loss instance); ``domain`` (name or :class:`Domain`) and ``radius``
    (balls, box); ``x_bound > 0`` (``||x||_2``), ``y_bound > 0`` (``|y|``, squared loss); ``initial`` (d,) a
    data-independent starting point in C (default: the domain's centre); ``rng`` the privacy stream.

    Derived constants: ``z_max = x_bound max_C ||theta||``, ``loss_lipschitz = L_loss = G x_bound``,
    ``lipschitz = L = L_loss + mu max_C ||theta||`` (``||grad f_t|| <= L`` on C), ``smoothness = beta``,
    ``diameter = D``.
    """

    def __init__(
        self,
        dim: int,
        horizon: int,
        *,
        mu: float,
        loss: str | Loss = "squared",
        domain: str | Domain = "l2-ball",
        radius: float = 1.0,
        x_bound: float = 1.0,
        y_bound: float = 1.0,
        initial: Any = None,
        rng: np.random.Generator | None = None,
    ):
        self.dim = dim = check_int("dim", dim, low=1)
        self.objective = RidgeLoss(loss, mu)
        self.mu = self.objective.mu
        if isinstance(domain, str) or isinstance(domain, Domain):
            self.domain = make_domain(domain, radius)
        else:
            raise TypeError(f"domain must be a domain name or a Domain, got {type(domain).__name__}")
        self.x_bound = check_real("x_bound", x_bound, low=0.0, low_inclusive=False)
        self.y_bound = check_real("y_bound", y_bound, low=0.0, low_inclusive=False)
        self.z_max = self.x_bound * self.domain.max_norm(dim)
        self.loss_lipschitz = derivative_bound(self.objective.base, self.z_max, self.y_bound) * self.x_bound
        self.lipschitz = self.loss_lipschitz + self.mu * self.domain.max_norm(dim)
        self.smoothness = self.objective.smoothness(self.x_bound)
        self.diameter = self.domain.diameter(dim)
        if initial is None:
            self.initial = self.domain.center(dim)
        else:
            self.initial = np.array(initial, dtype=float)
            if self.initial.shape != (dim,) or not self.domain.contains(self.initial):
                raise ValueError(f"initial must be a point of shape ({dim},) in the {self.domain.describe()}")
        self.n_clipped = 0
        self._calibrate(check_int("horizon", horizon, low=1))
        super().__init__(dim, horizon, self.objective.base, rng)

    def _calibrate(self, horizon: int) -> None:
        """Hook for subclasses: derive noise scales from the constants above (before the first reset)."""

    def reset(self, rng: np.random.Generator | None = None) -> None:
        self.n_clipped = 0
        super().reset(rng)

    @property
    def sensitivity_assumption(self) -> str:
        """The data bounds every sensitivity of this learner rests on (for privacy reports)."""
        y = "labels in [0, 1]" if isinstance(self.loss, LogisticLoss) else f"|y| <= {self.y_bound:g}"
        return (
            f"samples clipped to ||x||_2 <= {self.x_bound:g}, {y}; iterates in the {self.domain.describe()}; "
            f"replace-one: ||grad f_t - grad f'_t|| <= 2 L_loss = {2 * self.loss_lipschitz:.6g}"
        )

    def _sample(self, x: Any, y: Any) -> tuple[np.ndarray, float]:
        """Validate, count and clip one sample to the declared bounds."""
        x = np.asarray(x, dtype=float)
        y = check_real("y", y)
        if not np.isfinite(x).all():
            raise ValueError("x must be finite (no NaN or inf)")
        x, y = self._accept(x, y)
        norm = math.sqrt(float(x @ x))
        clipped = norm > self.x_bound * (1.0 + 1e-12)
        if norm > self.x_bound:
            x = x * (self.x_bound / norm)
        yc = _clip_response(self.loss, y, self.y_bound)
        self.n_clipped += clipped or yc != y
        return x, yc


class OCPAlgorithm(ConstrainedLearner):
    """A non-private OCP algorithm with steps ``eta_t = 1/(mu t)`` that tracks its sensitivity
    ``S_{t+1} >= sup ||x_{t+1}(F) - x_{t+1}(F')||`` over neighbouring streams (the POCP requirement 1,
    ``spec/private-oco-learners.md`` §5.1): ``S_1 = 0``, ``S_{t+1} = min(D, max(fresh_t, c_t S_t))`` with
    ``fresh_t`` the effect of a differing sample at step t and ``c_t`` the contraction of the step map."""

    def _reset_state(self) -> None:
        self._x = self.initial.copy()
        self._sensitivity = 0.0

    def predict(self) -> np.ndarray:
        return readonly(self._x)

    def sensitivity(self) -> float:
        """``Delta_{t+1}``: the sensitivity bound of the current iterate (0 before the first update)."""
        return self._sensitivity

    def update(self, x: Any, y: Any) -> None:
        x, y = self._sample(x, y)
        eta = 1.0 / (self.mu * self.t)
        fresh, contraction = self._sensitivity_step(eta)
        self._x = self._step(x, y, eta)
        self._sensitivity = min(self.diameter, max(fresh, contraction * self._sensitivity))

    @abc.abstractmethod
    def _step(self, x: np.ndarray, y: float, eta: float) -> np.ndarray:
        """The next iterate from sample (x, y) with step size ``eta`` (IGD: implicit step; GIGA: projected)."""

    @abc.abstractmethod
    def _sensitivity_step(self, eta: float) -> tuple[float, float]:
        """``(fresh, contraction)`` of this step's sensitivity recursion (spec/private-oco-learners.md §5.1)."""


class IGD(OCPAlgorithm):
    """Implicit gradient descent (Kulis & Bartlett 2010), ``spec/private-oco-learners.md`` §5.2:
    ``x_{t+1} = argmin_{x in C} 1/2 ||x - x_t||^2 + eta_t f_t(x)``, ``eta_t = 1/(mu t)``. Non-private.

    The prox is solved exactly: with ``a = 1 + eta mu``, ``c = x_t/a``, ``k = eta/a`` it is
    ``argmin_C 1/2 ||w - c||^2 + k phi(x^T w, y)``, whose KKT point is ``w(g) = Proj_C(c - k g x)`` with
    ``g = phi'(x^T w(g), y)``; ``g -> g - phi'(x^T w(g), y)`` is strictly increasing (``x^T Proj_C(c - k g x)`` is
    non-increasing in g, phi' non-decreasing), so g is its unique root, bracketed by ``phi'(+-|x|max_C|theta|)``
    (Brent's method). Squared loss inside C: closed form (the Sherman–Morrison step of §5.2).

    Sensitivity [derived, §5.2]: the prox of the ``mu``-strongly convex ``f_t`` contracts by ``1/(1 + eta mu)`` and
    a differing sample moves the prox by ``<= 2 L_loss eta/(1 + eta mu)``; so ``Delta_{t+1} = 2 L_loss/(mu (t+1))``.
    """

    name = "igd"

    def _sensitivity_step(self, eta):
        a = 1.0 + eta * self.mu
        return 2.0 * self.loss_lipschitz * eta / a, 1.0 / a

    def _step(self, x, y, eta):
        a = 1.0 + eta * self.mu
        c, k = self._x / a, eta / a
        xx = float(x @ x)
        if xx == 0.0:
            return self.domain.project(c)
        phi = self.loss
        if isinstance(phi, SquaredLoss):  # g = 2s(x^T c - k g ||x||^2 - y)
            g = 2.0 * phi.scale * (float(x @ c) - y) / (1.0 + 2.0 * phi.scale * k * xx)
            w = c - k * g * x
            if self.domain.contains(w, atol=0.0):
                return w
        zv = math.sqrt(xx) * self.domain.max_norm(self.dim)
        lo, hi = float(phi.dphi(-zv, y)), float(phi.dphi(zv, y))

        def h(g: float) -> float:
            return g - float(phi.dphi(float(x @ self.domain.project(c - k * g * x)), y))

        h_lo, h_hi = h(lo), h(hi)
        g = lo if h_lo >= 0.0 else hi if h_hi <= 0.0 else brentq(h, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)
        return self.domain.project(c - k * g * x)


class GIGA(OCPAlgorithm):
    """Projected online gradient descent (Zinkevich's GIGA), ``spec/private-oco-learners.md`` §5.3:
    ``x_{t+1} = Proj_C(x_t - eta_t grad f_t(x_t))``, ``eta_t = 1/(mu t)``. Non-private.

    Sensitivity [derived, §5.3]: the gradient step of a mu-strongly convex, beta-smooth f_t is
    ``c_t = max(|1 - eta_t mu|, |1 - eta_t beta|)``-Lipschitz and the projection is non-expansive; a differing
    sample moves the step by ``<= 2 L_loss eta_t``. So ``S_{t+1} = min(D, max(2 L_loss eta_t, c_t S_t))``.
    """

    name = "giga"

    def _sensitivity_step(self, eta):
        c = max(abs(1.0 - eta * self.mu), abs(1.0 - eta * self.smoothness))
        return 2.0 * self.loss_lipschitz * eta, c

    def _step(self, x, y, eta):
        return self.domain.project(self._x - eta * self.objective.gradient(self._x, x, y))
