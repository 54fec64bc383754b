"""Seed-batched simulation: S seeds of one (environment, agent) pair in lockstep (issue 15, item 2).

:func:`simulate_batch` plays the seeds' episodes round by round together and returns, for every seed, the frame
:func:`~dpbandit.experiment.runner.simulate` returns for it, *bit for bit*. Every seed keeps its own environment and
agent instance (its own streams), so nothing about a seed's randomness changes. Batched: the agent's work, through
its batched form (:mod:`dpbandit.agents.batched`: the contract and the registered forms), and the GLM environments'
steps, read together from the blocks of rounds each one pre-generated (other environments step seed by seed). An
agent whose form declines (e.g. models too large to stay in cache) runs seed by seed through ``simulate``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

import dpbandit.envs  # noqa: F401
from dpbandit.agents import make_agent
from dpbandit.agents.batched import BATCHED_FORMS, batched_form, has_batched_form
from dpbandit.envs.glm import GLMBanditEnv
from dpbandit.experiment.config import AgentSpec, EnvSpec, make_env
from dpbandit.experiment.results import checkpoint_rounds
from dpbandit.experiment.runner import simulate
from dpbandit.validation import check_int

__all__ = ["simulate_batch"]


def simulate_batch(env_spec: EnvSpec, agent_spec: AgentSpec, seeds: Sequence[int],
                   checkpoints: int | None = None) -> list[pd.DataFrame]:
    """One frame per seed, each equal to ``simulate(gymnasium.make(env_spec.id, **env_spec.kwargs),
    make_agent(agent_spec.type, env, **agent_spec.params), seed, checkpoints)``.

    Raises ``ValueError`` for an agent without a batched form (:func:`~dpbandit.agents.batched.has_batched_form`) or
    an empty ``seeds``.
    """
    frames, _ = simulate_batch_agents(env_spec, agent_spec, seeds, checkpoints)
    return frames


def simulate_batch_agents(env_spec: EnvSpec, agent_spec: AgentSpec, seeds: Sequence[int],
                          checkpoints: int | None = None) -> tuple[list[pd.DataFrame], list]:
    """:func:`simulate_batch` and the seeds' agents after their runs (for their privacy reports)."""
    if not isinstance(env_spec, EnvSpec):
        raise TypeError(f"env_spec must be an EnvSpec, got {type(env_spec).__name__}")
    if not isinstance(agent_spec, AgentSpec):
        raise TypeError(f"agent_spec must be an AgentSpec, got {type(agent_spec).__name__}")
    seeds = [check_int("seed", s, low=0) for s in seeds]
    if not seeds:
        raise ValueError("seeds must contain at least one seed")
    envs = [make_env(env_spec.id, **env_spec.kwargs) for _ in seeds]
    try:
        agents = [make_agent(agent_spec.type, env, **agent_spec.params) for env in envs]
        if not has_batched_form(type(agents[0])):
            names = ", ".join(sorted(cls.name for cls in BATCHED_FORMS))
            raise ValueError(f"agent {agent_spec.type!r} has no batched form (batched agents: {names}); use simulate")
        with threadpool_limits(limits=1, user_api="blas"):  # as simulate
            obs = [env.reset(seed=seed)[0] for env, seed in zip(envs, seeds)]
            for agent, seed in zip(agents, seeds):
                agent.reset(seed)
            policy = batched_form(agents)
            if policy is None:
                frames = [simulate(env, agent, seed, checkpoints) for env, agent, seed in zip(envs, agents, seeds)]
            else:
                frames = _play(envs, obs, policy, checkpoints)
        return frames, agents
    finally:
        for env in envs:
            env.close()


def _play(envs, obs, policy, checkpoints) -> list[pd.DataFrame]:
    S = len(envs)
    horizon = envs[0].unwrapped.constants.horizon
    rounds = checkpoint_rounds(horizon, checkpoints)
    n = rounds.size
    world = _Lockstep(envs) if all(type(e.unwrapped) is GLMBanditEnv for e in envs) else _SeedBySeed(envs, obs)
    rec = np.empty((S, n, 4))
    cum_regret, cum_reward = np.zeros(S), np.zeros(S)
    k, next_t = 0, int(rounds[0])
    for t in range(1, horizon + 1):
        O = world.observations()
        arms = policy.act(O)
        rewards, regrets = world.step(arms)
        policy.update(O, arms, rewards)
        cum_regret += regrets  # float64 additions in the single-seed order: bitwise-equal sums
        cum_reward += rewards
        if t == next_t:
            rec[:, k] = np.column_stack((rewards, regrets, cum_reward, cum_regret))
            k += 1
            next_t = int(rounds[k]) if k < n else -1
    frames = []
    for s in range(S):
        frame = pd.DataFrame(rec[s], columns=["reward", "regret", "cumulative_reward", "cumulative_regret"])
        frame.insert(0, "t", rounds)
        frames.append(frame)
    return frames


class _SeedBySeed:
    """Any environments: every seed's own ``step`` (the wrappers only check the call order, which the loop keeps)."""

    def __init__(self, envs, obs):
        self.steps, self.obs = [e.unwrapped.step for e in envs], obs
        self.disjoint = envs[0].unwrapped.constants.structure == "disjoint"

    def observations(self) -> np.ndarray:
        # the single-seed operand layouts: disjoint rows are one context broadcast over the K arms (stride 0)
        if self.disjoint:
            return np.broadcast_to(np.stack([o[0] for o in self.obs])[:, None, :], (len(self.obs), *self.obs[0].shape))
        return np.stack(self.obs)

    def step(self, arms) -> tuple[np.ndarray, np.ndarray]:
        rewards, regrets = np.empty(len(arms)), np.empty(len(arms))
        for s, arm in enumerate(arms):
            self.obs[s], rewards[s], _, _, info = self.steps[s](arm)
            regrets[s] = info["regret"]
        return rewards, regrets


class _Lockstep:
    """:class:`~dpbandit.envs.glm.GLMBanditEnv` s read together: ``step`` of every seed at once, from the blocks of
    rounds each environment pre-generated from its own streams (same block sizes, so their blocks end together).
    The same values as ``GLMBanditEnv.step``: reward ``rewards[i, a]``, regret ``best[i] - means[i, a]``. The round
    counters are kept here and handed to the environments when they draw their next block."""

    def __init__(self, envs):
        self.envs = [e.unwrapped for e in envs]
        self.disjoint = self.envs[0].constants.structure == "disjoint"
        self.rows = np.arange(len(envs))
        self.t = 0
        self._load()

    def _load(self) -> None:
        es, S = self.envs, len(self.envs)
        if self.disjoint:  # one context per round, shown on every arm: the single-seed stride-0 layout
            X = np.stack([e._obs[:, 0] for e in es])
            self.X = np.broadcast_to(X[:, :, None, :], (S, X.shape[1], es[0].n_arms, X.shape[2]))
        else:
            self.X = np.stack([e._obs for e in es])  # (S, n, K, d)
        self.means = np.stack([e._mean_rewards for e in es])
        self.rewards = np.stack([e._rewards for e in es])
        self.best = np.array([e._best for e in es])
        self.i = 0

    def observations(self) -> np.ndarray:
        return self.X[:, self.i]

    def step(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        i, rows = self.i, self.rows
        rewards = self.rewards[rows, i, arms]
        regrets = self.best[:, i] - self.means[rows, i, arms]
        self.t += 1
        self.i += 1
        if self.i == self.best.shape[1] and self.t < self.envs[0].horizon:
            for e in self.envs:
                e._t, e._i = self.t, self.i
                e._next_block()
            self._load()
        return rewards, regrets
