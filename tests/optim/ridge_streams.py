"""Shared helpers of the OCO learner tests: noiseless ridge-regression streams and regret against the best point
of an l2 ball in hindsight (an independent reference, computed here)."""

from __future__ import annotations

import numpy as np

from dpbandit.optim.losses import SquaredLoss

HALF_SQUARED = SquaredLoss(0.5)


def sphere_stream(seed: int, T: int, d: int = 5, norm: float = 0.5):
    """x_t uniform on the unit sphere, y_t = x_t^T theta* with ||theta*|| = norm (noiseless labels)."""
    g = np.random.default_rng(seed)
    theta = g.standard_normal(d)
    theta *= norm / np.linalg.norm(theta)
    x = g.standard_normal((T, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, x @ theta


def ball_minimiser(A, b, radius):
    w, Q = np.linalg.eigh(A)
    bq = Q.T @ b
    if np.linalg.norm(bq / w) <= radius:
        return Q @ (bq / w)
    lo, hi = 0.0, np.linalg.norm(b) / radius
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if np.linalg.norm(bq / (w + mid)) > radius else (lo, mid)
    return Q @ (bq / (w + hi))


def regret(learner, x, y, mu, radius=1.0, minimiser=None) -> float:
    """Regret of ``learner`` on the ridge losses 1/2 (x^T w - y)^2 + mu/2 ||w||^2 against the best point of the
    l2 ball of ``radius`` (found by ``minimiser``, default :func:`ball_minimiser`)."""
    total = 0.0
    for xt, yt in zip(x, y):
        w = learner.predict()
        total += 0.5 * (xt @ w - yt) ** 2 + 0.5 * mu * w @ w
        learner.update(xt, yt)
    T = len(y)
    best = (minimiser or ball_minimiser)(x.T @ x + mu * T * np.eye(x.shape[1]), x.T @ y, radius)
    return total - (0.5 * np.sum((x @ best - y) ** 2) + 0.5 * mu * T * best @ best)
