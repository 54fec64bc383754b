"""The agent protocol.

An agent is driven by the evaluation loop as::

    obs, info = env.reset(seed=seed)
    agent.reset(seed)
    for t in range(T):
        arm = agent.act(obs)                         # obs: (K, d) feature array of the current user
        next_obs, reward, terminated, truncated, info = env.step(arm)
        agent.update(obs, arm, reward, info)         # info describes the round just played
        obs = next_obs

``info`` of a step carries ``"mean_rewards"`` (K,), ``"optimal_arm"``, ``"regret"`` and, in full-information
environments, ``"rewards"`` (K,) — the realised reward of every arm for the user just served. A bandit agent must
only use ``reward``; full-information learners may read ``info["rewards"]``. Oracle quantities are for bookkeeping
and for the :class:`~dpbandit.agents.baselines.Oracle` sanity agent only.

To write a new agent, subclass :class:`Agent`, set ``name``, implement ``_reset_state``, ``act`` and ``update``,
and draw every random number from ``self.rng`` (the job's ``"exploration"`` stream), or take fixed per-round
numbers from ``self.draws`` (override ``_round_draws``; drawn from ``self.rng`` in blocks of rounds). Register it in
:data:`dpbandit.agents.AGENTS` to use it from TOML configs and the CLI.

**Blocks** (optional; :mod:`dpbandit.envs.blocks`). An agent may also define ``play_block(block) -> arms``: play
the n rounds of a :class:`~dpbandit.envs.blocks.RoundBlock` (observations (n, K, d), every arm's realised rewards
(n, K), expected rewards (n, K)) as ``act`` then ``update`` would round by round, reading of ``block.rewards`` only
the played arm's entry of each round after choosing it, and return the arms (n,) intp. The result must be bit for
bit that of ``act`` and ``update`` (draw per-round numbers with :class:`~dpbandit.agents.draws.RoundDraws`, so both
read the same). The loop (:mod:`dpbandit.experiment.loop`) uses it when the environment hands out blocks and
:func:`plays_blocks` says the agent's ``act`` and ``update`` are those ``play_block`` was written with; a subclass
overriding ``act`` or ``update`` is played round by round.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import numpy as np

from dpbandit.agents.draws import RoundDraws, tie_uniforms
from dpbandit.envs.constants import BanditConstants
from dpbandit.seeding import stream
from dpbandit.validation import check_memory

__all__ = ["Agent", "plays_blocks"]


class Agent(abc.ABC):
    """Base class of every agent.

    Parameters
    ----------
    constants:
        The environment's :class:`~dpbandit.envs.constants.BanditConstants` (K, d, T, norm bounds, ...).
    """

    #: Registry name, also the default label in results.
    name: ClassVar[str] = "agent"
    #: Whether the agent claims a privacy guarantee (private agents also provide ``privacy_report()``).
    private: ClassVar[bool] = False
    #: True only for an agent that ignores the data by design (uniform random play, the reference). Every other
    #: agent must act on the data or refuse at construction: a parameter that would leave it playing like random
    #: (an infinite confidence width, a reward clip that removes all signal) is refused with a ``ValueError`` naming
    #: it, or replaced by a default its docstring and privacy report state
    #: (:func:`dpbandit.experiment.checks.check_acts_on_data` tests it).
    ignores_data: ClassVar[bool] = False

    def __init__(self, constants: BanditConstants):
        if not isinstance(constants, BanditConstants):
            raise TypeError(f"constants must be a BanditConstants, got {type(constants).__name__}")
        self.constants = constants
        self.n_arms = constants.n_arms
        self.dim = constants.dim
        check_memory(f"agent {self.name!r} (K={self.n_arms}, d={self.dim}, T={constants.horizon})",
                     self.memory_estimate(), "reduce dim, n_arms or horizon")
        self.rng: np.random.Generator = stream(0, "exploration")
        self.reset(0)

    def memory_estimate(self) -> int:
        """Bytes of state the agent will allocate, estimated from K, d, T (and its hyperparameters, set before
        ``Agent.__init__`` runs) *before* allocating: :func:`~dpbandit.validation.check_memory` refuses an agent
        that cannot fit. The default, a few float vectors per arm, suits agents with O(K d) state; agents with
        matrices, trees or sample histories override it."""
        return 8 * 8 * self.n_arms * (self.dim + 1)

    @classmethod
    def from_env(cls, env: Any, **params: Any) -> "Agent":
        """Build the agent for a (possibly wrapped) dpbandit environment."""
        return cls(env.unwrapped.constants, **params)

    def reset(self, seed: int | None = None) -> None:
        """Forget everything learned and reseed the exploration stream of job ``seed``; ``draws`` hands out the
        per-round numbers of :meth:`_round_draws` from it (drawn in blocks, only once an agent asks for them)."""
        self.rng = stream(seed, "exploration")
        self.draws = RoundDraws(self.rng, self._round_draws)
        self._reset_state()

    def _round_draws(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
        """The per-round numbers of n rounds of an agent that reads ``self.draws`` (:mod:`dpbandit.agents.draws`):
        by default one tie-breaking uniform per round, ``rng.random(n)``."""
        return tie_uniforms(rng, n)

    @abc.abstractmethod
    def _reset_state(self) -> None:
        """Set the learned state to its initial value."""

    @abc.abstractmethod
    def act(self, observation: np.ndarray) -> int:
        """Choose an arm in ``range(K)`` for the current user's ``(K, d)`` feature array."""

    @abc.abstractmethod
    def update(self, observation: np.ndarray, arm: int, reward: float, info: dict) -> None:
        """Learn from the round just played (``observation`` is the array passed to ``act``)."""

    def privacy_report(self):
        """The agent's privacy report, or ``None`` for a non-private agent."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(K={self.n_arms}, d={self.dim})"


def plays_blocks(agent: object) -> bool:
    """Whether the loop may play ``agent`` (an agent or an agent class) by blocks: its class defines ``play_block``
    (module docstring) and no subclass below that definition overrides ``act`` or ``update``."""
    for cls in (agent if isinstance(agent, type) else type(agent)).__mro__:
        if "play_block" in cls.__dict__:
            return True
        if "act" in cls.__dict__ or "update" in cls.__dict__:
            return False
    return False
