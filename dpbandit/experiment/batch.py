"""Seed-batched simulation: S seeds of one (environment, agent) pair in lockstep (issue 15, item 2; partial).

:func:`simulate_batch` plays the seeds' episodes round by round together and returns, for every seed, the frame
:func:`~dpbandit.experiment.runner.simulate` returns for it, *bit for bit*. Every seed keeps its own environment and
agent instance (its own streams), so nothing about a seed's randomness changes. Batched: the agents' scoring and
ridge updates (their buffers stacked into (S, M, d+1, d) arrays that each agent's ridge state views), with the same
per-matrix calls and operand layouts as the single-seed path, hence the same floating-point results; and the GLM
environments' steps, read together from the blocks of rounds each one pre-generated (other environments step seed
by seed). Large models (ridge buffers over ``_SEQUENTIAL_ABOVE`` floats, about d > 55 at K = 10) run seed by seed
through ``simulate``: their round is O(K d^2) array work per seed, and lockstep only streamed every seed's buffers
through the cache each round (measured slower at d = 200, ``benchmarks/batch_benchmark.py``).

Agents with a batched form: :class:`~dpbandit.agents.linucb.LinUCB` and :class:`~dpbandit.agents.baselines.Greedy`
(exactly these classes; subclasses such as epsilon-greedy are refused). Not yet batched: DP-HDB, DP-UCB, the
episodic agents, and the runner's automatic use (``batch = "auto"``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

import dpbandit.envs  # noqa: F401
from dpbandit.agents import make_agent
from dpbandit.agents.baselines import Greedy, argmax_random_tie
from dpbandit.agents.linucb import LinUCB
from dpbandit.agents.ridge import subtract_outer
from dpbandit.envs.glm import GLMBanditEnv
from dpbandit.experiment.config import AgentSpec, EnvSpec, make_env
from dpbandit.experiment.results import checkpoint_rounds
from dpbandit.experiment.runner import simulate
from dpbandit.validation import check_int

__all__ = ["simulate_batch", "BATCHED_AGENTS"]

#: Largest (d+1) d for which the played models' buffers are gathered into one batched product in the update.
_GATHER_LIMIT = 64 * 64

#: Most floats of stacked ridge buffers scored by one batched call (1 MB: stays in cache).
_CHUNK_ELEMENTS = 2**17
#: Agents whose ridge buffers hold more floats than this (d >~ 55 at K = 10) run seed by seed through simulate.
_SEQUENTIAL_ABOVE = 2**15

#: Agent classes with a batched form.
BATCHED_AGENTS: tuple[type, ...] = (LinUCB, Greedy)


def simulate_batch(env_spec: EnvSpec, agent_spec: AgentSpec, seeds: Sequence[int],
                   checkpoints: int | None = None) -> list[pd.DataFrame]:
    """One frame per seed, each equal to ``simulate(gymnasium.make(env_spec.id, **env_spec.kwargs),
    make_agent(agent_spec.type, env, **agent_spec.params), seed, checkpoints)``.

    Raises ``ValueError`` for an agent without a batched form (:data:`BATCHED_AGENTS`) or an empty ``seeds``.
    """
    if not isinstance(env_spec, EnvSpec):
        raise TypeError(f"env_spec must be an EnvSpec, got {type(env_spec).__name__}")
    if not isinstance(agent_spec, AgentSpec):
        raise TypeError(f"agent_spec must be an AgentSpec, got {type(agent_spec).__name__}")
    seeds = [check_int("seed", s, low=0) for s in seeds]
    if not seeds:
        raise ValueError("seeds must contain at least one seed")
    envs = [make_env(env_spec.id, **env_spec.kwargs) for _ in seeds]
    agents = [make_agent(agent_spec.type, env, **agent_spec.params) for env in envs]
    if type(agents[0]) not in BATCHED_AGENTS:
        names = ", ".join(cls.name for cls in BATCHED_AGENTS)
        raise ValueError(f"agent {agent_spec.type!r} has no batched form (batched agents: {names}); use simulate")
    try:
        if agents[0].ridge.W.size > _SEQUENTIAL_ABOVE:
            # large models: a round's work is O(K d^2) per seed and the per-call overhead batching saves is small;
            # measured, lockstep was slower at d = 200 (each round streams all seeds' buffers through the cache)
            return [simulate(env, agent, seed, checkpoints) for env, agent, seed in zip(envs, agents, seeds)]
        with threadpool_limits(limits=1, user_api="blas"):  # as simulate
            return _play(envs, agents, seeds, checkpoints)
    finally:
        for env in envs:
            env.close()


def _play(envs, agents, seeds, checkpoints) -> list[pd.DataFrame]:
    S = len(seeds)
    constants = envs[0].unwrapped.constants
    horizon, d, disjoint = constants.horizon, constants.dim, constants.structure == "disjoint"
    rounds = checkpoint_rounds(horizon, checkpoints)
    n = rounds.size
    obs = [env.reset(seed=seed)[0] for env, seed in zip(envs, seeds)]
    for agent, seed in zip(agents, seeds):
        agent.reset(seed)
    # (S, M, d+1, d) buffers, (S, M, d) response sums, (S, M) counts; each agent's ridge state now views its slice
    W, B, C = (np.stack([getattr(a.ridge, name) for a in agents]) for name in ("W", "_b", "counts"))
    for s, agent in enumerate(agents):
        agent.ridge.W, agent.ridge._b, agent.ridge.counts = W[s], B[s], C[s]
    score = _linucb_scores if isinstance(agents[0], LinUCB) else _greedy_scores
    alpha = getattr(agents[0], "alpha", 0.0)
    rngs = [a.rng for a in agents]
    world = _Lockstep(envs) if all(type(e.unwrapped) is GLMBanditEnv for e in envs) else _SeedBySeed(envs, obs)
    seed_rows = np.arange(S)
    rec = np.empty((S, n, 4))
    cum_regret, cum_reward = np.zeros(S), np.zeros(S)
    k, next_t = 0, int(rounds[0])
    for t in range(1, horizon + 1):
        O = world.observations()
        arms = _argmax_random_tie(_chunked(score, W, O, d, disjoint, alpha), rngs)
        X = O[seed_rows, arms]  # the played feature vectors (S, d), read before the observations move on
        rewards, regrets = world.step(arms)
        cum_regret += regrets  # float64 additions in the single-seed order: bitwise-equal sums
        cum_reward += rewards
        if t == next_t:
            rec[:, k] = np.column_stack((rewards, regrets, cum_reward, cum_regret))
            k += 1
            next_t = int(rounds[k]) if k < n else -1
        _ridge_update(W, B, C, X, rewards, np.asarray(arms) if disjoint else np.zeros(S, dtype=np.intp), d)
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
    The same values as ``GLMBanditEnv.step``: reward ``rewards[i, a]``, regret ``best[i] - means[i, a]``."""

    def __init__(self, envs):
        self.envs = [e.unwrapped for e in envs]
        self.disjoint = self.envs[0].constants.structure == "disjoint"
        self.rows = np.arange(len(envs))
        self._load()

    def _load(self) -> None:
        es = self.envs
        self.X = np.stack([e._obs[:, 0] if self.disjoint else e._obs for e in es])  # (S, n, d) or (S, n, K, d)
        self.means = np.stack([e._mean_rewards for e in es])
        self.rewards = np.stack([e._rewards for e in es])
        self.best = np.array([e._best for e in es])

    def observations(self) -> np.ndarray:
        i = self.envs[0]._i
        if self.disjoint:
            return np.broadcast_to(self.X[:, i, None, :], (len(self.envs), self.envs[0].n_arms, self.envs[0].dim))
        return self.X[:, i]

    def step(self, arms) -> tuple[np.ndarray, np.ndarray]:
        e0, i, a = self.envs[0], self.envs[0]._i, np.asarray(arms)
        rewards = self.rewards[self.rows, i, a]
        regrets = self.best[:, i] - self.means[self.rows, i, a]
        for e in self.envs:
            e._t += 1
            e._i += 1
        if e0._t < e0.horizon and e0._i == len(e0._best):
            for e in self.envs:
                e._next_block()
            self._load()
        return rewards, regrets


def _ridge_update(W, B, C, X, y, models, d) -> None:
    """:meth:`RidgeState.update` of every seed (model ``models[s]`` of seed s gets ``(X[s], y[s])``), with the same
    per-matrix calls batched; the rank-one step is the same BLAS ``dger`` per seed (a fused multiply-add kernel has
    no bitwise-equal numpy form)."""
    rows = np.arange(len(X))
    if W.shape[2] * W.shape[3] <= _GATHER_LIMIT:  # small models: gather the played ones, one batched product
        r = np.matmul(W[rows, models], X[:, :, None])[..., 0]
    else:  # large ones: the same product per seed, in place (a gather would copy S (d+1) d floats per round)
        r = np.empty((len(X), d + 1))
        for s, m in enumerate(models):
            np.matmul(W[s, m], X[s][:, None], out=r[s][:, None])
    u = r[:, :d]
    scale = 1.0 / (1.0 + np.matmul(X[:, None, :], u[:, :, None])[:, 0, 0])
    c = r * scale[:, None]
    c[:, d] = (r[:, d] - y) * scale
    for s, m in enumerate(models):
        subtract_outer(W[s, m], c[s], u[s])
    B[rows, models] += y[:, None] * X
    C[rows, models] += 1


def _chunked(score, W, O, d, disjoint, alpha) -> np.ndarray:
    """``score`` over chunks of seeds whose buffers together hold at most ``_CHUNK_ELEMENTS`` floats: one batched call
    per chunk keeps them in cache (at d = 200 a 16-seed stack is 51 MB, and streaming it each round made the batch
    slower than seed-by-seed runs). Chunking changes no per-matrix operation, hence no result."""
    chunk = max(1, _CHUNK_ELEMENTS // W[0].size)
    if chunk >= len(W):
        return score(W, O, d, disjoint, alpha)
    return np.concatenate([score(W[lo: lo + chunk], O[lo: lo + chunk], d, disjoint, alpha)
                           for lo in range(0, len(W), chunk)])


def _linucb_scores(W: np.ndarray, O: np.ndarray, d: int, disjoint: bool, alpha: float) -> np.ndarray:
    """:meth:`LinUCB.scores` of every seed: W (S, M, d+1, d), O (S, K, d) -> (S, K), the same operations batched."""
    R = np.matmul(W, O[..., None])[..., 0] if disjoint else O @ W[:, 0].transpose(0, 2, 1)
    score = np.matmul(R[..., None, :d], O[..., None])[..., 0, 0]
    np.sqrt(score, out=score)
    score *= alpha
    score += R[..., d]
    return score


def _greedy_scores(W: np.ndarray, O: np.ndarray, d: int, disjoint: bool, alpha: float) -> np.ndarray:
    """:meth:`RidgeState.predict` of every seed: (S, K)."""
    if disjoint:
        return np.einsum("skd,skd->sk", O, W[:, :, d, :])
    return np.stack([o @ w[0, d] for o, w in zip(O, W)])  # per seed: the single path's matrix-vector product


def _argmax_random_tie(scores: np.ndarray, rngs) -> list[int]:
    """:func:`argmax_random_tie` row by row; the generator of a row is consumed only when that row has a tie."""
    best = scores.argmax(axis=1)
    n_best = np.count_nonzero(scores == scores[np.arange(len(best)), best][:, None], axis=1)
    arms = best.tolist()
    for s in np.flatnonzero(n_best != 1):
        arms[s] = argmax_random_tie(scores[s], rngs[s])
    return arms
