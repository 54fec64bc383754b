"""van der Hoeven (2019), *User-Specified Local Differential Privacy in Unconstrained Adaptive Online Learning*:
parameter-free learners on an unconstrained domain, fed by locally randomised gradients
(``spec/private-oco-learners.md`` §6).

* :func:`conjugate_prior_prediction` and :class:`ConjugatePriorPotential` — **Algorithm 1**, the one-dimensional
  potential with the conjugate prior ``dP/dv = exp(-b v^2)/Z`` on ``[-C, C]``, ``C = 1/(5G)``. Its prediction
  (eq. 5) is evaluated by the corrected, overflow-safe closed form of §6.1 with the refinement of
  ``spec/errata.md`` E8 (the printed eq. (7) is wrong, and the corrected closed form overflows).
* :class:`LDPBlackBoxReduction` — **Algorithm 2** (§6.2): the norm learned by Algorithm 1, the direction by
  scale-free projected online gradient descent on the unit l2 ball; plays ``w_t = v_t z_t``.
* :class:`LDPCoordinateWise` — **Algorithm 3** (§6.3, "private unconstrained adaptive sparse gradient descent"):
  one copy of Algorithm 1 per coordinate (for ``d = 1`` it *is* Algorithm 1 as a learner).

Protocol and guarantee (paper §2.2, Lemma 1). In round t the learner publishes ``w_t``; the user (the provider of
sample t) computes a gradient ``g_t`` of the (Huber-clipped, §7) loss at ``w_t`` with ``|g_tj| <= 1`` and sends
only ``g~_t = g_t + xi_t``, ``xi_t`` drawn by the local Laplace randomiser
(:func:`dpbandit.privacy.noise.local_laplace`: per-coordinate Laplace of scale ``2/tau_j``). The report is
``eps_t = sum_j tau_j``-LDP for the user; everything the learner does afterwards is post-processing of reports, so
the learner's whole release stream is ``eps_t``-DP with respect to each user and needs no trusted curator. The
guarantee is reported as "LDP" per report (randomiser level), never as JDP (§7, labelling rule).
In code, the user side is :meth:`LDPLearner.report` and the learner side :meth:`LDPLearner.learn`, which sees
only reports.

Shapes: iterates and gradients ``(d,)``; ``report`` also accepts stacks ``(n, d)`` / ``(n,)``.
"""

from __future__ import annotations

import abc
import logging
import math
from typing import Any, ClassVar

import numpy as np
from scipy.special import erf, erfcx

from dpbandit.optim.losses import Loss
from dpbandit.optim.protocol import StreamingLearner
from dpbandit.privacy.calibrate import local_laplace_epsilon
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.noise import local_laplace
from dpbandit.privacy.report import PrivacyReport
from dpbandit.validation import check_int, check_real

__all__ = [
    "MAX_LOG_WEALTH",
    "conjugate_prior_prediction",
    "ConjugatePriorPotential",
    "LDPLearner",
    "LDPBlackBoxReduction",
    "LDPCoordinateWise",
]

logger = logging.getLogger(__name__)

#: Default cap on the log-wealth log(E_t / Z) (§6.1 warning: wealth grows like e^{0.16 t} under one-signed
#: gradients; exp(709) overflows a float64).
MAX_LOG_WEALTH = 700.0

_SQRT2 = math.sqrt(2.0)
_SQRT_PI_2 = math.sqrt(math.pi / 2.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_LOG2 = math.log(2.0)


def conjugate_prior_prediction(
    L: Any, B: Any, b: float, C: float, max_log_wealth: float = MAX_LOG_WEALTH
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 1's prediction ``w = (1/Z) int_{-C}^{C} v exp(L v - B v^2) dv`` with ``Z = int exp(-b v^2) dv``
    (eq. 5 with the conjugate prior; ``L = -sum_{s<t} g~_s``, ``B = b + sum_{s<t} g~_s^2``), evaluated stably.

    ``spec/private-oco-learners.md`` §6.1 (stable evaluation) and ``spec/errata.md`` E8: write
    ``exp(L v - B v^2)`` as an unnormalised ``N(m, s^2)``, ``m = L/(2B)``, ``s = 1/sqrt(2B)``; then
    ``w = (E/Z) mu_TN`` with ``log E = L^2/(4B) + log(s sqrt(2 pi)) + log(Phi(beta) - Phi(alpha))``,
    ``alpha = (-C - m)/s``, ``beta = (C - m)/s``, and ``mu_TN`` the mean of ``N(m, s^2)`` truncated to ``[-C, C]``.
    By the symmetry ``w(-L) = -w(L)`` everything is computed for ``m >= 0``:

    * ``m <= C`` (mode inside): ``Phi(beta) - Phi(alpha) = (erf(beta/sqrt 2) + erf(-alpha/sqrt 2))/2`` (a sum, no
      cancellation) and ``phi(alpha) - phi(beta) = phi(beta) expm1(-2 C |L|)`` (E8; ``alpha^2 - beta^2 = 4Cm/s^2
      = 4 C |L|``);
    * ``m > C`` (both bounds below the mode): with ``a = -beta/sqrt 2 < c = -alpha/sqrt 2``,
      ``Phi(beta) - Phi(alpha) = e^{-a^2} [erfcx(a) - erfcx(c) e^{-2C|L|}] / 2`` and the ratio of §6.1,
      ``expm1(-2C|L|) / (sqrt(pi/2) [erfcx(a) - erfcx(c) e^{-2C|L|}])`` — every term bounded.

    Args:
        L, B: arrays of the same shape (broadcast), ``B > 0``.
        b: prior precision (> 0).  C: half-width of the prior's support (> 0), ``1/(5G)`` in the paper.
        max_log_wealth: the log-wealth ``log(E/Z)`` used for ``w`` is capped here (§6.1 warning; <= 700 keeps ``w``
            finite, ``inf`` removes the cap).

    Returns:
        ``(w, log_wealth, mu)`` of the broadcast shape: the predictions ``w = exp(min(log_wealth, cap)) mu``, the
        *uncapped* log-wealth ``log(E/Z)`` (``E/Z = 1 + F_{t-1}``) and the signed truncated-normal mean ``mu`` in
        ``[-C, C]``; so ``log|w| = log_wealth + log|mu|`` without any cap. Accurate to ~1e-9 relative (E8) over
        |w| from 1e-21 to 1e258.
    """
    L, B = np.broadcast_arrays(np.asarray(L, dtype=float), np.asarray(B, dtype=float))
    absL = np.abs(L)
    m = absL / (2.0 * B)
    s = 1.0 / np.sqrt(2.0 * B)
    alpha = (-C - m) / s
    beta = (C - m) / s
    delta = 2.0 * C * absL  # (alpha^2 - beta^2)/2 = 2Cm/s^2
    inside = beta >= 0.0
    if inside.all():
        log_e, ratio = _mode_inside(absL, m, alpha, beta, delta)
    elif not inside.any():
        log_e, ratio = _mode_outside(absL, B, C, alpha, beta, delta)
    else:
        with np.errstate(all="ignore"):  # each branch may overflow where it is not selected; np.where drops it
            log_in, ratio_in = _mode_inside(absL, m, alpha, beta, delta)
            log_out, ratio_out = _mode_outside(absL, B, C, alpha, beta, delta)
        log_e, ratio = np.where(inside, log_in, log_out), np.where(inside, ratio_in, ratio_out)
    mu = np.copysign(np.clip(m + s * ratio, -C, C), L)
    log_z = 0.5 * math.log(math.pi / b) + math.log(math.erf(C * math.sqrt(b)))
    log_wealth = log_e + 0.5 * np.log(math.pi / B) - log_z  # log(s sqrt(2 pi)) = log(pi/B)/2
    with np.errstate(over="ignore"):
        w = np.exp(np.minimum(log_wealth, max_log_wealth)) * mu
    return w, log_wealth, mu


def _mode_inside(absL, m, alpha, beta, delta):
    """m <= C: ``(L^2/(4B) + log(Phi(beta) - Phi(alpha)), (phi(alpha) - phi(beta))/(Phi(beta) - Phi(alpha)))``."""
    mass = 0.5 * (erf(beta / _SQRT2) + erf(-alpha / _SQRT2))
    return 0.5 * absL * m + np.log(mass), np.exp(-0.5 * beta * beta) / _SQRT_2PI * np.expm1(-delta) / mass


def _mode_outside(absL, B, C, alpha, beta, delta):
    """m > C (a, c > 0): the same pair; ``L^2/(4B) - a^2 = C(|L| - C B)`` avoids cancelling two large terms."""
    bracket = erfcx(-beta / _SQRT2) - erfcx(-alpha / _SQRT2) * np.exp(-delta)
    return C * (absL - C * B) - _LOG2 + np.log(bracket), np.expm1(-delta) / (_SQRT_PI_2 * bracket)


class ConjugatePriorPotential:
    """Algorithm 1 of van der Hoeven (2019): ``n`` independent one-dimensional learners, each predicting
    ``w_t = E_{v~P}[v exp(-sum_{s<t} (v g~_s + (v g~_s)^2))]`` with the conjugate prior
    (``spec/private-oco-learners.md`` §6.1; the printed Algorithm 1 omits the sum inside the exponent).

    Regret (paper, Thm 1): ``E R_T(u) <= 1 + |u| max{11G(ln(11G|u|) - 1 + ln(sqrt5 G sqrt(pi)/(4 sqrt b))),
    E sqrt(8(b + sum g~^2) ln(16 u^2 (b + sum g~^2)^{3/2} sqrt(pi)/sqrt(b) + 1))}`` for symmetric ``g~_t`` with
    ``|E g~_t| <= G``.

    Args:
        n: number of independent copies (1 for Algorithm 2, d for Algorithm 3).
        lipschitz: G, a bound on ``|E g~_t|``; the prior lives on ``[-C, C]``, ``C = 1/(5G)``.
        prior: b > 0, the prior precision; default ``G^2`` (§6.1: makes ``ln(sqrt5 G sqrt(pi)/(4 sqrt b))`` ~ 0).
        max_log_wealth: cap on the log-wealth (§6.1 warning); every capped round is counted in
            :attr:`capped_rounds` and the first one is logged.

    ``predict()`` returns a read-only ``(n,)`` view; ``update(g)`` takes the ``(n,)`` feedback.
    """

    def __init__(self, n: int, lipschitz: float = 1.0, prior: float | None = None,
                 max_log_wealth: float = MAX_LOG_WEALTH):
        self.n = check_int("n", n, low=1)
        self.lipschitz = check_real("lipschitz", lipschitz, low=0.0, low_inclusive=False)
        self.prior = (self.lipschitz**2 if prior is None
                      else check_real("prior", prior, low=0.0, low_inclusive=False))
        self.max_log_wealth = check_real("max_log_wealth", max_log_wealth, low=0.0, high=MAX_LOG_WEALTH,
                                         low_inclusive=False)
        self.C = 1.0 / (5.0 * self.lipschitz)
        self.reset()

    def reset(self) -> None:
        self.L = np.zeros(self.n)
        self.B = np.full(self.n, self.prior)
        self.capped_rounds = 0
        self._w = np.zeros(self.n)  # L = 0: the prediction is exactly 0
        self._w.flags.writeable = False

    def predict(self) -> np.ndarray:
        return self._w

    def update(self, g: Any) -> None:
        g = np.asarray(g, dtype=float)
        self.L = self.L - g
        self.B = self.B + g * g
        w, log_wealth, _ = conjugate_prior_prediction(self.L, self.B, self.prior, self.C, self.max_log_wealth)
        if np.any(log_wealth > self.max_log_wealth):
            if self.capped_rounds == 0:
                logger.warning("conjugate-prior potential: log-wealth %.4g capped at %g (docs/derivations.md#oco-6"
                               ": wealth grows like exp(0.16 t) under one-signed gradients)",
                               float(np.max(log_wealth)), self.max_log_wealth)
            self.capped_rounds += 1
        w.flags.writeable = False
        self._w = w

    def __repr__(self) -> str:
        return f"ConjugatePriorPotential(n={self.n}, lipschitz={self.lipschitz}, prior={self.prior})"


class LDPLearner(StreamingLearner):
    """Common part of van der Hoeven's learners: the user-side report and the LDP ledger.

    Args:
        dim, horizon, loss, rng: as :class:`~dpbandit.optim.protocol.StreamingLearner` (rng: the "privacy" stream,
            here standing for the users' own randomness).
        tau: the paper's privacy weights ``tau_j`` in ``(0, inf]``, a scalar (all coordinates) or ``(d,)``: the
            report's coordinate j gets Laplace noise of scale ``2/tau_j``, and the report is
            ``sum_j tau_j``-LDP (Lemma 1). ``tau_j = inf`` leaves coordinate j unprotected; all ``inf`` is the
            non-private original (no random number is drawn).
        mu: ridge ``mu >= 0``; the per-sample loss is ``f_t(w) = phi(x_t^T w, y_t) + (mu/2) ||w||^2`` (0: the plain
            convex loss of the paper). The user randomises only the data part; the learner adds ``mu w_t`` (a
            function of its own public iterate: no privacy cost).
        lipschitz: G, a bound on the expected feedback (``|E g~_tj|`` for the coordinate-wise learner,
            ``||E g~_t||_2`` for the reduction). Default 1 (the clipped data part) when ``mu = 0`` and 2 when
            ``mu > 0``: the bound then holds on ``||w|| <= 1/mu``, which contains the minimiser of the regularised
            loss (its optimality condition gives ``mu ||u*|| <= 1``).
        prior: b of the conjugate prior (default ``G^2``).
        max_log_wealth: cap on Algorithm 1's log-wealth (§6.1 warning).

    The data part of the gradient is ``clip(phi'(x^T w, y), -k, k) x`` with ``k = min(1, 1/||x||)`` (l_inf norm
    for the coordinate-wise learner, l2 for the reduction): the gradient of a convex Huber-type loss (§7) with
    ``|g_j| <= 1``, as Lemma 1 requires, for every input (no bound on the data is assumed).
    """

    guarantee: ClassVar[str] = "LDP"
    needs_rng: ClassVar[bool] = True
    #: A synthetic zero sample ``update(zeros(d), 0)`` sends a report of ``g = 0`` (plus noise): it differs from a
    #: real report by at most half the report's range, so a bandit agent feeding zero samples to the arms it did
    #: not play keeps the per-user epsilon of one report (``spec/private-oco-learners.md`` §7).
    zero_sample_halves_sensitivity: ClassVar[bool] = True
    _clip_norm: ClassVar[str] = "linf"

    def __init__(self, dim: int, horizon: int, loss: str | Loss = "squared", rng: np.random.Generator | None = None,
                 *, tau: Any = 1.0, mu: float = 0.0, lipschitz: float | None = None, prior: float | None = None,
                 max_log_wealth: float = MAX_LOG_WEALTH):
        dim = check_int("dim", dim, low=1)
        epsilon = local_laplace_epsilon(tau, dim)  # validates tau: scalar or (d,), entries in (0, inf]
        self.tau = np.broadcast_to(np.asarray(tau, dtype=float), (dim,)).copy()
        self.tau.flags.writeable = False
        self.epsilon = epsilon
        self.noise_off = bool(np.all(np.isinf(self.tau)))
        self.needs_rng = not self.noise_off  # instance value shadows the class default
        self.mu = check_real("mu", mu, low=0.0)
        default_g = 1.0 if self.mu == 0.0 else 2.0
        self.lipschitz = default_g if lipschitz is None else check_real("lipschitz", lipschitz, low=0.0,
                                                                        low_inclusive=False)
        self.prior = None if prior is None else check_real("prior", prior, low=0.0, low_inclusive=False)
        self.max_log_wealth = check_real("max_log_wealth", max_log_wealth, low=0.0, high=MAX_LOG_WEALTH,
                                         low_inclusive=False)
        super().__init__(dim, horizon, loss, rng)

    # -- the user's side ------------------------------------------------------------------------------------------

    def gradient(self, x: Any, y: Any) -> np.ndarray:
        """The clipped data gradient at the current release, ``clip(phi', -k, k) x`` (``(d,)`` or ``(n, d)``),
        with ``|g_j| <= 1``."""
        x = np.asarray(x, dtype=float)
        w = self.predict()
        norm = np.abs(x).max(axis=-1) if self._clip_norm == "linf" else np.sqrt(np.einsum("...i,...i->...", x, x))
        with np.errstate(divide="ignore"):
            k = np.minimum(1.0, 1.0 / norm)
        scale = np.clip(self.loss.dphi(x @ w, y), -k, k)
        return scale[..., None] * x if np.ndim(scale) else scale * x

    def report(self, x: Any, y: Any, rng: np.random.Generator | None = None) -> np.ndarray:
        """What the user of sample ``(x, y)`` sends: the clipped gradient at the current release, randomised by
        the local Laplace randomiser with this learner's ``tau`` (``sum_j tau_j``-LDP; noise-free if all
        ``tau_j = inf``). Vectorised: ``x`` ``(..., d)``, ``y`` ``(...)``. ``rng`` defaults to the learner's."""
        g = self.gradient(x, y)
        if self.noise_off:
            return g
        return local_laplace(self.rng if rng is None else rng, g, self.tau)

    # -- the learner's side ---------------------------------------------------------------------------------------

    def update(self, x: Any, y: Any) -> None:
        x, y = self._accept(x, y)
        if not (np.all(np.isfinite(x)) and math.isfinite(y)):
            raise ValueError("the sample (x, y) must be finite (no NaN or inf)")
        self.learn(self.report(x, y))

    def learn(self, report: np.ndarray) -> None:
        """Update from one user's report ``(d,)`` (the only data the learner sees); adds ``mu * w_t``."""
        feedback = report + self.mu * self.predict() if self.mu else report
        self._learn(feedback)

    @abc.abstractmethod
    def _learn(self, feedback: np.ndarray) -> None:
        """Update the learner's state from one (privatised, regularised) gradient ``(d,)``."""

    # -- privacy --------------------------------------------------------------------------------------------------

    def privacy_report(self) -> PrivacyReport:
        """"LDP" per report with ``epsilon = sum_j tau_j``, ``delta = 0`` (van der Hoeven 2019, Lemma 1); guarantee
        "none" when some coordinate has ``tau_j = inf`` (that coordinate is not protected)."""
        if not math.isfinite(self.epsilon):
            open_ = np.flatnonzero(np.isinf(self.tau))
            shown = ", ".join(map(str, open_[:10])) + (", ..." if open_.size > 10 else "")
            return PrivacyReport.non_private(
                self.name, note=f"tau_j = inf: coordinates [{shown}] of every report are sent without noise "
                                "(not protected); no finite LDP guarantee")
        return self.ledger.report(
            0.0, guarantee="LDP",
            sensitivity_assumption="reports are Huber-clipped gradients with |g_j| <= 1 (any data); neighbouring "
                                   "reports differ by <= 2 per coordinate",
            note=f"LDP, per-report epsilon_t = sum_j tau_j = {self.epsilon:.6g} (randomiser level; no trusted "
                 "curator); local Laplace scale 2/tau_j per coordinate",
        )

    def _make_ledger(self) -> PrivacyLedger | None:
        if not math.isfinite(self.epsilon):
            return None
        ledger = PrivacyLedger(unit="one user = one sample (x_t, y_t); only its randomised gradient report leaves "
                                    "the user")
        return ledger.add_pure(self.epsilon, 1, mechanism="local Laplace randomiser (one report per user)",
                               bound="van der Hoeven 2019 Lemma 1: Laplace(2/tau_j) per coordinate, |g_j| <= 1 "
                                     "(docs/derivations.md#oco-6)")

    def _potential(self, n: int) -> ConjugatePriorPotential:
        return ConjugatePriorPotential(n, self.lipschitz, self.prior, self.max_log_wealth)

    def __repr__(self) -> str:
        tau = float(self.tau[0]) if np.all(self.tau == self.tau[0]) else "per-coordinate"
        return (f"{type(self).__name__}(dim={self.dim}, horizon={self.horizon}, loss={self.loss!r}, tau={tau}, "
                f"mu={self.mu}, lipschitz={self.lipschitz})")


class LDPBlackBoxReduction(LDPLearner):
    """Algorithm 2 of van der Hoeven (2019), the black-box reduction (``spec/private-oco-learners.md`` §6.2).

    The direction ``z_t`` is learned by projected online gradient descent on the unit l2 ball, ``z_1 = 0``,
    ``z_{t+1} = Proj(z_t - eta_t g~_t)``, ``eta_t = (sum_{s<=t} ||g~_s||^2)^{-1/2}`` (no step while the sum is 0);
    the norm ``v_t`` by Algorithm 1 fed ``<z_t, g~_t>`` (``|E<z, g~>| <= G``). Plays ``w_t = v_t z_t``.
    Regret (eq. 8): ``O(||u|| E sqrt(sum ||g~_t||^2 ln(||u|| sum ||g~_t||^2 + 1)))``. Per round O(d).

    Guarantee: ``sum_j tau_j``-LDP per report ("LDP"); see :class:`LDPLearner` for the parameters.
    """

    name: ClassVar[str] = "ldp-reduction"
    _clip_norm: ClassVar[str] = "l2"

    def _reset_state(self) -> None:
        self.ledger = self._make_ledger()
        self._norm = self._potential(1)
        self._z = np.zeros(self.dim)
        self._sum_sq = 0.0
        self._w = np.zeros(self.dim)
        self._w.flags.writeable = False

    def predict(self) -> np.ndarray:
        return self._w

    def _learn(self, g: np.ndarray) -> None:
        z = self._z
        self._norm.update(np.array([z @ g]))
        self._sum_sq += float(g @ g)
        if self._sum_sq > 0.0:
            z = z - g / math.sqrt(self._sum_sq)
            nz = math.sqrt(float(z @ z))
            if nz > 1.0:
                z /= nz
        self._z = z
        w = self._norm.predict()[0] * z
        w.flags.writeable = False
        self._w = w

    @property
    def capped_rounds(self) -> int:
        """Rounds in which Algorithm 1's log-wealth was capped."""
        return self._norm.capped_rounds


class LDPCoordinateWise(LDPLearner):
    """Algorithm 3 of van der Hoeven (2019), private unconstrained adaptive sparse gradient descent
    (``spec/private-oco-learners.md`` §6.3): one copy of Algorithm 1 per coordinate, ``w_1 = 0``,
    ``w_{t+1,j}`` = the prediction of copy j after ``g~_{1..t, j}``. Regret (Thm 2): the per-coordinate sum of
    Thm 1 plus d. With ``dim = 1`` this is Algorithm 1 itself. Per round O(d), vectorised.

    Guarantee: ``sum_j tau_j``-LDP per report ("LDP"); see :class:`LDPLearner` for the parameters.
    """

    name: ClassVar[str] = "ldp-coordinatewise"
    _clip_norm: ClassVar[str] = "linf"

    def _reset_state(self) -> None:
        self.ledger = self._make_ledger()
        self._coords = self._potential(self.dim)

    def predict(self) -> np.ndarray:
        return self._coords.predict()

    def _learn(self, g: np.ndarray) -> None:
        self._coords.update(g)

    @property
    def capped_rounds(self) -> int:
        """Rounds in which some coordinate's log-wealth was capped."""
        return self._coords.capped_rounds
