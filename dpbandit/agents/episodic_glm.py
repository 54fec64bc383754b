"""Private episodic GLM agent: one private Newton step per episode, combined across episodes, greedy action
(``spec/episodic-part2-hard-problems.md`` §3.3; derivation ``docs/episodic-agents.md`` §7). (epsilon, delta)-JDP.

Model: expected reward ``mu(x^T theta_m)`` with ``mu`` the logistic function (default) or the standard normal cdf
(``link="probit"``), rewards clipped to [0, 1] (the agent refuses an environment whose rewards are not in [0, 1]).
The model is the agent's choice: on a classification table (one-hot rewards) it fits one GLM per arm.

**Curator** (an :class:`~dpbandit.agents.episodic.EpisodicCurator` in bounded memory, chunks of
:data:`~dpbandit.agents.episode_sums.CHUNK_ROWS` users). During episode k every model's current release
``theta_{k-1,m}`` is public; for each user (played row ``x``, clipped to ``||x||_2 <= L`` as the episodic ridge's
rows, model m) it adds, with ``z = x^T theta_{k-1,m}``,

    H_m += mu'(z) x x^T,        g_m += (mu(z) - y) x,

and at the episode's end releases ``H~_m = H_m + SymmetricGaussianNoise(sigma_H)``,
``g~_m = g_m + N(0, sigma_{g,m}^2 I)``, then forgets the episode.

**Sensitivity** (replace one user; a_max = sup mu' = 1/4 logistic, 1/sqrt(2 pi) probit):
``||a x x^T - a' x' x'^T||_F <= sqrt(2) a_max L^2`` (whitened ``a_max L^2 / sigma_H`` under the symmetric noise);
``|mu(z) - y| <= mu(|z|) <= mu(L ||theta_{k-1,m}||)`` for y in [0, 1], so ``||g - g'|| <= Delta_m :=
2 L mu(L ||theta_{k-1,m}||)`` (iterate-dependent and public; ``L`` at theta = 0). Calibration (share w of mu^2 on H):
``sigma_H = a_max L^2 / (sqrt(w) mu)``, ``sigma_{g,m} = Delta_m / (sqrt(1 - w) mu)``, mu = mu* (exact, default) or
``sqrt(2 rho*)`` (zcdp): one Gaussian mechanism of multiplier mu per release, whatever the models' Delta_m. A user
moved between arms costs at most the same (H: as a replacement; g: two halves). Releases compose in parallel.

**Estimate** (post-processing): with the public weights of :mod:`~dpbandit.agents.release_combination` (v_y = 1:
Var g = H in the Newton scaling; tau^2 = sigma_g(S)^2 + sigma_H^2 S^2),

    (sum_k w_k H~_k + lam I) theta_m = sum_k w_k (H~_k theta_{k-1,m} - g~_k),   lam = a_max ridge + sigma_H ||w|| 2 sqrt(d),

eigenvalues floored at ``a_max ridge``, then projected on ``||theta||_2 <= S`` when the environment states S.
Action (static): ``argmax_a x_a^T theta_a`` (mu is increasing); ties at random. No batched form (its seeds run one
by one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, ndtr

from dpbandit.agents.baselines import argmax_random_tie
from dpbandit.agents.episode_sums import CHUNK_ROWS, EpisodeSums
from dpbandit.agents.episodic import EpisodeSchedule, EpisodicBudget, EpisodicCurator, default_first_episode
from dpbandit.agents.episodic_blocks import play_episodic_block
from dpbandit.agents.episodic_ridge import clip_rows, default_row_clip, ridge_scores, theta_l2_bound
from dpbandit.agents.private import PrivateAgent, RewardClip, context_l2_bound, read_only, reward_clip_range
from dpbandit.agents.release_combination import ReleaseCombination, noise_regulariser
from dpbandit.agents.ridge import RidgeState
from dpbandit.envs.blocks import RoundBlock
from dpbandit.envs.constants import BanditConstants
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.noise import SymmetricGaussianNoise
from dpbandit.validation import check_choice, check_int, check_real

__all__ = ["EpisodicGLM", "EpisodicGLMCalibration", "EpisodicGLMCurator", "EpisodicGLMRelease", "GLM_LINKS"]

def _logistic_slope(z: np.ndarray) -> np.ndarray:
    return expit(z) * expit(-z)


def _probit_slope(z: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


#: The agent's links: name -> (mean function, its derivative, sup of the derivative).
GLM_LINKS = {
    "logistic": (expit, _logistic_slope, 0.25),
    "probit": (ndtr, _probit_slope, 1.0 / math.sqrt(2.0 * math.pi)),
}
_SAFETY = 1.0 + 1e-9  # noise scales rounded up so the target survives floating-point error


@dataclass(frozen=True)
class EpisodicGLMCalibration:
    """Every public constant of one run (module docstring)."""

    budget: EpisodicBudget
    calibration: str  # "exact", "zcdp" or "none"
    link: str
    n_models: int
    dim: int
    L: float
    row_clip: float
    clip: RewardClip
    context_norm: str
    context_bound: float
    gram_share: float
    mu: float  # the release's Gaussian multiplier (inf: noise off)
    sigma_H: float
    ridge: float
    S: float  # l2 bound on theta (projection; inf: none)

    @property
    def a_max(self) -> float:
        return GLM_LINKS[self.link][2]

    @property
    def tau2(self) -> float:
        """A release's noise variance per unit of signal direction in the Newton scaling (v_y = 1),
        ``sigma_g(S)^2 + sigma_H^2 S^2`` (S taken as 0 when unbounded); 0 with the noise off."""
        S = self.S if math.isfinite(self.S) else 0.0
        return float(self.sigma_g(np.array([S]))[0]) ** 2 + (self.sigma_H * S) ** 2

    def noise_scale(self) -> float:
        """n* of the public schedule (``docs/episodic-agents.md`` §6.5, §7): ``M d tau^2 / (a_max L^2)`` (a user adds
        at most ``a_max L^2 / (M d)`` to a model's average Hessian eigenvalue, and v_y = 1); 0 with the noise off."""
        return self.n_models * self.dim * self.tau2 / (self.a_max * self.L**2)

    def sigma_g(self, theta_norm: np.ndarray) -> np.ndarray:
        """Per-model sd of the gradient noise, ``2 L mu(L ||theta||) / (sqrt(1 - w) mu)`` ((M,)); 0 noise off."""
        if self.calibration == "none":
            return np.zeros_like(theta_norm)
        delta = 2.0 * self.L * GLM_LINKS[self.link][0](self.L * theta_norm)
        return _SAFETY * delta / (math.sqrt(1.0 - self.gram_share) * self.mu)


@dataclass(frozen=True)
class EpisodicGLMRelease:
    """One publication (read-only arrays): ``theta`` (M, d) the estimate; ``hessian`` (M, d, d) and ``gradient``
    (M, d) the last episode's noisy statistics (None with the noise off, where the estimate is kept by
    Sherman-Morrison); ``episode``: releases so far; ``shared``; ``row_clip`` the public
    l2 radius of the rows (inf: none)."""

    theta: np.ndarray
    hessian: np.ndarray | None
    gradient: np.ndarray | None
    episode: int
    shared: bool
    row_clip: float = math.inf


class EpisodicGLMCurator(EpisodicCurator):
    """The noisy per-episode Newton statistics (module docstring); ``rng`` is the job's "privacy" stream."""

    def __init__(self, cal: EpisodicGLMCalibration, schedule: EpisodeSchedule, n_arms: int,
                 rng: np.random.Generator) -> None:
        self.cal, self.rng = cal, rng
        M, d = cal.n_models, cal.dim
        self._H_noise = SymmetricGaussianNoise(cal.sigma_H) if cal.sigma_H > 0 else None
        self._combination = ReleaseCombination(M, d, 1.0, cal.tau2)
        self._sums = EpisodeSums(M, d, gram=True)
        # noise off: every weight is 1, so the estimate's V and right-hand side gain one rank-one term a user,
        # (sqrt(a) x)(sqrt(a) x)^T and x (a z - (mu - y)): kept by Sherman-Morrison (O(d^2) a user; §7)
        self._ridge = (RidgeState(n_arms, d, "disjoint" if M > 1 else "shared", cal.a_max * cal.ridge)
                       if self._H_noise is None else None)
        self._theta = np.zeros((M, d))  # the current release's theta (public), at which the episode is expanded
        super().__init__(schedule, cal.budget, n_arms, d, cal.context_norm, cal.context_bound, cal.clip,
                         chunk=CHUNK_ROWS)

    def _initial_release(self) -> EpisodicGLMRelease:
        M, d = self.cal.n_models, self.cal.dim
        return EpisodicGLMRelease(*read_only(np.zeros((M, d)), np.zeros((M, d, d)), np.zeros((M, d))),
                                  episode=0, shared=M == 1, row_clip=self.cal.row_clip)

    def _absorb(self, X: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        cal = self.cal
        if math.isfinite(cal.row_clip):
            X = clip_rows(X, cal.row_clip)
        models = arms if cal.n_models > 1 else np.zeros(len(arms), dtype=np.int64)
        mean, slope, _ = GLM_LINKS[cal.link]
        z = np.einsum("nd,nd->n", X, self._theta[models])
        # mu'(z) > 0 underflows to 0 far out (|z| > 38.6 probit, 709.8 logistic): floored at the smallest normal
        # float so that (mu - y)/sqrt(a) stays finite (a NaN sum would not be hidden by any noise); a <= a_max holds
        a = np.maximum(slope(z), np.finfo(float).tiny)
        root = np.sqrt(a)
        if self._ridge is not None:  # noise off: straight into the Newton system (constructor)
            for x, m, weight in zip(X * root[:, None], models, (a * z - mean(z) + rewards) / root):
                self._ridge.update(x, weight, int(m))
            return
        # sum (sqrt(a) x)(sqrt(a) x)^T = sum a x x^T and sum ((mu - y)/sqrt(a)) (sqrt(a) x) = sum (mu - y) x
        self._sums.absorb(X * root[:, None], arms if cal.n_models > 1 else None, (mean(z) - rewards) / root)

    def _publish(self, X: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> EpisodicGLMRelease:
        cal, M, d = self.cal, self.cal.n_models, self.cal.dim
        self._absorb(X, arms, rewards)
        if self._ridge is not None:
            return self._newton_release()
        H, g, _ = self._sums.take()
        if self._H_noise is not None:  # noise for every model, whatever the data
            self._H_noise.add_sample(self.rng, H)  # in place: no second (M, d, d) array
            sigma_g = cal.sigma_g(np.linalg.norm(self._theta, axis=1))
            g += sigma_g[:, None] * self.rng.standard_normal((M, d))
        H_w, b_w, w_norm = self._combination.add(H, np.einsum("mij,mj->mi", H, self._theta) - g)
        floor = cal.a_max * cal.ridge
        lam = noise_regulariser(floor, cal.sigma_H, w_norm, d)
        evals, evecs = np.linalg.eigh(H_w + lam[:, None, None] * np.eye(d))
        theta = self._projected(np.einsum("mij,mj,mkj,mk->mi", evecs, 1.0 / np.maximum(evals, floor), evecs, b_w))
        return EpisodicGLMRelease(*read_only(theta, H, g), episode=self.n_releases + 1, shared=M == 1,
                                  row_clip=cal.row_clip)

    def _projected(self, theta: np.ndarray) -> np.ndarray:
        """theta (M, d) projected on ``||theta||_2 <= S`` when S is stated (post-processing); kept as the point the
        next episode is expanded at."""
        if math.isfinite(self.cal.S):
            norms = np.linalg.norm(theta, axis=1)
            theta *= np.minimum(1.0, self.cal.S / np.maximum(norms, 1e-300))[:, None]
        self._theta = theta.copy()
        return theta

    def _newton_release(self) -> EpisodicGLMRelease:
        """Noise off: the weighted Newton estimate of every user so far from the Sherman-Morrison state (what the
        general path computes with equal weights, without the O(M d^3) decomposition); no statistic is formed
        (``hessian``, ``gradient`` None)."""
        M, d = self.cal.n_models, self.cal.dim
        theta, = read_only(self._projected(self._ridge.theta.reshape(M, d).copy()))
        return EpisodicGLMRelease(theta, None, None, episode=self.n_releases + 1, shared=M == 1,
                                  row_clip=self.cal.row_clip)

    def _record_release_cost(self, ledger: PrivacyLedger, count: int) -> None:
        cal = self.cal
        form = "shared" if cal.n_models == 1 else f"disjoint, {cal.n_models} per-arm blocks"
        if self._H_noise is None:
            ledger.add_non_private(f"episodic GLM Newton statistics ({form}), noise off")
            return
        ledger.add_gaussian(cal.sigma_H / (cal.a_max * cal.L**2), count, parallel=True,
                            mechanism=f"episodic GLM Hessian H~ ({form}; symmetric Gaussian sigma_H = "
                                      f"{cal.sigma_H:.6g})",
                            bound="docs/episodic-agents.md §7: ||a xx^T - a'x'x'^T||_F <= sqrt(2) a_max L^2, "
                                  "whitened a_max L^2/sigma_H")
        ledger.add_gaussian(_SAFETY / (math.sqrt(1.0 - cal.gram_share) * cal.mu), count, parallel=True,
                            mechanism=f"episodic GLM gradient g~ ({form}; Gaussian sigma_g = 2 L mu(L ||theta||) / "
                                      "(sqrt(1 - w) mu), iterate-dependent)",
                            bound="docs/episodic-agents.md §7: ||g - g'||_2 <= 2 L mu(L ||theta_{k-1}||) for y in [0, 1]")

    @property
    def sensitivity_assumption(self) -> str:
        cal = self.cal
        rows = (f"rows clipped to ||x||_2 <= L = {cal.L:.6g}" if math.isfinite(cal.row_clip)
                else f"||x||_2 <= L = {cal.L:.6g}")
        return (f"contexts {rows} (declared ||x||_{cal.context_norm[1:]} <= {cal.context_bound:g}); "
                f"{cal.clip.describe()}; {cal.link} model: mu' <= a_max = {cal.a_max:.6g}, |mu(z) - y| <= "
                "mu(L ||theta_{k-1}||); replace-one per episode; a user moved between arms costs no more")

    def _report_note(self) -> str:
        cal = self.cal
        if cal.calibration == "none":
            return f"One Newton step per episode ({cal.link}), weighted across episodes."
        return (f"Calibration {cal.calibration!r}: share w = {cal.gram_share:g} of mu^2 on the Hessian, sigma_H = "
                f"{cal.sigma_H:.6g}, sigma_g = 2 L mu(L ||theta||) / (sqrt(1 - w) mu) (at theta = 0: "
                f"{float(cal.sigma_g(np.zeros(1))[0]):.6g}); estimate: weighted Newton steps (post-processing).")


class EpisodicGLM(PrivateAgent):
    """Private episodic GLM agent (module docstring), (epsilon, delta)-JDP; shared or disjoint as the environment.

    Parameters
    ----------
    epsilon:
        > 0, or ``inf`` for noise off (guarantee "none").
    delta:
        In (0, 1); default 1/T.
    link:
        The model's link: ``"logistic"`` (default) or ``"probit"``.
    calibration:
        ``"exact"`` (analytic Gaussian, default) or ``"zcdp"``.
    gram_share:
        Share w in (0, 1) of mu^2 on the Hessian (default 1/2).
    first_episode, growth, episode_scale:
        The public schedule (:class:`~dpbandit.agents.episode_schedule.EpisodeSchedule`, ``docs/episodic-agents.md`` §6.5):
        an episode after s users has ``max(first, min(first + (growth - 1) s, ceil(sqrt(2 s n*))))`` users, n* =
        ``episode_scale``. Defaults: n* = ``M d tau^2 / (a_max L^2)`` from the noise scales (0 with the noise off),
        first = K d (disjoint) or d (shared), or 1 when n* = 0 (a Newton step after every user), growth 2; n* = inf
        gives the geometric schedule.
    ridge:
        > 0: the regulariser's base is ``a_max ridge`` (default 1), also the eigenvalue floor.
    row_clip:
        l2 radius rows are clipped to (default as the episodic ridge's, :func:`default_row_clip`; none with the
        noise off).
    """

    name = "episodic_glm"

    def __init__(self, constants: BanditConstants, epsilon: float = 1.0, delta: float | None = None,
                 link: str = "logistic", calibration: str = "exact", gram_share: float = 0.5,
                 first_episode: int | None = None, growth: int = 2, ridge: float = 1.0,
                 row_clip: float | None = None, episode_scale: float | None = None):
        budget = EpisodicBudget.build(constants, epsilon, delta)
        link = check_choice("link", link, tuple(GLM_LINKS))
        calibration = check_choice("calibration", calibration, ("exact", "zcdp"))
        w = check_real("gram_share", gram_share, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        ridge = check_real("ridge", ridge, low=0.0, low_inclusive=False)
        clip = reward_clip_range(constants, None)
        if not (0.0 <= clip.low and clip.high <= 1.0):
            raise ValueError(f"episodic_glm fits a {link} model to rewards in [0, 1]; the environment's rewards are "
                             f"clipped to [{clip.low:.6g}, {clip.high:.6g}] ({clip.rule}): use episodic_ridge")
        growth = check_int("growth", growth, low=1)
        if episode_scale is not None:
            episode_scale = check_real("episode_scale", episode_scale, low=0.0, allow_inf=True)
        self.epsilon, self.delta = budget.epsilon, budget.delta
        L = context_l2_bound(constants)
        if row_clip is None:  # the clip only lowers the noise: none with the noise off
            clip_radius = math.inf if budget.noise_off else default_row_clip(constants)
        else:
            clip_radius = check_real("row_clip", row_clip, low=0.0, low_inclusive=False, allow_inf=True)
        if clip_radius >= L:
            clip_radius = math.inf
        L = min(L, clip_radius)
        a_max = GLM_LINKS[link][2]
        if budget.noise_off:
            calibration, mu, sigma_H = "none", math.inf, 0.0
        else:
            mu = budget.mu if calibration == "exact" else math.sqrt(2.0 * budget.rho)
            sigma_H = _SAFETY * a_max * L * L / (math.sqrt(w) * mu)
        self.cal = EpisodicGLMCalibration(
            budget=budget, calibration=calibration, link=link,
            n_models=constants.n_arms if constants.structure == "disjoint" else 1, dim=constants.dim, L=L,
            row_clip=clip_radius, clip=clip, context_norm=constants.context_norm,
            context_bound=constants.context_bound, gram_share=w, mu=mu, sigma_H=sigma_H, ridge=ridge,
            S=theta_l2_bound(constants))
        if episode_scale is None:
            episode_scale = self.cal.noise_scale()
        if first_episode is None:
            first_episode = (1 if episode_scale == 0.0 else
                             default_first_episode(constants.n_arms, constants.dim, constants.structure))
        self.schedule = EpisodeSchedule(constants.horizon, check_int("first_episode", first_episode, low=1), growth,
                                        episode_scale)
        super().__init__(constants)

    def memory_estimate(self) -> int:
        """The chunk buffer and per model a few d x d matrices (sums, noise, eigendecomposition)."""
        return 8 * (CHUNK_ROWS * (self.dim + 2) + 6 * self.cal.n_models * (self.dim + 1) ** 2)

    def _make_curator(self, privacy_rng: np.random.Generator) -> EpisodicGLMCurator:
        return EpisodicGLMCurator(self.cal, self.schedule, self.n_arms, privacy_rng)

    @staticmethod
    def action_rule(release: EpisodicGLMRelease, observation: np.ndarray, rng: np.random.Generator) -> int:
        """``argmax_a x_a^T theta_a`` (shared: ``x_a^T theta``) on this user's (K, d) rows, clipped as the curator
        clips them; ties at random."""
        X = np.asarray(observation, dtype=float)
        if math.isfinite(release.row_clip):
            X = clip_rows(X, release.row_clip)
        scores = ridge_scores(release.theta, None, 0.0, release.shared, X)
        return argmax_random_tie(scores, rng)

    @staticmethod
    def _scores(release: EpisodicGLMRelease, X: np.ndarray) -> np.ndarray:
        """:meth:`action_rule`'s scores of the rounds' clipped rows X (m, K, d): (m, K)."""
        return ridge_scores(release.theta, None, 0.0, release.shared, X)

    def play_block(self, block: RoundBlock) -> np.ndarray:
        """The block's rounds, run by run between the curator's events (:mod:`~dpbandit.agents.episodic_blocks`):
        the arms, releases and draws of ``act`` / ``update``."""
        return play_episodic_block(self, block, self._scores)
