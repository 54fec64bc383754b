"""RDP accounting of subsampled Gaussian steps (NoisySGD, LocalMD; spec/han-frank-wolfe.md §7.2-§7.3).

Each step averages the clipped gradients of a batch drawn without replacement and adds Gaussian noise; the run is
accounted with dp_accounting's RDP accountant (``SampledWithoutReplacementDpEvent`` under ``REPLACE_ONE``) and
converted to (epsilon, delta). :func:`subsampled_gaussian_multiplier` inverts it for a target epsilon.
"""

from __future__ import annotations

import functools
import math

import dp_accounting
from dp_accounting import rdp as dp_rdp

from dpbandit.privacy.report import PUBLISHED_CODE_SETTING, PrivacyReport

__all__ = ["RDP_ORDERS", "subsampled_gaussian_epsilon", "subsampled_gaussian_multiplier", "subsampled_report"]

#: RDP orders of the subsampled-Gaussian accounting (any order set gives a valid bound; this one is fast).
RDP_ORDERS: tuple[float, ...] = (1.5, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64)
_RDP_NOTE = "dp_accounting RdpAccountant, SampledWithoutReplacementDpEvent, REPLACE_ONE"


def subsampled_gaussian_epsilon(n: int, batch: int, multiplier: float, steps: int, delta: float) -> float:
    """epsilon at ``delta`` of ``steps`` Gaussian steps (noise ``multiplier`` x replace-one l2 sensitivity), each on
    ``batch`` points drawn without replacement from ``n`` (RDP, :data:`RDP_ORDERS`)."""
    acc = dp_rdp.RdpAccountant(orders=list(RDP_ORDERS),
                               neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    event = dp_accounting.SampledWithoutReplacementDpEvent(n, batch, dp_accounting.GaussianDpEvent(multiplier))
    acc.compose(event, steps)
    return float(acc.get_epsilon(delta))


@functools.lru_cache(maxsize=256)
def subsampled_gaussian_multiplier(n: int, batch: int, steps: int, epsilon: float, delta: float) -> float:
    """The smallest noise multiplier (to a relative 1e-4, rounded up) whose accounted epsilon is <= ``epsilon``."""
    def ok(z: float) -> bool:
        return subsampled_gaussian_epsilon(n, batch, z, steps, delta) <= epsilon

    lo = hi = 1.0
    if ok(hi):
        while ok(lo):
            hi, lo = lo, lo / 2.0
    else:
        while not ok(hi):
            lo, hi = hi, 2.0 * hi
    while hi / lo > 1.0 + 1e-4:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def subsampled_report(learner, multipliers, epsilons, mechanism: str, assumption: str) -> PrivacyReport:
    """The DP report of a learner of subsampled Gaussian steps (``learner.published``, ``.delta``, ``.epsilon``,
    ``.calibration``): the largest accounted epsilon over its phases/batches, "EXCEEDS" noted when above the
    configured epsilon; guarantee "none" for the published-code setting."""
    if learner.published:
        return PrivacyReport(guarantee="none", epsilon=math.inf, delta=learner.delta, mechanisms=(mechanism,),
                             calibration_mode=PUBLISHED_CODE_SETTING, sensitivity_assumption=assumption,
                             note="published code setting: not a private run")
    eps = max(epsilons)
    note = (f"calibration {learner.calibration}; accounted epsilon {eps:.6g}"
            + ("" if eps <= learner.epsilon * (1 + 1e-6) else f" EXCEEDS the configured epsilon {learner.epsilon:g}"))
    return PrivacyReport(guarantee="DP", epsilon=eps, delta=learner.delta, mechanisms=(mechanism,),
                         noise_multiplier=min(multipliers), sensitivity_assumption=assumption,
                         composition=f"RDP composition of subsampled Gaussian steps ({_RDP_NOTE}); disjoint "
                                     "phases/batches compose in parallel", conversion="RDP->DP (dp_accounting)",
                         note=note)
