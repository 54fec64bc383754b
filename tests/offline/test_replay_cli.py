"""``dpbandit replay`` after issue 26: static policies, estimator choice, intervals over the data, positions, the Open
Bandit Dataset layout, the whole log, one-line errors for the new flags."""

import numpy as np
import pandas as pd
import pytest

from dpbandit.experiment.cli import main
from dpbandit.experiment.replay_cli import ESTIMATOR_CHOICES, REWARD_MODEL_CHOICES
from dpbandit.offline import LoggedData
from dpbandit.offline.replay import ESTIMATORS
from dpbandit.offline.reward_model import REWARD_MODELS

N, K = 900, 3


@pytest.fixture(scope="module")
def log_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    context = rng.uniform(-1, 1, size=(N, 2))
    action = rng.integers(K, size=N)
    reward = (rng.random(N) < 0.3 + 0.2 * (action == 1)).astype(float)
    data = LoggedData(context, action, reward, K, pscore=np.full(N, 1 / K), position=np.arange(N) % 2)
    return data, data.write(tmp_path_factory.mktemp("log") / "log.csv")


def _rows(out):
    return {line.split()[0] + " " + line.split()[1]: line for line in out.splitlines()
            if line.strip().startswith(("uniform", "arm:1", "linucb"))}


def test_policies_estimators_positions_and_the_whole_log(log_file, tmp_path, capsys):
    data, path = log_file
    code = main(["replay", str(path), "--policy", "uniform", "--policy", "arm:1", "--agent", "linucb",
                 "--estimator", "ips", "--estimator", "dr", "--seeds", "1", "--horizon", "5",
                 "--out", str(tmp_path / "t.csv")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{N} logged rounds, K=3 actions (inferred as max(action) + 1" in out and "positions [0, 1]" in out
    assert "Pooled rows: pooled over positions: assumes" in out
    table = pd.read_csv(tmp_path / "t.csv")
    assert list(table["position"].astype(str).unique()) == ["0", "1", "pooled"]
    pooled = table[(table["agent"] == "uniform") & (table["position"].astype(str) == "pooled")].iloc[0]
    # uniform play on a uniform log: IPS is the log's mean reward over the whole log (every round counts), even
    # with --horizon 5, which limits only the rounds an agent learns from
    assert pooled["ips"] == pytest.approx(data.reward.mean()) and pooled["ips_ess"] == pytest.approx(N)
    assert pooled["ips_low"] < pooled["ips"] < pooled["ips_high"]
    linucb = table[table["agent"] == "linucb"]
    assert (linucb["accepted"] <= 5).all() and "replay" not in table.columns
    assert "nan" not in out.lower()


@pytest.mark.parametrize("argv, needle", [
    (["--policy", "arm:9"], "--policy 'arm:9': the arm must be an integer in [0, 3)"),
    (["--policy", "best"], "--policy must be 'uniform', 'arm:K' or a .npy file"),
    (["--policy", "missing.npy"], "--policy file 'missing.npy' is not a readable .npy array"),
    (["--policy", "uniform", "--folds", "1"], "--folds must be in [2, 20], got 1"),
    (["--policy", "uniform", "--clip", "nan"], "--clip must be > 0"),
    (["--policy", "uniform", "--horizon", "0"], "--horizon must be >= 1, got 0"),
    (["--policy", "uniform", "--estimator", "magic"], "argument --estimator: invalid choice: 'magic'"),
    ([], "name at least one agent or policy"),
])
def test_new_flags_fail_in_one_line(log_file, capsys, argv, needle):
    _, path = log_file
    try:
        code = main(["replay", str(path), *argv])
    except SystemExit as exc:  # argparse's usage errors exit from the parser
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("dpbandit replay: error:") and needle in err, err


def test_a_policy_file_of_the_wrong_shape_is_refused(log_file, tmp_path, capsys):
    _, path = log_file
    np.save(tmp_path / "pi.npy", np.full((N, 2), 0.5))
    assert main(["replay", str(path), "--policy", str(tmp_path / "pi.npy")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "shape (n_rounds, K) = (900, 3), got (900, 2)" in err


def test_an_open_bandit_dataset_campaign_file(tmp_path, capsys):
    rng = np.random.default_rng(1)
    n = 300
    folder = tmp_path / "random" / "all"
    folder.mkdir(parents=True)
    pd.DataFrame({"timestamp": np.arange(n).astype(str), "item_id": rng.integers(4, size=n),
                  "position": rng.integers(1, 4, size=n), "click": (rng.random(n) < 0.05).astype(int),
                  "propensity_score": np.full(n, 0.2), "user_feature_0": rng.choice(["a", "b", "c"], size=n)}
                 ).to_csv(folder / "all.csv")
    pd.DataFrame({"item_id": range(5), "item_feature_0": rng.normal(size=5)}).to_csv(folder / "item_context.csv")
    assert main(["replay", str(folder / "all.csv"), "--policy", "uniform", "--estimator", "ips"]) == 0
    out = capsys.readouterr().out
    assert "K=5 actions (Open Bandit Dataset: the items of item_context.csv)" in out and "positions [0, 1, 2]" in out


def test_the_cli_lists_every_estimator_and_reward_model():
    assert ESTIMATOR_CHOICES == ESTIMATORS and REWARD_MODEL_CHOICES == REWARD_MODELS
