"""Logged bandit data: a table of (context, action, reward, propensity) rounds, its files, and how to make one.

:class:`LoggedData` holds ``n`` logged rounds of a K-action bandit:

* ``context`` ``(n, d)``: the user's features (the observation of every arm, disjoint structure);
* ``action`` ``(n,)`` integers in ``[0, K)``: the logged (behaviour) policy's action;
* ``reward`` ``(n,)``: the observed reward of that action;
* ``pscore`` ``(n,)`` in ``(0, 1]`` or None: the probability the logging policy gave that action (the propensity);
* ``position`` ``(n,)`` integers >= 0 or None: the slot of a ranking the round was shown in (None: one slot).

It reads and writes the *bandit-feedback dict* of Open Bandit Pipeline (OBP) without depending on it
(:meth:`LoggedData.from_obp`, :meth:`LoggedData.to_obp`): keys ``n_rounds``, ``n_actions``, ``action``,
``reward``, ``pscore``, ``context``, and optionally ``position`` (slot of a ranking, 0-based; kept in
:attr:`LoggedData.position`: the estimators evaluate each position or, under position independence, the pool:
:mod:`dpbandit.offline.positions`), ``action_context`` ``(K, d_a)`` (carried through, not used),
``expected_reward`` ``(n, K)`` and ``pi_b`` (kept when present). Files: ``.npz`` (the OBP dict saved with
``numpy.savez``) and ``.csv``/``.parquet`` tables with columns ``action``, ``reward``, ``pscore`` (or
``propensity``), optionally ``position``, and every other column a context feature (:func:`read_logged`,
:meth:`LoggedData.write`).

:func:`log_policy` plays uniform-random (or any) actions in a dpbandit environment and records the log, for tests
and for studying estimators against a known truth.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpbandit.envs.tabular import column_numbers, read_frame
from dpbandit.seeding import stream
from dpbandit.validation import check_int

__all__ = ["LoggedData", "read_logged", "log_policy", "LOG_SUFFIXES"]

#: File types :func:`read_logged` reads.
LOG_SUFFIXES: tuple[str, ...] = (".npz", ".csv", ".parquet")
_RESERVED = ("action", "reward", "pscore", "propensity", "position")


@dataclass(frozen=True, eq=False)
class LoggedData:
    """``n`` logged rounds of a ``n_actions``-armed contextual bandit (see the module docstring for the fields).

    Validated on construction: ``context`` 2-D finite, ``action`` integers in ``[0, n_actions)``, ``reward`` finite,
    ``pscore`` in ``(0, 1]``; every per-round array has ``n`` entries.
    """

    context: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    n_actions: int
    pscore: np.ndarray | None = None
    action_context: np.ndarray | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    position: np.ndarray | None = None

    def __post_init__(self) -> None:
        ctx = np.asarray(self.context, dtype=np.float64)
        if ctx.ndim == 1:
            ctx = ctx[:, None]
        if ctx.ndim != 2 or ctx.shape[0] < 1:
            raise ValueError(f"context must have shape (n_rounds, d) with n_rounds >= 1, got {ctx.shape}")
        if not np.isfinite(ctx).all():
            raise ValueError("context must be finite (no NaN or inf)")
        n = ctx.shape[0]
        k = check_int("n_actions", self.n_actions, low=2)
        action = np.asarray(self.action)
        if action.shape != (n,) or not np.issubdtype(action.dtype, np.integer) and not (
            np.issubdtype(action.dtype, np.floating) and np.all(action == np.round(action))
        ):
            raise ValueError(f"action must be {n} integers (one per round), got shape {action.shape}, "
                             f"dtype {action.dtype}")
        action = action.astype(np.int64)
        if action.min() < 0 or action.max() >= k:
            raise ValueError(f"action must lie in [0, n_actions) = [0, {k}), got values in "
                             f"[{action.min()}, {action.max()}]")
        reward = np.asarray(self.reward, dtype=np.float64)
        if reward.shape != (n,) or not np.isfinite(reward).all():
            raise ValueError(f"reward must be {n} finite numbers (one per round), got shape {reward.shape}")
        pscore = None
        if self.pscore is not None:
            pscore = np.asarray(self.pscore, dtype=np.float64)
            if pscore.shape != (n,) or not (np.all(pscore > 0) and np.all(pscore <= 1)):
                raise ValueError(f"pscore must be {n} probabilities in (0, 1] (the logging policy's probability of "
                                 "the logged action)")
        position = None
        if self.position is not None:
            position = np.asarray(self.position)
            if position.shape != (n,) or not np.all(np.isfinite(position)) or np.any(position < 0) or np.any(
                    position != np.round(position)):
                raise ValueError(f"position must be {n} integers >= 0 (one slot per round)")
            position = position.astype(np.int64)
        for name, value in (("context", ctx), ("action", action), ("reward", reward), ("pscore", pscore),
                            ("position", position)):
            if value is not None:
                value.flags.writeable = False
            object.__setattr__(self, name, value)
        object.__setattr__(self, "n_actions", k)
        if self.action_context is not None:
            object.__setattr__(self, "action_context", np.asarray(self.action_context))
        object.__setattr__(self, "extra", dict(self.extra))

    @property
    def n_rounds(self) -> int:
        return int(self.context.shape[0])

    @property
    def dim(self) -> int:
        return int(self.context.shape[1])

    @property
    def positions(self) -> list[int]:
        """The distinct positions of the log (``[0]`` for a single-slot log)."""
        return [0] if self.position is None else sorted(int(p) for p in np.unique(self.position))

    def select(self, rows: np.ndarray) -> "LoggedData":
        """The log of the given rounds (a boolean mask ``(n,)`` or indices); per-round ``extra`` arrays follow."""
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        n = self.n_rounds
        extra = {k: (v[rows] if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == n else v)
                 for k, v in self.extra.items()}
        return LoggedData(self.context[rows], self.action[rows], self.reward[rows], self.n_actions,
                          pscore=None if self.pscore is None else self.pscore[rows],
                          action_context=self.action_context, extra=extra,
                          position=None if self.position is None else self.position[rows])

    @property
    def uniform(self) -> bool:
        """True when every logged propensity is ``1/K`` (a uniformly random logging policy)."""
        return self.pscore is not None and bool(np.allclose(self.pscore, 1.0 / self.n_actions, rtol=1e-9, atol=0))

    # -- Open Bandit Pipeline's bandit-feedback dict ------------------------------------------------------------------

    @classmethod
    def from_obp(cls, feedback: dict) -> "LoggedData":
        """From OBP's bandit-feedback dict (``obtain_batch_bandit_feedback()``); ``n_rounds`` must match the arrays;
        ``position`` (when present) is kept."""
        if not isinstance(feedback, dict):
            raise TypeError(f"feedback must be a dict (OBP's bandit feedback), got {type(feedback).__name__}")
        missing = [k for k in ("n_actions", "action", "reward", "context") if feedback.get(k) is None]
        if missing:
            raise ValueError(f"bandit feedback lacks {missing}; needs n_actions, action, reward, context "
                             "(and pscore for propensity-based estimates)")
        position = feedback.get("position")
        data = cls(context=feedback["context"], action=feedback["action"], reward=feedback["reward"],
                   n_actions=_scalar(feedback["n_actions"]), pscore=feedback.get("pscore"),
                   action_context=feedback.get("action_context"),
                   extra={k: np.asarray(feedback[k]) for k in ("expected_reward", "pi_b") if feedback.get(k) is not None},
                   position=None if position is None or np.all(np.asarray(position) == 0) else position)
        if "n_rounds" in feedback and _scalar(feedback["n_rounds"]) != data.n_rounds:
            raise ValueError(f"n_rounds = {_scalar(feedback['n_rounds'])} does not match the {data.n_rounds} logged "
                             "rounds")
        return data

    def to_obp(self) -> dict:
        """OBP's bandit-feedback dict (``position`` all 0 for a single-slot log; ``action_context`` the identity when
        none was logged)."""
        out = {
            "n_rounds": self.n_rounds,
            "n_actions": self.n_actions,
            "action": self.action.copy(),
            "position": np.zeros(self.n_rounds, dtype=np.int64) if self.position is None else self.position.copy(),
            "reward": self.reward.copy(),
            "pscore": None if self.pscore is None else self.pscore.copy(),
            "context": self.context.copy(),
            "action_context": np.eye(self.n_actions) if self.action_context is None else self.action_context.copy(),
        }
        out.update({k: v.copy() for k, v in self.extra.items()})
        return out

    # -- files ---------------------------------------------------------------------------------------------------------

    def to_frame(self):
        """A pandas table: ``context_0 .. context_{d-1}``, ``action``, ``reward``, ``pscore`` and ``position`` (when
        logged)."""
        import pandas as pd

        frame = pd.DataFrame(self.context, columns=[f"context_{j}" for j in range(self.dim)])
        frame["action"] = self.action
        frame["reward"] = self.reward
        if self.pscore is not None:
            frame["pscore"] = self.pscore
        if self.position is not None:
            frame["position"] = self.position
        return frame

    def write(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write ``.npz`` (the OBP dict; ``pscore`` omitted when not logged) or a ``.csv``/``.parquet`` table, through
        the output layer (:func:`dpbandit.files.write_atomic`: atomic; an existing file only with ``overwrite``)."""
        from dpbandit.files import write_atomic

        path = Path(path)
        suffix = _check_suffix(path)

        def write(tmp: Path) -> None:
            if suffix == ".npz":
                with open(tmp, "wb") as f:
                    np.savez(f, **{k: v for k, v in self.to_obp().items() if v is not None})
            elif suffix == ".csv":
                self.to_frame().to_csv(tmp, index=False)
            else:
                _parquet(lambda: self.to_frame().to_parquet(tmp))

        return write_atomic(path, write, kind="single", overwrite=overwrite)


def _scalar(value: Any) -> int:
    arr = np.asarray(value)
    if arr.size != 1:
        raise ValueError(f"expected a single integer, got {value!r}")
    return int(arr.reshape(()))


def _check_suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in LOG_SUFFIXES:
        raise ValueError(f"log file must end in {', '.join(LOG_SUFFIXES)}, got {str(path)!r}")
    return suffix


def _parquet(call):
    try:
        return call()
    except ImportError:
        raise ValueError("parquet files need pyarrow: pip install 'dpbandit[parquet]'") from None


def read_logged(path: str | Path, n_actions: int | None = None) -> LoggedData:
    """Read a log file (see the module docstring). For tables, ``n_actions`` defaults to ``max(action) + 1``.

    Every error names the file (and, for tables, the column and the first bad row)."""
    path = Path(path) if isinstance(path, (str, Path)) else path
    if not isinstance(path, Path):
        raise TypeError(f"log file must be a path ending in {', '.join(LOG_SUFFIXES)}, got {path!r}")
    source = f"log file {str(path)!r}"
    if path.is_dir():
        raise ValueError(f"{source} is a folder, not a {', '.join(LOG_SUFFIXES)} file")
    suffix = _check_suffix(path)
    if suffix == ".npz":
        feedback = _read_npz(path)
        if n_actions is not None:
            feedback["n_actions"] = n_actions
        return _from_obp(feedback, source)
    frame = read_frame(path, what="log file", suffixes=(".csv", ".parquet"))
    missing = [c for c in ("action", "reward") if c not in frame.columns]
    if missing:
        raise ValueError(f"log table {str(path)!r} lacks column(s) {missing}; columns: {list(frame.columns)}")
    if "pscore" in frame.columns and "propensity" in frame.columns:
        raise ValueError(f"{source} gives the propensity twice: keep one column, 'pscore' or "
                         "'propensity', not both")
    pcol = "pscore" if "pscore" in frame.columns else ("propensity" if "propensity" in frame.columns else None)
    features = [c for c in frame.columns if c not in _RESERVED]
    frame = _numeric_log_columns(frame, [c for c in ("action", "reward", pcol, "position") if c in frame.columns], features, source)
    feedback = {
        "n_actions": _inferred_actions(frame["action"].to_numpy(), source) if n_actions is None else n_actions,
        "action": frame["action"].to_numpy(), "reward": frame["reward"].to_numpy(),
        "context": frame[features].to_numpy(dtype=np.float64),
        "pscore": None if pcol is None else frame[pcol].to_numpy(dtype=np.float64),
        "position": frame["position"].to_numpy() if "position" in frame.columns else None,
    }
    return _from_obp(feedback, source)


def _inferred_actions(action: np.ndarray, source: str) -> int:
    """K of a log table that does not state it: ``max(action) + 1``, refused (before anything of size K is built)
    when most of the ids 0..K-1 were never logged: ids are then labels (e.g. item ids), not a count of actions,
    and a K of, say, 100001 for 5 logged actions would cost minutes and gigabytes for nothing."""
    k = int(action.max()) + 1
    logged = int(np.unique(action).size)
    if k > 2 * logged + 10:
        raise ValueError(f"{source}: the largest action id is {k - 1}, so n_actions would be {k}, but only {logged} "
                         f"distinct actions were logged; number the actions 0..K-1, or state K with n_actions= "
                         "(dpbandit replay --n-actions)")
    return k


def _numeric_log_columns(frame: Any, columns: list[str], features: list[Any], source: str) -> Any:
    """``frame`` with every named column and context column as finite float64 numbers (action: integers >= 0);
    ``TypeError``/``ValueError`` naming ``source``, the column and the first bad row otherwise."""
    if not features:
        raise ValueError(f"{source} has no context column: every column but {list(_RESERVED)} is a "
                         "context feature, and at least one is needed")
    if len(frame) == 0:
        raise ValueError(f"{source} holds no rows (only the header line {list(frame.columns)})")
    out = frame.copy()
    for column in [*columns, *features]:
        values = column_numbers(frame, column, source, what="column" if column in columns else "context column")
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            what = "is empty" if np.isnan(values[bad[0]]) else f"holds {values[bad[0]]}"
            raise ValueError(f"column {str(column)!r} of {source} must hold finite numbers; row {bad[0]} {what}")
        if column in ("action", "position"):
            bad = np.flatnonzero((values < 0) | (values != np.round(values)))
            if bad.size:
                raise ValueError(f"column {column!r} of {source} must hold integers >= 0 (action indices 0, 1, ..."
                                 f"); row {bad[0]} holds {values[bad[0]]:g}")
            if values.max() >= 2**62:
                raise ValueError(f"column {column!r} of {source} holds {values.max():g}: not an action index")
            values = values.astype(np.int64)
        out[column] = values
    return out


def _read_npz(path: Path) -> dict:
    """The arrays of an ``.npz`` log (OBP's dict saved with ``numpy.savez``); ``ValueError`` naming the file when it
    is missing or not an archive of plain arrays (object arrays are never unpickled)."""
    import zipfile

    name = str(path)
    if not path.is_file():
        raise ValueError(f"log file {name!r} does not exist")
    not_npz = (f"log file {name!r} is not a NumPy .npz archive (the bandit-feedback dict saved with numpy.savez)")
    try:
        loaded = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, zipfile.BadZipFile):
        raise ValueError(not_npz) from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise ValueError(f"{not_npz}: it holds a single array (.npy)")
    with loaded as npz:
        try:
            arrays = {k: npz[k] for k in npz.files}
        except ValueError:
            raise ValueError(f"log file {name!r} holds object arrays (pickled data), which dpbandit never loads; "
                             "save plain numeric arrays") from None
        except (EOFError, zipfile.BadZipFile, OSError):
            raise ValueError(f"{not_npz}: it is damaged") from None
    for key in ("n_actions", "n_rounds", "action", "reward", "pscore", "context", "position"):
        if key in arrays and arrays[key].dtype.kind not in "biuf":
            raise ValueError(f"log file {name!r}: array {key!r} must hold numbers, got {arrays[key].dtype} values "
                             f"such as {arrays[key].reshape(-1)[:1].tolist()}")
    return arrays


def _from_obp(feedback: dict, source: str) -> LoggedData:
    """:meth:`LoggedData.from_obp` with its errors naming the log file."""
    try:
        return LoggedData.from_obp(feedback)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{source}: {exc}") from None


def log_policy(env: Any, n_rounds: int, seed: int, policy: Any = None) -> LoggedData:
    """Log ``n_rounds`` rounds of a dpbandit environment played by ``policy`` (uniform random when None).

    ``policy(observation (K, d), rng) -> probabilities (K,)``; the action is drawn from them with
    ``stream(seed, "exploration")`` and its probability logged as ``pscore``. The environment is reset with ``seed``
    (and again with ``seed + 1, ...`` when an episode ends before ``n_rounds``). Contexts are ``observation[0]``
    (disjoint structure). ``extra["expected_reward"]`` ``(n, K)`` keeps every arm's expected reward, so estimators
    can be checked against the truth.
    """
    n = check_int("n_rounds", n_rounds, low=1)
    base = env.unwrapped
    k, d = base.constants.n_arms, base.constants.dim
    if base.constants.structure != "disjoint":
        raise ValueError("log_policy records one context per round: the environment must have disjoint structure")
    rng = stream(seed, "exploration")
    context, action, reward, pscore, means = np.empty((n, d)), np.empty(n, np.int64), np.empty(n), np.empty(n), \
        np.empty((n, k))
    episode = 0
    obs, _ = env.reset(seed=seed)
    for i in range(n):
        probs = np.full(k, 1.0 / k) if policy is None else np.asarray(policy(obs, rng), dtype=np.float64)
        a = int(rng.choice(k, p=probs))
        next_obs, r, terminated, truncated, info = env.step(a)
        context[i], action[i], reward[i], pscore[i], means[i] = obs[0], a, r, probs[a], info["mean_rewards"]
        obs = next_obs
        if terminated or truncated:
            episode += 1
            obs, _ = env.reset(seed=seed + episode)
    return LoggedData(context, action, reward, k, pscore=pscore, extra={"expected_reward": means})
