"""WDP-COCOL (Lou & Cheung 2020, Alg. 2): projection-free window-DP online learning with a local linear oracle,
on the probability simplex and the l1 ball (``spec/private-oco-learners.md`` §3.5).

The learner shares WDP-COCOP's window tree of gradients (:class:`~dpbandit.optim.ftal.TreeFTAL`, same leaves,
sensitivity and node noise, ``spec/private-oco-learners.md`` §3.2, Thm 5: privacy identical to §3.3) but replaces
the projection by one call of a local linear optimisation oracle (LLOO) per round::

    xstar_t = (sum_{tau<=t} xhat_tau + C_0 x_1 - ghat_t/mu) / (t + C_0)      minimiser of the anchored surrogate (18)
    eta_t   = C_1^2 / (mu (t + C_0))                                         [derived] C_1^2, not C_1
    r_t     = sqrt(4 eta_t/(mu (t + C_0))) + 2 (L + mu D)/(mu (t + C_0))    [derived] extent of the square root
    phat_t  = LLOO(xhat_t, min(r_t, D), c_t = xhat_t - xstar_t)              [derived] the exact gradient direction
    xhat_{t+1} = (1 - alpha) xhat_t + alpha phat_t

with ``alpha = 1/(5 rho^2)``, ``C_0 = (25 rho^2)^2``, ``C_1 = 26 rho^2 (L + mu D)(1 + C_W)`` and ``C_W`` the
window tree's error factor (gamma: ``2 alpha d log2^1.5(W) ln(d/beta)/((1 - alpha) epsilon)``; gaussian:
``2 alpha sqrt(d) log2^1.5(W) ln(1/delta) ln(d/beta)/((1 - alpha) epsilon)``; 0 with noise off).

LLOO (``spec/private-oco-learners.md`` §3.5, "LLOO contract", paper Assumption 1): ``p`` in P with
``<p, c> <= <y, c>`` for every ``y`` in ``B(x, r) ∩ P`` and ``||x - p||_2 <= rho r``.

* simplex, ``rho = sqrt(d)`` (Garber): the exact minimiser of ``c^T p`` over ``{p in simplex, ||p - x||_1 <=
  sqrt(d) r}`` (which contains ``B(x, r) ∩ simplex``): move mass ``w = min(sqrt(d) r/2, 1 - x_i*)`` to
  ``i* = argmin c`` from the entries of largest ``c`` first (:func:`simplex_lloo`);
* l1 ball of radius tau, ``rho = 2 sqrt(d)`` [derived]: lift ``x`` to ``P(x)`` in the simplex of R^{2d}
  (``P(x)^+- = max(+-x, 0)/tau + s/(2d)``, ``s = 1 - ||x||_1/tau``), so that ``x = tau (P^+ - P^-)`` and
  ``||P(y) - P(x)||_1 <= 2 ||y - x||_1/tau <= 2 sqrt(d) ||y - x||_2/tau``; run the simplex oracle on the cost
  ``tau (c, -c)`` with l1 radius ``2 sqrt(d) r/tau`` and map back: ``<p, c> <= <y, c>`` for every ``y`` in
  ``B(x, r) ∩ P`` and ``||p - x||_2 <= ||p - x||_1 <= tau ||q - P(x)||_1 <= 2 sqrt(d) r``
  (:func:`l1_ball_lloo`).

Both oracles cost O(d log d) (one sort). Guarantee: **window-DP**, never DP (users older than the window are not
protected; :data:`~dpbandit.optim.ftal.WINDOW_WARNING`).

.. warning:: The theoretical constants are huge (``spec/private-oco-learners.md`` §3.5, practical warning): for
   d = 10 on the simplex ``C_0 = 62,500`` anchor pseudo-rounds at x_1 and ``alpha = 1/50``, so the iterate barely
   moves for T below ~1e5. ``constants="practical"`` uses ``C_0 = rho^2``, ``C_1 = (L + mu D)(1 + C_W)`` and the
   same alpha; it is **non-theoretical** (Thms 6–7 do not cover it; privacy is unaffected) and labelled so in the
   privacy report.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from dpbandit.optim.ftal import TreeFTAL
from dpbandit.optim.losses import Loss
from dpbandit.optim.projections import Domain, L1Ball, Simplex, make_domain
from dpbandit.privacy.report import PrivacyReport
from dpbandit.privacy.window import window_block
from dpbandit.validation import check_choice, check_real

__all__ = ["simplex_lloo", "l1_ball_lloo", "WDPCOCOL"]


def simplex_lloo(x: Any, c: Any, l1_radius: float) -> np.ndarray:
    """``argmin {c^T p : p in simplex, ||p - x||_1 <= l1_radius}`` for ``x`` in the simplex (shapes (d,)).

    One linear-oracle call (``i* = argmin c``) and one sort: mass ``w = min(l1_radius/2, 1 - x_i*)`` moves to i*
    from the other entries in decreasing order of ``c`` (moving mass w costs ``2w`` of l1 distance).
    """
    x = np.asarray(x, dtype=float)
    c = np.asarray(c, dtype=float)
    l1_radius = check_real("l1_radius", l1_radius, low=0.0)
    best = int(np.argmin(c))
    w = min(0.5 * l1_radius, max(1.0 - x[best], 0.0))
    order = np.argsort(-c, kind="stable")
    order = order[order != best]
    mass = np.maximum(x[order], 0.0)
    before = np.cumsum(mass) - mass
    p = x.copy()
    p[order] -= np.clip(w - before, 0.0, mass)
    p[best] += w
    return p


def l1_ball_lloo(x: Any, c: Any, r: float, radius: float) -> np.ndarray:
    """LLOO of the l1 ball of ``radius`` at ``x`` (d,) for the cost ``c`` (d,) and l2 radius ``r``: the simplex
    oracle in the lifted space R^{2d} (module docstring; ``rho = 2 sqrt(d)``)."""
    x = np.asarray(x, dtype=float)
    c = np.asarray(c, dtype=float)
    d = x.size
    slack = max(1.0 - float(np.sum(np.abs(x))) / radius, 0.0) / (2 * d)
    lifted = np.concatenate([np.maximum(x, 0.0), np.maximum(-x, 0.0)]) / radius + slack
    q = simplex_lloo(lifted, radius * np.concatenate([c, -c]), 2.0 * math.sqrt(d) * r / radius)
    return radius * (q[:d] - q[d:])


class WDPCOCOL(TreeFTAL):
    """WDP-COCOL on the simplex or the l1 ball (module docstring). Window epsilon-DP (``noise="gamma"``, Option I)
    or window (epsilon, delta)-DP (``noise="gaussian"``, Option II) — **never DP**.

    .. warning:: Only the users of the last W rounds before the horizon are protected; users older than the
       window have no guarantee at all (``spec/private-oco-learners.md`` §3.1).

    Parameters: as :class:`~dpbandit.optim.ftal.WDPCOCOP` with ``domain`` "simplex" (default) or "l1-ball"
    (``radius``), plus ``beta`` in (0, 1) (the failure probability in C_W) and ``constants`` ("theory" or
    "practical"). Regret for T >= W (Thms 6–7, theory constants):
    ``O(d (L + mu D)^2 log2^1.5 W ln(d/beta) ln T/(mu epsilon))``.
    """

    name = "wdp-cocol"
    guarantee = "window-DP"

    def __init__(self, dim: int, horizon: int, *, window: int, mu: float, loss: str | Loss = "squared",
                 domain: str | Domain = "simplex", radius: float = 1.0, x_bound: float = 1.0, y_bound: float = 1.0,
                 epsilon: float = 1.0, delta: float | None = None, noise: str = "gamma", beta: float = 0.05,
                 constants: str = "theory", initial: Any = None, rng: np.random.Generator | None = None):
        if window is None:
            raise TypeError("window must be an integer W >= 1, got None")
        if isinstance(domain, str):
            check_choice("domain", domain, ("simplex", "l1-ball"))
        domain = make_domain(domain, radius)
        if not isinstance(domain, (Simplex, L1Ball)):
            raise ValueError(f"WDP-COCOL needs a polytope with an exact LLOO ('simplex' or 'l1-ball'), got {domain!r}")
        self.beta = check_real("beta", beta, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
        self.constants = check_choice("constants", constants, ("theory", "practical"))
        super().__init__(dim, horizon, mu=mu, window=window, loss=loss, domain=domain, x_bound=x_bound,
                         y_bound=y_bound, epsilon=epsilon, delta=delta, noise=noise, initial=initial, rng=rng)

    def _calibrate(self, horizon: int) -> None:
        super()._calibrate(horizon)
        d = self.dim
        self.rho = math.sqrt(d) * (1.0 if isinstance(self.domain, Simplex) else 2.0)
        self.alpha = 1.0 / (5.0 * self.rho**2)
        scale = math.log2(window_block(self.window)) ** 1.5 * math.log(d / self.beta) / self.epsilon
        if not self.private:
            self.c_w = 0.0
        elif self.noise == "gamma":
            self.c_w = 2.0 * self.alpha * d * scale / (1.0 - self.alpha)
        else:
            self.c_w = 2.0 * self.alpha * math.sqrt(d) * math.log(1.0 / self.delta) * scale / (1.0 - self.alpha)
        spread = self.lipschitz + self.mu * self.diameter  # L + mu D: the bound on ||grad of the surrogate||
        if self.constants == "theory":
            self.c_0 = (25.0 * self.rho**2) ** 2
            self.c_1 = 26.0 * self.rho**2 * spread * (1.0 + self.c_w)
        else:
            self.c_0 = self.rho**2
            self.c_1 = spread * (1.0 + self.c_w)
        self._spread = spread

    def radius_at(self, t: int) -> float:
        """The LLOO radius ``min(r_t, D)`` used at step t."""
        n = self.mu * (t + self.c_0)
        eta = self.c_1**2 / n
        return min(math.sqrt(4.0 * eta / n) + 2.0 * self._spread / n, self.diameter)

    def _step(self, ghat: np.ndarray) -> np.ndarray:
        t = self.t
        xstar = (self._sum + self.c_0 * self.initial - ghat / self.mu) / (t + self.c_0)
        r = self.radius_at(t)
        c = self._x - xstar
        if isinstance(self.domain, Simplex):
            p = simplex_lloo(self._x, c, math.sqrt(self.dim) * r)
        else:
            p = l1_ball_lloo(self._x, c, r, self.domain.radius)
        return (1.0 - self.alpha) * self._x + self.alpha * p

    def privacy_report(self) -> PrivacyReport:
        report = super().privacy_report()
        if self.constants == "practical":
            note = ("practical (non-theoretical) step constants C_0 = rho^2, C_1 = (L + mu D)(1 + C_W): the regret "
                    "bounds of Lou & Cheung Thms 6-7 do not apply; the privacy guarantee is unaffected")
            note = f"{report.note} {note}".strip() if report.note else note
            report = dataclasses.replace(report, note=note)
        return report
