"""Regression data as contextual bandits: K candidate predictions are the arms, a reward function scores them.

Each round a user is a row ``(x_i, y_i)`` drawn uniformly with replacement; the K arms are candidate predictions
``c_1 < ... < c_K`` of the target (by default the midpoints of K equal-mass bins of ``y``: the quantiles at levels
``(a + 1/2)/K``; or the values given as ``arms``), and the reward of arm ``a`` is a score of ``c_a`` against
``y_i`` in ``[0, 1]`` (the regression-to-bandit reduction of coba's regression simulations):

* ``"absolute"``: ``1 - |c_a - y_i| / R``
* ``"squared"``: ``1 - ((c_a - y_i) / R)^2``

with ``R = max(y) - min(y)`` taken over the table and the candidates (so both lie in ``[0, 1]``). A callable (or a
``"module:function"`` string, usable in TOML) ``reward(candidates (K,), targets (n,)) -> (n, K)`` with values in
``[0, 1]`` may replace them. Rewards are deterministic, the expected reward of arm a for user i is that score and
the pseudo-regret of a round is the best score minus the played one.

Features get the same standardisation and norm bound as every dpbandit environment (:mod:`dpbandit.envs.tabular`),
and ``BanditConstants`` states rewards in ``[0, 1]``, the range private agents clip to. The bundled default is
scikit-learn's ``diabetes`` data (d=10, n=442; nothing is downloaded)::

    env = RegressionBanditEnv.from_arrays(X, y, n_arms=5, reward="squared")
    env = gymnasium.make("dpbandit/Regression-v0", data="houses.csv", target="price")
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpbandit.envs.tabular import TabularBanditEnv, frame_to_table, resolve_source, source_name
from dpbandit.validation import check_int, check_memory

__all__ = ["RegressionBanditEnv", "REGRESSION_DATASETS", "REWARD_FUNCTIONS", "regression_from_data",
           "regression_rewards"]

#: Dataset name -> scikit-learn loader name (bundled data files).
REGRESSION_DATASETS: dict[str, str] = {"diabetes": "load_diabetes"}


def _absolute(candidates: np.ndarray, targets: np.ndarray, span: float) -> np.ndarray:
    return 1.0 - np.abs(candidates[None, :] - targets[:, None]) / span


def _squared(candidates: np.ndarray, targets: np.ndarray, span: float) -> np.ndarray:
    return 1.0 - ((candidates[None, :] - targets[:, None]) / span) ** 2


#: Named reward functions (see the module docstring).
REWARD_FUNCTIONS: dict[str, Callable[[np.ndarray, np.ndarray, float], np.ndarray]] = {
    "absolute": _absolute,
    "squared": _squared,
}


def _reward_callable(reward: Any) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    if callable(reward):
        return reward
    if isinstance(reward, str) and ":" in reward:
        module, _, name = reward.partition(":")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"reward {reward!r} cannot be imported: {exc}") from None
    raise ValueError(f"reward must be one of {sorted(REWARD_FUNCTIONS)}, a 'module:function' string or a callable, "
                     f"got {reward!r}")


def regression_rewards(candidates: np.ndarray, targets: np.ndarray, reward: Any = "absolute") -> np.ndarray:
    """Rewards ``(n, K)`` in ``[0, 1]`` of predicting ``candidates`` ``(K,)`` for ``targets`` ``(n,)``."""
    candidates = np.asarray(candidates, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.float64)
    if isinstance(reward, str) and reward in REWARD_FUNCTIONS:
        span = float(max(targets.max(), candidates.max()) - min(targets.min(), candidates.min()))
        return REWARD_FUNCTIONS[reward](candidates, targets, span if span > 0 else 1.0)
    out = np.asarray(_reward_callable(reward)(candidates, targets), dtype=np.float64)
    if out.shape != (targets.size, candidates.size):
        raise ValueError(f"reward function must return shape (n, K) = {(targets.size, candidates.size)}, "
                         f"got {out.shape}")
    if not (np.isfinite(out).all() and out.min() >= 0.0 and out.max() <= 1.0):
        raise ValueError("reward function must return values in [0, 1] (the reward range private agents clip to)")
    return out


def _numbers(values: np.ndarray, name: str) -> np.ndarray:
    """``values`` as finite float64 targets; ``TypeError``/``ValueError`` naming ``name`` and the first bad row."""
    out = np.empty(len(values), dtype=np.float64)
    for i, v in enumerate(values.tolist()):
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            raise TypeError(f"targets ({name}) must be numbers; row {i} holds {v!r}") from None
    bad = np.flatnonzero(~np.isfinite(out))
    if bad.size:
        raise ValueError(f"targets ({name}) must be finite numbers; row {bad[0]} holds {out[bad[0]]}")
    return out


class RegressionBanditEnv(TabularBanditEnv):
    """A regression dataset as a K-armed contextual bandit over candidate predictions (see the module docstring).

    Data (keyword-only; at most one source, ``diabetes`` when none is given): ``dataset`` (one of
    :data:`REGRESSION_DATASETS`), ``data`` (a ``.csv``/``.parquet`` path) with ``target`` (the numeric column to
    predict), or ``X`` ``(n, d)`` with targets ``y`` ``(n,)``. Arms: ``n_arms`` K >= 2 quantile midpoints, or
    ``arms`` (a sequence of K >= 2 distinct candidate values). ``reward``: ``"absolute"``, ``"squared"``, a
    callable or ``"module:function"``. The other parameters are those of
    :class:`~dpbandit.envs.datasets.ClassificationBanditEnv`. ``env.candidates`` ``(K,)`` holds the arms' values.
    """

    def __init__(
        self,
        *,
        dataset: str | None = None,
        data: str | Path | None = None,
        target: str | None = None,
        X: Any = None,
        y: Any = None,
        n_arms: int = 5,
        arms: Sequence[float] | None = None,
        reward: Any = "absolute",
        horizon: int = 2000,
        context_norm: str = "l2",
        context_bound: float = 1.0,
        normalize: str = "scale",
        full_information: bool = False,
        standardize: bool = True,
        theta_bound: float = float("inf"),
        render_mode: str | None = None,
    ):
        x, values, source = resolve_source(dataset=dataset, bundled=REGRESSION_DATASETS, default="diabetes",
                                           data=data, target=target, X=X, y=y)
        targets = _numbers(values, source_name(source))
        if arms is None:
            K = check_int("n_arms", n_arms, low=2)
            _check_size(K, x.shape, "n_arms")
            candidates = np.quantile(targets, (np.arange(K) + 0.5) / K)
        else:
            try:
                candidates = np.asarray(arms, dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError(f"arms must be a sequence of numbers, got {arms!r}") from None
            if candidates.ndim != 1 or candidates.size < 2 or not np.isfinite(candidates).all():
                raise ValueError(f"arms must be a 1-D sequence of at least 2 finite numbers, got {arms!r}")
            _check_size(candidates.size, x.shape, "arms")
        if np.unique(candidates).size != candidates.size:
            raise ValueError(f"candidate predictions must be distinct, got {candidates.tolist()} (too few distinct "
                             "target values for n_arms: lower n_arms or give arms=)")
        self.candidates = candidates
        self.candidates.flags.writeable = False
        rewards = regression_rewards(candidates, targets, reward)
        self._setup(x, rewards, horizon=horizon, context_norm=context_norm, context_bound=context_bound,
                    normalize=normalize, full_information=full_information, standardize=standardize,
                    render_mode=render_mode, theta_bound=theta_bound)
        reward_name = reward if isinstance(reward, str) else f"{reward.__module__}:{reward.__qualname__}"
        self.config = {**source, "n_arms": int(candidates.size), "arms": candidates.tolist(), "reward": reward_name,
                       **self.config}

    @classmethod
    def from_arrays(cls, X: Any, y: Any, **kwargs: Any) -> "RegressionBanditEnv":
        """The bandit of features ``X`` ``(n, d)`` and numeric targets ``y`` ``(n,)``."""
        return cls(X=X, y=y, **kwargs)

    @classmethod
    def from_dataframe(cls, df: Any, *, target: str, **kwargs: Any) -> "RegressionBanditEnv":
        """The bandit of a pandas frame: column ``target`` holds the targets, every other column is a feature."""
        x, y, _ = frame_to_table(df, target)
        return cls(X=x, y=y, **kwargs)


def _check_size(K: int, shape: tuple[int, ...], name: str) -> None:
    """The size rule before anything of size K is built: the rewards table ``(n, K)`` and its temporaries (four
    ``n x K`` arrays at the peak) and the observation bounds ``(K, d)``."""
    n, d = shape[0], shape[1] if len(shape) > 1 else 1
    check_memory(f"environment RegressionBanditEnv(n_arms={K}, rows={n}, dim={d}) (the rewards table rows x n_arms)",
                 8.0 * (4 * n * K + 3 * K * d), f"lower {name}")


def regression_from_data(**kwargs: Any) -> RegressionBanditEnv:
    """Entry point of ``dpbandit/Regression-v0``: a :class:`RegressionBanditEnv` that requires your data
    (``data=`` + ``target=``, or ``X=`` + ``y=``)."""
    if kwargs.get("data") is None and kwargs.get("X") is None:
        raise ValueError("dpbandit/Regression-v0 needs your data: data='path.csv' (or .parquet) and "
                         "target='column to predict', or X= and y= arrays")
    return RegressionBanditEnv(**kwargs)
