"""Private agents: a curator that touches data and an action rule that does not.

Joint differential privacy (JDP) in a contextual bandit rests on the billboard argument (Shariff & Sheffet 2018;
``spec/han-frank-wolfe.md`` §6, ``spec/private-oco-learners.md`` §7): if the parameters an agent publishes are
(ε, δ)-DP with respect to every user's data, and the action for user t is a function of the latest publication and
user t's *own* context only, then the actions of all other users are (ε, δ)-DP in user t's data.

dpbandit makes that structure explicit:

* :class:`Curator` sees the raw (observation, arm, reward) of each served user, owns the mechanisms and the privacy
  ledger, and publishes a *release* (read-only arrays) only through its mechanisms.
* ``PrivateAgent.action_rule`` is a **static** function of ``(release, observation, rng)``: it cannot reach the
  curator, the history or any other user's data, and ``rng`` is the exploration stream (never the privacy stream).

A private agent subclasses :class:`PrivateAgent`, implements ``_make_curator`` and the static ``action_rule``, and
reports its guarantee through ``privacy_report()``.

Every sensitivity of a private agent rests on public bounds, never on the data: :func:`check_context_bound` refuses
contexts beyond the declared bound, and :func:`reward_clip_range` is the one rule by which private agents clip
rewards (the environment's range when rewards are bounded, the mean bounds +- 4 noise standard deviations when they
are Gaussian), stated in their privacy reports. A clip that would map every possible reward to one value (an override
``c`` whose ``[-c, c]`` does not reach into the rewards' range) is refused: the agent would learn from nothing.

No silently meaningless agent: an agent whose constants leave a quantity it needs undefined refuses at construction,
in one line naming the parameter and the fix (:func:`require_finite_theta_bound`: DP-UCB's confidence width, the l1
radius of DP-HDB and FLIPHAT and the OCO learners' radius need a finite ``theta_bound``, which the own-data and
replay environments leave at ``inf`` unless the user states one), or uses a documented default that its privacy
report states (episodic ridge's ``gram_share``).
"""

from __future__ import annotations

import abc
import inspect
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbandit.agents.base import Agent
from dpbandit.envs.constants import BanditConstants
from dpbandit.seeding import stream
from dpbandit.validation import check_real

__all__ = ["Curator", "PrivateAgent", "check_context_bound", "context_l2_bound", "l2_bound_text", "REWARD_CLIP_STDS",
           "RewardClip", "read_only", "require_finite_theta_bound", "reward_clip_range", "reward_reach"]

def read_only(*arrays: np.ndarray) -> list[np.ndarray]:
    """The arrays of a release, made read-only in place (the action rule and the offline policies only read them)."""
    for a in arrays:
        a.setflags(write=False)
    return list(arrays)


#: Reach of the default reward clip for unbounded (Gaussian-noise) rewards, in noise standard deviations.
REWARD_CLIP_STDS = 4.0


class Curator(abc.ABC):
    """The data-touching half of a private agent.

    ``observe`` receives one served user's data; ``release`` returns the latest published parameters, which must be
    a function of the mechanisms' noisy outputs only (post-processing) and must not alias mutable internal state.
    """

    @abc.abstractmethod
    def observe(self, observation: np.ndarray, arm: int, reward: float) -> None:
        """Take the data of the user just served: its (K, d) observation, the arm played and the reward."""

    @abc.abstractmethod
    def release(self) -> Any:
        """The latest publication (read-only arrays or an immutable record)."""

    @abc.abstractmethod
    def privacy_report(self):
        """The :class:`~dpbandit.privacy.report.PrivacyReport` of the whole release stream."""


class PrivateAgent(Agent):
    """An agent whose actions depend on data only through a curator's releases (JDP by construction).

    Subclasses implement ``_make_curator(privacy_rng)`` and a ``@staticmethod action_rule(release, observation,
    rng) -> int``.
    """

    private = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        rule = inspect.getattr_static(cls, "action_rule", None)
        if rule is not None and not isinstance(rule, staticmethod):
            raise TypeError(
                f"{cls.__name__}.action_rule must be a @staticmethod of (release, observation, rng): the action "
                "rule may not see the agent (and through it the curator's raw data)"
            )

    @abc.abstractmethod
    def _make_curator(self, privacy_rng: np.random.Generator) -> Curator:
        """A fresh curator drawing its noise from ``privacy_rng``."""

    @staticmethod
    @abc.abstractmethod
    def action_rule(release: Any, observation: np.ndarray, rng: np.random.Generator) -> int:
        """The arm for the current user, from the latest release and this user's own observation only."""

    def reset(self, seed: int | None = None) -> None:
        self._privacy_seed = seed
        super().reset(seed)

    def _reset_state(self) -> None:
        self.curator = self._make_curator(stream(getattr(self, "_privacy_seed", 0), "privacy"))
        self._release = self.curator.release()

    @property
    def release(self) -> Any:
        """The latest publication, which the action rule sees (read-only; :mod:`dpbandit.offline.policies` reads the
        rule's action distribution from it)."""
        return self._release

    def act(self, observation: np.ndarray) -> int:
        return type(self).action_rule(self._release, observation, self.rng)

    def update(self, observation: np.ndarray, arm: int, reward: float, info: dict) -> None:
        self.curator.observe(observation, arm, reward)
        self._release = self.curator.release()

    def privacy_report(self):
        return self.curator.privacy_report()

    @property
    def first_release(self) -> int:
        """The user after whom the agent's releases first depend on data: the end of the first episode of an agent
        with an episode ``schedule`` (:class:`~dpbandit.agents.episode_schedule.EpisodeSchedule`), else 1 (a release
        after every user); agents that publish later otherwise override it.
        :func:`~dpbandit.experiment.checks.check_private_agent` and the bench audit stream at least this many users."""
        schedule = getattr(self, "schedule", None)
        return 1 if schedule is None else int(schedule.end(0))


#: Relative slack of :func:`check_context_bound` (rounding of a context normalised to the bound). The sensitivities
#: the private agents calibrate grow at most with ``L^2`` (a Gram matrix, a Hessian), and their noise scales are
#: rounded up by ``1 + 1e-9`` (the calibrations' ``_SAFETY``), so a row accepted at ``L (1 + CONTEXT_RTOL)`` must
#: satisfy ``(1 + CONTEXT_RTOL)^2 <= 1 + 1e-9`` for the stated guarantee to hold exactly (review finding F2: at
#: ``1e-9`` it was short by about ``1e-9`` in mu). ``tests/agents/test_private.py`` checks it.
CONTEXT_RTOL = 4e-10


def check_context_bound(observation: np.ndarray, norm: str, bound: float, *, rtol: float = CONTEXT_RTOL) -> None:
    """Raise ``ValueError`` if a row of ``observation`` exceeds the declared norm bound the calibration assumed, or
    holds a NaN (an infinite entry exceeds every bound)."""
    obs = np.asarray(observation, dtype=float)
    if obs.ndim == 1:  # one feature vector (the private agents' per-round check): no temporaries
        worst = float(np.abs(obs).max()) if norm == "linf" else math.sqrt(obs @ obs)
    else:
        norms = np.abs(obs).max(axis=-1) if norm == "linf" else np.sqrt((obs * obs).sum(axis=-1))
        worst = float(norms.max())
    if math.isnan(worst):
        raise ValueError("observation has a feature vector with a NaN entry: the privacy calibration assumes every "
                         f"||x||_{norm[1:]} <= context_bound = {bound:g}")
    if worst > bound * (1.0 + rtol):
        raise ValueError(
            f"observation has a feature vector with ||x||_{norm[1:]} = {worst:.6g} > context_bound = {bound:g}: the "
            "privacy calibration assumes the declared bound; clip contexts in the environment (normalize='clip')"
        )


def context_l2_bound(constants: BanditConstants) -> float:
    """``L`` with ``||x||_2 <= L`` for every feature vector: the bound itself for l2 contexts, ``sqrt(d)`` times it
    for l_inf contexts."""
    return constants.context_bound * (math.sqrt(constants.dim) if constants.context_norm == "linf" else 1.0)


def l2_bound_text(context_norm: str, context_bound: float, L: float) -> str:
    """The sentence of a privacy report stating the context bound ``L`` (:func:`context_l2_bound`) rests on."""
    if context_norm == "linf":
        return f"||x||_inf <= {context_bound:g}, so ||x||_2 <= L = sqrt(d) {context_bound:g} = {L:.6g}"
    return f"||x||_2 <= L = {L:.6g}"


@dataclass(frozen=True)
class RewardClip:
    """The interval ``[low, high]`` a private agent clips every reward to, and the ``rule`` that chose it (for the
    privacy report's sensitivity assumption). ``bound = max(|low|, |high|)`` bounds ``|reward|`` after clipping."""

    low: float
    high: float
    rule: str

    @property
    def bound(self) -> float:
        return max(abs(self.low), abs(self.high))

    def clip(self, reward: float) -> float:
        return min(max(float(reward), self.low), self.high)

    def describe(self) -> str:
        return f"rewards clipped to [{self.low:.6g}, {self.high:.6g}] ({self.rule})"


def reward_clip_range(constants: BanditConstants, override: float | None = None, *, name: str = "reward_clip",
                      n_std: float = REWARD_CLIP_STDS) -> RewardClip:
    """The reward clip of a private agent, from public constants only (the agent's sensitivities rest on it):

    * ``override`` c > 0 (the agent's own parameter, validated under ``name``): ``[-c, c]``; refused (``ValueError``)
      when ``[-c, c]`` misses the range below, so that every reward would be clipped to one value;
    * bounded rewards (Bernoulli links, an environment with ``reward_clip``): the environment's range
      ``[reward_low, reward_high]``, which clips nothing;
    * unbounded Gaussian rewards (identity link): ``[mean_low - n_std noise_std, mean_high + n_std noise_std]``. A
      reward's mean lies in ``[mean_low, mean_high]``, so it falls outside with probability at most
      ``2 Phi(-n_std)`` (6.3e-5 at the default 4); such rewards are clipped, so the sensitivities hold for every
      reward, at the price of a rare, small bias.

    DP-HDB and DP-UCB use it with their override parameters (``reward_bound``, ``reward_clip``); the OCO adapter
    passes ``bound`` as the learners' ``y_bound``.
    """
    if not isinstance(constants, BanditConstants):
        raise TypeError(f"constants must be a BanditConstants, got {type(constants).__name__}")
    n_std = check_real("n_std", n_std, low=0.0)
    low, high, rule = reward_reach(constants, n_std)
    if override is None:
        return RewardClip(low, high, rule)
    c = check_real(name, override, low=0.0, low_inclusive=False)
    if low < high and (c <= low or -c >= high):  # [-c, c] misses the rewards: every reward becomes one value
        value, needed = (c, low) if c <= low else (-c, -high)
        raise ValueError(f"{name} = {c:g} clips every reward to {value:g}: rewards lie in [{low:.6g}, {high:.6g}] "
                         f"({rule}), so the agent would learn nothing; pass {name} > {needed:.6g}, or leave it "
                         "unset to clip to that range")
    return RewardClip(-c, c, f"{name} = {c:g}")


def reward_reach(constants: BanditConstants, n_std: float = REWARD_CLIP_STDS) -> tuple[float, float, str]:
    """``(low, high, rule)``: the range the default clip of :func:`reward_clip_range` keeps, and its rule — the
    environment's reward range when it is bounded, else the mean bounds -/+ ``n_std`` noise standard deviations."""
    if math.isfinite(constants.reward_low) and math.isfinite(constants.reward_high):
        return constants.reward_low, constants.reward_high, "the environment's reward range"
    widen = n_std * constants.noise_std
    return (constants.mean_low - widen, constants.mean_high + widen,
            f"unbounded Gaussian rewards: mean bounds -/+ {n_std:g} noise_std = {constants.noise_std:g}")


def require_finite_theta_bound(constants: BanditConstants, agent: str, use: str, override: str = "") -> float:
    """``constants.theta_bound`` when it is finite; otherwise ``ValueError`` in one line naming ``theta_bound``, what
    ``agent`` needs it for (``use``) and the fixes (the environment's ``theta_bound``, replay's ``--theta-bound``,
    or the agent's own ``override`` parameter). The own-data and replay environments leave it at ``inf`` (unknown)
    unless the user states one: without it a confidence width or a projection radius is infinite."""
    if math.isfinite(constants.theta_bound):
        return constants.theta_bound
    norm = constants.theta_norm[1:]
    alt = f", or pass {override}" if override else ""
    raise ValueError(f"{agent} needs a finite theta_bound (the environment's bound on ||theta||_{norm}, for {use}), "
                     "got inf: pass theta_bound=... to the environment (its [env] table, or gymnasium.make(id, "
                     f"theta_bound=...)) or --theta-bound to dpbandit replay{alt}")
