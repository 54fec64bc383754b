"""Offline evaluation of a (learning, possibly private) agent, or of a policy given as action probabilities, on
logged data: rejection-sampling replay and the off-policy estimators of :mod:`dpbandit.offline.estimators`.

One pass over the whole log (in its order, or shuffled with ``shuffle=True``). At logged round i the agent sees the
context ``x_i`` (every arm's row, disjoint structure), states its action distribution ``pi_i`` where it is defined
(:func:`~dpbandit.offline.policies.agent_probabilities`; otherwise the one-hot row of its action, counted in
``OfflineResult.played_rounds`` and stated in a warning) and picks ``b_i``; the log holds action ``a_i``, reward
``r_i`` and propensity ``p_i``. Then:

* **Replay** (rejection sampling, Li, Chu, Langford & Wang, WSDM 2011): when ``b_i = a_i`` the event is
  *accepted* with probability ``p_min / p_i`` (``p_min`` = the smallest logged propensity; always 1 for a uniform
  log, which is Li et al.'s method); the agent then learns ``(x_i, a_i, r_i)`` and ``r_i`` is the reward of its next
  round. Otherwise the event is discarded and the agent learns nothing. Whatever the agent does,
  ``P(accept | x) = p_min``, so accepted users are i.i.d. draws of the logged context law and, given acceptance,
  the action follows the agent's policy: the accepted rounds are distributed exactly as an online run of the agent
  on the logged population (for a stationary log). The replay estimate is the mean reward per accepted round.
  The agent learns its first ``horizon`` accepted rounds (its constants' horizon, which private agents calibrate
  to); after that it is frozen and still evaluated on the rest of the log, so the pass always covers the whole log.
* **DM, IPS, SNIPS, DR, SNDR, switch-DR, clipped IPS/DR** (:mod:`dpbandit.offline.estimators`) on every logged round
  of the same pass, from the distributions ``pi_i`` and a cross-fitted reward model ``q``
  (:mod:`dpbandit.offline.reward_model`: ridge, a named or any scikit-learn model).

Given the past, the IPS and DR terms of round i are unbiased for the value (expected reward per round) of the
agent's policy at that moment, so their means estimate the average value of the agent's policies along its replay
trajectory; the replay mean estimates its average reward per round over its accepted rounds. DM is weaker for a
learning agent: its reward model and the agent learn from the same rounds, so the arms the agent favours after lucky
rewards are also those the model overrates (LinUCB on the logs of ``tests/offline/test_coverage.py``: DM's error
+0.0008 +- 0.0004, a tenth of its standard deviation, and its interval covering 93.2 % [90.9, 94.9] of 600 logs,
``benchmarks/offline_coverage_acceptance.py``); DR and SNDR, whose weights correct the model, covered about 95 %. A
static policy (an array ``(n, K)`` or a callable of the contexts) has one value; its replay action is drawn from its
distribution. Every estimate comes with an interval over the data (bootstrap BCa by default, or Student-t; for a
learning agent the rounds are a martingale-difference sequence, so resampling them is an approximation), widened to
an exact bound when rewards are rare. The estimators need logged propensities; replay needs them too unless the log
is declared uniform (``uniform=True`` sets ``p_i = 1/K``). A log with several positions (slots) is evaluated as one
pooled log here, which assumes an action's reward does not depend on its position; :mod:`dpbandit.offline.positions`
evaluates each position and the pool.

Privacy, offline (:data:`OFFLINE_PRIVACY_SCOPE`): the agent's privacy report describes it as a mechanism over the
users it learned from — the accepted events — under the report's neighbouring relation. It is not a guarantee for
everyone in the log: whether a logged user is accepted depends on that user's logged action and context, so one
changed record can add or remove an accepted round, which a replace-one guarantee does not cover. The estimates
themselves (replay mean and every estimator) read raw logged rewards: they are numbers for the analyst, not private releases.

Seeding: the agent is reset with the job seed (its ``"exploration"`` and ``"privacy"`` streams); the acceptance
coins and the optional shuffle use the seed's ``"reward_noise"`` and ``"contexts"`` streams (the randomness an
environment would otherwise supply).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from dpbandit.agents.base import Agent
from dpbandit.envs.constants import BanditConstants
from dpbandit.envs.contexts import CONTEXT_NORMS, NORMALIZE_MODES, normalise
from dpbandit.offline import estimators as est
from dpbandit.offline.logged import LoggedData
from dpbandit.offline.policies import agent_probabilities, logging_distribution, policy_matrix
from dpbandit.offline.reward_model import fit_reward_model, ridge_dm_deviations
from dpbandit.seeding import stream
from dpbandit.validation import check_choice, check_int, check_real

__all__ = ["ReplayEnv", "OfflineResult", "PlayedActionWarning", "evaluate_offline", "OFFLINE_PRIVACY_SCOPE", "ESTIMATORS",
           "MIN_EXPECTED_ACCEPTED", "check_replayable", "expected_accepted", "DEFAULT_ESTIMATORS", "covering_horizon"]

#: Every estimator: rejection-sampling replay and :data:`dpbandit.offline.estimators.ESTIMATORS`.
ESTIMATORS: tuple[str, ...] = ("replay",) + est.ESTIMATORS
#: The default set: the unbiased (or consistent) ones; the switch and clipped estimators are biased above ``clip``.
DEFAULT_ESTIMATORS: tuple[str, ...] = ("replay", "dm", "ips", "snips", "dr", "sndr")
#: Fewest accepted rounds a full replay pass must expect (``n_rounds * p_min``); below it replay is refused.
MIN_EXPECTED_ACCEPTED = 10.0

#: What a private agent's report means when it is evaluated on logged data (also in every result).
OFFLINE_PRIVACY_SCOPE = (
    "offline: the privacy report covers the accepted (replayed) users only, under its neighbouring relation; a "
    "changed log record can add or remove an accepted round, which replace-one does not cover; the replay/IPS/DR "
    "(and every other) estimates read raw logged rewards and are not private releases"
)


class PlayedActionWarning(RuntimeWarning):
    """An agent's action distribution is undefined in some rounds (``dpbandit.offline.policies``): its played action
    stands in there (one-hot), counted in ``OfflineResult.played_rounds``."""


@dataclass(frozen=True)
class ReplayEnv:
    """The public face of a log for building agents: ``constants`` (what an agent may know) and ``unwrapped``.

    ``make_agent(name, ReplayEnv.from_logged(data, ...))`` builds an agent calibrated to the stated bounds.
    """

    constants: BanditConstants

    @property
    def unwrapped(self) -> "ReplayEnv":
        return self

    @classmethod
    def from_logged(cls, data: LoggedData, horizon: int, *, context_norm: str = "l2", context_bound: float = 1.0,
                    reward_range: tuple[float, float] = (0.0, 1.0), theta_norm: str = "l2",
                    theta_bound: float = float("inf")) -> "ReplayEnv":
        """Constants for replaying ``data`` for ``horizon`` accepted rounds with contexts in the ``context_norm``
        ball of radius ``context_bound`` and rewards in ``reward_range`` (public bounds a private agent
        calibrates to; :func:`evaluate_offline` enforces them). ``theta_norm``/``theta_bound``: an assumed bound
        on the linear reward model, which UCB-type agents need for their confidence widths and projection-based agents
        for their radius (with the default ``inf``, unknown, those agents refuse at construction in one line naming
        ``theta_bound``: :func:`~dpbandit.agents.private.require_finite_theta_bound`). Bounded rewards are
        ``(high - low)/2``-sub-Gaussian, stated as ``noise_std``."""
        low, high = _check_range(reward_range)
        check_choice("context_norm", context_norm, CONTEXT_NORMS)
        check_choice("theta_norm", theta_norm, CONTEXT_NORMS + ("l1",))
        bound = check_real("context_bound", context_bound, low=0.0, low_inclusive=False)
        theta_bound = check_real("theta_bound", theta_bound, low=0.0, low_inclusive=False, allow_inf=True)
        return cls(BanditConstants(
            n_arms=data.n_actions, dim=data.dim, horizon=check_int("horizon", horizon, low=1), structure="disjoint",
            link="identity", context_norm=context_norm, context_bound=bound, theta_norm=theta_norm,
            theta_bound=theta_bound, sparsity=data.dim, noise_std=(high - low) / 2, reward_low=low,
            reward_high=high, mean_low=low, mean_high=high,
        ))


def _propensities(data: LoggedData, uniform: bool) -> np.ndarray:
    """The logged propensities (``pscore``, else read from the logging distribution ``extra["pi_b"]``), or ``1/K``
    for a log declared uniform; ``ValueError`` when there are none."""
    if data.pscore is not None:
        return data.pscore
    pi_b = logging_distribution(data)
    if pi_b is not None:
        pscore = pi_b[np.arange(data.n_rounds), data.action]
        if not np.all(pscore > 0):
            raise ValueError(f"pi_b gives the logged action probability 0 in round {int(np.argmin(pscore))}")
        return pscore
    if not uniform:
        raise ValueError("the log has no propensities (pscore): pass uniform=True (CLI: --uniform) if the "
                         "logging policy was uniformly random, otherwise log the propensities")
    return np.full(data.n_rounds, 1.0 / data.n_actions)


def expected_accepted(data: LoggedData, uniform: bool = False) -> float:
    """``n_rounds * p_min``: the expected number of accepted rounds of one full replay pass, whatever the agent
    (every round is accepted with probability ``p_min`` given its context: module docstring). It is the default
    replay horizon of ``dpbandit replay``."""
    return data.n_rounds * float(_propensities(data, uniform).min())


def check_replayable(data: LoggedData, uniform: bool = False) -> float:
    """:func:`expected_accepted`, after refusing (``ValueError``, one line) a log whose smallest propensity leaves
    fewer than :data:`MIN_EXPECTED_ACCEPTED` expected accepted rounds: one near-zero propensity makes rejection
    sampling accept almost nothing, so the agents would learn from nothing and the replay estimate would be
    undefined (NaN). The message names the round, the count and the fix."""
    pscore = _propensities(data, uniform)
    expected = data.n_rounds * float(pscore.min())
    if expected >= MIN_EXPECTED_ACCEPTED:
        return expected
    threshold = MIN_EXPECTED_ACCEPTED / data.n_rounds
    low = int(np.count_nonzero(pscore < threshold))
    raise ValueError(
        f"the smallest logged propensity is {pscore.min():.3g} (round {int(pscore.argmin())}), so replay (accepting a "
        f"matched round with probability p_min/p) expects n_rounds * p_min = {expected:.3g} accepted rounds, fewer "
        f"than {MIN_EXPECTED_ACCEPTED:g}: its estimate would be undefined; drop or correct the {low} round(s) with "
        f"propensity below {MIN_EXPECTED_ACCEPTED:g}/n_rounds = {threshold:.3g}")


def _check_range(reward_range: Any) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in reward_range)
    except (TypeError, ValueError):
        raise TypeError(f"reward_range must be a pair (low, high), got {reward_range!r}") from None
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValueError(f"reward_range must be finite with low < high, got {reward_range!r}")
    return low, high


def covering_horizon(data: LoggedData, uniform: bool = False) -> int:
    """A replay horizon the whole log fills only with probability <= 1e-9: the number of accepted rounds of a full
    pass is Binomial(n_rounds, p_min) whatever the agent, and this is its 1 - 1e-9 quantile (the default of
    ``dpbandit replay``, so the pass covers the whole log while private agents calibrate to a tight horizon)."""
    from scipy import stats

    p_min = float(_propensities(data, uniform).min())
    return max(1, int(stats.binom.ppf(1 - 1e-9, data.n_rounds, p_min)))


@dataclass(frozen=True)
class OfflineResult:
    """One offline evaluation: ``curve`` (per accepted round: ``t, reward, cumulative_reward``), ``estimates``
    (estimator -> :class:`~dpbandit.offline.estimators.Estimate`: value, interval over the data, n, effective
    sample size), ``accepted``, ``logged`` (rounds evaluated: the whole log), ``pi`` ``(n, K)`` the evaluated
    distributions in log order, the privacy report (dict or None) and its offline ``privacy_scope``;
    ``played_rounds``: the rounds whose row of ``pi`` is the one-hot row of the agent's played action because its
    distribution is not defined there (:mod:`dpbandit.offline.policies`; unbiased, noisier); ``truth``: the
    true value ``mean_i sum_a pi[i, a] mu(x_i, a)`` when the log keeps every action's expected reward
    (``extra["expected_reward"]``, synthetic logs: :func:`~dpbandit.offline.logged.log_policy`, OBP's synthetic
    data), else None."""

    curve: pd.DataFrame
    estimates: dict[str, est.Estimate]
    accepted: int
    logged: int
    privacy_report: dict | None
    privacy_scope: str = OFFLINE_PRIVACY_SCOPE
    pi: np.ndarray | None = field(default=None, repr=False)
    truth: float | None = None
    played_rounds: int = 0

    def table(self) -> pd.DataFrame:
        """One row per estimator: ``estimator, value, low, high, n, ess, interval, played_rounds`` (and ``truth``)."""
        table = pd.DataFrame([{"estimator": e.name, "value": e.value, "low": e.low, "high": e.high, "n": e.n,
                               "ess": e.ess, "interval": e.method, "played_rounds": self.played_rounds}
                              for e in self.estimates.values()])
        if self.truth is not None:
            table["truth"] = self.truth
        return table


def _replay_estimate(rewards: np.ndarray, reward_range: tuple[float, float], interval: str, level: float,
                     n_resamples: int, rng: np.random.Generator) -> est.Estimate:
    """The mean reward per accepted round, with the same interval machinery (weights 1); NaN with no accepted round."""
    m = rewards.size
    if m < 2:
        value = float(rewards[0]) if m else float("nan")
        low, high = (reward_range if m else (float("nan"), float("nan")))
        return est.Estimate("replay", value, float(low), float(high), m, float(m), "none", level)
    with warnings.catch_warnings():  # the weights are all 1: its only warning would be about few rounds, said below
        warnings.simplefilter("ignore", RuntimeWarning)
        e = est.estimate("ips", rewards, np.zeros(m, np.int64), np.ones(m), np.ones((m, 1)), interval=interval,
                         level=level, n_resamples=n_resamples, rng=rng, reward_range=reward_range)
    if m < 10:
        warnings.warn(f"replay: only {m} accepted rounds: the estimate rests on few rounds", RuntimeWarning,
                      stacklevel=3)
    return est.Estimate("replay", e.value, e.low, e.high, m, float(m), e.method, level)


def _agent_pass(agent: Agent, data: LoggedData, contexts: np.ndarray, order: np.ndarray, accept: np.ndarray,
                seed: int) -> tuple[np.ndarray, list[float], int]:
    """Replay ``agent`` over the log in ``order``: its distributions ``(n, K)`` (log order), accepted rewards and the
    number of rounds whose distribution is undefined (the played action's one-hot row; a warning says so)."""
    agent.reset(seed)
    k, horizon = data.n_actions, agent.constants.horizon
    pi = np.zeros((data.n_rounds, k))
    rewards: list[float] = []
    played = 0
    act, update = agent.act, agent.update
    for i in order:
        obs = np.broadcast_to(contexts[i], (k, data.dim))
        probs = agent_probabilities(agent, obs)
        b = act(obs)
        if probs is None:
            pi[i, b] = 1.0
            played += 1
        else:
            pi[i] = probs
        a = int(data.action[i])
        if b == a and accept[i] and len(rewards) < horizon:
            r = float(data.reward[i])
            update(obs, a, r, {})
            rewards.append(r)
    if played:
        warnings.warn(f"{type(agent).__name__}: its action distribution is not defined in {played} of {data.n_rounds} "
                      "rounds (dpbandit.offline.policies); the estimators use its played action there (one-hot: "
                      "unbiased, noisier; played_rounds in the results)", PlayedActionWarning, stacklevel=3)
    return pi, rewards, played


def evaluate_offline(data: LoggedData, agent: Agent | np.ndarray | Callable[[np.ndarray], Any], seed: int, *,
                     uniform: bool = False, shuffle: bool = False, normalize: str = "clip",
                     reward_model: Any = None, folds: int = 2, estimators: tuple[str, ...] = DEFAULT_ESTIMATORS,
                     clip: float = est.DEFAULT_CLIP, interval: str = "bca", level: float = 0.95,
                     n_resamples: int = 999, reward_range: tuple[float, float] | None = None) -> OfflineResult:
    """Evaluate ``agent`` on ``data`` (see the module docstring): an :class:`~dpbandit.agents.base.Agent`, or a
    static policy, action probabilities ``(n, K)`` or a callable ``contexts (n, d) -> (n, K)``.

    An agent's constants (build it with :meth:`ReplayEnv.from_logged`) state the replay horizon (accepted rounds it
    learns from), the context bound (contexts are brought into it with :func:`~dpbandit.envs.contexts.normalise`,
    mode ``normalize``) and the reward range (rewards outside it are refused: the agent's calibration rests on it).
    A static policy sees the raw contexts; its reward range is ``reward_range`` (default ``(0, 1)`` when the rewards
    lie in it, else their observed range). ``uniform=True`` declares a uniformly random logging policy when no
    propensities were logged. ``reward_model``: ``q`` as an array ``(n, K)``, a name or a scikit-learn estimator
    (:func:`~dpbandit.offline.reward_model.fit_reward_model`, ``folds`` cross-fitting folds; default ridge).
    ``estimators`` among :data:`ESTIMATORS`; ``clip`` the weight level of the switch and clipped ones; ``interval``
    ``"bca"`` or ``"t"`` at ``level`` with ``n_resamples`` bootstrap resamples (drawn from a child of the seed's
    ``"exploration"`` stream; a static policy's replay actions from another child). With ``"replay"`` among the
    ``estimators``, a log whose smallest propensity leaves fewer than :data:`MIN_EXPECTED_ACCEPTED` expected accepted
    rounds is refused before any work
    (:func:`check_replayable`).
    """
    if not isinstance(data, LoggedData):
        raise TypeError(f"data must be a LoggedData, got {type(data).__name__}")
    is_agent = isinstance(agent, Agent)
    if not is_agent and not (callable(agent) or isinstance(agent, (np.ndarray, list, tuple))):
        raise TypeError(f"agent must be a dpbandit Agent or a policy (action probabilities (n, K), or a callable of the "
                        f"contexts), got {type(agent).__name__}")
    seed = check_int("seed", seed, low=0)
    check_choice("normalize", normalize, NORMALIZE_MODES)
    check_choice("interval", interval, est.INTERVALS)
    if isinstance(estimators, str) or not estimators:
        raise ValueError(f"estimators must be a non-empty tuple of names from {list(ESTIMATORS)}, got {estimators!r}")
    for name in estimators:
        check_choice("estimator", name, ESTIMATORS)
    if is_agent:
        c = agent.constants
        if (c.n_arms, c.dim) != (data.n_actions, data.dim):
            raise ValueError(f"agent has (K, d) = {(c.n_arms, c.dim)} but the log has {(data.n_actions, data.dim)}: "
                             "build it with ReplayEnv.from_logged(data, ...)")
        reward_range = (c.reward_low, c.reward_high)
    elif reward_range is None:
        lo, hi = float(data.reward.min()), float(data.reward.max())
        reward_range = (0.0, 1.0) if lo >= 0 and hi <= 1 else (lo, hi)
    low, high = _check_range(reward_range)
    if data.reward.min() < low or data.reward.max() > high:
        raise ValueError(f"logged rewards lie in [{data.reward.min():g}, {data.reward.max():g}], outside the stated "
                         f"reward_range [{low:g}, {high:g}]{' the agent is calibrated to' if is_agent else ''}: "
                         "widen reward_range or clip the rewards")
    pscore = _propensities(data, uniform)
    if "replay" in estimators:
        check_replayable(data, uniform)
    q = None
    ridge = reward_model is None or (isinstance(reward_model, str) and reward_model == "ridge")
    if est.MODEL_ESTIMATORS.intersection(estimators):
        if isinstance(reward_model, (np.ndarray, list)):
            q = np.asarray(reward_model, dtype=np.float64)
            if q.shape != (data.n_rounds, data.n_actions):
                raise ValueError(f"reward_model must have shape {(data.n_rounds, data.n_actions)}, got {q.shape}")
        else:
            q = fit_reward_model(data, "ridge" if reward_model is None else reward_model, folds, seed=seed)
    order = stream(seed, "contexts").permutation(data.n_rounds) if shuffle else np.arange(data.n_rounds)
    coins = stream(seed, "reward_noise").random(data.n_rounds)
    accept = coins < pscore.min() / pscore
    if is_agent:
        contexts = normalise(data.context, agent.constants.context_norm, agent.constants.context_bound, normalize)
        pi, rewards, n_played = _agent_pass(agent, data, contexts, order, accept, seed)
        report = agent.privacy_report()
        report = None if report is None else report.to_dict()
    else:
        pi = policy_matrix(agent, data.context, data.n_actions)
        # a child of the exploration stream, not the stream itself: log_policy draws the logged actions from
        # stream(seed, "exploration"), so a log made with the same seed would otherwise be replayed with its own draws
        draws = np.random.default_rng(stream(seed, "exploration").spawn(2)[1]).random(data.n_rounds)
        played = np.minimum((pi.cumsum(axis=1) < draws[:, None]).sum(axis=1), data.n_actions - 1)
        hit = order[(played[order] == data.action[order]) & accept[order]]
        rewards, report, n_played = data.reward[hit].tolist(), None, 0
    rng = np.random.default_rng(stream(seed, "exploration").spawn(2)[0])
    options = dict(interval=interval, level=level, n_resamples=n_resamples, rng=rng, reward_range=(low, high),
                   pi_b=logging_distribution(data))
    estimates = {}
    for name in estimators:
        if name == "replay":
            estimates[name] = _replay_estimate(np.asarray(rewards, dtype=np.float64), (low, high), interval, level,
                                               n_resamples, rng)
        else:
            deviations = ridge_dm_deviations(data, pi, rng, n_resamples) if name == "dm" and ridge else None
            estimates[name] = est.estimate(name, data.reward, data.action, pscore, pi, q, clip=clip,
                                           model_deviations=deviations, **options)
    rewards_arr = np.asarray(rewards, dtype=np.float64)
    curve = pd.DataFrame({"t": np.arange(1, rewards_arr.size + 1), "reward": rewards_arr,
                          "cumulative_reward": np.cumsum(rewards_arr)})
    expected = data.extra.get("expected_reward") if data.extra else None
    truth = None
    if expected is not None and np.shape(expected) == pi.shape:
        truth = float((pi * np.asarray(expected, dtype=np.float64)).sum(axis=1).mean())
    return OfflineResult(curve, estimates, int(rewards_arr.size), data.n_rounds, report, pi=pi, truth=truth,
                         played_rounds=n_played)
