"""Seed-batched simulation: S seeds of one (environment, agent) pair as one unit (issue 15, item 2; issue 25).

:func:`simulate_batch` returns, for every seed, the frame :func:`~dpbandit.experiment.runner.simulate` returns for
it, *bit for bit*. Every seed keeps its own environment and agent instance (its own streams), so nothing about a
seed's randomness changes. Where the environment hands out blocks and the agent plays them, the unit is the block
loop of ``simulate`` itself (:func:`~dpbandit.experiment.loop.play_blocks`, seed after seed). Otherwise the seeds
play round by round in lockstep: the agent's work through its batched form (:mod:`dpbandit.agents.batched`: the
contract and the registered forms), the GLM environments' steps through
:class:`~dpbandit.envs.vector.GLMBanditVectorEnv` (other environments step seed by seed). An agent whose form
declines (e.g. models too large to stay in cache) runs seed by seed through ``simulate``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

import dpbandit.envs  # noqa: F401
from dpbandit.agents import make_agent
from dpbandit.agents.base import plays_blocks
from dpbandit.agents.batched import BATCHED_FORMS, batched_form, has_batched_form
from dpbandit.envs.glm import GLMBanditEnv
from dpbandit.envs.vector import GLMBanditVectorEnv
from dpbandit.experiment.config import AgentSpec, EnvSpec, make_env
from dpbandit.experiment.execution import FIRST_STEP, round_ticker
from dpbandit.experiment.loop import blocks_apply, play_blocks
from dpbandit.experiment.results import checkpoint_rounds
from dpbandit.experiment.runner import one_blas_thread, simulate
from dpbandit.validation import check_int

__all__ = ["lockstep_capable", "simulate_batch", "simulate_batch_agents"]


def simulate_batch(env_spec: EnvSpec, agent_spec: AgentSpec, seeds: Sequence[int],
                   checkpoints: int | None = None) -> list[pd.DataFrame]:
    """One frame per seed, each equal to ``simulate(gymnasium.make(env_spec.id, **env_spec.kwargs),
    make_agent(agent_spec.type, env, **agent_spec.params), seed, checkpoints)``.

    Raises ``ValueError`` for an agent that neither plays blocks (:func:`~dpbandit.agents.base.plays_blocks`) nor has
    a batched form (:func:`~dpbandit.agents.batched.has_batched_form`), or an empty ``seeds``.
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
        if not lockstep_capable(type(agents[0])):
            names = ", ".join(sorted(cls.name for cls in BATCHED_FORMS))
            raise ValueError(f"agent {agent_spec.type!r} has no batched form (batched agents: {names}, and the agents "
                             "that play blocks); use simulate")
        with one_blas_thread():  # as simulate
            if blocks_apply(envs, agents):
                return play_blocks(envs, agents, seeds, checkpoints), agents
            for agent, seed in zip(agents, seeds):
                agent.reset(seed)
            policy = batched_form(agents)
            if policy is None:
                frames = [simulate(env, agent, seed, checkpoints) for env, agent, seed in zip(envs, agents, seeds)]
            else:
                if all(type(e.unwrapped) is GLMBanditEnv for e in envs):
                    world = _Vector(GLMBanditVectorEnv.from_envs([e.unwrapped for e in envs]), seeds)
                else:
                    world = _SeedBySeed(envs, seeds)
                frames = _play(world, policy, envs[0].unwrapped.constants.horizon, checkpoints)
        return frames, agents
    finally:
        for env in envs:
            env.close()


def lockstep_capable(cls: type) -> bool:
    """Whether seeds of agent class ``cls`` run as units of several seeds: it plays blocks or has a batched form."""
    return plays_blocks(cls) or has_batched_form(cls)


def _play(world, policy, horizon, checkpoints) -> list[pd.DataFrame]:
    S = len(world.seeds)
    rounds = checkpoint_rounds(horizon, checkpoints)
    n = rounds.size
    rec = np.empty((S, n, 4))
    cum_regret, cum_reward = np.zeros(S), np.zeros(S)
    k, next_t = 0, int(rounds[0])
    tick = round_ticker(S)  # the progress bar's rounds, S per round (None: nobody watches)
    next_tick = FIRST_STEP if tick is not None else horizon + 1
    O = world.obs
    for t in range(1, horizon + 1):
        arms = policy.act(O)
        O_next, rewards, regrets = world.step(arms)
        policy.update(O, arms, rewards)
        cum_regret += regrets  # float64 additions in the single-seed order: bitwise-equal sums
        cum_reward += rewards
        if t == next_t:
            rec[:, k] = np.column_stack((rewards, regrets, cum_reward, cum_regret))
            k += 1
            next_t = int(rounds[k]) if k < n else -1
        if t == next_tick:
            next_tick = tick(t)
        O = O_next
    frames = []
    for s in range(S):
        frame = pd.DataFrame(rec[s], columns=["reward", "regret", "cumulative_reward", "cumulative_regret"])
        frame.insert(0, "t", rounds)
        frames.append(frame)
    return frames


class _Vector:
    """GLM bandits: :class:`~dpbandit.envs.vector.GLMBanditVectorEnv` (every seed's step at once)."""

    def __init__(self, vec, seeds):
        self.vec, self.seeds = vec, seeds
        self.obs, _ = vec.reset(seed=list(seeds))

    def step(self, arms) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        obs, rewards, _, _, infos = self.vec.step(arms)
        return obs, rewards, infos["regret"]


class _SeedBySeed:
    """Any environments: every seed's own ``step`` (the wrappers only check the call order, which the loop keeps)."""

    def __init__(self, envs, seeds):
        self.seeds = seeds
        self._obs = [env.reset(seed=seed)[0] for env, seed in zip(envs, seeds)]
        self.steps = [e.unwrapped.step for e in envs]
        self.disjoint = envs[0].unwrapped.constants.structure == "disjoint"
        self.obs = self._stacked()

    def _stacked(self) -> np.ndarray:
        # the single-seed operand layouts: disjoint rows are one context broadcast over the K arms (stride 0)
        if self.disjoint:
            o = self._obs
            return np.broadcast_to(np.stack([x[0] for x in o])[:, None, :], (len(o), *o[0].shape))
        return np.stack(self._obs)

    def step(self, arms) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rewards, regrets = np.empty(len(arms)), np.empty(len(arms))
        for s, arm in enumerate(arms):
            self._obs[s], rewards[s], _, _, info = self.steps[s](arm)
            regrets[s] = info["regret"]
        return self._stacked(), rewards, regrets
