"""Conformance checkers: every built-in agent passes; deliberately broken agents fail with a clear message."""

import gymnasium
import numpy as np
import pytest

from dpbandit.agents import AGENTS, make_agent
from dpbandit.agents.base import Agent
from dpbandit.agents.private import Curator, PrivateAgent
from dpbandit.experiment.checks import ConformanceError, check_agent, check_private_agent
from dpbandit.privacy import GaussianNoise, PrivacyLedger, TreeAggregator, calibrate_tree_sigma


def _env(**kwargs):
    kwargs = {"horizon": 200, "dim": 8, **kwargs}
    return gymnasium.make("dpbandit/SparseLinear-v0", **kwargs)


SMALL_PARAMS = {"oco": {"learner": "pigd"}, "episodic_ridge": {"first_episode": 4}}  # releases within 20 rounds


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_every_builtin_agent_conforms(name):
    env = _env(full_information=True) if name == "oco" else _env()
    agent = make_agent(name, env, **SMALL_PARAMS.get(name, {}))
    check_agent(agent, env, n_rounds=40)
    if agent.private:
        check_private_agent(agent, env, n_rounds=20)


class _GlobalRNGAgent(Agent):
    name = "broken-global"

    def _reset_state(self):
        pass

    def act(self, observation):
        return int(np.random.randint(self.n_arms))

    def update(self, observation, arm, reward, info):
        pass


class _MutatingAgent(Agent):
    name = "broken-mutating"

    def _reset_state(self):
        pass

    def act(self, observation):
        return 0

    def update(self, observation, arm, reward, info):
        observation *= 0.5


class _BadActionAgent(_MutatingAgent):
    def act(self, observation):
        return self.n_arms

    def update(self, observation, arm, reward, info):
        pass


class _UnseededAgent(_BadActionAgent):
    def _reset_state(self):
        self._own = np.random.default_rng()

    def act(self, observation):
        return int(self._own.integers(self.n_arms))


@pytest.mark.parametrize(
    "cls, check",
    [
        (_GlobalRNGAgent, "no global RNG"),
        (_MutatingAgent, "observation not mutated"),
        (_BadActionAgent, "action validity"),
        (_UnseededAgent, "seed idempotence"),
    ],
)
def test_broken_agents_fail_with_a_clear_message(cls, check):
    env = _env()
    with pytest.raises(ConformanceError, match=f"\\[{check}\\]"):
        check_agent(cls(env.unwrapped.constants), env)


# -- a small private agent: noisy per-arm reward sums and counts released by a Gaussian tree ---------------------


class _MeanCurator(Curator):
    def __init__(self, constants, sigma, rng, scale=1.0):
        self.K, self.T = constants.n_arms, constants.horizon
        self.tree = TreeAggregator((2 * self.K,), self.T, GaussianNoise(sigma * scale), rng)
        # The ledger accounts the *claimed* sigma (equal to the real one unless a test breaks the agent on purpose).
        claimed = TreeAggregator((2 * self.K,), self.T, GaussianNoise(sigma), rng).accounting
        self.ledger = PrivacyLedger().add_tree(claimed, sensitivity=2.0)
        self._release = np.zeros(2 * self.K)
        self._release.flags.writeable = False

    def observe(self, observation, arm, reward):
        leaf = np.zeros(2 * self.K)
        leaf[arm], leaf[self.K + arm] = np.clip(reward, -1, 1), 1.0
        self._release = self.tree.add_and_release(leaf)
        self._release.flags.writeable = False

    def release(self):
        return self._release

    def privacy_report(self):
        return self.ledger.report(1e-5, guarantee="JDP", sensitivity_assumption="rewards clipped to [-1, 1]")


class _NoisyMeans(PrivateAgent):
    name = "noisy-means"
    noise_scale = 1.0

    def __init__(self, constants):
        self.sigma = calibrate_tree_sigma(1.0, 1e-5, constants.horizon, 2.0)
        super().__init__(constants)

    def _make_curator(self, privacy_rng):
        return _MeanCurator(self.constants, self.sigma, privacy_rng, self.noise_scale)

    @staticmethod
    def action_rule(release, observation, rng):
        K = release.size // 2
        means = release[:K] / np.maximum(release[K:], 1.0)
        return int(np.argmax(means + rng.normal(0, 1e-9, K)))


def test_private_checker_passes_a_correct_private_agent():
    env = _env()
    check_private_agent(_NoisyMeans(env.unwrapped.constants), env, audit=True, audit_samples=1500)


class _Weak(_NoisyMeans):
    noise_scale = 0.02  # claims (1, 1e-5) with 50x too little noise


class _LeakyCurator(_MeanCurator):
    def observe(self, observation, arm, reward):
        super().observe(observation, arm, reward)
        self._release = self._release + np.random.default_rng().normal(size=self._release.shape)
        self._release.flags.writeable = False


class _Leaky(_NoisyMeans):
    def _make_curator(self, privacy_rng):
        return _LeakyCurator(self.constants, self.sigma, privacy_rng)


class _WritableCurator(_MeanCurator):
    def release(self):
        return np.array(self._release)


class _Writable(_NoisyMeans):
    def _make_curator(self, privacy_rng):
        return _WritableCurator(self.constants, self.sigma, privacy_rng)


def test_private_checker_audit_catches_under_noised_agent():
    env = _env()
    with pytest.raises(ConformanceError, match="\\[audit\\]"):
        check_private_agent(_Weak(env.unwrapped.constants), env, audit=True, audit_samples=1500)


def test_private_checker_catches_noise_from_elsewhere():
    """Unseeded noise makes actions irreproducible: caught by seed idempotence, by the pickled copy acting
    differently, or by the privacy-stream check, whichever sees the difference first (the actions may agree by chance)."""
    env = _env()
    with pytest.raises(ConformanceError, match="seed idempotence|pickling|privacy stream"):
        check_private_agent(_Leaky(env.unwrapped.constants), env)


def test_private_checker_catches_writable_releases():
    env = _env()
    with pytest.raises(ConformanceError, match="read-only releases"):
        check_private_agent(_Writable(env.unwrapped.constants), env)


def test_action_rule_must_be_static():
    with pytest.raises(TypeError, match="staticmethod"):

        class _SeesItself(_NoisyMeans):
            def action_rule(self, release, observation, rng):  # noqa: D102
                return 0


def test_non_private_agent_is_not_a_private_agent():
    env = _env()
    with pytest.raises(ConformanceError, match="JDP structure"):
        check_private_agent(make_agent("linucb", env), env)
