"""Large work arrays in their own anonymous memory mappings (issue 25: memory that does not grow).

The episodic agents free and make again d x d matrices (8 MB each at d = 1000) at every release. From the C heap,
the freed blocks mostly stay in the process: glibc raises its mapping threshold to the size of the first large block
freed, so later blocks of that size come from the heap, and the peak resident memory then follows how they
interleave with the environment's own blocks, not what is live. :func:`mapped_zeros` gives such an array its own
mapping instead: its pages are touched only when written, and they go back to the system when it is freed.
"""

from __future__ import annotations

import mmap

import numpy as np

__all__ = ["mapped_zeros"]


def mapped_zeros(shape: tuple[int, ...], order: str = "C") -> np.ndarray:
    """A float64 array of zeros of ``shape`` (C- or F-ordered) in its own anonymous memory mapping (module
    docstring); it pickles and behaves as any numpy array."""
    nbytes = 8 * int(np.prod(shape))
    return np.ndarray(shape, dtype=np.float64, buffer=mmap.mmap(-1, max(nbytes, 1)), order=order)
