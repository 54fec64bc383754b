"""Online Frank-Wolfe over l_p balls: DP-TOFW (Algorithm 1 of Han et al.) and its non-private reference.

Both learners run the recursive (variance-reduced) gradient of ``spec/han-frank-wolfe.md`` §2 in its prefix-sum
form (eq. 3.1)::

    g_t = (t+1) grad f(x_t; z_t) - t grad f(x_{t-1}; z_t)         # leaf t (x_0 = x_1 = 0)
    d_t = (g_1 + ... + g_t) / (t+1)                                # rho_t = 1/(t+1)
    v_t = LMO_C(d_t),  x_{t+1} = x_t + eta_t (v_t - x_t)           # C = {||x||_p <= r}

:class:`OnlineFrankWolfe` sums the leaves exactly (guarantee "none"). :class:`DPTOFW` releases the prefix sums
through the privacy core's :class:`~dpbandit.privacy.tree.TreeAggregator`, so every iterate is post-processing of
the tree's noisy releases (guarantee "DP" for the whole release stream, replace-one, one sample = one user).

Step sizes ``eta_t = s l/(t + l)`` (``lr_scale`` s): ``schedule="convex"`` is l = 1, the paper/code choice
``eta_t = s/(t+1)`` (§2); ``schedule="strongly-convex"`` is the open-loop l = 2 (``eta_t = 2s/(t+2)``), the classical
Frank-Wolfe step for strongly convex objectives with an interior minimiser (Thm 3.3's Assumptions 2.1 and 3.1;
the spec does not fix the paper's constants, §2 and §11, so this schedule is a [derived] design choice).

Privacy of DP-TOFW (``spec/han-frank-wolfe.md`` §2 with ``spec/errata.md`` E1, E2, E3, E6):

* Leaf sensitivity: conditioned on the past releases, replacing z_i changes only g_i, by at most
  ``2(L0 + L1 D i eta_{i-1})`` in ``||.||_q`` (gradients clipped to ``||.||_q <= L0`` by a scalar clamp, which keeps
  L1; ``||x_i - x_{i-1}||_p <= eta_{i-1} D``, D = 2r). L1 is the loss's smoothness for features ``||x||_q <= B``:
  ``2B^2`` for the squared loss (E3, not the published L1 = 1); features are clipped to that bound.
* ``i eta_{i-1} = s l i/(i - 1 + l)`` is non-decreasing, so the largest leaf sensitivity of a node is at its right
  end; the noise of every node closing at step e is scaled by ``(L0 + L1 D e eta_{e-1})/(L0 + L1 D c_max)`` with
  ``c_max = T eta_{T-1}`` (E3 per-node rule; the factor is 1 for the convex schedule). Each node's ratio of noise to
  sensitivity is then at least that of the reference node, so the accounting below holds for every node.
* Noise: ``GG_{||.||_+}(0, sigma^2)`` with the kappa-regular constants of ``calibrate.kappa_regular_constants``
  (E2; noise norm ``l_{kappa_+ + 1}``, not the published exponent D3): generalized Gaussian for 1 < p <= 2, Gaussian
  for p > 2 (Lemma 3.3).
* ``calibration="paper"``: eq. (3.2), each node ``(eps/m, delta/m)``-DP by Lemma 2.1 and basic composition over
  ``m = ceil(log2 T) + 1`` levels; valid only when ``eps/m <= 1`` (E1), else ``ValueError``.
  ``calibration="tight"`` (E6): each leaf enters ``L = floor(log2 T) + 1`` nodes; GG nodes compose in zCDP,
  ``sigma = s sqrt(L kappa/(2 rho*))`` with rho* the CKS inversion of (eps, delta); Gaussian nodes use the exact
  analytic-Gaussian accounting of the tree (``spec/dp-testing-and-accounting.md`` §1.1).
* ``epsilon = inf`` switches the noise off (the registry's convention, ``dpbandit.optim.registry``): the tree sums
  the leaves exactly, so the iterates are those of :class:`OnlineFrankWolfe` with the same clipping, and the report
  says guarantee "none".
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from dpbandit.optim.gg_calibration import (
    CALIBRATIONS,
    GGCalibration,
    PublishedGGPlus,
    PublishedSettingWarning,
    calibrate_gg,
)
from dpbandit.optim.losses import Loss
from dpbandit.optim.oracles import dual_exponent, lp_ball_lmo, lp_norm
from dpbandit.optim.projections import LpBall
from dpbandit.optim.protocol import StreamingLearner
from dpbandit.privacy.calibrate import KappaRegular, kappa_regular_constants
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.noise import Noise
from dpbandit.privacy.report import CORRECT, PUBLISHED_CODE_SETTING
from dpbandit.privacy.tree import TreeAggregator
from dpbandit.validation import check_choice, check_delta, check_epsilon, check_int, check_real

__all__ = ["SCHEDULES", "CALIBRATIONS", "OnlineFrankWolfe", "DPTOFW", "GGCalibration", "calibrate_gg",
           "PublishedSettingWarning"]

SCHEDULES: dict[str, int] = {"convex": 1, "strongly-convex": 2}


class _NodeNoise(Noise):
    """Node noise for the tree: draws of ``base`` served from blocks (vectorised sampling, O(block d) memory) and
    multiplied by ``factor``, which the learner sets before each item to the E3 per-node scale of the nodes
    closing at that step."""

    def __init__(self, base: Noise, dim: int, block: int):
        self.base, self.dim, self.block = base, dim, block
        self.factor = 1.0
        self._buffer = np.empty((0, dim))
        self._next = 0

    @property
    def name(self) -> str:
        return self.base.name

    def sample(self, rng, shape):
        shape = tuple(shape)
        if shape != (self.dim,):
            return self.factor * self.base.sample(rng, shape)
        if self._next == len(self._buffer):
            self._buffer, self._next = self.base.sample(rng, (self.block, self.dim)), 0
        self._next += 1
        return self.factor * self._buffer[self._next - 1]

    def describe(self) -> dict:
        return {**self.base.describe(), "per_node_scale": "(L0 + L1 D e eta_(e-1)) / (L0 + L1 D c_max), E3"}


class OnlineFrankWolfe(StreamingLearner):
    """Non-private online Frank-Wolfe with the recursive gradient (reference; guarantee "none").

    Parameters: ``dim`` d, ``horizon`` T, ``p`` in [1, inf] and ``radius`` r of the feasible l_p ball, ``loss``,
    ``lr_scale`` s and ``schedule`` (module docstring), ``lipschitz`` L0 (clip gradients to ``||.||_q <= L0``;
    None: no clipping), ``feature_bound`` B (features are clipped to ``||x||_q <= B``).
    Shapes: ``predict()`` (d,); ``update(x (d,), y)``. ``domain``: the feasible ``LpBall(p, radius)`` (every iterate
    is a convex combination of its points; the OCO runner's comparator set).
    """

    name = "online-fw"

    def __init__(self, dim: int, horizon: int, *, p: float = 1.5, radius: float = 2.0, loss: str | Loss = "squared",
                 lr_scale: float = 1.0, schedule: str = "convex", lipschitz: float | None = None,
                 feature_bound: float = 1.0, rng: np.random.Generator | None = None):
        self.p = check_real("p", p, low=1.0, allow_inf=True)
        self.q = dual_exponent(self.p)
        self.radius = check_real("radius", radius, low=0.0, low_inclusive=False)
        self.domain = LpBall(self.p, self.radius)
        self.schedule = check_choice("schedule", schedule, tuple(SCHEDULES))
        self._ell = SCHEDULES[self.schedule]
        s_max = (1.0 + self._ell) / self._ell  # eta_1 = s l/(1 + l) <= 1 keeps the iterate in C
        self.lr_scale = check_real("lr_scale", lr_scale, low=0.0, high=s_max, low_inclusive=False)
        self.lipschitz = None if lipschitz is None else check_real("lipschitz", lipschitz, low=0.0,
                                                                    low_inclusive=False)
        self.feature_bound = check_real("feature_bound", feature_bound, low=0.0, low_inclusive=False)
        super().__init__(dim, horizon, loss, rng)

    # -- schedule ---------------------------------------------------------------------------------------------------

    def eta(self, t: int) -> float:
        """Step size eta_t = s l/(t + l) of round t >= 0."""
        return self.lr_scale * self._ell / (t + self._ell)

    def leaf_factor(self, i: int) -> float:
        """``i eta_{i-1}``: the factor of D in the sensitivity of leaf i (non-decreasing in i)."""
        return i * self.eta(i - 1)

    # -- state ------------------------------------------------------------------------------------------------------

    def _reset_state(self) -> None:
        self._theta = np.zeros(self.dim)
        self._theta_prev = np.zeros(self.dim)
        self._estimate = np.zeros(self.dim)
        self._sum = np.zeros(self.dim)

    def predict(self) -> np.ndarray:
        view = self._theta.view()
        view.flags.writeable = False
        return view

    @property
    def gradient_estimate(self) -> np.ndarray:
        """The (privatised, for DP-TOFW) recursive gradient d_t of the last update, shape (d,); a copy."""
        return self._estimate.copy()

    def _release(self, leaf: np.ndarray) -> np.ndarray:
        """The prefix sum g_1 + ... + g_t after adding ``leaf`` (exact here; the tree's noisy release in DP-TOFW)."""
        self._sum += leaf
        return self._sum

    def _dual_norm(self, x: np.ndarray) -> float:
        q = self.q
        if q == 2.0:
            return math.sqrt(x @ x)
        a = np.abs(x)
        if q == 1.0:
            return float(a.sum())
        if math.isinf(q):
            return float(a.max())
        n = float((a**q).sum()) ** (1.0 / q)
        return n if math.isfinite(n) else lp_norm(x, q)

    def _lmo(self, g: np.ndarray) -> np.ndarray:
        p = self.p
        if 1.0 < p < math.inf:  # fast path of oracles.lp_ball_lmo; falls back on under/overflow
            a = np.abs(g)
            w = a * a if self.q == 3.0 else a ** (self.q - 1.0)  # |g|^(q-1)
            norm = float((a * w).sum()) ** (1.0 / p)  # ||g||_q^(q-1) = (sum |g|^q)^(1/p)
            if 0.0 < norm < math.inf:
                return np.copysign(w, g) * (-self.radius / norm)
        return lp_ball_lmo(g, p, self.radius)

    def update(self, x: np.ndarray, y: float) -> None:
        x, y = self._accept(x, y)
        t = self.t
        xn = self._dual_norm(x)
        if xn > self.feature_bound:
            x = x * (self.feature_bound / xn)
            xn = self.feature_bound
        c_now = float(self.loss.dphi(float(x @ self._theta), y))
        c_prev = float(self.loss.dphi(float(x @ self._theta_prev), y))
        if self.lipschitz is not None and xn > 0.0:  # oracles.clamp_glm_derivative, inlined for scalars
            lim = self.lipschitz / xn
            c_now, c_prev = min(max(c_now, -lim), lim), min(max(c_prev, -lim), lim)
        prefix = self._release(((t + 1) * c_now - t * c_prev) * x)
        self._estimate = prefix / (t + 1)
        v = self._lmo(self._estimate)
        self._theta_prev = self._theta
        self._theta = self._theta + self.eta(t) * (v - self._theta)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dim={self.dim}, horizon={self.horizon}, p={self.p:g}, radius={self.radius:g}, "
                f"lr_scale={self.lr_scale:g}, schedule={self.schedule!r})")


class DPTOFW(OnlineFrankWolfe):
    """DP-TOFW (Algorithm 1): online Frank-Wolfe whose gradient prefix sums go through the binary-tree mechanism.

    Additional parameters: ``epsilon`` > 0 and ``delta`` in (0, 1) (default 1/T) of the DP guarantee of the whole
    release stream (``epsilon = inf``: noise off, guarantee "none", no ``rng`` needed); ``lipschitz`` L0 (default 1;
    required); ``calibration`` "tight" (default) or "paper"; ``honaker`` (tree estimator); ``rng`` the job's
    "privacy" stream (required when the noise is on).

    ``published_setting_not_private=True`` reproduces the published reference code instead (L1 = 1, D1-D3 sampler,
    ``spec/han-frank-wolfe.md`` §9): it warns, and its report has guarantee "none" (epsilon = inf), labelled
    :data:`~dpbandit.privacy.report.PUBLISHED_CODE_SETTING`. Never a private run.

    Attributes after construction: ``sigma`` (node sigma in ``||.||_+`` at the reference sensitivity),
    ``sensitivity`` (``2(L0 + L1 D c_max)``), ``smoothness`` L1, ``kappa`` (:class:`KappaRegular`), ``noise``.
    """

    name = "dp-tofw"
    guarantee = "DP"
    needs_rng = True

    def __init__(self, dim: int, horizon: int, *, p: float = 1.5, radius: float = 2.0, epsilon: float = 1.0,
                 delta: float | None = None, lipschitz: float = 1.0, feature_bound: float = 1.0,
                 loss: str | Loss = "squared", lr_scale: float = 1.0, schedule: str = "convex",
                 calibration: str = "tight", honaker: bool = False, rng: np.random.Generator | None = None,
                 published_setting_not_private: bool = False):
        horizon = check_int("horizon", horizon, low=1)
        self.epsilon = check_epsilon(epsilon, allow_inf=True)
        self.delta = check_delta(1.0 / horizon if delta is None else delta, allow_zero=False)
        self.private = math.isfinite(self.epsilon)
        if not self.private:  # instance values shadow the class defaults
            self.guarantee, self.needs_rng = "none", False
        self.calibration = check_choice("calibration", calibration, CALIBRATIONS)
        if not isinstance(honaker, (bool, np.bool_)) or not isinstance(published_setting_not_private, bool):
            raise TypeError("honaker and published_setting_not_private must be bools")
        self.honaker = bool(honaker)
        self.published = published_setting_not_private
        if lipschitz is None:
            raise ValueError("lipschitz (L0, the gradient clipping bound) is required for DP-TOFW")
        if self.published and not self.private:
            raise ValueError("published_setting_not_private needs a finite epsilon (noise off: epsilon=inf alone)")
        if self.published:
            warnings.warn(f"DP-TOFW in the {PUBLISHED_CODE_SETTING!r}: L1 = 1 and the published GG sampler "
                          "(defects D1-D3, docs/derivations.md#hfw-9); this run is NOT differentially private",
                          PublishedSettingWarning, stacklevel=2)
        self._configure = True
        super().__init__(dim, horizon, p=p, radius=radius, loss=loss, lr_scale=lr_scale, schedule=schedule,
                         lipschitz=lipschitz, feature_bound=feature_bound, rng=rng)

    # -- calibration --------------------------------------------------------------------------------------------------

    def _calibrate(self) -> None:
        """Sensitivity, kappa constants and node noise (module docstring); called once, before the first reset."""
        diameter = 2.0 * self.radius
        self.c_max = self.leaf_factor(self.horizon)
        self.tree_levels = self.horizon.bit_length()  # L = floor(log2 T) + 1
        self.paper_levels = math.ceil(math.log2(self.horizon)) + 1  # m of eq. (3.2)
        if self.published:
            return self._calibrate_published(diameter)
        self.smoothness = self.loss.smoothness(self.feature_bound)  # L1 = 2 B^2 for the squared loss (E3)
        self.sensitivity = 2.0 * (self.lipschitz + self.smoothness * diameter * self.c_max)
        self.kappa = kappa_regular_constants(self.q, self.dim)
        if not self.private:  # noise off: exact prefix sums
            self.sigma, self._base_noise, self._ledger_sensitivity = 0.0, None, self.sensitivity
            return
        cal = calibrate_gg(self.kappa, self.sensitivity, self.epsilon, self.delta, calibration=self.calibration,
                           nodes=self.tree_levels, paper_nodes=self.paper_levels)
        self.sigma = self._node_sigma(cal.sigma)
        scale = self.sigma / cal.sigma
        base = cal.noise if scale == 1.0 else self.kappa.noise(self.sigma)
        self._base_noise, self._ledger_sensitivity = base, cal.ledger_sensitivity

    def _node_sigma(self, sigma: float) -> float:
        """The node sigma at the reference sensitivity (hook for tests that build a mis-calibrated variant)."""
        return sigma

    def _calibrate_published(self, diameter: float) -> None:
        if self.schedule != "convex":
            raise ValueError("the published code setting exists only for schedule='convex'")
        q, d = self.q, self.dim
        self.smoothness = 1.0  # utils.paras (§0), the defect E3 corrects
        self.sensitivity = 2.0 * (self.lipschitz + self.smoothness * diameter * self.lr_scale)
        m = self.paper_levels
        if self.p <= 2.0:  # algo.OFW_ple2: independent minima, exponent kappa_q^+ (D3)
            kappa = min(q - 1.0, math.e**2 * (math.log(d) - 1.0))
            r, scale = min(q - 1.0, math.log(d) - 1.0), 1.0
            if r <= 0.0:
                raise ValueError(f"the published code setting needs ln(d) > 1 for p <= 2 (its exponent "
                                 f"min(q - 1, ln d - 1) is {r:.3g} at d={d})")
        else:  # algo.OFW_pge2: GGPlus(d, 2, sigma / d^(1/2 - 1/p))
            kappa, r, scale = d ** (1.0 - 2.0 / self.p), 2.0, d ** (0.5 - 1.0 / self.p)
        self.kappa = KappaRegular(kappa, float("nan"), r, scale)
        self.sigma = math.sqrt(2.0 * kappa * math.log(m / self.delta)) * self.sensitivity * m / self.epsilon
        self._base_noise = PublishedGGPlus(self.sigma / scale, r)

    def _reset_state(self) -> None:
        if getattr(self, "_configure", False):
            self._calibrate()
            self._configure = False
        super()._reset_state()
        block = max(1, min(self.horizon, 2**14 // self.dim))
        self._noise = _NodeNoise(self._base_noise, self.dim, block) if self.private else None
        self.tree = TreeAggregator((self.dim,), self.horizon, self._noise, self.rng, honaker=self.honaker)
        self.ledger = PrivacyLedger()
        if not self.private:
            self.ledger.add_non_private("DP-TOFW gradient tree with noise off (epsilon = inf)")
        elif self.published:
            self.ledger.add_non_private("DP-TOFW tree with the published code's GG sampler (D1-D3), L1 = 1")
        else:
            accounting = dataclasses.replace(self.tree.accounting, noise=self._base_noise)
            self.ledger.add_tree(accounting, self._ledger_sensitivity, mechanism="DP-TOFW gradient tree")

    @property
    def noise(self) -> Noise | None:
        """The node noise at the reference (largest) leaf sensitivity (None when the noise is off)."""
        return self._base_noise

    def node_scale(self, e: int) -> float:
        """E3 per-node factor of the nodes closing at step e: ``(L0 + L1 D e eta_{e-1})/(L0 + L1 D c_max)``."""
        if self.schedule == "convex":
            return 1.0
        lip, l1d = self.lipschitz, self.smoothness * 2.0 * self.radius
        return (lip + l1d * self.leaf_factor(e)) / (lip + l1d * self.c_max)

    def _release(self, leaf: np.ndarray) -> np.ndarray:
        if self._noise is not None:
            self._noise.factor = self.node_scale(self.t)
        return self.tree.add_and_release(leaf)

    def privacy_report(self):
        """The DP report of the release stream (which calibration, which sensitivity, which accounting)."""
        if self.published:
            return self.ledger.report(self.delta, guarantee="none", sensitivity_assumption="published code: L1 = 1",
                                      calibration_mode=PUBLISHED_CODE_SETTING)
        assumption = (f"per-sample gradients clipped to ||g||_q <= L0={self.lipschitz:g} (scalar clamp), features to "
                      f"||x||_q <= {self.feature_bound:g}, q={self.q:g}; L1={self.smoothness:g} ({self.loss!r}, "
                      f"E3, docs/derivations.md#e3); leaf sensitivity 2(L0 + L1 D max_i i eta_(i-1)) = {self.sensitivity:.6g}"
                      " (docs/derivations.md#hfw-2)")
        if not self.private:
            return self.ledger.report(self.delta, guarantee="none", sensitivity_assumption=assumption,
                                      note="noise off (epsilon = inf): no privacy guarantee")
        how = ("paper: eq. (3.2), Lemma 2.1 per node at (eps/m, delta/m), basic composition over "
               f"m={self.paper_levels} levels (docs/derivations.md#hfw-2, errata E1)" if self.calibration == "paper"
               else f"tight: E6, docs/derivations.md#e6, L={self.tree_levels} nodes per leaf")
        return self.ledger.report(self.delta, guarantee="DP", sensitivity_assumption=assumption,
                                  calibration_mode=CORRECT, note=f"calibration {how}; noise {self.noise.name}")
