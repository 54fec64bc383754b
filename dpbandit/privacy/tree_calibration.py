"""Noise calibration of the continual-release trees: the per-node Gaussian std that makes a binary tree (or a window
tree) (epsilon, delta)-DP for a per-item sensitivity, and the epsilon of a given tree
(``spec/dp-testing-and-accounting.md`` §1.1-§1.2, ``spec/errata.md`` E6-E7). The accounting itself is
:class:`~dpbandit.privacy.ledger.PrivacyLedger`'s.
"""

from __future__ import annotations

import math

from dpbandit.privacy.calibrate import gaussian_sigma_analytic, zcdp_rho_for
from dpbandit.privacy.ledger import CALIBRATION_METHODS, PrivacyEvent, PrivacyLedger
from dpbandit.privacy.tree import tree_depth
from dpbandit.validation import check_choice, check_delta, check_epsilon, check_int, check_real

__all__ = ["calibrate_tree_sigma", "calibrate_window_sigma", "tree_epsilon"]

_SAFETY = 1.0 + 1e-9  # calibrated scales are rounded up by this factor so the target survives root-finding error


def _calibrate_nodes(epsilon: float, delta: float, nodes: int, sensitivity: float, method: str) -> float:
    """Per-node Gaussian std for ``nodes`` noisy nodes per item (methods of :func:`calibrate_tree_sigma`)."""
    epsilon, delta = check_epsilon(epsilon), check_delta(delta, allow_zero=False)
    sensitivity = check_real("sensitivity", sensitivity, low=0.0, low_inclusive=False)
    method = check_choice("method", method, CALIBRATION_METHODS)
    if method == "exact":  # nodes Gaussians = one Gaussian with sigma/sqrt(nodes) (§1.1)
        sigma = gaussian_sigma_analytic(epsilon, delta, sensitivity * math.sqrt(nodes))
    elif method == "zcdp":  # rho = nodes Delta^2/(2 sigma^2) = rho*(epsilon, delta) (CKS20; E6)
        sigma = sensitivity * math.sqrt(nodes / (2.0 * zcdp_rho_for(epsilon, delta)))
    else:  # basic: each node (epsilon/nodes, delta/nodes)-DP (the papers' split, spec/han-frank-wolfe.md §2)
        sigma = gaussian_sigma_analytic(epsilon / nodes, delta / nodes, sensitivity)
    return sigma * _SAFETY


def calibrate_tree_sigma(
    epsilon: float, delta: float, horizon: int, sensitivity: float, method: str = "exact"
) -> float:
    """Per-node Gaussian std making a tree over ``horizon`` items (epsilon, delta)-DP for per-item l2
    sensitivity ``sensitivity`` (``spec/dp-testing-and-accounting.md`` §1.1–§1.2).

    ``method``: "exact" (analytic Gaussian of the equivalent ``sigma/sqrt(L)`` mechanism), "zcdp"
    (``sigma = Delta sqrt(L/(2 rho*))``, rho* the CKS20 inversion; E6), "basic" (each node (eps/L, delta/L)-DP,
    analytic Gaussian per node). Known answers at (1, 1e-5), Delta = 1: exact 12.37 (T = 1024) / 15.38 (T = 1e5),
    zCDP 13.42 / 16.68, basic 39.9 / 61.6. The result is rounded up by a relative 1e-9.
    """
    return _calibrate_nodes(epsilon, delta, tree_depth(horizon), sensitivity, method)


def calibrate_window_sigma(
    epsilon: float, delta: float, window: int, sensitivity: float, method: str = "exact"
) -> float:
    """Per-node Gaussian std for a window tree: window-(epsilon, delta)-DP with ``log2 W + 1`` nodes per item
    (W rounded up to a power of two; ``spec/private-oco-learners.md`` §3.2). Methods as
    :func:`calibrate_tree_sigma`."""
    nodes = (check_int("window", window, low=1) - 1).bit_length() + 1
    return _calibrate_nodes(epsilon, delta, nodes, sensitivity, method)


def tree_epsilon(
    sigma: float, delta: float, horizon: int, sensitivity: float = 1.0, method: str = "exact"
) -> float:
    """epsilon of a Gaussian tree over ``horizon`` items with per-node std ``sigma`` (one of :data:`METHODS`).
    Known answers (delta = 1e-5, Delta = 1): T = 1024, sigma = 10 -> exact 1.26406, rdp 1.3785; T = 1e5 -> exact
    1.608, rdp 1.7512 (``spec/errata.md`` E7)."""
    sigma = check_real("sigma", sigma, low=0.0, low_inclusive=False)
    sensitivity = check_real("sensitivity", sensitivity, low=0.0, low_inclusive=False)
    L = tree_depth(horizon)
    ledger = PrivacyLedger().add_event(
        PrivacyEvent("gaussian", sigma / sensitivity, L, "binary tree, Gaussian", scale=sigma,
                     sensitivity=sensitivity, horizon=horizon)
    )
    return ledger.epsilon(check_delta(delta, allow_zero=False), method)
