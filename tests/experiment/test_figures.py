"""Figures (issue 12 item 3): distinct styles for many series, neutral references, the noise-off point apart from
the finite epsilons, long legends outside, and ``dpbandit plot`` on every run kind."""

from __future__ import annotations

import json
import math

import matplotlib.colors as mcolors
import pandas as pd
import pytest

from dpbandit.experiment.cli import main as cli_main
from dpbandit.experiment.frontier_report import RESULT_COLUMNS, frontier_figure, frontier_table
from dpbandit.experiment.plots import regret_figure
from dpbandit.experiment.replot import replot, run_kind
from dpbandit.experiment.style import PALETTE, REFERENCE_STYLES, series_styles


def _tidy(agents, seeds=2, env="e"):
    rows = []
    for k, agent in enumerate(agents):
        for seed in range(seeds):
            for t in (1, 10):
                rows.append(dict(env_id=env, agent=agent, seed=seed, t=t, reward=0.0, regret=0.0,
                                 cumulative_reward=0.0, cumulative_regret=float(t * (k + 1 + seed))))
    return pd.DataFrame(rows)


def _lines(fig):
    return [line for ax in fig.axes for line in ax.get_lines() if not line.get_label().startswith("_")]


def test_24_series_are_pairwise_distinct_and_colour_blind_safe():
    labels = [f"agent {i}" for i in range(36)]
    styles = series_styles(labels)
    pairs = {(s["color"], str(s["linestyle"])) for s in styles.values()}
    assert len(pairs) == 36
    assert {s["color"] for s in styles.values()} == set(PALETTE)


def test_random_and_non_private_references_have_fixed_neutral_styles():
    labels = ["DP-UCB (JDP ε=1)", "uniform random", "LinUCB (non-private)", "LASSO bandit (non-private)"]
    private = {"DP-UCB (JDP ε=1)": True}
    styles = series_styles(labels, private)
    assert styles["uniform random"]["color"] == "black" and styles["uniform random"]["reference"] == "random"
    assert styles["DP-UCB (JDP ε=1)"]["color"] in PALETTE
    for label in labels[2:]:
        assert styles[label]["reference"] == "non-private"
        r, g, b = mcolors.to_rgb(styles[label]["color"])
        assert r == g == b  # grey
    assert series_styles(["random", "linucb"])["linucb"]["reference"] is None  # no private series: ordinary
    many = series_styles([f"ref {i}" for i in range(8)] + ["p"], {"p": True})
    assert len({(s["color"], str(s["linestyle"])) for s in many.values()}) == 9
    assert sum(s["reference"] == "non-private" for s in many.values()) == 8 <= len(REFERENCE_STYLES["non-private"])


def test_regret_figure_with_24_series_draws_distinct_lines_and_an_outside_legend():
    fig = regret_figure(_tidy([f"learner {i}" for i in range(24)]))
    lines = _lines(fig)
    assert len(lines) == 24
    drawn = {(mcolors.to_hex(line.get_color()), repr(line._unscaled_dash_pattern)) for line in lines}
    assert len(drawn) == 24  # no two lines share colour and dash pattern
    assert fig.legends and len(fig.legends[0].get_texts()) == 24  # one legend, outside the panel
    assert not fig.axes[0].get_legend()
    short = regret_figure(_tidy(["a", "random"]))
    assert short.axes[0].get_legend() is not None and not short.legends


def test_28_series_with_references_keep_every_series_and_reference_distinguishable():
    """Issue 29 item 5: 20 private agents, two random-play series, an oracle and five non-private baselines. The
    first 13 agents have 13 colours; no two of the 28 drawn lines share colour and dash pattern; references never
    take a palette colour, and black dotted patterns belong to random play alone (an oracle is not dotted)."""
    agents = [f"private {i}" for i in range(20)]
    refs = ["uniform random (shared)", "uniform random (disjoint)", "oracle", "LinUCB", "greedy", "LASSO bandit",
            "egreedy", "ridge"]
    private = {**{a: True for a in agents}, **{r: False for r in refs}}
    styles = series_styles(refs[:3] + agents + refs[3:], private)
    assert len({styles[a]["color"] for a in agents[:13]}) == 13
    assert len({(st["color"], str(st["linestyle"])) for st in styles.values()}) == 28
    for r in refs:
        assert styles[r]["reference"] is not None and styles[r]["color"] not in PALETTE, r
        dotted = max(styles[r]["linestyle"][1][::2]) <= 1  # every "on" segment a dot
        assert dotted == (styles[r]["reference"] == "random") == r.startswith("uniform random"), r
    fig = regret_figure(_tidy(refs[:3] + agents + refs[3:]), private=private)
    drawn = {(mcolors.to_hex(line.get_color()), repr(line._unscaled_dash_pattern)) for line in _lines(fig)}
    assert len(drawn) == 28


def _frontier_results(seeds=2):
    finals = {("dp_ucb", 1.0): [92, 88], ("dp_ucb", 16.0): [41, 39], ("dp_ucb", math.inf): [11, 9],
              ("random", math.inf): [101, 99], ("linucb", math.inf): [6, 4]}
    rows = []
    for (agent, eps), values in finals.items():
        for seed, v in enumerate(values[:seeds]):
            for t, frac in ((50, 0.5), (100, 1.0)):
                rows.append({"env_id": "e", "agent": agent, "seed": seed, "t": t, "reward": 0.0, "regret": 0.0,
                             "cumulative_reward": 0.0, "cumulative_regret": v * frac, "epsilon": eps,
                             "horizon": 100, "role": "private" if agent == "dp_ucb" else "reference"})
    return pd.DataFrame(rows, columns=list(RESULT_COLUMNS))


def test_frontier_never_joins_noise_off_to_finite_epsilon():
    fig = frontier_figure(frontier_table(_frontier_results()))
    ax = fig.axes[0]
    (agent_line,) = [l for l in ax.get_lines() if l.get_label().startswith("dp_ucb")]
    assert list(agent_line.get_xdata()) == [1.0, 16.0]  # finite epsilons only
    x_inf = ax.get_xticks()[-1]
    assert x_inf > 16.0 and ax.get_xticklabels()[-1].get_text().startswith("inf")
    noise_off = [c for c in ax.containers if list(c.lines[0].get_xdata()) == [x_inf]]
    assert len(noise_off) == 1 and noise_off[0].lines[0].get_markerfacecolor() == "white"  # open marker
    random_line = [l for l in ax.get_lines() if l.get_label().startswith("uniform random")][0]
    assert random_line.get_color() == "black" and mcolors.to_hex(agent_line.get_color()) != "#000000"


def _write_run(tmp_path, name, frame, manifest):
    run = tmp_path / name
    run.mkdir()
    frame.to_csv(run / "results.csv", index=False)
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def test_plot_frontier_run_facets_by_epsilon_and_redraws_the_frontier(tmp_path, capsys):
    results = _frontier_results()
    run = _write_run(tmp_path, "frontier", results, {"status": "complete"})
    frontier_table(results).to_csv(run / "frontier.csv", index=False)
    assert run_kind(run) == "frontier"
    assert cli_main(["plot", str(run)]) == 0
    out = capsys.readouterr().out
    assert str(run / "regret.png") in out and str(run / "frontier.png") in out
    from dpbandit.experiment.replot import _frontier_panels

    frame, private = _frontier_panels(results)
    assert sorted(frame["panel"].unique()) == ["T = 100, ε = 1", "T = 100, ε = 16", "T = 100, ε = inf (noise off)"]
    for _, panel in frame.groupby("panel"):  # one epsilon per panel, the references in each
        assert panel.loc[panel["role"] == "private", "epsilon"].nunique() == 1
        assert set(panel.loc[panel["role"] == "reference", "agent"]) == {"random", "linucb"}
    assert private == {"dp_ucb": True, "random": False, "linucb": False}


def test_plot_every_run_kind_or_refuse_in_one_line(tmp_path, capsys):
    bandit = _write_run(tmp_path, "bandit", _tidy(["DP-UCB", "random"]),
                        {"privacy": {"e / DP-UCB": {"guarantee": "JDP"}, "e / random": None}})
    assert run_kind(bandit) == "bandit" and cli_main(["plot", str(bandit)]) == 0
    oco = _tidy(["pigd", "igd"]).rename(columns={"env_id": "stream", "agent": "learner"})
    oco_run = _write_run(tmp_path, "oco", oco, {"kind": "oco"})
    assert run_kind(oco_run) == "oco" and cli_main(["plot", str(oco_run), "--output", str(tmp_path / "o.png")]) == 0
    assert (tmp_path / "o.png").is_file()
    table = _write_run(tmp_path, "t51", pd.DataFrame({"T": [1]}), {"kind": "reproduce table-5.1"})
    other = tmp_path / "notes"
    other.mkdir()
    (other / "x.txt").write_text("mine")
    capsys.readouterr()
    (other / "results.csv").write_text("a,b\n1,2\n")  # somebody's own table
    for path, text in ((table, "is a table-5.1 reproduction"), (other, "was not written by dpbandit"),
                       (tmp_path / "missing", "has no results.csv")):
        assert cli_main(["plot", str(path)]) == 2
        err = capsys.readouterr().err
        assert text in err and err.count("\n") == 1 and "Traceback" not in err
    assert (other / "x.txt").read_text() == "mine"
    assert sorted(p.name for p in other.iterdir()) == ["results.csv", "x.txt"]  # nothing written into it
    with pytest.raises(ValueError, match="table-5.1"):
        replot(table)
