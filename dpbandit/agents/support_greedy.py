"""The noise-off greedy form of ``support_ridge`` (``epsilon = inf``, ``noise_off_form="greedy"``, the default;
derivation ``docs/episodic-agents.md`` §8.7). Not private: guarantee "none".

With the noise off nothing needs a user to enter exactly one release (that is what the private form's privacy proof
needs, §8.2), so this form keeps every user and has no explore-then-commit stage. After every user t it releases,
per model m (one in the shared structure, one per arm in the disjoint one; a user's model is its arm), from all the
users of m so far (played rows ``x`` (d,), rewards clipped to ``[lo, hi]``, c = (lo + hi)/2):

    v_m = sum clip(x, -tau, tau) (y - c)                           (d,)   the selection's scores, without noise
    S_m = the s' largest |v_{m,j}| (ties by index), sorted         (s',)  the noise-off selection of §8.1
    theta_m = (G_m[S_m, S_m] + lam I)^{-1} b_m[S_m]                (s',)  ridge on the selected coordinates,

with ``G_m = sum x x^T`` (d, d) and ``b_m = sum x (y - c_r)`` (d,) over all d coordinates (``c_r = c`` with the
default centring, 0 without), ``lam`` = the ridge level (``ridge_params["ridge"]``, default 1). The action rule is
support_ridge's (greedy ``argmax_a x_a[S_a]^T theta_a``; uniform while theta = 0). No row clip (it only bounds a
sensitivity). It is the counterpart of greedy ridge with the support chosen by the same statistic as the private
selection, so against greedy ridge (and the LASSO bandit) it isolates what the private form loses to its noise and to
its two stages.

**Cost.** Per user O(d) for v, b and the row buffer, O(d log d) for the ranking and O(n_buf s'^2 + s'^3) for the
refit of the user's model (``n_buf`` <= :data:`CHUNK_ROWS` buffered rows); the buffered rows of a model enter G_m by
one BLAS-3 product ``R^T R`` every :data:`CHUNK_ROWS` of its users (O(d^2) a user amortised, as greedy ridge's
Sherman-Morrison update). Memory ``M (d^2 + 2 d + CHUNK_ROWS d)`` floats, whatever T (fine up to d of a few
thousand).

Shapes: observation (K, d); M = 1 (shared) or K (disjoint) models; supports and theta (M, s').
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from dpbandit.agents.baselines import check_arm
from dpbandit.agents.private import Curator, check_context_bound, read_only
from dpbandit.agents.release_rules import EpisodicRidgeRelease
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.validation import check_real

__all__ = ["CHUNK_ROWS", "GreedySupportCurator", "greedy_memory", "top_support"]

#: Rows of a model buffered before they are added to its Gram matrix (one BLAS-3 product).
CHUNK_ROWS = 256


def top_support(scores: np.ndarray, size: int) -> np.ndarray:
    """The ``size`` largest ``|scores|`` of each row (ties by index), sorted: (M, d) -> (M, size) int (the noise-off
    selection of ``docs/episodic-agents.md`` §8.1)."""
    return np.sort(np.argsort(-np.abs(scores), axis=-1, kind="stable")[..., :size], axis=-1)


class GreedySupportCurator(Curator):
    """Every user kept; after each, the support re-selected and ridge re-fitted on it (module docstring).

    Args:
        agent: the :class:`~dpbandit.agents.support_ridge.SupportRidge` (its constants, selection constants and
            budget).
        ridge: the ridge level lam > 0.
        centre: whether the ridge's rewards are centred at c.
        release_type: ``SupportRidgeRelease`` (passed in: its module imports this one), built from the supports
            (M, s'), a greedy :class:`~dpbandit.agents.release_rules.EpisodicRidgeRelease` and K.
    """

    def __init__(self, agent, ridge: float, centre: bool, release_type: type) -> None:
        c, sel = agent.constants, agent.selection
        self._agent, self._sel, self._c, self._release_type = agent, sel, c, release_type
        self.ridge, self.centre = float(ridge), bool(centre)  # validated by the agent
        M, d, s = (c.n_arms if c.structure == "disjoint" else 1), c.dim, sel.support_size
        self._scores, self._moment = np.zeros((M, d)), np.zeros((M, d))
        self._gram = np.zeros((M, d, d))  # sum x x^T of each model's absorbed rows
        self._rows = np.zeros((M, CHUNK_ROWS, d))  # each model's rows not yet in its Gram matrix
        self._n_rows = np.zeros(M, dtype=np.int64)
        self._support = np.tile(np.arange(s), (M, 1))  # top_support of zero scores
        self._theta = np.zeros((M, s))
        self._t = 0
        self._release = self._make_release()

    def _make_release(self):
        support, theta = read_only(self._support.copy(), self._theta.copy())
        ridge = EpisodicRidgeRelease(None, None, theta, None, ucb_alpha=0.0, shared=theta.shape[0] == 1,
                                     episode=self._t, n_summed=self._t)
        return self._release_type(support, ridge, self._c.n_arms)

    def observe(self, observation: np.ndarray, arm: int, reward: float) -> None:
        c, sel = self._c, self._sel
        obs = np.asarray(observation, dtype=float)
        if obs.shape != (c.n_arms, c.dim):
            raise ValueError(f"observation must have shape (K, d) = {(c.n_arms, c.dim)}, got {obs.shape}")
        arm = check_arm(arm, c.n_arms)
        y = min(max(check_real("reward", reward), sel.centre - sel.half_width), sel.centre + sel.half_width)
        x = obs[arm]
        check_context_bound(x, c.context_norm, c.context_bound)
        if self._t >= c.horizon:
            raise ValueError(f"support_ridge covers horizon T = {c.horizon} (the environment's); cannot serve user "
                             f"{self._t + 1}")
        m = arm if self._scores.shape[0] > 1 else 0
        self._scores[m] += (y - sel.centre) * (np.clip(x, -sel.entry_clip, sel.entry_clip)
                                               if sel.entry_clip < sel.x_max else x)
        self._moment[m] += (y - sel.centre if self.centre else y) * x
        n = self._n_rows[m]
        self._rows[m, n] = x
        self._n_rows[m] = n + 1
        if n + 1 == CHUNK_ROWS:
            R = self._rows[m]
            self._gram[m] += R.T @ R  # numpy's syrk path (A^T A of one buffer)
            self._n_rows[m] = 0
        self._t += 1
        self._refit(m)
        self._release = self._make_release()

    def _refit(self, m: int) -> None:
        """Model m's support and ridge estimate from all its users so far (module docstring)."""
        S = top_support(self._scores[m], self._theta.shape[1])
        R = self._rows[m, : self._n_rows[m]][:, S]
        V = self._gram[m][S][:, S] + R.T @ R
        V.reshape(-1)[:: V.shape[0] + 1] += self.ridge
        _, theta, info = lapack.dposv(V, self._moment[m][S], lower=1)  # Cholesky solve: V >= ridge I
        if info != 0:  # pragma: no cover - V is positive definite
            raise np.linalg.LinAlgError(f"dposv failed (info = {info})")
        self._support[m] = S
        self._theta[m] = theta

    def release(self):
        return self._release

    def privacy_report(self):
        sel = self._sel
        ledger = PrivacyLedger(neighboring="replace-one")
        ledger.add_non_private(
            f"support ridge, noise off, greedy form: after every user the s' = {sel.support_size} largest "
            f"|sum clip(x, +-{sel.entry_clip:.6g}) (y - c)| per model and ridge (lam = {self.ridge:g}) on them from "
            "all users so far (docs/episodic-agents.md §8.7)")
        return ledger.report(
            self._agent.budget.delta, guarantee="none", sensitivity_assumption=self.sensitivity_assumption,
            note="epsilon = inf: noise off, no privacy guarantee; every user is kept (no selection stage).")

    @property
    def sensitivity_assumption(self) -> str:
        sel, c = self._sel, self._c
        centred = f"centred at c = {sel.centre:.6g}" if self.centre else "not centred"
        return (f"none needed (noise off); contexts ||x||_{c.context_norm[1:]} <= {c.context_bound:g} (checked), "
                f"rewards clipped to [{sel.centre - sel.half_width:.6g}, {sel.centre + sel.half_width:.6g}], "
                f"{centred} in the ridge")


def greedy_memory(n_models: int, dim: int) -> int:
    """Bytes of a :class:`GreedySupportCurator`'s state (module docstring)."""
    return 8 * n_models * (dim * dim + 2 * dim + CHUNK_ROWS * dim + 1)

