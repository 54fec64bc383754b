"""DP-HDB: the private high-dimensional GLM bandit of Han et al. (``spec/han-frank-wolfe.md`` §6, Algorithm 3).

A :class:`~dpbandit.agents.private.PrivateAgent`, so joint DP holds by construction:

* **Curator** (:class:`HDBCurator`): one DP-POFW learner per arm (:class:`~dpbandit.optim.pofw.DPPOFWBatch` with K
  rows, ``spec/han-frank-wolfe.md`` §5 with ``spec/errata.md`` E3, E4) on the l1 ball of radius b. **Synthetic
  update**: every round every arm's learner takes exactly one step: the played arm's learner gets the real sample
  (its context row and the clipped reward), every other learner the zero sample (zero gradient; it still makes its
  noisy selection and its Frank-Wolfe step), so all learners share one public clock. It publishes an
  :class:`HDBRelease`: the all-sample estimators ``theta_hat_{i,t+1}`` (the learners' iterates) and, from the end of
  the warm-up on, the frozen forced-sample estimators — read-only arrays, nothing else.
* **Action rule** (static, a function of ``(release, observation, rng)`` only): rounds ``1..K t0`` are the warm-up
  (forced sampling, round robin ``a_t = (t - 1) mod K``); afterwards pre-select
  ``K_hat = {i : mu(x^T thetaF_i) >= max_j mu(x^T thetaF_j) - h/2}`` with the frozen forced-sample estimators and
  play ``argmax_{i in K_hat} x^T theta_hat_i`` (all-sample estimators; mu is increasing), ties uniformly at random
  with the exploration stream.

**Losses** (GLM negative log-likelihoods, ``spec/han-frank-wolfe.md`` §6): identity link ``(x^T theta - r)^2/2``
(``SquaredLoss(0.5)``; the papers' ``(x^T theta - r)^2`` gives the same selections, since gradients and noise scale
together), logistic link ``log(1 + e^z) - r z``. The probit link is refused.

**Sensitivity** (from the environment's public constants, never from data): contexts ``||x||_inf <= x_max`` with
``x_max = context_bound`` (the l_inf bound pairs with the l1 ball; an l2 bound implies it); a played row that
exceeds the declared bound raises ``ValueError``. Rewards are clipped to ``[low, high]`` by the private agents' one
rule, :func:`~dpbandit.agents.private.reward_clip_range`: the environment's reward range when it is bounded
(Bernoulli links, ``reward_clip``), otherwise — Gaussian reward noise has no bound —
``[mean_low - 4 noise_std, mean_high + 4 noise_std]`` (a reward falls outside with probability below 6.3e-5), or
``[-reward_bound, reward_bound]`` when ``reward_bound`` is given; the report's sensitivity assumption names the rule
used. Then ``L0`` = :func:`~dpbandit.optim.pofw.glm_lipschitz` (the l_inf gradient clip), ``L1 =
loss.smoothness(x_max)`` (E3: ``x_max^2`` for the half squared loss) and ``D = 2b``.

**JDP** (Theorem 4.1 with the two-stream resolution of ``spec/han-frank-wolfe.md`` §6 and ``spec/errata.md`` E6).
Privacy unit: one user = one round's context and reward; neighbours replace one user. Each arm's release stream
is rho*-zCDP for a replace-one change of one of its samples (sensitivity ``2(L0 + L1 D)`` of g_i). A user's data
also decides which arm's stream gets the real sample, so a neighbour touches either one stream (same arm:
replace-one, rho*) or two streams, each by a real <-> zero change; the zero sample has zero gradient, so that
change has half the sensitivity (``L0 + L1 D``) and costs rho*/4 per stream, rho*/2 together. Every arm's DP-POFW is
therefore calibrated at the full (epsilon, delta), and the whole billboard (all arms' releases) is rho*-zCDP, i.e.
(epsilon, delta)-DP, in every user's data. The actions of all *other* users are post-processing of the billboard and
their own contexts (billboard lemma, ``spec/private-oco-learners.md`` §7): (epsilon, delta)-JDP. The warm-up
schedule, t0, h and b depend on public constants only. ``epsilon = inf`` switches every noise off (guarantee
"none").

**Measured** [dpbandit, ``dpbandit/HanFigure51-K2-v0``, d = 50, delta = 1/T]: noise off, the regret at T = 10^4 is
4-8 % of uniform random play's; at epsilon = 1 and T = 10^4 DP-HDB is at random-play level (947 +- 161 against
1002 +- 65, 5 seeds). At T = 10^5 the ratio random / DP-HDB of final regrets is 1.17 (epsilon = 1, 3 seeds), 1.54
(2, 5 seeds), 2.12 (4, 5 seeds), 3.03 (8), 4.82 (16), 51 (inf; 3 seeds each) (re-measured with the 4-noise-std reward
clip; the earlier 3-std clip gave 1-2 % higher ratios). Cost per round: O(d) for the played
arm plus O(1) per other arm while the selection is near uniform (O(d) otherwise) and O(K d) for the release and
the action rule (a compiled kernel, :func:`greedy_index`). The loop plays it by blocks of rounds
(:meth:`DPHDB.play_block`: :mod:`dpbandit.agents.dp_hdb_blocks`, one compiled kernel per run of rounds, bit for bit
``act`` and ``update``); ``benchmarks/dphdb_benchmark.py`` prints its own per-round cost as a ratio to a compiled
floor of the same work measured in the same run (an absolute rate depends on the machine and its load).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpbandit.agents.baselines import argmax_random_tie, best_and_ties, check_arm
from dpbandit.agents.lasso_bandit import default_hyperparameters
from dpbandit.agents.private import (Curator, PrivateAgent, check_context_bound, require_finite_theta_bound,
                                     reward_clip_range)
from dpbandit.compiled import kernel
from dpbandit.envs.blocks import RoundBlock
from dpbandit.envs.constants import BanditConstants
from dpbandit.optim.losses import LogisticLoss, Loss, SquaredLoss
from dpbandit.optim.pofw import FORMS, DPPOFWBatch, glm_lipschitz
from dpbandit.privacy.calibrate import ZCDP_METHODS
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.validation import check_choice, check_delta, check_epsilon, check_int, check_real

__all__ = ["DPHDB", "HDBCurator", "HDBRelease", "greedy_index", "warmup_length", "LINKS"]

#: Links DP-HDB has a GLM loss for.
LINKS: tuple[str, ...] = ("identity", "logistic")


@kernel
def _linf_norm(x):
    """``max_j |x_j|`` in one pass (NaN propagates, as in numpy's max)."""
    norm = 0.0
    for j in range(x.shape[0]):
        v = abs(x[j])
        if v > norm or v != v:
            norm = v
    return norm


@kernel
def _dot(a, b):
    """``a . b`` for 1-D arrays, in four interleaved partial sums (a fixed order, so the same bits everywhere, and
    one that the compiler can vectorise without reassociating)."""
    n = a.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    m = n - n % 4
    for j in range(0, m, 4):
        s0 += a[j] * b[j]
        s1 += a[j + 1] * b[j + 1]
        s2 += a[j + 2] * b[j + 2]
        s3 += a[j + 3] * b[j + 3]
    for j in range(m, n):
        s0 += a[j] * b[j]
    return (s0 + s1) + (s2 + s3)


@kernel
def _dot_over(a, b, divisor):
    """:func:`_dot` of a and ``b / divisor``, each quotient the IEEE one numpy's ``b / divisor`` holds (so
    ``divisor = 1.0`` gives ``_dot(a, b)``)."""
    n = a.shape[0]
    s0 = s1 = s2 = s3 = 0.0
    m = n - n % 4
    for j in range(0, m, 4):
        s0 += a[j] * (b[j] / divisor)
        s1 += a[j + 1] * (b[j + 1] / divisor)
        s2 += a[j + 2] * (b[j + 2] / divisor)
        s3 += a[j + 3] * (b[j + 3] / divisor)
    for j in range(m, n):
        s0 += a[j] * (b[j] / divisor)
    return (s0 + s1) + (s2 + s3)


@kernel
def greedy_index(X, theta_forced, theta, divisor, h, logistic, out):
    """DP-HDB's action rule after the warm-up (``spec/han-frank-wolfe.md`` §6) for the (K, d) features X: the arms
    whose forced-sample mean ``mu(x_i . thetaF_i)`` is within h/2 of the best are the candidates, and ``out`` (K,)
    gets ``x_i . theta_i`` for them, -inf for the others, with the all-sample estimators ``theta / divisor`` (the
    release's ``theta`` and 1.0, or the learners' vertex sums V and ``t + 1``: the same quotients, the same bits);
    returns ``(best, ties)`` of ``out`` (:func:`~dpbandit.agents.baselines.best_and_ties`). ``mu`` is the identity
    or the logistic function. Compiled (numba): one pass over each row."""
    K = X.shape[0]
    if theta_forced.shape != X.shape or theta.shape != X.shape or out.shape[0] != K:
        raise ValueError("greedy_index: X, theta_forced and theta must share one (K, d) shape, out must be (K,)")
    forced = np.empty(K)
    top = -math.inf
    for i in range(K):
        z = _dot(X[i], theta_forced[i])
        forced[i] = 1.0 / (1.0 + math.exp(-z)) if logistic else z
        if forced[i] > top or forced[i] != forced[i]:  # NaN propagates, as numpy's max does
            top = forced[i]
    for i in range(K):
        out[i] = _dot_over(X[i], theta[i], divisor) if forced[i] >= top - h / 2.0 else -math.inf
    return best_and_ties(out)


def warmup_length(dim: int, horizon: int, n_arms: int, epsilon: float) -> int:
    """Forced samples per arm, ``t0 = floor(ln(d T) ln(T) / epsilon^2)`` [code, ``spec/han-frank-wolfe.md`` §6]
    (120 for d = 50, T = 1e4, epsilon = 1), at least 1 and at most ``floor(T/K)`` (the warm-up fits in the
    horizon). ``epsilon = inf`` gives 1."""
    dim = check_int("dim", dim, low=1)
    horizon = check_int("horizon", horizon, low=1)
    n_arms = check_int("n_arms", n_arms, low=1)
    epsilon = check_epsilon(epsilon, allow_inf=True)
    cap = horizon // n_arms
    if math.isinf(epsilon):
        return min(1, cap)
    t0 = math.log(dim * horizon) * math.log(horizon) / epsilon / epsilon  # inf for a tiny epsilon: the cap
    return min(max(1, math.floor(t0) if t0 < cap else cap), cap)


@dataclass(frozen=True)
class HDBRelease:
    """What the DP-HDB curator publishes after serving ``round`` users (the next user is round ``round + 1``).

    ``theta``: (K, d) all-sample estimators (the DP-POFW iterates), read-only. ``theta_forced``: (K, d) frozen
    forced-sample estimators (the iterates at the end of the warm-up), read-only, ``None`` during the warm-up.
    ``warmup_rounds`` (= K t0), ``h`` and ``link`` are public hyperparameters.
    """

    round: int
    theta: np.ndarray
    theta_forced: np.ndarray | None
    warmup_rounds: int
    h: float
    link: str


class HDBCurator(Curator):
    """DP-HDB's data-touching half: K DP-POFW learners fed by synthetic updates (module docstring)."""

    def __init__(self, agent: DPHDB, privacy_rng: np.random.Generator):
        c = agent.constants
        self._constants = c
        self._reward_low, self._reward_high = agent.reward_range
        self._h, self._link, self._warmup = agent.h, c.link, agent.warmup_rounds
        self._sensitivity = agent.sensitivity_assumption
        self.learners = DPPOFWBatch(
            c.n_arms, c.dim, c.horizon, epsilon=agent.epsilon, delta=agent.delta, lipschitz=agent.lipschitz,
            radius=agent.radius, feature_bound=c.context_bound, loss=agent.loss, form=agent.form,
            zcdp_method=agent.zcdp_method, rng=privacy_rng,
        )
        self.round = 0
        self._theta_forced: np.ndarray | None = None
        if self._warmup == 0:
            self._theta_forced = self.learners.predict()

    def observe(self, observation: np.ndarray, arm: int, reward: float) -> None:
        c = self._constants
        arm = check_arm(arm, c.n_arms)
        obs = np.asarray(observation, dtype=float)
        if obs.shape != (c.n_arms, c.dim):
            raise ValueError(f"observation must have shape (n_arms, dim) = {(c.n_arms, c.dim)}, got {obs.shape}")
        x = obs[arm]
        x_inf = _linf_norm(x)
        if c.context_norm != "linf" or not x_inf <= c.context_bound:  # (linf: the check's own norm passes)
            check_context_bound(x, c.context_norm, c.context_bound)
        reward = float(reward)
        if math.isnan(reward):
            raise ValueError("reward must be a number, got nan")
        y = min(max(reward, self._reward_low), self._reward_high)  # the stated reward bound
        self.learners.step_one(arm, x, x_inf, y)  # real sample for `arm`, zero samples for the others
        self.round += 1
        if self.round == self._warmup:
            self._theta_forced = self.learners.predict()  # frozen: forced (i.i.d. warm-up) samples only

    def release(self) -> HDBRelease:
        return HDBRelease(self.round, self.learners.predict(), self._theta_forced, self._warmup, self._h, self._link)

    def privacy_report(self):
        cal = self.learners.calibration
        ledger = PrivacyLedger(neighboring="replace-one")
        if cal.noise_off:
            ledger.add_non_private("DP-HDB with noise off (epsilon = inf)")
            return ledger.report(cal.delta, guarantee="none", sensitivity_assumption=self._sensitivity,
                                 note="noise off (epsilon = inf): no privacy guarantee")
        ledger.add_zcdp(
            cal.rho, 1,
            mechanism=f"DP-HDB billboard: {self._constants.n_arms} per-arm DP-POFW streams with synthetic updates "
                      f"({cal.mechanism})",
            bound=f"{cal.bound} per stream; E6, docs/derivations.md#e6, docs/derivations.md#hfw-6: a user changes one "
                  "stream (replace-one, rho*) or two streams by real<->zero (half sensitivity, rho*/4 each); "
                  "worst case rho*",
        )
        return ledger.report(
            cal.delta, guarantee="JDP", sensitivity_assumption=self._sensitivity,
            note="covers the actions shown to all other users (billboard lemma); every arm's DP-POFW calibrated "
                 "at the full (epsilon, delta), see the DP-HDB docstring",
        )


class DPHDB(PrivateAgent):
    """DP-HDB (Han et al., Algorithm 3): per-arm DP-POFW on the l1 ball, warm-up, h/2 pre-selection, greedy.

    Parameters
    ----------
    epsilon, delta:
        The (epsilon, delta)-JDP target; ``epsilon`` > 0 or ``inf`` (noise off, guarantee "none"); ``delta`` in
        (0, 1), default ``1/T`` (the paper's Figure 5.1 choice).
    h:
        Pre-selection margin h > 0 in reward units; default: the LASSO bandit's ``min(5 m s_y, R)`` (capped by the
        range R of expected rewards, so that the pre-selection can exclude arms with Bernoulli rewards;
        :func:`~dpbandit.agents.lasso_bandit.default_hyperparameters`; the published code uses 1).
    radius:
        l1 radius b of every arm's constraint set; default the environment's bound on ``||theta||_1``
        (``theta_bound`` for an l1 bound, ``sqrt(s)`` or ``s`` times it for l2 / l_inf bounds on s-sparse vectors).
        With ``theta_bound = inf`` (own-data and replay environments, unless stated) and no ``radius``,
        construction refuses in one line naming ``theta_bound`` and ``radius``: Frank-Wolfe needs a bounded set.
    warmup:
        Forced samples per arm t0 (an integer >= 0, at most T // K); default :func:`warmup_length`.
    reward_bound:
        ``None`` (the private agents' rule, :func:`~dpbandit.agents.private.reward_clip_range`) or c > 0: rewards are
        clipped to ``[-c, c]``. Attributes ``reward_clip`` (the :class:`~dpbandit.agents.private.RewardClip`) and
        ``reward_range`` ``(low, high)``.
    form:
        DP-POFW's selection: ``"gumbel"`` (exponential mechanism, default) or ``"laplace"`` (report-noisy-max).
    zcdp_method:
        zCDP -> DP conversion inverted for rho*: ``"cks"`` (default) or ``"closed-form"``.
    horizon:
        Optional check: if given it must equal the environment's T, which every calibration uses.

    Privacy and the curator / action-rule split: module docstring. Needs the disjoint structure.
    """

    name = "dp_hdb"

    def __init__(
        self,
        constants: BanditConstants,
        epsilon: float = 1.0,
        delta: float | None = None,
        h: float | None = None,
        radius: float | None = None,
        warmup: int | None = None,
        reward_bound: float | None = None,
        form: str = "gumbel",
        zcdp_method: str = "cks",
        horizon: int | None = None,
    ):
        if not isinstance(constants, BanditConstants):
            raise TypeError(f"constants must be a BanditConstants, got {type(constants).__name__}")
        c = constants
        self.epsilon = check_epsilon(epsilon, allow_inf=True)
        self.delta = 1.0 / c.horizon if delta is None else check_delta(delta, allow_zero=False)
        self.form = check_choice("form", form, FORMS)
        self.zcdp_method = check_choice("zcdp_method", zcdp_method, ZCDP_METHODS)
        if horizon is not None and check_int("horizon", horizon, low=1) != c.horizon:
            raise ValueError(
                f"horizon={horizon} does not match the environment's horizon T={c.horizon}: DP-HDB is calibrated "
                "for the environment's T (build the environment with the horizon you want)"
            )
        if c.structure != "disjoint":
            raise ValueError(f"DP-HDB needs the disjoint structure (one parameter per arm), got {c.structure!r}")
        if c.link not in LINKS:
            raise ValueError(f"DP-HDB has GLM losses for the links {LINKS}; the environment's link is {c.link!r}")
        self.loss: Loss = SquaredLoss(0.5) if c.link == "identity" else LogisticLoss()
        self.h = default_hyperparameters(c)["h"] if h is None else check_real("h", h, low=0.0, low_inclusive=False)
        self.radius = self._default_radius(c) if radius is None else check_real(
            "radius", radius, low=0.0, low_inclusive=False)
        t0 = warmup_length(c.dim, c.horizon, c.n_arms, self.epsilon) if warmup is None else check_int(
            "warmup", warmup, low=0, high=c.horizon // c.n_arms)
        self.warmup_rounds = c.n_arms * t0
        self.reward_clip = reward_clip_range(c, reward_bound, name="reward_bound")
        self.reward_range = (self.reward_clip.low, self.reward_clip.high)
        self.lipschitz = glm_lipschitz(self.loss, self.radius, c.context_bound, *self.reward_range)
        self.sensitivity_assumption = (
            f"contexts ||x||_{c.context_norm[1:]} <= {c.context_bound:g} (environment constants; DP-POFW uses "
            f"||x||_inf <= {c.context_bound:g}); {self.reward_clip.describe()}; per-arm parameters in the l1 ball "
            f"of radius b = {self.radius:g}; {self.loss!r}: L0 = {self.lipschitz:.6g} (l_inf gradient clip), "
            f"L1 = {self.loss.smoothness(c.context_bound):.6g} (E3, docs/derivations.md#e3), D = 2b"
        )
        super().__init__(constants)

    @staticmethod
    def _default_radius(c: BanditConstants) -> float:
        bound = require_finite_theta_bound(c, "dp_hdb", "the l1 radius b of its DP-POFW learners", "radius=b")
        factor = {"l1": 1.0, "l2": math.sqrt(c.sparsity), "linf": float(c.sparsity)}[c.theta_norm]
        return bound * factor

    def _make_curator(self, privacy_rng: np.random.Generator) -> HDBCurator:
        return HDBCurator(self, privacy_rng)

    @staticmethod
    def action_rule(release: HDBRelease, observation: np.ndarray, rng: np.random.Generator) -> int:
        """Warm-up round robin, then h/2 pre-selection on the frozen forced-sample estimators and greedy on the
        all-sample estimators (``spec/han-frank-wolfe.md`` §6). ``observation`` is the current user's (K, d)."""
        theta = release.theta
        if release.theta_forced is None:
            return release.round % theta.shape[0]
        X = np.asarray(observation, dtype=float)
        if X.shape != theta.shape:
            raise ValueError(f"observation must have shape (n_arms, dim) = {theta.shape}, got {X.shape}")
        values = np.empty(len(X))
        best, ties = greedy_index(X, release.theta_forced, theta, 1.0, release.h, release.link == "logistic",
                                  values)
        return best if ties == 1 else argmax_random_tie(values, rng)

    def play_block(self, block: RoundBlock) -> np.ndarray:
        """The block's rounds as ``act`` and ``update`` play them, bit for bit, mostly in one compiled kernel
        (:func:`dpbandit.agents.dp_hdb_blocks.play_block`)."""
        from dpbandit.agents.dp_hdb_blocks import play_block  # (it imports this module's kernels)

        return play_block(self, block)

    def __repr__(self) -> str:
        return (f"DPHDB(K={self.n_arms}, d={self.dim}, epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"b={self.radius:g}, h={self.h:g}, warmup_rounds={self.warmup_rounds})")
