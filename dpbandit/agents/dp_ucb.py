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
:class:`~dpbandit.privacy.tree_noise.TreeNoise`), the rank-one update of the played model's exact sums, O(M (d+1)^2)
work for the noisy V_t and u, and ``M`` LAPACK Cholesky factorisations ``O(d^3)``, M = 1 (shared) or K (disjoint;
with noise off only the played arm's model changes and only its factor is recomputed); in the action rule one LAPACK
triangular solve per model. All of it is compiled (:mod:`dpbandit.agents.dp_ucb_kernels`). Round by round
(``act``, ``update``) a round is two kernel calls; the evaluation loop plays the blocks of rounds an environment hands
out (:meth:`DPUCB.play_block`) through one kernel for runs of rounds, with the release kept in place and the node
draws made for many rounds per call, with the same numbers. ``benchmarks/dpucb_benchmark.py`` prints the cost as
ratios to the bare work and to the compiled floor measured in the same run.
"""

from __future__ import annotations

import math

import numpy as np

from dpbandit.agents import dp_ucb_kernels as kernels
from dpbandit.agents.baselines import argmax_random_tie, check_arm
from dpbandit.agents.dp_ucb_calibration import (CALIBRATIONS, DPUCBCalibration, dpucb_sigma, paper_levels,
                                                privacy_report)
from dpbandit.agents.dp_ucb_release import DPUCBRelease, frozen, lift, ucb_index
from dpbandit.agents.private import (CONTEXT_RTOL, Curator, PrivateAgent, check_context_bound,
                                     require_finite_theta_bound)
from dpbandit.envs.blocks import RoundBlock
from dpbandit.envs.constants import BanditConstants
from dpbandit.privacy.noise import GaussianNoise
from dpbandit.privacy.packed import packed_layout
from dpbandit.privacy.tree_noise import TreeNoise
from dpbandit.validation import check_choice, check_delta, check_epsilon, check_int, check_real

__all__ = ["CALIBRATIONS", "DPUCB", "DPUCBCalibration", "DPUCBCurator", "DPUCBRelease", "dpucb_sigma", "paper_levels"]

_NO_NOISE = np.empty(0)  # the packed noise with the noise off
_NO_SUFFIX, _NO_DRAWS = np.empty((1, 0)), np.empty((0, 0))  # a block's tree path and draws with the noise off
_CHUNK = 1 << 16  # most node-noise floats a block draws at once (512 KiB)


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

    def play_block(self, obs: np.ndarray, rewards: np.ndarray, tie_break) -> np.ndarray:
        """Serve the n users of a block (a :class:`~dpbandit.envs.blocks.RoundBlock`'s ``obs`` (n, K, d) and
        ``rewards`` (n, K)), each exactly as the action rule, :meth:`stage` and :meth:`observe` serve one: runs of
        rounds in one kernel (:func:`~dpbandit.agents.dp_ucb_kernels.play_rounds`) with the release kept in place,
        handing back to Python a tie (``tie_break(scores) -> arm``, the action rule's, on the exploration stream),
        an item a check may refuse, and a lift. The privacy stream's node draws are made up to ``_CHUNK`` floats at
        a time: the same normals in the same order as one node per round (a refused round, which ends the run, leaves
        that stream past the rest of its chunk). Returns the arms (n,) intp."""
        cal, noise, K = self.cal, self._noise, self.n_arms
        obs, n, t0 = np.asarray(obs, dtype=float), len(obs), self._t
        if obs.shape[1:] != self._shape or np.shape(rewards) != (n, K):
            raise ValueError(f"a block must hold observations (n, K, d) and rewards (n, K), K = {K}, d = {cal.dim}; "
                             f"got {obs.shape} and {np.shape(rewards)}")
        rewards = np.asarray(rewards, dtype=float)
        if t0 + n > cal.horizon:
            raise ValueError(f"DP-UCB is calibrated for horizon T = {cal.horizon} (the environment's); cannot serve "
                             f"users {t0 + 1}-{t0 + n}")
        beta = cal.beta
        betas = [beta(t) for t in range(t0, t0 + n + 1)]
        arms, out, beta_array = np.empty(n, dtype=np.intp), np.empty(K), np.array(betas)
        chol, u = self._release.cholesky.copy(), self._release.response.copy()
        low, high, linf = self._clip
        if noise is None:
            suffix, scale, per_chunk, draws = _NO_SUFFIX, 0.0, n, _NO_DRAWS
        else:
            suffix, scale, P = noise.suffix, noise.scale, noise.suffix.shape[1]
            per_chunk = max(1, min(n, _CHUNK // P))
            buffer = np.empty((per_chunk, P))
        done = 0
        try:
            for first in range(0, n, per_chunk):
                stop = min(n, first + per_chunk)
                if noise is not None:
                    draws = noise.draw_units(buffer[: stop - first])
                i, forced, trusted = first, -1, False
                while i < stop:
                    i, reason = kernels.play_rounds(obs, rewards, i, stop, forced, trusted, low, high, linf,
                                                    self._bound, beta_array, t0, suffix, draws, first, scale,
                                                    self._gram, self._v, chol, u, self._failed, out, arms)
                    done, forced, trusted = i, -1, False
                    if reason == kernels.TIE:
                        forced = tie_break(out)
                    elif reason == kernels.CHECK:  # the single path's checks and errors (stage)
                        forced, trusted = int(arms[i]), True
                        check_real("reward", float(rewards[i, forced]))
                        check_context_bound(obs[i, forced], cal.context_norm, cal.context_bound)
                    elif reason == kernels.LIFT:  # V_t of the failed models, as publish wrote it, then the lift
                        for m in np.flatnonzero(self._failed):
                            kernels.noisy_lower(self._gram, suffix[0], m, self._V[m], u)
                        lift(chol, self._V, self._failed, cal.rho_min)
                        i = done = i + 1
        finally:
            self._t = t0 + done
            if noise is not None:
                noise.advance(self._t - noise.t)
            chol.setflags(write=False)
            u.setflags(write=False)
            self._release = DPUCBRelease(self._t, chol, u, betas[done], self._shared)
        return arms

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
        return privacy_report(self.cal)


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

    def play_block(self, block: RoundBlock) -> np.ndarray:
        """The block's rounds (:meth:`DPUCBCurator.play_block`): the same arms, draws and releases as ``act`` and
        ``update`` round by round."""
        rng = self.rng
        try:
            return self.curator.play_block(block.obs, block.rewards, lambda values: argmax_random_tie(values, rng))
        finally:
            self._release = self.curator.release()
