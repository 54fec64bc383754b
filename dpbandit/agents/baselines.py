"""Non-private reference agents: uniform random play, the oracle, greedy and epsilon-greedy ridge regression.

Report random-play regret next to every regret curve (spec/han-frank-wolfe.md §9.1 D7): :class:`UniformRandom`
is that reference, :class:`Oracle` the zero-regret sanity check.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpbandit.agents.base import Agent
from dpbandit.agents.ridge import RidgeState
from dpbandit.compiled import kernel
from dpbandit.envs.constants import BanditConstants
from dpbandit.validation import check_index, check_probability, check_real

__all__ = ["argmax_random_tie", "best_and_ties", "check_arm", "UniformRandom", "Oracle", "Greedy", "EpsilonGreedy"]


def argmax_random_tie(values: np.ndarray, rng: np.random.Generator) -> int:
    """Index of the largest entry of the 1-D array ``values``, ties broken uniformly at random with ``rng``.

    ``rng`` is consumed only when there is a tie, so a run without ties draws no random numbers here.
    Raises ``ValueError`` if ``values`` contains NaN (no maximum exists).
    """
    best = values.argmax()
    n_best = np.count_nonzero(values == values[best])
    if n_best == 1:
        return int(best)
    if n_best == 0:
        raise ValueError(f"cannot choose an arm: the scores contain NaN ({values!r})")
    return int(np.flatnonzero(values == values[best])[rng.integers(n_best)])


@kernel
def best_and_ties(values):
    """``(first index of the largest entry, number of entries equal to it)`` of a 1-D float array, as
    ``values.argmax()`` and ``count_nonzero(values == values.max())`` compute them, and ``(first NaN, 0)`` when
    there is a NaN: compiled (numba) for the kernels of the private agents, whose action rules then break ties, or
    refuse NaN, with :func:`argmax_random_tie` (called only when the count is not 1)."""
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


def check_arm(arm: object, n_arms: int) -> int:
    """``arm`` as an ``int`` in [0, n_arms - 1] (numpy integers accepted): :func:`~dpbandit.validation.check_index`,
    ``TypeError`` for a non-integer, ``ValueError`` out of range."""
    return check_index("arm", arm, n_arms)


class UniformRandom(Agent):
    """Plays an arm uniformly at random every round (the random-play regret reference).

    ``ignores_data = True``: the one built-in agent exempt from the conformance check that an agent acts on the data
    (:func:`dpbandit.experiment.checks.check_acts_on_data`), since it is the random play that check compares with."""

    name = "random"
    ignores_data = True

    def _reset_state(self) -> None:
        pass

    def act(self, observation: np.ndarray) -> int:
        return int(self.rng.integers(self.n_arms))

    def update(self, observation: np.ndarray, arm: int, reward: float, info: dict) -> None:
        pass


class Oracle(Agent):
    """Plays an arm of largest expected reward, read from the environment's ground truth.

    Its cumulative regret is exactly 0; it checks the regret bookkeeping and is never a learner.

    Parameters
    ----------
    constants:
        The environment's constants.
    expected_rewards:
        Callable mapping the (K, d) observation to the (K,) true mean rewards, normally
        ``env.unwrapped.expected_rewards``; :meth:`from_env` captures it.
    """

    name = "oracle"

    def __init__(self, constants: BanditConstants, expected_rewards: Callable[[np.ndarray], np.ndarray]):
        if not callable(expected_rewards):
            raise TypeError(
                "expected_rewards must be a callable (K, d) observation -> (K,) mean rewards, "
                f"got {type(expected_rewards).__name__}"
            )
        self.expected_rewards = expected_rewards
        super().__init__(constants)

    @classmethod
    def from_env(cls, env: Any, **params: Any) -> "Oracle":
        """The oracle of a (possibly wrapped) dpbandit environment, reading ``env.unwrapped.expected_rewards``."""
        if "expected_rewards" in params:
            raise TypeError("Oracle.from_env takes expected_rewards from the environment; do not pass it")
        truth = getattr(env.unwrapped, "expected_rewards", None)
        if truth is None:
            raise ValueError(f"oracle needs the environment's true expected rewards, which "
                             f"{type(env.unwrapped).__name__} does not have (logged data has no ground truth): "
                             "compare with 'random' or a learning agent instead")
        return cls(env.unwrapped.constants, expected_rewards=truth, **params)

    def _reset_state(self) -> None:
        pass

    def act(self, observation: np.ndarray) -> int:
        return argmax_random_tie(np.asarray(self.expected_rewards(observation), dtype=float), self.rng)

    def update(self, observation: np.ndarray, arm: int, reward: float, info: dict) -> None:
        pass


class Greedy(Agent):
    """Plays the arm of largest ridge estimate ``x_a^T theta_hat`` (no exploration).

    The ridge state is disjoint or shared as ``constants.structure`` says (:mod:`dpbandit.agents.ridge`).

    Parameters
    ----------
    lam:
        Ridge regulariser, lam > 0.
    """

    name = "greedy"

    def __init__(self, constants: BanditConstants, lam: float = 1.0):
        self.lam = check_real("lam", lam, low=0.0, low_inclusive=False)
        super().__init__(constants)

    def memory_estimate(self) -> int:
        """The ridge state: ``(d + 1, d)`` and ``(d,)`` arrays per model (RidgeState), plus a work copy."""
        return 8 * 2 * self.n_arms * (self.dim + 2) * self.dim

    def _reset_state(self) -> None:
        self.ridge = RidgeState(self.n_arms, self.dim, self.constants.structure, self.lam)

    def act(self, observation: np.ndarray) -> int:
        return argmax_random_tie(self.ridge.predict(observation), self.rng)

    def update(self, observation: np.ndarray, arm: int, reward: float, info: dict) -> None:
        arm = check_arm(arm, self.n_arms)
        self.ridge.update(observation[arm], reward, arm)


class EpsilonGreedy(Greedy):
    """Greedy on ridge estimates, except with probability epsilon_t an arm drawn uniformly at random.

    Every round draws one uniform number u from ``self.rng``; the round explores when u < epsilon_t (the
    uniformly drawn arm may coincide with the greedy one, so a non-greedy arm is played with probability
    epsilon_t (K - 1) / K).

    Parameters
    ----------
    epsilon:
        Exploration probability in [0, 1].
    lam:
        Ridge regulariser, lam > 0.
    decay:
        ``None`` (default) for the constant rate ``epsilon_t = epsilon``, or c > 0 for the decaying rate
        ``epsilon_t = min(epsilon, c / t)`` in round t = 1, 2, ...; with ``epsilon = 1`` this is the
        epsilon_n-greedy schedule ``min(1, c / t)`` of Auer, Cesa-Bianchi and Fischer (2002) [recalled].
    """

    name = "egreedy"

    def __init__(
        self, constants: BanditConstants, epsilon: float = 0.1, lam: float = 1.0, decay: float | None = None
    ):
        self.epsilon = check_probability("epsilon", epsilon)
        self.decay = None if decay is None else check_real("decay", decay, low=0.0, low_inclusive=False)
        super().__init__(constants, lam=lam)

    def _reset_state(self) -> None:
        super()._reset_state()
        self.t = 0

    def current_epsilon(self) -> float:
        """epsilon_t of the round about to be played (t = rounds acted so far + 1)."""
        if self.decay is None:
            return self.epsilon
        return min(self.epsilon, self.decay / (self.t + 1))

    def act(self, observation: np.ndarray) -> int:
        explore = self.rng.random() < self.current_epsilon()
        self.t += 1
        if explore:
            return int(self.rng.integers(self.n_arms))
        return super().act(observation)
