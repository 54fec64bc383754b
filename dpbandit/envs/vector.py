"""GLMBanditVectorEnv: S seeds of one GLM bandit configuration stepped together (a Gymnasium vector environment).

``gymnasium.make_vec("dpbandit/SparseLinear-v0", num_envs=16, vectorization_mode="vector_entry_point", horizon=...)``
(every :class:`~dpbandit.envs.glm.GLMBanditEnv` preset registers this class as its vector entry point) or
``GLMBanditVectorEnv(num_envs, **kwargs)``. Sub-environment s is a :class:`GLMBanditEnv` of its own, reset with its
own seed, so it draws its instance, contexts and reward noise from its own streams *exactly as the single-seed
environment does*: each pre-generates its rounds in the same blocks, and the vector environment only reads them
together. Hence observation s, reward s and ``infos[...][s]`` equal, bit for bit, what ``GLMBanditEnv`` with that
seed returns (``tests/envs/test_vector.py``); :func:`~dpbandit.experiment.batch.simulate_batch` runs on it.

Arrays: observations ``(S, K, d)`` (read-only views; in the disjoint structure one context per seed shown on every
arm with stride 0, the single-seed layout), rewards ``(S,)``, ``infos``: ``"regret"`` ``(S,)``, ``"optimal_arm"``
``(S,)``, ``"mean_rewards"`` ``(S, K)`` and, with full information, ``"rewards"`` ``(S, K)``. Every sub-environment has
the same horizon T, so all truncate together at round T; there is no autoreset (``AutoresetMode.DISABLED``): a step
after round T raises, as for the single environment. ``reset(seed=s)`` seeds the sub-environments ``s, s+1, ...``
(Gymnasium's convention) and ``reset(seed=[s_0, ..., s_{S-1}])`` one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from gymnasium.spaces import MultiDiscrete

from dpbandit.envs.glm import GLMBanditEnv
from dpbandit.validation import check_int

__all__ = ["GLMBanditVectorEnv"]


class GLMBanditVectorEnv(VectorEnv):
    """``num_envs`` copies of ``GLMBanditEnv(**kwargs)`` stepped together (see the module docstring)."""

    metadata = {"autoreset_mode": AutoresetMode.DISABLED}

    def __init__(self, num_envs: int, **kwargs: Any):
        check_int("num_envs", num_envs, low=1)
        self._setup([GLMBanditEnv(**kwargs) for _ in range(num_envs)])

    @classmethod
    def from_envs(cls, envs: Sequence[GLMBanditEnv]) -> "GLMBanditVectorEnv":
        """Step existing (unwrapped) environments of one configuration together."""
        if not envs or any(type(e) is not GLMBanditEnv for e in envs):
            raise TypeError("envs must be a non-empty sequence of GLMBanditEnv (unwrapped)")
        if any(e.constants != envs[0].constants for e in envs):
            raise ValueError("envs must share one configuration (the same BanditConstants)")
        vec = cls.__new__(cls)
        vec._setup(list(envs))
        return vec

    def _setup(self, envs: list[GLMBanditEnv]) -> None:
        self.envs = envs
        self.num_envs = len(envs)
        e0 = envs[0]
        self.single_observation_space, self.single_action_space = e0.observation_space, e0.action_space
        self.observation_space = batch_space(e0.observation_space, self.num_envs)
        self.action_space = MultiDiscrete(np.full(self.num_envs, e0.n_arms))
        self.n_arms, self.dim, self.horizon = e0.n_arms, e0.dim, e0.horizon
        self.disjoint = e0.constants.structure == "disjoint"
        self.full_information = bool(e0.config["full_information"])
        self.rows = np.arange(self.num_envs)
        self.t = None
        self._flags = [np.zeros(self.num_envs, dtype=bool), np.ones(self.num_envs, dtype=bool)]  # read-only
        for flags in self._flags:
            flags.flags.writeable = False

    @property
    def constants(self):
        """The sub-environments' :class:`~dpbandit.envs.constants.BanditConstants`."""
        return self.envs[0].constants

    def reset(self, *, seed: int | Sequence[int] | None = None, options: dict | None = None):
        """Reset every sub-environment; returns the first ``(S, K, d)`` observations and an empty info dict."""
        if seed is None or isinstance(seed, (int, np.integer)):
            seeds = [None] * self.num_envs if seed is None else [int(seed) + s for s in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"seed must be an int, None or a list of {self.num_envs} seeds, got {len(seeds)}")
        for env, s in zip(self.envs, seeds):
            env.reset(seed=s, options=options)
        self.t = 0
        self._load()
        return self.X[:, 0], {}

    def _load(self) -> None:
        es, S = self.envs, self.num_envs
        if self.disjoint:  # one context per round, shown on every arm: the single-seed stride-0 layout
            X = np.stack([e._obs[:, 0] for e in es])
            self.X = np.broadcast_to(X[:, :, None, :], (S, X.shape[1], self.n_arms, self.dim))
        else:
            self.X = np.stack([e._obs for e in es])  # (S, n, K, d)
        self.means = np.stack([e._mean_rewards for e in es])
        self.rewards = np.stack([e._rewards for e in es])
        self.best = np.array([e._best for e in es])
        self.optimal = np.array([e._optimal for e in es])
        self.i = 0

    def step(self, actions: Any):
        """Serve every sub-environment's user: ``actions`` ``(S,)`` integers in ``[0, K)``."""
        if self.t is None or self.t >= self.horizon:
            state = "before reset()" if self.t is None else f"after the episode ended at round T={self.horizon}"
            raise RuntimeError(f"step() called {state}: call reset() to start an episode")
        a = np.asarray(actions)
        if a.dtype.kind in "iu" and a.dtype != np.intp:
            a = a.astype(np.intp)  # an unsigned value beyond the intp range turns negative and is refused
        # one reduction for both ends: a negative action seen as unsigned is beyond any number of arms
        if a.shape != (self.num_envs,) or a.dtype != np.intp or a.view(np.uintp).max() >= self.n_arms:
            raise ValueError(f"actions must be {self.num_envs} integers in [0, {self.n_arms - 1}], got {actions!r}")
        i, rows = self.i, self.rows
        means = self.means[:, i]
        rewards = self.rewards[rows, i, a]
        infos = {"regret": self.best[:, i] - means[rows, a], "optimal_arm": self.optimal[:, i], "mean_rewards": means}
        if self.full_information:
            infos["rewards"] = self.rewards[:, i]
        self.t += 1
        self.i += 1
        truncated = self.t == self.horizon
        if truncated:
            obs = np.zeros((self.num_envs, self.n_arms, self.dim))
            for e in self.envs:
                e._t = self.t
        else:
            if self.i == self.best.shape[1]:
                for e in self.envs:  # each draws its next block from its own streams, as its own step would
                    e._t, e._i = self.t, self.i
                    e._next_block()
                self._load()
            obs = self.X[:, self.i]
        return obs, rewards, self._flags[0], self._flags[truncated], infos

    def close_extras(self, **kwargs: Any) -> None:
        for e in self.envs:
            e.close()
