"""DP-UCB: linear UCB with changing perturbations (Shariff & Sheffet 2018), the paper version of
``spec/han-frank-wolfe.md`` §7.4 as corrected by ``spec/errata.md`` E5, with the tighter node noise of E6 as option.

**Curator** (sees the data). Each served user contributes ``v_t = [x_{t,a_t}; y_t]`` (d+1), with the reward clipped
to ``[-B, B]``; a :class:`~dpbandit.privacy.tree.TreeAggregator` releases the prefix sums of the (d+1)x(d+1) items
``v v^T`` with :class:`~dpbandit.privacy.noise.SymmetricGaussianNoise` ``Z = (Z' + Z'^T)/sqrt 2`` per node
(off-diagonal variance ``sigma_n^2``, diagonal ``2 sigma_n^2``; E5). From the noisy release
``N = [[G + H~, u + h], [., .]]`` it publishes (the bottom-right entry, a sum of y^2, is never used or published)

    V_t = N[:d, :d] + (2 Upsilon + lam) I,   theta_hat_t = V_t^{-1} N[:d, d],   beta_t,

as a :class:`DPUCBRelease` of read-only arrays (the lower Cholesky factor of V_t rather than its inverse). The
shifted regulariser ``2 Upsilon I`` (§7.4) keeps V_t positive definite with probability >= 1 - alpha; on the
complementary event the factorisation fails and V_t is lifted to ``lambda_min = rho_min`` (post-processing, no
privacy cost). ``lam`` is a ridge term on top of the paper's shift (the paper is lam = 0); it is negligible against
``2 Upsilon`` when noise is on and makes the noise-off agent (epsilon = inf) ridge LinUCB with the OFUL width.

**Action rule** (static; sees only the latest release and the current user's observation):
``a_t = argmax_a  x_a^T theta_hat + beta_t ||x_a||_{V_t^{-1}}`` (the square-root width; ties at random).

**Constants** (§7.4 [recalled], E5): ``m = ceil(log2 T) + 1``, ``L~ = sqrt(L^2 + B^2)``,
``Upsilon = sigma_n sqrt(2m) (4 sqrt d + 2 ln(2T/alpha))``, ``rho_min = Upsilon + lam``, ``rho_max = 3 Upsilon + lam``,
``gamma = sigma_n sqrt(m) (sqrt d + sqrt(2 ln(2T/alpha))) / sqrt(rho_min)`` (the paper's gamma at lam = 0) and
``beta_t = sigma sqrt(2 ln(2/alpha) + d ln(rho_max/rho_min + t L^2/(d rho_min))) + S sqrt(rho_max) + gamma``, where
sigma is the reward noise's sub-Gaussian scale (E5: not sigma_n), S the l2 bound on theta, and t the public round
count (in the disjoint form an upper bound on the arm's sample count, which is data-dependent and never released).

**Node noise** ``sigma_n``:

* ``calibration="tight"`` (default; ``spec/errata.md`` E6): ``sigma_n = sqrt(L_T) L~^2 / mu*`` with
  ``L_T = floor(log2 T) + 1`` the nodes per item and ``mu*`` the analytic-Gaussian mu of (epsilon, delta);
  T = 1e4, epsilon = 1, delta = 1e-4, L~^2 = 2: 23.84.
* ``calibration="paper"``: ``sigma_n^2 = 16 m L~^4 ln(4/delta)^2 / epsilon^2`` (§7.4, valid for every epsilon by E5);
  same point: 328.3 (it certifies epsilon = 0.051 there, which the report states).
* ``epsilon = inf``: noise off, guarantee "none".

**Sensitivity** (E5): ``||v||_2 <= L~`` with L the context l2 bound (for l_inf contexts of bound b, L = sqrt(d) b)
and B the reward clip, so a replaced user changes an item by ``||v v^T - w w^T||_F <= sqrt(2) L~^2`` and every
node is a Gaussian mechanism with Mahalanobis shift ``<= L~^2 / sigma_n``; the tree is one Gaussian with
``mu = sqrt(L_T) L~^2 / sigma_n`` (``spec/dp-testing-and-accounting.md`` §1.1). Rewards are clipped by the private
agents' one rule, :func:`~dpbandit.agents.private.reward_clip_range`: to the environment's reward range when it is
bounded, else to the mean bounds -/+ 4 noise_std (``reward_clip`` = B overrides either with [-B, B]); B is the largest
|reward| after clipping, and the report's sensitivity assumption names the rule used.

**Joint DP** (billboard lemma, ``spec/private-oco-learners.md`` §7): the releases are (epsilon, delta)-DP in each
user's data and the action of user t is a function of the release before t and user t's own observation, so the
actions of all other users are (epsilon, delta)-JDP. Forms, from ``constants.structure``:

* shared (one theta over per-arm features): one tree, the item of the played arm's feature vector.
* disjoint (one model per arm): K trees on one clock; every round the played arm's tree gets ``v v^T`` and every
  other arm's tree a zero item (so the tree layout never depends on the data). *A user whose data decides which
  arm's tree gets the real item*: a neighbour either changes one tree's item (``||D||_F <= sqrt 2 L~^2``) or removes
  ``v v^T`` from one tree and adds ``w w^T`` to another (``||D_1||_F^2 + ||D_2||_F^2 = ||v||^4 + ||w||^4 <= 2 L~^4``).
  All nodes of all K trees carry independent noise of the same sigma_n and the two affected trees' nodes are at the
  same levels, so the K trees together are one Gaussian mechanism with the same ``mu = sqrt(L_T) L~^2 / sigma_n``:
  every arm's tree is calibrated at the full (epsilon, delta), with no split, and the ledger records the K trees as
  that one mechanism.

Cost per round: M (d+1)(d+2)/2 normals for the node closing now (the tree's noise kept apart from the exact sums,
:class:`~dpbandit.privacy.tree_noise.TreeNoise`), then one compiled kernel (:mod:`dpbandit.agents.dp_ucb_kernels`): the
rank-one update of the played model's exact sums, O(M (d+1)^2) work for the noisy V_t and u, and ``M`` LAPACK
Cholesky factorisations ``O(d^3)``, M = 1 (shared) or K (disjoint; with noise off only the played arm's model
changes and only its factor is recomputed); in the action rule one more kernel, one LAPACK triangular solve per
model. ``benchmarks/dpucb_benchmark.py`` prints it as a ratio to that bare work measured in the same run. Per-seed
results changed three times in issue 15 (same law, same draws per round), by rounding: the node noise fills packed
entries column by column (before: full matrices, row by row); the release is computed as exact sums plus the
path's noise (before: as a sum of noisy tree nodes); the kernels replaced BLAS ``dsyr`` and numpy's batched
Cholesky.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dpbandit.agents import dp_ucb_kernels as kernels
from dpbandit.agents.baselines import argmax_random_tie, check_arm
from dpbandit.agents.dp_ucb_release import DPUCBRelease, factor, frozen, ucb_index
from dpbandit.agents.private import (CONTEXT_RTOL, Curator, PrivateAgent, RewardClip, check_context_bound,
                                     context_l2_bound, l2_bound_text, require_finite_theta_bound,
                                     reward_clip_range)
from dpbandit.envs.constants import BanditConstants
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.tree_calibration import calibrate_tree_sigma
from dpbandit.privacy.noise import GaussianNoise, SymmetricGaussianNoise
from dpbandit.privacy.packed import packed_layout
from dpbandit.privacy.tree import TreeAccounting, tree_depth
from dpbandit.privacy.tree_noise import TreeNoise
from dpbandit.validation import check_choice, check_delta, check_epsilon, check_int, check_real

__all__ = ["CALIBRATIONS", "DPUCB", "DPUCBCalibration", "DPUCBCurator", "DPUCBRelease", "dpucb_sigma", "paper_levels"]

#: Node-noise calibrations: E6 (tight) or the paper's formula (§7.4).
CALIBRATIONS: tuple[str, ...] = ("tight", "paper")

_NO_NOISE = np.empty(0)  # the packed noise with the noise off


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


def lift(chol: np.ndarray, V: np.ndarray, failed: np.ndarray, rho_min: float) -> None:
    """Refactor into ``chol`` (M, d, d) the models where ``failed`` (M,) is set, their V_t (``V``, lower
    triangles) lifted to ``lambda_min = rho_min`` (:func:`~dpbandit.agents.dp_ucb_release.factor`)."""
    for m in np.flatnonzero(failed):
        chol[m] = factor(V[m], rho_min)


class DPUCBCurator(Curator):
    """Owns the Gram-matrix tree and publishes :class:`DPUCBRelease` s (module docstring); ``cal`` fixes every
    constant, ``rng`` is the job's "privacy" stream.

    The tree is kept as its two parts (:class:`~dpbandit.privacy.tree_noise.TreeNoise`): the exact sums
    ``sum_s v_s v_s^T`` of the M models (zero items for the arms not played; a rank-one update per round), held with
    the shift ``(2 Upsilon + lam) I`` on the Gram block's diagonal as ``gram`` (M, d+1, d+1), and the node noise, iid
    ``N(0, sigma_n^2)`` on the packed upper triangles ``phi`` of :mod:`dpbandit.privacy.packed` ((M, P) per node,
    P = (d+1)(d+2)/2: the draws the symmetric noise needs). phi is an isometry (``||phi(D)||_2 = ||D||_F / sqrt 2``),
    so this is exactly E5's symmetric noise of the same sigma_n on items of Frobenius sensitivity sqrt(2) L~^2; the
    ledger records that form.
    """

    def __init__(self, cal: DPUCBCalibration, n_arms: int, rng: np.random.Generator) -> None:
        self.cal = cal
        self.n_arms = n_arms
        d, M = cal.dim, cal.n_models
        packed = M * (d + 1) * (d + 2) // 2
        self._noise = (TreeNoise((packed,), cal.horizon, GaussianNoise(cal.sigma_n), rng)
                       if cal.sigma_n > 0 else None)
        self._gram = np.zeros((M, d + 1, d + 1))
        self._gram.reshape(M, -1)[:, : (d + 1) * d : d + 2] = cal.shift  # the Gram block's diagonal
        self._V = np.zeros((M, d, d))  # V_t's lower triangles, refilled every round
        self._u_shape, self._shared = (M, d), M == 1
        self._v = np.zeros(d + 1)  # the item [x; y]; zero at first, so the first publish adds nothing
        self._failed = np.zeros(M, dtype=np.int64)
        self._t = 0
        # the constants of a round's checks, looked up once
        self._shape, self._clip = (n_arms, d), (cal.clip.low, cal.clip.high, cal.context_norm == "linf")
        self._bound = cal.context_bound * (1.0 + CONTEXT_RTOL)
        self._release = self.publish(0, _NO_NOISE, frozen(np.empty((0, d, d))))

    @property
    def t(self) -> int:
        """Users served so far."""
        return self._t

    def observe(self, observation: np.ndarray, arm: int, reward: float) -> None:
        real = self.stage(observation, arm, reward)
        noise = self._noise
        if noise is None:
            self._release = self.publish(real, _NO_NOISE, self._release.cholesky)
            return
        # the closing node's draw from the privacy stream, then one kernel closes it and publishes
        level, draw = noise.next_node()
        chol, u = np.empty(self._V.shape), np.empty(self._u_shape)
        failures = kernels.close_and_publish(noise.suffix, level, draw, noise.scale, self._gram, self._v, real,
                                             self._V, u, chol, self._failed)
        self._release = self._released(chol, u, failures)

    def publish(self, model: int, noise: np.ndarray, previous: np.ndarray) -> DPUCBRelease:
        """Add the staged item to ``model``'s exact sums and release the noisy V_t and u
        (:func:`~dpbandit.agents.dp_ucb_kernels.publish`, which factors every model when the noise is on, else only
        ``model``, keeping the others' ``previous`` factors); a V_t that the noise made indefinite is lifted
        (:func:`~dpbandit.agents.dp_ucb_release.factor`). (A noisy round of :meth:`observe` runs the same kernel
        behind the tree's node closing, in one call.)"""
        chol, u = np.empty(self._V.shape), np.empty(self._u_shape)
        failures = kernels.publish(self._gram, self._v, model, noise, self._V, u, chol, previous, self._failed)
        return self._released(chol, u, failures)

    def _released(self, chol: np.ndarray, u: np.ndarray, failures: int) -> DPUCBRelease:
        """The release of the factors ``chol`` and responses ``u`` a kernel wrote, the failed models lifted."""
        if failures:
            lift(chol, self._V, self._failed, self.cal.rho_min)
        chol.setflags(write=False)
        u.setflags(write=False)
        return DPUCBRelease(self._t, chol, u, self.cal.beta(self._t), self._shared)

    def stage(self, observation: np.ndarray, arm: int, reward: float) -> int:
        """Check one user's data, count the user and set ``v = [x; clipped y]``; returns the model that gets the
        real item (the disjoint form's other models get zero items: one clock, fresh node noise for all)."""
        cal, K = self.cal, self.n_arms
        obs = np.asarray(observation, dtype=float)
        if obs.shape != self._shape:
            raise ValueError(f"observation must have shape (K, d) = {(K, cal.dim)}, got {obs.shape}")
        low, high, linf = self._clip
        # a Python int arm in range and a float reward go straight to the kernel; anything else is checked first
        fast = type(arm) is int and 0 <= arm < K and type(reward) is float
        norm = kernels.load_item(obs, arm, reward, low, high, linf, self._v) if fast else math.nan
        if not norm <= self._bound:  # (NaN fails)
            arm, reward = check_arm(arm, K), check_real("reward", reward)
            norm = kernels.load_item(obs, arm, reward, low, high, linf, self._v)
            if not norm <= self._bound:
                check_context_bound(obs[arm], cal.context_norm, cal.context_bound)  # raises, with the message
        if self._t >= cal.horizon:
            raise ValueError(f"DP-UCB is calibrated for horizon T = {cal.horizon} (the environment's); cannot serve "
                             f"user {self._t + 1}")
        self._t += 1
        return 0 if cal.n_models == 1 else arm

    def noisy_statistics(self) -> np.ndarray:
        """The tree's current release as symmetric matrices (M, d+1, d+1): noisy ``sum_s v_s v_s^T`` (for tests)."""
        d, M = self.cal.dim, self.cal.n_models
        exact = np.tril(self._gram)
        exact.reshape(M, -1)[:, : (d + 1) * d : d + 2] -= self.cal.shift
        exact += np.tril(exact, -1).transpose(0, 2, 1)
        if self._noise is None:
            return exact
        return exact + packed_layout(d + 1).unpack(self._noise.suffix[0].reshape(M, -1))

    def release(self) -> DPUCBRelease:
        return self._release

    def privacy_report(self):
        cal = self.cal
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


class DPUCB(PrivateAgent):
    """DP-UCB (Shariff & Sheffet 2018), (epsilon, delta)-JDP; shared or disjoint as the environment's structure.

    Parameters
    ----------
    epsilon:
        > 0, or ``inf`` for noise off (guarantee "none").
    delta:
        In (0, 1); default 1/T.
    calibration:
        Node noise: ``"tight"`` (E6, default) or ``"paper"`` (§7.4); recorded in the privacy report.
    alpha:
        Failure probability of the confidence bounds, in (0, 1); default 1/T.
    lam:
        Ridge term added to the shift 2 Upsilon, >= 0 (the paper: 0); must be > 0 when epsilon = inf.
    reward_clip:
        B > 0: rewards are clipped to [-B, B] (default: :func:`~dpbandit.agents.private.reward_clip_range`, the
        environment's reward range, or the mean bounds -/+ 4 noise_std when rewards are unbounded).
    horizon:
        Optional check: must equal the environment's T (the trees and widths are sized by it).

    The confidence width needs S, the environment's finite ``theta_bound``: with ``theta_bound = inf`` (the default
    of the own-data and replay environments, where the bound is unknown) every index would be infinite and the agent
    would play uniformly at random, so construction refuses in one line naming ``theta_bound``
    (:func:`~dpbandit.agents.private.require_finite_theta_bound`). There is no default S: a guessed bound would
    silently decide how much the agent explores.
    """

    name = "dp_ucb"

    def __init__(self, constants: BanditConstants, epsilon: float = 1.0, delta: float | None = None,
                 calibration: str = "tight", alpha: float | None = None, lam: float = 1.0,
                 reward_clip: float | None = None, horizon: int | None = None):
        if not isinstance(constants, BanditConstants):
            raise TypeError(f"constants must be a BanditConstants, got {type(constants).__name__}")
        T = constants.horizon
        epsilon = check_epsilon(epsilon, allow_inf=True)
        if horizon is not None and check_int("horizon", horizon, low=1) != T:
            raise ValueError(f"horizon must equal the environment's horizon T = {T} (the trees and confidence "
                             f"widths are sized by it), got {horizon}")
        if T < 2 and (delta is None or alpha is None):
            raise ValueError("delta and alpha default to 1/T, which is not in (0, 1) for T = 1; pass both")
        delta = 1.0 / T if delta is None else check_delta(delta, allow_zero=False)
        alpha = 1.0 / T if alpha is None else check_real("alpha", alpha, low=0.0, high=1.0, low_inclusive=False,
                                                         high_inclusive=False)
        calibration = check_choice("calibration", calibration, CALIBRATIONS)
        require_finite_theta_bound(constants, "dp_ucb", "its confidence width")
        lam = check_real("lam", lam, low=0.0)
        if math.isinf(epsilon) and lam == 0.0:
            raise ValueError("lam must be > 0 when epsilon = inf (noise off: no 2 Upsilon shift regularises V_t)")
        self.epsilon, self.delta, self.calibration = epsilon, delta, calibration
        self.cal = DPUCBCalibration.build(constants, epsilon, delta, calibration, alpha, lam, reward_clip)
        super().__init__(constants)

    def memory_estimate(self) -> int:
        """The curator's state: the tree noise's ``log2 T + 2`` path sums of the M packed blocks ((d+1)(d+2)/2 floats
        each; M = K disjoint, 1 shared), the exact sums and the extended matrices (M (d+1)^2 each), the release's
        factors and a block of work arrays."""
        n, M = self.dim + 1, self.cal.n_models
        levels = max(self.constants.horizon, 2).bit_length() + 1
        return 8 * M * (levels * n * (n + 1) // 2 + 4 * n * n)

    def _make_curator(self, privacy_rng: np.random.Generator) -> DPUCBCurator:
        return DPUCBCurator(self.cal, self.n_arms, privacy_rng)

    @staticmethod
    def action_rule(release: DPUCBRelease, observation: np.ndarray, rng: np.random.Generator) -> int:
        """``argmax_a x_a^T theta_hat + beta_t ||x_a||_{V_t^{-1}}`` from the release and this user's (K, d) features
        (ties at random, NaN refused: :func:`~dpbandit.agents.baselines.argmax_random_tie`)."""
        values, best, ties = ucb_index(release, observation)
        return best if ties == 1 else argmax_random_tie(values, rng)
