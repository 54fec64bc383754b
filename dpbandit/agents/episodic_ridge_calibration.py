"""The public constants of one episodic ridge run: noise scales, reward centring, the row clip, the Gram share and
its target bound (derivations in the docstring of :mod:`dpbandit.agents.episodic_ridge` and
``docs/episodic-agents.md`` §3, §6). Imported and re-exported by :mod:`~dpbandit.agents.episodic_ridge`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbandit.agents.episodic import EpisodicBudget
from dpbandit.agents.private import RewardClip, context_l2_bound, l2_bound_text, reward_clip_range
from dpbandit.agents.release_combination import ReleaseCombination
from dpbandit.envs.constants import BanditConstants
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.validation import check_real

__all__ = ["EpisodicRidgeCalibration", "MODES", "ROW_CLIP_FACTOR", "UNBOUNDED_GRAM_SHARE", "clip_rows",
           "default_row_clip", "residual_variance", "theta_l2_bound"]

#: Estimate from every release with optimal public weights (default), the last release only, or the plain sum.
MODES: tuple[str, ...] = ("weighted", "forget", "sum")
_SAFETY = 1.0 + 1e-9  # noise scales rounded up so the target survives floating-point error
#: Default ``gram_share`` when ``theta_bound`` is infinite (the optimal share ``L S / (L S + 2 B)`` is undefined).
UNBOUNDED_GRAM_SHARE = 0.5


#: Default l2 clip of l_inf-bounded rows, in units of b sqrt(d) / sqrt(2 ln(2 d)) (the l2 norm of a Gaussian vector
#: scaled to l_inf norm b): docs/episodic-agents.md §6.6.
ROW_CLIP_FACTOR = 1.5


def default_row_clip(c: BanditConstants) -> float:
    """The public l2 radius played rows are clipped to before they enter the statistics (§6.6): none (inf) for l2
    contexts; for l_inf contexts of bound b, ``b sqrt(d) min(1, 1.5 / sqrt(2 ln(2 d)))`` instead of the worst case
    ``b sqrt(d)``."""
    if c.context_norm != "linf" or c.dim < 2:
        return math.inf
    factor = ROW_CLIP_FACTOR / math.sqrt(2.0 * math.log(2.0 * c.dim))
    return math.inf if factor >= 1.0 else c.context_bound * math.sqrt(c.dim) * factor


def clip_rows(X: np.ndarray, radius: float) -> np.ndarray:
    """Rows of X (..., d) scaled to l2 norm <= radius (a new array; rows inside are unchanged)."""
    norms = np.sqrt(np.einsum("...i,...i->...", X, X))
    return X * np.minimum(1.0, radius / np.maximum(norms, 1e-300))[..., None]


def residual_variance(c: BanditConstants) -> float:
    """The public variance of a reward around its linear mean, where the environment states it: ``noise_std^2`` for
    a linear model with Gaussian noise (identity link, unbounded rewards, noise_std > 0); nan otherwise (then the
    clip's Popoviciu bound ``((hi - lo) / 2)^2`` applies: 1/4 for rewards in [0, 1])."""
    if c.link == "identity" and c.noise_std > 0 and math.isinf(c.reward_low) and math.isinf(c.reward_high):
        return float(c.noise_std) ** 2
    return math.nan


def theta_l2_bound(c: BanditConstants) -> float:
    """A bound on ``||theta||_2`` from the environment's ``||theta||_{theta_norm} <= theta_bound`` (l1 and l2 bounds
    bound l2; an l_inf bound with ``sparsity`` non-zero entries gives ``sqrt(sparsity) theta_bound``); inf when
    unstated."""
    return c.theta_bound * (math.sqrt(c.sparsity) if c.theta_norm == "linf" else 1.0)


@dataclass(frozen=True)
class EpisodicRidgeCalibration:
    """Every public constant of one run (module docstring)."""

    budget: EpisodicBudget
    calibration: str  # "exact", "zcdp" or "none" (epsilon = inf)
    n_models: int
    dim: int
    L: float
    B: float
    clip: RewardClip
    context_norm: str
    context_bound: float
    gram_share: float
    gram_share_rule: str  # how gram_share was chosen (stated in the privacy report)
    sigma_G: float
    sigma_b: float
    ridge: float
    lam: float | None  # fixed regulariser, or None for ridge + 2 sigma_G sqrt(m d)
    mode: str
    ucb_alpha: float
    centre: float = 0.0  # c subtracted from every clipped reward ((lo + hi)/2 when centring)
    target_bound: float = math.inf  # S_r: public bound on the ridge target's l2 norm (weights, gram share)
    theta_l2: float = math.inf  # S: l2 bound on theta (the UCB width)
    rule: str = "greedy"
    alpha: float = 0.05  # failure probability of the UCB width
    row_clip: float = math.inf  # l2 radius rows are clipped to (inf: none); L = min(declared bound, row_clip)
    gram_pool: bool = False  # disjoint: the arms' Gram matrices share one pooled shape (§6.7)
    residual_var: float = math.nan  # public variance of y - x^T theta the schedule uses (§6.5); nan: spread^2

    @classmethod
    def build(cls, c: BanditConstants, budget: EpisodicBudget, calibration: str, gram_share: float | None,
              ridge: float, lam: float | None, mode: str, ucb_alpha: float,
              reward_clip: float | None, centre: bool = False, rule: str = "greedy", alpha: float = 0.05,
              target_bound: float | None = None, row_clip: float | None = None,
              gram_pool: bool = False) -> EpisodicRidgeCalibration:
        L = context_l2_bound(c)
        if row_clip is None:  # the clip only lowers the noise: none with the noise off (docs §6.5)
            row_clip = math.inf if budget.noise_off else default_row_clip(c)
        else:
            row_clip = check_real("row_clip", row_clip, low=0.0, low_inclusive=False, allow_inf=True)
        if row_clip >= L:
            row_clip = math.inf  # the declared bound already holds: nothing to clip
        L = min(L, row_clip)
        clip = reward_clip_range(c, reward_clip, name="reward_clip")
        B = clip.bound
        shift = 0.0
        if centre and math.isfinite(clip.low) and math.isfinite(clip.high):
            shift, B = (clip.low + clip.high) / 2.0, (clip.high - clip.low) / 2.0  # |y - c| <= B (§6.1)
        S2 = theta_l2_bound(c)
        if target_bound is not None:
            S_r = check_real("target_bound", target_bound, low=0.0, low_inclusive=False)
        else:
            S_r = min(S2, 2.0 * B / L)  # §6.2: caps the default share at 1/2
        if gram_share is not None:
            rule_w = "given"
        elif math.isfinite(S2) or target_bound is not None:
            gram_share = L * S_r / (L * S_r + 2.0 * B)
            rule_w = (f"default L S / (L S + 2 B) with S = S_r = {S_r:.4g} = min(||theta||_2 bound, 2 B / L), "
                      "docs/episodic-agents.md §6.2" if target_bound is None else
                      f"default L S / (L S + 2 B) with S = target_bound = {S_r:.4g}")
        else:
            gram_share = UNBOUNDED_GRAM_SHARE
            rule_w = ("default for theta_bound = inf: an even split (L S / (L S + 2 B) needs a finite theta_bound; "
                      "pass theta_bound= to the environment or gram_share=)")
        w = check_real("gram_share", gram_share, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        if budget.noise_off:
            calibration, sigma_G, sigma_b = "none", 0.0, 0.0
        else:
            mu = budget.mu if calibration == "exact" else math.sqrt(2.0 * budget.rho)
            sigma_G = _SAFETY * L * L / (math.sqrt(w) * mu)
            sigma_b = _SAFETY * 2.0 * L * B / (math.sqrt(1.0 - w) * mu)
        return cls(budget=budget, calibration=calibration, n_models=c.n_arms if c.structure == "disjoint" else 1,
                   dim=c.dim, L=L, B=B, clip=clip, context_norm=c.context_norm, context_bound=c.context_bound,
                   gram_share=w, gram_share_rule=rule_w, sigma_G=sigma_G, sigma_b=sigma_b, ridge=ridge, lam=lam,
                   mode=mode, ucb_alpha=ucb_alpha, centre=shift, target_bound=S_r, theta_l2=S2, rule=rule, alpha=alpha,
                   row_clip=row_clip, gram_pool=gram_pool and c.structure == "disjoint" and not budget.noise_off,
                   residual_var=residual_variance(c))

    @property
    def spread(self) -> float:
        """R = (hi - lo) / 2: the sub-Gaussian proxy of a clipped reward, and v_y = R^2 bounds its variance."""
        return (self.clip.high - self.clip.low) / 2.0

    @property
    def tau2(self) -> float:
        """A release's noise variance per unit of signal direction, ``tau^2 = sigma_b^2 + sigma_G^2 S_r^2`` (§6.2;
        S_r taken as 0 when unbounded); 0 with the noise off."""
        S_r = self.target_bound if math.isfinite(self.target_bound) else 0.0
        return self.sigma_b**2 + (self.sigma_G * S_r) ** 2

    def combination(self) -> ReleaseCombination:
        """The weighted mode's combination (``tau^2``, v_y = R^2; §6.2)."""
        return ReleaseCombination(self.n_models, self.dim, self.spread**2, self.tau2)

    def noise_scale(self) -> float:
        """n* of the public schedule (``docs/episodic-agents.md`` §6.5): the users an episode needs before its
        release's noise variance is no larger than its sampling variance, ``M d tau^2 / (v_y L^2)`` (a user adds
        about ``||x||^2 / (M d) <= L^2 / (M d)`` to a model's average Gram eigenvalue; v_y the public residual
        variance, :func:`residual_variance`, else the clip's bound ``spread^2``); 0 with the noise off. Mode "forget"
        keeps no earlier release, so its schedule is the geometric one (inf)."""
        if self.mode == "forget":
            return math.inf
        if self.tau2 == 0.0:
            return 0.0
        v_y = self.residual_var if math.isfinite(self.residual_var) else self.spread**2
        return self.n_models * self.dim * self.tau2 / (v_y * self.L**2)

    def regulariser(self, m: int) -> float:
        """``lam`` for an estimate from the sum of ``m`` releases."""
        if self.lam is not None:
            return self.lam
        return self.ridge + 2.0 * self.sigma_G * math.sqrt(m * self.dim)

    @property
    def sensitivity_assumption(self) -> str:
        if math.isfinite(self.row_clip):
            bound = (f"rows clipped to ||x||_2 <= L = {self.L:.6g} before they enter the statistics (declared "
                     f"||x||_{self.context_norm[1:]} <= {self.context_bound:g}; docs/episodic-agents.md §6.6)")
        else:
            bound = l2_bound_text(self.context_norm, self.context_bound, self.L)
        y = f"|y - {self.centre:.6g}| (centred)" if self.centre else "|y|"
        return (f"contexts {bound} (environment constants); {self.clip.describe()}, so {y} <= B = {self.B:.6g}; "
                f"replace-one per episode: ||xx^T - x'x'^T||_F <= sqrt(2) L^2 (whitened L^2/sigma_G under symmetric "
                f"noise, docs/episodic-agents.md §3.1), ||xy - x'y'||_2 <= 2 L B; a user moved between arms costs no "
                "more")

    def record_release_cost(self, ledger: PrivacyLedger, count: int) -> None:
        """The per-release mechanisms (module docstring of :mod:`~dpbandit.agents.episodic_ridge`) as parallel
        events of ``count`` releases, or one non-private event with the noise off."""
        form = "shared" if self.n_models == 1 else f"disjoint, {self.n_models} per-arm blocks"
        if self.sigma_G == 0:
            ledger.add_non_private(f"episodic ridge statistics ({form}), noise off")
            return
        ledger.add_gaussian(self.sigma_G / self.L**2, count, parallel=True,
                            mechanism=f"episodic Gram matrix G~ ({form}; symmetric Gaussian sigma_G = "
                                      f"{self.sigma_G:.6g})",
                            bound="docs/episodic-agents.md §3.1: whitened shift ||D||_F/(sqrt 2 sigma_G) "
                                  "<= L^2/sigma_G")
        ledger.add_gaussian(self.sigma_b / (2.0 * self.L * self.B), count, parallel=True,
                            mechanism=f"episodic moment vector b~ ({form}; Gaussian sigma_b = {self.sigma_b:.6g})",
                            bound="Gaussian mechanism, l2 sensitivity 2 L B")

    def report_note(self) -> str:
        """The privacy report's note on the calibration, the estimate and the rule."""
        centred = f"rewards centred at c = {self.centre:.6g}; " if self.centre else ""
        if self.gram_pool:
            centred += "Gram matrices pooled across arms (docs/episodic-agents.md §6.7); "
        rule = f"action rule {self.rule!r}" + (f" (width failure probability alpha = {self.alpha:g})"
                                               if self.rule == "ucb" else "")
        if self.calibration == "none":
            return f"Estimate: mode {self.mode!r}, ridge {self.ridge:g}; {centred}{rule}."
        return (f"Calibration {self.calibration!r}: gram_share w = {self.gram_share:.4g} ({self.gram_share_rule}), "
                f"sigma_G = {self.sigma_G:.6g}, sigma_b = {self.sigma_b:.6g}; {centred}estimate mode {self.mode!r} "
                f"(post-processing of released arrays: each user is in one release either way), regulariser "
                f"{self.regulariser(1):.6g} for one release; {rule} (post-processing).")
