"""Private stochastic-convex-optimisation baselines of Han et al.'s experiments (``spec/han-frank-wolfe.md`` §7.1–7.3):
NoisySFW, NoisySGD and LocalMD, as streaming learners over the T samples of a stream.

They are batch algorithms: NoisySFW consumes disjoint batches as they complete (its iterate changes once per batch),
NoisySGD runs its ``n^2`` steps when the n-th sample arrives (``predict()`` is the start point 0 until then), LocalMD
runs each localisation phase when the phase's fresh samples have arrived. All clip per-sample GLM gradients to
``||.||_q <= L0`` by a scalar clamp (keeps L1, ``spec/errata.md`` E3) and clip features to ``||x||_q <= B``.
Guarantee: (epsilon, delta)-DP of the release stream, replace-one, one sample = one user; every batch or phase uses
disjoint samples, so the guarantee is that of the worst single release (parallel composition).

Calibrations (the report says which):

* NoisySFW: generalized Gaussian in ``||.||_+`` (``calibrate.kappa_regular_constants``, E2), sensitivities
  ``2 L0/|B_0|`` (first release) and ``2 L1 eta D/|B_t|`` (later ones; L1 from E3); "paper": Lemma 2.1 per release
  (valid for eps <= 1, E1); "tight": E1 Correction 2 (zCDP + CKS) or the analytic Gaussian for Gaussian noise.
* NoisySGD and LocalMD: Gaussian steps on subsampled points, accounted with dp_accounting's RDP accountant
  (``SampledWithoutReplacementDpEvent`` under REPLACE_ONE, noise multiplier = sigma / replace-one l2 sensitivity).
  "paper": the noise formulas of §7.2–7.3 [code/recalled], reported with their *accounted* epsilon (which may
  differ from the configured one); "tight": the smallest noise whose accounted epsilon is the configured one.
  These events (subsampled Gaussians) are beyond the ledger's event kinds, so these two learners build their
  :class:`~dpbandit.privacy.report.PrivacyReport` directly from the accountant.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from dpbandit.optim.gg_calibration import CALIBRATIONS, PublishedGGPlus, PublishedSettingWarning, calibrate_gg
from dpbandit.optim.losses import Loss
from dpbandit.optim.oracles import dual_exponent, lp_ball_lmo, lp_ball_projection, lp_norm
from dpbandit.optim.protocol import StreamingLearner
from dpbandit.optim.subsampled import (
    subsampled_gaussian_epsilon,
    subsampled_gaussian_multiplier,
    subsampled_report,
)
from dpbandit.privacy.calibrate import kappa_regular_constants
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.report import CORRECT, PUBLISHED_CODE_SETTING
from dpbandit.validation import check_choice, check_delta, check_epsilon, check_int, check_real

__all__ = ["NoisySFW", "NoisySGD", "LocalMD", "subsampled_gaussian_epsilon", "subsampled_gaussian_multiplier"]

class _BatchLearner(StreamingLearner):
    """Shared parameters, clipping and per-batch gradients of the baselines."""

    guarantee = "DP"
    needs_rng = True

    def __init__(self, dim, horizon, *, p, radius, epsilon, delta, lipschitz, feature_bound, loss, lr_scale,
                 calibration, rng):
        horizon = check_int("horizon", horizon, low=1)
        self.p = check_real("p", p, low=1.0, allow_inf=True)
        self.q = dual_exponent(self.p)
        self.radius = check_real("radius", radius, low=0.0, low_inclusive=False)
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(1.0 / horizon if delta is None else delta, allow_zero=False)
        self.lipschitz = check_real("lipschitz", lipschitz, low=0.0, low_inclusive=False)
        self.feature_bound = check_real("feature_bound", feature_bound, low=0.0, low_inclusive=False)
        self.lr_scale = check_real("lr_scale", lr_scale, low=0.0, low_inclusive=False)
        self.calibration = check_choice("calibration", calibration, CALIBRATIONS)
        self._configure = True
        super().__init__(dim, horizon, loss, rng)

    def _reset_state(self) -> None:
        if self._configure:
            self._setup()
            self._configure = False
        self._theta = np.zeros(self.dim)
        self._x = np.empty((0, self.dim))
        self._y = np.empty(0)
        self._n = 0

    def _setup(self) -> None:
        """Schedules and calibration (once, at construction)."""

    def predict(self) -> np.ndarray:
        view = self._theta.view()
        view.flags.writeable = False
        return view

    def _store(self, x: np.ndarray, y: float, size: int) -> bool:
        """Buffer one sample of a block of ``size``; True when the block is full (then ``self._x[:size]``)."""
        if len(self._x) < size:
            self._x, self._y = np.empty((size, self.dim)), np.empty(size)
        self._x[self._n], self._y[self._n] = x, y
        self._n += 1
        return self._n == size

    def _clip_features(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows clipped to ``||x||_q <= B``; returns the rows (n, d) and their dual norms (n,)."""
        norms = np.atleast_1d(lp_norm(x, self.q))
        factor = np.minimum(1.0, self.feature_bound / np.where(norms > 0, norms, 1.0))
        return x * factor[:, None], norms * factor

    def _gradients(self, theta: np.ndarray, x: np.ndarray, norms: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Clipped per-sample gradients (n, d) at ``theta``: the scalar clamp of E3."""
        c = self.loss.dphi(x @ theta, y)
        limit = self.lipschitz / np.where(norms > 0, norms, 1.0)
        return np.clip(c, -limit, limit)[:, None] * x

    def _l2_sensitivity(self) -> float:
        """Replace-one l2 distance of two clipped gradients: ``2 L0 max(1, d^(1/2 - 1/q))``."""
        return 2.0 * self.lipschitz * max(1.0, self.dim ** (0.5 - 1.0 / self.q))


class NoisySFW(_BatchLearner):
    """NoisySFW (Bassily–Guzmán–Nandi 2021b, Alg. 3, as coded; ``spec/han-frank-wolfe.md`` §7.1).

    n = T samples; step ``eta = s ln n/(2 sqrt n)``; ``k = floor(sqrt n)`` Frank-Wolfe steps: the first on the mean
    clipped gradient at 0 of ``B_0`` (first ``floor(n/2)`` samples), then ``k - 1`` recursive-gradient steps on
    disjoint batches of ``floor(k/2)`` samples, each release with fresh GG noise. Output: the last iterate.
    ``published_setting_not_private=True``: L1 = 1 and the published sampler (§9 D1-D3), warned, guarantee "none".
    """

    name = "noisy-sfw"

    def __init__(self, dim: int, horizon: int, *, p: float = 1.5, radius: float = 2.0, epsilon: float = 1.0,
                 delta: float | None = None, lipschitz: float = 1.0, feature_bound: float = 1.0,
                 loss: str | Loss = "squared", lr_scale: float = 1.0, calibration: str = "tight",
                 rng: np.random.Generator | None = None, published_setting_not_private: bool = False):
        if not isinstance(published_setting_not_private, bool):
            raise TypeError("published_setting_not_private must be a bool")
        self.published = published_setting_not_private
        if check_int("horizon", horizon, low=1) < 4:
            raise ValueError(f"horizon must be an integer >= 4 for NoisySFW (batches of floor(sqrt(n)/2)), "
                             f"got {horizon}")
        if self.published:
            warnings.warn(f"NoisySFW in the {PUBLISHED_CODE_SETTING!r}: L1 = 1 and the published GG sampler "
                          "(defects D1-D3, docs/derivations.md#hfw-9); NOT differentially private",
                          PublishedSettingWarning, stacklevel=2)
        super().__init__(dim, horizon, p=p, radius=radius, epsilon=epsilon, delta=delta, lipschitz=lipschitz,
                         feature_bound=feature_bound, loss=loss, lr_scale=lr_scale, calibration=calibration, rng=rng)

    def _setup(self) -> None:
        n, d, q = self.horizon, self.dim, self.q
        self.eta = self.lr_scale * math.log(n) / (2.0 * math.sqrt(n))
        if self.eta > 1.0:
            raise ValueError(f"lr_scale gives a Frank-Wolfe step eta = {self.eta:.4g} > 1; lower lr_scale")
        self.steps = math.isqrt(n)
        self.batch0, self.batch = n // 2, self.steps // 2
        diameter = 2.0 * self.radius
        if self.published:  # algo.NoisySFW with utils.paras L1 = 1 (§7.1)
            if self.p > 2.0 or math.log(d) <= 1.0:
                raise ValueError("the published NoisySFW setting exists for p <= 2 and d >= 3 only")
            kappa, r = min(q - 1.0, math.e**2 * (math.log(d) - 1.0)), min(q - 1.0, math.log(d) - 1.0)
            log_term = math.sqrt(kappa * math.log(1.0 / self.delta))
            s0 = 4.0 * math.sqrt(2.0) * log_term * self.lipschitz / (n * self.epsilon)
            s1 = math.sqrt(32.0 * diameter**2 * self.eta**2 / n) * log_term / self.epsilon
            self.noises = (PublishedGGPlus(s0, r), PublishedGGPlus(s1, r))
            return
        self.smoothness = self.loss.smoothness(self.feature_bound)
        self.sensitivities = (2.0 * self.lipschitz / self.batch0,
                              2.0 * self.smoothness * self.eta * diameter / self.batch)
        self.kappa = kappa_regular_constants(q, d)
        cals = [calibrate_gg(self.kappa, s, self.epsilon, self.delta, calibration=self.calibration)
                for s in self.sensitivities]
        self.noises = tuple(c.noise for c in cals)
        self._cals = cals

    def _reset_state(self) -> None:
        super()._reset_state()
        self._theta_prev = np.zeros(self.dim)
        self._grad = np.zeros(self.dim)
        self._step = 0
        self.ledger = PrivacyLedger()
        if self.published:
            self.ledger.add_non_private("NoisySFW with the published code's GG sampler (D1-D3), L1 = 1")
        else:  # disjoint batches: one release per sample (the worst of the two calibrated releases)
            c = self._cals[0]
            if c.noise.name == "gaussian":
                z = min(cal.noise.sigma / cal.ledger_sensitivity for cal in self._cals)
                self.ledger.add_gaussian(z, 1, mechanism="NoisySFW release (disjoint batches)")
            else:
                rho = max((cal.noise.r - 1.0) * cal.ledger_sensitivity**2 / (2.0 * cal.noise.sigma**2)
                          for cal in self._cals)
                self.ledger.add_zcdp(rho, 1, mechanism=f"NoisySFW release (disjoint batches), {c.noise.name}",
                                     bound="E1 Correction 2 (docs/derivations.md#e1); parallel composition over batches")

    def update(self, x: np.ndarray, y: float) -> None:
        x, y = self._accept(x, y)
        if self._step >= self.steps:
            return  # the schedule uses about n - sqrt(n)/2 samples; the rest are not used
        size = self.batch0 if self._step == 0 else self.batch
        if not self._store(x, y, size):
            return
        xb, norms = self._clip_features(self._x[:size])
        yb = self._y[:size]
        if self._step == 0:
            self._grad = self._gradients(self._theta, xb, norms, yb).mean(axis=0)
            noise = self.noises[0]
        else:
            diff = self._gradients(self._theta, xb, norms, yb) - self._gradients(self._theta_prev, xb, norms, yb)
            self._grad = self._grad + diff.mean(axis=0)
            noise = self.noises[1]
        self._grad = self._grad + noise.sample(self.rng, (self.dim,))
        v = lp_ball_lmo(self._grad, self.p, self.radius)
        self._theta_prev = self._theta
        self._theta = (1.0 - self.eta) * self._theta + self.eta * v
        self._step += 1
        self._n = 0

    def privacy_report(self):
        if self.published:
            return self.ledger.report(self.delta, guarantee="none", sensitivity_assumption="published code: L1 = 1",
                                      calibration_mode=PUBLISHED_CODE_SETTING)
        return self.ledger.report(
            self.delta, guarantee="DP", calibration_mode=CORRECT,
            sensitivity_assumption=(f"gradients clipped to ||g||_q <= L0={self.lipschitz:g}, features to ||x||_q <= "
                                    f"{self.feature_bound:g}; L1={self.smoothness:g} (E3); sensitivities "
                                    f"{self.sensitivities[0]:.4g} (B_0) and {self.sensitivities[1]:.4g} (batches)"),
            note=f"calibration {self.calibration} (docs/derivations.md#hfw-7; errata E1)")


class NoisySGD(_BatchLearner):
    """NoisySGD (Bassily–Feldman–Guzmán–Talwar 2020, Alg. 2, as coded; ``spec/han-frank-wolfe.md`` §7.3).

    When all n = T samples have arrived: ``n^2`` steps ``theta <- Pi(theta - eta (clip grad f(theta; z_i) + xi))``,
    i uniform in [n], ``xi ~ N(0, sigma^2 I)``, ``eta = s (r/2)/(L0 n max(sqrt n, sqrt(d ln(1/delta))/eps))``
    (r/2 = ||theta*||_p in §8); output the running average. ``Pi`` is the Euclidean projection onto the l_p ball of
    ``radius`` (the published setting projects onto radius 1 for p = inf). "paper": ``sigma = sqrt(8 ln(1/delta))
    L0/eps`` [recalled]; "tight": RDP-calibrated. ``steps`` overrides n^2 (the accounting follows it).
    """

    name = "noisy-sgd"

    def __init__(self, dim: int, horizon: int, *, p: float = math.inf, radius: float = 2.0, epsilon: float = 1.0,
                 delta: float | None = None, lipschitz: float = 1.0, feature_bound: float = 1.0,
                 loss: str | Loss = "squared", lr_scale: float = 1.0, calibration: str = "tight",
                 steps: int | None = None, rng: np.random.Generator | None = None,
                 published_setting_not_private: bool = False):
        if not isinstance(published_setting_not_private, bool):
            raise TypeError("published_setting_not_private must be a bool")
        self.published = published_setting_not_private
        n = check_int("horizon", horizon, low=1)
        self.steps = n * n if steps is None else check_int("steps", steps, low=1)
        if self.published:
            warnings.warn(f"NoisySGD in the {PUBLISHED_CODE_SETTING!r} (projection radius 1 for p = inf); "
                          "reported as NOT PRIVATE", PublishedSettingWarning, stacklevel=2)
        super().__init__(dim, horizon, p=p, radius=radius, epsilon=epsilon, delta=delta, lipschitz=lipschitz,
                         feature_bound=feature_bound, loss=loss, lr_scale=lr_scale, calibration=calibration, rng=rng)

    def _setup(self) -> None:
        n, d, eps, delta = self.horizon, self.dim, self.epsilon, self.delta
        self.eta = self.lr_scale * (self.radius / 2.0) / (
            self.lipschitz * n * max(math.sqrt(n), math.sqrt(d * math.log(1.0 / delta)) / eps))
        self.project_radius = 1.0 if self.published and math.isinf(self.p) else self.radius
        l2 = self._l2_sensitivity()
        if self.calibration == "paper" or self.published:
            self.sigma = math.sqrt(8.0 * math.log(1.0 / delta)) * self.lipschitz / eps
        else:
            self.sigma = subsampled_gaussian_multiplier(n, 1, self.steps, eps, delta) * l2
        self.multiplier = self.sigma / l2
        self.accounted_epsilon = subsampled_gaussian_epsilon(n, 1, self.multiplier, self.steps, delta)

    def update(self, x: np.ndarray, y: float) -> None:
        x, y = self._accept(x, y)
        if not self._store(x, y, self.horizon):
            return
        xs, norms = self._clip_features(self._x)
        ys, limit = self._y, self.lipschitz / np.where(norms > 0, norms, 1.0)
        theta, total, rng, p, radius = np.zeros(self.dim), np.zeros(self.dim), self.rng, self.p, self.project_radius
        block = max(1, min(self.steps, 2**16 // self.dim))
        for start in range(0, self.steps, block):
            m = min(block, self.steps - start)
            idx = rng.integers(0, self.horizon, m)
            xi = self.sigma * rng.standard_normal((m, self.dim))
            for k in range(m):
                i = idx[k]
                c = float(self.loss.dphi(float(xs[i] @ theta), ys[i]))
                c = min(max(c, -limit[i]), limit[i])
                theta = theta - self.eta * (c * xs[i] + xi[k])
                theta = np.clip(theta, -radius, radius) if math.isinf(p) else lp_ball_projection(theta, p, radius)
                total += theta
        self._theta = total / self.steps

    def privacy_report(self):
        return subsampled_report(
            self, [self.multiplier], [self.accounted_epsilon], "NoisySGD: Gaussian steps on one uniform sample",
            f"gradients clipped to ||g||_q <= L0={self.lipschitz:g}; l2 sensitivity {self._l2_sensitivity():.4g}; "
            f"sigma={self.sigma:.6g}, {self.steps} steps")


class LocalMD(_BatchLearner):
    """LocalMD (Asi–Feldman–Koren–Talwar 2021, Alg. 6 wrapping Alg. 5, as coded; ``spec/han-frank-wolfe.md`` §7.2),
    for 1 < p <= 2.

    Phases i = 1..floor(log2 n) on fresh samples: ``n_i = floor(n/2^i)``, ``eps_i = eps/2^i``, ``eta_i = eta/16^i``
    with ``eta = s (D/L0) min(((p-1) n)^(-1/2), eps/sqrt(d ln(1/delta)(1 + ln d)))``, batches
    ``b_i = floor(max(1, sqrt(n_i/max(1, ln d)), sqrt(d/eps_i)))`` (at most n_i), ``T_i = floor(n_i^2/b_i^2)`` steps
    (stop when T_i <= 1). Each step: mean clipped gradient of b_i points drawn without replacement + Gaussian noise,
    then the mirror step with ``h(u) = ||u - c||_p^2/(2(p-1))`` over ``||u - c||_p <= 2 L0 eta_i n_i (p-1)``, solved
    in closed form [derived]: ``u - c = min((p-1)||w||_q, R) sign(w)|w|^(q-1)/||w||_q^(q-1)`` with
    ``w = grad h(u) - eta_i g``. Phase output: the mean iterate. "paper": ``sigma_i = 100 L0 sqrt(d^(1-2/q)
    ln(1/delta))/(b_i eps_i)``; "tight": each phase RDP-calibrated to (eps, delta) (disjoint phases: parallel
    composition).
    """

    name = "local-md"

    def __init__(self, dim: int, horizon: int, *, p: float = 1.5, radius: float = 2.0, epsilon: float = 1.0,
                 delta: float | None = None, lipschitz: float = 1.0, feature_bound: float = 1.0,
                 loss: str | Loss = "squared", lr_scale: float = 1.0, calibration: str = "tight",
                 rng: np.random.Generator | None = None):
        self.published = False
        if not (isinstance(p, (int, float)) and 1.0 < p <= 2.0):
            raise ValueError(f"p must be a number in (1, 2] for LocalMD (h = ||.||_p^2/(2(p-1))), got {p!r}")
        super().__init__(dim, horizon, p=p, radius=radius, epsilon=epsilon, delta=delta, lipschitz=lipschitz,
                         feature_bound=feature_bound, loss=loss, lr_scale=lr_scale, calibration=calibration, rng=rng)

    def _setup(self) -> None:
        n, d, p, eps, delta = self.horizon, self.dim, self.p, self.epsilon, self.delta
        diameter, log_inv = 2.0 * self.radius, math.log(1.0 / delta)
        eta = self.lr_scale * diameter / self.lipschitz * min(
            ((p - 1.0) * n) ** -0.5, eps / math.sqrt(d * log_inv * (1.0 + math.log(d))))
        self.phases = []
        for i in range(1, max(1, n.bit_length() - 1) + 1):
            n_i, eps_i = n >> i, eps / 2.0**i
            if n_i < 1:
                break
            b_i = min(n_i, int(max(1.0, math.sqrt(n_i / max(1.0, math.log(d))), math.sqrt(d / eps_i))))
            steps = (n_i * n_i) // (b_i * b_i)
            if steps <= 1:
                break
            l2 = self._l2_sensitivity() / b_i
            if self.calibration == "paper":
                sigma = 100.0 * self.lipschitz * math.sqrt(d ** (1.0 - 2.0 / self.q) * log_inv) / (b_i * eps_i)
            else:
                sigma = subsampled_gaussian_multiplier(n_i, b_i, steps, eps, delta) * l2
            z = sigma / l2
            self.phases.append(dict(n=n_i, batch=b_i, steps=steps, eta=eta / 16.0**i, sigma=sigma, multiplier=z,
                                    radius=2.0 * self.lipschitz * (eta / 16.0**i) * n_i * (p - 1.0),
                                    epsilon=subsampled_gaussian_epsilon(n_i, b_i, z, steps, delta)))

    def _reset_state(self) -> None:
        super()._reset_state()
        self._phase = 0

    def _mirror_step(self, u: np.ndarray, g: np.ndarray, eta: float, radius: float) -> np.ndarray:
        p, q = self.p, self.q
        nu = lp_norm(u, p)
        grad_h = (nu ** (2.0 - p) * np.sign(u) * np.abs(u) ** (p - 1.0) / (p - 1.0)) if nu > 0 else np.zeros_like(u)
        w = grad_h - eta * g
        nw = lp_norm(w, q)
        if nw == 0.0:
            return np.zeros_like(u)
        return min((p - 1.0) * nw, radius) * np.sign(w) * (np.abs(w) / nw) ** (q - 1.0)

    def update(self, x: np.ndarray, y: float) -> None:
        x, y = self._accept(x, y)
        if self._phase >= len(self.phases):
            return
        ph = self.phases[self._phase]
        if not self._store(x, y, ph["n"]):
            return
        xs, norms = self._clip_features(self._x[: ph["n"]])
        ys, center, u, total = self._y[: ph["n"]], self._theta.copy(), np.zeros(self.dim), np.zeros(self.dim)
        for _ in range(ph["steps"]):
            idx = self.rng.choice(ph["n"], ph["batch"], replace=False)
            g = self._gradients(center + u, xs[idx], norms[idx], ys[idx]).mean(axis=0)
            g = g + ph["sigma"] * self.rng.standard_normal(self.dim)
            u = self._mirror_step(u, g, ph["eta"], ph["radius"])
            total += u
        self._theta = center + total / ph["steps"]
        self._phase += 1
        self._n = 0

    def privacy_report(self):
        return subsampled_report(
            self, [ph["multiplier"] for ph in self.phases] or [math.inf],
            [ph["epsilon"] for ph in self.phases] or [0.0], "LocalMD: subsampled Gaussian mirror-descent steps",
            f"gradients clipped to ||g||_q <= L0={self.lipschitz:g}; l2 sensitivity {self._l2_sensitivity():.4g}/b_i")
