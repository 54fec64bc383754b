"""DP-UCB's constants, node noise and privacy report (``dpbandit.agents.dp_ucb``, whose docstring derives them):
:func:`dpucb_sigma` calibrates the Gram-matrix tree's node noise sigma_n (``spec/errata.md`` E6, or the paper's
§7.4 formula), :class:`DPUCBCalibration` holds every constant of a run, derived from the environment's public
constants only, and :func:`privacy_report` states the releases' guarantee (one Gaussian mechanism in every form,
accounted at the full (epsilon, delta); "none" with the noise off).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from dpbandit.agents.private import RewardClip, context_l2_bound, l2_bound_text, reward_clip_range
from dpbandit.envs.constants import BanditConstants
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.noise import SymmetricGaussianNoise
from dpbandit.privacy.report import PrivacyReport
from dpbandit.privacy.tree import TreeAccounting, tree_depth
from dpbandit.privacy.tree_calibration import calibrate_tree_sigma
from dpbandit.validation import check_choice, check_delta, check_epsilon, check_int, check_real

__all__ = ["CALIBRATIONS", "DPUCBCalibration", "dpucb_sigma", "paper_levels", "privacy_report"]

#: Node-noise calibrations: E6 (tight) or the paper's formula (§7.4).
CALIBRATIONS: tuple[str, ...] = ("tight", "paper")


def paper_levels(horizon: int) -> int:
    """The papers' ``m = ceil(log2 T) + 1`` (>= the L_T = floor(log2 T) + 1 nodes an item really enters)."""
    return (check_int("horizon", horizon, low=1) - 1).bit_length() + 1


def dpucb_sigma(epsilon: float, delta: float, horizon: int, l_tilde: float, calibration: str = "tight") -> float:
    """Node std sigma_n of the Gram-matrix tree: (epsilon, delta)-DP releases for items ``v v^T``, ``||v|| <= L~``.

    "tight" (``spec/errata.md`` E6): ``sqrt(L_T) L~^2 / mu*``; "paper" (§7.4, E5): ``4 sqrt(m) L~^2 ln(4/delta) /
    epsilon``. Known answers (T = 1e4, epsilon = 1, delta = 1e-4, L~ = sqrt 2): 23.84 and 328.3. ``epsilon = inf``
    gives 0 (noise off).
    """
    epsilon = check_epsilon(epsilon, allow_inf=True)
    delta = check_delta(delta, allow_zero=False)
    l_tilde = check_real("l_tilde", l_tilde, low=0.0, low_inclusive=False)
    calibration = check_choice("calibration", calibration, CALIBRATIONS)
    check_int("horizon", horizon, low=1)
    if math.isinf(epsilon):
        return 0.0
    if calibration == "paper":
        return 4.0 * math.sqrt(paper_levels(horizon)) * l_tilde**2 * math.log(4.0 / delta) / epsilon
    # E5: per-node Mahalanobis shift <= L~^2/sigma_n, i.e. a Gaussian of sensitivity L~^2 per node, L_T nodes.
    return calibrate_tree_sigma(epsilon, delta, horizon, l_tilde**2, method="exact")


@dataclass(frozen=True)
class DPUCBCalibration:
    """Every constant of one DP-UCB run (module docstring), derived from the environment's public constants."""

    epsilon: float
    delta: float
    calibration: str  # "tight", "paper" or "none" (epsilon = inf)
    horizon: int
    dim: int
    n_models: int
    context_norm: str
    context_bound: float
    L: float  # l2 bound of a feature vector
    clip: RewardClip  # the reward clip (private.reward_clip_range)
    B: float  # bound on |reward| after clipping
    l_tilde: float
    sigma_n: float
    m: int
    alpha: float
    lam: float
    sigma: float  # sub-Gaussian scale of the reward noise (E5)
    S: float  # l2 bound of theta
    upsilon: float
    rho_min: float
    rho_max: float
    gamma: float

    @classmethod
    def build(cls, c: BanditConstants, epsilon: float, delta: float, calibration: str, alpha: float, lam: float,
              reward_clip: float | None) -> DPUCBCalibration:
        d, T = c.dim, c.horizon
        L = context_l2_bound(c)
        clip = reward_clip_range(c, reward_clip, name="reward_clip")
        B = clip.bound
        l_tilde = math.sqrt(L * L + B * B)
        private = math.isfinite(epsilon)
        sigma_n = dpucb_sigma(epsilon, delta, T, l_tilde, calibration)
        m = paper_levels(T)
        log_term = math.log(2.0 * T / alpha)
        upsilon = sigma_n * math.sqrt(2.0 * m) * (4.0 * math.sqrt(d) + 2.0 * log_term)
        rho_min, rho_max = upsilon + lam, 3.0 * upsilon + lam
        gamma = sigma_n * math.sqrt(m) * (math.sqrt(d) + math.sqrt(2.0 * log_term)) / math.sqrt(rho_min)
        sigma = c.noise_std if c.link == "identity" else 0.5  # a {0, 1} reward is 1/2-sub-Gaussian
        return cls(
            epsilon=epsilon, delta=delta, calibration=calibration if private else "none", horizon=T, dim=d,
            n_models=c.n_arms if c.structure == "disjoint" else 1, context_norm=c.context_norm,
            context_bound=c.context_bound, L=L, clip=clip, B=B, l_tilde=l_tilde, sigma_n=sigma_n, m=m, alpha=alpha,
            lam=lam, sigma=sigma, S=c.theta_bound, upsilon=upsilon, rho_min=rho_min, rho_max=rho_max, gamma=gamma,
        )

    @property
    def shift(self) -> float:
        """The regulariser added to the noisy Gram matrix: ``2 Upsilon + lam``."""
        return 2.0 * self.upsilon + self.lam

    def beta(self, t: int) -> float:
        """Confidence width beta_t after t public rounds (§7.4, square-root form)."""
        log_alpha, ratio, L2, d_rho, offset = self._beta_terms
        inner = log_alpha + self.dim * math.log(ratio + t * L2 / d_rho)
        return self.sigma * math.sqrt(inner) + offset + self.gamma

    @cached_property
    def _beta_terms(self) -> tuple[float, ...]:
        """beta_t's terms that do not depend on t (computed once; beta runs every round)."""
        return (2.0 * math.log(2.0 / self.alpha), self.rho_max / self.rho_min, self.L**2, self.dim * self.rho_min,
                self.S * math.sqrt(self.rho_max))

    @property
    def sensitivity_assumption(self) -> str:
        bound = l2_bound_text(self.context_norm, self.context_bound, self.L)
        return (f"contexts {bound} (environment constants); {self.clip.describe()}, so |y| <= B = {self.B:.6g}; "
                f"L~ = sqrt(L^2 + B^2) = {self.l_tilde:.6g}; one item [x; y][x; y]^T per user, replace-one change "
                f"||vv^T - ww^T||_F <= sqrt(2) L~^2 (E5, docs/derivations.md#e5)")


def privacy_report(cal) -> PrivacyReport:
    """The privacy report of a DP-UCB run with the constants ``cal`` (a :class:`~dpbandit.agents.dp_ucb.
    DPUCBCalibration`): the Gram-matrix tree, one Gaussian mechanism in every form (``dpbandit.agents.dp_ucb``,
    "Joint DP"), accounted at the full (epsilon, delta); guarantee "none" with the noise off."""
    ledger = PrivacyLedger(neighboring="replace-one")
    form = "shared" if cal.n_models == 1 else f"disjoint, {cal.n_models} per-arm blocks on one clock"
    # the packed Gaussian tree is the symmetric-noise tree of E5 (module dpbandit.privacy.packed); recorded so
    depth = tree_depth(cal.horizon)
    accounting = TreeAccounting(mechanism="binary tree (vanilla)",
                                noise=SymmetricGaussianNoise(cal.sigma_n) if cal.sigma_n > 0 else None,
                                nodes_per_item=depth, depth=depth, horizon=cal.horizon,
                                shape=(cal.n_models, cal.dim + 1, cal.dim + 1))
    ledger.add_tree(accounting, math.sqrt(2.0) * cal.l_tilde**2,
                    mechanism=f"DP-UCB Gram-matrix tree ({form}; sigma_n: {cal.calibration})")
    if cal.calibration == "none":
        return ledger.report(cal.delta, guarantee="none", sensitivity_assumption=cal.sensitivity_assumption,
                             note="epsilon = inf: noise off, no privacy guarantee (ridge LinUCB, OFUL width)")
    note = (f"target (epsilon, delta) = ({cal.epsilon:g}, {cal.delta:g}); sigma_n = {cal.sigma_n:.6g} "
            f"({'E6, docs/derivations.md#e6' if cal.calibration == 'tight' else 'docs/derivations.md#hfw-7, E5'}); "
            f"Upsilon = {cal.upsilon:.6g}, regulariser 2 Upsilon + lam = {cal.shift:.6g}, alpha = {cal.alpha:g}. "
            "JDP by the billboard lemma: actions use only the releases and the user's own context.")
    if cal.n_models > 1:
        note += (" Disjoint form: a user's data decides which arm's block gets the real item; the change over all "
                 "K blocks is <= sqrt(2) L~^2 in Frobenius norm either way, so the K blocks are one Gaussian "
                 "mechanism (one tree), accounted once at the full budget.")
    return ledger.report(cal.delta, guarantee="JDP", sensitivity_assumption=cal.sensitivity_assumption,
                         note=note, target_epsilon=cal.epsilon)
