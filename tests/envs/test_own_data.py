"""Your own data as a bandit: arrays, data frames, CSV/parquet files, regression with a reward function."""

import warnings

import gymnasium
import numpy as np
import pandas as pd
import pytest
from gymnasium.utils.env_checker import check_env
from sklearn.datasets import load_wine

import dpbandit.envs  # noqa: F401
from dpbandit.agents import make_agent
from dpbandit.agents.private import reward_clip_range
from dpbandit.envs import ClassificationBanditEnv, RegressionBanditEnv
from dpbandit.envs.regression import regression_rewards
from dpbandit.experiment.config import load_config
from dpbandit.experiment.runner import run_experiment, simulate


def _play(env, seed, n):
    obs, _ = env.reset(seed=seed)
    out = []
    for t in range(n):
        nxt, reward, _, _, info = env.step(t % env.n_arms)
        out.append((obs.copy(), reward, info["regret"], info["optimal_arm"]))
        obs = nxt
    return out


def _same(a, b):
    assert len(a) == len(b)
    for (oa, ra, ga, ka), (ob, rb, gb, kb) in zip(a, b):
        assert np.array_equal(oa, ob) and (ra, ga, ka) == (rb, gb, kb)


def test_from_arrays_equals_the_bundled_dataset():
    x, y = load_wine(return_X_y=True)
    bundled = ClassificationBanditEnv(dataset="wine", horizon=200)
    own = ClassificationBanditEnv.from_arrays(x, y, horizon=200)
    assert own.config["data"] == "arrays" and bundled.config["dataset"] == "wine"
    assert own.constants == bundled.constants
    _same(_play(own, 4, 200), _play(bundled, 4, 200))


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(240, 3))
    label = np.array(["cat", "dog", "eel"])[np.argmax(x, axis=1)]
    return pd.DataFrame({"f0": x[:, 0], "f1": x[:, 1], "f2": x[:, 2], "animal": label})


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_dataframe_csv_parquet_and_toml_give_the_same_bandit(frame, tmp_path, suffix):
    path = tmp_path / f"users{suffix}"
    frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    reference = ClassificationBanditEnv.from_dataframe(frame, target="animal", horizon=150)
    assert list(reference.classes) == ["cat", "dog", "eel"] and reference.n_arms == 3 and reference.dim == 3
    from_file = gymnasium.make("dpbandit/Classification-v0", data=str(path), target="animal", horizon=150)
    _same(_play(from_file.unwrapped, 2, 150), _play(reference, 2, 150))
    (tmp_path / "exp.toml").write_text(
        f'name = "own"\nseeds = 2\n[env]\nid = "dpbandit/Classification-v0"\ndata = "{path.name}"\n'
        'target = "animal"\nhorizon = 150\n[[agents]]\ntype = "oracle"\n[[agents]]\ntype = "random"\n'
    )
    config = load_config(tmp_path / "exp.toml")  # the data path is resolved next to the TOML file
    assert config.envs[0].kwargs["data"] == str(path.resolve())
    summary = run_experiment(config, out=False, progress=False).summary.set_index("agent")
    assert summary.loc["oracle", "final_regret_mean"] == 0.0
    assert summary.loc["random", "final_regret_mean"] == pytest.approx(100.0, abs=20.0)  # 2/3 of 150


@pytest.mark.parametrize("norm,mode", [("l2", "scale"), ("linf", "scale"), ("l2", "clip"), ("linf", "clip")])
def test_contexts_obey_the_stated_bound_and_rewards_the_unit_range(frame, norm, mode):
    env = ClassificationBanditEnv.from_dataframe(frame, target="animal", horizon=240, context_norm=norm,
                                                 context_bound=0.5, normalize=mode)
    ord_ = 2 if norm == "l2" else np.inf
    sizes = np.linalg.norm(env.features, ord=ord_, axis=1)
    assert sizes.max() <= 0.5 + 1e-12
    if mode == "scale":
        np.testing.assert_allclose(sizes, 0.5)
    c = env.constants
    assert (c.context_norm, c.context_bound, c.reward_low, c.reward_high, c.noise_std) == (norm, 0.5, 0.0, 1.0, 0.0)
    clip = reward_clip_range(c)
    assert (clip.low, clip.high) == (0.0, 1.0)  # a private agent clips nothing and calibrates to [0, 1]


def test_private_agent_runs_on_own_data_and_linucb_learns(frame):
    env = ClassificationBanditEnv.from_dataframe(frame, target="animal", horizon=1500)
    with pytest.raises(ValueError, match="dp_ucb needs a finite theta_bound"):  # no model bound: refused, not random
        make_agent("dp_ucb", env, epsilon=1.0, delta=1e-5)
    bounded = ClassificationBanditEnv.from_dataframe(frame, target="animal", horizon=1500, theta_bound=2.0)
    dp = make_agent("dp_ucb", bounded, epsilon=1.0, delta=1e-5)
    assert bounded.constants.theta_bound == 2.0 and dp.cal.S == 2.0 and dp.privacy_report().guarantee == "JDP"
    simulate(bounded, dp, seed=0)
    linucb = simulate(env, make_agent("linucb", env, alpha=0.3), seed=0)["cumulative_regret"].iloc[-1]
    random = simulate(env, make_agent("random", env), seed=0)["cumulative_regret"].iloc[-1]
    assert random > 900 and linucb < 0.3 * random, (linucb, random)


def test_regression_rewards_known_answers():
    y = np.array([0.0, 1.0, 2.0, 4.0])
    r = regression_rewards(np.array([0.0, 2.0]), y, "absolute")
    np.testing.assert_allclose(r, [[1, 0.5], [0.75, 0.75], [0.5, 1], [0, 0.5]])
    np.testing.assert_allclose(regression_rewards(np.array([0.0, 2.0]), y, "squared")[:, 0], [1, 15 / 16, 0.75, 0])
    env = RegressionBanditEnv.from_arrays(np.arange(8.0)[:, None], np.repeat(y, 2), arms=[0.0, 2.0], horizon=30)
    np.testing.assert_allclose(env.candidates, [0, 2])
    obs, _ = env.reset(seed=1)
    for _ in range(30):
        means = env.expected_rewards(obs)
        obs, reward, _, _, info = env.step(0)
        assert reward == info["mean_rewards"][0] and info["regret"] == pytest.approx(means.max() - means[0])


def test_regression_default_arms_quantiles_and_custom_reward(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 2))
    y = 3 * x[:, 0] + 0.1 * rng.normal(size=400)
    env = RegressionBanditEnv.from_arrays(x, y, n_arms=4, horizon=10)
    np.testing.assert_allclose(env.candidates, np.quantile(y, [0.125, 0.375, 0.625, 0.875]))
    assert env.rewards.min() >= 0 and env.rewards.max() <= 1 and env.constants.n_arms == 4
    pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "price": y}).to_csv(tmp_path / "r.csv", index=False)
    made = gymnasium.make("dpbandit/Regression-v0", data=str(tmp_path / "r.csv"), target="price", n_arms=4,
                          reward="squared", horizon=10).unwrapped
    np.testing.assert_allclose(made.candidates, env.candidates)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gymnasium.make("dpbandit/Diabetes-v0", horizon=40).unwrapped)
    env = RegressionBanditEnv.from_arrays(x, y, n_arms=3, reward=lambda c, t: np.full((t.size, c.size), 0.5))
    assert np.all(env.rewards == 0.5)
    with pytest.raises(ValueError, match=r"reward function must return values in \[0, 1\]"):
        RegressionBanditEnv.from_arrays(x, y, reward=lambda c, t: np.full((t.size, c.size), 2.0))
    with pytest.raises(ValueError, match="reward must be one of"):
        RegressionBanditEnv.from_arrays(x, y, reward="huber")
    with pytest.raises(ValueError, match="candidate predictions must be distinct"):
        RegressionBanditEnv.from_arrays(x, np.zeros(400), n_arms=3)


def test_invalid_data_is_refused_with_the_parameter_named(frame, tmp_path):
    x = np.ones((5, 2))
    cases = [
        (dict(X=np.array([[1.0, np.nan], [0, 1]]), y=[0, 1]), ValueError, "X must be finite"),
        (dict(X=x, y=[0, 1]), ValueError, "y must be 1-D with one entry per row of X"),
        (dict(X=x, y=[1] * 5), ValueError, "at least 2 classes"),
        (dict(X=np.ones(5), y=[0, 1] * 2 + [0]), ValueError, "X must be a 2-D array"),
        (dict(X=[["a", "b"]], y=[0]), TypeError, "X must be a 2-D array of numbers"),
        (dict(X=x, y=[0, 1, None, 0, 1]), ValueError, "y has 1 missing value"),
        (dict(X=x), ValueError, "X and y must be given together"),
        (dict(X=x, y=[0, 1] * 2 + [0], dataset="wine"), ValueError, "give one data source"),
        (dict(data=str(tmp_path / "none.csv"), target="a"), ValueError, "does not exist"),
        (dict(data=str(tmp_path / "users.xlsx"), target="a"), ValueError, r"data file must be a path ending in \.csv"),
        (dict(data=5, target="a"), TypeError, "data file must be a path to a .csv or .parquet file, got 5"),
        (dict(data=str(tmp_path), target="a"), ValueError, "is a folder, not a"),
        (dict(data=str(tmp_path / "u.csv")), ValueError, "data needs target="),
        (dict(target="a"), ValueError, "give data="),
        (dict(dataset="mnist"), ValueError, "dataset"),
        (dict(render_mode="human"), ValueError, "render_mode must be None"),
    ]
    for kwargs, exc, message in cases:
        with pytest.raises(exc, match=message):
            ClassificationBanditEnv(**kwargs)
    with pytest.raises(ValueError, match="target 'kind' is not a column"):
        ClassificationBanditEnv.from_dataframe(frame, target="kind")
    with pytest.raises(TypeError, match="feature column 'name' of the data frame must hold numbers; row 0 holds 'x'"):
        ClassificationBanditEnv.from_dataframe(frame.assign(name="x"), target="animal")
    with pytest.raises(ValueError, match="Classification-v0 needs your data"):
        gymnasium.make("dpbandit/Classification-v0")


def test_every_registered_id_accepts_render_mode_none():
    for env_id in dpbandit.envs.registered_envs():
        kwargs = {"X": np.eye(4), "y": [0, 1, 2, 3]} if env_id.endswith(("Classification-v0", "Regression-v0")) else {}
        env = gymnasium.make(env_id, render_mode=None, horizon=5, **kwargs)
        assert env.render_mode is None


def test_an_edited_data_file_is_a_different_experiment(frame, tmp_path):
    """Resuming after the data file changed would mix jobs computed on two datasets: it is refused (the hash covers
    the file's contents), and the unchanged file resumes."""
    from dpbandit.experiment.config import AgentSpec, ExperimentConfig

    path = tmp_path / "users.csv"
    frame.to_csv(path, index=False)
    config = ExperimentConfig(env_id="dpbandit/Classification-v0",
                              env_kwargs={"data": str(path), "target": "animal", "horizon": 50},
                              agents=(AgentSpec("random"),), seeds=2, name="own")
    run_experiment(config, out=tmp_path / "runs", progress=False)
    assert run_experiment(config, out=tmp_path / "runs", progress=False).resumed_jobs == 2
    frame.iloc[::-1].to_csv(path, index=False)  # same rows, another order: other users per round
    with pytest.raises(ValueError, match="different experiment"):
        run_experiment(config, out=tmp_path / "runs", progress=False)
    from dpbandit.experiment.config import config_digest

    no_file = config.replace(env_id="dpbandit/SparseLinear-v0", env_kwargs={"horizon": 50})
    from dpbandit.seeding import STREAM_LAYOUT

    unchanged = {k: v for k, v in no_file.to_dict().items() if k not in ("n_jobs", "batch", "out")}
    unchanged["stream_layout"] = STREAM_LAYOUT  # (added in 0.2.0, with the new layout)
    assert no_file.config_hash() == config_digest(unchanged)  # without data files: the configuration and layout


@pytest.mark.parametrize("text,exc,message", [
    ("f0,f1,animal\n1,x,cat\n2,y,dog\n", TypeError,
     r"feature column 'f1' of data file '.*users.csv' must hold numbers; row 0 holds 'x'"),
    ("f0,f1,animal\n1,2,cat\n2,high,dog\n", TypeError, r"feature column 'f1' of data file .* row 1 holds 'high'"),
    ("f0,f1,animal\n", ValueError, r"data file '.*users.csv' holds no rows \(only the header line"),
    ("", ValueError, r"data file '.*users.csv' is empty"),
    ("f0,f1,animal\n1,2,cat\n1,2,3,4\n", ValueError,
     r"data file '.*users.csv' cannot be read as a CSV table: Error tokenizing data. C error: Expected 3 fields"),
    ("f0,f1,animal\n1,,cat\n2,3,dog\n", ValueError, r"feature column 'f1' of data file .* row 0 is empty"),
    ("f0,f1,animal\n1,inf,cat\n2,3,dog\n", ValueError, r"feature column 'f1' of data file .* row 0 holds inf"),
    ("f0,f1,animal\n1,2,cat\n2,3,\n", ValueError, r"target column 'animal' of data file .* has 1 missing value"),
    ("animal\ncat\ndog\n", ValueError, r"data file '.*users.csv' has no feature column"),
    ("f0,animal\n1,cat\n2,cat\n", ValueError,
     r"labels \(target column 'animal' of data file '.*users.csv'\) must hold at least 2 classes"),
])
def test_a_data_file_that_cannot_be_used_names_the_file_and_the_column(tmp_path, text, exc, message):
    """Before: pandas' own words ("No columns to parse from file", "could not convert string to float") or, through
    gymnasium.make, "needs your data" although data= was given; now the file, the column and the row."""
    path = tmp_path / "users.csv"
    path.write_text(text)
    with pytest.raises(exc, match=message):
        ClassificationBanditEnv(data=str(path), target="animal")
    from dpbandit.experiment.config import make_env

    with pytest.raises(exc, match=message):  # the same words through gymnasium.make (TOML, dpbandit run)
        make_env("dpbandit/Classification-v0", data=str(path), target="animal")


def test_a_file_that_is_not_parquet_or_not_utf8_names_the_file(tmp_path):
    (tmp_path / "users.parquet").write_text("f0,animal\n1,cat\n")
    with pytest.raises(ValueError, match=r"data file '.*users.parquet' cannot be read as a parquet file: "):
        ClassificationBanditEnv(data=str(tmp_path / "users.parquet"), target="animal")
    (tmp_path / "users.csv").write_bytes(b"\xff\xfe\x00f0,animal\n\x80,1\n")
    with pytest.raises(ValueError, match=r"data file '.*users.csv' is not a CSV table: it is not UTF-8 text"):
        ClassificationBanditEnv(data=str(tmp_path / "users.csv"), target="animal")


def test_regression_targets_name_the_column_and_the_row(tmp_path):
    path = tmp_path / "houses.csv"
    path.write_text("rooms,price\n3,100\n4,high\n5,120\n")
    with pytest.raises(TypeError, match=r"targets \(target column 'price' of data file '.*houses.csv'\) must be "
                                        r"numbers; row 1 holds 'high'"):
        RegressionBanditEnv(data=str(path), target="price")
    with pytest.raises(ValueError, match=r"targets \(y\) must be finite numbers; row 2 holds inf"):
        RegressionBanditEnv.from_arrays(np.ones((3, 1)), [1.0, 2.0, np.inf])


def _own_data_envs():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(60, 4))
    x[30:] = x[:30]  # equal features, different labels and targets: the oracle must still play as step does
    return [ClassificationBanditEnv.from_arrays(x, rng.integers(3, size=60), horizon=2500, theta_bound=1.0),
            RegressionBanditEnv.from_arrays(x, rng.normal(size=60), n_arms=4, horizon=2500, theta_bound=1.0),
            ClassificationBanditEnv(dataset="wine", horizon=1030, theta_bound=1.0)]


@pytest.mark.parametrize("agent", ["random", "oracle", "greedy", "egreedy", "linucb", "dp_ucb", "dp_hdb"])
def test_own_data_blocks_give_the_step_loops_numbers_bit_for_bit(agent):
    from dpbandit.agents.base import plays_blocks
    from dpbandit.experiment.batch import simulate_batch
    from dpbandit.experiment.config import AgentSpec, EnvSpec
    from dpbandit.experiment.loop import block_source, play_steps

    for env in _own_data_envs():
        a = make_agent(agent, env)
        assert block_source(env) is env and plays_blocks(a)
        for checkpoints in (None, 9):
            assert simulate(env, a, 5, checkpoints).equals(play_steps(env, a, 5, checkpoints))
    spec = EnvSpec("dpbandit/Wine-v0", {"horizon": 1500, "theta_bound": 1.0})
    for seed, frame in zip([1, 2], simulate_batch(spec, AgentSpec(agent), [1, 2], checkpoints=11)):
        single = gymnasium.make(spec.id, **spec.kwargs)
        assert frame.equals(play_steps(single, make_agent(agent, single), seed, 11))


def test_take_block_hands_out_the_rounds_step_serves():
    env = ClassificationBanditEnv(dataset="wine", horizon=1500)
    obs, _ = env.reset(seed=3)
    served = [obs]
    for t in range(1500):
        obs, reward, _, truncated, info = env.step(t % 3)
        served.append((info["mean_rewards"], info["regret"]))
    env.reset(seed=3)
    env.step(0)
    first = env.take_block()  # from round 2 to the end of the first block of rows
    second = env.take_block()
    assert (first.first, first.n, second.first, second.n) == (2, 1023, 1025, 476)
    with pytest.raises(RuntimeError, match="take_block"):
        env.take_block()
    means = np.concatenate([first.means, second.means])
    assert np.array_equal(means, np.array([m for m, _ in served[2:]]))
    assert np.array_equal(np.concatenate([first.best, second.best]) - means[np.arange(1499), np.arange(1, 1500) % 3],
                          np.array([g for _, g in served[2:]]))
    assert not first.obs.flags.writeable and not first.best.flags.writeable
