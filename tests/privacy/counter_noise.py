"""A deterministic test noise for the tree tests."""

from __future__ import annotations

import numpy as np

from dpbandit.privacy.noise import Noise


class CounterNoise(Noise):
    """Deterministic 'noise': the k-th draw is the unit vector e_k, so a release shows which draws it sums and with
    which coefficients."""

    def __init__(self) -> None:
        self.draws = 0

    @property
    def name(self) -> str:
        return "counter"

    def sample(self, rng, shape):
        n = int(np.prod(shape[:-1]))
        out = np.zeros((n, shape[-1]))
        out[np.arange(n), self.draws + np.arange(n)] = 1.0
        self.draws += n
        return out.reshape(shape)

    def describe(self) -> dict:
        return {"name": self.name}
