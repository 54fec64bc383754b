"""Continual release of prefix sums: the binary tree mechanism, with an optional Honaker estimator.

:class:`TreeAggregator` releases, after each added item ``v_t``, a noisy version of ``s_t = v_1 + ... + v_t``
(Dwork–Naor–Pitassi–Rothblum 2010; Chan–Shi–Song 2011; ``spec/han-frank-wolfe.md`` §3,
``spec/private-oco-learners.md`` §2). Items are vectors ``(d,)`` or square matrices ``(n, n)`` (DP-UCB's Gram
matrices, with :class:`~dpbandit.privacy.noise.SymmetricGaussianNoise`; ``spec/han-frank-wolfe.md`` §7.4).

Privacy (``spec/dp-testing-and-accounting.md`` §1.1): every dyadic node ``(m 2^h, (m+1) 2^h]`` that is released gets
one independent noise draw, when it closes. An item lies in at most one node per level, so it touches at most
``L = floor(log2 T) + 1`` noisy nodes. With Gaussian node noise of std ``sigma`` and per-item sensitivity ``Delta``
the whole run is *exactly* one Gaussian mechanism with noise multiplier ``sigma / (Delta sqrt(L))``; the accountant
(:mod:`dpbandit.privacy.ledger`) gets this statement from :attr:`TreeAggregator.accounting`. Items may depend on
earlier releases (adaptive continual release, ``spec/private-oco-learners.md`` §2 "Adaptivity").

:class:`~dpbandit.privacy.tree_noise.TreeNoise` is the same mechanism with the exact sums left to the caller (its
release is ``s_t`` plus the path nodes' noise).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbandit.privacy.noise import GammaNormNoise, GeneralizedGaussianNoise, Noise, SymmetricGaussianNoise
from dpbandit.validation import check_generator, check_int

__all__ = ["TreeAccounting", "TreeAggregator", "tree_depth", "popcount", "check_item_shape", "check_noise"]


def tree_depth(horizon: int) -> int:
    """Levels a leaf enters in a tree over ``horizon`` items: ``L = floor(log2 T) + 1 = ceil(log2(T + 1))``
    (``spec/dp-testing-and-accounting.md`` §1.1; the papers' ``m = ceil(log2 T) + 1`` is L or L + 1)."""
    return check_int("horizon", horizon, low=1).bit_length()


def popcount(t: int) -> int:
    """Number of set bits of ``t`` (the number of nodes summed in the release at step ``t``)."""
    return bin(t).count("1")


@dataclass(frozen=True)
class TreeAccounting:
    """What a continual-release tree tells the accountant: *each item touches at most ``nodes_per_item`` noisy
    nodes, each carrying an independent draw of ``noise``* (None: noise off, no privacy).

    ``depth`` is the number of tree levels, ``horizon`` the number of items the tree accepts (None: unbounded),
    ``window`` the protected window of a window tree (None for a full tree), ``shape`` the item shape.
    """

    mechanism: str
    noise: Noise | None
    nodes_per_item: int
    depth: int
    horizon: int | None
    shape: tuple[int, ...]
    window: int | None = None


def check_item_shape(shape: Any) -> tuple[int, ...]:
    """An item shape: ``d`` or ``(d,)`` for vectors, ``(n, n)`` for square matrices, ``(m, n, n)`` for a stack of m
    square matrices (e.g. one Gram matrix per arm on one clock); every size >= 1."""
    if isinstance(shape, numbers.Integral) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    if not isinstance(shape, tuple) or not all(
        isinstance(n, numbers.Integral) and not isinstance(n, (bool, np.bool_)) for n in shape
    ):
        raise TypeError(f"shape must be an integer d or a tuple (d,), (n, n) or (m, n, n) of integers, got {shape!r}")
    shape = tuple(int(n) for n in shape)
    if len(shape) not in (1, 2, 3) or any(n < 1 for n in shape) or (len(shape) >= 2 and shape[-1] != shape[-2]):
        raise ValueError(f"shape must be (d,), a square (n, n) or a stack (m, n, n) with sizes >= 1, got {shape!r}")
    return shape


def check_noise(noise: Any, shape: tuple[int, ...]) -> Noise | None:
    """``noise`` must be None or a :class:`~dpbandit.privacy.noise.Noise` whose event fits the item ``shape``:
    vector noises (Gamma-norm, generalized Gaussian) need vector items, symmetric matrix noise square matrices."""
    if noise is None:
        return None
    if not isinstance(noise, Noise):
        raise TypeError(f"noise must be a dpbandit.privacy.noise.Noise or None, got {type(noise).__name__}")
    if isinstance(noise, (GammaNormNoise, GeneralizedGaussianNoise)) and len(shape) != 1:
        raise ValueError(f"noise {noise.name!r} is a vector noise and needs vector items (d,), got shape {shape}")
    if isinstance(noise, SymmetricGaussianNoise) and len(shape) < 2:
        raise ValueError(f"noise {noise.name!r} needs square matrix items (n, n) or (m, n, n), got shape {shape}")
    return noise


def check_item(value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` as a finite float64 array of ``shape`` (``TypeError``/``ValueError`` naming ``value``)."""
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, np.ndarray) and value.dtype == bool):
        raise TypeError("value must be real numbers, got booleans")
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"value must be an array of real numbers of shape {shape}, got {value!r}") from None
    if v.shape != shape:
        raise ValueError(f"value must have shape {shape}, got {v.shape}")
    # a finite sum means every entry is finite (NaN and inf propagate); only then is the full check needed
    if not math.isfinite(v.sum()) and not np.isfinite(v).all():
        raise ValueError("value must be finite (no NaN or inf)")
    return v


class TreeAggregator:
    """Binary-tree continual release of the prefix sums of up to ``horizon`` items of ``shape``.

    Args:
        shape: item shape, ``(d,)`` (or ``d``) for vectors, ``(n, n)`` for matrices.
        horizon: T, the maximal number of items; adding more raises ``ValueError``.
        noise: node noise (:mod:`dpbandit.privacy.noise`), or None for noise off (exact prefix sums, epsilon = inf).
        rng: the ``numpy.random.Generator`` of the node noise; required when ``noise`` is given.
        honaker: use the online children-only Honaker estimator (TF Privacy ``EfficientTreeAggregator``;
            ``spec/dp-testing-and-accounting.md`` §1.3).

    Vanilla estimator (``spec/han-frank-wolfe.md`` §3, p-sum form of CSS11 Alg. 2): at step t with
    ``i = lowbit(t)`` the node ``(t - 2^i, t]`` closes, gets one noise draw and replaces its ``i`` children on the
    path; the release sums the ``popcount(t)`` stored noisy nodes, so its noise variance is ``popcount(t) sigma^2``
    per entry (iid noise). Right children are never released.

    Honaker estimator: *every* node that closes gets its own noise draw (right children too, about two draws per
    item), and a node's estimate combines its noisy value ``y`` with its children's estimates by inverse-variance
    weighting, ``b = y + (b_left + b_right)/2``, estimate ``b / (2 - 2^-h)``; a node covering ``2^h`` leaves then
    has variance ``sigma^2 2^h / (2^(h+1) - 1)`` (-> ``sigma^2/2``), e.g. ``4/7 sigma^2`` for the release at t = 4.
    Privacy is accounted exactly as for the vanilla tree. The Honaker releases are post-processing not of the vanilla
    tree's nodes (right children are noised and used too) but of a set of nodes with the *same per-node noise* in
    which an item still lies in at most one node per level, i.e. in at most ``L`` noisy nodes; the accountant's
    statement "each item touches at most L nodes of this noise" is therefore unchanged. With noise off both
    estimators return the exact prefix sums.

    Cost: state of ``2L + 1`` (vanilla) or ``3L + 1`` (Honaker) arrays of ``shape`` (the nodes on the current path,
    plus a running suffix sum of the noisy path nodes so that :meth:`release` is a copy); ``O(size)`` amortised work
    per item; noise is drawn when a node closes, never in advance.
    """

    def __init__(
        self,
        shape: Any,
        horizon: int,
        noise: Noise | None = None,
        rng: np.random.Generator | None = None,
        *,
        honaker: bool = False,
    ) -> None:
        self._shape = check_item_shape(shape)
        self._horizon = check_int("horizon", horizon, low=1)
        self._noise = check_noise(noise, self._shape)
        self._rng = check_generator(rng) if noise is not None else None
        if not isinstance(honaker, (bool, np.bool_)):
            raise TypeError(f"honaker must be a bool, got {type(honaker).__name__}")
        self._honaker = bool(honaker)
        self._depth = tree_depth(self._horizon)
        L = self._depth
        self._t = 0
        # alpha[h]: exact sum of the path node at level h (valid where bit h of t is set).
        self._alpha = np.zeros((L, *self._shape))
        # suffix[h]: sum of the (estimated) noisy path nodes at the set bits >= h of t; suffix[0] is the release.
        self._suffix = np.zeros((L + 1, *self._shape))
        if self._honaker and self._noise is not None:
            self._buffer = np.zeros((L, *self._shape))  # b-values of the path nodes
            self._weights = 1.0 / (2.0 - 0.5 ** np.arange(L))

    # -- properties -----------------------------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def horizon(self) -> int:
        return self._horizon

    @property
    def t(self) -> int:
        """Number of items added so far."""
        return self._t

    @property
    def honaker(self) -> bool:
        return self._honaker

    @property
    def noise(self) -> Noise | None:
        return self._noise

    @property
    def noise_description(self) -> dict | None:
        """Per-node noise (``noise.describe()``), None when noise is off."""
        return None if self._noise is None else self._noise.describe()

    @property
    def depth(self) -> int:
        """``L = floor(log2 T) + 1``: the number of levels, i.e. of nodes a leaf can enter."""
        return self._depth

    @property
    def nodes_per_item(self) -> int:
        """Maximal number of noisy nodes one item enters over the whole run (= L, reached by item 1)."""
        return self._depth

    @property
    def accounting(self) -> TreeAccounting:
        """The statement for the accountant: each item touches at most L noisy nodes of this noise."""
        kind = "Honaker" if self._honaker else "vanilla"
        return TreeAccounting(
            mechanism=f"binary tree ({kind})", noise=self._noise, nodes_per_item=self._depth, depth=self._depth,
            horizon=self._horizon, shape=self._shape,
        )

    @property
    def nbytes(self) -> int:
        """Bytes held by the tree's arrays (O(L * size))."""
        arrays = [self._alpha, self._suffix] + ([self._buffer] if hasattr(self, "_buffer") else [])
        return int(sum(a.nbytes for a in arrays))

    def _check_step(self, t: int | None) -> int:
        return self._t if t is None else check_int("t", t, low=0, high=self._horizon)

    def nodes_in_release(self, t: int | None = None) -> int:
        """Number of noisy nodes summed in the release after ``t`` items (default: now): ``popcount(t)``."""
        return popcount(self._check_step(t))

    def release_variance_factor(self, t: int | None = None) -> float:
        """Noise variance of each entry of the release after ``t`` items, in units of the per-entry node variance:
        ``popcount(t)`` (vanilla) or ``sum over set bits h of 2^h/(2^(h+1) - 1)`` (Honaker). Exact for noises that
        are iid per entry (Gaussian, Laplace); 0 when noise is off."""
        t = self._check_step(t)
        if self._noise is None:
            return 0.0
        if not self._honaker:
            return float(popcount(t))
        return float(sum(2.0**h / (2.0 ** (h + 1) - 1.0) for h in range(t.bit_length()) if t >> h & 1))

    # -- continual release ----------------------------------------------------------------------------------------

    def add(self, value: Any) -> None:
        """Add the next item (an array of :attr:`shape`); ``ValueError`` beyond the horizon."""
        v = check_item(value, self._shape)
        if self._t >= self._horizon:
            raise ValueError(f"cannot add item {self._t + 1}: the tree's horizon is {self._horizon} items")
        self._t += 1
        i = (self._t & -self._t).bit_length() - 1  # lowest set bit: the level of the node closing now
        if self._honaker and self._noise is not None:
            self._add_honaker(v, i)
        else:
            self._add_vanilla(v, i)

    def _add_vanilla(self, v: np.ndarray, i: int) -> None:
        alpha, suffix = self._alpha, self._suffix
        node = alpha[i]
        if i:  # the i children on the path merge into the new node (ufunc reduce: no np.sum wrapper per item)
            np.add.reduce(alpha[:i], axis=0, out=node)
            node += v
        else:
            node[...] = v
        np.add(node, suffix[i + 1], out=suffix[i])
        if self._noise is not None:
            suffix[i] += self._noise.draw(self._rng, self._shape)
        suffix[:i] = suffix[i]  # bits below i are now clear

    def _add_honaker(self, v: np.ndarray, i: int) -> None:
        alpha, buffer, suffix = self._alpha, self._buffer, self._suffix
        z = self._noise.draw(self._rng, (i + 1, *self._shape))  # the leaf and the i right-spine nodes close now
        clean = v.copy()
        b = v + z[0]
        for k in range(i):  # node at level k+1 covering (t - 2^(k+1), t]: left child alpha[k], right child so far
            clean += alpha[k]
            b = 0.5 * (buffer[k] + b) + clean + z[k + 1]
        alpha[i] = clean
        buffer[i] = b
        np.multiply(b, self._weights[i], out=suffix[i])
        suffix[i] += suffix[i + 1]
        suffix[:i] = suffix[i]

    def release(self) -> np.ndarray:
        """The noisy prefix sum of all items added so far (zeros before the first item); a fresh array."""
        return self._suffix[0].copy()

    def add_and_release(self, value: Any) -> np.ndarray:
        """:meth:`add` then :meth:`release`."""
        self.add(value)
        return self.release()

    def __repr__(self) -> str:
        noise = "off" if self._noise is None else self._noise.describe()
        return (
            f"TreeAggregator(shape={self._shape}, horizon={self._horizon}, t={self._t}, depth={self._depth}, "
            f"honaker={self._honaker}, noise={noise})"
        )
