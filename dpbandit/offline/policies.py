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
  release; :func:`rule_probabilities` gives that rule's exact distribution by running the rule itself once per
  outcome of its uniform integer draws (no copy of any rule's scores, so it follows the rule as it changes). Every
  built-in rule breaks exact ties (equal scores, no tolerance) uniformly at random
  (:func:`~dpbandit.agents.baselines.argmax_random_tie`), so its distribution is uniform over the arms of largest
  score:

  * DP-HDB (``spec/han-frank-wolfe.md`` §6): during the warm-up (no frozen forced-sample estimator yet) the
    deterministic round robin, a point mass on arm ``round mod K``; after it, uniform over the largest
    :func:`~dpbandit.agents.dp_hdb.greedy_index` values (the greedy arms among the h/2 pre-selected ones);
  * FLIPHAT: uniform over the largest :func:`~dpbandit.agents.fliphat.greedy_scores` (before the first release
    every score is 0: uniform over all arms);
  * episodic private ridge: uniform over the largest greedy (plus ``ucb_alpha`` width) or UCB scores of its release;
    its Thompson rule draws a Gaussian, whose chance of making each arm the best has no closed form: **undefined**;
  * DP-UCB: uniform over the largest optimistic indices :func:`~dpbandit.agents.dp_ucb_release.ucb_scores`;
  * private OCO learners as agents: ``(1 - e)`` uniform over the largest ``x_a . theta_a`` plus ``e / K``
    (``e`` the release's exploration probability; its continuous coin is stated in closed form here);
  * a plug-in private agent's rule: exact when its only randomness is uniform integer draws, else undefined.

Where the distribution is **not defined** here — an agent that overrides ``act`` (e.g. the LASSO bandit), episodic
ridge's Thompson rule, a plug-in rule with other draws, a tie needing more than :data:`MAX_RULE_CALLS` rule calls —
:func:`agent_probabilities` returns ``None``, and :func:`~dpbandit.offline.replay.evaluate_offline` uses the one-hot
row of the action the agent actually played (unbiased, but noisier), counts those rounds in
``OfflineResult.played_rounds`` (the ``played_rounds`` column of its tables) and says so in a warning.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from dpbandit.agents.base import Agent
from dpbandit.agents.baselines import EpsilonGreedy, Greedy, Oracle, UniformRandom
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


def _oco(release, observation):
    """The OCO agent's epsilon-greedy rule: its coin ``rng.random() < e`` is continuous, so it is stated here."""
    greedy = _argmax_set(np.einsum("kd,kd->k", observation, release.thetas))
    e = release.exploration  # a probability in [0, 1]
    return greedy if greedy is None else (1 - e) * greedy + e / len(greedy)


#: Rules whose distribution is stated here rather than enumerated.
_STATED: dict[Callable, Callable[[Any, np.ndarray], np.ndarray | None]] = {OCOAgent.action_rule: _oco}
#: Most rule calls one distribution may take (a tie of more arms is left undefined).
MAX_RULE_CALLS = 1024


class _Branch(Exception):
    """The rule asked for an integer draw beyond the script: its number of outcomes."""

    def __init__(self, n: int):
        self.n = n


class _NotEnumerable(Exception):
    """The rule drew anything but a uniform integer (a continuous or non-uniform draw)."""


class _ScriptedDraws:
    """Stands in for the exploration generator: a uniform integer draw (``integers(n)``, ``integers(low, high)``,
    ``choice(n)``) returns the next scripted outcome (``_Branch`` when the script is spent); every other draw raises
    ``_NotEnumerable``."""

    def __init__(self, script: tuple[int, ...]):
        self.script, self.used, self.sizes = script, 0, []

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        if size is not None or np.ndim(low) != 0 or np.ndim(high) != 0:
            raise _NotEnumerable
        low, high = (0, int(low)) if high is None else (int(low), int(high))
        n = high - low + int(endpoint)
        if self.used == len(self.script):
            raise _Branch(n)
        self.sizes.append(n)
        self.used += 1
        return low + self.script[self.used - 1]

    def choice(self, a, size=None, replace=True, p=None, shuffle=True):
        if p is not None or not isinstance(a, (int, np.integer)):
            raise _NotEnumerable
        return self.integers(a, size=size)

    def __getattr__(self, name):
        raise _NotEnumerable


def rule_probabilities(rule: Callable, release: Any, observation: np.ndarray) -> np.ndarray | None:
    """The distribution ``(K,)`` of the static action rule ``rule`` (a private agent class's ``action_rule``) on
    ``release`` and the current user's ``observation`` ``(K, d)``, or None where it is not defined.

    Exact by enumeration: the rule itself is run with a scripted stand-in for its generator, once per outcome of
    each uniform integer draw it makes (``rng.integers(n)``: the uniform tie-breaking of
    :func:`~dpbandit.agents.baselines.argmax_random_tie`), and each outcome path weighs ``prod 1/n``. A rule that
    draws nothing is a point mass; one that makes any other draw (a continuous coin, a Gaussian) is not enumerable
    (None), except the OCO agent's epsilon-greedy coin, stated in closed form. At most :data:`MAX_RULE_CALLS` calls
    (else None). Draws nothing from any agent generator."""
    stated = _STATED.get(rule)
    if stated is not None:
        return stated(release, observation)
    k = np.shape(observation)[0]
    out = np.zeros(k)
    pending, calls = [()], 0
    while pending:
        script = pending.pop()
        calls += 1
        if calls > MAX_RULE_CALLS:
            return None
        draws = _ScriptedDraws(script)
        try:
            arm = rule(release, observation, draws)
        except _Branch as branch:
            pending.extend(script + (j,) for j in range(branch.n))
            continue
        except _NotEnumerable:
            return None
        out[int(arm)] += 1.0 / math.prod(draws.sizes)
    return out


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
