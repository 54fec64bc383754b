"""Conformance checkers for agents, in the spirit of Gymnasium's ``check_env`` and river's ``check_estimator``.

Run them on any agent you write::

    from dpbandit.experiment.checks import check_agent, check_private_agent
    env = gymnasium.make("dpbandit/SparseLinear-v0", horizon=200)
    check_agent(make_agent("linucb", env), env)              # every agent
    check_private_agent(make_agent("dp_hdb", env), env)      # private agents, in addition

A failed check raises :class:`ConformanceError` (an ``AssertionError``) whose message names the check and what
was seen. The checks are necessary conditions, not a proof of correctness or of privacy.

``check_agent``: actions are integers in ``[0, K)``; ``reset(seed)`` is idempotent (same seed, same actions);
the agent pickles and its copy continues identically; it never touches the global ``numpy.random`` or ``random``
state; ``act``/``update`` never write into the observation or the ``info`` arrays they are given.

``check_private_agent``: the agent is a :class:`~dpbandit.agents.private.PrivateAgent` (static action rule of
``(release, observation, rng)``); releases are read-only; the privacy report states a guarantee and a non-empty
ledger; every noise draw of the curator comes from the generator it was given (same generator state, same
releases; another state, other releases) and nothing else; optionally a quick empirical audit of the release
stream on neighbouring user streams (``audit=True``; a lower bound above the claimed epsilon fails).

``check_acts_on_data`` (no silently meaningless agent): a registered agent, built by ``make_agent`` on an
environment (a simulator, an own-data environment, or :class:`~dpbandit.offline.ReplayEnv` with a log), either
refuses at construction with a one-line ``ValueError``/``TypeError``, or, in a short run with a strong signal,
plays a best arm clearly more often than uniform random play could: in the second half of the rounds its hits
must exceed random's expected hits by the Hoeffding margin ``sqrt(m ln(1/alpha) / 2)`` (alpha = 1e-6), which
random play exceeds with probability below alpha. Only an agent that declares ``ignores_data`` (the random
reference) is exempt.
"""

from __future__ import annotations

import copy
import inspect
import math
import pickle
import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpbandit.agents.base import Agent
from dpbandit.agents.private import PrivateAgent
from dpbandit.validation import check_int

__all__ = ["ConformanceError", "ActsOnData", "audit_rounds", "check_acts_on_data", "check_agent",
           "check_private_agent"]


class ConformanceError(AssertionError):
    """An agent violates the dpbandit agent protocol."""


def _fail(check: str, message: str) -> None:
    raise ConformanceError(f"[{check}] {message}")


def _episode(agent: Agent, env: Any, seed: int, n_rounds: int, *, copy_inputs: bool = True) -> list[int]:
    """Play ``n_rounds`` rounds; return the actions. Inputs are passed as writable copies and checked after."""
    K = env.unwrapped.constants.n_arms
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    actions = []
    for _ in range(n_rounds):
        given = np.array(obs, copy=True) if copy_inputs else obs
        arm = agent.act(given)
        if isinstance(arm, (bool, np.bool_)) or not isinstance(arm, (int, np.integer)) or not 0 <= arm < K:
            _fail("action validity", f"act() returned {arm!r}; expected an integer in [0, {K})")
        if copy_inputs and not np.array_equal(given, obs):
            _fail("observation not mutated", "act() wrote into the observation array it was given")
        next_obs, reward, _, truncated, info = env.step(int(arm))
        info_copy = {k: np.array(v, copy=True) for k, v in info.items()}
        agent.update(given, int(arm), reward, info_copy)
        if copy_inputs and not np.array_equal(given, obs):
            _fail("observation not mutated", "update() wrote into the observation array it was given")
        for key, value in info.items():
            if not np.array_equal(info_copy[key], value):
                _fail("info not mutated", f"update() wrote into info[{key!r}]")
        actions.append(int(arm))
        obs = next_obs
        if truncated:
            break
    return actions


def check_agent(agent: Agent, env: Any, *, seed: int = 0, n_rounds: int = 50) -> None:
    """Check the agent protocol on ``env`` (a dpbandit environment). Raises :class:`ConformanceError`."""
    if not isinstance(agent, Agent):
        _fail("protocol", f"{type(agent).__name__} does not subclass dpbandit.agents.base.Agent")
    np_state, py_state = np.random.get_state(), random.getstate()
    first = _episode(agent, env, seed, n_rounds)
    if not _same_global_state(np_state, py_state):
        _fail("no global RNG", "the agent used the global numpy.random or random state; draw from self.rng")
    second = _episode(agent, env, seed, n_rounds)
    if first != second:
        _fail("seed idempotence", f"reset({seed}) twice gave different actions: {first[:10]} vs {second[:10]}")

    half = n_rounds // 2
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    for _ in range(half):
        arm = agent.act(obs)
        next_obs, reward, _, _, info = env.step(arm)
        agent.update(obs, arm, reward, info)
        obs = next_obs
    try:
        clone = pickle.loads(pickle.dumps(agent))
    except Exception as exc:  # noqa: BLE001 - any failure is a conformance failure
        _fail("pickling", f"the agent cannot be pickled (needed for parallel runs): {exc!r}")
    env_copy = copy.deepcopy(env)
    obs_copy = np.array(obs, copy=True)
    for _ in range(n_rounds - half):
        a, b = agent.act(obs), clone.act(obs_copy)
        if a != b:
            _fail("pickling", "an unpickled copy of the agent acts differently from the original")
        next_obs, reward, _, truncated, info = env.step(a)
        next_copy, reward_copy, _, _, info_copy = env_copy.step(b)
        agent.update(obs, a, reward, info)
        clone.update(obs_copy, b, reward_copy, info_copy)
        obs, obs_copy = next_obs, np.array(next_copy, copy=True)
        if truncated:
            break


def _same_global_state(np_state: tuple, py_state: Any) -> bool:
    now = np.random.get_state()
    return random.getstate() == py_state and all(
        np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b for a, b in zip(np_state, now)
    )


def _arrays(release: Any) -> list[np.ndarray]:
    """Every numpy array reachable in a release (dataclass fields, mappings, sequences, attributes)."""
    found, stack, seen = [], [release], set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif hasattr(item, "__dict__") or hasattr(item, "__slots__"):
            names = getattr(item, "__slots__", ()) or vars(item)
            stack.extend(getattr(item, n) for n in names if hasattr(item, n))
    return found


def _release_vector(release: Any) -> np.ndarray:
    arrays = [np.asarray(a, dtype=float).ravel() for a in _arrays(release)]
    return np.concatenate(arrays) if arrays else np.zeros(0)


def _data_stream(env: Any, seed: int, n_rounds: int) -> list[tuple[np.ndarray, int, float]]:
    """(observation, arm, reward) of ``n_rounds`` users under uniform random play (data for the curator)."""
    rng = np.random.default_rng(seed)
    K = env.unwrapped.constants.n_arms
    obs, _ = env.reset(seed=seed)
    data = []
    for _ in range(n_rounds):
        arm = int(rng.integers(K))
        next_obs, reward, _, _, _ = env.step(arm)
        data.append((np.array(obs, copy=True), arm, float(reward)))
        obs = next_obs
    return data


def _releases(agent: PrivateAgent, data, rng: np.random.Generator) -> np.ndarray:
    curator = agent._make_curator(rng)
    out = []
    for obs, arm, reward in data:
        curator.observe(obs, arm, reward)
        out.append(_release_vector(curator.release()))
    return np.concatenate(out)


#: The fewest users :func:`check_private_agent` streams by default.
MIN_AUDIT_ROUNDS = 30


def audit_rounds(agent: PrivateAgent) -> int:
    """The users :func:`check_private_agent` streams by default: at least :data:`MIN_AUDIT_ROUNDS` and a power of two
    at or past the agent's :attr:`~dpbandit.agents.private.PrivateAgent.first_release` (the audit reads the releases
    at t = 1, 2, 4, ...)."""
    return max(MIN_AUDIT_ROUNDS, 1 << (int(agent.first_release) - 1).bit_length())


def check_private_agent(
    agent: PrivateAgent,
    env: Any,
    *,
    seed: int = 0,
    n_rounds: int | None = None,
    audit: bool = False,
    audit_samples: int = 2000,
) -> None:
    """Check the private-agent structure (after :func:`check_agent`). Raises :class:`ConformanceError`.

    ``n_rounds`` users are streamed (default: :func:`audit_rounds`, at least 30 and past the agent's first release,
    so an episodic agent's releases depend on the data and the noise by then)."""
    if not isinstance(agent, PrivateAgent) or not agent.private:
        _fail("JDP structure", f"{type(agent).__name__} is not a dpbandit.agents.private.PrivateAgent")
    n_rounds = audit_rounds(agent) if n_rounds is None else check_int("n_rounds", n_rounds, low=1)
    check_agent(agent, env, seed=seed, n_rounds=n_rounds)
    rule = inspect.getattr_static(type(agent), "action_rule")
    if not isinstance(rule, staticmethod):
        _fail("JDP structure", "action_rule must be a staticmethod of (release, observation, rng)")
    params = list(inspect.signature(type(agent).action_rule).parameters)
    if len(params) != 3:
        _fail("JDP structure", f"action_rule must take exactly (release, observation, rng), takes {params}")

    report = agent.privacy_report()
    if report is None or getattr(report, "guarantee", "none") == "none":
        _fail("privacy report", "a private agent must report a guarantee (got none); is its noise switched off?")
    if not getattr(report, "events", ()):
        _fail("privacy report", "the privacy ledger is empty: every noisy release must be recorded")

    data = _data_stream(env, seed, n_rounds)
    curator = agent._make_curator(np.random.default_rng(1))
    for obs, arm, reward in data[:3]:
        curator.observe(obs, arm, reward)
        for array in _arrays(curator.release()):
            if array.flags.writeable:
                _fail("read-only releases", "a release contains a writable array; publish read-only copies/views")

    np_state, py_state = np.random.get_state(), random.getstate()
    a = _releases(agent, data, np.random.default_rng(123))
    b = _releases(agent, data, np.random.default_rng(123))
    c = _releases(agent, data, np.random.default_rng(456))
    if not _same_global_state(np_state, py_state):
        _fail("privacy stream", "the curator used the global numpy.random or random state")
    if not np.array_equal(a, b):
        _fail("privacy stream", "same privacy generator, same data, different releases: noise from another source")
    if np.array_equal(a, c):
        late = (f" (its first release comes after {agent.first_release} users: stream at least that many, "
                "n_rounds=None does)" if agent.first_release > n_rounds else "")
        _fail("privacy stream", f"releases do not depend on the privacy generator: no noise is drawn from it within "
                                f"the first {n_rounds} users{late}")
    if audit:
        _quick_audit(agent, data, report, audit_samples)


def _quick_audit(agent: PrivateAgent, data, report, n_samples: int) -> None:
    """Neighbouring streams differ in the first user's reward, set to the two extremes of the declared reward range
    (+-1e3 when it is unbounded: an agent must clip). The audited output is the releases at t = 1, 2, 4, 8, ...
    (every tree level that holds the first user), projected on the estimated mean difference
    (:func:`dpbandit.privacy.audit.projection`)."""
    from dpbandit.privacy.audit import audit, projection

    obs, arm, _ = data[0]
    constants = agent.constants
    low = constants.reward_low if np.isfinite(constants.reward_low) else -1e3
    high = constants.reward_high if np.isfinite(constants.reward_high) else 1e3
    data = [(obs, arm, high)] + list(data[1:])
    neighbour = [(obs, arm, low)] + list(data[1:])
    recorded = {2**k for k in range(len(data).bit_length())}

    def mechanism(stream, rng, n):
        out = []
        for _ in range(n):
            curator = agent._make_curator(rng)
            releases = []
            for t, (o, a, r) in enumerate(stream, start=1):
                curator.observe(o, a, r)
                if t in recorded:
                    releases.append(_release_vector(curator.release()))
            out.append(np.concatenate(releases))
        return np.stack(out)

    pilot_rng = np.random.default_rng(7)
    direction = mechanism(data, pilot_rng, 200).mean(0) - mechanism(neighbour, pilot_rng, 200).mean(0)
    if not np.any(direction):
        return
    result = audit(
        mechanism, data, neighbour, n_samples=n_samples, delta=report.delta, rng=np.random.default_rng(11),
        statistic=projection(direction),
    )
    if result.epsilon_lower_bound > report.epsilon:
        _fail("audit", f"empirical lower bound {result.epsilon_lower_bound:.3f} > claimed epsilon {report.epsilon}")


#: Probability that uniform random play passes :func:`check_acts_on_data` (Hoeffding bound).
RANDOM_PASS_PROBABILITY = 1e-6


@dataclass(frozen=True)
class ActsOnData:
    """Outcome of :func:`check_acts_on_data`: ``"refused"`` (``message`` is the one-line refusal), ``"exempt"``
    (the agent declares ``ignores_data``) or ``"acts"`` (``hits`` best-arm plays in the ``rounds`` scored, against
    ``threshold``, above which uniform random play lands with probability below 1e-6)."""

    outcome: str
    message: str = ""
    hits: int = 0
    rounds: int = 0
    threshold: float = 0.0


def check_acts_on_data(name: Any, env: Any, params: dict | None = None, *, log: Any = None, seed: int = 0,
                       n_rounds: int = 400) -> ActsOnData:
    """Build agent ``name`` with ``make_agent(name, env, **params)`` and check that it refuses in one line or acts
    on the data (module docstring). ``env`` is a dpbandit environment played for ``n_rounds`` rounds, or a
    :class:`~dpbandit.offline.ReplayEnv` with ``log``, a :class:`~dpbandit.offline.LoggedData` holding
    ``extra["expected_reward"]`` (:func:`~dpbandit.offline.log_policy`), replayed once (every logged round scored).
    Raises :class:`ConformanceError` otherwise."""
    from dpbandit.agents import make_agent

    try:
        agent = make_agent(name, env, **(params or {}))
    except (ValueError, TypeError) as exc:
        message = str(exc)
        if not message.strip() or "\n" in message:
            _fail("one-line refusal", f"{name!r} refused with a message that is not one line: {message!r}")
        return ActsOnData("refused", message)
    except Exception as exc:  # noqa: BLE001 - a crash is not a refusal
        _fail("one-line refusal", f"{name!r} raised {type(exc).__name__} at construction ({exc}); a refusal must be "
                                  "a ValueError or TypeError naming the parameter")
    if getattr(type(agent), "ignores_data", False):
        return ActsOnData("exempt", f"{type(agent).__name__} declares ignores_data")
    means, actions = _replay_means(agent, log, seed) if log is not None else _online_means(agent, env, seed, n_rounds)
    scored = slice(len(actions) // 2, None)  # the second half: after some learning
    means, actions = means[scored], np.asarray(actions[scored])
    best = means == means.max(axis=1, keepdims=True)
    hits = int(best[np.arange(len(actions)), actions].sum())
    m = len(actions)
    threshold = float(best.mean(axis=1).sum()) + math.sqrt(m * math.log(1.0 / RANDOM_PASS_PROBABILITY) / 2.0)
    if not hits > threshold:
        _fail("acts on data", f"{name!r} played a best arm in {hits} of the last {m} rounds, no more than uniform "
                              f"random play could ({threshold:.1f}): it ignores the data; refuse the parameter that "
                              "makes it meaningless, in one line at construction")
    return ActsOnData("acts", hits=hits, rounds=m, threshold=threshold)


def _online_means(agent: Agent, env: Any, seed: int, n_rounds: int) -> tuple[np.ndarray, list[int]]:
    """Every round's expected rewards (n, K) and the agent's actions in one episode of ``env``."""
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    means, actions = [], []
    for _ in range(n_rounds):
        arm = int(agent.act(obs))
        next_obs, reward, _, truncated, info = env.step(arm)
        agent.update(obs, arm, reward, info)
        means.append(np.asarray(info["mean_rewards"], dtype=float))
        actions.append(arm)
        obs = next_obs
        if truncated:
            break
    return np.array(means), actions


def _replay_means(agent: Agent, log: Any, seed: int) -> tuple[np.ndarray, list[int]]:
    """The logged rounds' expected rewards and the agent's choice in each, from one replay pass over ``log`` in
    order (the i-th call of ``act`` is logged round i)."""
    from dpbandit.offline import evaluate_offline

    truth = log.extra.get("expected_reward") if log.extra else None
    if truth is None:
        raise TypeError("log must hold extra['expected_reward'] (dpbandit.offline.log_policy keeps it)")
    actions: list[int] = []
    act = agent.act

    def recording(observation):
        actions.append(int(act(observation)))
        return actions[-1]

    agent.act = recording  # the instance attribute shadows the method for this pass only
    try:
        evaluate_offline(log, agent, seed, estimators=("replay",))
    finally:
        del agent.act
    return np.asarray(truth, dtype=float)[: len(actions)], actions
