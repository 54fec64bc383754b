"""The generalized-linear contextual-bandit environment :class:`GLMBanditEnv` (a ``gymnasium.Env``).

Model (spec/han-frank-wolfe.md §6 for the disjoint sparse model):

* ``structure="disjoint"``: one context x_t of shape ``(d,)`` per round and one parameter theta_a per arm
  (``theta`` has shape ``(K, d)``); the observation is the ``(K, d)`` array whose rows all equal x_t;
  mean_a = mu(x_t . theta_a).
* ``structure="shared"``: per-arm feature vectors x_{t,a} drawn i.i.d. from the context law (observation
  ``(K, d)``) and one parameter theta of shape ``(d,)``; mean_a = mu(x_{t,a} . theta).

Rewards: identity link, reward = mean + N(0, noise_std^2) (optionally clipped to ``[-reward_clip, reward_clip]``);
logistic / probit links, reward ~ Bernoulli(mean) in {0, 1}.

One episode is one horizon: ``step`` returns ``truncated=True`` at round T and ``terminated`` is always False
(spec/design-anchors.md §5).
"""

from __future__ import annotations

import inspect
from typing import Any

import gymnasium as gym
import numpy as np

from dpbandit.envs.blocks import RoundBlock, linear_predictors
from dpbandit.envs.constants import BanditConstants
from dpbandit.envs.contexts import (
    CONTEXT_LAWS,
    CONTEXT_NORMS,
    NORMALIZE_MODES,
    check_rho,
    draw_contexts,
    normalise,
)
from dpbandit.envs.links import clipped_gaussian_mean, get_link
from dpbandit.envs.parameters import NORMS, THETA_VALUES, dense_theta, sparse_theta
from dpbandit.seeding import stream
from dpbandit.validation import check_action, check_choice, check_int, check_memory, check_real

__all__ = ["GLMBanditEnv", "STRUCTURES", "THETA_KINDS"]

STRUCTURES: tuple[str, ...] = ("disjoint", "shared")
THETA_KINDS: tuple[str, ...] = ("sparse", "dense")

#: Reward-noise std of the identity link when ``noise_std`` is left at None.
DEFAULT_NOISE_STD = 0.1
#: Upper bound on the feature entries of one pre-generated block, ``(rounds, d)`` disjoint or ``(rounds, K, d)``
#: shared (8 MB of float64).
_BLOCK_ELEMENTS = 2**20


class GLMBanditEnv(gym.Env):
    """A K-armed generalized-linear contextual bandit with one horizon per episode.

    All parameters are keyword-only and validated before anything is drawn.

    Parameters
    ----------
    n_arms, dim, horizon:
        K >= 2, d >= 1, T >= 1.
    structure:
        ``"disjoint"`` or ``"shared"`` (module docstring).
    link:
        ``"identity"``, ``"logistic"`` or ``"probit"`` (:mod:`dpbandit.envs.links`).
    noise_std:
        Std of the Gaussian reward noise of the identity link (finite, >= 0). ``None`` (the default) means 0.1
        for the identity link and 0 for the Bernoulli links; a Bernoulli link accepts only ``None`` or 0.
    theta:
        ``"sparse"`` (:func:`~dpbandit.envs.parameters.sparse_theta`) or ``"dense"``
        (:func:`~dpbandit.envs.parameters.dense_theta`).
    sparsity:
        Support size s of sparse parameters, ``1 <= s <= d``; ``None`` means ``min(5, d)``. Dense parameters
        accept only ``None`` or ``d``.
    theta_values:
        Law of the support entries of sparse parameters, ``"equal"`` (the paper's 1/5), ``"gaussian"`` or
        ``"uniform"`` (FLIPHAT's U[0.5, 1] with random signs); ``None`` means ``"equal"`` for sparse and
        ``"gaussian"`` for dense parameters (which accept only ``"gaussian"``).
    theta_norm, theta_bound:
        Every parameter vector has exactly ``||theta||_{theta_norm} == theta_bound`` (``"l1"`` or ``"l2"``).
    contexts, context_scale, rho:
        The raw context law, its scale and correlation (:mod:`dpbandit.envs.contexts`); ``rho`` is used by
        ``"ar"`` (|rho| < 1) and ``"equicorrelated"`` (-1/(d-1) < rho < 1) only.
    context_norm, context_bound, normalize:
        Every feature vector is put in the ``context_norm`` ball (``"l2"`` or ``"linf"``) of radius
        ``context_bound`` by :func:`~dpbandit.envs.contexts.normalise` (``"scale"``: norm exactly the bound;
        ``"clip"``: projected only when outside).
    reward_clip:
        ``None`` or c > 0: realised rewards are clipped to ``[-c, c]`` (identity link only). The reported
        expected rewards are then the exact means of the clipped rewards,
        :func:`~dpbandit.envs.links.clipped_gaussian_mean`.
    full_information:
        If True, ``info["rewards"]`` holds the realised reward of every arm.
    instance_seed:
        ``None``: theta is drawn at each seeded ``reset(seed=s)`` from ``stream(s, "instance")``. An integer:
        theta is drawn once here from ``stream(instance_seed, "instance")`` and held fixed across resets.

    Attributes
    ----------
    constants:
        The :class:`~dpbandit.envs.constants.BanditConstants` an agent may know.
    theta:
        The true parameters, read-only, ``(K, d)`` (disjoint) or ``(d,)`` (shared); None until drawn.
    config:
        The resolved keyword arguments (defaults filled in: noise_std, sparsity, theta_values), for records.
    block_size:
        Rounds generated per vectorised block (fewer when ``K * d`` is large, to bound memory). It does not
        change any result: draws are made in C order from each stream, so the first t rounds never depend on
        the block size or on T.

    Seeding: ``reset(seed=s)`` builds the contexts and reward-noise generators from ``stream(s, "contexts")``
    and ``stream(s, "reward_noise")`` (:mod:`dpbandit.seeding`); ``reset()`` continues these streams with the
    same instance; before any seeded reset it uses fresh OS entropy. The noise (or uniforms) of every arm is
    drawn for every round, so the realised reward of arm a at round t does not depend on the arms played
    before (common random numbers): a bandit reward equals ``info["rewards"][a]`` of a full-information
    environment with the same seed.
    """

    metadata = {"render_modes": []}
    block_size: int = 1024

    def __init__(
        self,
        *,
        n_arms: int = 5,
        dim: int = 20,
        horizon: int = 1000,
        structure: str = "disjoint",
        link: str = "identity",
        noise_std: float | None = None,
        theta: str = "sparse",
        sparsity: int | None = None,
        theta_values: str | None = None,
        theta_norm: str = "l1",
        theta_bound: float = 1.0,
        contexts: str = "gaussian",
        context_scale: float = 1.0,
        rho: float = 0.5,
        context_norm: str = "l2",
        context_bound: float = 1.0,
        normalize: str = "scale",
        reward_clip: float | None = None,
        full_information: bool = False,
        instance_seed: int | None = None,
        render_mode: str | None = None,
    ):
        if render_mode is not None:
            raise ValueError(f"render_mode must be None (this environment does not render), got {render_mode!r}")
        self.render_mode = None
        K = check_int("n_arms", n_arms, low=2)
        d = check_int("dim", dim, low=1)
        T = check_int("horizon", horizon, low=1)
        check_choice("structure", structure, STRUCTURES)
        self.link = get_link(link)
        noise_std = self._check_noise_std(noise_std)
        check_choice("theta", theta, THETA_KINDS)
        sparsity, theta_values = self._check_theta_law(theta, sparsity, theta_values, d)
        check_choice("theta_norm", theta_norm, NORMS)
        theta_bound = check_real("theta_bound", theta_bound, low=0.0, low_inclusive=False)
        check_choice("contexts", contexts, CONTEXT_LAWS)
        context_scale = check_real("context_scale", context_scale, low=0.0, low_inclusive=False)
        rho = check_rho(rho, contexts, d)
        check_choice("context_norm", context_norm, CONTEXT_NORMS)
        context_bound = check_real("context_bound", context_bound, low=0.0, low_inclusive=False)
        check_choice("normalize", normalize, NORMALIZE_MODES)
        if reward_clip is not None:
            reward_clip = check_real("reward_clip", reward_clip, low=0.0, low_inclusive=False)
            if self.link.bernoulli:
                raise ValueError(
                    f"reward_clip must be None for the {link!r} link (Bernoulli rewards already lie in {{0, 1}}), "
                    f"got {reward_clip!r}"
                )
        if not isinstance(full_information, (bool, np.bool_)):
            raise TypeError(f"full_information must be a bool, got {full_information!r}")
        if instance_seed is not None:
            instance_seed = check_int("instance_seed", instance_seed, low=0)

        correlated = contexts in ("ar", "equicorrelated")  # their (d, d) covariance factor
        check_memory(f"environment GLMBanditEnv(n_arms={K}, dim={d}, horizon={T})",
                     8 * (6 * K * d + 3 * _BLOCK_ELEMENTS + (2 * d * d if correlated else 0)),
                     "reduce dim or n_arms")
        self.config: dict[str, Any] = dict(
            n_arms=K, dim=d, horizon=T, structure=structure, link=link, noise_std=noise_std, theta=theta,
            sparsity=sparsity, theta_values=theta_values, theta_norm=theta_norm, theta_bound=theta_bound,
            contexts=contexts, context_scale=context_scale, rho=rho, context_norm=context_norm,
            context_bound=context_bound, normalize=normalize, reward_clip=reward_clip,
            full_information=bool(full_information), instance_seed=instance_seed,
        )
        self.n_arms, self.dim, self.horizon = K, d, T
        self.constants = self._make_constants()
        self.observation_space = gym.spaces.Box(-context_bound, context_bound, (K, d), np.float64)
        self.action_space = gym.spaces.Discrete(K)

        self.theta: np.ndarray | None = None
        if instance_seed is not None:
            self.theta = self._draw_theta(stream(instance_seed, "instance"))
        self._contexts_rng: np.random.Generator | None = None
        self._noise_rng: np.random.Generator | None = None
        self._t: int | None = None  # rounds played in the current episode; None before the first reset

    # ------------------------------------------------------------------ validation helpers
    def _check_noise_std(self, noise_std: Any) -> float:
        if noise_std is None:
            return 0.0 if self.link.bernoulli else DEFAULT_NOISE_STD
        noise_std = check_real("noise_std", noise_std, low=0.0)
        if self.link.bernoulli and noise_std != 0.0:
            raise ValueError(
                f"noise_std must be None or 0 for the {self.link.name!r} link (its rewards are Bernoulli, "
                f"without additive noise), got {noise_std!r}"
            )
        return noise_std

    @staticmethod
    def _check_theta_law(theta: str, sparsity: Any, theta_values: Any, d: int) -> tuple[int, str]:
        if theta == "sparse":
            s = min(5, d) if sparsity is None else check_int("sparsity", sparsity, low=1, high=d)
            values = "equal" if theta_values is None else check_choice("theta_values", theta_values, THETA_VALUES)
            return s, values
        if sparsity is not None and check_int("sparsity", sparsity) != d:
            raise ValueError(f"sparsity must be None or dim={d} for dense parameters, got {sparsity!r}")
        if theta_values is not None and check_choice("theta_values", theta_values, THETA_VALUES) != "gaussian":
            raise ValueError(
                f"theta_values must be None or 'gaussian' for dense parameters (only sparse supports take "
                f"'equal' entries), got {theta_values!r}"
            )
        return d, "gaussian"

    def _make_constants(self) -> BanditConstants:
        """Known constants; mean bounds by Hoelder's inequality |x.theta| <= ||x|| ||theta||_* (dual norm)."""
        c = self.config
        theta_dual = c["theta_bound"]  # ||theta||_2 <= ||theta||_1, and ||theta||_1 for the l_inf contexts
        if c["context_norm"] == "linf" and c["theta_norm"] == "l2":
            theta_dual *= np.sqrt(c["sparsity"])  # ||theta||_1 <= sqrt(s) ||theta||_2 on an s-sparse support
        z_max = c["context_bound"] * theta_dual
        mean_low, mean_high = (float(m) for m in self.link(np.array([-z_max, z_max])))
        clip, std = c["reward_clip"], c["noise_std"]
        if self.link.bernoulli:
            reward_low, reward_high = 0.0, 1.0
        elif clip is not None:
            mean_low, mean_high = (float(m) for m in clipped_gaussian_mean(np.array([-z_max, z_max]), std, clip))
            reward_low, reward_high = -clip, clip
        elif std == 0.0:
            reward_low, reward_high = mean_low, mean_high
        else:
            reward_low, reward_high = -np.inf, np.inf
        return BanditConstants(
            n_arms=self.n_arms, dim=self.dim, horizon=self.horizon, structure=c["structure"], link=c["link"],
            context_norm=c["context_norm"], context_bound=c["context_bound"], theta_norm=c["theta_norm"],
            theta_bound=c["theta_bound"], sparsity=c["sparsity"], noise_std=std, reward_low=reward_low,
            reward_high=reward_high, mean_low=mean_low, mean_high=mean_high,
        )

    # ------------------------------------------------------------------ model
    def _draw_theta(self, rng: np.random.Generator) -> np.ndarray:
        c = self.config
        n = self.n_arms if c["structure"] == "disjoint" else 1
        if c["theta"] == "sparse":
            theta = sparse_theta(rng, n, self.dim, c["sparsity"], c["theta_values"], c["theta_norm"], c["theta_bound"])
        else:
            theta = dense_theta(rng, n, self.dim, c["theta_norm"], c["theta_bound"])
        theta = theta if c["structure"] == "disjoint" else theta[0]
        theta.flags.writeable = False
        return theta

    def _draw_features(self, n: int) -> np.ndarray:
        """Normalised feature vectors of ``n`` rounds: ``(n, d)`` (disjoint) or ``(n, K, d)`` (shared)."""
        c = self.config
        size = n if c["structure"] == "disjoint" else (n, self.n_arms)
        raw = draw_contexts(self._contexts_rng, size, self.dim, c["contexts"], scale=c["context_scale"], rho=c["rho"])
        return normalise(raw, c["context_norm"], c["context_bound"], c["normalize"])

    def _linear_predictor(self, features: np.ndarray) -> np.ndarray:
        """``x_{t,a} . theta_a`` (disjoint) or ``x_{t,a} . theta`` (shared): features ``(n, K, d)`` -> ``(n, K)``.

        The compiled :func:`~dpbandit.envs.blocks.linear_predictors` (a fixed summation order): a round's means
        computed in a block and by :meth:`expected_rewards` are bitwise identical.
        """
        out = np.empty(features.shape[:2])
        linear_predictors(features, self.theta.reshape(-1, self.dim), out)
        return out

    def _means(self, z: np.ndarray) -> np.ndarray:
        """Expected rewards from linear predictors ``z`` (any shape)."""
        mean = self.link(z)
        if self.config["reward_clip"] is not None:
            mean = clipped_gaussian_mean(mean, self.config["noise_std"], self.config["reward_clip"])
        return mean

    def expected_rewards(self, observation: np.ndarray) -> np.ndarray:
        """The model's true expected rewards ``(K,)`` for a ``(K, d)`` observation (oracle use only)."""
        if self.theta is None:
            raise RuntimeError("theta is not drawn yet: call reset(seed=...) first (or pass instance_seed)")
        x = np.asarray(observation, dtype=np.float64)
        if x.shape != (self.n_arms, self.dim):
            raise ValueError(f"observation must have shape (n_arms, dim) = {(self.n_arms, self.dim)}, got {x.shape}")
        return self._means(self._linear_predictor(x[None])[0])

    def _next_block(self) -> None:
        """Pre-generate the next block of rounds: features, means and the realised rewards of every arm."""
        K, c = self.n_arms, self.config
        per_round = self.dim if c["structure"] == "disjoint" else K * self.dim
        n = min(self.block_size, max(1, _BLOCK_ELEMENTS // per_round), self.horizon - self._t)
        x = self._draw_features(n)
        obs = np.broadcast_to(x[:, None, :], (n, K, self.dim)) if c["structure"] == "disjoint" else x
        z = self._linear_predictor(obs)
        mu = self.link(z)
        if self.link.bernoulli:
            rewards = (self._noise_rng.random((n, K)) < mu).astype(np.float64)
        else:
            rewards = mu + c["noise_std"] * self._noise_rng.standard_normal((n, K)) if c["noise_std"] else mu.copy()
            if c["reward_clip"] is not None:
                np.clip(rewards, -c["reward_clip"], c["reward_clip"], out=rewards)
        means = self._means(z)
        best = means.max(axis=1)
        for array in (x, means, rewards, best):
            array.flags.writeable = False
        self._obs, self._mean_rewards, self._rewards, self._best_array = obs, means, rewards, best
        self._best = best.tolist()
        self._optimal = means.argmax(axis=1).tolist()
        self._i = 0

    def take_block(self) -> RoundBlock:
        """The rounds from the current one to the end of the pre-generated block, as a
        :class:`~dpbandit.envs.blocks.RoundBlock` (the block protocol, :mod:`dpbandit.envs.blocks`); the episode then
        stands after them, as if ``step`` had been called for each (``step`` and ``take_block`` may be mixed)."""
        if self._t is None or self._t >= self.horizon:
            state = "before reset()" if self._t is None else f"after the episode ended at round T={self.horizon}"
            raise RuntimeError(f"take_block() called {state}: call reset() to start an episode")
        i = self._i
        block = RoundBlock(self._t + 1, self._obs[i:], self._mean_rewards[i:], self._rewards[i:], self._best_array[i:],
                           self)
        self._t += block.n
        self._i = len(self._best)
        if self._t < self.horizon:
            self._next_block()
        return block

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """Start an episode (one horizon); returns the first ``(K, d)`` observation and an empty info dict.

        ``seed`` restarts the contexts and reward-noise streams (and, without ``instance_seed``, redraws theta);
        ``seed=None`` continues them with the same instance. No reset options are supported.
        """
        super().reset(seed=seed)
        if options:
            raise ValueError(f"options must be None or empty (GLMBanditEnv takes no reset options), got {options!r}")
        if seed is not None or self._contexts_rng is None:
            self._contexts_rng = stream(seed, "contexts")
            self._noise_rng = stream(seed, "reward_noise")
            if self.config["instance_seed"] is None:
                self.theta = self._draw_theta(stream(seed, "instance"))
        self._t = 0
        self._next_block()
        return self._obs[0], {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Serve the current user with arm ``action``.

        Returns the next user's ``(K, d)`` observation (a fresh zero array after the last round), the realised
        reward, ``terminated=False``, ``truncated`` (True at round T) and ``info`` about the round just played:
        ``"mean_rewards"`` (K,), ``"optimal_arm"``, ``"regret"`` (= max mean - mean[action] >= 0) and, with
        full information, ``"rewards"`` (K,). Returned arrays are read-only views.
        """
        if self._t is None or self._t >= self.horizon:
            state = "before reset()" if self._t is None else f"after the episode ended at round T={self.horizon}"
            raise RuntimeError(f"step() called {state}: call reset() to start an episode")
        a = check_action(action, self.n_arms)
        i = self._i
        means = self._mean_rewards[i]
        info = {"mean_rewards": means, "optimal_arm": self._optimal[i], "regret": self._best[i] - float(means[a])}
        if self.config["full_information"]:
            info["rewards"] = self._rewards[i]
        reward = float(self._rewards[i, a])
        self._t += 1
        self._i += 1
        truncated = self._t == self.horizon
        if truncated:
            obs = np.zeros((self.n_arms, self.dim))
        else:
            if self._i == len(self._best):
                self._next_block()
            obs = self._obs[self._i]
        return obs, reward, False, truncated, info



def default_kwargs() -> dict[str, Any]:
    """The keyword arguments of :class:`GLMBanditEnv` with their defaults."""
    return {
        name: p.default
        for name, p in inspect.signature(GLMBanditEnv.__init__).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and name != "render_mode"
    }
