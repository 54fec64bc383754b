"""Per-sample losses of generalized linear models, f(theta; (x, y)) = phi(x^T theta, y).

Every loss here has a gradient that is a scalar multiple of the features, grad f = phi'(x^T theta, y) x, so norm
clipping of a gradient is a scalar clamp (which keeps the smoothness constant; ``spec/errata.md`` E3).

Shapes: ``theta`` (d,); ``x`` (d,) or (n, d); ``y`` scalar or (n,). ``value`` returns a scalar or (n,),
``gradient`` (d,) or (n, d), ``derivative`` the scalar factor(s) phi'.
"""

from __future__ import annotations

import abc
from typing import ClassVar

import numpy as np
from scipy.special import expit

from dpbandit.validation import check_real

__all__ = ["Loss", "SquaredLoss", "LogisticLoss", "LOSSES", "make_loss"]


class Loss(abc.ABC):
    """A GLM loss phi(z, y) of the linear predictor z = x^T theta."""

    name: ClassVar[str]

    @abc.abstractmethod
    def phi(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The loss as a function of the linear predictor."""

    @abc.abstractmethod
    def dphi(self, z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """d phi / d z."""

    @abc.abstractmethod
    def curvature_bound(self) -> float:
        """sup_z d^2 phi / d z^2, so that ||grad f(a) - grad f(b)||_q <= curvature * ||x||_q^2 * ||a - b||_p."""

    def value(self, theta: np.ndarray, x: np.ndarray, y) -> np.ndarray:
        return self.phi(x @ theta, y)

    def derivative(self, theta: np.ndarray, x: np.ndarray, y) -> np.ndarray:
        return self.dphi(x @ theta, y)

    def gradient(self, theta: np.ndarray, x: np.ndarray, y) -> np.ndarray:
        scale = self.derivative(theta, x, y)
        return scale[..., None] * x if np.ndim(scale) else scale * x

    def smoothness(self, x_norm_dual: float) -> float:
        """L1 of ``spec/han-frank-wolfe.md`` §0 in the (||.||_p, ||.||_q) pair for features with ||x||_q <= bound
        (``spec/errata.md`` E3: 2 ||x||_q^2 for the squared loss (x^T theta - y)^2)."""
        bound = check_real("x_norm_dual", x_norm_dual, low=0.0)
        return self.curvature_bound() * bound**2

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SquaredLoss(Loss):
    """``scale * (x^T theta - y)^2``; ``scale=1`` is the loss of the papers' experiments
    (``spec/han-frank-wolfe.md`` §0), ``scale=0.5`` the Gaussian GLM negative log-likelihood (identity link)."""

    name = "squared"

    def __init__(self, scale: float = 1.0):
        self.scale = check_real("scale", scale, low=0.0, low_inclusive=False)

    def phi(self, z, y):
        return self.scale * (z - y) ** 2

    def dphi(self, z, y):
        return 2.0 * self.scale * (z - y)

    def curvature_bound(self) -> float:
        return 2.0 * self.scale

    def __repr__(self) -> str:
        return f"SquaredLoss(scale={self.scale})"


class LogisticLoss(Loss):
    """Bernoulli GLM negative log-likelihood ``log(1 + exp(z)) - y z`` with labels y in {0, 1}."""

    name = "logistic"

    def phi(self, z, y):
        z = np.asarray(z, dtype=float)
        return np.logaddexp(0.0, z) - y * z

    def dphi(self, z, y):
        return expit(z) - y

    def curvature_bound(self) -> float:
        return 0.25


LOSSES: dict[str, type[Loss]] = {"squared": SquaredLoss, "logistic": LogisticLoss}


def make_loss(loss: str | Loss) -> Loss:
    """A loss from its name (``"squared"``, ``"logistic"``) or an instance."""
    if isinstance(loss, Loss):
        return loss
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(f"loss must be one of {tuple(LOSSES)} or a Loss instance, got {loss!r}")
    return LOSSES[loss]()

