"""Everything that touches noise and privacy guarantees.

* :mod:`~dpbandit.privacy.noise` — samplers (Gaussian, Laplace, Gamma-norm, generalized Gaussian in l_r, symmetric
  matrix noise, report-noisy-max, local Laplace randomiser), all taking an explicit ``numpy.random.Generator``;
* :mod:`~dpbandit.privacy.calibrate` — (epsilon, delta, sensitivity) -> noise scale;
* :mod:`~dpbandit.privacy.tree` / :mod:`~dpbandit.privacy.window` — continual release (binary tree, window tree);
* :mod:`~dpbandit.privacy.ledger` / :mod:`~dpbandit.privacy.report` — accounting and the privacy (JDP) report;
* :mod:`~dpbandit.privacy.audit` — empirical lower bounds on epsilon (a pass is never a proof).

This subpackage imports nothing from the rest of dpbandit except :mod:`dpbandit.validation`.
"""

from dpbandit.privacy.audit import AuditResult, audit, histogram_test, projection
from dpbandit.privacy.calibrate import (
    gaussian_epsilon,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
    gg_sigma_paper,
    gg_sigma_zcdp,
    kappa_regular_constants,
    laplace_scale,
    zcdp_epsilon,
    zcdp_rho_for,
)
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.tree_calibration import calibrate_tree_sigma, calibrate_window_sigma, tree_epsilon
from dpbandit.privacy.noise import (
    GammaNormNoise,
    GaussianNoise,
    GeneralizedGaussianNoise,
    LaplaceNoise,
    Noise,
    SymmetricGaussianNoise,
    local_laplace,
    report_noisy_max,
)
from dpbandit.privacy.report import PrivacyEvent, PrivacyReport, UnsupportedEventError
from dpbandit.privacy.tree import TreeAggregator
from dpbandit.privacy.window import WindowTree

__all__ = [
    "AuditResult",
    "audit",
    "histogram_test",
    "projection",
    "gaussian_epsilon",
    "gaussian_sigma_analytic",
    "gaussian_sigma_classic",
    "gg_sigma_paper",
    "gg_sigma_zcdp",
    "kappa_regular_constants",
    "laplace_scale",
    "zcdp_epsilon",
    "zcdp_rho_for",
    "PrivacyLedger",
    "calibrate_tree_sigma",
    "calibrate_window_sigma",
    "tree_epsilon",
    "GammaNormNoise",
    "GaussianNoise",
    "GeneralizedGaussianNoise",
    "LaplaceNoise",
    "Noise",
    "SymmetricGaussianNoise",
    "local_laplace",
    "report_noisy_max",
    "PrivacyEvent",
    "PrivacyReport",
    "UnsupportedEventError",
    "TreeAggregator",
    "WindowTree",
]
