"""Policies as action distributions: the evaluated policy's probabilities ``pi(a | x)`` for the estimators.

Two kinds of evaluated policy:

* a **static policy**: an array ``(n, K)`` of action probabilities for the ``n`` logged rounds, or a callable
  ``contexts (n, d) -> (n, K)`` (called once, vectorised); :func:`policy_matrix` checks it (rows of ``K``
  non-negative numbers summing to 1). :func:`fixed_arm` and :func:`uniform_policy` build the two references;
* an **agent** (:class:`~dpbandit.agents.base.Agent`), learning as it is replayed: :func:`agent_probabilities`
  gives its distribution over the next action for an observation ``(K, d)``, where it is defined, *before* it acts:
  uniform random play ``1/K``; the oracle, greedy and LinUCB: uniform over the arms of largest score (their
  tie-breaking); epsilon-greedy: ``(1 - eps_t) greedy + eps_t / K``.

  A private agent (:class:`~dpbandit.agents.private.PrivateAgent`) acts by its static action rule on its latest
  release; :func:`rule_probabilities` gives the rule's distribution from the release and the observation alone,
  computed with the rule's own score functions. Every built-in rule breaks exact ties (equal scores, no tolerance)
  uniformly at random (:func:`~dpbandit.agents.baselines.argmax_random_tie`), so its distribution is uniform over the
  arms of largest score:

  * DP-HDB (``spec/han-frank-wolfe.md`` §6): during the warm-up (no frozen forced-sample estimator yet) the
    deterministic round robin, a point mass on arm ``round mod K``; after it, uniform over the largest
    :func:`~dpbandit.agents.dp_hdb.greedy_index` values (the greedy arms among the h/2 pre-selected ones);
  * FLIPHAT: uniform over the largest :func:`~dpbandit.agents.fliphat.greedy_scores` (before the first release
    every score is 0: uniform over all arms);
  * episodic private ridge: uniform over the largest :func:`~dpbandit.agents.episodic_ridge.ridge_scores`
    (greedy, plus the heuristic width when ``ucb_alpha > 0``), or over the largest UCB indices of a release whose
    ``rule`` is ``"ucb"``; a ``"thompson"`` release's distribution (the chance that each arm wins one Gaussian draw)
    has no closed form: **undefined** (below);
  * DP-UCB: uniform over the largest optimistic indices :func:`~dpbandit.agents.dp_ucb_release.ucb_scores`;
  * private OCO learners as agents: ``(1 - e)`` uniform over the largest ``x_a . theta_a`` plus ``e / K``
    (``e`` the release's exploration probability).

  Any other private rule (a plug-in agent's) is probed with a throw-away generator: a rule that draws no randomness
  is deterministic there, so its distribution is the one-hot row of its arm.

Where the distribution is **not defined** here — an agent that overrides ``act`` (e.g. the LASSO bandit), episodic
ridge's Thompson rule, or a plug-in private rule that drew randomness — :func:`agent_probabilities` returns
``None``, and :func:`~dpbandit.offline.replay.evaluate_offline` uses the one-hot row of the action the agent actually
played (unbiased, but noisier), counts those rounds in ``OfflineResult.played_rounds`` (the ``played_rounds`` column
of its tables) and says so in a warning.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dpbandit.agents.base import Agent
from dpbandit.agents.baselines import EpsilonGreedy, Greedy, Oracle, UniformRandom
from dpbandit.agents.dp_hdb import DPHDB, greedy_index
from dpbandit.agents.dp_ucb import DPUCB
from dpbandit.agents.dp_ucb_release import ucb_scores
from dpbandit.agents.episodic_ridge import EpisodicRidge, ridge_scores
from dpbandit.agents.fliphat import FLIPHAT, greedy_scores
from dpbandit.agents.linucb import LinUCB
from dpbandit.agents.oco_adapter import OCOAgent
from dpbandit.agents.private import PrivateAgent

__all__ = ["policy_matrix", "agent_probabilities", "rule_probabilities", "fixed_arm", "uniform_policy",
           "logging_distribution"]

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


def _argmax_set(scores: np.ndarray) -> np.ndarray | None:
    """Uniform over the entries equal to the largest score ``(K,)`` (exact ties, as the agents break them); None
    with a NaN score (the agents refuse to act on one)."""
    scores = np.asarray(scores, dtype=np.float64)
    if np.isnan(scores).any():
        return None
    best = scores == scores.max()
    return best / best.sum()


def _one_hot(arm: int, k: int) -> np.ndarray:
    out = np.zeros(k)
    out[int(arm)] = 1.0
    return out


def _dp_hdb(release, observation):
    k = release.theta.shape[0]
    if release.theta_forced is None:  # the warm-up's round robin
        return _one_hot(release.round % k, k)
    values = np.empty(k)
    greedy_index(np.asarray(observation, dtype=float), release.theta_forced, release.theta, release.h,
                 release.link == "logistic", values)
    return _argmax_set(values)


def _episodic_ridge(release, observation):
    X = np.asarray(observation, dtype=float)
    rule = getattr(release, "rule", "greedy")  # the release's action rule (releases without one are greedy)
    if rule == "greedy":
        return _argmax_set(ridge_scores(release.theta, release.v_inv, release.ucb_alpha, release.shared, X))
    if rule == "ucb":
        from dpbandit.agents.release_rules import ucb_scores as width_scores

        return _argmax_set(width_scores(release.theta, release.v_inv, release.beta, release.shared, X))
    return None  # Thompson: P(a maximises x_a . theta~) under the Gaussian draw has no closed form


def _oco(release, observation):
    greedy = _argmax_set(np.einsum("kd,kd->k", observation, release.thetas))
    e = release.exploration  # a probability in [0, 1]
    return greedy if greedy is None else (1 - e) * greedy + e / len(greedy)


#: The distribution of each built-in static action rule, ``(release, observation (K, d)) -> (K,)`` (module docstring).
_RULES: dict[Callable, Callable[[Any, np.ndarray], np.ndarray | None]] = {
    DPHDB.action_rule: _dp_hdb,
    FLIPHAT.action_rule: lambda r, x: _argmax_set(greedy_scores(r.theta, np.asarray(x, dtype=float))),
    EpisodicRidge.action_rule: _episodic_ridge,
    DPUCB.action_rule: lambda r, x: _argmax_set(ucb_scores(r, x)),
    OCOAgent.action_rule: _oco,
}


def rule_probabilities(rule: Callable, release: Any, observation: np.ndarray) -> np.ndarray | None:
    """The distribution ``(K,)`` of the static action rule ``rule`` (a private agent class's ``action_rule``) on
    ``release`` and the current user's ``observation`` ``(K, d)``: exact for the built-in rules (module docstring);
    for another rule, the one-hot row of its arm when it draws no randomness, else None (undefined). Draws nothing
    from any agent generator."""
    known = _RULES.get(rule)
    if known is not None:
        return known(release, observation)
    probe = np.random.default_rng(0)
    before = probe.bit_generator.state
    arm = rule(release, observation, probe)
    if probe.bit_generator.state != before:
        return None
    return _one_hot(arm, np.shape(observation)[0])


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
        greedy = _argmax_set(agent.ridge.predict(observation))
        return None if greedy is None else (1 - eps) * greedy + eps / k
    if isinstance(agent, Greedy) and not isinstance(agent, EpsilonGreedy) and not _overrides(agent, Greedy):
        return _argmax_set(agent.ridge.predict(observation))
    if isinstance(agent, LinUCB) and not _overrides(agent, LinUCB):
        return _argmax_set(agent.scores(observation))
    if isinstance(agent, Oracle) and not _overrides(agent, Oracle):
        return _argmax_set(agent.expected_rewards(observation))
    if isinstance(agent, PrivateAgent) and not _overrides(agent, PrivateAgent):
        return rule_probabilities(type(agent).action_rule, agent.release, observation)
    return None
