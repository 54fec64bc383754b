"""Non-private reference agents: uniform random play, the oracle, greedy and epsilon-greedy ridge regression.

Report random-play regret next to every regret curve (spec/han-frank-wolfe.md §9.1 D7): :class:`UniformRandom`
is that reference, :class:`Oracle` the zero-regret sanity check.

Every agent here draws its per-round numbers in blocks from its exploration stream (:mod:`dpbandit.agents.draws`;
the layout is in ``docs/ARCHITECTURE.md``, "Randomness") and plays blocks of rounds (``play_block``, the block
protocol of :mod:`dpbandit.envs.blocks`) with the same results as ``act`` and ``update`` round by round.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpbandit.agents.base import Agent
from dpbandit.agents.draws import argmax_rows, argmax_tie, best_and_ties, choose_tie
from dpbandit.agents.ridge import RidgeState, ridge_means
from dpbandit.envs.blocks import RoundBlock
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

    def _round_draws(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray]:
        """The arm of each of n rounds: ``rng.integers(0, K, n)``."""
        return (rng.integers(0, self.n_arms, n),)

    def act(self, observation: np.ndarray) -> int:
        return self.draws.next()[0]

    def update(self, observation: np.ndarray, arm: int, reward: float, info: dict) -> None:
        pass

    def play_block(self, block: RoundBlock) -> np.ndarray:
        return self.draws.take(block.n)[0].astype(np.intp)


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
        return argmax_tie(np.asarray(self.expected_rewards(observation), dtype=float), self.draws.next()[0])

    def update(self, observation: np.ndarray, arm: int, reward: float, info: dict) -> None:
        pass

    def play_block(self, block: RoundBlock) -> np.ndarray:
        """The arms of largest expected reward of the block's rounds: when the oracle reads the block's own
        environment, its ``means`` are that ``expected_rewards`` of the observations, bit for bit
        (:mod:`dpbandit.envs.blocks`); any other truth is asked round by round, as ``act`` does."""
        if getattr(self.expected_rewards, "__self__", None) is not block.source:
            return np.array([self.act(x) for x in block.obs], dtype=np.intp)
        arms = np.empty(block.n, dtype=np.intp)
        if argmax_rows(block.means, self.draws.take(block.n)[0], arms) < block.n:
            raise ValueError("cannot choose an arm: the expected rewards contain NaN")
        return arms


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
        return self._greedy_arm(observation, self.draws.next()[0])

    def _greedy_arm(self, observation: np.ndarray, u: float) -> int:
        X = np.asarray(observation, dtype=float)
        if X.shape != (self.n_arms, self.dim):
            raise ValueError(f"observation must have shape (K, d) = {(self.n_arms, self.dim)}, got {X.shape}")
        scores = np.empty(self.n_arms)
        return choose_tie(scores, *ridge_means(self.ridge.W, X, scores), u)

    def update(self, observation: np.ndarray, arm: int, reward: float, info: dict) -> None:
        arm = check_arm(arm, self.n_arms)
        self.ridge.update(observation[arm], reward, arm)

    def play_block(self, block: RoundBlock) -> np.ndarray:
        return self.ridge.play_block(block.obs, block.rewards, *self.draws.take(block.n))


class EpsilonGreedy(Greedy):
    """Greedy on ridge estimates, except with probability epsilon_t an arm drawn uniformly at random.

    Every round takes a uniform coin u, an arm drawn uniformly and a tie uniform from its draws (all three drawn for
    every round, in blocks: :meth:`_round_draws`); the round explores, playing that arm, when u < epsilon_t (the
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

    def _round_draws(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """n rounds' exploration coins ``rng.random(n)``, exploration arms ``rng.integers(0, K, n)`` and tie
        uniforms ``rng.random(n)``, in this order."""
        return rng.random(n), rng.integers(0, self.n_arms, n), rng.random(n)

    def current_epsilon(self) -> float:
        """epsilon_t of the round about to be played (t = rounds acted so far + 1)."""
        if self.decay is None:
            return self.epsilon
        return min(self.epsilon, self.decay / (self.t + 1))

    def act(self, observation: np.ndarray) -> int:
        coin, arm, u = self.draws.next()
        explore = coin < self.current_epsilon()
        self.t += 1
        return arm if explore else self._greedy_arm(observation, u)

    def play_block(self, block: RoundBlock) -> np.ndarray:
        coins, arms, u = self.draws.take(block.n)
        if self.decay is None:
            epsilon = self.epsilon
        else:  # current_epsilon() of each round, the same float operations
            epsilon = np.minimum(self.epsilon, self.decay / np.arange(self.t + 1, self.t + block.n + 1))
        played = self.ridge.play_block(block.obs, block.rewards, u, explore=coins < epsilon,
                                       explore_arms=arms.astype(np.intp))
        self.t += block.n
        return played

