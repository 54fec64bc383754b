"""An agent's per-round random numbers, drawn in blocks of rounds from its own stream.

The agent side of the block protocol (:mod:`dpbandit.envs.blocks`): an agent whose rounds each need a fixed set of
random numbers (a tie-breaking uniform, an exploration coin and arm) draws them for :data:`BLOCK_ROUNDS` rounds at a
time, with one numpy call per array, instead of one call per round. Block k holds rounds ``k B + 1 .. (k + 1) B``
(B = :data:`BLOCK_ROUNDS`) and is drawn when the agent reaches its first round, so round t's numbers are a function
of the seed and t alone: ``act`` (one round) and ``play_block`` (n rounds through a kernel) read the same numbers,
however the rounds are split into blocks. Which arrays each agent draws, in which order, is the stream layout of
``docs/ARCHITECTURE.md``, "Randomness".

Ties are broken with a uniform ``u`` of the round (:func:`pick_tie`): among the m arms of largest score, the
``floor(m u)``-th in index order, which is uniform over them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dpbandit.compiled import kernel

__all__ = ["BLOCK_ROUNDS", "RoundDraws", "argmax_rows", "argmax_tie", "best_and_ties", "choose_tie", "pick_tie",
           "tie_uniforms"]

#: Rounds per block of an agent's draws (also the environments' block size).
BLOCK_ROUNDS = 1024


def tie_uniforms(rng: np.random.Generator, n: int) -> tuple[np.ndarray]:
    """One tie-breaking uniform per round: ``rng.random(n)``."""
    return (rng.random(n),)


class RoundDraws:
    """The draws of one agent: ``draw(rng, n)`` returns a tuple of arrays of n rounds' numbers (one numpy call
    each); they are drawn for :data:`BLOCK_ROUNDS` rounds at a time and handed out round by round (:meth:`next`) or
    for several rounds at once (:meth:`take`). ``t``: rounds handed out so far."""

    def __init__(self, rng: np.random.Generator, draw: Callable[[np.random.Generator, int], tuple[np.ndarray, ...]]):
        self.rng, self.draw = rng, draw
        self.t = 0
        self._arrays: tuple[np.ndarray, ...] = ()
        self._lists: list[list] = []
        self._i = BLOCK_ROUNDS  # position in the current block (none drawn yet)

    def _refill(self) -> None:
        self._arrays = self.draw(self.rng, BLOCK_ROUNDS)
        self._lists = []
        self._i = 0

    def next(self) -> tuple:
        """The numbers of the next round, as Python scalars (one per array)."""
        if self._i == BLOCK_ROUNDS:
            self._refill()
        if not self._lists:  # Python scalars, converted once per block when rounds are played one by one
            self._lists = [a.tolist() for a in self._arrays]
        i = self._i
        self._i += 1
        self.t += 1
        return tuple(values[i] for values in self._lists)

    def take(self, n: int) -> tuple[np.ndarray, ...]:
        """The numbers of the next ``n`` rounds: a tuple of (n,) arrays (views when they lie in one block)."""
        pieces = []
        left = n
        while left:
            if self._i == BLOCK_ROUNDS:
                self._refill()
            m = min(left, BLOCK_ROUNDS - self._i)
            pieces.append(tuple(a[self._i: self._i + m] for a in self._arrays))
            self._i += m
            left -= m
        self.t += n
        if len(pieces) == 1:
            return pieces[0]
        return tuple(np.concatenate(parts) for parts in zip(*pieces))


@kernel
def best_and_ties(values):
    """``(first index of the largest entry, number of entries equal to it)`` of a 1-D float array, as
    ``values.argmax()`` and ``count_nonzero(values == values.max())`` compute them, and ``(first NaN, 0)`` when
    there is a NaN: compiled (numba) for the kernels of the agents, which then break ties with :func:`pick_tie` (or the private agents'
    action rules with :func:`~dpbandit.agents.baselines.argmax_random_tie`, called only when the count is not 1)."""
    best = 0
    for a in range(values.shape[0]):
        if math.isnan(values[a]):
            return a, 0
        if values[a] > values[best]:
            best = a
    ties = 0
    for a in range(values.shape[0]):
        if values[a] == values[best]:
            ties += 1
    return best, ties


@kernel
def pick_tie(values, best, ties, u):
    """The arm for scores ``values`` (K,) whose first largest entry is ``best`` with ``ties`` entries equal to it
    (:func:`best_and_ties`): ``best`` when it is alone, else the ``floor(ties u)``-th
    of the tied entries in index order (u in [0, 1): uniform over them); -1 when a score is NaN (``ties == 0``)."""
    if ties == 1:
        return best
    if ties == 0:
        return -1
    k = int(math.floor(ties * u))
    for a in range(best, values.shape[0]):
        if values[a] == values[best]:
            if k == 0:
                return a
            k -= 1
    return best  # not reached: ties counts the entries equal to values[best]


def choose_tie(values: np.ndarray, best: int, ties: int, u: float) -> int:
    """:func:`pick_tie` as a Python int; ``ValueError`` when the scores hold a NaN (no arm has the largest)."""
    arm = best if ties == 1 else pick_tie(values, best, ties, u)
    if arm < 0:
        raise ValueError(f"cannot choose an arm: the scores contain NaN ({values!r})")
    return int(arm)


def argmax_tie(values: np.ndarray, u: float) -> int:
    """The arm of largest score in ``values`` (K,), ties broken by :func:`pick_tie` with the round's uniform ``u``."""
    return choose_tie(values, *best_and_ties(values), u)


@kernel
def argmax_rows(values, u, arms):
    """:func:`argmax_tie` of every row: values (n, K), u (n,) -> arms (n,); returns n, or the first row holding a
    NaN (the rows from it on are not chosen)."""
    for t in range(values.shape[0]):
        best, ties = best_and_ties(values[t])
        arm = pick_tie(values[t], best, ties, u[t])
        if arm < 0:
            return t
        arms[t] = arm
    return values.shape[0]
