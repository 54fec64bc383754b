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
``theta_bound`` (default ``inf``: unknown) is an assumed l2 bound on a linear reward model; agents that need a finite
one (DP-UCB's confidence width, the l1 radius of DP-HDB and FLIPHAT) refuse at construction without it, in one line
naming ``theta_bound`` (:func:`dpbandit.agents.private.require_finite_theta_bound`).

User data (:func:`check_table`, :func:`read_table`) is checked before any work: a 2-D finite numeric feature
matrix with at least one row and column, a 1-D target of the same length without missing values, and a file
that exists with a ``.csv`` or ``.parquet`` suffix and the named target column.

Seeding: the rows are drawn from ``stream(seed, "contexts")``; there is no reward noise and no random instance.

Blocks: the rows of a block of 1024 rounds are drawn at once, and :meth:`TabularBanditEnv.take_block` hands the
rest of the current block to the evaluation loop (the block protocol, :mod:`dpbandit.envs.blocks`), the same rounds
and numbers as ``step``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from dpbandit.envs.blocks import RoundBlock
from dpbandit.envs.constants import BanditConstants
from dpbandit.envs.contexts import CONTEXT_NORMS, NORMALIZE_MODES, normalise
from dpbandit.seeding import stream
from dpbandit.validation import check_action, check_choice, check_int, check_real

__all__ = ["TabularBanditEnv", "check_table", "column_numbers", "frame_to_table", "read_frame", "read_table",
           "resolve_source", "source_name", "standardise", "TABLE_SUFFIXES"]

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


def read_frame(path: str | Path, *, what: str = "data file", suffixes: tuple[str, ...] = TABLE_SUFFIXES) -> Any:
    """Read a user's ``.csv`` or ``.parquet`` table into a pandas frame: the one place user tables are parsed.

    Every way the file can fail is a ``ValueError`` naming it (``what`` and the path): a wrong suffix, a missing
    file or a folder, an empty file, text that is not UTF-8, a CSV that does not tokenise, a file that is not
    parquet (pandas' and pyarrow's own messages are reduced to their first line)."""
    import pandas as pd

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what} must be a path to a {' or '.join(suffixes)} file, got {path!r}")
    path = Path(path)
    name = str(path)
    suffix = path.suffix.lower()
    if path.is_dir():
        raise ValueError(f"{what} {name!r} is a folder, not a {' or '.join(suffixes)} file")
    if suffix not in suffixes:
        raise ValueError(f"{what} must be a path ending in {' or '.join(suffixes)}, got {name!r}")
    if not path.is_file():
        raise ValueError(f"{what} {name!r} does not exist")
    try:
        if suffix == ".parquet":
            return pd.read_parquet(path)
        return pd.read_csv(path)
    except ImportError:
        raise ValueError("reading parquet needs pyarrow: pip install 'dpbandit[parquet]'") from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"{what} {name!r} is empty: a table needs a header line of column names and rows of "
                         "values") from None
    except UnicodeDecodeError:
        raise ValueError(f"{what} {name!r} is not a CSV table: it is not UTF-8 text") from None
    except ValueError as exc:  # pandas' ParserError, pyarrow's ArrowInvalid
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        kind = "parquet file" if suffix == ".parquet" else "CSV table"
        raise ValueError(f"{what} {name!r} cannot be read as a {kind}: {first}") from None


def read_table(path: str | Path, target: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Read a CSV or parquet file: ``(features (n, d), target (n,), feature names)``; every column but ``target``
    is a feature and must be numeric (errors name the file and the column, :func:`frame_to_table`)."""
    frame = read_frame(path)
    if not isinstance(target, str) or not target:
        raise TypeError(f"target must be the name of a column of data file {str(path)!r}, got {target!r}")
    return frame_to_table(frame, target, source=f"data file {str(path)!r}")


def column_numbers(frame: Any, column: Any, source: str, *, what: str = "column") -> np.ndarray:
    """Column ``column`` of ``frame`` as float64 (NaN where a cell is empty). ``TypeError`` naming the column, the
    ``source`` (e.g. the file) and the first cell that is not a number (its row, counted from 0 as pandas does)."""
    import pandas as pd

    values = frame[column]
    if not pd.api.types.is_numeric_dtype(values):
        numbers = pd.to_numeric(values, errors="coerce")
        bad = np.flatnonzero((numbers.isna() & values.notna()).to_numpy())
        if bad.size:
            raise TypeError(f"{what} {str(column)!r} of {source} must hold numbers; row {bad[0]} holds "
                            f"{values.iloc[bad[0]]!r} (encode or drop it first)")
        values = numbers
    return values.to_numpy(dtype=np.float64, na_value=np.nan)


def frame_to_table(frame: Any, target: str, *, source: str = "the data frame") -> tuple[np.ndarray, np.ndarray,
                                                                                        list[str]]:
    """Split a pandas frame into ``(features, target, feature names)`` with the checks of :func:`check_table`;
    errors name ``source`` and the column (and the first bad row)."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(frame).__name__}")
    if target not in frame.columns:
        raise ValueError(f"target {target!r} is not a column of {source}; columns: {list(frame.columns)}")
    if len(frame) == 0:
        raise ValueError(f"{source} holds no rows (only the header line {list(frame.columns)}); a table needs at "
                         "least one row of values")
    names = [c for c in frame.columns if c != target]
    if not names:
        raise ValueError(f"{source} has no feature column: every column but the target {target!r} is a feature")
    bad = [str(c) for c in names if not pd.api.types.is_numeric_dtype(frame[c])]
    if bad:  # the first offending cell, then the list: "encode or drop" names every such column
        column_numbers(frame, bad[0], source, what="feature column")
        raise TypeError(f"feature columns of {source} must be numeric; encode or drop {bad}")
    x = np.column_stack([column_numbers(frame, c, source) for c in names])
    rows, cols = np.nonzero(~np.isfinite(x))
    if rows.size:
        i, c = rows[0], names[cols[0]]
        what = "is empty" if np.isnan(x[i, cols[0]]) else f"holds {x[i, cols[0]]}"
        raise ValueError(f"feature column {str(c)!r} of {source} must hold finite numbers; row {i} {what} "
                         f"({np.unique(rows).size} row(s) affected: drop or impute them first)")
    _, y = check_table(x, frame[target].to_numpy(), names=("features", f"target column {target!r} of {source}"))
    return x, y, [str(c) for c in names]


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


def source_name(source: dict[str, str]) -> str:
    """How errors name the target of a :func:`resolve_source` record: ``"target column 'label' of data file
    'users.csv'"``, ``"y"`` (arrays) or ``"the targets of dataset 'wine'"``."""
    if "target" in source:
        return f"target column {source['target']!r} of data file {source['data']!r}"
    if source.get("data") == "arrays":
        return "y"
    return f"the targets of dataset {source.get('dataset')!r}"


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

    def take_block(self) -> RoundBlock:
        """The rounds from the current one to the end of the current block of rows, as a
        :class:`~dpbandit.envs.blocks.RoundBlock` (the block protocol, :mod:`dpbandit.envs.blocks`): ``means`` and
        ``rewards`` are the rows' rewards, ``best`` their largest (the reward of the row's best arm, as ``step``'s
        regret takes it). The episode then stands after them, as if ``step`` had been called for each. The block
        names no ``source``: rows with equal features may hold different rewards, so ``expected_rewards`` of an
        observation (the first such row's) need not be its ``means``, and an oracle asks it round by round."""
        if self._t is None or self._t >= self.horizon:
            raise RuntimeError("take_block() called before reset() or after the episode ended: call reset()")
        i = self._i
        means = self._means[i:]
        best = means.max(axis=1)
        best.flags.writeable = False
        block = RoundBlock(self._t + 1, self._block[i:], means, means, best)
        self._t += block.n
        self._i = len(self._rows)
        if self._t < self.horizon:
            self._next_block()
        return block

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
