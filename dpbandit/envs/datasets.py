"""Real-data contextual bandits: the multiclass-to-bandit reduction over datasets shipped with scikit-learn.

Each round a user is a row drawn uniformly (with replacement) from a labelled dataset; the K arms are the K
classes and the reward is 1 for the correct class, 0 otherwise (the standard reduction of multiclass
classification to a contextual bandit, e.g. OBP's ``MultiClassToBanditReduction`` and VW's ``--cbify``). The
expected reward of arm a is 1{a = label}, so the pseudo-regret of a round is 0 or 1.

Features are standardised (z-scores over the dataset) and then every row is scaled or clipped to the stated
``context_norm`` ball of radius ``context_bound``, so privacy sensitivities are bounded. The datasets ship inside
scikit-learn (nothing is downloaded): ``digits`` (d=64, K=10, n=1797), ``wine`` (d=13, K=3, n=178),
``breast_cancer`` (d=30, K=2, n=569), ``iris`` (d=4, K=3, n=150).

Structure: disjoint (one context, every row of the ``(K, d)`` observation equals it). Seeding: the rows are drawn
from ``stream(seed, "contexts")``; there is no reward noise and no random instance.
"""

from __future__ import annotations

import operator
from typing import Any

import gymnasium as gym
import numpy as np

from dpbandit.envs.constants import BanditConstants
from dpbandit.envs.contexts import CONTEXT_NORMS, NORMALIZE_MODES, normalise
from dpbandit.seeding import stream
from dpbandit.validation import check_choice, check_int, check_real

__all__ = ["ClassificationBanditEnv", "DATASETS"]

#: Dataset name -> scikit-learn loader name (bundled data files).
DATASETS: dict[str, str] = {
    "digits": "load_digits",
    "wine": "load_wine",
    "breast_cancer": "load_breast_cancer",
    "iris": "load_iris",
}

_BLOCK = 1024


def _load(name: str) -> tuple[np.ndarray, np.ndarray]:
    import sklearn.datasets

    x, y = getattr(sklearn.datasets, DATASETS[name])(return_X_y=True)
    x = np.asarray(x, dtype=np.float64)
    std = x.std(axis=0)
    x = (x - x.mean(axis=0)) / np.where(std > 0, std, 1.0)  # constant pixels of digits stay 0
    _, labels = np.unique(y, return_inverse=True)
    return x, labels.astype(np.int64)


class ClassificationBanditEnv(gym.Env):
    """A K-class dataset as a K-armed contextual bandit with one horizon per episode.

    Parameters (keyword-only): ``dataset`` (one of :data:`DATASETS`), ``horizon`` T >= 1, ``context_norm``
    (``"l2"`` or ``"linf"``), ``context_bound`` > 0, ``normalize`` (``"scale"``: every row has norm exactly the
    bound; ``"clip"``: projected only when outside), ``full_information`` (``info["rewards"]`` = one-hot label).

    ``info`` of a step: ``"mean_rewards"`` (one-hot of the label), ``"optimal_arm"`` (the label), ``"regret"``
    (0 or 1) and, with full information, ``"rewards"``.
    """

    metadata = {"render_modes": []}

    def __init__(
        self,
        *,
        dataset: str = "digits",
        horizon: int = 2000,
        context_norm: str = "l2",
        context_bound: float = 1.0,
        normalize: str = "scale",
        full_information: bool = False,
    ):
        check_choice("dataset", dataset, DATASETS)
        self.horizon = check_int("horizon", horizon, low=1)
        check_choice("context_norm", context_norm, CONTEXT_NORMS)
        bound = check_real("context_bound", context_bound, low=0.0, low_inclusive=False)
        check_choice("normalize", normalize, NORMALIZE_MODES)
        if not isinstance(full_information, (bool, np.bool_)):
            raise TypeError(f"full_information must be a bool, got {full_information!r}")
        x, self.labels = _load(dataset)
        self.features = normalise(x, context_norm, bound, normalize)
        self.features.flags.writeable = False
        self.n_arms, self.dim = int(self.labels.max()) + 1, x.shape[1]
        self.full_information = bool(full_information)
        self.config = dict(dataset=dataset, horizon=self.horizon, context_norm=context_norm, context_bound=bound,
                           normalize=normalize, full_information=self.full_information)
        self.constants = BanditConstants(
            n_arms=self.n_arms, dim=self.dim, horizon=self.horizon, structure="disjoint", link="identity",
            context_norm=context_norm, context_bound=bound, theta_norm="l2", theta_bound=float("inf"),
            sparsity=self.dim, noise_std=0.0, reward_low=0.0, reward_high=1.0, mean_low=0.0, mean_high=1.0,
        )
        self.observation_space = gym.spaces.Box(-bound, bound, (self.n_arms, self.dim), np.float64)
        self.action_space = gym.spaces.Discrete(self.n_arms)
        self._onehot = np.eye(self.n_arms)
        self._onehot.flags.writeable = False
        self._rng: np.random.Generator | None = None
        self._t: int | None = None

    def expected_rewards(self, observation: np.ndarray) -> np.ndarray:
        """One-hot of the label of the row equal to ``observation[0]`` (oracle use only)."""
        x = np.asarray(observation, dtype=np.float64)
        if x.shape != (self.n_arms, self.dim):
            raise ValueError(f"observation must have shape {(self.n_arms, self.dim)}, got {x.shape}")
        rows = np.flatnonzero((self.features == x[0]).all(axis=1))
        if rows.size == 0:
            raise ValueError("observation is not a row of this dataset")
        return self._onehot[self.labels[rows[0]]]

    def _next_block(self) -> None:
        n = min(_BLOCK, self.horizon - self._t)
        self._rows = self._rng.integers(len(self.labels), size=n)
        block = self.features[self._rows]  # a fresh copy per block: observations never alias the dataset
        block.flags.writeable = False
        self._block = np.broadcast_to(block[:, None, :], (n, self.n_arms, self.dim))
        self._means = self._onehot[self.labels[self._rows]]  # fresh (n, K) rows: infos never alias each other
        self._means.flags.writeable = False
        self._i = 0

    def _observation(self) -> np.ndarray:
        return self._block[self._i]

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if options:
            raise ValueError(f"options must be None or empty, got {options!r}")
        if seed is not None or self._rng is None:
            self._rng = stream(seed, "contexts")
        self._t = 0
        self._next_block()
        return self._observation(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._t is None or self._t >= self.horizon:
            raise RuntimeError("step() called before reset() or after the episode ended: call reset()")
        try:
            if isinstance(action, (bool, np.bool_)):
                raise TypeError
            a = operator.index(action)
        except TypeError:
            raise ValueError(f"action must be an integer in [0, {self.n_arms}), got {action!r}") from None
        if not 0 <= a < self.n_arms:
            raise ValueError(f"action must be an integer in [0, {self.n_arms}), got {a}")
        label = int(self.labels[self._rows[self._i]])
        means = self._means[self._i]
        info = {"mean_rewards": means, "optimal_arm": label, "regret": 1.0 - float(means[a])}
        if self.full_information:
            info["rewards"] = means
        self._t += 1
        self._i += 1
        truncated = self._t == self.horizon
        if truncated:
            return np.zeros((self.n_arms, self.dim)), float(means[a]), False, True, info
        if self._i == len(self._rows):
            self._next_block()
        return self._observation(), float(means[a]), False, False, info
