"""Named environment presets: Gymnasium id -> keyword arguments of :class:`~dpbandit.envs.glm.GLMBanditEnv`.

Each preset is registered under the ``dpbandit/`` namespace by :mod:`dpbandit.envs`; any keyword can be
overridden with ``gymnasium.make(id, **overrides)``.

* ``GLMBandit-v0``: the constructor defaults (K=5, d=20, T=1000, 5-sparse linear disjoint model, l2 contexts).
* ``SparseLinear-v0``: the default quick experiment: K=5, d=50, 5-sparse parameters with entries 1/5
  (||theta||_1 = 1), Gaussian contexts scaled to ||x||_inf = 1, Gaussian reward noise 0.1 (the l1/l_inf
  geometry of DP-HDB, spec/han-frank-wolfe.md §6).
* ``SparseLogistic-v0`` / ``SparseProbit-v0``: the same contexts and supports with Bernoulli rewards. The bound
  ||theta||_1 = 3 spreads the means (with ||theta||_1 = 1 every logit lies in [-1, 1], so all logistic means
  would lie in [0.27, 0.73]).
* ``SharedLinear-v0``: the LinUCB / DP-UCB model (spec/han-frank-wolfe.md §7.4): per-arm feature vectors
  uniform on the unit l2 sphere, one dense theta uniform on the unit l2 sphere, Gaussian noise 0.1.
* ``HanFigure51-K2-v0`` / ``HanFigure51-K5-v0``: the bandit environment of the paper's Figure 5.1
  (spec/han-frank-wolfe.md §8.2): T = 10^4, d = 50, 5-sparse theta_a with entries 1/5, contexts
  N(0, 0.05^2 I) normalised to ||x||_inf = 1 (the l_inf normalisation the paper states, not the code's
  accidental l_1 normalisation, defect D7 of §9.1), reward noise N(0, 0.05^2); K = 2 (the figure) and K = 5
  (the committed default). Difference to the published code: the supports are drawn *without* replacement,
  so ||theta_a||_1 = 1 exactly (the code's ``np.random.choice(d, 5)`` can repeat an index, giving
  ||theta_a||_1 = |supp|/5 <= 1).
"""

from __future__ import annotations

from typing import Any

__all__ = ["PRESETS"]

_SPARSE_LINF = dict(
    structure="disjoint",
    theta="sparse",
    sparsity=5,
    theta_values="equal",
    theta_norm="l1",
    contexts="gaussian",
    context_norm="linf",
    context_bound=1.0,
    normalize="scale",
)

_HAN_FIGURE_51 = dict(
    _SPARSE_LINF,
    dim=50,
    horizon=10_000,
    link="identity",
    noise_std=0.05,
    theta_bound=1.0,
    context_scale=0.05,
)

#: Gymnasium id -> GLMBanditEnv keyword arguments.
PRESETS: dict[str, dict[str, Any]] = {
    "dpbandit/GLMBandit-v0": {},
    "dpbandit/SparseLinear-v0": dict(
        _SPARSE_LINF, n_arms=5, dim=50, horizon=2000, link="identity", noise_std=0.1, theta_bound=1.0
    ),
    "dpbandit/SparseLogistic-v0": dict(_SPARSE_LINF, n_arms=5, dim=50, horizon=2000, link="logistic", theta_bound=3.0),
    "dpbandit/SparseProbit-v0": dict(_SPARSE_LINF, n_arms=5, dim=50, horizon=2000, link="probit", theta_bound=3.0),
    "dpbandit/SharedLinear-v0": dict(
        n_arms=10,
        dim=20,
        horizon=2000,
        structure="shared",
        link="identity",
        noise_std=0.1,
        theta="dense",
        theta_norm="l2",
        theta_bound=1.0,
        contexts="sphere",
        context_norm="l2",
        context_bound=1.0,
        normalize="scale",
    ),
    "dpbandit/HanFigure51-K2-v0": dict(_HAN_FIGURE_51, n_arms=2),
    "dpbandit/HanFigure51-K5-v0": dict(_HAN_FIGURE_51, n_arms=5),
}
