"""Logged data: validation, Open Bandit Pipeline's bandit-feedback dict, files, logging a simulator."""

import gymnasium
import numpy as np
import pytest

import dpbandit.envs  # noqa: F401
from dpbandit.offline import LoggedData, log_policy, read_logged


def _log(n=50, k=3, d=2, seed=0, pscore=True):
    rng = np.random.default_rng(seed)
    return LoggedData(rng.normal(size=(n, d)), rng.integers(k, size=n), rng.random(n), k,
                      pscore=rng.uniform(0.1, 1.0, n) if pscore else None)


def _equal(a, b):
    assert (a.n_rounds, a.n_actions, a.dim) == (b.n_rounds, b.n_actions, b.dim)
    for name in ("context", "action", "reward", "pscore"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None and y is None) or np.array_equal(x, y), name


def test_obp_dict_layout_round_trips():
    data = _log()
    feedback = data.to_obp()
    assert set(feedback) == {"n_rounds", "n_actions", "action", "position", "reward", "pscore", "context",
                             "action_context"}
    assert feedback["n_rounds"] == 50 and feedback["n_actions"] == 3 and np.all(feedback["position"] == 0)
    assert feedback["context"].shape == (50, 2) and feedback["action_context"].shape == (3, 3)
    _equal(LoggedData.from_obp(feedback), data)
    # OBP's synthetic datasets add expected_reward and pi_b: kept as extras
    feedback.update(expected_reward=np.ones((50, 3)), pi_b=np.full((50, 3, 1), 1 / 3), position=None)
    again = LoggedData.from_obp(feedback)
    assert again.extra["expected_reward"].shape == (50, 3) and again.to_obp()["pi_b"].shape == (50, 3, 1)


@pytest.mark.parametrize("suffix", [".npz", ".csv", ".parquet"])
@pytest.mark.parametrize("pscore", [True, False])
def test_files_round_trip(tmp_path, suffix, pscore):
    data = _log(pscore=pscore)
    path = data.write(tmp_path / f"log{suffix}")
    _equal(read_logged(path, n_actions=3), data)


def test_table_columns_and_propensity_alias(tmp_path):
    frame = _log().to_frame().rename(columns={"pscore": "propensity"})
    frame.to_csv(tmp_path / "t.csv", index=False)
    data = read_logged(tmp_path / "t.csv")
    assert data.n_actions == int(frame["action"].max()) + 1 and np.allclose(data.pscore, frame["propensity"])


def test_invalid_logs_are_refused(tmp_path):
    n = 4
    ok = dict(context=np.zeros((n, 2)), action=[0, 1, 2, 0], reward=np.ones(n), n_actions=3)
    cases = [
        ({**ok, "action": [0, 1, 3, 0]}, r"action must lie in \[0, n_actions\) = \[0, 3\)"),
        ({**ok, "action": [0.5, 1, 2, 0]}, "action must be 4 integers"),
        ({**ok, "reward": [1, np.nan, 0, 0]}, "reward must be 4 finite numbers"),
        ({**ok, "pscore": [0.5, 0.0, 1, 1]}, r"pscore must be 4 probabilities in \(0, 1\]"),
        ({**ok, "context": np.full((n, 2), np.inf)}, "context must be finite"),
        ({**ok, "n_actions": 1}, "n_actions"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            LoggedData(**kwargs)
    feedback = LoggedData(**ok).to_obp()
    assert LoggedData.from_obp({**feedback, "position": np.array([0, 1, 0, 0])}).positions == [0, 1]
    with pytest.raises(ValueError, match="position must be 4 integers >= 0"):
        LoggedData.from_obp({**feedback, "position": np.array([0, -1, 0, 0])})
    with pytest.raises(ValueError, match="n_rounds = 5 does not match the 4 logged rounds"):
        LoggedData.from_obp({**feedback, "n_rounds": 5})
    with pytest.raises(ValueError, match=r"bandit feedback lacks \['reward'\]"):
        LoggedData.from_obp({k: v for k, v in feedback.items() if k != "reward"})
    with pytest.raises(ValueError, match="log file must end in"):
        read_logged(tmp_path / "log.json")
    (tmp_path / "bad.csv").write_text("action,score\n0,1\n")
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['reward'\]"):
        read_logged(tmp_path / "bad.csv")


def test_log_policy_records_uniform_play_with_the_truth():
    env = gymnasium.make("dpbandit/SparseLogistic-v0", n_arms=4, dim=3, sparsity=2, horizon=100, instance_seed=1)
    data = log_policy(env, 250, seed=2)  # spans three episodes
    assert data.uniform and data.n_rounds == 250 and data.n_actions == 4
    counts = np.bincount(data.action, minlength=4)
    assert counts.min() > 40  # uniform play: 62.5 per action expected
    assert set(np.unique(data.reward)) <= {0.0, 1.0}
    truth = data.extra["expected_reward"]
    assert truth.shape == (250, 4) and np.all((truth > 0) & (truth < 1))
    again = log_policy(env, 250, seed=2)
    _equal(again, data)  # seeded
    skewed = log_policy(env, 200, seed=2, policy=lambda obs, rng: np.array([0.7, 0.1, 0.1, 0.1]))
    assert not skewed.uniform and set(np.round(np.unique(skewed.pscore), 6)) <= {0.7, 0.1}


@pytest.mark.parametrize("name,content,message", [
    ("log.csv", "x,action,reward\n1,0,1\n2,buy,0\n",
     r"column 'action' of log file '.*log.csv' must hold numbers; row 1 holds 'buy'"),
    ("log.csv", "x,action,reward,pscore\n1,0,1,high\n2,1,0,0.5\n",
     r"column 'pscore' of log file '.*log.csv' must hold numbers; row 0 holds 'high'"),
    ("log.csv", "x,action,reward\n1,0,1\n2,,0\n", r"column 'action' of log file '.*log.csv' .* row 1 is empty"),
    ("log.csv", "x,action,reward\n1,0.5,1\n2,1,0\n",
     r"column 'action' of log file .* must hold integers >= 0 .* row 0 holds 0.5"),
    ("log.csv", "x,action,reward\n1,0,1\n2,1,nan\n", r"column 'reward' of log file .* row 1 is empty"),
    ("log.csv", "x,action,reward\nred,0,1\n2,1,0\n",
     r"context column 'x' of log file '.*log.csv' must hold numbers; row 0 holds 'red'"),
    ("log.csv", "x,action,reward,pscore\n1,0,1,0\n2,1,0,0.5\n",
     r"log file '.*log.csv': pscore must be 2 probabilities in \(0, 1\]"),
    ("log.csv", "", r"log file '.*log.csv' is empty"),
    ("log.csv", "x,action,reward\n", r"log file '.*log.csv' holds no rows"),
    ("log.csv", "action,reward\n0,1\n", r"log file '.*log.csv' has no context column"),
    ("log.npz", "hello\n", r"log file '.*log.npz' is not a NumPy .npz archive \(the bandit-feedback dict saved with "
                           r"numpy.savez\)$"),
    ("log.npz", "", r"log file '.*log.npz' is not a NumPy .npz archive"),
])
def test_a_log_file_that_cannot_be_used_names_the_file_and_the_column(tmp_path, name, content, message):
    """Before: "invalid literal for int() with base 10: 'buy'", "could not convert string to float: 'high'",
    "No columns to parse from file", numpy's "load it unsafely using allow_pickle" hint; now the file and column."""
    (tmp_path / name).write_text(content)
    with pytest.raises(ValueError if "must hold numbers" not in message else TypeError, match=message) as info:
        read_logged(tmp_path / name)
    assert "allow_pickle" not in str(info.value) and "\n" not in str(info.value)


def test_npz_logs_that_are_not_archives_of_plain_arrays(tmp_path):
    np.save(tmp_path / "one.npy", np.arange(3))
    (tmp_path / "one.npy").rename(tmp_path / "one.npz")
    with pytest.raises(ValueError, match=r"is not a NumPy .npz archive .*: it holds a single array \(.npy\)"):
        read_logged(tmp_path / "one.npz")
    np.savez(tmp_path / "objects.npz", context=np.array([{}], dtype=object))
    with pytest.raises(ValueError, match="holds object arrays .pickled data., which dpbandit never loads"):
        read_logged(tmp_path / "objects.npz")
    (tmp_path / "folder.npz").mkdir()
    with pytest.raises(ValueError, match=r"log file '.*folder.npz' is a folder"):
        read_logged(tmp_path / "folder.npz")
    np.savez(tmp_path / "words.npz", **{**{k: v for k, v in _log().to_obp().items() if v is not None},
                                        "context": np.full((50, 2), "x")})
    with pytest.raises(ValueError, match=r"log file '.*words.npz': array 'context' must hold numbers, got <U1 "
                                         r"values such as \['x'\]"):  # before: "could not convert string to float"
        read_logged(tmp_path / "words.npz")
    feedback = {k: v for k, v in _log().to_obp().items() if k != "reward" and v is not None}
    np.savez(tmp_path / "partial.npz", **feedback)
    with pytest.raises(ValueError, match=r"log file '.*partial.npz': bandit feedback lacks \['reward'\]"):
        read_logged(tmp_path / "partial.npz")
