"""Generalized-Gaussian noise calibration for private Frank-Wolfe, and the published code's sampler.

* :func:`calibrate_gg` — GG (or Gaussian, for p > 2) node noise for ``nodes`` releases of a stated
  ``||.||_q``-sensitivity: the paper's eq. (3.2) form (basic composition, valid only for epsilon/m <= 1,
  ``spec/errata.md`` E1) or the tight zCDP / analytic-Gaussian form (E1 Correction 2, E6).
* :class:`PublishedGGPlus` — the published reference code's defective sampler (D1-D3 of
  ``spec/han-frank-wolfe.md`` §9), used ONLY by the explicitly requested, warned, non-private comparison (§9.5);
  :class:`PublishedSettingWarning` is emitted whenever that comparison is constructed.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.stats import gennorm

from dpbandit.privacy.calibrate import KappaRegular, gaussian_sigma_analytic, gg_sigma_paper, zcdp_rho_for
from dpbandit.privacy.noise import Noise
from dpbandit.validation import check_choice

__all__ = ["CALIBRATIONS", "GGCalibration", "calibrate_gg", "PublishedGGPlus", "PublishedSettingWarning"]

CALIBRATIONS: tuple[str, ...] = ("tight", "paper")
_SAFETY = 1.0 + 1e-9  # calibrated scales are rounded up so the target survives root-finding error


class PublishedSettingWarning(UserWarning):
    """Emitted whenever the published reference code's (non-private) setting is constructed (§9.5)."""


@dataclasses.dataclass(frozen=True)
class GGCalibration:
    """A calibrated GG release: ``sigma`` in ``||.||_+``, the sampler ``noise``, and ``ledger_sensitivity``, the
    sensitivity in the noise's own norm (l2 for Gaussian, l_r otherwise) that makes the ledger's per-node bound
    ``(r-1) Delta_r^2/(2 sigma^2)`` equal ``kappa s^2/(2 sigma^2)`` (E1 Correction 2)."""

    sigma: float
    noise: Noise
    ledger_sensitivity: float
    calibration: str
    nodes: int


def calibrate_gg(kr: KappaRegular, sensitivity: float, epsilon: float, delta: float, *, calibration: str,
                 nodes: int = 1, paper_nodes: int = 1) -> GGCalibration:
    """GG noise making ``nodes`` releases of ``||.||_q``-sensitivity ``sensitivity`` (epsilon, delta)-DP together.

    ``calibration="tight"``: Gaussian (r = 2): analytic Gaussian of the ``nodes``-fold composition (one Gaussian of
    l2 sensitivity ``Delta_2 sqrt(nodes)``, ``Delta_2 = s sqrt(kappa/kappa_+)/norm_scale``); otherwise zCDP,
    ``sigma = s sqrt(nodes kappa/(2 rho*))`` (E1 Correction 2, E6). ``calibration="paper"``: Lemma 2.1 at
    ``(eps/paper_nodes, delta/paper_nodes)`` per release and basic composition (§1, §2 eq. 3.2; E1: only for
    ``eps/paper_nodes <= 1``).
    """
    check_choice("calibration", calibration, CALIBRATIONS)
    ratio = math.sqrt(kr.kappa / kr.kappa_plus)  # ||u||_+ <= sqrt(kappa/kappa_+) ||u||_q
    if calibration == "paper":
        try:
            sigma = gg_sigma_paper(epsilon / paper_nodes, delta / paper_nodes, sensitivity, kr.kappa)
        except ValueError as err:
            raise ValueError(f"calibration='paper' needs epsilon/m <= 1 with m = {paper_nodes} "
                             f"(E1, docs/derivations.md#e1), got epsilon={epsilon!r}; use calibration='tight'") from err
    elif kr.r == 2.0:
        delta2 = sensitivity * ratio / kr.norm_scale
        sigma = gaussian_sigma_analytic(epsilon, delta, delta2 * math.sqrt(nodes)) * kr.norm_scale * _SAFETY
    else:
        sigma = sensitivity * math.sqrt(nodes * kr.kappa / (2.0 * zcdp_rho_for(epsilon, delta))) * _SAFETY
    noise = kr.noise(sigma)
    ledger_sensitivity = sensitivity * ratio / (kr.norm_scale if kr.r == 2.0 else 1.0)
    return GGCalibration(sigma, noise, ledger_sensitivity, calibration, nodes)


class PublishedGGPlus(Noise):
    """The published code's ``utils.GGPlus`` (``spec/han-frank-wolfe.md`` §9): radius ``sqrt(Gamma(d/2, 2 sigma))``
    (D1, instead of ``2 sigma^2``), coordinates ``s_i (gennorm(r) + 1/r)`` with random signs s_i (D2), normalised
    in the l_r quasi-norm of the exponent it is given (D3).
    Used ONLY by the explicitly requested, warned, non-private published-setting comparison (§9.5)."""

    def __init__(self, sigma: float, r: float):
        self.sigma, self.r = float(sigma), float(r)

    @property
    def name(self) -> str:
        return f"published-GGPlus(l{self.r:.3g}) NOT PRIVATE"

    def sample(self, rng, shape):
        shape = tuple(shape)
        radius = np.sqrt(rng.gamma(shape[-1] / 2.0, 2.0 * self.sigma, shape[:-1]))
        signs = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        x = signs * (gennorm.rvs(self.r, size=shape, random_state=rng) + 1.0 / self.r)
        norm = np.sum(np.abs(x) ** self.r, axis=-1) ** (1.0 / self.r)
        return (radius / norm)[..., None] * x

    def describe(self) -> dict:
        return {"name": self.name, "sigma": self.sigma, "r": self.r}
