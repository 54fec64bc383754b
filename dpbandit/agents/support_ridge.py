"""Episodic ridge on a privately selected support: a sparse private bandit in two stages (derivation
``docs/episodic-agents.md`` §8). (epsilon, delta)-JDP.

**Stage 1: support selection** (the first ``n_sel`` users, a public number). The release is empty, so the action
rule plays uniformly at random. The curator keeps, per model m (one in the shared structure, one per arm in the
disjoint one), the clipped marginal correlations

    v_m = sum_{i in m} clip(x_i, -tau, tau) (y_i - c)      (d,),   c = (lo + hi)/2 the reward clip's midpoint,

(every entry clipped to a public tau <= x_max: :func:`default_entry_clip`)

and after user ``n_sel`` releases, per model, the s' coordinates of the Gumbel top-s' of ``|v_m|``
(:func:`~dpbandit.privacy.peeling.gumbel_support`: s' exponential-mechanism picks without replacement, no values),
then forgets ``v``. Under uniform play and s-sparse theta_m, ``E v_m / n_m = Cov(x, mu(x^T theta_m))`` is largest on
the support of theta_m and on the coordinates correlated with it, so s' >= s picks keep most of the signal.

**Stage 2: estimation** (users ``n_sel + 1 .. T``). Episodic private ridge (:mod:`dpbandit.agents.episodic_ridge`,
its curator and action rule unchanged) on the projected rows ``x[S_m]`` (s',): the user's rows are projected on the
released supports (row a on S_a, disjoint; every row on S, shared) before they reach it. Its noise, noise edge and
row clip are those of an s'-dimensional problem: ``L^2`` falls from ``d x_max^2`` to ``s' x_max^2`` (before the row
clip) and the edge ``2 sigma_G sqrt(d)`` to ``2 sigma_G sqrt(s')``.

**Privacy** (replace one user; rows ``||x||_inf <= x_max`` checked, rewards clipped to [lo, hi],
``B_c = (hi - lo)/2``). Selection: ``||v_m - v'_m||_inf <= 2 tau B_c =: Delta`` for a user who stays on model m
(``Delta/2`` on each of two models for a user moved between arms), so the scores ``|v_j|`` have sensitivity Delta
and each pick is ``2 Delta / b``-bounded range, ``Delta^2/(2 b^2)``-zCDP; s' picks: ``rho_sel = s' Delta^2/(2 b^2)``
(a moved user: ``2 s' (Delta/2)^2/(2 b^2) = rho_sel/2``). Calibration ``b = Delta sqrt(s'/(2 rho))``. Estimation:
each ridge release is one Gaussian mechanism of multiplier ``mu = sqrt(2 rho)`` (``calibration="zcdp"``), i.e.
rho-zCDP, on rows of the declared domain (``||x[S]||_inf <= x_max``). Every user is in exactly one release (the
selection or one ridge episode), and each release uses earlier ones only as public inputs (the supports are public
once released), so by parallel composition (``docs/episodic-agents.md`` §1.3) the stream is
``max(rho_sel, rho_est) = rho``-zCDP, rho = rho*(epsilon, delta) by the CKS inversion; greedy actions on it are
(epsilon, delta)-JDP (billboard lemma).

**Public choices** (functions of K, d, T, epsilon, delta, the declared sparsity s and the bounds only; refused when
meaningless): ``s' = min(2 s, d // 2)`` (:func:`default_support_size`), ``n_sel`` from
:func:`default_selection_users`, the entry clip tau of the scores from :func:`default_entry_clip`.

**Noise off** (``epsilon = inf``): by default (``noise_off_form="greedy"``) no stage and no episode: every user is
kept, and after each the supports are re-selected (the s' largest ``|v_m|`` over all users so far, without noise) and
ridge re-fitted on them from all users so far, with greedy play from the first user
(:mod:`~dpbandit.agents.support_greedy`, §8.7): the non-private counterpart of the two stages, comparable with greedy
ridge and the LASSO bandit. ``noise_off_form="staged"`` keeps the two stages with the noise set to zero (the exact
top-s' after n_sel uniform users, then noise-free episodic ridge), to isolate the cost of the noise alone. Private
runs (finite epsilon) ignore ``noise_off_form``.

Shapes: observation (K, d); M = 1 (shared) or K (disjoint) models; supports (M, s') int.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from dpbandit.agents.baselines import argmax_random_tie, check_arm
from dpbandit.agents.episodic import EpisodicBudget
from dpbandit.agents.episodic_ridge import EpisodicRidge, EpisodicRidgeRelease
from dpbandit.agents.private import Curator, PrivateAgent, check_context_bound, read_only, reward_clip_range
from dpbandit.agents.support_greedy import GreedySupportCurator, greedy_memory, top_support
from dpbandit.envs.constants import BanditConstants
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.peeling import gumbel_support
from dpbandit.validation import check_choice, check_int, check_real

__all__ = ["NOISE_OFF_FORMS", "SupportRidge", "SupportRidgeCurator", "SupportRidgeRelease", "SupportSelection",
           "default_selection_users", "default_support_size", "project_rows"]

#: The forms of support_ridge with the noise off (module docstring).
NOISE_OFF_FORMS: tuple[str, ...] = ("greedy", "staged")
#: The estimation parameters the noise-off greedy form uses (the others configure the private form's episodes).
GREEDY_RIDGE_PARAMS = frozenset({"ridge", "centre"})

_SAFETY = 1.0 + 1e-9  # the selection scale rounded up so the target survives floating-point error


def default_support_size(dim: int, sparsity: int) -> int:
    """s' = min(2 s, d // 2): room for the support's correlated neighbours (correlated contexts spread a coordinate's
    marginal correlation to its neighbours) while keeping the estimation problem at most half as wide as d; each
    extra coordinate costs selection noise (b grows as sqrt(s')) and estimation noise (§8.3)."""
    return min(2 * check_int("sparsity", sparsity, low=1), check_int("dim", dim, low=2) // 2)


def default_selection_users(horizon: int, n_models: int, dim: int, sparsity: int, support_size: int,
                            rho: float) -> int:
    """n_sel (§8.3): ``min(T // 4, max(n_etc, n_priv))`` with

    * ``n_etc = ceil((M s^2 ln d)^(1/3) T^(2/3))``: an explore-then-commit length of the order of ESTC's
      (Hao, Lattimore & Wang 2020, sparse linear bandits [recalled]), M models sharing the uniform play;
    * ``n_priv = ceil(M s' ln(d) / rho)``: the per-model users at which the Gumbel noise's maximum over the d null
      coordinates, about ``b ln d = Delta sqrt(s'/(2 rho)) ln d``, is no larger than the sampling noise's,
      ``sqrt(2 n ln d) Delta / 2`` (a score's per-user range is Delta / 2 around its mean);
    * the cap T // 4: uniform play during the selection costs that share of random play's regret.

    ``rho = inf`` (noise off): n_priv = 0."""
    M = check_int("n_models", n_models, low=1)
    log_d = math.log(check_int("dim", dim, low=2))
    n_etc = math.ceil((M * sparsity**2 * log_d) ** (1.0 / 3.0) * horizon ** (2.0 / 3.0))
    n_priv = 0 if math.isinf(rho) else math.ceil(M * support_size * log_d / rho)
    return max(1, min(max(n_etc, n_priv), horizon // 4))


#: Default entry clip of the selection scores, in units of x_max / sqrt(2 ln(2 d)) (§8.3).
ENTRY_CLIP_FACTOR = 1.5


def default_entry_clip(c: BanditConstants) -> float:
    """tau: the public bound every context entry is clipped to in the selection scores, ``x_max min(1, 1.5 /
    sqrt(2 ln(2 d)))`` for l_inf contexts (a Gaussian vector scaled to l_inf norm x_max has entries of sd about
    x_max / sqrt(2 ln(2 d))), ``x_max min(1, 1.5 / sqrt(d))`` for l2 ones (entries of sd about x_max / sqrt(d))."""
    spread = math.sqrt(2.0 * math.log(2.0 * c.dim)) if c.context_norm == "linf" else math.sqrt(c.dim)
    return c.context_bound * min(1.0, ENTRY_CLIP_FACTOR / spread)


def project_rows(observation: np.ndarray, support: np.ndarray) -> np.ndarray:
    """Rows (K, s') of a (K, d) observation on the supports (M, s'): row a on ``support[a]`` (disjoint, M = K) or
    every row on ``support[0]`` (shared, M = 1)."""
    if support.shape[0] == 1:
        return observation[:, support[0]]
    return np.take_along_axis(observation, support, axis=1)


@dataclass(frozen=True)
class SupportSelection:
    """The public constants of the selection stage (module docstring): s, s', n_sel, the entry bound x_max and the
    entry clip tau, the centre c and half-width B_c of the reward clip, Delta = 2 tau B_c, the Gumbel scale b (0 with
    the noise off) and rho = rho*(epsilon, delta)."""

    sparsity: int
    support_size: int
    users: int
    x_max: float
    entry_clip: float
    centre: float
    half_width: float
    sensitivity: float
    scale: float
    rho: float

    @classmethod
    def build(cls, c: BanditConstants, budget: EpisodicBudget, sparsity: int | None, support_size: int | None,
              selection_users: int | None, entry_clip: float | None = None) -> SupportSelection:
        if c.dim < 2:
            raise ValueError(f"support_ridge selects coordinates: it needs dim >= 2, got d = {c.dim}")
        if not math.isfinite(c.context_bound):
            raise ValueError(f"support_ridge needs a finite context_bound (the selection's sensitivity 2 tau B_c and "
                             f"the ridge's rows rest on it), got {c.context_bound}")
        s = c.sparsity if sparsity is None else check_int("sparsity", sparsity, low=1, high=c.dim)
        if s >= c.dim:
            raise ValueError(f"support_ridge needs a sparse parameter, but the sparsity s = {s} is d = {c.dim} (dense): "
                             "use episodic_ridge, or pass sparsity < d if a smaller support is known")
        if support_size is None:
            support_size = default_support_size(c.dim, s)
            if support_size < s:
                raise ValueError(f"support_ridge selects at most d/2 = {c.dim // 2} coordinates by default, but the "
                                 f"sparsity s = {s} exceeds it: pass support_size in [{s}, {c.dim - 1}], or use "
                                 "episodic_ridge")
        else:
            support_size = check_int("support_size", support_size, low=1, high=c.dim - 1)
            if support_size < s:
                raise ValueError(f"support_size = {support_size} must be >= the sparsity s = {s}: fewer coordinates "
                                 "than the support cannot hold it")
        clip = reward_clip_range(c)
        if not (math.isfinite(clip.low) and math.isfinite(clip.high)):
            raise ValueError("support_ridge needs a bounded reward clip")
        centre, half = (clip.low + clip.high) / 2.0, (clip.high - clip.low) / 2.0
        x_max = c.context_bound  # ||x||_inf <= ||x||_2: an l2 bound also bounds every entry
        if entry_clip is None:
            entry_clip = default_entry_clip(c)
        else:
            entry_clip = check_real("entry_clip", entry_clip, low=0.0, low_inclusive=False, allow_inf=True)
        tau = min(entry_clip, x_max)
        delta_v = 2.0 * tau * half
        rho = budget.rho
        if selection_users is None:
            selection_users = default_selection_users(c.horizon, c.n_arms if c.structure == "disjoint" else 1, c.dim,
                                                      s, support_size, rho)
        else:
            selection_users = check_int("selection_users", selection_users, low=1, high=c.horizon - 1)
        if selection_users >= c.horizon:
            raise ValueError(f"selection_users = {selection_users} must be < T = {c.horizon}: no user would be left "
                             "for the estimation stage")
        scale = 0.0 if budget.noise_off else _SAFETY * delta_v * math.sqrt(support_size / (2.0 * rho))
        return cls(s, support_size, selection_users, x_max, tau, centre, half, delta_v, scale, rho)

    def selection_rho(self) -> float:
        """rho_sel = s' Delta^2 / (2 b^2) (module docstring); inf with the noise off."""
        return math.inf if self.scale == 0.0 else self.support_size * self.sensitivity**2 / (2.0 * self.scale**2)


@dataclass(frozen=True)
class SupportRidgeRelease:
    """``support`` (M, s') int, read-only, or None before the selection; ``ridge``: the estimation stage's
    :class:`~dpbandit.agents.episodic_ridge.EpisodicRidgeRelease` on the projected rows (None before the
    selection); ``n_arms`` K (the uniform play of the selection stage)."""

    support: np.ndarray | None
    ridge: EpisodicRidgeRelease | None
    n_arms: int


class SupportRidgeCurator(Curator):
    """Selection stage, then the estimation stage's episodic ridge curator on projected rows (module docstring);
    ``rng`` is the job's "privacy" stream (the selection's Gumbel draws, then the ridge's noise)."""

    def __init__(self, agent: SupportRidge, rng: np.random.Generator) -> None:
        self._agent, self._rng = agent, rng
        c, self._sel = agent.constants, agent.selection
        self._models = c.n_arms if c.structure == "disjoint" else 1
        self._scores = np.zeros((self._models, c.dim))
        self._t = 0
        self._ridge = None  # the estimation stage's curator, built when the supports are released
        self._release = SupportRidgeRelease(None, None, c.n_arms)

    def observe(self, observation: np.ndarray, arm: int, reward: float) -> None:
        c, sel = self._agent.constants, self._sel
        obs = np.asarray(observation, dtype=float)
        if obs.shape != (c.n_arms, c.dim):
            raise ValueError(f"observation must have shape (K, d) = {(c.n_arms, c.dim)}, got {obs.shape}")
        if self._ridge is not None:  # the estimation stage: its curator checks and clips as episodic ridge does
            # the whole played row is checked as in the selection stage (only x[S] enters a statistic, but a row
            # beyond the declared bound is bad input wherever it lies)
            check_context_bound(obs[check_arm(arm, c.n_arms)], c.context_norm, c.context_bound)
            self._ridge.observe(project_rows(obs, self._release.support), arm, reward)
            self._release = SupportRidgeRelease(self._release.support, self._ridge.release(), self._release.n_arms)
            return
        arm = check_arm(arm, c.n_arms)
        y = min(max(check_real("reward", reward), sel.centre - sel.half_width), sel.centre + sel.half_width)
        x = obs[arm]
        check_context_bound(x, c.context_norm, c.context_bound)
        x = np.clip(x, -sel.entry_clip, sel.entry_clip) if sel.entry_clip < sel.x_max else x
        self._scores[arm if self._models > 1 else 0] += (y - sel.centre) * x
        self._t += 1
        if self._t == sel.users:
            self._select()

    def _select(self) -> None:
        """Release the supports (Gumbel top-s' of |v_m| per model), forget the scores, start the estimation stage."""
        sel = self._sel
        if sel.scale > 0:
            support = gumbel_support(self._rng, self._scores, sel.support_size, sel.scale)
            support = np.sort(support, axis=1)
        else:  # noise off: the s' largest |v_j| (ties by index)
            support = top_support(self._scores, sel.support_size)
        self._scores[...] = 0.0  # forget: the selection users have entered their one release
        self._ridge = self._agent.estimator._make_curator(self._rng)
        self._release = SupportRidgeRelease(read_only(support)[0], self._ridge.release(), self._release.n_arms)

    def release(self) -> SupportRidgeRelease:
        return self._release

    def privacy_report(self):
        a, sel = self._agent, self._sel
        ridge = a.estimator.cal
        n_est = a.estimator.schedule.n_episodes
        ledger = PrivacyLedger(neighboring="replace-one")
        stage = (f"selection of s' = {sel.support_size} of d = {a.dim} coordinates per model from users 1..{sel.users} "
                 f"(uniform play), then episodic ridge on the selected coordinates over {n_est} episodes "
                 f"({a.estimator.schedule.describe()})")
        if a.budget.noise_off:
            ledger.add_non_private(f"support ridge: {stage}; noise off")
            return ledger.report(a.budget.delta, guarantee="none", sensitivity_assumption=self.sensitivity_assumption,
                                 note="epsilon = inf: noise off, no privacy guarantee.")
        z_G, z_b = ridge.sigma_G / ridge.L**2, ridge.sigma_b / (2.0 * ridge.L * ridge.B)
        rho_est = 0.5 / z_G**2 + 0.5 / z_b**2
        rho = max(sel.selection_rho(), rho_est)
        ledger.add_zcdp(
            rho, 1 + n_est, parallel=True,
            mechanism=(f"support ridge ({stage}): Gumbel top-s' selection, scale b = {sel.scale:.6g}, rho_sel = "
                       f"{sel.selection_rho():.6g}; per ridge episode a Gram matrix (symmetric Gaussian sigma_G = "
                       f"{ridge.sigma_G:.6g}) and a moment vector (Gaussian sigma_b = {ridge.sigma_b:.6g}), rho_est = "
                       f"{rho_est:.6g}"),
            bound=("docs/episodic-agents.md §8.2: selection rho_sel = s' Delta^2/(2 b^2), Delta = 2 tau B_c; "
                   "ridge rho_est = 1/(2 z_G^2) + 1/(2 z_b^2); disjoint users, so the stream costs "
                   "max(rho_sel, rho_est)"))
        note = (f"target (epsilon, delta) = ({a.budget.epsilon:g}, {a.budget.delta:g}); per-release zCDP rho = "
                f"{rho:.6g}. Every user is in one release (the selection or one ridge episode): parallel "
                "composition, the guarantee is that of one release. JDP by the billboard lemma: actions use only the "
                "latest release (the supports and the ridge estimate) and the user's own features. Ridge calibration "
                f"'zcdp', gram_share w = {ridge.gram_share:.4g}, rewards centred at c = {ridge.centre:.6g}.")
        return ledger.report(a.budget.delta, guarantee="JDP", sensitivity_assumption=self.sensitivity_assumption,
                             note=note, target_epsilon=a.budget.epsilon)

    @property
    def sensitivity_assumption(self) -> str:
        a, sel = self._agent, self._sel
        return (f"contexts ||x||_{a.constants.context_norm[1:]} <= {a.constants.context_bound:g} (checked), so every "
                f"entry |x_j| <= x_max = {sel.x_max:g}; rewards clipped to [{sel.centre - sel.half_width:.6g}, "
                f"{sel.centre + sel.half_width:.6g}], centred at c = {sel.centre:.6g} (B_c = {sel.half_width:.6g}); "
                f"selection scores sum clip(x, +-tau) (y - c), tau = {sel.entry_clip:.6g}: l_inf sensitivity "
                f"Delta = 2 tau B_c = {sel.sensitivity:.6g} "
                f"(replace one; Delta/2 per arm for a user moved between arms); estimation on the projected rows "
                f"x[S]: {a.estimator.cal.sensitivity_assumption}")


class SupportRidge(PrivateAgent):
    """Private support selection, then episodic ridge on the selected coordinates (module docstring).

    Parameters
    ----------
    constants:
        Environment constants; the declared ``sparsity`` s and the context bound are used.
    epsilon, delta:
        The JDP target (delta defaults to 1/T; ``epsilon = inf``: noise off).
    sparsity:
        s, the declared number of non-zero entries of each theta (default ``constants.sparsity``).
    support_size:
        s' in [s, d - 1], coordinates selected per model (default :func:`default_support_size`).
    selection_users:
        n_sel in [1, T - 1], users of the selection stage (default :func:`default_selection_users`).
    ridge_params:
        Keyword arguments of the estimation stage's :class:`~dpbandit.agents.episodic_ridge.EpisodicRidge` (its
        defaults otherwise, except ``calibration="zcdp"``, ``row_clip = sqrt(s') tau`` and, disjoint,
        ``gram_pool=False``: arms' supports differ, so their Gram matrices do not share a shape).
    entry_clip:
        tau > 0 (or inf), the bound every context entry is clipped to in the selection scores (default
        :func:`default_entry_clip`; min(tau, x_max) is used).
    noise_off_form:
        With ``epsilon = inf`` only: ``"greedy"`` (default; greedy play from the first user, supports and ridge
        re-fitted on all users so far after every user, :mod:`~dpbandit.agents.support_greedy`; it uses
        ``ridge_params`` "ridge" and "centre" only and refuses ``selection_users`` and the other ridge parameters,
        which configure the stages it does not have) or ``"staged"`` (the private form's two stages without
        noise). Ignored by private runs.
    """

    name = "support_ridge"

    def __init__(self, constants: BanditConstants, epsilon: float = 1.0, delta: float | None = None,
                 sparsity: int | None = None, support_size: int | None = None, selection_users: int | None = None,
                 entry_clip: float | None = None, ridge_params: dict | None = None, noise_off_form: str = "greedy"):
        self.budget = EpisodicBudget.build(constants, epsilon, delta)
        self.epsilon, self.delta = self.budget.epsilon, self.budget.delta
        self.noise_off_form = check_choice("noise_off_form", noise_off_form, NOISE_OFF_FORMS)
        if not isinstance(ridge_params, (dict, type(None))):
            raise TypeError(f"ridge_params must be a dict of episodic_ridge parameters, got {ridge_params!r}")
        params = dict(ridge_params or {})
        for fixed in ("epsilon", "delta", "calibration"):
            if fixed in params:
                raise ValueError(f"ridge_params may not set {fixed!r}: support_ridge sets it (one zCDP budget for "
                                 "both stages)")
        self.greedy = self.budget.noise_off and self.noise_off_form == "greedy"
        if self.greedy:  # the noise-off greedy form has no stages: refuse what configures them
            staged = sorted(set(params) - GREEDY_RIDGE_PARAMS) + ["selection_users"] * (selection_users is not None)
            if staged:
                raise ValueError(f"{', '.join(staged)} configure support_ridge's two stages, which its noise-off "
                                 "greedy form does not have (epsilon = inf): drop them, or pass noise_off_form="
                                 "'staged'")
        self.selection = SupportSelection.build(constants, self.budget, sparsity, support_size, selection_users,
                                                entry_clip)
        if self.greedy:
            self.ridge = check_real("ridge_params ridge", params.get("ridge", 1.0), low=0.0, low_inclusive=False)
            self.centre = params.get("centre", True)
            if not isinstance(self.centre, (bool, np.bool_)):
                raise TypeError(f"ridge_params centre must be a bool, got {self.centre!r}")
            self.estimator = None
        else:
            self.estimator = self._estimator(constants, params)
        super().__init__(constants)

    def _estimator(self, constants: BanditConstants, params: dict) -> EpisodicRidge:
        """The estimation stage's episodic ridge on the projected problem (class docstring, ``ridge_params``)."""
        if constants.structure == "disjoint" and params.get("gram_pool"):
            raise ValueError("ridge_params gram_pool must be False: the arms' selected supports differ, so their Gram "
                             "matrices do not share one shape")
        params.setdefault("gram_pool", False)
        params.setdefault("centre", True)  # the selection's scores are centred too (also with the noise off)
        # projected rows: s' entries of typical size tau / 1.5 each, so the l2 clip sqrt(s') tau (§8.3)
        params.setdefault("row_clip", math.sqrt(self.selection.support_size) * self.selection.entry_clip)
        projected = dataclasses.replace(constants, dim=self.selection.support_size,
                                        horizon=constants.horizon - self.selection.users,
                                        sparsity=min(constants.sparsity, self.selection.support_size))
        return EpisodicRidge(projected, epsilon=self.epsilon, delta=self.delta, calibration="zcdp", **params)

    def memory_estimate(self) -> int:
        """The selection scores (M, d) and the estimation stage's episodic ridge on s' coordinates; noise off, the
        greedy form's statistics on all d coordinates (:func:`~dpbandit.agents.support_greedy.greedy_memory`)."""
        if self.greedy:
            return greedy_memory(self.n_arms if self.constants.structure == "disjoint" else 1, self.dim)
        return 8 * self.n_arms * (self.dim + 1) + self.estimator.memory_estimate()

    @property
    def first_release(self) -> int:
        """The first data-dependent release: the supports, after the selection stage (every user's, noise off)."""
        return 1 if self.greedy else self.selection.users

    def _make_curator(self, privacy_rng: np.random.Generator) -> Curator:
        if self.greedy:
            return GreedySupportCurator(self, self.ridge, self.centre, SupportRidgeRelease)
        return SupportRidgeCurator(self, privacy_rng)

    @staticmethod
    def action_rule(release: SupportRidgeRelease, observation: np.ndarray, rng: np.random.Generator) -> int:
        """Uniform play before the supports are released; then the episodic ridge rule on this user's rows projected
        on the supports."""
        if release.support is None:
            return argmax_random_tie(np.zeros(release.n_arms), rng)
        X = project_rows(np.asarray(observation, dtype=float), release.support)
        return EpisodicRidge.action_rule(release.ridge, X, rng)
