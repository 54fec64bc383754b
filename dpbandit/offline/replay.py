"""Offline evaluation of a (learning, possibly private) agent on logged data: replay, IPS and doubly robust.

One pass over the log (in its order, or shuffled with ``shuffle=True``). At logged round i the agent sees the
context ``x_i`` (every arm's row, disjoint structure) and picks ``b_i``; the log holds action ``a_i``, reward ``r_i``
and propensity ``p_i``. Then:

* **Replay** (rejection sampling, Li, Chu, Langford & Wang, WSDM 2011): when ``b_i = a_i`` the event is
  *accepted* with probability ``p_min / p_i`` (``p_min`` = the smallest logged propensity; always 1 for a uniform
  log, which is Li et al.'s method); the agent then learns ``(x_i, a_i, r_i)`` and ``r_i`` is the reward of its next
  round. Otherwise the event is discarded and the agent learns nothing. Whatever the agent does,
  ``P(accept | x) = p_min``, so accepted users are i.i.d. draws of the logged context law and, given acceptance,
  the action follows the agent's policy: the accepted rounds are distributed exactly as an online run of the agent
  on the logged population (for a stationary log). The replay estimate is the mean reward per accepted round.
* **IPS** (inverse propensity scoring) on every logged round of the same pass: ``r_i 1{b_i = a_i} / p_i``.
* **Doubly robust** (Dudik, Langford & Li, ICML 2011): ``q(x_i, b_i) + (r_i - q(x_i, a_i)) 1{b_i = a_i} / p_i``
  with a cross-fitted ridge reward model ``q`` (:mod:`dpbandit.offline.reward_model`).

Given the past, the IPS and DR terms of round i are unbiased for the value (expected reward per round) of the
agent's policy at that moment, so their means estimate the average value of the agent's policies along its replay
trajectory; the replay mean estimates its average reward per round over its accepted rounds. All three are reported
with Student-t 95% intervals over rounds (a martingale-difference approximation). IPS and DR need logged
propensities; replay needs them too unless the log is declared uniform (``uniform=True`` sets ``p_i = 1/K``).

Privacy, offline (:data:`OFFLINE_PRIVACY_SCOPE`): the agent's privacy report describes it as a mechanism over the
users it learned from — the accepted events — under the report's neighbouring relation. It is not a guarantee for
everyone in the log: whether a logged user is accepted depends on that user's logged action and context, so one
changed record can add or remove an accepted round, which a replace-one guarantee does not cover. The estimates
themselves (replay mean, IPS, DR) read raw logged rewards: they are numbers for the analyst, not private releases.

Seeding: the agent is reset with the job seed (its ``"exploration"`` and ``"privacy"`` streams); the acceptance
coins and the optional shuffle use the seed's ``"reward_noise"`` and ``"contexts"`` streams (the randomness an
environment would otherwise supply).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dpbandit.agents.base import Agent
from dpbandit.envs.constants import BanditConstants
from dpbandit.envs.contexts import CONTEXT_NORMS, NORMALIZE_MODES, normalise
from dpbandit.offline.logged import LoggedData
from dpbandit.offline.reward_model import cross_fitted_rewards
from dpbandit.seeding import stream
from dpbandit.validation import check_choice, check_int, check_real

__all__ = ["ReplayEnv", "OfflineResult", "evaluate_offline", "OFFLINE_PRIVACY_SCOPE", "ESTIMATORS",
           "MIN_EXPECTED_ACCEPTED", "check_replayable", "expected_accepted"]

ESTIMATORS: tuple[str, ...] = ("replay", "ips", "dr")
#: Fewest accepted rounds a full replay pass must expect (``n_rounds * p_min``); below it replay is refused.
MIN_EXPECTED_ACCEPTED = 10.0

#: What a private agent's report means when it is evaluated on logged data (also in every result).
OFFLINE_PRIVACY_SCOPE = (
    "offline: the privacy report covers the accepted (replayed) users only, under its neighbouring relation; a "
    "changed log record can add or remove an accepted round, which replace-one does not cover; the replay/IPS/DR "
    "estimates read raw logged rewards and are not private releases"
)


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
    """The logged propensities, or ``1/K`` for a log declared uniform; ``ValueError`` when there are none."""
    if data.pscore is not None:
        return data.pscore
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


@dataclass(frozen=True)
class OfflineResult:
    """One offline evaluation: ``curve`` (per accepted round: ``t, reward, cumulative_reward``), ``estimates``
    (estimator -> ``(mean, ci95 half-width, n)``), ``accepted``, ``logged`` (rounds consumed), the privacy
    report (dict or None) and its offline ``privacy_scope``."""

    curve: pd.DataFrame
    estimates: dict[str, tuple[float, float, int]]
    accepted: int
    logged: int
    privacy_report: dict | None
    privacy_scope: str = OFFLINE_PRIVACY_SCOPE


def _mean_ci(values: np.ndarray) -> tuple[float, float, int]:
    n = values.size
    if n == 0:
        return float("nan"), float("nan"), 0
    if n == 1:
        return float(values[0]), float("inf"), 1
    return float(values.mean()), float(stats.t.ppf(0.975, n - 1) * values.std(ddof=1) / np.sqrt(n)), n


def evaluate_offline(data: LoggedData, agent: Agent, seed: int, *, uniform: bool = False, shuffle: bool = False,
                     normalize: str = "clip", reward_model: np.ndarray | None = None,
                     estimators: tuple[str, ...] = ESTIMATORS) -> OfflineResult:
    """Replay / IPS / DR evaluation of ``agent`` on ``data`` (see the module docstring).

    The agent's constants (build it with :meth:`ReplayEnv.from_logged`) state the replay horizon (accepted rounds;
    the pass stops there or at the end of the log), the context bound (contexts are brought into it with
    :func:`~dpbandit.envs.contexts.normalise`, mode ``normalize``) and the reward range (rewards outside it are
    refused: the agent's calibration rests on it). ``uniform=True`` declares a uniformly random logging policy when
    no propensities were logged. ``reward_model`` ``(n, K)``: DR's ``q`` (default: cross-fitted ridge). With
    ``"replay"`` among the ``estimators``, a log whose smallest propensity leaves fewer than
    :data:`MIN_EXPECTED_ACCEPTED` expected accepted rounds is refused before any work (:func:`check_replayable`).
    """
    if not isinstance(data, LoggedData):
        raise TypeError(f"data must be a LoggedData, got {type(data).__name__}")
    if not isinstance(agent, Agent):
        raise TypeError(f"agent must be a dpbandit Agent, got {type(agent).__name__}")
    seed = check_int("seed", seed, low=0)
    check_choice("normalize", normalize, NORMALIZE_MODES)
    for name in estimators:
        check_choice("estimator", name, ESTIMATORS)
    c = agent.constants
    if (c.n_arms, c.dim) != (data.n_actions, data.dim):
        raise ValueError(f"agent has (K, d) = {(c.n_arms, c.dim)} but the log has {(data.n_actions, data.dim)}: "
                         "build it with ReplayEnv.from_logged(data, ...)")
    if data.reward.min() < c.reward_low or data.reward.max() > c.reward_high:
        raise ValueError(f"logged rewards lie in [{data.reward.min():g}, {data.reward.max():g}], outside the stated "
                         f"reward_range [{c.reward_low:g}, {c.reward_high:g}] the agent is calibrated to: widen "
                         "reward_range or clip the rewards")
    pscore = _propensities(data, uniform)
    if "replay" in estimators:
        check_replayable(data, uniform)
    order = stream(seed, "contexts").permutation(data.n_rounds) if shuffle else np.arange(data.n_rounds)
    coins = stream(seed, "reward_noise").random(data.n_rounds)
    accept_prob = pscore.min() / pscore
    contexts = normalise(data.context, c.context_norm, c.context_bound, normalize)
    q = None
    if "dr" in estimators:
        q = cross_fitted_rewards(data) if reward_model is None else np.asarray(reward_model, dtype=np.float64)
        if q.shape != (data.n_rounds, data.n_actions):
            raise ValueError(f"reward_model must have shape {(data.n_rounds, data.n_actions)}, got {q.shape}")

    agent.reset(seed)
    horizon, k = c.horizon, data.n_actions
    rewards, ips, dr = [], [], []
    act, update = agent.act, agent.update
    used = 0
    for i in order:
        if len(rewards) == horizon:
            break
        used += 1
        obs = np.broadcast_to(contexts[i], (k, data.dim))
        b = act(obs)
        a, r, p = int(data.action[i]), float(data.reward[i]), float(pscore[i])
        match = b == a
        ips.append(r / p if match else 0.0)
        if q is not None:
            dr.append(q[i, b] + ((r - q[i, a]) / p if match else 0.0))
        if match and coins[i] < accept_prob[i]:
            update(obs, a, r, {})
            rewards.append(r)
    rewards_arr = np.asarray(rewards)
    curve = pd.DataFrame({"t": np.arange(1, rewards_arr.size + 1), "reward": rewards_arr,
                          "cumulative_reward": np.cumsum(rewards_arr)})
    estimates = {"replay": _mean_ci(rewards_arr), "ips": _mean_ci(np.asarray(ips)), "dr": _mean_ci(np.asarray(dr))}
    report = agent.privacy_report()
    return OfflineResult(curve, {k_: estimates[k_] for k_ in estimators}, int(rewards_arr.size), used,
                         None if report is None else report.to_dict())
