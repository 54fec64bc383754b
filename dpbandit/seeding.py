"""Named random streams.

A job is identified by one integer seed. Its randomness is split into independent, named
``numpy.random.SeedSequence`` children so that

* every agent in a comparison sees the same users (the environment's streams never depend on the agent), and
* privacy noise can vary while the problem instance, contexts and reward noise stay fixed.

``stream(seed, name)`` is ``SeedSequence(seed).spawn(5)[i]`` for the ``i``-th name of :data:`STREAMS`, built
directly with ``spawn_key=(i,)`` so that no object has to be shared between the environment and the agent.
dpbandit never uses the global ``np.random`` state.
"""

from __future__ import annotations

import numpy as np

from dpbandit.validation import check_choice, check_int

__all__ = ["STREAMS", "STREAM_LAYOUT", "seed_sequence", "stream"]

#: The version of the layout of the draws within the streams (``docs/ARCHITECTURE.md``, "Randomness"): 2 since
#: dpbandit 0.2.0 (blocks of rounds), 1 before. Part of every experiment's hash, so a run computed with another
#: layout is never resumed into a mixed table.
STREAM_LAYOUT = 2

#: The named streams of one job, in spawn order.
STREAMS: tuple[str, ...] = ("instance", "contexts", "reward_noise", "exploration", "privacy")


def seed_sequence(seed: int | None, name: str) -> np.random.SeedSequence:
    """The ``SeedSequence`` of stream ``name`` for job ``seed`` (fresh OS entropy when ``seed`` is None)."""
    check_choice("stream name", name, STREAMS)
    if seed is None:
        root = np.random.SeedSequence()
        return np.random.SeedSequence(root.entropy, spawn_key=(STREAMS.index(name),))
    seed = check_int("seed", seed, low=0)
    return np.random.SeedSequence(seed, spawn_key=(STREAMS.index(name),))


def stream(seed: int | None, name: str) -> np.random.Generator:
    """A ``numpy.random.Generator`` (PCG64) for stream ``name`` of job ``seed``."""
    return np.random.Generator(np.random.PCG64(seed_sequence(seed, name)))
