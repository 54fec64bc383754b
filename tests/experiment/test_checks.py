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


SMALL_PARAMS = {"oco": {"learner": "pigd"}, "episodic_ridge": {"first_episode": 4},
                "episodic_glm": {"first_episode": 4},
                "support_ridge": {"support_size": 6, "selection_users": 4, "ridge_params": {"first_episode": 4}}}
# (releases within 20 rounds; support_ridge refuses the default s' on SparseLinear's s = 5 of d = 8)


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_every_builtin_agent_conforms(name):
    env = _env(full_information=True) if name == "oco" else _env(link="logistic", noise_std=None) if name == "episodic_glm" else _env()
    agent = make_agent(name, env, **SMALL_PARAMS.get(name, {}))
    check_agent(agent, env, n_rounds=40)
    if agent.private:
        check_private_agent(agent, env, n_rounds=20)


@pytest.mark.parametrize("name", ["episodic_glm", "support_ridge"])
def test_check_private_agent_streams_past_the_first_release_by_default(name):
    """With its default parameters an episodic agent first releases after more than 30 users: the default stream
    reaches that release (it failed as "no noise drawn"), and a too short stream names the first release."""
    env = gymnasium.make("dpbandit/SparseLogistic-v0", horizon=4000)
    agent = make_agent(name, env, epsilon=1.0)
    assert agent.first_release > 30
    check_private_agent(agent, env)
    with pytest.raises(ConformanceError, match=f"within the first 30 users .its first release comes after "
                                               f"{agent.first_release} users"):
        check_private_agent(agent, env, n_rounds=30)
    with pytest.raises(ValueError, match="n_rounds"):
        check_private_agent(agent, env, n_rounds=0)


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


# -- every agent refuses in one line or acts on the data (issue 24, item 3) ------------------------------------------

ROUNDS = 400  # short runs with a strong signal: a best arm is clear within a few hundred rounds


def _families():
    """(id, environment, log): a simulator, own data (bundled iris through Classification-v0) and logged data
    (ReplayEnv over a uniform log of the same data), with the theta_bound left unknown and stated."""
    from sklearn.datasets import load_iris

    from dpbandit.offline import ReplayEnv, log_policy

    X, y = load_iris(return_X_y=True)
    own = {f"Classification-v0{tag}": gymnasium.make("dpbandit/Classification-v0", X=X, y=y, horizon=ROUNDS, **kw)
           for tag, kw in (("", {}), ("[theta_bound=1]", {"theta_bound": 1.0}))}
    log = log_policy(gymnasium.make("dpbandit/Classification-v0", X=X, y=y, horizon=10 * ROUNDS), 3 * ROUNDS, seed=5)
    return {
        "SparseLinear-v0": (gymnasium.make("dpbandit/SparseLinear-v0", horizon=ROUNDS, dim=5, sparsity=2,
                                           instance_seed=0), None),
        **{key: (env, None) for key, env in own.items()},
        "ReplayEnv": (ReplayEnv.from_logged(log, ROUNDS), log),
        "ReplayEnv[theta_bound=1]": (ReplayEnv.from_logged(log, ROUNDS, theta_bound=1.0), log),
    }


FAMILIES = ("SparseLinear-v0", "Classification-v0", "Classification-v0[theta_bound=1]", "ReplayEnv",
            "ReplayEnv[theta_bound=1]")
#: Known failures, kept visible: DP-HDB's default warm-up (the published code's t0 = ln(dT) ln(T)/eps^2, 1 sample per
#: arm at large epsilon) freezes forced-sample estimators fitted to one sample each, and its h/2 pre-selection on them
#: can exclude the best arm for the whole run; on iris it plays no better than random in some seeds (warmup=d fixes it).
KNOWN = {("dp_hdb", "Classification-v0[theta_bound=1]"), ("dp_hdb", "ReplayEnv[theta_bound=1]")}


@pytest.fixture(scope="module")
def families():
    return _families()


def _cases():
    from dpbandit.agents import discover_agents

    for name in sorted(discover_agents()):
        for family in FAMILIES:
            marks = [pytest.mark.xfail(strict=True, reason="DP-HDB's one-sample warm-up (see KNOWN)")] \
                if (name, family) in KNOWN else []
            yield pytest.param(name, family, marks=marks, id=f"{name}-{family}")


@pytest.mark.parametrize("name, family", list(_cases()))
def test_every_agent_refuses_in_one_line_or_acts_on_the_data(families, name, family):
    """Every registered agent (plugins included), on a simulator, own data and logged data, with the theta bound
    unknown and stated: a one-line refusal at construction, or best-arm play above what uniform random play reaches
    with probability 1e-6. Private agents run at epsilon = 1000 (a strong signal, the noise still on)."""
    from dpbandit.agents import agent_class, hyperparameters
    from dpbandit.experiment.checks import check_acts_on_data

    env, log = families[family]
    private = agent_class(name).private and "epsilon" in hyperparameters(name)
    result = check_acts_on_data(name, env, {"epsilon": 1e3} if private else {}, log=log, n_rounds=ROUNDS)
    assert result.outcome in ("refused", "acts", "exempt")
    if result.outcome == "refused" and "theta_bound=1" in family:
        assert "theta_bound" not in result.message  # a stated bound is never the reason


class _SilentlyRandom(Agent):
    """What DP-UCB did without a theta bound: infinite widths, every arm tied, uniform play, no warning."""

    name = "silently-random"

    def _reset_state(self):
        pass

    def act(self, observation):
        return int(self.rng.integers(self.n_arms))

    def update(self, observation, arm, reward, info):
        pass


class _LongRefusal(_SilentlyRandom):
    def __init__(self, constants):
        raise ValueError("cannot build this agent:\n  theta_bound is infinite")


class _Crashes(_SilentlyRandom):
    def __init__(self, constants):
        raise AttributeError("'ReplayEnv' object has no attribute 'expected_rewards'")


@pytest.mark.parametrize("cls, check", [(_SilentlyRandom, r"\[acts on data\] .* no more than uniform random play"),
                                        (_LongRefusal, r"\[one-line refusal\] .* not one line"),
                                        (_Crashes, r"\[one-line refusal\] .* raised AttributeError")])
def test_the_acts_on_data_check_catches_meaningless_agents(families, cls, check):
    from dpbandit.experiment.checks import check_acts_on_data

    env, log = families["ReplayEnv[theta_bound=1]"] if cls is _SilentlyRandom else families["SparseLinear-v0"]
    with pytest.raises(ConformanceError, match=check):
        check_acts_on_data(cls, env, log=log)
    env, _ = families["SparseLinear-v0"]
    if cls is _SilentlyRandom:
        with pytest.raises(ConformanceError, match=r"\[acts on data\]"):
            check_acts_on_data(cls, env, n_rounds=ROUNDS)
        assert check_acts_on_data("random", env).outcome == "exempt"  # declares ignores_data
        result = check_acts_on_data("linucb", env, n_rounds=ROUNDS)
        assert result.outcome == "acts" and result.hits > result.threshold
