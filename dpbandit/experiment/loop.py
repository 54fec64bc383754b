"""The evaluation loop: one episode per seed, played by blocks of rounds where it can, else by Gymnasium ``step``.

**Blocks** (:mod:`dpbandit.envs.blocks`). When the environment hands out blocks of rounds (``take_block``: the GLM
bandits and the own-data tables; behind only Gymnasium's passive wrappers, :func:`block_source`) and the agent
plays them (:func:`~dpbandit.agents.base.plays_blocks`: random, oracle, greedy, egreedy, LinUCB, DP-HDB, DP-UCB,
episodic ridge, episodic GLM), each block is one call to the agent (compiled kernels for the learners, runs of rounds
between releases for the episodic agents), and the rewards and regrets of its rounds
are read from the block's arrays at once. :func:`play_blocks` is the one block loop, for a single seed
(:func:`~dpbandit.experiment.runner.simulate`) and for a lockstep unit alike
(:func:`~dpbandit.experiment.batch.simulate_batch`): a unit plays its seeds one after the other, each with its own
environment, agent and streams, so every seed's frame is the same whichever way it runs.

**Steps.** Anything else (third-party environments or wrappers, agents without ``play_block``) runs the Gymnasium
loop, :func:`play_steps`, unchanged::

    obs, _ = env.reset(seed=s); agent.reset(s)
    loop T times: arm = agent.act(obs); obs', r, _, _, info = env.step(arm); agent.update(obs, arm, r, info)

Both record the same numbers: a block's arrays are what ``step`` serves, and an agent's ``play_block`` does what its
``act`` and ``update`` do (``tests/experiment/test_loop.py`` checks the bits). Memory: one block per seed, whatever T.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium
import numpy as np
import pandas as pd
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

from dpbandit.agents.base import Agent, plays_blocks
from dpbandit.experiment.execution import FIRST_STEP, round_ticker
from dpbandit.experiment.results import checkpoint_rounds

__all__ = ["block_source", "play_blocks", "play_steps", "RECORDED"]

#: The recorded columns after ``t``.
RECORDED: tuple[str, ...] = ("reward", "regret", "cumulative_reward", "cumulative_regret")
#: Wrappers that only check the call order or the spaces: the loop may read blocks from the environment behind them.
PASSIVE_WRAPPERS: tuple[type, ...] = (OrderEnforcing, PassiveEnvChecker)


def block_source(env: gymnasium.Env):
    """The environment behind ``env`` if it hands out blocks (``take_block``) and only :data:`PASSIVE_WRAPPERS`
    stand in between (a wrapper that changes observations or rewards is honoured by the ``step`` loop); else None."""
    while isinstance(env, gymnasium.Wrapper):
        if type(env) not in PASSIVE_WRAPPERS:
            return None
        env = env.env
    return env if callable(getattr(env, "take_block", None)) else None


def blocks_apply(envs: Sequence[gymnasium.Env], agents: Sequence[Agent]) -> bool:
    """Whether :func:`play_blocks` can play these environments and agents."""
    return all(block_source(e) is not None for e in envs) and all(plays_blocks(a) for a in agents)


def _frame(rounds: np.ndarray, rec: np.ndarray) -> pd.DataFrame:
    frame = pd.DataFrame(rec, columns=list(RECORDED))
    frame.insert(0, "t", rounds)
    return frame


def play_blocks(envs: Sequence[gymnasium.Env], agents: Sequence[Agent], seeds: Sequence[int],
                checkpoints: int | None) -> list[pd.DataFrame]:
    """One frame per seed (``t`` and :data:`RECORDED` at :func:`~dpbandit.experiment.results.checkpoint_rounds`):
    seed s resets ``envs[s]`` and ``agents[s]`` with ``seeds[s]`` and plays its episode block by block
    (:func:`blocks_apply` must hold)."""
    horizon = int(block_source(envs[0]).constants.horizon)
    rounds = checkpoint_rounds(horizon, checkpoints)
    tick = round_ticker()  # the progress bar's rounds, counted over the seeds (None: nobody watches)
    state = {"done": 0, "next": FIRST_STEP if tick is not None else None}
    frames = []
    for env, agent, seed in zip(envs, agents, seeds):
        env.reset(seed=seed)
        agent.reset(seed)
        frames.append(_frame(rounds, _episode(block_source(env), agent, horizon, rounds, tick, state)))
    return frames


def _episode(source, agent: Agent, horizon: int, rounds: np.ndarray, tick, state: dict) -> np.ndarray:
    """The recorded rows (len(rounds), 4) of one seed's episode."""
    K = source.constants.n_arms
    rec = np.empty((rounds.size, 4))
    totals = np.zeros(2)  # cumulative reward and regret so far
    t = 0
    while t < horizon:
        block = source.take_block()
        n = block.n
        arms = agent.play_block(block)
        if not (isinstance(arms, np.ndarray) and arms.shape == (n,) and arms.dtype == np.intp
                and arms.view(np.uintp).max() < K):  # (a negative arm seen as unsigned is beyond any K)
            raise ValueError(f"{type(agent).__name__}.play_block must return {n} arms (intp) in [0, {K - 1}], "
                             f"got {arms!r}")
        rows = np.arange(n)
        played = np.empty((n + 1, 2))
        played[0] = totals
        played[1:, 0] = block.rewards[rows, arms]
        played[1:, 1] = block.best - block.means[rows, arms]  # step's regret: best - mean of the arm, in float64
        cumulative = np.add.accumulate(played, axis=0)  # in round order from the totals: step's running sums
        lo, hi = np.searchsorted(rounds, (t + 1, t + n + 1))
        at = rounds[lo:hi] - t  # 1-based positions in the block
        rec[lo:hi, :2] = played[at]
        rec[lo:hi, 2:] = cumulative[at]
        totals = cumulative[-1]
        t += n
        if tick is not None:
            state["done"] += n
            if state["done"] >= state["next"]:
                state["next"] = tick(state["done"])
    return rec


def play_steps(env: gymnasium.Env, agent: Agent, seed: int, checkpoints: int | None) -> pd.DataFrame:
    """One seed's episode through ``env.step`` and the agent's ``act`` / ``update`` (any environment and agent)."""
    horizon = env.unwrapped.constants.horizon
    rounds = checkpoint_rounds(horizon, checkpoints)
    n = rounds.size
    rec = np.empty((n, 4))
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    act, update, step = agent.act, agent.update, env.step
    cum_regret = cum_reward = 0.0
    tick = round_ticker()  # the progress bar's rounds (None: nobody watches)
    k, next_t = 0, int(rounds[0])
    next_tick = FIRST_STEP if tick is not None else horizon + 1
    next_event = min(next_t, next_tick)  # one comparison per round for both
    for t in range(1, horizon + 1):
        arm = act(obs)
        next_obs, reward, _, _, info = step(arm)
        update(obs, arm, reward, info)
        regret = info["regret"]
        cum_regret += regret
        cum_reward += reward
        if t == next_event:
            if t == next_t:
                rec[k] = (reward, regret, cum_reward, cum_regret)
                k += 1
                next_t = int(rounds[k]) if k < n else horizon + 1
            if t == next_tick:
                next_tick = tick(t)
            next_event = min(next_t, next_tick)
        obs = next_obs
    return _frame(rounds, rec)
