import pytest

from dpbandit.experiment.cli import main


def _write_config(tmp_path, body=None):
    path = tmp_path / "exp.toml"
    path.write_text(
        body
        or 'name = "cli"\nseeds = 2\nn_jobs = 1\ncheckpoints = 10\n'
        '[env]\nid = "dpbandit/SparseLinear-v0"\nhorizon = 100\n'
        '[[agents]]\ntype = "random"\n[[agents]]\ntype = "linucb"\nalpha = 0.5\n'
    )
    return path


def test_run_prints_where_table_and_plot_went(tmp_path, capsys):
    config = str(_write_config(tmp_path))
    assert main(["run", "--config", config, "--out", str(tmp_path / "runs"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    table_line = next(line for line in out.splitlines() if line.startswith("Results table:"))
    plot_line = next(line for line in out.splitlines() if line.startswith("Regret plot:"))
    table = table_line.split(":", 1)[1].strip()
    plot = plot_line.split(":", 1)[1].strip()
    assert table.endswith("results.csv") and plot.endswith("regret.png")
    assert "linucb" in out and "random" in out
    run_dir = (tmp_path / "runs").iterdir().__next__()
    assert main(["plot", str(run_dir), "--output", str(tmp_path / "again.png")]) == 0
    assert (tmp_path / "again.png").stat().st_size > 1000


def test_overrides_apply(tmp_path, capsys):
    args = ["run", "--config", str(_write_config(tmp_path)), "--out", str(tmp_path), "--seeds", "1", "--horizon", "30"]
    assert main(args + ["--no-progress"]) == 0
    import pandas as pd

    run_dir = next(p for p in tmp_path.iterdir() if p.is_dir())
    table = pd.read_csv(run_dir / "results.csv")
    assert table["t"].max() == 30 and set(table["seed"]) == {0}


def test_malformed_toml_is_a_clear_error(tmp_path, capsys):
    path = _write_config(tmp_path, "name = [\n")
    assert main(["run", "--config", str(path)]) == 2
    assert "not valid TOML" in capsys.readouterr().err


def test_envs_and_agents_listings(capsys):
    assert main(["envs"]) == 0
    out = capsys.readouterr().out
    assert "dpbandit/SparseLinear-v0" in out and "dpbandit/HanFigure51-K2-v0" in out
    assert main(["agents"]) == 0
    out = capsys.readouterr().out
    for name in ("random", "oracle", "greedy", "egreedy", "linucb", "lasso"):
        assert name in out


def test_help_mentions_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "run" in out and "plot" in out and "envs" in out


def test_bad_plot_dir(tmp_path, capsys):
    assert main(["plot", str(tmp_path)]) == 2
    assert "results.csv" in capsys.readouterr().err
