"""The window tree mechanism (WTM) of Lou & Cheung: continual release with privacy expiration.

``spec/private-oco-learners.md`` §3.1–§3.2 (and §7 for bandit agents). The release at step t is the running sum
``s_t = v_1 + ... + v_t`` in which only the last W items are noisy: the window ``(t - W, t]`` is covered by at most
``log2 W + 1`` block-aligned dyadic nodes ``N_t``, each with one noise draw that is reused whenever the node is
used again, and everything older than the window is added **without noise**:
``shat_t = s_t + sum_{node in N_t} z_node``. The error does not grow with t.

Guarantee: **window-DP** (window-JDP for the actions of a bandit agent built on it), never plain DP or JDP.
An item lies in at most ``log2 W + 1`` distinct noisy nodes over the whole run, so the users of the last W rounds
(counted back from the final horizon) enjoy the guarantee of a tree with ``log2 W + 1`` levels
(``spec/private-oco-learners.md`` §3.2; Gaussian nodes: noise multiplier ``sigma / (Delta sqrt(log2 W + 1))``).

.. warning::
   Users older than the window have **no guarantee at all** (``spec/private-oco-learners.md`` §3.1, semantics
   warning): once ``T - t >= W`` every release adds user t's item without noise, and combinations of releases may
   expose individual old items. Window-DP numbers are not comparable to DP/JDP numbers and must be reported under
   their own label ("window-DP, W=…"), never on one privacy axis with DP/JDP results.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpbandit.privacy.noise import Noise
from dpbandit.privacy.tree import TreeAccounting, check_item, check_item_shape, check_noise, popcount
from dpbandit.validation import check_generator, check_int

__all__ = ["WindowTree", "window_cover", "window_block"]


def window_block(window: int) -> int:
    """The block size actually used for window ``W``: the next power of two ``>= W``. Rounding up only widens the
    protected window (``spec/private-oco-learners.md`` §3.2)."""
    window = check_int("window", window, low=1)
    return 1 << (window - 1).bit_length()


def window_cover(t: int, window: int) -> list[tuple[int, int]]:
    """The noisy nodes ``N_t`` of the release at step t, as ``(level h, first item)`` pairs, node
    ``[start, start + 2^h - 1]``: the greedy block-aligned dyadic cover of ``(max(0, t - W), t]`` of
    ``spec/private-oco-learners.md`` §3.2 (W rounded up to a power of two). ``len(...) <= log2 W + 1``."""
    t = check_int("t", t, low=0)
    W = window_block(window)
    top = W.bit_length() - 1
    cover = []
    pos = max(0, t - W) + 1
    while pos <= t:
        h = top
        while (pos - 1) % (1 << h) or pos + (1 << h) - 1 > t:
            h -= 1
        cover.append((h, pos))
        pos += 1 << h
    return cover


class WindowTree:
    """Window tree over items of ``shape``: noisy running sums whose noise covers only the last ``window`` items.

    Args:
        shape: item shape, ``(d,)`` (or ``d``) or ``(n, n)``.
        window: W, the number of most recent users protected; rounded up to a power of two (:attr:`window`).
        noise: node noise (:mod:`dpbandit.privacy.noise`), or None for noise off (exact sums, no privacy).
        rng: ``numpy.random.Generator`` of the node noise; required when ``noise`` is given.
        horizon: optional maximal number of items (adding more raises ``ValueError``); None for unbounded.

    Implementation (algebraically identical to the spec's per-node noise cache, with ``O(log W)`` state): with
    blocks of W items, the window is the head ``(kW, t]`` of the current block plus the tail of the previous block.
    The head cover is the binary decomposition of ``r = t - kW`` (left children, as in the vanilla tree: one fresh
    draw when a node closes); the tail cover is the decomposition of the previous block's last ``W - r`` items into
    right children, which only get finer as t grows, so each tail node gets a fresh draw at its first use and is kept
    (as part of a running suffix sum) until it leaves the window. Only noise sums are stored, next to the exact
    running sum: ``2 log2 W + 4`` arrays of ``shape``, ``O(size)`` amortised work per item (about two draws).
    """

    def __init__(
        self,
        shape: Any,
        window: int,
        noise: Noise | None = None,
        rng: np.random.Generator | None = None,
        *,
        horizon: int | None = None,
    ) -> None:
        self._shape = check_item_shape(shape)
        self._requested_window = check_int("window", window, low=1)
        self._W = window_block(window)
        self._horizon = None if horizon is None else check_int("horizon", horizon, low=1)
        self._noise = check_noise(noise, self._shape)
        self._rng = check_generator(rng) if noise is not None else None
        m = self._W.bit_length() - 1  # log2 W
        self._m = m
        self._t = 0
        self._total = np.zeros(self._shape)  # exact running sum s_t
        self._head = np.zeros((m + 2, *self._shape))  # head[h]: noise of the head nodes at set bits >= h of r
        self._tail = np.zeros((m + 1, *self._shape))  # tail[h]: noise of the tail nodes at set bits >= h of W - r

    # -- properties -----------------------------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def window(self) -> int:
        """The protected window W actually used (the requested window rounded up to a power of two)."""
        return self._W

    @property
    def requested_window(self) -> int:
        return self._requested_window

    @property
    def horizon(self) -> int | None:
        return self._horizon

    @property
    def t(self) -> int:
        """Number of items added so far."""
        return self._t

    @property
    def noise(self) -> Noise | None:
        return self._noise

    @property
    def noise_description(self) -> dict | None:
        return None if self._noise is None else self._noise.describe()

    @property
    def depth(self) -> int:
        """Levels of a block's tree, ``log2 W + 1``."""
        return self._m + 1

    @property
    def nodes_per_item(self) -> int:
        """Distinct noisy nodes one item enters over the whole run: at most ``log2 W + 1`` (one per level)."""
        return self._m + 1

    @property
    def accounting(self) -> TreeAccounting:
        """For the accountant: each item touches at most ``log2 W + 1`` noisy nodes; the guarantee is window-DP."""
        return TreeAccounting(
            mechanism="window tree", noise=self._noise, nodes_per_item=self._m + 1, depth=self._m + 1,
            horizon=self._horizon, shape=self._shape, window=self._W,
        )

    @property
    def nbytes(self) -> int:
        return int(self._total.nbytes + self._head.nbytes + self._tail.nbytes)

    def nodes_in_release(self, t: int | None = None) -> int:
        """``|N_t|``: noisy nodes in the release after ``t`` items (default: now); ``<= log2 W + 1``."""
        t = self._t if t is None else check_int("t", t, low=0)
        if t == 0:
            return 0
        r = (t - 1) % self._W + 1
        return popcount(r) + (popcount(self._W - r) if t > self._W else 0)

    def release_variance_factor(self, t: int | None = None) -> float:
        """Noise variance of each release entry in units of the per-entry node variance: ``|N_t|`` (0 if noise off)."""
        return 0.0 if self._noise is None else float(self.nodes_in_release(t))

    # -- continual release ----------------------------------------------------------------------------------------

    def add(self, value: Any) -> None:
        """Add the next item (an array of :attr:`shape`)."""
        v = check_item(value, self._shape)
        if self._horizon is not None and self._t >= self._horizon:
            raise ValueError(f"cannot add item {self._t + 1}: the window tree's horizon is {self._horizon} items")
        self._t += 1
        self._total += v
        if self._noise is None:
            return
        W, head, tail = self._W, self._head, self._tail
        r = (self._t - 1) % W + 1
        if r == 1:
            head[:] = 0.0  # a new block starts: its head is empty
        i = (r & -r).bit_length() - 1  # head node closing now: level lowbit(r)
        np.add(self._noise.sample(self._rng, self._shape), head[i + 1], out=head[i])
        head[:i] = head[i]
        if self._t > W:  # the previous block's tail: n = W - r items, right children only
            n = W - r
            h = self._m if r == 1 else ((n + 1) & -(n + 1)).bit_length() - 1  # node leaving (r > 1) or all levels
            if r == 1:
                tail[h] = 0.0
            else:
                tail[h] = tail[h + 1]  # the level-h node loses its first item: it leaves the cover ...
            if h:  # ... and its right children at levels h-1, ..., 0 enter it, each with a fresh draw
                z = self._noise.sample(self._rng, (h, *self._shape))
                tail[:h] = np.cumsum(z[::-1], axis=0)[::-1] + tail[h]

    def release(self) -> np.ndarray:
        """``shat_t``: the running sum with noise on the window nodes ``N_t`` (a fresh array)."""
        if self._noise is None:
            return self._total.copy()
        return self._total + self._head[0] + self._tail[0]

    def add_and_release(self, value: Any) -> np.ndarray:
        self.add(value)
        return self.release()

    def __repr__(self) -> str:
        noise = "off" if self._noise is None else self._noise.describe()
        return f"WindowTree(shape={self._shape}, window={self._W}, t={self._t}, noise={noise})"
