"""The reward model ``q(x, a)`` of the doubly robust estimator: per-action ridge regression, cross-fitted.

The log is split into ``folds`` contiguous parts; the predictions for the rounds of one part come from ridge
regressions (one per action, ``theta_a = (lam I + X_a^T X_a)^{-1} X_a^T r_a`` with an intercept column) fitted on
the other parts only, so a round's own reward never enters its prediction (cross-fitting keeps DR's correction
term unbiased given the model). Predictions are clipped to the logged reward range.
"""

from __future__ import annotations

import numpy as np

from dpbandit.offline.logged import LoggedData
from dpbandit.validation import check_int, check_real

__all__ = ["cross_fitted_rewards"]


def cross_fitted_rewards(data: LoggedData, folds: int = 2, lam: float = 1.0) -> np.ndarray:
    """Predicted rewards ``(n, K)`` of every action for every logged round (see the module docstring)."""
    folds = check_int("folds", folds, low=2)
    lam = check_real("lam", lam, low=0.0, low_inclusive=False)
    n, k = data.n_rounds, data.n_actions
    x = np.hstack([data.context, np.ones((n, 1))])
    out = np.empty((n, k))
    parts = np.array_split(np.arange(n), min(folds, n))
    for part in parts:
        train = np.ones(n, dtype=bool)
        train[part] = False
        for a in range(k):
            rows = train & (data.action == a)
            xa, ra = x[rows], data.reward[rows]
            theta = np.linalg.solve(lam * np.eye(x.shape[1]) + xa.T @ xa, xa.T @ ra)
            out[part, a] = x[part] @ theta
    return np.clip(out, data.reward.min(), data.reward.max())
