"""Online-convex-optimisation learners as contextual-bandit agents (``spec/private-oco-learners.md`` §7).

:class:`OCOAgent` keeps one registered streaming learner (:data:`dpbandit.optim.registry.LEARNERS`) per arm, on
the squared loss ``(1/2)(r - <x, theta>)^2`` or the logistic loss, and acts greedily (or epsilon-greedily) on the
learners' released parameters: ``a_t = argmax_a <x_{t,a}, theta_hat_a>``.

Feedback modes:

* ``"bandit"``: only the learner of the played arm receives the user's sample; every other learner receives the
  synthetic zero sample ``update(zeros(d), 0)`` (a zero leaf for tree learners, a zero-gradient report for the
  local-DP learners), so that all learners share one clock and the tree layout never depends on the data (§7,
  feeding option 1). With local-DP learners the user thus sends one randomised report to every arm, and the
  server cannot tell from the reports which arm was played.
* ``"full"``: every arm's learner receives its realised reward from ``info["rewards"]`` (an environment made with
  ``full_information=True``); the fed losses are then genuine full-information OCO losses (feeding option 2).

Privacy (§7, ``spec/dp-testing-and-accounting.md`` §8). The agent is a
:class:`~dpbandit.agents.private.PrivateAgent`: the curator owns the learners; the action rule is a static function
of the latest release (the stacked iterates, the billboard) and the current user's own features. One user is one
round's contexts and rewards; neighbours replace one user. A neighbour changes the samples of

* at most two learners in bandit mode (the two arms the two versions of the user play), each by a real <-> zero
  change, or one learner by a replace-one change (same arm). When the learner class declares
  ``zero_sample_halves_sensitivity = True``, a real <-> zero change costs at most half of a replace-one change in
  the learner's own accounting (half the sensitivity for pure-DP noise, whose privacy loss is linear in the shift;
  at most half of the Gaussian mu^2 for Gaussian noise), so the two-learner case costs no more than the
  same-learner case and one copy of the learner's ledger is charged (§7 "Calibrate every learner's own tree with
  Delta_2 = 2L and the full epsilon"; ``spec/errata.md`` E6). Declared, with the derivation at the class, by
  PFTAL, WDP-COCOP, WDP-COCOL, PQFTL and the local-DP learners; PIGD/PGIGA (POCP) are charged two copies (§7:
  "For POCP two learners are affected");
* all K learners in full-information mode.

The agent's ledger composes that many copies of one learner's ledger. The learner's guarantee is routed as the
table of §7 says: "DP" -> "JDP" (billboard lemma: the other users' actions are post-processing of the releases),
"window-DP" -> "window-JDP" (users older than the window are not protected), "LDP" -> "LDP" per user (randomiser
level; implies DP of everything downstream). The report's ``mechanisms``, ``composition`` and ``note`` name the
learner, the feedback mode and the routing; guarantee types are never merged.

Warning (§7): the DP noise explores implicitly but gives no bandit-regret guarantee; the learners' OCO regret bounds
apply to the losses they are fed.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from typing import Any, ClassVar

import numpy as np

from dpbandit.agents.baselines import argmax_random_tie, check_arm
from dpbandit.agents.oco_curator import LearnersCurator, OCORelease
from dpbandit.agents.private import PrivateAgent, require_finite_theta_bound, reward_clip_range
from dpbandit.envs.constants import BanditConstants
from dpbandit.optim.losses import LogisticLoss, Loss, SquaredLoss
from dpbandit.optim.protocol import StreamingLearner
from dpbandit.optim.registry import (
    learner_class,
    learner_hyperparameters,
    make_learner,
    requires_strong_convexity,
    with_known_constants,
)
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.report import PrivacyReport
from dpbandit.validation import check_choice, check_delta, check_epsilon, check_probability, check_real

__all__ = ["FEEDBACK", "ROUTE", "DEFAULT_MU", "OCORelease", "OCOAgent"]

#: Feedback modes of the adapter.
FEEDBACK: tuple[str, ...] = ("bandit", "full")
#: Learner guarantee -> guarantee of the agent's actions (``spec/private-oco-learners.md`` §7 table).
ROUTE: dict[str, str] = {"DP": "JDP", "window-DP": "window-JDP", "LDP": "LDP", "none": "none"}
#: Ridge given to strongly convex learners when ``mu`` is not set.
DEFAULT_MU = 0.1
_UNIT = "one user = one round's contexts and rewards (x_{t,a}, r_{t,a})_a; neighbours replace one round"
_LOSSES: dict[str, type[Loss]] = {"squared": SquaredLoss, "logistic": LogisticLoss}
_PRIVACY_KEYS = frozenset({"epsilon", "delta", "tau"})
#: Per-learner epsilons found by OCOAgent._split, per (learner, parameters, problem, feedback, budget).
_SPLITS: dict[tuple, float] = {}


class OCOAgent(PrivateAgent):
    """One registered OCO learner per arm, greedy or epsilon-greedy on the released parameters.

    Parameters
    ----------
    learner:
        A name of :data:`dpbandit.optim.registry.LEARNERS` (e.g. ``"ldp-coordinatewise"``).
    loss:
        ``"squared"`` (``(1/2)(r - <x, theta>)^2``, §7), ``"logistic"`` (rewards in {0, 1}), or None: squared for
        the identity link, logistic for the logistic and probit links.
    feedback:
        ``"bandit"`` (chosen arm only) or ``"full"`` (every arm's realised reward; needs an environment made with
        ``full_information=True``).
    exploration:
        Probability in [0, 1] of a uniformly random arm (epsilon-greedy, drawn from the exploration stream);
        0 is greedy.
    mu:
        Ridge ``mu >= 0`` of the per-arm losses ``loss + (mu/2)||theta||^2`` (§7: the ridge supplies the strong
        convexity). None: :data:`DEFAULT_MU` for learners that need strong convexity (PIGD, PFTAL, ...), the
        learner's own default otherwise (0 for the local-DP learners).
    learner_params:
        The learner's own hyperparameters (``dpbandit.optim.registry.learner_hyperparameters(learner)``), e.g.
        ``{"window": 64}``; ``dim``, ``horizon``, ``loss`` and ``rng`` are set by the agent, and the environment's
        public bounds (:meth:`known_constants`) fill ``x_bound``, ``y_bound`` and ``radius`` when the learner takes
        them. The learner's privacy parameters (``epsilon``, ``delta``, ``tau``) may be set here only with
        ``epsilon=None``. A learner with a ``radius`` on an environment whose ``theta_bound`` is infinite (own-data
        and replay environments, unless stated) is refused in one line unless ``learner_params`` sets ``radius``.
    epsilon, delta:
        The agent's privacy budget, with the convention of the other private agents: ``epsilon = 1`` by default,
        ``inf`` = noise off (guarantee "none"); ``delta`` default ``1/T`` for learners with Gaussian noise
        (pure-DP learners keep delta = 0; local-DP learners are pure and refuse a delta). The learners are
        calibrated so that the agent's *composed* report states exactly this epsilon (:meth:`_calibrate`): a
        local-DP learner gets ``tau_j = epsilon / (d * copies)`` per coordinate, a central one the largest
        per-learner epsilon whose ``copies``-fold composition is at most ``epsilon``. ``epsilon=None`` uses the
        privacy parameters set in ``learner_params`` as given; leaving them unset there is refused (the learners'
        own defaults are budgets nobody chose: ``tau = 1`` per coordinate is ``d``-LDP, effectively no privacy).
    """

    name: ClassVar[str] = "oco"
    #: The guarantee type (JDP, window-JDP or LDP) follows the learner: a frontier does not sweep it by default.
    guarantee_from_learner: ClassVar[bool] = True

    def __init__(self, constants: BanditConstants, learner: str = "ldp-coordinatewise", loss: str | None = None,
                 feedback: str = "bandit", exploration: float = 0.0, mu: float | None = None,
                 learner_params: dict | None = None, epsilon: float | None = 1.0, delta: float | None = None):
        if not isinstance(constants, BanditConstants):
            raise TypeError(f"constants must be a BanditConstants, got {type(constants).__name__}")
        self.learner_name = learner
        cls = learner_class(learner)
        if loss is None:
            loss = "squared" if constants.link == "identity" else "logistic"
        self.loss_name = check_choice("loss", loss, tuple(_LOSSES))
        self.feedback = check_choice("feedback", feedback, FEEDBACK)
        self.exploration = check_probability("exploration", exploration)
        if learner_params is None:
            learner_params = {}
        if not isinstance(learner_params, dict):
            raise TypeError(f"learner_params must be a dict of the learner's hyperparameters, got {learner_params!r}")
        reserved = {"dim", "horizon", "loss", "rng", "mu"} & set(learner_params)
        if reserved:
            raise TypeError(f"learner_params must not set {sorted(reserved)}: the agent sets dim, horizon, loss "
                            f"(use loss=), mu (use mu=) and rng; accepted: "
                            f"{', '.join(learner_hyperparameters(learner))}")
        if mu is None:
            mu = DEFAULT_MU if requires_strong_convexity(learner) else None
        elif "mu" not in learner_hyperparameters(learner):
            raise TypeError(f"mu: learner {learner!r} takes no ridge parameter")
        self.mu = None if mu is None else check_real("mu", mu, low=0.0)
        self.learner_params = dict(learner_params) if self.mu is None else {**learner_params, "mu": self.mu}
        if "radius" in learner_hyperparameters(learner) and "radius" not in learner_params:
            require_finite_theta_bound(constants, f"oco (learner {learner!r})", "the radius of the learner's domain",
                                       "learner_params={'radius': ...}")
        self._loss = SquaredLoss(scale=0.5) if self.loss_name == "squared" else LogisticLoss()
        self._learner_cls = cls
        self.constants, self.n_arms, self.dim = constants, constants.n_arms, constants.dim
        self.epsilon = None if epsilon is None else check_epsilon(epsilon, allow_inf=True)
        self.delta = None if delta is None else check_delta(delta, allow_zero=True)
        self.learner_params = {**self.learner_params, **self._calibrate()}
        super().__init__(constants)  # builds the first curator: invalid learner parameters raise here
        self.private = self.curator.privacy_report().guarantee != "none"

    def memory_estimate(self) -> int:
        """One learner per arm: a tree of about ``log2 T + 1`` stored ``(d,)`` nodes, or ``(d, d)`` nodes for the
        quadratic follow-the-leader learners (PQFTL keeps the Gram matrix), plus work arrays."""
        from dpbandit.optim.quadratic_ftl import PQFTL

        levels = max(self.constants.horizon, 2).bit_length() + 1
        node = self.dim * self.dim if issubclass(self._learner_cls, PQFTL) else self.dim
        return 8 * self.n_arms * ((levels + 4) * node + 8 * (self.dim + 1))

    @classmethod
    def from_env(cls, env: Any, **params: Any) -> OCOAgent:
        """Build the agent for a dpbandit environment; full-information feedback is refused up front when the
        environment does not reveal every arm's reward."""
        if params.get("feedback", "bandit") == "full":
            config = getattr(env.unwrapped, "config", {})
            if not config.get("full_information", False):
                raise ValueError("feedback='full' needs every arm's realised reward: make the environment with "
                                 "full_information=True (e.g. gymnasium.make(id, full_information=True)), or use "
                                 "feedback='bandit'")
        return cls(env.unwrapped.constants, **params)

    # -- budget ---------------------------------------------------------------------------------------------------

    def _calibrate(self) -> dict[str, Any]:
        """The learner's privacy parameters for the agent's budget (see the class docstring)."""
        accepted = learner_hyperparameters(self.learner_name)
        given = sorted(_PRIVACY_KEYS & set(self.learner_params))
        name = self.learner_name
        if self.epsilon is None:
            missing = [k for k in ("epsilon", "tau") if k in accepted and k not in self.learner_params]
            if missing:
                raise ValueError(
                    f"epsilon=None uses the learner's own privacy parameters, but learner_params does not set "
                    f"{missing[0]!r}: learner {name!r}'s default is a budget nobody chose"
                    + (f" (tau = 1 per coordinate is LDP epsilon = d = {self.dim}, effectively no privacy)"
                       if missing[0] == "tau" else "")
                    + "; pass epsilon= (default 1) or set it explicitly in learner_params")
            if self.delta is not None:
                raise TypeError("delta: with epsilon=None set the learner's delta in learner_params")
            return {}
        if given:
            raise TypeError(f"learner_params must not set {given} when epsilon is given: the agent calibrates the "
                            "learner to its budget (epsilon=, delta=); pass epsilon=None to set them yourself")
        if "tau" in accepted:  # local DP: pure, one report per learner and copy
            if self.delta not in (None, 0.0):
                raise ValueError(f"delta must be None for the local-DP learner {name!r} (pure epsilon-LDP), "
                                 f"got {self.delta!r}")
            return {"tau": self.epsilon / (self.dim * self._copies()) if math.isfinite(self.epsilon) else math.inf}
        if "epsilon" not in accepted:
            if math.isfinite(self.epsilon):
                raise ValueError(f"learner {name!r} adds no privacy noise: pass epsilon=inf for a non-private run "
                                 f"(got epsilon={self.epsilon:g}), or choose a private learner")
            return {}
        params: dict[str, Any] = {}
        if "delta" in accepted:
            default = inspect.signature(self._learner_cls.__init__).parameters["delta"].default
            if self.delta is not None:
                params["delta"] = self.delta
            elif default is not None:  # Gaussian-noise learners: the private agents' delta = 1/T
                params["delta"] = 1.0 / self.constants.horizon
        if not math.isfinite(self.epsilon) or self._copies() == 1:
            return {**params, "epsilon": self.epsilon}
        return {**params, "epsilon": self._split(params)}

    def _split(self, params: dict[str, Any]) -> float:
        """The largest per-learner epsilon whose composition over the agent's copies is at most ``self.epsilon``
        (bisection on the agent's accounted epsilon, which increases with the learner's; cached per problem)."""
        key = (self.learner_name, repr(sorted(self.learner_params.items())), repr(sorted(params.items())),
               self.constants, self.feedback, self.epsilon)
        if key in _SPLITS:
            return _SPLITS[key]
        c = self.constants
        base = with_known_constants(self.learner_name, {**self.learner_params, **params}, **self.known_constants())

        def composed(eps: float) -> float:
            learner = make_learner(self.learner_name, c.dim, c.horizon, loss=self._loss, rng=np.random.default_rng(0),
                                   **{**base, "epsilon": eps})
            return self._agent_report(learner).epsilon

        low, high = self.epsilon / self._copies(), self.epsilon  # basic composition is always within budget
        if composed(high) <= self.epsilon:
            low = high
        for _ in range(40):
            if high - low <= 1e-9 * self.epsilon:
                break
            mid = 0.5 * (low + high)
            low, high = (mid, high) if composed(mid) <= self.epsilon else (low, mid)
        _SPLITS[key] = low
        return low

    # -- curator --------------------------------------------------------------------------------------------------

    def known_constants(self) -> dict[str, float]:
        """Public bounds of the environment a learner may calibrate to (passed when it accepts them and
        ``learner_params`` does not set them): ``x_bound`` (``||x||_2``), ``y_bound`` (``|r|`` after the private
        agents' reward clip, :func:`~dpbandit.agents.private.reward_clip_range`: for unbounded Gaussian rewards the
        mean bounds -/+ 4 noise standard deviations — learners clip the rare larger rewards, their sensitivities hold
        for any input) and ``radius`` (``||theta||_2``; ``||.||_2 <= ||.||_1``)."""
        c = self.constants
        root_d = math.sqrt(c.dim)
        return dict(x_bound=c.context_bound * (root_d if c.context_norm == "linf" else 1.0),
                    y_bound=reward_clip_range(c).bound,
                    radius=c.theta_bound * (root_d if c.theta_norm == "linf" else 1.0))

    def _make_curator(self, privacy_rng: np.random.Generator) -> LearnersCurator:
        """Fresh learners (one per arm, all drawing from ``privacy_rng``) and the agent's report."""
        c = self.constants
        params = with_known_constants(self.learner_name, self.learner_params, **self.known_constants())
        learners = [make_learner(self.learner_name, c.dim, c.horizon, loss=self._loss, rng=privacy_rng, **params)
                    for _ in range(c.n_arms)]
        return LearnersCurator(learners, self.feedback, self.exploration, self._agent_report(learners[0]))

    @property
    def learners(self) -> list[StreamingLearner]:
        """The current curator's learners (one per arm)."""
        return self.curator.learners

    def update(self, observation: np.ndarray, arm: int, reward: float, info: dict) -> None:
        arm = check_arm(arm, self.n_arms)
        if self.feedback == "full":
            rewards = info.get("rewards") if isinstance(info, dict) else None
            if rewards is None:
                raise ValueError("feedback='full' needs info['rewards'] (every arm's realised reward): make the "
                                 "environment with full_information=True, or use feedback='bandit'")
            self.curator.observe_all(observation, np.asarray(rewards, dtype=float))
        else:
            self.curator.observe(observation, arm, reward)
        self._release = self.curator.release()

    # -- action rule (sees only the billboard and this user's features) -------------------------------------------

    @staticmethod
    def action_rule(release: OCORelease, observation: np.ndarray, rng: np.random.Generator) -> int:
        """Epsilon-greedy on ``<x_{t,a}, theta_hat_a>`` (greedy when ``release.exploration == 0``; the logistic link
        is monotone, so the linear score ranks arms as the mean reward does)."""
        n_arms = release.thetas.shape[0]
        if release.exploration > 0.0 and rng.random() < release.exploration:
            return int(rng.integers(n_arms))
        return argmax_random_tie(np.einsum("kd,kd->k", observation, release.thetas), rng)

    # -- privacy --------------------------------------------------------------------------------------------------

    def _copies(self) -> int:
        """How many learners one user's data can change (see the module docstring)."""
        if self.feedback == "full":
            return self.n_arms
        return 1 if self._zero_sample_halves() else min(2, self.n_arms)

    def _zero_sample_halves(self) -> bool:
        """Whether the learner class declares that a real <-> zero sample change costs at most half of a
        replace-one change (module docstring)."""
        return getattr(self._learner_cls, "zero_sample_halves_sensitivity", False) is True

    def _agent_report(self, learner: StreamingLearner) -> PrivacyReport:
        """The agent's report from one (freshly built) learner's report and ledger."""
        base = learner.privacy_report()
        described = f"{self.learner_name} x {self.n_arms} arms, {self.feedback} feedback"
        if base is None or base.guarantee == "none":
            note = (base.note + "; " if base is not None and base.note else "")
            return dataclasses.replace(
                PrivacyReport.non_private(self.name, note=f"{note}learner {self.learner_name!r} is not private "
                                                          f"({self.feedback} feedback): no guarantee"),
                privacy_unit=_UNIT, mechanisms=(described,))
        guarantee = ROUTE[base.guarantee]
        if getattr(learner, "ledger", None) is None:
            raise ValueError(f"learner {self.learner_name!r} reports guarantee {base.guarantee!r} but keeps no ledger: "
                             "the agent cannot compose its releases")
        copies = self._copies()
        ledger = PrivacyLedger(neighboring=learner.ledger.neighboring, unit=_UNIT)
        for _ in range(copies):  # the learner's unit (one sample) is one arm's part of the agent's unit (one user)
            for event in learner.ledger.events:
                ledger.add_event(event)
        if self.feedback == "full":
            why = f"full information: every one of the K = {self.n_arms} learners sees the user's data"
        elif self._zero_sample_halves():
            why = ("bandit feedback with zero samples for the arms not played: a neighbour replaces one learner's "
                   "sample, or changes two learners' samples real <-> zero, each change costing at most half of a "
                   "replace-one change (the learner's zero_sample_halves_sensitivity; "
                   "docs/derivations.md#oco-7)")
        else:
            why = (f"bandit feedback with zero samples for the arms not played: a neighbour changes the samples of "
                   f"at most {copies} learners")
        routing = {
            "JDP": "JDP by the billboard lemma: the released iterates are DP, each action depends on them and the "
                   "user's own features only",
            "window-JDP": f"window-JDP, W={base.window}: only the users of the last W rounds are protected; older "
                          "users have no guarantee (docs/derivations.md#oco-3); never comparable to JDP",
            "LDP": "LDP, per-user epsilon_t at the randomiser level (each user sends one report to every learner); "
                   "no trusted curator. Warning: logging the action a_t centrally leaks x_t outside the LDP "
                   "guarantee (docs/derivations.md#oco-7)",
        }[guarantee]
        assumption = base.sensitivity_assumption
        if "y_bound" in learner_hyperparameters(self.learner_name) and "y_bound" not in self.learner_params:
            assumption += f"; y_bound from the agents' reward clip: {reward_clip_range(self.constants).describe()}"
        report = ledger.report(base.delta, guarantee=guarantee, sensitivity_assumption=assumption,
                               note=f"{routing}. Learner: {base.note}" if base.note else routing)
        return dataclasses.replace(
            report,
            mechanisms=(described, *report.mechanisms),
            composition=f"{self.feedback} feedback: {copies} cop{'y' if copies == 1 else 'ies'} of the learner's "
                        f"ledger ({why}); {report.composition}",
        )

    def __repr__(self) -> str:
        return (f"OCOAgent(K={self.n_arms}, d={self.dim}, learner={self.learner_name!r}, loss={self.loss_name!r}, "
                f"feedback={self.feedback!r}, exploration={self.exploration}, epsilon={self.epsilon})")
