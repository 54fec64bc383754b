"""Off-policy estimators of a policy's value from logged rounds, each with an interval over the data.

Inputs, for ``n`` logged rounds of a K-action log: ``reward`` ``(n,)``, ``action`` ``(n,)`` integers in ``[0, K)``,
``pscore`` ``(n,)`` the logging policy's probability of the logged action, ``pi`` ``(n, K)`` the evaluated policy's
action probabilities at each round (a one-hot row for a sampled action), and for the model-based estimators ``q``
``(n, K)``, a reward model's prediction of every action's reward (:mod:`dpbandit.offline.reward_model`). With the
importance weight ``w_i = pi[i, a_i] / p_i`` and ``dm_i = sum_a pi[i, a] q[i, a]``, the value (expected reward per
round) is estimated by

=============  ===============================================================  ==========================
name           estimate                                                         reference
=============  ===============================================================  ==========================
``dm``         ``mean(dm_i)``                                                   direct method
``ips``        ``mean(w_i r_i)``                                                inverse propensity scoring
``snips``      ``sum(w_i r_i) / sum(w_i)``                                      self-normalised IPS
``dr``         ``mean(dm_i + w_i (r_i - q[i, a_i]))``                           Dudik, Langford & Li 2011
``sndr``       ``mean(dm_i) + sum(w_i (r_i - q[i, a_i])) / sum(w_i)``           self-normalised DR
``switch_dr``  ``mean(dm_i + 1{w_i <= clip} w_i (r_i - q[i, a_i]))``            Wang, Agarwal & Dudik 2017
``clipped_ips`` ``mean(min(w_i, clip) r_i)``                                    weight clipping
``clipped_dr`` ``mean(dm_i + min(w_i, clip) (r_i - q[i, a_i]))``                weight clipping
=============  ===============================================================  ==========================

(the forms of Open Bandit Pipeline 0.5.7's ``DirectMethod``, ``InverseProbabilityWeighting``,
``SelfNormalizedInverseProbabilityWeighting``, ``DoublyRobust``, ``SelfNormalizedDoublyRobust``,
``SwitchDoublyRobust`` and its ``lambda_`` clipping; ``tests/offline/data/obp_reference.json`` checks them).
IPS, SNIPS, DR and SNDR are unbiased (SN: consistent) when the propensities are right; DM only when the reward
model is; the switch and clipped estimators trade bias (towards DM, or towards 0) for variance whenever a weight
exceeds ``clip``: their intervals cover their own (biased) target, not necessarily the policy's value.

Every estimator returns an :class:`Estimate`: the value, an interval over the data (bootstrap over rounds with
``scipy.stats.bootstrap``, BCa by default (:func:`bca_interval`), or Student-t with the delta method for the
self-normalised ratios), ``n`` and the effective sample size ``ess = (sum w)^2 / sum w^2`` of its weights. DM's
interval must include the reward model's estimation error: given bootstrap deviations with the model refitted
(``model_deviations``; the ridge model's are computed in closed form) it is built from them, otherwise it holds the
model fixed and says so in its ``method``. No interval covers a misspecified model's bias: DM is unbiased only
when the model is right.

Rare rewards: when fewer than :data:`RARE_EVENTS` rounds carry information on one side (a matched round with a
reward above the range's low end, or below its high end), a resampling interval can collapse to one point ("0 +- 0")
although the data cannot rule out a positive value. The interval is then widened to an exact bound: with
``w <= w_max`` (``w_max = max_i max_a pi[i, a] / min_i p_i``, exact for uniform logs), ``V - low <= w_max (high -
low) P(event)``, and ``P(event)`` is bounded by the Clopper-Pearson bound of the ``m`` events seen in ``n`` rounds.
Tiny propensities (weights above :data:`WEIGHT_WARNING` or ``ess < 10``) give a one-line ``RuntimeWarning``
naming the effective sample size.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from dpbandit.validation import check_choice, check_int, check_real

__all__ = ["ESTIMATORS", "MODEL_ESTIMATORS", "INTERVALS", "Estimate", "estimate", "bca_interval", "RARE_EVENTS",
           "WEIGHT_WARNING", "DEFAULT_CLIP"]

ESTIMATORS: tuple[str, ...] = ("dm", "ips", "snips", "dr", "sndr", "switch_dr", "clipped_ips", "clipped_dr")
#: The estimators that need a reward model ``q``.
MODEL_ESTIMATORS: frozenset[str] = frozenset({"dm", "dr", "sndr", "switch_dr", "clipped_dr"})
_SELF_NORMALISED = frozenset({"snips", "sndr"})
INTERVALS: tuple[str, ...] = ("bca", "t")
#: Fewer matched rounds than this on one side of the reward range: the interval is widened to the exact bound.
RARE_EVENTS = 10
#: Largest importance weight before a warning (a propensity ~1000 times smaller than the policy's probability).
WEIGHT_WARNING = 1000.0
#: Default weight level of the switch and clipped estimators.
DEFAULT_CLIP = 10.0


@dataclass(frozen=True)
class Estimate:
    """One estimator's ``value`` with its ``level`` interval ``[low, high]`` over the data (``method``: ``bca`` or
    ``t``, ``+exact`` when the rare-reward bound widened it), ``n`` rounds and effective sample size ``ess``."""

    name: str
    value: float
    low: float
    high: float
    n: int
    ess: float
    method: str
    level: float = 0.95

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def covers(self, truth: float) -> bool:
        return self.low <= truth <= self.high


def _terms(name: str, reward, action, pscore, pi, q, clip):
    """``(base, corr, weights, w)``: the value is ``mean(base + corr)``, or ``mean(base) + sum(corr)/sum(weights)``
    for the self-normalised estimators; ``w`` the weights the estimator uses (for the effective sample size)."""
    n = reward.size
    w = pi[np.arange(n), action] / pscore
    zero = np.zeros(n)
    if name in MODEL_ESTIMATORS:
        dm = np.einsum("ik,ik->i", pi, q)
        residual = reward - q[np.arange(n), action]
    if name == "dm":
        return dm, zero, None, np.ones(n)
    if name == "ips":
        return zero, w * reward, None, w
    if name == "snips":
        return zero, w * reward, w, w
    if name == "dr":
        return dm, w * residual, None, w
    if name == "sndr":
        return dm, w * residual, w, w
    if name == "switch_dr":
        used = np.where(w <= clip, w, 0.0)
        return dm, used * residual, None, used
    used = np.minimum(w, clip)
    return (zero, used * reward, None, used) if name == "clipped_ips" else (dm, used * residual, None, used)


def _ratio(num, den):
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den != 0)


def _self_normalised(base, corr, weights, axis=-1):
    return base.mean(axis=axis) + _ratio(corr.sum(axis=axis), weights.sum(axis=axis))


def _jackknife(base, corr, weights):
    """Leave-one-out values ``(n,)`` in closed form (O(n), no n x n array)."""
    n = base.size
    if weights is None:
        total = base + corr
        return (total.sum() - total) / (n - 1)
    return (base.sum() - base) / (n - 1) + _ratio(corr.sum() - corr, weights.sum() - weights)


def bca_interval(distribution: np.ndarray, value: float, jackknife: np.ndarray, level: float) -> tuple[float, float]:
    """The BCa interval (Efron 1987; the formulas of ``scipy.stats.bootstrap(method="BCa")``) from a bootstrap
    ``distribution`` ``(B,)``, the estimate ``value`` and the leave-one-out values ``jackknife`` ``(n,)``."""
    below = (np.count_nonzero(distribution < value) + np.count_nonzero(distribution <= value)) / (2 * distribution.size)
    z0 = special.ndtri(below)
    dev = jackknife.mean() - jackknife
    spread = (dev**2).sum()
    accel = (dev**3).sum() / (6 * spread**1.5) if spread > 0 else 0.0
    alpha = (1 - level) / 2
    out = []
    for z in (special.ndtri(alpha), special.ndtri(1 - alpha)):
        p = special.ndtr(z0 + (z0 + z) / (1 - accel * (z0 + z)))
        out.append(float(np.percentile(distribution, 100 * p)) if np.isfinite(p) else value)
    return out[0], out[1]


def _t_interval(base, corr, weights, value, level):
    n = base.size
    if weights is None:
        total = base + corr
        se = total.std(ddof=1) / np.sqrt(n)
    else:  # delta method for mean(base) + sum(corr) / sum(weights)
        wbar = weights.mean()
        ratio = _ratio(corr.sum(), weights.sum())
        influence = base - base.mean() + (_ratio(corr - ratio * weights, wbar) if wbar > 0 else 0.0)
        se = np.std(influence, ddof=1) / np.sqrt(n)
    half = float(stats.t.ppf((1 + level) / 2, n - 1) * se)
    return value - half, value + half


def _bootstrap(base, corr, weights, value, level, n_resamples, rng):
    if weights is None:
        data, statistic = (base + corr,), lambda x, axis=-1: x.mean(axis=axis)
    else:
        data, statistic = (base, corr, weights), _self_normalised
    if np.ptp(np.column_stack(data)) == 0:  # every round identical: no resampling variation
        return value, value
    res = stats.bootstrap(data, statistic, n_resamples=n_resamples, method="percentile", paired=weights is not None,
                          vectorized=True, random_state=rng)
    return bca_interval(np.asarray(res.bootstrap_distribution), value, _jackknife(base, corr, weights), level)


def _largest_weight(pi, pscore, pi_b):
    """``max pi(a|x) / pi_b(a|x)`` over the log's rounds and every action (``inf`` where the logging policy never
    plays an action the policy plays), or its bound ``max pi / min pscore`` without ``pi_b``."""
    if pi_b is None:
        return float(pi.max(axis=1).max() / pscore.min())
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(pi > 0, pi / pi_b, 0.0)
    return float(ratio.max())


def _rare_bound(reward, w, pi, pscore, reward_range, level, interval, pi_b=None):
    """Widen ``interval`` to the exact bound on a side with fewer than RARE_EVENTS informative rounds."""
    low_r, high_r = reward_range
    n = reward.size
    w_max = _largest_weight(pi, pscore, pi_b)
    lo, hi = interval
    method = ""
    q = (1 + level) / 2
    for side in ("high", "low"):
        events = int(np.count_nonzero((w > 0) & ((reward > low_r) if side == "high" else (reward < high_r))))
        if events >= RARE_EVENTS:
            continue
        p_up = 1.0 if events >= n else float(stats.beta.ppf(q, events + 1, n - events))
        reach = (high_r - low_r) * min(1.0, w_max * p_up)
        if side == "high" and hi < low_r + reach:
            hi, method = low_r + reach, "+exact"
        elif side == "low" and lo > high_r - reach:
            lo, method = high_r - reach, "+exact"
    return (lo, hi), method


def estimate(name: str, reward: np.ndarray, action: np.ndarray, pscore: np.ndarray, pi: np.ndarray,
             q: np.ndarray | None = None, *, clip: float = DEFAULT_CLIP, interval: str = "bca", level: float = 0.95,
             n_resamples: int = 999, rng: np.random.Generator | None = None,
             reward_range: tuple[float, float] | None = None, model_deviations: np.ndarray | None = None,
             pi_b: np.ndarray | None = None) -> Estimate:
    """Estimator ``name`` (:data:`ESTIMATORS`) with its ``level`` interval (``interval``: ``"bca"`` bootstrap over
    rounds with ``n_resamples`` resamples drawn from ``rng``, or ``"t"``). ``reward_range`` (default: the observed
    range: ``(0, 1)`` for rewards in it, else the observed range) bounds the rewards for the rare-reward bound.
    ``model_deviations`` ``(B,)``: for ``dm``, bootstrap deviations of DM with the reward model refitted on each
    resample (:func:`~dpbandit.offline.reward_model.ridge_dm_deviations`); the interval is then ``value +`` their
    quantiles (method ``refit``). Without them DM's interval holds the model fixed (method ``...-fixed-model``) and
    misses the model's own estimation error. ``pi_b`` ``(n, K)``: the logging policy's whole distribution, when
    known: it makes the rare-reward bound's largest weight exact (``max pi / pi_b``). Shapes: see the module docstring."""
    check_choice("estimator", name, ESTIMATORS)
    check_choice("interval", interval, INTERVALS)
    level = check_real("level", level, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    clip = check_real("clip", clip, low=0.0, low_inclusive=False, allow_inf=True)
    n_resamples = check_int("n_resamples", n_resamples, low=99)
    reward = np.asarray(reward, dtype=np.float64)
    action = np.asarray(action, dtype=np.int64)
    pscore = np.asarray(pscore, dtype=np.float64)
    pi = np.asarray(pi, dtype=np.float64)
    n = reward.size
    if n < 2:
        raise ValueError(f"estimators need at least 2 logged rounds, got {n}")
    if pi.ndim != 2 or pi.shape[0] != n:
        raise ValueError(f"pi must have shape (n_rounds, K) = ({n}, K), got {pi.shape}")
    if reward.ndim != 1 or not np.isfinite(reward).all():
        raise ValueError(f"reward must be {n} finite numbers, got shape {reward.shape}")
    if action.shape != (n,) or action.min() < 0 or action.max() >= pi.shape[1]:
        raise ValueError(f"action must be {n} integers in [0, K) = [0, {pi.shape[1]})")
    if pscore.shape != (n,) or not (np.all(pscore > 0) and np.all(pscore <= 1)):
        raise ValueError(f"pscore must be {n} probabilities in (0, 1]")
    if name in MODEL_ESTIMATORS:
        if q is None:
            raise ValueError(f"estimator {name!r} needs a reward model q of shape {pi.shape}")
        q = np.asarray(q, dtype=np.float64)
        if q.shape != pi.shape or not np.isfinite(q).all():
            raise ValueError(f"the reward model must be finite with shape {pi.shape}, got {q.shape}")
    base, corr, weights, w = _terms(name, reward, action, pscore, pi, q, clip)
    value = float(_self_normalised(base, corr, weights)) if weights is not None else float((base + corr).mean())
    ess = float(w.sum() ** 2 / (w**2).sum()) if np.any(w) else 0.0
    if name == "dm" and model_deviations is not None:
        dev = np.asarray(model_deviations, dtype=np.float64)
        bounds = (value + float(np.quantile(dev, (1 - level) / 2)), value + float(np.quantile(dev, (1 + level) / 2)))
        interval = "refit"
    elif interval == "t":
        bounds = _t_interval(base, corr, weights, value, level)
    else:
        bounds = _bootstrap(base, corr, weights, value, level, n_resamples,
                            np.random.default_rng(0) if rng is None else rng)
    raw_w = pi[np.arange(n), action] / pscore
    if name != "dm" and (raw_w.max() > WEIGHT_WARNING or ess < 10):
        i = int(raw_w.argmax())
        why = (f"importance weights up to {raw_w.max():.3g} (propensity {pscore[i]:.3g} at round {i})" if raw_w[i] > 0
               else "the policy gives probability 0 to every logged action")
        warnings.warn(f"{name}: {why}; effective sample size {ess:.3g} of {n} rounds: the estimate rests on few "
                      "rounds", RuntimeWarning, stacklevel=2)
    if reward_range is None:
        reward_range = (0.0, 1.0) if reward.min() >= 0 and reward.max() <= 1 else (reward.min(), reward.max())
    rr = (float(reward_range[0]), float(reward_range[1]))
    if pi_b is not None:
        pi_b = np.asarray(pi_b, dtype=np.float64)
        if pi_b.shape != pi.shape:
            raise ValueError(f"pi_b must have shape {pi.shape}, got {pi_b.shape}")
        if name != "dm" and np.any((pi > 0) & (pi_b == 0)):
            i = int(np.flatnonzero(((pi > 0) & (pi_b == 0)).any(axis=1))[0])
            warnings.warn(f"{name}: the policy plays an action the logging policy never plays (round {i}): no "
                          "estimator is unbiased without that support", RuntimeWarning, stacklevel=2)
    bounds, extra = _rare_bound(reward, raw_w, pi, pscore, rr, level, bounds, pi_b)
    if name == "dm" and model_deviations is None:
        extra += "-fixed-model"
    return Estimate(name, value, float(bounds[0]), float(bounds[1]), n, ess, interval + extra, level)
