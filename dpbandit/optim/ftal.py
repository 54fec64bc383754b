"""Follow-the-approximate-leader on tree-aggregated gradients: PFTAL (Thakurta & Smith 2013) and WDP-COCOP
(Lou & Cheung 2020, Alg. 1), ``spec/private-oco-learners.md`` §3.3–§3.4.

Both play ``xhat_t``, put the leaf ``v_t = grad f_t(xhat_t)`` (shape (d,)) into a continual-release tree and move
to the exact minimiser over C of the private surrogate
``J_t(x) = <ghat_t, x> + mu/2 sum_{tau<=t} ||x - xhat_tau||^2``, ``ghat_t ~ sum_{tau<=t} v_tau``:

    xhat_{t+1} = Proj_C( (sum_{tau<=t} xhat_tau - ghat_t/mu) / t )          (§3.3 [derived]: J_t is isotropic)

(the paper's eq. (10) prints the argument without the 1/t). With noise off this is the non-private FTAL of Hazan,
Agarwal & Kale 2007 with the strong-convexity surrogate. O(d) work per round (plus the tree's O(d) amortised).

* :class:`PFTAL` — the full binary tree (``dpbandit.privacy.tree.TreeAggregator``): **DP** for every user.
* :class:`WDPCOCOP` — the window tree (``dpbandit.privacy.window.WindowTree``): **window-DP** only.

Sensitivity: given the released history the leaves of the other users coincide, and
``||v_t - v'_t|| = ||grad phi(xhat_t; z_t) - grad phi(xhat_t; z'_t)|| <= Delta = 2 L_loss`` (the ridge part
``mu xhat_t`` is common; see :mod:`dpbandit.optim.gradient_descent`). This is never larger than the spec's safe
``max(L + mu D, 2L)`` (§3.2) and ``2L`` (§2, §3.4). Node noise from Delta:

* ``noise="gamma"`` (pure epsilon-DP): Gamma-norm noise ``c = Delta k/epsilon`` per node, k the number of noisy
  nodes an item enters — ``L = floor(log2 T) + 1`` for the full tree (§2 with the exact depth of
  ``spec/dp-testing-and-accounting.md`` §1.1; the papers' ``k_T = ceil(log2 T) + 1`` is L or L + 1), ``k_W =
  log2 W + 1`` for the window tree (§3.2 Lemma 1, W rounded up to a power of two).
* ``noise="gaussian"`` ((epsilon, delta)-DP): the tree is exactly one Gaussian mechanism with
  ``sigma/(Delta sqrt(k))`` (``spec/dp-testing-and-accounting.md`` §1.1), calibrated by the analytic Gaussian
  (``calibrate_tree_sigma`` / ``calibrate_window_sigma``); tighter than §3.2 Lemma 3's
  ``sigma^2 = 8 Delta^2 k_W^2 ln^2(2/delta)/epsilon^2`` and valid for every epsilon.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dpbandit.optim.gradient_descent import ConstrainedLearner, check_privacy, readonly
from dpbandit.optim.losses import Loss
from dpbandit.optim.projections import Domain
from dpbandit.privacy.calibrate import gamma_norm_scale
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.tree_calibration import calibrate_tree_sigma, calibrate_window_sigma
from dpbandit.privacy.noise import GammaNormNoise, GaussianNoise
from dpbandit.privacy.report import PrivacyReport
from dpbandit.privacy.tree import TreeAggregator, tree_depth
from dpbandit.privacy.window import WindowTree, window_block
from dpbandit.validation import check_int

__all__ = ["WINDOW_WARNING", "TreeFTAL", "PFTAL", "WDPCOCOP"]

#: The semantics warning every window-DP learner carries (``spec/private-oco-learners.md`` §3.1).
WINDOW_WARNING = (
    "window-DP: only the users of the last W rounds before the horizon are protected; users older than the "
    "window have NO guarantee (every release adds their data without noise and combinations of releases may "
    "expose them; docs/derivations.md#oco-3). Not comparable to DP/JDP numbers: report it as "
    "window-DP/window-JDP with its W, never on one privacy axis with DP/JDP results."
)


class TreeFTAL(ConstrainedLearner):
    """FTAL on a gradient tree (full tree if ``window`` is None, else a window tree of ``window`` users).

    Parameters: those of :class:`~dpbandit.optim.gradient_descent.ConstrainedLearner` (``mu > 0``, ``loss``,
    ``domain``, ``radius``, ``x_bound``, ``y_bound``, ``initial``, ``rng``) plus ``epsilon`` (inf: noise off),
    ``delta`` (Gaussian only), ``noise`` ("gamma" or "gaussian"), ``window`` (W >= 1 or None).
    Attributes after construction: ``sensitivity`` (Delta), ``nodes_per_item`` (k), ``node_noise`` (the
    :class:`~dpbandit.privacy.noise.Noise` of a node, None when noise is off).
    """

    guarantee = "DP"
    #: Bandit feeding (``spec/private-oco-learners.md`` §7 option 1; the two-stream argument of ``spec/errata.md``
    #: E6). The synthetic zero sample ``update(zeros(d), 0)`` enters the tree as the leaf
    #: ``phi'(0, 0) * 0 + mu xhat_t = mu xhat_t`` and a real (clipped) sample as ``phi'(x^T xhat_t, y) x + mu xhat_t``.
    #: Given the released history xhat_t is the same on both sides, so the two leaves differ by
    #: ``|phi'(x^T xhat_t, y)| ||x|| <= G x_bound = L_loss = Delta/2`` (``|x^T xhat_t| <= z_max``): half the calibrated
    #: replace-one sensitivity. A user whose two versions play different arms moves two learners' leaves by at most
    #: Delta/2 each; in the nodes of each tree that is a privacy loss of at most epsilon/2 (gamma noise: linear in
    #: the shift) or a quarter of the Gaussian mu^2, so both together cost no more than one replace-one change
    #: (epsilon, resp. mu^2/2 <= mu^2). The same holds node by node for the window tree (window-DP).
    zero_sample_halves_sensitivity: ClassVar[bool] = True

    def __init__(self, dim: int, horizon: int, *, mu: float, window: int | None = None,
                 loss: str | Loss = "squared", domain: str | Domain = "l2-ball", radius: float = 1.0,
                 x_bound: float = 1.0, y_bound: float = 1.0, epsilon: float = 1.0, delta: float | None = None,
                 noise: str = "gamma", initial: Any = None, rng: np.random.Generator | None = None):
        self.window = None if window is None else check_int("window", window, low=1)
        self.epsilon, self.delta, self.noise = check_privacy(epsilon, delta, noise)
        self.private = math.isfinite(self.epsilon)
        self.needs_rng = self.private
        if not self.private:
            self.guarantee = "none"
        else:
            self.guarantee = "DP" if self.window is None else "window-DP"
        super().__init__(dim, horizon, mu=mu, loss=loss, domain=domain, radius=radius, x_bound=x_bound,
                         y_bound=y_bound, initial=initial, rng=rng)

    def _calibrate(self, horizon: int) -> None:
        self.sensitivity = 2.0 * self.loss_lipschitz
        if self.window is None:
            self.nodes_per_item = tree_depth(horizon)
        else:
            self.nodes_per_item = window_block(self.window).bit_length()  # log2 W + 1
        self.node_noise = None
        if not self.private:
            return
        if self.noise == "gamma":
            self.node_noise = GammaNormNoise(gamma_norm_scale(self.epsilon / self.nodes_per_item, self.sensitivity))
        elif self.window is None:
            self.node_noise = GaussianNoise(calibrate_tree_sigma(self.epsilon, self.delta, horizon, self.sensitivity))
        else:
            self.node_noise = GaussianNoise(
                calibrate_window_sigma(self.epsilon, self.delta, self.window, self.sensitivity))

    def _reset_state(self) -> None:
        rng = self.rng if self.private else None
        if self.window is None:
            self._tree = TreeAggregator((self.dim,), self.horizon, self.node_noise, rng)
        else:
            self._tree = WindowTree((self.dim,), self.window, self.node_noise, rng, horizon=self.horizon)
        self.ledger = PrivacyLedger().add_tree(self._tree, self.sensitivity)
        self._x = self.initial.copy()
        self._sum = np.zeros(self.dim)  # sum_{tau <= t} xhat_tau

    def predict(self) -> np.ndarray:
        return readonly(self._x)

    def update(self, x: Any, y: Any) -> None:
        x, y = self._sample(x, y)
        ghat = self._tree.add_and_release(self.objective.gradient(self._x, x, y))
        self._sum += self._x
        self._x = self._step(ghat)

    def _step(self, ghat: np.ndarray) -> np.ndarray:
        return self.domain.project((self._sum - ghat / self.mu) / self.t)

    def privacy_report(self) -> PrivacyReport:
        if not self.private:
            return self.ledger.report(0.0, guarantee="none", sensitivity_assumption=self.sensitivity_assumption)
        note = "" if self.window is None else WINDOW_WARNING
        return self.ledger.report(self.delta, guarantee=self.guarantee,
                                  sensitivity_assumption=self.sensitivity_assumption, note=note)


class PFTAL(TreeFTAL):
    """Private follow-the-approximate-leader (Thakurta & Smith 2013; ``spec/private-oco-learners.md`` §3.4):
    FTAL on the full binary tree. epsilon-DP (gamma) or (epsilon, delta)-DP (gaussian) for every user.
    Regret ``O(d (L + mu D)^2 ln^2.5 T/(mu epsilon))`` (§3.4, the factor [derived])."""

    name = "pftal"

    def __init__(self, dim: int, horizon: int, *, mu: float, loss: str | Loss = "squared",
                 domain: str | Domain = "l2-ball", radius: float = 1.0, x_bound: float = 1.0, y_bound: float = 1.0,
                 epsilon: float = 1.0, delta: float | None = None, noise: str = "gamma", initial: Any = None,
                 rng: np.random.Generator | None = None):
        super().__init__(dim, horizon, mu=mu, window=None, loss=loss, domain=domain, radius=radius,
                         x_bound=x_bound, y_bound=y_bound, epsilon=epsilon, delta=delta, noise=noise,
                         initial=initial, rng=rng)


class WDPCOCOP(TreeFTAL):
    """WDP-COCOP (Lou & Cheung Alg. 1; ``spec/private-oco-learners.md`` §3.3): FTAL with projection on the window
    tree of ``window`` users. Guarantee: window epsilon-DP (Option I, gamma) or window (epsilon, delta)-DP
    (Option II, gaussian) — **never DP**.

    .. warning:: Only the users of the last W rounds before the horizon are protected; users older than the
       window have no guarantee at all (§3.1; :data:`WINDOW_WARNING`, repeated in the privacy report).

    Regret ``O(d (L + mu D)^2 log2^1.5 W ln(d/beta) ln T/(mu epsilon))`` w.p. 1 - beta (Thm 3; Option II with
    sqrt(d) ln(1/delta) sqrt(ln(1/beta)), Thm 4): the window tree's error does not grow with t.
    """

    name = "wdp-cocop"
    guarantee = "window-DP"

    def __init__(self, dim: int, horizon: int, *, window: int, mu: float, loss: str | Loss = "squared",
                 domain: str | Domain = "l2-ball", radius: float = 1.0, x_bound: float = 1.0, y_bound: float = 1.0,
                 epsilon: float = 1.0, delta: float | None = None, noise: str = "gamma", initial: Any = None,
                 rng: np.random.Generator | None = None):
        if window is None:
            raise TypeError("window must be an integer W >= 1, got None")
        super().__init__(dim, horizon, mu=mu, window=window, loss=loss, domain=domain, radius=radius,
                         x_bound=x_bound, y_bound=y_bound, epsilon=epsilon, delta=delta, noise=noise,
                         initial=initial, rng=rng)
