"""DP-POFW's selection numbers, drawn from the privacy stream for a block of steps at a time.

The Gumbel form's sampler (:class:`~dpbandit.optim.pofw.DPPOFWBatch`, ``spec/han-frank-wolfe.md`` §5 with
``spec/errata.md`` E4 item 4) needs, per step and learner, the proposals and uniforms of its first rejection round
(``B = 32`` of each) and one inverse-CDF uniform; the noise-off selection (the exact LMO with random ties) needs the
inverse-CDF uniform only. :class:`SelectionDraws` draws them for R steps at once (one numpy call per array instead of
two per step): steps ``1 + kR .. (k + 1)R`` are drawn when step ``1 + kR`` first asks, ``integers(0, 2d, (R, n,
B))``, ``random((R, n, B))``, ``random((R, n))`` in this order (the first two only when 2d > 2B and the noise is on),
with ``R = min(256, T, max(1, 2^18 // numbers per step))``. A step's numbers are a function of the seed and the step
alone, however the steps are played (one by one, or by the block kernels of DP-HDB, which read the arrays
directly). Every number is used at most once, so each selection's randomness is fresh, as the privacy argument
needs. The layout is documented in ``docs/ARCHITECTURE.md``, "Randomness".
"""

from __future__ import annotations

import numpy as np

__all__ = ["REJECTION_BATCH", "SelectionDraws"]

#: Proposals (and uniforms) per learner in a rejection round.
REJECTION_BATCH = 32
#: Selection draws are made for this many steps at a time (fewer when they would exceed _DRAW_ELEMENTS numbers).
_DRAW_ROUNDS = 256
_DRAW_ELEMENTS = 2**18


class SelectionDraws:
    """The selection numbers of ``n`` learners on ``2 dim`` vertices over ``horizon`` steps, from ``rng``.

    ``proposals``: whether the steps draw rejection proposals (the Gumbel form with 2d > 2B); otherwise only the
    inverse-CDF uniforms. ``rounds`` is R. After :meth:`ensure` (t), ``k`` (R, n, B) int64 and ``u`` (R, n, B) (None
    without proposals) and ``v`` (R, n) hold steps ``first .. first + R - 1``.
    """

    def __init__(self, rng: np.random.Generator, n: int, dim: int, horizon: int, proposals: bool,
                 batch: int = REJECTION_BATCH):
        self.rng, self.n, self.d2, self.batch = rng, n, 2 * dim, batch
        self.proposals = proposals and self.d2 > 2 * batch
        per_step = n * (2 * batch + 1 if self.proposals else 1)
        self.rounds = min(_DRAW_ROUNDS, horizon, max(1, _DRAW_ELEMENTS // per_step))
        self.first = 0  # no step drawn yet
        self.k: np.ndarray | None = None
        self.u: np.ndarray | None = None
        self.v = np.empty((0, n))

    def ensure(self, t: int) -> None:
        """Have step t's numbers at hand: draw the block of R steps holding t if it is not the current one."""
        first = t - (t - 1) % self.rounds
        if first != self.first:
            R, rng = self.rounds, self.rng
            self.k = rng.integers(0, self.d2, size=(R, self.n, self.batch)) if self.proposals else None
            self.u = rng.random((R, self.n, self.batch)) if self.proposals else None
            self.v = rng.random((R, self.n))
            self.first = first

    def step(self, t: int) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray]:
        """Step t's proposals (n, B), their uniforms (n, B) (None without proposals) and inverse-CDF uniforms (n,)."""
        self.ensure(t)
        i = t - self.first
        return (None if self.k is None else self.k[i]), (None if self.u is None else self.u[i]), self.v[i]
