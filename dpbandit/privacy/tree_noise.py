"""The vanilla binary tree's noise alone, beside exact sums the caller keeps (DP-UCB), and S such trees in lockstep.

:class:`TreeNoise` is :class:`~dpbandit.privacy.tree.TreeAggregator`'s mechanism (vanilla, no Honaker) with the exact
prefix sums left to the caller: its release is ``s_t`` plus the noise of the path nodes, each node's noise drawn
once, when it closes, so the privacy statement (:attr:`TreeNoise.accounting`) is the tree's
(``spec/dp-testing-and-accounting.md`` §1.1). :class:`TreeNoiseStack` advances S of them together (seed batching,
issue 15), with each tree's draws from its own generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbandit.compiled import kernel
from dpbandit.privacy.noise import GaussianNoise, Noise
from dpbandit.privacy.tree import TreeAccounting, check_item_shape, check_noise, tree_depth
from dpbandit.validation import check_generator, check_int

__all__ = ["TreeNoise", "TreeNoiseStack", "close_node"]


class TreeNoise:
    """The noise of the vanilla tree's releases alone: ``release_t = s_t + noise_t``, with the exact prefix sum
    ``s_t`` kept by the caller (the form of TF Privacy's ``tree_aggregation``; used by DP-UCB, whose exact Gram sum is
    a cheap rank-one update per round while the tree's node sums would cost a pass over the path).

    It is the mechanism of :class:`~dpbandit.privacy.tree.TreeAggregator` (vanilla), not an approximation of it: the
    vanilla release sums the ``popcount(t)`` path nodes, each an exact node sum plus its own noise draw, i.e.
    ``s_t`` plus the sum of the path nodes' draws, which is what :meth:`add` returns. Each node's noise is drawn
    once, when it closes (one draw of ``shape`` per step), from ``rng``, so the privacy statement
    (:attr:`accounting`: each item touches at most ``L = floor(log2 T) + 1`` noisy nodes) is the tree's.
    Floating-point sums are grouped differently from :class:`~dpbandit.privacy.tree.TreeAggregator`'s, so releases
    agree to rounding, not bit for bit.

    Items are vectors ``(d,)`` (matrices go packed, :mod:`dpbandit.privacy.packed`). State: ``(L + 1, d)`` suffix
    sums of the path nodes' noise; O(d) work per step. Gaussian node noise is drawn as standard normals into a
    buffer and scaled where the node closes, which is ``GaussianNoise.draw``'s ``normal(0, sigma)`` (numpy computes
    it as ``0 + sigma z``) bit for bit, without its allocation.
    """

    def __init__(self, shape: Any, horizon: int, noise: Noise, rng: np.random.Generator) -> None:
        self._shape = check_item_shape(shape)
        if len(self._shape) != 1:
            raise ValueError(f"shape must be a vector shape (d,), got {self._shape}")
        self._horizon = check_int("horizon", horizon, low=1)
        if noise is None:
            raise TypeError("noise must be a dpbandit.privacy.noise.Noise (TreeNoise is the noise of a noisy tree)")
        self._noise = check_noise(noise, self._shape)
        self._rng = check_generator(rng)
        self._depth = tree_depth(self._horizon)
        self._t = 0
        # suffix[h]: the summed noise of the path nodes at the set bits >= h of t; suffix[0] is the release's noise
        self.suffix = np.zeros((self._depth + 1, *self._shape))
        gaussian = type(self._noise) is GaussianNoise
        self._unit = np.empty(self._shape) if gaussian else None  # the standard normals of a Gaussian node
        self._scale = self._noise.sigma if gaussian else 1.0

    @property
    def t(self) -> int:
        """Steps taken (items the caller added to its exact sum)."""
        return self._t

    @property
    def accounting(self) -> TreeAccounting:
        """The statement for the accountant, that of the vanilla :class:`~dpbandit.privacy.tree.TreeAggregator` with
        this noise."""
        return TreeAccounting(mechanism="binary tree (vanilla)", noise=self._noise, nodes_per_item=self._depth,
                              depth=self._depth, horizon=self._horizon, shape=self._shape)

    def add(self) -> np.ndarray:
        """Step t -> t + 1: the node closing now gets its noise draw; returns the release's noise (a view of the
        state, valid until the next step). ``ValueError`` beyond the horizon."""
        i = self._step()
        close_node(self.suffix, i, self._draw(), self._scale)
        return self.suffix[0]

    def next_node(self) -> tuple[int, np.ndarray]:
        """:meth:`add` for a caller that closes the node in its own compiled round: steps t -> t + 1 and returns the
        closing node's level and draw (before :attr:`scale`; a buffer valid until the next step). The caller must
        then run ``close_node(suffix, level, draw, scale)`` (:func:`close_node`, e.g. from its kernel) before
        reading the release's noise ``suffix[0]``: the same draws and sums as :meth:`add`."""
        i = self._step()
        unit = self._unit
        return i, (self._rng.standard_normal(out=unit) if unit is not None else self._draw())

    def draw_units(self, out: np.ndarray) -> np.ndarray:
        """The standard normals of the next ``len(out)`` closing nodes of a Gaussian tree, drawn into ``out`` (shape
        ``(m, d)``) from the tree's generator: the draws :meth:`next_node` would return over m steps, for a caller
        that closes its nodes in blocks (``close_node(suffix, level, out[j], scale)``) and then counts the steps it
        took with :meth:`advance`. ``TypeError`` for non-Gaussian node noise."""
        if self._unit is None:
            raise TypeError(f"draw_units needs Gaussian node noise, not {type(self._noise).__name__}")
        return self._rng.standard_normal(out=out)

    def advance(self, n: int) -> None:
        """Count ``n`` steps whose nodes the caller closed itself (:meth:`draw_units`); ``ValueError`` beyond the
        horizon."""
        if not 0 <= n <= self._horizon - self._t:
            raise ValueError(f"cannot advance {n} steps from item {self._t}: the tree's horizon is {self._horizon}")
        self._t += n

    @property
    def scale(self) -> float:
        """The factor a node's draw is scaled by where it closes (sigma for Gaussian noise, else 1)."""
        return self._scale

    def _draw(self, out: np.ndarray | None = None) -> np.ndarray:
        """The closing node's draw before its scale (into ``out`` if given): standard normals for Gaussian noise
        (:attr:`_scale` = sigma), else the noise's own draw (scale 1)."""
        if self._unit is not None:
            return self._rng.standard_normal(out=self._unit if out is None else out)
        draw = self._noise.draw(self._rng, self._shape)
        if out is not None:
            out[...] = draw
        return draw

    def _step(self) -> int:
        """Count the step; the level of the node closing now (its i children leave the path)."""
        if self._t >= self._horizon:
            raise ValueError(f"cannot add item {self._t + 1}: the tree's horizon is {self._horizon} items")
        self._t += 1
        return (self._t & -self._t).bit_length() - 1


@kernel
def close_node(suffix: np.ndarray, i: int, draw: np.ndarray, scale: float) -> None:
    """Close the level-i node with noise ``scale * draw`` ((d,)) in the path suffix sums (L + 1, d): its suffix is
    the one above plus the noise, and the levels below copy it, so ``suffix[0]`` is the release's noise. (No array
    is returned: boxing a view costs more than the loop at DP-UCB's sizes.)"""
    for k in range(suffix.shape[1]):
        suffix[i, k] = suffix[i + 1, k] + scale * draw[k]
    for h in range(i):
        suffix[h] = suffix[i]


@kernel
def _close_nodes(suffix: np.ndarray, i: int, draws: np.ndarray, scale: float) -> None:
    """:func:`close_node` for each tree of a stack: suffix sums (S, L + 1, d), draws (S, d)."""
    for s in range(suffix.shape[0]):
        close_node(suffix[s], i, draws[s], scale)


class TreeNoiseStack:
    """S :class:`TreeNoise` s of one vector shape and horizon, at the same step, advanced together (seed batching,
    issue 15): their suffix sums are stacked into one (S, L + 1, d) array that each tree views, so every tree stays
    the live state. :meth:`add` draws each node's noise by the tree's own noise from the tree's own generator, in the
    trees' order, and does the sums once over the stack: the same bits per tree as its own :meth:`TreeNoise.add`.
    """

    def __init__(self, trees) -> None:
        self.trees = trees = list(trees)
        t0 = trees[0]
        if any(len(t._shape) != 1 or t._shape != t0._shape or t._horizon != t0._horizon or t._t != t0._t
               or t._noise != t0._noise for t in trees):
            raise ValueError("trees must be vector trees of one shape, horizon and noise, at the same step")
        self.suffix = np.stack([t.suffix for t in trees])
        for s, t in enumerate(trees):
            t.suffix = self.suffix[s]
        self._draws = np.empty((len(trees), *t0._shape))
        # each tree's draw into its row of the draws: its generator's standard_normal (Gaussian noise), else _draw
        self._fills = [(t._rng.standard_normal if t._unit is not None else t._draw, row)
                       for t, row in zip(trees, self._draws)]

    def add(self) -> np.ndarray:
        """Every tree's :meth:`TreeNoise.add`; returns the releases' noise (S, d), a view of the state."""
        first = self.trees[0]
        i = first._step()  # the trees are at one step: the first raises beyond the horizon, before any draw
        for t in self.trees:
            t._t = first._t
        for fill, row in self._fills:
            fill(out=row)
        _close_nodes(self.suffix, i, self._draws, first._scale)
        return self.suffix[:, 0]
