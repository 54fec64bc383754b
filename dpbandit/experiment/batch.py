"""Seed-batched simulation: S seeds of one (environment, agent) pair in lockstep (issue 15, item 2; partial).

:func:`simulate_batch` plays the seeds' episodes round by round together and returns, for every seed, the frame
:func:`~dpbandit.experiment.runner.simulate` returns for it, *bit for bit*. Every seed keeps its own environment and
agent instance (its own streams, its own ``step`` and ``update``), so nothing about a seed's randomness changes; what
is batched is the agent's per-round scoring: the S agents' ridge buffers are stacked into one (S, M, d+1, d) array
(each agent's ``ridge.W`` becomes a view of its slice), and one batched product scores every arm of every seed, with
the same per-matrix products (same operand layouts, hence the same floating-point results) as the single-seed path.

Agents with a batched form: :class:`~dpbandit.agents.linucb.LinUCB` and :class:`~dpbandit.agents.baselines.Greedy`
(exactly these classes; subclasses such as epsilon-greedy are refused). Environments: any whose observations are
``(K, d)`` arrays (the GLM and dataset environments). Not yet batched: DP-HDB, DP-UCB, the episodic agents, the
environment step, the runner's automatic use (``batch = "auto"``).
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium
import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

import dpbandit.envs  # noqa: F401
from dpbandit.agents import make_agent
from dpbandit.agents.baselines import Greedy, argmax_random_tie
from dpbandit.agents.linucb import LinUCB
from dpbandit.agents.ridge import subtract_outer
from dpbandit.experiment.config import AgentSpec, EnvSpec
from dpbandit.experiment.results import checkpoint_rounds
from dpbandit.validation import check_int

__all__ = ["simulate_batch", "BATCHED_AGENTS"]

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
    envs = [gymnasium.make(env_spec.id, **env_spec.kwargs) for _ in seeds]
    agents = [make_agent(agent_spec.type, env, **agent_spec.params) for env in envs]
    if type(agents[0]) not in BATCHED_AGENTS:
        names = ", ".join(cls.name for cls in BATCHED_AGENTS)
        raise ValueError(f"agent {agent_spec.type!r} has no batched form (batched agents: {names}); use simulate")
    try:
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
    # the environments' own step (the wrappers only check the call order, which this loop keeps)
    steps, rngs = [e.unwrapped.step for e in envs], [a.rng for a in agents]
    seed_rows = np.arange(S)
    rewards = np.empty(S)
    rec = np.empty((S, n, 4))
    cum_regret, cum_reward = [0.0] * S, [0.0] * S
    k, next_t = 0, int(rounds[0])
    for t in range(1, horizon + 1):
        # the single-seed operand layouts: disjoint rows are one context broadcast over the K arms (stride 0)
        O = np.broadcast_to(np.stack([o[0] for o in obs])[:, None, :], (S, *obs[0].shape)) if disjoint \
            else np.stack(obs)
        arms = _argmax_random_tie(score(W, O, d, disjoint, alpha), rngs)
        record = t == next_t
        X = O[seed_rows, arms]  # the played feature vectors (S, d), read before the observations move on
        for s in range(S):
            next_obs, reward, _, _, info = steps[s](arms[s])
            rewards[s] = reward
            cum_regret[s] += info["regret"]
            cum_reward[s] += reward
            if record:
                rec[s, k] = (reward, info["regret"], cum_reward[s], cum_regret[s])
            obs[s] = next_obs
        _ridge_update(W, B, C, X, rewards, np.asarray(arms) if disjoint else np.zeros(S, dtype=np.intp), d)
        if record:
            k += 1
            next_t = int(rounds[k]) if k < n else -1
    frames = []
    for s in range(S):
        frame = pd.DataFrame(rec[s], columns=["reward", "regret", "cumulative_reward", "cumulative_regret"])
        frame.insert(0, "t", rounds)
        frames.append(frame)
    return frames


def _ridge_update(W, B, C, X, y, models, d) -> None:
    """:meth:`RidgeState.update` of every seed (model ``models[s]`` of seed s gets ``(X[s], y[s])``), with the same
    per-matrix calls batched; the rank-one step is the same BLAS ``dger`` per seed (a fused multiply-add kernel has
    no bitwise-equal numpy form)."""
    rows = np.arange(len(X))
    r = np.matmul(W[rows, models], X[:, :, None])[..., 0]
    u = r[:, :d]
    scale = 1.0 / (1.0 + np.einsum("sd,sd->s", X, u))
    c = r * scale[:, None]
    c[:, d] = (r[:, d] - y) * scale
    for s, m in enumerate(models):
        subtract_outer(W[s, m], c[s], u[s])
    B[rows, models] += y[:, None] * X
    C[rows, models] += 1


def _linucb_scores(W: np.ndarray, O: np.ndarray, d: int, disjoint: bool, alpha: float) -> np.ndarray:
    """:meth:`LinUCB.scores` of every seed: W (S, M, d+1, d), O (S, K, d) -> (S, K), the same operations batched."""
    R = np.matmul(W, O[..., None])[..., 0] if disjoint else O @ W[:, 0].transpose(0, 2, 1)
    score = np.einsum("skd,skd->sk", R[..., :d], O)
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
