"""Episodic private ridge: one noisy Gram matrix and moment vector per episode (each user in one release), every
release combined with public weights, greedy action (``spec/episodic-private-agents.md`` §3,
``spec/episodic-part2-hard-problems.md``; derivation ``docs/episodic-agents.md`` §3, §6). (epsilon, delta)-JDP.

**Curator** (:class:`~dpbandit.agents.episodic.EpisodicCurator`). At the end of episode ell, on its n users
(played rows ``x`` (d,), rewards clipped to ``[lo, hi]``), per model m (one in the shared structure; one per arm in
the disjoint one, fed by the users who played that arm) it releases

    G~_m = sum x x^T + Z_m,   Z_m ~ SymmetricGaussianNoise(sigma_G)   (off-diagonal N(0, sigma_G^2), diagonal
                                                                        N(0, 2 sigma_G^2); spec/errata.md E5)
    b~_m = sum x (y - c) + N(0, sigma_b^2 I_d)      (c = 0 without centring),

then forgets the episode. Estimate (post-processing): ``V = G~ + lam I`` with every eigenvalue floored at ``ridge``,
``theta_hat = V^{-1} b~``, where G~, b~ are the weighted sums of every release so far (mode ``"weighted"``, default;
:mod:`~dpbandit.agents.release_combination`), the last release (``"forget"``) or the plain sum (``"sum"``).

**Sensitivity** (replace-one: one user's context and reward replaced). ``||x||_2 <= L`` (``L = context_bound``, or
``sqrt(d) context_bound`` for an l_inf bound) and ``|y| <= B`` after clipping.

* Gram: ``D = x x^T - x' x'^T`` has ``||D||_F^2 = ||x||^4 + ||x'||^4 - 2 (x.x')^2 <= 2 L^4``. Under the symmetric
  noise the whitened shift is ``||D||_F / (sqrt 2 sigma_G) <= L^2 / sigma_G`` (off-diagonal pairs enter twice in
  ``||D||_F^2`` and once with variance sigma_G^2; diagonal entries once with 2 sigma_G^2). So the Gram release is a
  Gaussian mechanism of multiplier ``z_G = sigma_G / L^2``. (Noise ``N(0, s^2)`` on every upper-triangle entry would
  need ``s = sqrt 2 L^2 / mu_G`` — the spec's ``sqrt 2 L^2`` is the l2 norm of D's upper triangle — i.e. sqrt 2 more
  noise off the diagonal for the same guarantee.)
* Moment: ``||x y - x' y'||_2 <= 2 L B``; multiplier ``z_b = sigma_b / (2 L B)``.
* Disjoint: a neighbour either changes one arm's statistics (the bounds above) or moves a user from arm a to arm a'
  (``D_a = x x^T``, ``D_a' = -x' x'^T``: ``||D_a||_F^2 + ||D_a'||_F^2 = ||x||^4 + ||x'||^4 <= 2 L^4``, the same;
  moments ``||x y||^2 + ||x' y'||^2 <= 2 L^2 B^2 <= (2 L B)^2``). All K arms' noises are independent with the same
  scales, so the K per-arm releases of an episode are one Gaussian mechanism with the same multipliers: no split
  over arms and no released counts (G~_a carries them).

**Calibration.** The two releases of an episode compose into one Gaussian mechanism with
``mu_ep^2 = 1/z_G^2 + 1/z_b^2``; the share ``w`` (``gram_share``) of ``mu^2`` goes to the Gram matrix:
``sigma_G = L^2 / (sqrt(w) mu)``, ``sigma_b = 2 L B / (sqrt(1 - w) mu)``. ``calibration="exact"`` (default) takes
``mu = mu*``, the analytic-Gaussian mu of (epsilon, delta) (Balle & Wang 2018); ``"zcdp"`` the spec's
``mu = sqrt(2 rho*)``, rho* from the CKS inversion (``spec/errata.md`` E1), i.e. ``sigma_G = L^2 / sqrt(2 w rho*)``.
Episodes hold disjoint users, so the releases compose in parallel and every episode spends the whole budget
(:mod:`~dpbandit.agents.episodic`); the summed estimate of mode "sum" is post-processing of releases that each hold
a user once, so its guarantee is the same. Known answers (L = 1, B = 1.4, epsilon = 1, delta = 1e-4, w = 1/2):
exact sigma_G = 4.505, sigma_b = 12.61; zcdp 4.961, 13.89.

Default share ``w = L S / (L S + 2 B)`` with ``S = min(||theta||_2 bound, 2 B / L)`` (``target_bound``; the cap
makes w <= 1/2, docs/episodic-agents.md §6.2): the error of ``theta_hat`` from the moment noise scales as
``sigma_b``, from the Gram noise as ``sigma_G ||theta|| <= sigma_G S``; minimising
``(2 L B)^2/(1 - w) + (L^2 S)^2/w`` gives this w (public constants only; 0.26 on SharedLinear-v0). With
``theta_bound = inf`` (the own-data and replay environments' default: no bound stated) the formula is undefined
(inf/inf); the default is then ``w = 1/2`` (:data:`UNBOUNDED_GRAM_SHARE`, an even split), and the privacy report's
note says so. The guarantee does not depend on w; only the split of the noise between G~ and b~ does.

**Regulariser** ``lam = ridge + 2 sigma_G sqrt(m d)`` by default: the sum of m symmetric noises has off-diagonal
std ``sqrt(m) sigma_G``, and the spectral norm of such a d x d Wigner matrix concentrates at ``2 sqrt(m d) sigma_G``,
so ``G~ + lam I >= G + ridge I`` approximately, and V stays well conditioned without using data; the eigenvalue floor
(at ``ridge``) handles the rest. ``epsilon = inf``: no noise, ``lam = ridge``: plain ridge regression on the last
episode ("forget") or on every completed episode ("sum", "weighted"), guarantee "none".

**Action rule** (static): ``argmax_a x_a^T theta_hat`` (disjoint: ``x . theta_hat_a``), plus
``ucb_alpha ||x_a||_{V^{-1}}`` when ``ucb_alpha > 0``; ties at random (the initial release theta_hat = 0 plays
uniformly). ``rule="ucb"`` / ``"thompson"``: the optimistic and Thompson rules of
:mod:`~dpbandit.agents.release_rules`, whose widths account for the released noise (``docs/episodic-agents.md``
§6.3–6.4); they have no batched form (their seeds run one by one).

**Part 2** (``spec/episodic-part2-hard-problems.md``; ``docs/episodic-agents.md`` §6). Mode ``"weighted"`` (the
default) combines every release with the public weights of :mod:`~dpbandit.agents.release_combination` (noise off:
ridge on every user so far, as greedy); ``centre=True`` (default) subtracts the clip's midpoint c from every reward,
so ``B = (hi - lo)/2`` in the moment's sensitivity; the default share caps S at ``2 B / L`` (``target_bound``), i.e.
w <= 1/2; the schedule's episodes shorten as the noise falls (``episode_scale``, §6.5); noise off the agent is
greedy ridge (a release after every user, no centring or row clip). Cost of the schedule: episodes of >= M d users by
default (an O(d^3) release is O(d^2) a user amortised); noise off, modes "weighted"/"sum": Sherman-Morrison, O(d^2) a
user.

**Cost.** Per round O(d): the played row is copied into a buffer of
:data:`~dpbandit.agents.episode_sums.CHUNK_ROWS` users, whose Gram matrix and moments are added to the episode's sums
when it is full (BLAS level 3: O(d^2) amortised flops a user; memory O(M d^2 + chunk d), whatever the episode's
length; :mod:`~dpbandit.agents.episode_sums`); by blocks (:mod:`~dpbandit.agents.episodic_blocks`) the rounds
between two releases are one run. Peak memory: three M d^2 floats (the sums, the combination, the release; d x d
arrays in mappings of their own, :mod:`dpbandit.mapped`) and two d x d work matrices at a release. Per episode and
model, the floored V by :class:`~dpbandit.agents.floored_ridge.FlooredRidge`: two Cholesky factorisations (d^3/3
flops each) while the floor is inactive (V^{-1} only for a UCB width, the Thompson factor with one more); where it
acts, V's eigenpairs below the floor (LAPACK ``dsyevr`` on that range) lift V to it first. The action costs O(K d)
(greedy), O(K d^2) (UCB width) or O(d^2) per model (Thompson draw).
"""

from __future__ import annotations

import math

import numpy as np

from dpbandit.agents.baselines import argmax_random_tie
from dpbandit.agents.episode_sums import CHUNK_ROWS, EpisodeSums
from dpbandit.agents.episodic import EpisodeSchedule, EpisodicBudget, EpisodicCurator, default_first_episode
from dpbandit.agents.episodic_blocks import play_episodic_block
from dpbandit.agents.episodic_ridge_calibration import (MODES, ROW_CLIP_FACTOR, UNBOUNDED_GRAM_SHARE,
                                                        EpisodicRidgeCalibration, clip_rows, default_row_clip,
                                                        theta_l2_bound)
from dpbandit.agents.floored_ridge import FlooredRidge
from dpbandit.agents.private import PrivateAgent, read_only, require_finite_theta_bound
from dpbandit.agents.release_combination import noise_regulariser, pooled_shares
from dpbandit.agents.release_rules import (RULES, EpisodicRidgeRelease, ridge_scores, thompson_scores, ucb_radius,
                                          ucb_scores)
from dpbandit.agents.ridge import RidgeState, sherman_morrison
from dpbandit.envs.blocks import RoundBlock
from dpbandit.envs.constants import BanditConstants
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.noise import GaussianNoise, SymmetricGaussianNoise
from dpbandit.validation import check_choice, check_int, check_real

__all__ = ["EpisodicRidge", "EpisodicRidgeCalibration", "EpisodicRidgeCurator", "EpisodicRidgeRelease", "MODES",
           "UNBOUNDED_GRAM_SHARE", "ROW_CLIP_FACTOR", "clip_rows", "default_row_clip", "ridge_scores", "theta_l2_bound"]


class EpisodicRidgeCurator(EpisodicCurator):
    """Noisy per-episode ridge statistics (module docstring); ``rng`` is the job's "privacy" stream."""

    def __init__(self, cal: EpisodicRidgeCalibration, schedule: EpisodeSchedule, n_arms: int,
                 rng: np.random.Generator) -> None:
        self.cal, self.rng = cal, rng
        M, d = cal.n_models, cal.dim
        self._gram_noise = SymmetricGaussianNoise(cal.sigma_G) if cal.sigma_G > 0 else None
        self._moment_noise = GaussianNoise(cal.sigma_b) if cal.sigma_b > 0 else None
        self._gram_sum, self._moment_sum = (np.zeros((M, d, d)), np.zeros((M, d))) if cal.mode == "sum" else (None, None)
        self._combination = cal.combination() if cal.mode == "weighted" else None
        self._sums = EpisodeSums(M, d, gram=True)
        # noise off, every user kept, greedy: ridge on every user so far, by Sherman-Morrison (O(d^2) a user, no
        # eigendecomposition; docs/episodic-agents.md §6.5): greedy ridge's own state
        self._ridge = (RidgeState(n_arms, d, "disjoint" if M > 1 else "shared", cal.ridge)
                       if cal.sigma_G == 0 and cal.mode != "forget" and cal.lam is None and cal.rule == "greedy"
                       else None)
        super().__init__(schedule, cal.budget, n_arms, d, cal.context_norm, cal.context_bound, cal.clip,
                         chunk=CHUNK_ROWS)

    def _initial_release(self) -> EpisodicRidgeRelease:
        M, d = self.cal.n_models, self.cal.dim
        gram = np.zeros((M, d, d))
        return self._release_of(gram, np.zeros((M, d)), np.zeros(M), episode=0, n_summed=0)

    def _regulariser(self, n_summed: int, w_norm: np.ndarray) -> np.ndarray:
        """lam per model (M,): fixed, the modes' edge rule, or with the UCB rule's tail term (§6.3)."""
        cal, M = self.cal, self.cal.n_models
        if cal.lam is not None:
            return np.full(M, cal.lam)
        if cal.rule == "ucb":
            return noise_regulariser(cal.ridge, cal.sigma_G, w_norm, cal.dim, tail_alpha=cal.alpha / 3.0)
        if cal.mode == "weighted" or cal.gram_pool:
            return noise_regulariser(cal.ridge, cal.sigma_G, w_norm, cal.dim)
        return np.full(M, cal.regulariser(max(n_summed, 1)))

    def _release_of(self, gram: np.ndarray, moment: np.ndarray, w_norm: np.ndarray, episode: int,
                    n_summed: int) -> EpisodicRidgeRelease:
        """The estimate and the action rule's public arrays from the combined noisy statistics (post-processing)."""
        cal, d = self.cal, self.cal.dim
        scales = None
        if cal.gram_pool:  # one pooled shape for every arm (post-processing of released arrays, §6.7)
            scales, w_norm = pooled_shares(gram, w_norm)
        lam = self._regulariser(n_summed, w_norm)
        # V = G~ + lam I with eigenvalues floored at ridge (post-processing), by Cholesky (floored_ridge)
        widths = cal.rule == "ucb" or cal.ucb_alpha > 0
        V = FlooredRidge(gram, lam, cal.ridge, psd=self._gram_noise is None, draws=cal.rule == "thompson",
                         scales=scales, b=moment, keep=widths or cal.rule == "thompson")
        v_inv = V.inverse() if widths else None
        theta = V.theta
        beta = basis = scale = None
        if cal.rule == "ucb":
            beta = ucb_radius(R=cal.spread, S=cal.theta_l2, L=cal.L, dim=d, ridge=cal.ridge, n_users=self.t,
                              sigma_G=cal.sigma_G, sigma_b=cal.sigma_b, w_norm=w_norm, lam_w=lam, alpha=cal.alpha)
            beta.setflags(write=False)
        elif cal.rule == "thompson":
            tau2 = (cal.sigma_b * w_norm) ** 2 + (cal.sigma_G * w_norm) ** 2 * np.einsum("mi,mi->m", theta, theta)
            basis, scale = read_only(*V.draw_factor(cal.spread, tau2))
        if v_inv is not None:
            v_inv.setflags(write=False)
        return EpisodicRidgeRelease(*read_only(gram, moment, theta), v_inv, ucb_alpha=cal.ucb_alpha,
                                    shared=cal.n_models == 1, episode=episode, n_summed=n_summed, rule=cal.rule,
                                    beta=beta, basis=basis, scale=scale, row_clip=cal.row_clip)

    def _absorb(self, X: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Add a chunk of the episode's users to its sums ``G_m += sum x x^T``, ``b_m += sum (y - c) x``
        (:mod:`~dpbandit.agents.episode_sums`; the moments of y - c when centring, §6.1)."""
        cal = self.cal
        if math.isfinite(cal.row_clip):  # rows clipped to the public l2 radius (§6.6)
            X = clip_rows(X, cal.row_clip)
        y = rewards - cal.centre if cal.centre else rewards
        if self._ridge is not None:  # noise off: straight into the ridge state (every weight is 1, §6.2)
            for x, arm, reward in zip(X, arms, y):
                self._ridge.update(x, reward, int(arm))
            return
        self._sums.absorb(X, arms if cal.n_models > 1 else None, y)

    def _publish(self, X: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> EpisodicRidgeRelease:
        cal, M, d = self.cal, self.cal.n_models, self.cal.dim
        self._absorb(X, arms, rewards)  # the episode's last rows
        if self._ridge is not None:
            return self._ridge_release()
        gram, moment, _ = self._sums.take()  # the episode's sums (then forgotten)
        if self._gram_noise is not None:  # noise drawn for every model, whatever the data (added in place)
            self._gram_noise.add_sample(self.rng, gram)
            moment += self._moment_noise.sample(self.rng, (M, d))
        n_summed = self.n_releases + 1
        if cal.mode == "sum":
            self._gram_sum += gram
            self._moment_sum += moment
            gram, moment = self._gram_sum.copy(), self._moment_sum.copy()
            w_norm = np.full(M, math.sqrt(n_summed))
        elif cal.mode == "weighted":  # released arrays only (release_combination); this episode's dropped first
            self._combination.fold(gram, moment)
            del gram, moment
            gram, moment, w_norm = self._combination.combined()
        else:
            n_summed, w_norm = 1, np.ones(M)
        return self._release_of(gram, moment, w_norm, self.n_releases + 1, n_summed)

    @property
    def keeps_users_one_by_one(self) -> bool:
        """Noise off and a release after every user, by Sherman-Morrison (:meth:`observe_kept` may serve)."""
        return self._ridge is not None and self.schedule.max_length == 1

    def observe_kept(self, x: np.ndarray, arm: int, reward: float) -> None:
        """:meth:`observe` of a user whose row x (d,) and reward passed its checks (``observe_rows``'), when
        :attr:`keeps_users_one_by_one`: the same clip, centring, Sherman-Morrison step and release, no buffer."""
        cal, m = self.cal, arm if self.cal.n_models > 1 else 0
        if math.isfinite(cal.row_clip):
            x = clip_rows(x[None], cal.row_clip)[0]
        y = self.clip.clip(reward)
        sherman_morrison(self._ridge.W[m], self._ridge._b[m], x, float(y - cal.centre if cal.centre else y))
        self._ridge.counts[m] += 1
        self._t += 1
        self._published(self._ridge_release())

    def _ridge_release(self) -> EpisodicRidgeRelease:
        """Noise off, every user kept: the ridge estimate on every user so far, from the Sherman-Morrison state
        (what mode "weighted" or "sum" computes with the noise off, without the O(M d^3) decomposition); ``gram``
        and ``moment`` are not formed (None), ``v_inv`` only for a UCB width."""
        cal, M, d = self.cal, self.cal.n_models, self.cal.dim
        theta = self._ridge.theta.reshape(M, d).copy()
        theta.setflags(write=False)
        v_inv = None
        if cal.ucb_alpha > 0:
            v_inv, = read_only(self._ridge.A_inv.reshape(M, d, d).copy())
        return EpisodicRidgeRelease(None, None, theta, v_inv, ucb_alpha=cal.ucb_alpha, shared=M == 1,
                                    episode=self.n_releases + 1, n_summed=self.n_releases + 1, rule=cal.rule,
                                    row_clip=cal.row_clip)

    def _record_release_cost(self, ledger: PrivacyLedger, count: int) -> None:
        self.cal.record_release_cost(ledger, count)

    @property
    def sensitivity_assumption(self) -> str:
        return self.cal.sensitivity_assumption

    def _report_note(self) -> str:
        return self.cal.report_note()


class EpisodicRidge(PrivateAgent):
    """Episodic private ridge (module docstring), (epsilon, delta)-JDP; shared or disjoint as the environment.

    Parameters
    ----------
    epsilon:
        > 0, or ``inf`` for noise off (guarantee "none").
    delta:
        In (0, 1); default 1/T.
    calibration:
        ``"exact"`` (analytic Gaussian, default) or ``"zcdp"`` (zCDP with the CKS conversion, the spec's form).
    gram_share:
        Share w in (0, 1) of the budget (mu^2) spent on the Gram matrix; default ``L S / (L S + 2 B)``, or 1/2
        when ``theta_bound`` is infinite (stated in the privacy report's note).
    first_episode, growth, episode_scale:
        The public schedule (:class:`~dpbandit.agents.episode_schedule.EpisodeSchedule`, §6.5): an episode after s
        users has ``max(first, min(first + (r - 1) s, ceil(sqrt(2 s n*))))`` users. Defaults: n* = ``M d tau^2 /
        (v_y L^2)`` (0 noise off; inf, the geometric schedule, in mode "forget"), r = 2, first = d (shared) or K d
        (disjoint), 1 when n* = 0 with the greedy rule and no fixed ``lam`` (a release after every user, by
        Sherman-Morrison).
    mode:
        ``"weighted"`` (default: every release with the public weights of ``docs/episodic-agents.md`` §6.2; noise off
        it is ridge regression on every user so far), ``"forget"`` (the last release only) or ``"sum"`` (the plain
        sum of all releases).
    ridge:
        Base ridge and eigenvalue floor, > 0 (default 1).
    lam:
        Fixed regulariser >= ridge, or None (default) for ``ridge + 2 sigma_G sqrt(m d)``.
    ucb_alpha:
        >= 0; heuristic width ``ucb_alpha ||x||_{V^{-1}}`` added to the greedy score (default 0: greedy).
    reward_clip:
        B > 0: rewards clipped to [-B, B] (default: :func:`~dpbandit.agents.private.reward_clip_range`).
    centre:
        Subtract the clip's midpoint c = (lo + hi)/2 from every reward: the moment's sensitivity becomes
        2 L (hi - lo)/2 (§6.1; no change for a symmetric clip). The argmax is unchanged by the shift. Default (None):
        on, and off with the noise off (it only lowers the noise; without noise the agent is greedy ridge's fit).
    rule:
        ``"greedy"`` (default), ``"ucb"`` (the width beta ||x||_{V^{-1}} of §6.3, which accounts for the released
        noise; needs a finite theta_bound) or ``"thompson"`` (§6.4; draws from the exploration stream).
    alpha:
        Failure probability in (0, 1) of the UCB width (default 0.05).
    target_bound:
        S_r > 0, a public bound on the ridge target's l2 norm, used by the weights and the default gram_share;
        default ``min(||theta||_2 bound, 2 B / L)`` (§6.2).
    row_clip:
        l2 radius > 0 (or inf) every played row is clipped to before it enters the statistics (and in the action
        rule); L = min(declared bound, row_clip). Default :func:`default_row_clip` (none for l2 contexts, and none
        with the noise off).
    gram_pool:
        Disjoint structure: estimate every arm's Gram matrix as its released trace's share of the sum of all arms'
        releases (:func:`~dpbandit.agents.release_combination.pool_gram`, §6.7; post-processing). Default (None):
        on, except with ``rule="ucb"``, whose width needs each arm's own Gram matrix (``True`` with it is refused);
        no effect with the noise off (nothing to trade the shared-shape bias for) or in the shared structure.
    """

    name = "episodic_ridge"

    def __init__(self, constants: BanditConstants, epsilon: float = 1.0, delta: float | None = None,
                 calibration: str = "exact", gram_share: float | None = None, first_episode: int | None = None,
                 mode: str = "weighted", ridge: float = 1.0, lam: float | None = None, ucb_alpha: float = 0.0,
                 reward_clip: float | None = None, growth: int = 2, centre: bool | None = None, rule: str = "greedy",
                 alpha: float = 0.05, target_bound: float | None = None, row_clip: float | None = None,
                 gram_pool: bool | None = None, episode_scale: float | None = None):
        budget = EpisodicBudget.build(constants, epsilon, delta)
        if centre is None:
            centre = not budget.noise_off
        calibration = check_choice("calibration", calibration, ("exact", "zcdp"))
        mode = check_choice("mode", mode, MODES)
        rule = check_choice("rule", rule, RULES)
        if gram_pool is None:
            gram_pool = rule != "ucb"
        for flag, value in (("centre", centre), ("gram_pool", gram_pool)):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{flag} must be a bool, got {value!r}")
        alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        if rule == "ucb":
            require_finite_theta_bound(constants, "episodic_ridge with rule='ucb'", "the confidence width beta")
            if gram_pool:
                raise ValueError("gram_pool must be False with rule='ucb': the width's bound needs each arm's own Gram "
                                 "matrix (docs/episodic-agents.md §6.3)")
            if lam is not None:
                raise ValueError("lam must be None with rule='ucb': the width's regulariser is "
                                 "ridge + sigma_G ||w|| (2 sqrt(d) + 2 sqrt(ln(3/alpha))) (docs/episodic-agents.md §6.3)")
        ridge = check_real("ridge", ridge, low=0.0, low_inclusive=False)
        if lam is not None:
            lam = check_real("lam", lam, low=ridge)
        ucb_alpha = check_real("ucb_alpha", ucb_alpha, low=0.0)
        growth = check_int("growth", growth, low=1)
        if episode_scale is not None:
            episode_scale = check_real("episode_scale", episode_scale, low=0.0, allow_inf=True)
        self.epsilon, self.delta = budget.epsilon, budget.delta
        self.cal = EpisodicRidgeCalibration.build(constants, budget, calibration, gram_share, ridge, lam, mode,
                                                  ucb_alpha, reward_clip, bool(centre), rule, alpha, target_bound,
                                                  row_clip, bool(gram_pool))
        if episode_scale is None:
            episode_scale = self.cal.noise_scale()
        if first_episode is None:  # one-user episodes where a release costs O(d^2): Sherman-Morrison (§6.5)
            first_episode = (1 if episode_scale == 0.0 and rule == "greedy" and lam is None else
                             default_first_episode(constants.n_arms, constants.dim, constants.structure))
        self.schedule = EpisodeSchedule(constants.horizon, check_int("first_episode", first_episode, low=1), growth,
                                        episode_scale)
        super().__init__(constants)

    def memory_estimate(self) -> int:
        """An upper bound of the curator's peak, checked before anything is allocated: its chunk buffer
        (:data:`~dpbandit.agents.episode_sums.CHUNK_ROWS` users) and ten (d+1) x (d+1) matrices a model; not T."""
        rows, models = min(CHUNK_ROWS, self.schedule.max_length), self.cal.n_models
        return 8 * (2 * rows * (self.dim + 2) + 10 * models * (self.dim + 1) ** 2)

    def _make_curator(self, privacy_rng: np.random.Generator) -> EpisodicRidgeCurator:
        return EpisodicRidgeCurator(self.cal, self.schedule, self.n_arms, privacy_rng)

    @staticmethod
    def action_rule(release: EpisodicRidgeRelease, observation: np.ndarray, rng: np.random.Generator) -> int:
        """The release's rule on this user's (K, d) rows: greedy ``argmax_a x_a^T theta_hat`` (+ ``ucb_alpha
        ||x_a||_{V^{-1}}``), UCB (+ ``beta ||x_a||_{V^{-1}}``) or Thompson (greedy on a draw from ``rng``, the
        exploration stream)."""
        X = np.asarray(observation, dtype=float)
        if math.isfinite(release.row_clip):  # the user's own rows, as the curator clips them
            X = clip_rows(X, release.row_clip)
        if release.rule == "ucb":
            scores = ucb_scores(release.theta, release.v_inv, release.beta, release.shared, X)
        elif release.rule == "thompson":
            scores = thompson_scores(release.theta, release.basis, release.scale, release.shared, X, rng)
        else:
            scores = ridge_scores(release.theta, release.v_inv, release.ucb_alpha, release.shared, X)
        return argmax_random_tie(scores, rng)

    @staticmethod
    def _greedy_scores(release: EpisodicRidgeRelease, X: np.ndarray) -> np.ndarray:
        """The greedy rule's scores (:meth:`action_rule`) of clipped rows X (..., K, d): (..., K)."""
        return ridge_scores(release.theta, release.v_inv, release.ucb_alpha, release.shared, X)

    def play_block(self, block: RoundBlock) -> np.ndarray:
        """The block's rounds (:mod:`~dpbandit.agents.episodic_blocks`): the arms, releases and draws of ``act`` /
        ``update``; the UCB and Thompson rules round by round."""
        return play_episodic_block(self, block, self._greedy_scores if self.cal.rule == "greedy" else None)
