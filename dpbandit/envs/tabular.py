"""Bandits over a table of users: the shared machinery of the real-data environments, and user data validation.

A :class:`TabularBanditEnv` holds ``n`` rows of features ``(n, d)`` and, per row, the reward of every arm
``(n, K)`` in ``[0, 1]``. Each round a user is a row drawn uniformly with replacement; the observation is that row's
feature vector repeated for every arm (disjoint structure, ``(K, d)``), the reward of arm ``a`` is the row's entry
``a`` (deterministic: no reward noise) and the pseudo-regret is the row's best entry minus the played one.

Features are put on the footing private agents calibrate to (the same rules as the synthetic environments,
:func:`dpbandit.envs.contexts.normalise`): every column is standardised to z-scores over the table (constant
columns stay 0), then every row is scaled (``normalize="scale"``) or projected (``"clip"``) into the
``context_norm`` ball of radius ``context_bound``. Rewards lie in ``[0, 1]``, so ``BanditConstants`` states
``reward_low = mean_low = 0`` and ``reward_high = mean_high = 1``. The standardisation uses statistics of the
whole table: treat them as public constants (a private analysis of one's own data must fix them from public
knowledge instead, e.g. by passing features already scaled to known ranges with ``standardize=False``).
``theta_bound`` (default ``inf``: unknown) is an assumed l2 bound on a linear reward model; UCB-type agents (LinUCB's
private sibling DP-UCB) need a finite one for their confidence widths, without it they play uniformly at random.

User data (:func:`check_table`, :func:`read_table`) is checked before any work: a 2-D finite numeric feature
matrix with at least one row and column, a 1-D target of the same length without missing values, and a file
that exists with a ``.csv`` or ``.parquet`` suffix and the named target column.

Seeding: the rows are drawn from ``stream(seed, "contexts")``; there is no reward noise and no random instance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from dpbandit.envs.constants import BanditConstants
from dpbandit.envs.contexts import CONTEXT_NORMS, NORMALIZE_MODES, normalise
from dpbandit.seeding import stream
from dpbandit.validation import check_action, check_choice, check_int, check_real

__all__ = ["TabularBanditEnv", "check_table", "frame_to_table", "read_table", "resolve_source", "standardise",
           "TABLE_SUFFIXES"]

#: File types :func:`read_table` reads (parquet needs the optional ``pyarrow``: ``pip install 'dpbandit[parquet]'``).
TABLE_SUFFIXES: tuple[str, ...] = (".csv", ".parquet")

_BLOCK = 1024


def standardise(x: np.ndarray) -> np.ndarray:
    """Column z-scores of ``x`` ``(n, d)``; constant columns become 0."""
    std = x.std(axis=0)
    return (x - x.mean(axis=0)) / np.where(std > 0, std, 1.0)


def check_table(features: Any, target: Any, *, names: tuple[str, str] = ("X", "y")) -> tuple[np.ndarray, np.ndarray]:
    """Validate user data: ``features`` ``(n, d)`` finite numbers, ``target`` ``(n,)`` without missing values.

    Returns ``(float64 features, target as a numpy array)``. Raises ``ValueError``/``TypeError`` naming the argument.
    """
    xn, yn = names
    try:
        x = np.asarray(features, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{xn} must be a 2-D array of numbers (n rows, d features); non-numeric columns must be "
                        "encoded first") from None
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"{xn} must be a 2-D array with at least one row and one column, got shape {x.shape}")
    if not np.isfinite(x).all():
        rows = np.flatnonzero(~np.isfinite(x).all(axis=1))
        raise ValueError(f"{xn} must be finite: {rows.size} row(s) hold NaN or inf (first: row {rows[0]}); drop or "
                         "impute them first")
    y = np.asarray(target)
    if y.ndim != 1 or y.shape[0] != x.shape[0]:
        raise ValueError(f"{yn} must be 1-D with one entry per row of {xn} ({x.shape[0]}), got shape {y.shape}")
    missing = np.array([v is None or (isinstance(v, float) and v != v) for v in y.tolist()], dtype=bool)
    if missing.any():
        raise ValueError(f"{yn} has {int(missing.sum())} missing value(s) (first: row {np.flatnonzero(missing)[0]})")
    return x, y


def read_table(path: str | Path, target: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Read a CSV or parquet file: ``(features (n, d), target (n,), feature names)``; every column but ``target``
    is a feature and must be numeric."""
    import pandas as pd

    path = Path(path)
    if path.suffix.lower() not in TABLE_SUFFIXES:
        raise ValueError(f"data must be a path ending in {' or '.join(TABLE_SUFFIXES)}, got {str(path)!r}")
    if not path.is_file():
        raise ValueError(f"data file {str(path)!r} does not exist")
    if not isinstance(target, str) or not target:
        raise TypeError(f"target must be the name of a column of {str(path)!r}, got {target!r}")
    if path.suffix.lower() == ".parquet":
        try:
            frame = pd.read_parquet(path)
        except ImportError:
            raise ValueError("reading parquet needs pyarrow: pip install 'dpbandit[parquet]'") from None
    else:
        frame = pd.read_csv(path)
    return frame_to_table(frame, target, source=repr(str(path)))


def frame_to_table(frame: Any, target: str, *, source: str = "the data frame") -> tuple[np.ndarray, np.ndarray,
                                                                                        list[str]]:
    """Split a pandas frame into ``(features, target, feature names)`` with the checks of :func:`check_table`."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(frame).__name__}")
    if target not in frame.columns:
        raise ValueError(f"target {target!r} is not a column of {source}; columns: {list(frame.columns)}")
    features = frame.drop(columns=[target])
    bad = [str(c) for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
    if bad:
        raise TypeError(f"feature columns of {source} must be numeric; encode or drop {bad}")
    x, y = check_table(features.to_numpy(dtype=np.float64), frame[target].to_numpy(), names=("features", target))
    return x, y, [str(c) for c in features.columns]


def resolve_source(*, dataset: str | None, bundled: dict[str, str], default: str, data: Any, target: Any, X: Any,
                   y: Any) -> tuple[np.ndarray, np.ndarray, dict[str, str]]:
    """The ``(features, target, source record)`` of at most one data source: a ``bundled`` scikit-learn dataset
    name (``default`` when no source is given), a ``data`` file with its ``target`` column, or arrays ``X, y``."""
    given = [name for name, v in (("dataset", dataset), ("data", data), ("X", X)) if v is not None]
    if len(given) > 1:
        raise ValueError(f"give one data source (dataset=, data= with target=, or X= with y=), got {given}")
    if (X is None) != (y is None):
        raise ValueError("X and y must be given together (features and targets)")
    if target is not None and data is None:
        raise ValueError("target names a column of a data file: give data='path.csv' too")
    if data is not None:
        if target is None:
            raise ValueError("data needs target='column name' (the column the arms are scored against)")
        x, values, _ = read_table(data, target)
        return x, values, {"data": str(data), "target": target}
    if X is not None:
        x, values = check_table(X, y)
        return x, values, {"data": "arrays"}
    dataset = default if dataset is None else dataset
    check_choice("dataset", dataset, bundled)
    import sklearn.datasets

    x, values = getattr(sklearn.datasets, bundled[dataset])(return_X_y=True)
    return np.asarray(x, dtype=np.float64), np.asarray(values), {"dataset": dataset}


class TabularBanditEnv(gym.Env):
    """A K-armed contextual bandit whose users are the rows of a table (see the module docstring).

    Subclasses call :meth:`_setup` with the raw features ``(n, d)`` and the per-row rewards ``(n, K)`` in
    ``[0, 1]``. ``info`` of a step: ``"mean_rewards"`` (the row's rewards, ``(K,)``), ``"optimal_arm"`` (the
    row's best arm, lowest index on ties), ``"regret"`` and, with ``full_information``, ``"rewards"``.
    """

    metadata = {"render_modes": []}

    def _setup(self, x: np.ndarray, rewards: np.ndarray, *, horizon: int, context_norm: str, context_bound: float,
               normalize: str, full_information: bool, standardize: bool, render_mode: Any,
               theta_bound: float = float("inf")) -> None:
        if render_mode is not None:
            raise ValueError(f"render_mode must be None (this environment does not render), got {render_mode!r}")
        self.render_mode = None
        self.horizon = check_int("horizon", horizon, low=1)
        check_choice("context_norm", context_norm, CONTEXT_NORMS)
        bound = check_real("context_bound", context_bound, low=0.0, low_inclusive=False)
        check_choice("normalize", normalize, NORMALIZE_MODES)
        theta_bound = check_real("theta_bound", theta_bound, low=0.0, low_inclusive=False, allow_inf=True)
        for flag, value in (("full_information", full_information), ("standardize", standardize)):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{flag} must be a bool, got {value!r}")
        rewards = np.asarray(rewards, dtype=np.float64)
        if rewards.ndim != 2 or rewards.shape[0] != x.shape[0] or rewards.shape[1] < 2:
            raise ValueError(f"rewards must have shape (n, K) with K >= 2 and n = {x.shape[0]}, got {rewards.shape}")
        if not (np.isfinite(rewards).all() and rewards.min() >= 0.0 and rewards.max() <= 1.0):
            raise ValueError("rewards must lie in [0, 1]")
        self.features = normalise(standardise(x) if standardize else x, context_norm, bound, normalize)
        self.features.flags.writeable = False
        self.rewards = rewards
        self.rewards.flags.writeable = False
        self.n_arms, self.dim = rewards.shape[1], x.shape[1]
        self.best_arms = rewards.argmax(axis=1)
        self.full_information = bool(full_information)
        self.config = dict(horizon=self.horizon, context_norm=context_norm, context_bound=bound,
                           normalize=normalize, full_information=self.full_information, standardize=bool(standardize),
                           theta_bound=theta_bound)
        self.constants = BanditConstants(
            n_arms=self.n_arms, dim=self.dim, horizon=self.horizon, structure="disjoint", link="identity",
            context_norm=context_norm, context_bound=bound, theta_norm="l2", theta_bound=theta_bound,
            sparsity=self.dim, noise_std=0.0, reward_low=0.0, reward_high=1.0, mean_low=0.0, mean_high=1.0,
        )
        self.observation_space = gym.spaces.Box(-bound, bound, (self.n_arms, self.dim), np.float64)
        self.action_space = gym.spaces.Discrete(self.n_arms)
        self._rng: np.random.Generator | None = None
        self._t: int | None = None

    @property
    def n_rows(self) -> int:
        """Number of rows (users) of the table."""
        return int(self.features.shape[0])

    def expected_rewards(self, observation: np.ndarray) -> np.ndarray:
        """The rewards ``(K,)`` of the row equal to ``observation[0]`` (oracle use only)."""
        x = np.asarray(observation, dtype=np.float64)
        if x.shape != (self.n_arms, self.dim):
            raise ValueError(f"observation must have shape {(self.n_arms, self.dim)}, got {x.shape}")
        rows = np.flatnonzero((self.features == x[0]).all(axis=1))
        if rows.size == 0:
            raise ValueError("observation is not a row of this dataset")
        return self.rewards[rows[0]]

    def _next_block(self) -> None:
        n = min(_BLOCK, self.horizon - self._t)
        self._rows = self._rng.integers(self.n_rows, size=n)
        block = self.features[self._rows]  # a fresh copy per block: observations never alias the dataset
        block.flags.writeable = False
        self._block = np.broadcast_to(block[:, None, :], (n, self.n_arms, self.dim))
        self._means = self.rewards[self._rows]  # fresh (n, K) rows: infos never alias each other
        self._means.flags.writeable = False
        self._i = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if options:
            raise ValueError(f"options must be None or empty, got {options!r}")
        if seed is not None or self._rng is None:
            self._rng = stream(seed, "contexts")
        self._t = 0
        self._next_block()
        return self._block[self._i], {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._t is None or self._t >= self.horizon:
            raise RuntimeError("step() called before reset() or after the episode ended: call reset()")
        a = check_action(action, self.n_arms)
        row = self._rows[self._i]
        means = self._means[self._i]
        best = int(self.best_arms[row])
        info = {"mean_rewards": means, "optimal_arm": best, "regret": float(means[best] - means[a])}
        if self.full_information:
            info["rewards"] = means
        self._t += 1
        self._i += 1
        if self._t == self.horizon:
            return np.zeros((self.n_arms, self.dim)), float(means[a]), False, True, info
        if self._i == len(self._rows):
            self._next_block()
        return self._block[self._i], float(means[a]), False, False, info
