"""Conformance of every batched form (dpbandit.agents.batched): S seeds in lockstep give each seed's single-seed
frame bit for bit, and leave each seed's agent with the single-seed privacy report. Every registered form must have a
case here (the last test fails otherwise)."""

import gymnasium
import pytest

from dpbandit.agents import AGENTS, make_agent
from dpbandit.agents.batched import BATCHED_FORMS, argmax_random_tie_rows, batched_form, has_batched_form
from dpbandit.experiment import simulate
from dpbandit.experiment.batch import simulate_batch_agents
from dpbandit.experiment.config import AgentSpec, EnvSpec

SMALL = {"n_arms": 4, "dim": 7, "horizon": 300, "theta": "dense"}
#: (environment, agent) cases; every registered batched form needs at least one.
CASES = [
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "disjoint"}), AgentSpec("linucb", params={"alpha": 0.5})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "shared"}), AgentSpec("linucb")),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "disjoint"}), AgentSpec("greedy")),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "shared"}), AgentSpec("greedy")),
    # episodic agents: T = 300 crosses 9 (FLIPHAT) / 5-6 (ridge) episode boundaries, i.e. releases
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "disjoint"}),
     AgentSpec("fliphat", params={"epsilon": 2.0})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "shared"}),
     AgentSpec("fliphat", params={"epsilon": 4.0, "selection": "gumbel"})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "disjoint"}),
     AgentSpec("fliphat", params={"epsilon": float("inf")})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "shared", "link": "logistic", "theta_bound": 3.0}),
     AgentSpec("fliphat", params={"epsilon": 8.0})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "disjoint", "link": "logistic", "theta_bound": 3.0}),
     AgentSpec("fliphat", params={"epsilon": 8.0, "selection": "gumbel"})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "disjoint"}), AgentSpec("episodic_ridge")),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "shared"}),
     AgentSpec("episodic_ridge", params={"epsilon": 4.0, "mode": "sum", "ucb_alpha": 0.5})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "disjoint"}),
     AgentSpec("episodic_ridge", params={"epsilon": 2.0, "ucb_alpha": 1.0})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "shared"}),
     AgentSpec("episodic_ridge", params={"epsilon": float("inf")})),
    # DP-HDB: warm-ups of 4 x 2 = 8 and 4 x 5 = 20 rounds, then the pre-selection; d = 7 (2d <= 64): inverse CDF
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "disjoint"}),
     AgentSpec("dp_hdb", params={"epsilon": 2.0, "warmup": 2})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "disjoint"}),
     AgentSpec("dp_hdb", params={"epsilon": float("inf"), "warmup": 5})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "disjoint"}),
     AgentSpec("dp_hdb", params={"epsilon": 4.0, "form": "laplace", "warmup": 0})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "disjoint", "link": "logistic", "theta_bound": 3.0}),
     AgentSpec("dp_hdb", params={"epsilon": 8.0, "warmup": 3})),
    # d = 40 (2d > 64): rejection sampling for near-uniform rows, inverse CDF for the others, default warm-up
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "dim": 40, "structure": "disjoint"}),
     AgentSpec("dp_hdb", params={"epsilon": 1.0})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "dim": 40, "structure": "disjoint"}),
     AgentSpec("dp_hdb", params={"epsilon": 16.0, "warmup": 1, "h": 0.05})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "dim": 40, "structure": "disjoint"}),  # envelopes past ln(8)/2
     AgentSpec("dp_hdb", params={"epsilon": 1e5, "warmup": 1})),
    # DP-UCB: noise on (disjoint: every model refactored, batched; shared: one potrf per seed) and off (the played
    # arm's model only)
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "disjoint"}), AgentSpec("dp_ucb", params={"epsilon": 1.0})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "shared"}), AgentSpec("dp_ucb", params={"epsilon": 2.0})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "disjoint"}),
     AgentSpec("dp_ucb", params={"epsilon": float("inf")})),
    (EnvSpec("dpbandit/GLMBandit-v0", {**SMALL, "structure": "shared"}),
     AgentSpec("dp_ucb", params={"epsilon": float("inf")})),
]


def _single(env_spec, agent_spec, seed, checkpoints):
    env = gymnasium.make(env_spec.id, **env_spec.kwargs)
    agent = make_agent(agent_spec.type, env, **agent_spec.params)
    return simulate(env, agent, seed, checkpoints), agent


def _report(agent):
    report = agent.privacy_report()
    return None if report is None else report.to_dict()


@pytest.mark.parametrize("env_spec,agent_spec", CASES, ids=lambda c: getattr(c, "type", getattr(c, "kwargs", {})
                                                                                  .get("structure", "")))
def test_batched_form_is_bit_identical_per_seed(env_spec, agent_spec):
    seeds = [0, 3, 11]
    frames, agents = simulate_batch_agents(env_spec, agent_spec, seeds, checkpoints=None)
    for seed, frame, agent in zip(seeds, frames, agents):
        expected, single_agent = _single(env_spec, agent_spec, seed, None)
        assert frame.equals(expected), (seed, (frame - expected).abs().max().max())
        assert _report(agent) == _report(single_agent)
    assert not frames[0].equals(frames[1])  # the seeds really differ


def test_every_registered_form_has_a_conformance_case():
    covered = {AGENTS[spec.type] for _, spec in CASES}
    assert set(BATCHED_FORMS) <= covered, set(BATCHED_FORMS) - covered


def test_batched_form_refuses_mixed_classes_and_reports_none_for_unbatched_agents():
    env = gymnasium.make("dpbandit/GLMBandit-v0", horizon=10)
    linucb, greedy, egreedy = (make_agent(n, env) for n in ("linucb", "greedy", "egreedy"))
    with pytest.raises(TypeError, match="one class"):
        batched_form([linucb, greedy])
    with pytest.raises(ValueError, match="at least one agent"):
        batched_form([])
    assert batched_form([egreedy]) is None and not has_batched_form(type(egreedy))  # subclasses are not batched


def test_argmax_rows_breaks_ties_with_the_rows_own_generator_only():
    import numpy as np
    scores = np.array([[1.0, 3.0, 2.0], [5.0, 5.0, 1.0], [0.0, 0.0, 0.0]])
    rngs = [np.random.default_rng(1), np.random.default_rng(2), np.random.default_rng(3)]
    state0 = rngs[0].bit_generator.state
    arms = argmax_random_tie_rows(scores, rngs)
    assert arms[0] == 1 and arms[1] in (0, 1) and arms.dtype.kind == "i"
    assert rngs[0].bit_generator.state == state0  # no tie: not consumed
    with pytest.raises(ValueError, match="NaN"):
        argmax_random_tie_rows(np.array([[np.nan, np.nan]]), [np.random.default_rng(0)])


DP_UCB_CASES = [(e, a) for e, a in CASES if a.type == "dp_ucb"]


@pytest.mark.parametrize("env_spec,agent_spec", DP_UCB_CASES, ids=lambda c: getattr(c, "type", getattr(c, "kwargs", {})
                                                                                      .get("structure", "")))
def test_batched_dp_ucb_form_is_bit_identical_per_seed_where_lockstep_takes_it(env_spec, agent_spec, monkeypatch):
    """DP-UCB plays blocks, so on the GLM bandit ``simulate_batch`` plays each seed's blocks; its batched form runs
    where the environments hand out no blocks. Taken here on purpose: each seed's frame and report are the single
    seed's (its blocks), bit for bit."""
    import dpbandit.experiment.batch as batch

    monkeypatch.setattr(batch, "blocks_apply", lambda envs, agents: False)
    seeds = [0, 3, 11]
    frames, agents = simulate_batch_agents(env_spec, agent_spec, seeds, checkpoints=None)
    for seed, frame, agent in zip(seeds, frames, agents):
        expected, single_agent = _single(env_spec, agent_spec, seed, None)
        assert frame.equals(expected), (seed, (frame - expected).abs().max().max())
        assert _report(agent) == _report(single_agent)


@pytest.mark.parametrize("structure", ["shared", "disjoint"])
def test_batched_dp_ucb_lifts_indefinite_v_like_the_single_path(structure):
    """Without the 2 Upsilon shift the node noise makes V_t indefinite: each such model is lifted by the single
    path's own routine, and the batched releases and actions stay those of the single seeds, bit for bit."""
    import numpy as np

    from dpbandit.agents.batched.dp_ucb import BatchedDPUCB

    env = gymnasium.make("dpbandit/GLMBandit-v0", **{**SMALL, "structure": structure, "horizon": 40})
    agents = [make_agent("dp_ucb", env, epsilon=1.0) for _ in range(4)]
    K, d = SMALL["n_arms"], SMALL["dim"]
    for k, agent in enumerate(agents):
        agent.reset(k // 2)
        agent.curator._gram[:, np.arange(d), np.arange(d)] = 1e-3  # no shift: V_t indefinite at once
    singles, stacked = agents[::2], agents[1::2]
    batched = BatchedDPUCB(stacked)
    rng, lifted = np.random.default_rng(0), 0
    for _ in range(30):
        obs = rng.normal(size=(2, K, d))
        obs /= np.linalg.norm(obs, axis=-1, keepdims=True)
        arms = batched.act(obs)
        assert arms.tolist() == [a.act(x) for a, x in zip(singles, obs)]
        rewards = rng.uniform(-1.0, 1.0, size=2)
        batched.update(obs, arms, rewards)
        for a, x, arm, r in zip(singles, obs, arms.tolist(), rewards.tolist()):
            a.update(x, arm, r, {})
        lifted += int(batched.failed.sum())
        for s, a in enumerate(singles):
            assert np.array_equal(a._release.cholesky, batched.chol[s])
            assert np.array_equal(a._release.response, batched.response[s])
    assert lifted > 0


@pytest.mark.parametrize("models", [1, None])
@pytest.mark.parametrize("shape", [(16, 2, 50), (3, 4, 7), (5, 10, 20)])
def test_batched_dp_ucb_scores_are_the_single_rows_bit_for_bit(shape, models):
    import numpy as np

    from dpbandit.agents.dp_ucb_kernels import scores_stack
    from dpbandit.agents.dp_ucb_release import DPUCBRelease, ucb_scores

    rng = np.random.default_rng(0)
    S, K, d = shape
    M = models or K
    A = rng.normal(size=(S, M, d, d))
    chol = np.linalg.cholesky(A @ A.transpose(0, 1, 3, 2) + d * np.eye(d))
    response = rng.normal(size=(S, M, d))
    obs = rng.normal(size=(S, K, d))
    single = np.stack([ucb_scores(DPUCBRelease(7, c, u, 1.7, M == 1), x) for c, u, x in zip(chol, response, obs)])
    best, ties = np.empty(S, dtype=np.intp), np.empty(S, dtype=np.intp)
    assert np.array_equal(scores_stack(chol, response, obs, 1.7, np.empty((S, K)), best, ties), single)
    assert best.tolist() == single.argmax(axis=1).tolist() and (ties == 1).all()
    # and the index itself: x^T V^{-1} u + beta ||x||_{V^{-1}}
    V = chol @ chol.transpose(0, 1, 3, 2)
    Vinv = np.linalg.inv(V[:, [0] * K] if M == 1 else V)
    u = response[:, [0] * K] if M == 1 else response
    expected = (np.einsum("skd,skde,ske->sk", obs, Vinv, u)
                + 1.7 * np.sqrt(np.einsum("skd,skde,ske->sk", obs, Vinv, obs)))
    np.testing.assert_allclose(single, expected, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="scores"):  # the kernel refuses shapes it would read out of bounds
        scores_stack(chol[:, :, :-1], response, obs, 1.7, np.empty((S, K)), best, ties)


def test_batched_dp_ucb_refuses_bad_data_with_the_single_paths_errors():
    """The batched checks pass anything doubtful to each seed's own stage: the same errors as a single-seed run."""
    import numpy as np

    from dpbandit.agents.batched.dp_ucb import BatchedDPUCB

    env = gymnasium.make("dpbandit/GLMBandit-v0", **{**SMALL, "structure": "disjoint", "horizon": 5})
    agents = [make_agent("dp_ucb", env, epsilon=1.0) for _ in range(3)]
    for s, agent in enumerate(agents):
        agent.reset(s)
    K, d = agents[0].n_arms, agents[0].dim
    obs = np.zeros((3, K, d))
    obs[:, :, 0] = 1.0  # on the bound
    form = BatchedDPUCB(agents)
    form.update(obs, np.array([0, 1, 2]), np.zeros(3))
    assert [a.curator.t for a in agents] == [1, 1, 1]
    bad = obs.copy()
    bad[1, 2, 0] = 1.5
    with pytest.raises(ValueError, match="context_bound"):
        form.update(bad, np.array([0, 2, 2]), np.zeros(3))
    bad[1, 2, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        form.update(bad, np.array([0, 2, 2]), np.zeros(3))
    with pytest.raises(ValueError, match="arm must be an integer"):
        form.update(obs, np.array([0, K, 1]), np.zeros(3))
    with pytest.raises(ValueError, match="reward"):
        form.update(obs, np.array([0, 1, 1]), np.array([0.0, np.nan, 0.0]))
    assert [a.curator.t for a in agents] == [1, 1, 1]  # a refused round counts no seed's user
    singles = [make_agent("dp_ucb", env, epsilon=1.0) for _ in range(3)]
    for s, agent in enumerate(singles):  # the same users, one by one
        agent.reset(s)
        agent.update(obs[s], s, 0.0, {})
    for _ in range(4):  # to the horizon, where the batched agents get their releases
        arms = form.act(obs)
        assert arms.tolist() == [a.act(x) for a, x in zip(singles, obs)]
        form.update(obs, arms, np.full(3, 0.5))
        for a, x, arm in zip(singles, obs, arms.tolist()):
            a.update(x, arm, 0.5, {})
    for a, b in zip(agents, singles):
        assert a.curator.t == b.curator.t == 5 and a._release.t == 5
        assert np.array_equal(a._release.cholesky, b._release.cholesky)
        assert np.array_equal(a._release.response, b._release.response)
    with pytest.raises(TypeError, match="arm must be an integer"):  # the single path's error, not numba's
        form.update(obs, np.array([0.0, 1.0, 1.0]), np.zeros(3))


@pytest.mark.parametrize("name", ["linucb", "greedy"])
def test_batched_ridge_refuses_bad_arms_before_any_seed_learns(name):
    import numpy as np

    env = gymnasium.make("dpbandit/GLMBandit-v0", **{**SMALL, "structure": "disjoint", "horizon": 5})
    agents = [make_agent(name, env) for _ in range(3)]
    for s, agent in enumerate(agents):
        agent.reset(s)
    form = batched_form(agents)
    K, d = SMALL["n_arms"], SMALL["dim"]
    obs = np.full((3, K, d), 0.1)
    with pytest.raises(ValueError, match=r"arm must be an integer in \[0, 3\], got 4"):
        form.update(obs, np.array([0, K, 1]), np.zeros(3))
    with pytest.raises(TypeError, match="arm must be an integer"):
        form.update(obs, np.array([0.0, 1.0, 1.0]), np.zeros(3))
    assert not any(a.ridge.counts.any() for a in agents)
    form.update(obs, np.array([0, 1, 1]), np.ones(3))
    assert [a.ridge.counts.tolist() for a in agents] == [[1, 0, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0]]


def test_choose_rows_keeps_a_unique_best_and_breaks_ties_with_the_rows_own_generator():
    import numpy as np

    from dpbandit.agents.batched import choose_rows

    scores = np.array([[1.0, 3.0, 2.0], [5.0, 5.0, 1.0]])
    best, ties = np.array([1, 0]), np.array([1, 2])
    rngs = [np.random.default_rng(1), np.random.default_rng(2)]
    state0 = rngs[0].bit_generator.state
    arms = choose_rows(scores, best, ties, rngs)
    assert arms[0] == 1 and arms[1] in (0, 1) and rngs[0].bit_generator.state == state0
    with pytest.raises(ValueError, match="NaN"):
        choose_rows(np.array([[np.nan, 1.0]]), np.array([0]), np.array([0]), [np.random.default_rng(0)])
