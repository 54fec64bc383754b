"""Policies as action distributions: the evaluated policy's probabilities ``pi(a | x)`` for the estimators.

Two kinds of evaluated policy:

* a **static policy**: an array ``(n, K)`` of action probabilities for the ``n`` logged rounds, or a callable
  ``contexts (n, d) -> (n, K)`` (called once, vectorised); :func:`policy_matrix` checks it (rows of ``K``
  non-negative numbers summing to 1). :func:`fixed_arm` and :func:`uniform_policy` build the two references;
* an **agent** (:class:`~dpbandit.agents.base.Agent`), learning as it is replayed: :func:`agent_probabilities`
  gives its distribution over the next action for an observation ``(K, d)``, where it is defined, *before* it acts:
  uniform random play ``1/K``; the oracle, greedy and LinUCB: uniform over the arms of largest score (their
  tie-breaking); epsilon-greedy: ``(1 - eps_t) greedy + eps_t / K``; a private agent
  (:class:`~dpbandit.agents.private.PrivateAgent`): its static action rule on the current release, probed with a
  throw-away generator: a rule that draws no randomness (no tie) is deterministic, so its distribution is the
  one-hot row of its arm. Otherwise (an agent that overrides ``act``, or a rule that drew randomness) the result is
  ``None`` and the estimators use the one-hot row of the action the agent actually played (unbiased, but noisier).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dpbandit.agents.base import Agent
from dpbandit.agents.baselines import EpsilonGreedy, Greedy, Oracle, UniformRandom
from dpbandit.agents.linucb import LinUCB
from dpbandit.agents.private import PrivateAgent

__all__ = ["policy_matrix", "agent_probabilities", "fixed_arm", "uniform_policy", "logging_distribution"]

#: Tolerance of a probability row's sum.
_SUM_TOL = 1e-6


def fixed_arm(arm: int, n_rounds: int, n_actions: int) -> np.ndarray:
    """The policy that always plays ``arm``: ``(n_rounds, n_actions)`` one-hot rows."""
    out = np.zeros((n_rounds, n_actions))
    out[:, arm] = 1.0
    return out


def uniform_policy(n_rounds: int, n_actions: int) -> np.ndarray:
    """Uniform random play: ``(n_rounds, n_actions)`` rows of ``1/K``."""
    return np.full((n_rounds, n_actions), 1.0 / n_actions)


def policy_matrix(policy: np.ndarray | Callable[[np.ndarray], Any], context: np.ndarray, n_actions: int) -> np.ndarray:
    """``policy`` (an array or a callable of the contexts ``(n, d)``) as checked probabilities ``(n, K)``."""
    n = context.shape[0]
    values = policy(context) if callable(policy) else policy
    try:
        pi = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"policy must give action probabilities, an array ({n}, {n_actions}), got "
                        f"{type(values).__name__}") from None
    if pi.shape != (n, n_actions):
        raise ValueError(f"policy must give action probabilities of shape (n_rounds, K) = ({n}, {n_actions}), got "
                         f"{pi.shape}")
    if not np.isfinite(pi).all() or pi.min() < 0:
        bad = int(np.flatnonzero(~np.isfinite(pi).all(axis=1) | (pi < 0).any(axis=1))[0])
        raise ValueError(f"policy probabilities must be finite and >= 0; row {bad} is {pi[bad][:6].tolist()}")
    sums = pi.sum(axis=1)
    if np.abs(sums - 1).max() > _SUM_TOL:
        bad = int(np.abs(sums - 1).argmax())
        raise ValueError(f"policy probabilities must sum to 1 in every row; row {bad} sums to {sums[bad]:.6g}")
    return pi


def logging_distribution(data: Any) -> np.ndarray | None:
    """The logging policy's whole distribution ``(n, K)`` when the log keeps it (``extra["pi_b"]``, OBP's
    ``(n, K)`` or ``(n, K, len_list)`` read at each round's position), else None; ``ValueError`` when it is not
    probabilities of that shape."""
    pi_b = data.extra.get("pi_b") if data.extra else None
    if pi_b is None:
        return None
    pi_b = np.asarray(pi_b, dtype=np.float64)
    n, k = data.n_rounds, data.n_actions
    if pi_b.ndim == 3 and pi_b.shape[:2] == (n, k):
        slot = np.zeros(n, dtype=np.int64) if data.position is None else data.position
        if slot.max() >= pi_b.shape[2]:
            raise ValueError(f"pi_b has {pi_b.shape[2]} positions but the log has position {int(slot.max())}")
        pi_b = pi_b[np.arange(n), :, slot]
    if pi_b.shape != (n, k) or not np.isfinite(pi_b).all() or pi_b.min() < 0 or np.abs(pi_b.sum(axis=1) - 1).max() > \
            _SUM_TOL:
        raise ValueError(f"pi_b (the logging policy's distribution) must be probabilities of shape ({n}, {k}) or "
                         f"({n}, {k}, len_list), got shape {pi_b.shape}")
    return pi_b


def _argmax_set(scores: np.ndarray) -> np.ndarray:
    scores = np.asarray(scores, dtype=np.float64)
    best = scores == scores.max()
    return best / best.sum()


def _overrides(agent: Agent, cls: type) -> bool:
    return type(agent).act is not cls.act


def agent_probabilities(agent: Agent, observation: np.ndarray) -> np.ndarray | None:
    """The agent's distribution ``(K,)`` over its next action on ``observation`` ``(K, d)``, or ``None`` where it is
    not defined (module docstring). Call it before ``agent.act``; it draws nothing from the agent's generators."""
    k = agent.n_arms
    if isinstance(agent, UniformRandom) and not _overrides(agent, UniformRandom):
        return np.full(k, 1.0 / k)
    if isinstance(agent, EpsilonGreedy) and not _overrides(agent, EpsilonGreedy):
        eps = agent.current_epsilon()
        return (1 - eps) * _argmax_set(agent.ridge.predict(observation)) + eps / k
    if isinstance(agent, Greedy) and not isinstance(agent, EpsilonGreedy) and not _overrides(agent, Greedy):
        return _argmax_set(agent.ridge.predict(observation))
    if isinstance(agent, LinUCB) and not _overrides(agent, LinUCB):
        return _argmax_set(agent.scores(observation))
    if isinstance(agent, Oracle) and not _overrides(agent, Oracle):
        return _argmax_set(agent.expected_rewards(observation))
    if isinstance(agent, PrivateAgent) and not _overrides(agent, PrivateAgent):
        probe = np.random.default_rng(0)
        before = probe.bit_generator.state
        arm = type(agent).action_rule(agent._release, observation, probe)
        if probe.bit_generator.state != before:
            return None
        out = np.zeros(k)
        out[int(arm)] = 1.0
        return out
    return None
