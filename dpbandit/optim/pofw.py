"""DP-POFW: private online Frank-Wolfe over the l1 ball with a noisy vertex selection.

Algorithm 2 of Han et al. (``spec/han-frank-wolfe.md`` §5), with the smoothness constant of ``spec/errata.md`` E3
and the calibration of ``spec/errata.md`` E4 (valid for every epsilon). Over ``C = {x : ||x||_1 <= r}`` (diameter
``D = 2r``, vertices ``V = {+r e_j, -r e_j}``), starting from ``x_0 = x_1 = 0``, step t = 1..T:

* recursive gradient ``d_t = grad f(x_t; z_t) + (1 - rho_t)(d_{t-1} - grad f(x_{t-1}; z_t))``, ``rho_t = 1/(t+1)``,
  ``d_0 = 0``, which is the normalised prefix sum ``d_t = S_t/(t+1)``, ``S_t = sum_{i<=t} g_i``,
  ``g_i = (i+1) grad f(x_i; z_i) - i grad f(x_{i-1}; z_i)`` (§2 eq. 3.1); every per-sample gradient is clipped to
  ``||.||_inf <= L0`` (a scalar clamp for GLM losses, which keeps L1; E3);
* private selection ``v_t`` among the 2d vertices with scores ``-<v, d_t>`` computed from the exact ``d_t`` (one
  noise draw per vertex, never the published code's sign-from-clean-``d_t`` defect, §9 D4);
* ``x_{t+1} = x_t + eta_t (v_t - x_t)`` with ``eta_t = 1/(t+1)``, i.e. ``x_{t+1} = (v_1 + ... + v_t)/(t+1)``;
  ``x_{t+1}`` is the release of step t.

**Privacy** (replace-one neighbouring of one sample z_i of the stream). Conditioned on the past releases, changing
z_i changes only g_i, by ``||g_i - g_i'||_inf <= 2(L0 + L1 D)`` (``||x_i - x_{i-1}||_1 <= D/i``), so every later
score changes by at most ``Delta_t = 2r(L0 + L1 D)/(t+1)`` (§5, E3). With ``rho* = zcdp_rho_for(eps, delta)`` (E1)
and ``H = sum_{t=1}^T 1/(t+1) = H_{T+1} - 1`` (E4):

* ``form="gumbel"`` (default, E4 item 4): the exponential mechanism ``P(v) ~ exp(-<v, d_t>/beta_t)`` (the law of
  ``argmax_v -<v, d_t> + Gumbel(beta_t)``), ``beta_t = sqrt(2) r (L0 + L1 D) sqrt(H/rho*)/sqrt(t+1)``: step t is
  ``eps_t = 2 Delta_t/beta_t``-bounded-range, hence ``eps_t^2/8``-zCDP (Cesar & Rogers 2021), and
  ``sum_t eps_t^2/8 = rho*``;
* ``form="laplace"`` (E4 item 3): report-noisy-max with one ``Laplace(lambda_t)`` per vertex,
  ``lambda_t = 2 sqrt(2) r (L0 + L1 D) sqrt(H/rho*)/sqrt(t+1)``: ``eps_t``-DP, ``eps_t^2/2``-zCDP, total ``rho*``.

Adaptive composition adds rho, so the whole release stream is ``rho*``-zCDP and therefore (eps, delta)-DP (CKS
conversion by default). The ledger records ``rho*`` and that conversion (E4 item 5). ``epsilon = inf`` switches the
noise off: the selection is then the exact linear-minimisation oracle (ties broken uniformly at random, the
zero-temperature limit of the exponential mechanism) and the report says guarantee "none".

**Sampling the exponential mechanism.** The Gumbel form is sampled exactly from its law, not by adding 2d Gumbel
draws: rows whose log-weights span at most ``ln 8`` use rejection sampling from the uniform proposal with the exact
envelope ``exp(max log-weight)`` (acceptance >= 1/8, O(1) work per learner), the others use the inverse CDF of
the 2d weights (always when 2d <= 64, where that is cheaper). Both give exactly ``P(v) ~ exp(-<v, d_t>/beta_t)``;
only the running time differs. The proposals and uniforms of a step's first rejection round (``B = 32`` of each per
learner) and one inverse-CDF uniform per learner are drawn from the privacy stream for a block of steps at a time
(:mod:`dpbandit.optim.pofw_draws`: one numpy call per array instead of two per step); a row that accepts none of
its B proposals (probability at most ``(7/8)^32 < 1.4 %``) draws its further rounds from the stream when they
happen. Every number is used at most once, so each selection's randomness is fresh, as the privacy argument needs;
the layout (which numbers, in which order) is in ``docs/ARCHITECTURE.md``, "Randomness". The acceptance test is a compiled kernel (:func:`~dpbandit.optim.pofw_kernels.first_accepted`,
numba) that evaluates the exponentials only up to each row's first acceptance; the O(d) score-row update and the
vertex moves are others (:mod:`dpbandit.optim.pofw_kernels`, which also holds a whole step for DP-HDB's block
kernel).

Two classes: :class:`DPPOFWBatch` advances n independent learners in lockstep (one sample each per step; all state
is (n, d) arrays; O(d) work per real sample, O(1) per zero sample, plus the selection: O(1) per learner in the
near-uniform regime, O(d) otherwise), and :class:`DPPOFW` is the single-stream
:class:`~dpbandit.optim.protocol.StreamingLearner`. DP-HDB (``dpbandit.agents.dp_hdb``) runs one batch of K
learners, one per arm.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dpbandit.optim.losses import Loss, make_loss
from dpbandit.optim.pofw_kernels import add_gradient, first_accepted, move_to_vertices
from dpbandit.optim.pofw_calibration import FORMS, POFWCalibration, glm_lipschitz
from dpbandit.optim.pofw_draws import REJECTION_BATCH, SelectionDraws
from dpbandit.optim.projections import L1Ball
from dpbandit.optim.protocol import StreamingLearner
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.validation import check_generator, check_int, check_real

__all__ = ["FORMS", "POFWCalibration", "glm_lipschitz", "DPPOFWBatch", "DPPOFW"]

#: Rows whose log-weights span at most this use rejection sampling (acceptance >= 1/8); a speed choice only.
_REJECTION_SPAN = math.log(8.0)
_REJECTION_BATCH = REJECTION_BATCH
#: Relative slack on the declared feature bound (floating-point noise in normalised contexts); larger raises.
_FEATURE_RTOL = 1e-9
#: The reductions behind ``ndarray.min`` / ``max``, called without their Python wrappers (same results).
_MIN, _MAX = np.minimum.reduce, np.maximum.reduce


class DPPOFWBatch:
    """``n_learners`` independent DP-POFW learners on the l1 ball, advancing in lockstep (one sample each per step).

    Parameters
    ----------
    n_learners, dim, horizon:
        Number of learners n, dimension d and number of steps T every learner is calibrated for.
    epsilon, delta:
        Each learner's release stream is (epsilon, delta)-DP with respect to one of its samples (``epsilon`` > 0,
        default 1, ``inf`` = noise off; ``delta`` in (0, 1), default 1/T).
    lipschitz:
        L0 (default 1, the paper's): every per-sample gradient is clipped to ``||.||_inf <= L0``
        (:func:`glm_lipschitz` gives the value that never clips in-range data).
    radius:
        r, the l1 radius of the constraint set (D = 2r).
    feature_bound:
        Bound on ``||x||_inf`` of every sample; larger features raise ``ValueError`` (the smoothness
        ``L1 = loss.smoothness(feature_bound)`` rests on it, E3).
    loss:
        ``"squared"``, ``"logistic"`` or a GLM :class:`~dpbandit.optim.losses.Loss`.
    form, zcdp_method:
        ``"gumbel"`` (default) or ``"laplace"``; the zCDP -> DP conversion inverted for rho* (``"cks"`` or
        ``"closed-form"``).
    rng:
        The privacy stream (``numpy.random.Generator``); also breaks LMO ties when the noise is off.

    State (all arrays (n, d)): ``S`` = sum of the g_i, so ``d_t = S/(t+1)``; ``V`` = sum of the selected vertices,
    so ``x_{t+1} = V/(t+1)``. Memory O(n d), independent of T.
    """

    def __init__(self, n_learners: int, dim: int, horizon: int, *, epsilon: float = 1.0, delta: float | None = None,
                 lipschitz: float = 1.0, radius: float = 1.0, feature_bound: float = 1.0, loss: str | Loss = "squared",
                 form: str = "gumbel", zcdp_method: str = "cks", rng: np.random.Generator):
        self.n_learners = check_int("n_learners", n_learners, low=1)
        self.dim = check_int("dim", dim, low=1)
        self.loss = make_loss(loss)
        self.feature_bound = check_real("feature_bound", feature_bound, low=0.0, low_inclusive=False)
        horizon = check_int("horizon", horizon, low=1)
        self.calibration = POFWCalibration.build(
            epsilon=epsilon, delta=1.0 / horizon if delta is None else delta, horizon=horizon, radius=radius, lipschitz=lipschitz,
            smoothness=self.loss.smoothness(self.feature_bound), form=form, zcdp_method=zcdp_method,
        )
        self.reset(rng)

    # ------------------------------------------------------------------ state
    def reset(self, rng: np.random.Generator) -> None:
        """Restart every learner at ``x_1 = 0`` with fresh randomness ``rng``."""
        self.rng = check_generator(rng, "rng")
        n, d = self.n_learners, self.dim
        self.t = 0
        self._scores = np.zeros((n, 2 * d))  # [-S, S]: score/(r/(t+1)) of the vertices [+r e_j, -r e_j]
        self.V = np.zeros((n, d))
        self._s_inf = np.zeros(n)  # max_j |S_ij|: the exact envelope of the sampler
        self._last_j = np.zeros(n, dtype=np.int64)  # v_t = last_value * e_{last_j}
        self._last_value = np.zeros(n)
        self._rows = np.arange(n)
        self.draws = SelectionDraws(self.rng, n, d, self.horizon, not self.calibration.noise_off, _REJECTION_BATCH)

    @property
    def S(self) -> np.ndarray:
        """(n, d) sum of the gradients: a view of the right half of the scores, taken afresh on each access so that
        no attribute of the state is a view of another (a pickled or deep-copied learner would otherwise hold two
        independent arrays and score half its vertices with stale values)."""
        return self._scores[:, self.dim:]

    @property
    def horizon(self) -> int:
        return self.calibration.horizon

    @property
    def radius(self) -> float:
        return self.calibration.radius

    def predict(self) -> np.ndarray:
        """The released iterates ``x_{t+1}`` of all learners, a read-only (n, d) array (a new array each call)."""
        out = self.V / (self.t + 1.0)
        out.flags.writeable = False
        return out

    # ------------------------------------------------------------------ updates
    def update(self, X: Any, y: Any) -> None:
        """One step of every learner: row i of ``X`` (n, d) and ``y[i]`` (n,) is learner i's sample z_t.

        A zero row with response 0 is the synthetic sample (zero gradient); the selection still happens.
        """
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
        if X.shape != (self.n_learners, self.dim) or y.shape != (self.n_learners,):
            raise ValueError(
                f"X must have shape ({self.n_learners}, {self.dim}) and y shape ({self.n_learners},), "
                f"got {X.shape} and {y.shape}"
            )
        X, x_inf = self._check_features(X, np.abs(X).max(axis=1))
        if not np.all(np.isfinite(y)):
            raise ValueError("y must be finite (no NaN or inf)")
        t = self._advance()
        vx = np.einsum("nd,nd->n", self.V, X)  # x_t = V/t and x_{t-1} = (V - v_{t-1})/(t-1), x_0 = x_1 = 0
        z_prev = (vx - self._last_value * X[self._rows, self._last_j]) / (t - 1) if t > 1 else np.zeros_like(vx)
        coef = self._gradient_coefficient(vx / t, z_prev, y, x_inf, t)
        changed = np.flatnonzero(coef)
        if changed.size:
            self.S[changed] += coef[changed, None] * X[changed]
            self._scores[changed, : self.dim] = -self.S[changed]
            self._s_inf[changed] = np.abs(self.S[changed]).max(axis=1)
        self._select_and_move(t)

    def update_one(self, index: int, x: Any, y: float) -> None:
        """One step of every learner where learner ``index`` gets the sample ``(x, y)`` and every other learner the
        synthetic zero sample (DP-HDB's synthetic update). O(d) work plus the selections."""
        index = check_int("index", index, low=0, high=self.n_learners - 1)
        x = np.asarray(x, dtype=float)
        if x.shape != (self.dim,):
            raise ValueError(f"x must have shape ({self.dim},), got {x.shape}")
        self.step_one(index, x, float(np.abs(x).max()), y)

    def step_one(self, index: int, x: np.ndarray, x_inf: float, y: float) -> None:
        """:meth:`update_one` for a caller that has checked ``index`` (an int in [0, n)) and ``x`` (a float (d,)
        array) and computed ``x_inf = max_j |x_j|``; the feature bound, ``y`` and the horizon are checked here."""
        if not x_inf <= self.feature_bound:  # NaN, inf or over the bound: the checks (and clip) of update()
            x, x_inf = self._check_features(x, np.array([x_inf]))
            x_inf = float(x_inf[0])
        y = float(y)
        if not math.isfinite(y):
            raise ValueError(f"y must be finite, got {y!r}")
        t = self._advance()
        if x_inf > 0.0:  # the zero sample has zero gradient
            vx = float(self.V[index] @ x)  # as in update()
            z_prev = (vx - float(self._last_value[index]) * float(x[self._last_j[index]])) / (t - 1) if t > 1 else 0.0
            limit = self.calibration.lipschitz / x_inf  # the scalar clamp of _gradient_coefficient
            dphi = self.loss.dphi
            now = min(max(float(dphi(vx / t, y)), -limit), limit)
            prev = min(max(float(dphi(z_prev, y)), -limit), limit)
            self._s_inf[index] = add_gradient(self._scores[index], ((t + 1.0) * now - t * prev), x)
        self._select_and_move(t)

    def _check_features(self, X: np.ndarray, x_inf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raise if a row exceeds the feature bound beyond the float slack; clip (a copy) onto it otherwise."""
        if not np.all(np.isfinite(x_inf)):
            raise ValueError("features must be finite (no NaN or inf)")
        worst = float(x_inf.max())
        if worst > self.feature_bound * (1.0 + _FEATURE_RTOL):
            raise ValueError(
                f"a feature vector has ||x||_inf = {worst:.6g} > feature_bound = {self.feature_bound:g}: the "
                "privacy calibration (L1 = loss smoothness at this bound, E3, docs/derivations.md#e3) assumes the bound"
            )
        if worst > self.feature_bound:  # within the floating-point slack: clip onto the bound
            X = np.clip(X, -self.feature_bound, self.feature_bound)
            x_inf = np.minimum(x_inf, self.feature_bound)
        return X, x_inf

    def _advance(self) -> int:
        if self.t >= self.horizon:
            raise ValueError(
                f"DP-POFW was calibrated for horizon={self.horizon} steps; a further sample would exceed the "
                "privacy budget (reset it or build it with the right horizon)"
            )
        self.t += 1
        return self.t

    def _gradient_coefficient(self, z_now, z_prev, y, x_inf, t) -> np.ndarray:
        """Scalar c with ``g_t = c x``: ``c = (t+1) clip(phi'(x_t^T x, y)) - t clip(phi'(x_{t-1}^T x, y))``, each
        derivative clamped to ``|phi'| ||x||_inf <= L0`` (E3: a scalar clamp keeps L1). Vectorised over rows."""
        limit = np.divide(self.calibration.lipschitz, x_inf, out=np.zeros_like(x_inf), where=x_inf > 0)
        now = np.clip(self.loss.dphi(z_now, y), -limit, limit)
        prev = np.clip(self.loss.dphi(z_prev, y), -limit, limit)
        return (t + 1.0) * now - t * prev

    # ------------------------------------------------------------------ selection
    def _select_and_move(self, t: int) -> None:
        """Select ``v_t`` for every learner and update the vertex sums (vertex k < d is ``+r e_k``, k >= d is
        ``-r e_{k-d}``; score of ``+r e_j`` is ``-r d_tj``)."""
        cal = self.calibration
        if cal.noise_off:
            k = self._select_exact(self.selection_draws(t)[2])
        elif cal.form == "laplace":
            k = self._select_laplace(cal.radius / ((t + 1.0) * cal.scale(t)))
        else:
            k = self._select_exponential(cal.radius / ((t + 1.0) * cal.scale(t)), self.selection_draws(t))
        move_to_vertices(self.V, k, cal.radius, self._last_j, self._last_value)

    def selection_draws(self, t: int) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray]:
        """Step t's pre-drawn selection numbers of every learner (not used by the Laplace form): the first rejection
        round's proposals (n, B) in [0, 2d) and their uniforms (n, B) (None when 2d <= 2B or the noise is off: the
        inverse CDF only), and the inverse CDF's uniforms (n,); drawn for blocks of steps
        (:class:`~dpbandit.optim.pofw_draws.SelectionDraws`), before any other draw of the step."""
        return self.draws.step(t)

    def _log_weights(self, rows: np.ndarray, a: float) -> np.ndarray:
        """``score/scale`` of all 2d vertices for ``rows``: ``a [-S, S]`` with ``a = r/((t+1) scale_t)``."""
        return a * self._scores[rows]

    @staticmethod
    def _inverse_cdf(weights: np.ndarray, u: np.ndarray) -> np.ndarray:
        """One index per row with probability proportional to the row's non-negative ``weights`` (R, 2d), from one
        uniform ``u`` (R,) per row."""
        cdf = np.cumsum(weights, axis=1)
        return np.minimum((cdf <= (u * cdf[:, -1])[:, None]).sum(axis=1), weights.shape[1] - 1)

    def _select_exact(self, u: np.ndarray) -> np.ndarray:
        """Noise off: ``argmin_v <v, d_t>`` (the LMO), ties uniformly at random."""
        logw = self._log_weights(self._rows, 1.0)
        return self._inverse_cdf((logw == self._s_inf[:, None]).astype(float), u)

    def _select_laplace(self, a: float) -> np.ndarray:
        """Report-noisy-max: ``argmax_v score_v + Laplace(lambda_t)``, 2d draws per learner (E4 item 3)."""
        logw = self._log_weights(self._rows, a)  # score/lambda_t
        return np.argmax(logw + self.rng.laplace(0.0, 1.0, logw.shape), axis=1)

    def _select_exponential(self, a: float, draws: tuple) -> np.ndarray:
        """Exact draw from ``P(v) ~ exp(score_v/beta_t)`` for every learner (E4 item 4), see the module docstring;
        ``draws``: the step's :meth:`selection_draws`."""
        envelope = a * self._s_inf  # max log-weight of each row (exact)
        k, u, v = draws
        if k is None:  # few vertices (2d <= 2B): the inverse CDF is cheaper than proposals
            return self._inverse_cdf(np.exp(self._log_weights(self._rows, a) - envelope[:, None]), v)
        out = np.empty(self.n_learners, dtype=np.int64)
        if 2.0 * _MAX(envelope) <= _REJECTION_SPAN:  # every row near uniform (NaN: the general branch)
            rows = self._rows
        else:
            near_uniform = 2.0 * envelope <= _REJECTION_SPAN
            rows = np.flatnonzero(~near_uniform)
            out[rows] = self._inverse_cdf(np.exp(self._log_weights(rows, a) - envelope[rows, None]), v[rows])
            rows = np.flatnonzero(near_uniform)
            k, u = k[rows], u[rows]
        while rows.size:  # rejection from the uniform proposal; rows: the learners still to draw
            rows = first_accepted(self._scores, rows, k, u, a, envelope, out)
            if rows.size:  # a further round (rare): drawn now
                k = self.rng.integers(0, 2 * self.dim, size=(rows.size, _REJECTION_BATCH))
                u = self.rng.random(k.shape)
        return out

    # ------------------------------------------------------------------ privacy
    @property
    def ledger(self) -> PrivacyLedger:
        """Each learner's ledger: its whole release stream as one rho*-zCDP event (or non-private)."""
        cal = self.calibration
        ledger = PrivacyLedger(neighboring="replace-one", unit="one sample z_t = (x_t, y_t) of the learner's stream")
        if cal.noise_off:
            return ledger.add_non_private("DP-POFW with noise off (epsilon = inf): exact LMO")
        return ledger.add_zcdp(cal.rho, 1, mechanism=cal.mechanism, bound=cal.bound)

    @property
    def sensitivity_assumption(self) -> str:
        cal = self.calibration
        return (
            f"features ||x||_inf <= {self.feature_bound:g}; per-sample gradients clipped to ||g||_inf <= "
            f"L0 = {cal.lipschitz:.6g}; {self.loss!r}: L1 = {cal.smoothness:.6g} (E3, docs/derivations.md#e3); l1 "
            f"radius "
            f"r = {cal.radius:g}, D = 2r; score sensitivity Delta_t = 2r(L0 + L1 D)/(t+1) "
            "(docs/derivations.md#hfw-5)"
        )

    def privacy_report(self):
        """The :class:`~dpbandit.privacy.report.PrivacyReport` of one learner's release stream: "DP" at the
        configured (epsilon, delta) with the recorded rho*, or "none" when the noise is off."""
        cal = self.calibration
        guarantee = "none" if cal.noise_off else "DP"
        note = "" if not cal.noise_off else "noise off (epsilon = inf): no privacy guarantee"
        return self.ledger.report(cal.delta, guarantee=guarantee, sensitivity_assumption=self.sensitivity_assumption,
                                  note=note)


class DPPOFW(StreamingLearner):
    """DP-POFW (``spec/han-frank-wolfe.md`` §5 with ``spec/errata.md`` E3, E4) as a single-stream learner.

    ``predict()`` is the release ``x_{t+1}`` (d,), read-only; ``update(x, y)`` takes one sample. Parameters as
    :class:`DPPOFWBatch` (keyword-only after ``rng``). The release stream is (epsilon, delta)-DP with respect to
    replacing one sample (guarantee "DP"; "none" when ``epsilon = inf``). ``domain``: the feasible
    ``L1Ball(radius)`` (the OCO runner's comparator set).
    """

    name: ClassVar[str] = "dp-pofw"
    guarantee: ClassVar[str] = "DP"
    needs_rng: ClassVar[bool] = True

    def __init__(self, dim: int, horizon: int, loss: str | Loss = "squared", rng: np.random.Generator | None = None,
                 *, epsilon: float = 1.0, delta: float | None = None, lipschitz: float = 1.0, radius: float = 1.0,
                 feature_bound: float = 1.0, form: str = "gumbel", zcdp_method: str = "cks"):
        self._options = dict(epsilon=epsilon, delta=delta, lipschitz=lipschitz, radius=radius,
                             feature_bound=feature_bound, form=form, zcdp_method=zcdp_method)
        self._engine: DPPOFWBatch | None = None
        super().__init__(dim, horizon, loss, rng)
        self.domain = L1Ball(self.calibration.radius)

    def _reset_state(self) -> None:
        if self._engine is None:
            self._engine = DPPOFWBatch(1, self.dim, self.horizon, loss=self.loss, rng=self.rng, **self._options)
        else:
            self._engine.reset(self.rng)
        self.ledger = self._engine.ledger

    @property
    def calibration(self) -> POFWCalibration:
        return self._engine.calibration

    def predict(self) -> np.ndarray:
        return self._engine.predict()[0]

    def update(self, x: np.ndarray, y: float) -> None:
        x = np.asarray(x, dtype=float)
        if x.shape != (self.dim,):
            raise ValueError(f"x must have shape ({self.dim},), got {x.shape}")
        self._engine.update_one(0, x, y)  # validates the sample and the horizon before any work
        self.t = self._engine.t

    def privacy_report(self):
        return self._engine.privacy_report()

    def __repr__(self) -> str:
        cal = self.calibration
        return (f"DPPOFW(dim={self.dim}, horizon={self.horizon}, loss={self.loss!r}, epsilon={cal.epsilon:g}, "
                f"delta={cal.delta:g}, radius={cal.radius:g}, form={cal.form!r})")
