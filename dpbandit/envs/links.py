"""Inverse link functions mu of the generalized linear reward model, and the reward law each one induces.

The expected reward of arm a is ``mu(x^T theta)``. The identity link pairs with Gaussian reward noise
(``reward = mean + N(0, noise_std^2)``); the logistic and probit links with Bernoulli rewards
(``reward ~ Bernoulli(mean)``, rewards in {0, 1}). Every mu here is non-decreasing, so a bound
``|x^T theta| <= B`` gives ``mu(-B) <= mean <= mu(B)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, ndtr

from dpbandit.validation import check_choice

__all__ = ["Link", "LINKS", "get_link", "identity", "logistic", "probit", "clipped_gaussian_mean"]


def identity(z: np.ndarray) -> np.ndarray:
    """mu(z) = z (linear model); range (-inf, inf)."""
    return np.asarray(z, dtype=np.float64)


def logistic(z: np.ndarray) -> np.ndarray:
    """mu(z) = 1 / (1 + exp(-z)), evaluated without overflow for any finite or infinite z; range (0, 1)."""
    return expit(np.asarray(z, dtype=np.float64))


def probit(z: np.ndarray) -> np.ndarray:
    """mu(z) = Phi(z), the standard normal CDF (``scipy.special.ndtr``); range (0, 1)."""
    return ndtr(np.asarray(z, dtype=np.float64))


@dataclass(frozen=True)
class Link:
    """An inverse link function with its range and reward law.

    Attributes
    ----------
    name:
        ``"identity"``, ``"logistic"`` or ``"probit"``.
    mu:
        The inverse link, applied elementwise to an array of linear predictors ``x^T theta`` (any shape).
    low, high:
        The range of mu (the infimum and supremum of the expected reward).
    bernoulli:
        True when rewards are ``Bernoulli(mu(x^T theta))``; False for Gaussian noise around the mean.
    """

    name: str
    mu: Callable[[np.ndarray], np.ndarray]
    low: float
    high: float
    bernoulli: bool

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return self.mu(z)


#: The supported links by name.
LINKS: dict[str, Link] = {
    "identity": Link("identity", identity, -np.inf, np.inf, bernoulli=False),
    "logistic": Link("logistic", logistic, 0.0, 1.0, bernoulli=True),
    "probit": Link("probit", probit, 0.0, 1.0, bernoulli=True),
}


def get_link(name: str) -> Link:
    """The :class:`Link` called ``name`` (``ValueError`` listing the accepted names otherwise)."""
    return LINKS[check_choice("link", name, LINKS)]


def clipped_gaussian_mean(mean: np.ndarray, std: float, clip: float) -> np.ndarray:
    """``E[clip(Y, -clip, clip)]`` for ``Y ~ N(mean, std^2)``, elementwise (``mean`` of any shape).

    This is the expected reward of an identity-link environment that clips realised rewards to
    ``[-clip, clip]``. With ``a = (-clip - mean)/std`` and ``b = (clip - mean)/std``::

        E = -clip*Phi(a) + clip*Phi(-b) + mean*(Phi(b) - Phi(a)) + std*(phi(a) - phi(b))

    It is non-decreasing in ``mean`` and equals ``clip(mean, -clip, clip)`` when ``std == 0``.
    """
    mean = np.asarray(mean, dtype=np.float64)
    if std == 0.0:
        return np.clip(mean, -clip, clip)
    a = (-clip - mean) / std
    b = (clip - mean) / std
    density = np.exp(-0.5 * a * a) - np.exp(-0.5 * b * b)
    return (
        -clip * ndtr(a)
        + clip * ndtr(-b)
        + mean * (ndtr(b) - ndtr(a))
        + std * density / np.sqrt(2.0 * np.pi)
    )
