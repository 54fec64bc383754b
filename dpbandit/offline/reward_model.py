"""The reward model ``q(x, a)`` of the model-based estimators (DM, DR and its variants): one regression per action,
cross-fitted.

The log is split into ``folds`` contiguous parts; the predictions for the rounds of one part come from models (one
per action) fitted on the other parts only, so a round's own reward never enters its prediction (cross-fitting keeps
DR's correction term unbiased given the model). The model is the built-in ridge regression (``"ridge"``:
``theta_a = (lam I + X_a^T X_a)^{-1} X_a^T r_a`` with an intercept column, fast and dependency-free), a named
scikit-learn model (:data:`REWARD_MODELS`), or any scikit-learn regressor or classifier (cloned per action and fold;
a classifier needs 0/1 rewards and predicts ``P(reward = 1)``). An action with no training rounds in a fold is
predicted by the training mean; a classifier that saw one class predicts it. Predictions are clipped to the logged
reward range.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbandit.offline.logged import LoggedData
from dpbandit.validation import check_int, check_real

__all__ = ["cross_fitted_rewards", "fit_reward_model", "ridge_dm_deviations", "REWARD_MODELS"]

#: Named reward models (the CLI's ``--reward-model``).
REWARD_MODELS: tuple[str, ...] = ("ridge", "logistic", "forest", "boosting")


def _named(name: str, seed: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
    from sklearn.linear_model import LogisticRegression

    if name == "logistic":
        return LogisticRegression(C=1.0, max_iter=1000)
    if name == "forest":
        return RandomForestRegressor(n_estimators=50, min_samples_leaf=5, random_state=seed, n_jobs=1)
    return HistGradientBoostingRegressor(max_iter=100, random_state=seed)


def fit_reward_model(data: LoggedData, model: Any = "ridge", folds: int = 2, *, seed: int = 0) -> np.ndarray:
    """Cross-fitted predicted rewards ``(n, K)`` of every action for every logged round (module docstring).

    ``model``: a name in :data:`REWARD_MODELS`, or a scikit-learn regressor / classifier (anything with ``fit`` and
    ``predict`` / ``predict_proba``); ``folds`` >= 2; ``seed`` seeds the named randomised models."""
    folds = check_int("folds", folds, low=2)
    if isinstance(model, str):
        if model not in REWARD_MODELS:
            raise ValueError(f"reward_model must be one of {list(REWARD_MODELS)} or a scikit-learn estimator, got "
                             f"{model!r}")
        if model == "ridge":
            return cross_fitted_rewards(data, folds)
        model = _named(model, seed)
    if not (hasattr(model, "fit") and (hasattr(model, "predict") or hasattr(model, "predict_proba"))):
        raise TypeError(f"reward_model must be a name in {list(REWARD_MODELS)} or a scikit-learn estimator (with "
                        f"fit and predict), got {type(model).__name__}")
    from sklearn.base import clone, is_classifier

    classifier = is_classifier(model)
    if classifier and not np.all(np.isin(data.reward, (0.0, 1.0))):
        raise ValueError("a classifier reward_model needs 0/1 rewards; use a regressor (e.g. 'ridge', 'forest')")
    n, k = data.n_rounds, data.n_actions
    out = np.empty((n, k))
    for part in np.array_split(np.arange(n), min(folds, n)):
        train = np.ones(n, dtype=bool)
        train[part] = False
        fallback = float(data.reward[train].mean()) if train.any() else float(data.reward.mean())
        for a in range(k):
            rows = train & (data.action == a)
            xa, ra = data.context[rows], data.reward[rows]
            if ra.size == 0 or np.ptp(ra) == 0:
                out[part, a] = ra[0] if ra.size else fallback
                continue
            fitted = clone(model).fit(xa, ra.astype(int) if classifier else ra)
            if classifier:
                out[part, a] = fitted.predict_proba(data.context[part])[:, list(fitted.classes_).index(1)]
            else:
                out[part, a] = fitted.predict(data.context[part])
    return np.clip(out, data.reward.min(), data.reward.max())


def cross_fitted_rewards(data: LoggedData, folds: int = 2, lam: float = 1.0) -> np.ndarray:
    """Ridge predictions ``(n, K)`` of every action for every logged round (see the module docstring)."""
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


def ridge_dm_deviations(data: LoggedData, pi: np.ndarray, rng: np.random.Generator, n_resamples: int = 199,
                        lam: float = 1.0, memory: int = 1 << 22) -> np.ndarray:
    """Bootstrap deviations ``(n_resamples,)`` of the direct method with the ridge model refitted on every resample:
    ``DM*_b - DM`` where ``DM = mean_i sum_a pi[i, a] x_i^T theta_a`` (ridge fitted on the whole log, unclipped) and
    ``DM*_b`` the same on the b-th resample of rounds. The reward model's own estimation error is the main
    uncertainty of DM, which resampling rounds with the model held fixed misses. Vectorised through each action's
    sufficient statistics (no loop over rounds): ``O(B n p^2)`` work for ``p = d + 1``, in pieces of about
    ``memory`` floats (resamples drawn a block at a time, rows' outer products a chunk at a time), so memory does not
    grow with ``n * B`` or ``n * p^2``."""
    n_resamples = check_int("n_resamples", n_resamples, low=1)
    memory = check_int("memory", memory, low=1)
    n, k = data.n_rounds, data.n_actions
    x = np.hstack([data.context, np.ones((n, 1))])
    p = x.shape[1]
    ridge = lam * np.eye(p)
    resamples = max(1, min(n_resamples, memory // n))  # (resamples, n) counts at a time
    rows_at_once = max(1, memory // (p * p))  # (rows, p * p) outer products at a time
    actions = [np.flatnonzero(data.action == a) for a in range(k)]
    thetas = [np.linalg.solve(ridge + x[r].T @ x[r], x[r].T @ data.reward[r]) for r in actions]
    full = sum(pi[:, a] @ x @ thetas[a] for a in range(k)) / n
    boot = np.zeros(n_resamples)
    for start in range(0, n_resamples, resamples):
        b = min(resamples, n_resamples - start)
        counts = rng.multinomial(n, np.full(n, 1.0 / n), size=b).astype(np.float64)  # (b, n), the same draws in order
        for a, rows in enumerate(actions):
            gram = np.broadcast_to(ridge, (b, p, p)).copy()
            for lo in range(0, rows.size, rows_at_once):
                part = rows[lo:lo + rows_at_once]
                outer = (x[part, :, None] * x[part, None, :]).reshape(part.size, p * p)
                gram += (counts[:, part] @ outer).reshape(b, p, p)
            moment = counts[:, rows] @ (x[rows] * data.reward[rows, None])
            theta_b = np.linalg.solve(gram, moment[:, :, None])[:, :, 0]  # (b, p)
            boot[start:start + b] += np.einsum("bp,bp->b", counts @ (pi[:, a, None] * x), theta_b) / n
    return boot - full
