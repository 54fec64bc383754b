"""The frontier's tables and figure: final regret per (agent, epsilon, horizon), the first epsilon that beats uniform
random play by a factor (lower bound of a paired-bootstrap interval over seeds), and the regret-against-epsilon
plot (``dpbandit.experiment.frontier`` runs the sweep).

Input: the sweep's tidy table with :data:`RESULT_COLUMNS` (the runner's
:data:`~dpbandit.experiment.results.COLUMNS` plus ``epsilon``, ``horizon`` and ``role``, "private" or "reference").
Epsilon ``inf`` means noise off; it is printed "inf" and drawn at the right end of the log axis.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from dpbandit.experiment.results import COLUMNS, mean_ci
from dpbandit.experiment.stats import BOOTSTRAP_MIN_SEEDS, ratio_interval
from dpbandit.experiment.style import place_legend, series_styles

__all__ = ["RESULT_COLUMNS", "epsilon_text", "frontier_table", "final_regrets", "first_epsilon_beating",
           "beating_lines", "frontier_figure", "plot_frontier"]

RESULT_COLUMNS = (*COLUMNS, "epsilon", "horizon", "role")


def epsilon_text(eps: float) -> str:
    """``"inf"`` for noise off, else ``f"{eps:g}"`` (labels, file names, manifests)."""
    return "inf" if math.isinf(eps) else f"{eps:g}"


def frontier_table(results: pd.DataFrame, reports: Mapping | None = None, level: float = 0.95) -> pd.DataFrame:
    """Final cumulative regret per (agent, role, epsilon, horizon): mean, Student-t CI half-width, std, seeds.

    ``results`` has :data:`RESULT_COLUMNS`; ``reports`` (optional) maps (agent, epsilon, horizon) to the privacy
    report whose guarantee, accounted epsilon and delta are added.
    """
    last = results[results["t"] == results["horizon"]]
    rows = []
    for (agent, role, eps, T), g in last.groupby(["agent", "role", "epsilon", "horizon"], sort=False):
        values = g["cumulative_regret"].to_numpy()
        mean, half = mean_ci(values, level)
        report = (reports or {}).get((agent, eps, T))
        rows.append({
            "agent": agent, "role": role, "epsilon": float(eps), "horizon": int(T), "seeds": int(values.size),
            "final_regret_mean": mean, "final_regret_ci95": half,
            "final_regret_std": float(values.std(ddof=1)) if values.size > 1 else 0.0,
            "guarantee": report.guarantee if report is not None else "none",
            "reported_epsilon": report.epsilon if report is not None else math.inf,
            "delta": report.delta if report is not None else 0.0,
        })
    table = pd.DataFrame(rows)
    return table.sort_values(["horizon", "role", "agent", "epsilon"], kind="stable").reset_index(drop=True)


def final_regrets(results: pd.DataFrame) -> pd.DataFrame:
    """Final cumulative regret per seed: a table indexed by (horizon, seed) with one column per (agent, epsilon)
    (references under epsilon inf)."""
    last = results[results["t"] == results["horizon"]]
    return last.pivot_table(index=["horizon", "seed"], columns=["agent", "epsilon"], values="cumulative_regret")


def first_epsilon_beating(results: pd.DataFrame, factor: float = 2.0, reference: str = "random", *,
                          level: float = 0.95, n_boot: int = 10_000) -> pd.DataFrame:
    """Per (private agent, horizon): the smallest finite epsilon (noise off, epsilon = inf, is no private result and
    never counts) at which the agent beats ``reference`` by ``factor`` —
    the *lower* bound of the paired-bootstrap ``level`` interval of the ratio reference/agent of mean final regrets
    (:func:`dpbandit.experiment.stats.ratio_interval`, resampling seeds) is at least ``factor`` (NaN if no epsilon
    of the grid qualifies).

    ``results`` is the sweep's tidy table (:data:`RESULT_COLUMNS`, one value per seed). Columns: agent, horizon,
    factor, epsilon, ratio_at_epsilon, ratio_low, ratio_high (at that epsilon), seeds, point_epsilon (the smallest
    epsilon whose point ratio reaches ``factor``, interval or not: where it differs from ``epsilon`` the mean alone
    would overclaim) and ``<reference>_regret`` (mean). With fewer than
    :data:`~dpbandit.experiment.stats.BOOTSTRAP_MIN_SEEDS` seeds no epsilon qualifies (too few resamples).
    """
    if "seed" not in results.columns:
        raise ValueError("first_epsilon_beating needs the per-seed results (RESULT_COLUMNS), not the frontier table")
    finals = final_regrets(results)
    roles = results.drop_duplicates("agent").set_index("agent")["role"]
    if reference not in roles.index or roles[reference] != "reference":
        raise ValueError(f"reference agent {reference!r} is not in the frontier results")
    rows = []
    for T, tab in finals.groupby(level="horizon", sort=True):
        ref = tab[(reference, math.inf)].dropna()
        for agent in [a for a in dict.fromkeys(results["agent"]) if roles[a] == "private"]:
            row = {"agent": agent, "horizon": int(T), "factor": factor, "epsilon": math.nan,
                   "ratio_at_epsilon": math.nan, "ratio_low": math.nan, "ratio_high": math.nan, "seeds": 0,
                   "point_epsilon": math.nan}
            for eps in sorted(e for a, e in tab.columns if a == agent and math.isfinite(e)):  # noise off: no claim
                values = tab[(agent, eps)].dropna()
                row["seeds"] = max(row["seeds"], int(values.size))
                if values.mean() <= 0:
                    continue
                interval = ratio_interval(ref, values, level=level, n_boot=n_boot)
                if interval.n < BOOTSTRAP_MIN_SEEDS:  # no claim from a bootstrap over too few seeds
                    interval = dataclasses.replace(interval, low=math.nan, high=math.nan)
                if math.isnan(row["point_epsilon"]) and interval.estimate >= factor:
                    row["point_epsilon"] = float(eps)
                if interval.determined and interval.low >= factor:
                    row.update(epsilon=float(eps), ratio_at_epsilon=interval.estimate, ratio_low=interval.low,
                               ratio_high=interval.high, seeds=interval.n)
                    break
            row[f"{reference}_regret"] = float(ref.mean())
            rows.append(row)
    return pd.DataFrame(rows)


def beating_lines(beats: pd.DataFrame, results: pd.DataFrame, reference: str = "random", *,
                  level: float = 0.95) -> list[str]:
    """The printed verdicts of :func:`first_epsilon_beating`, one line per (agent, horizon), each with its interval;
    where the point ratio reaches the factor earlier than its interval's lower bound, that epsilon's interval too."""
    finals = final_regrets(results)
    lines = []
    for row in beats.to_dict("records"):
        factor, head = row["factor"], f"{row['agent']} at T = {row['horizon']}"
        if not math.isnan(row["epsilon"]):
            text = (f"{head}: first beats uniform {reference} by {factor:g}x at epsilon = "
                    f"{epsilon_text(row['epsilon'])}: ratio {reference}/agent {row['ratio_at_epsilon']:.3g} "
                    f"[{row['ratio_low']:.3g}, {row['ratio_high']:.3g}] ({level:.0%} paired bootstrap over "
                    f"{row['seeds']} seeds; lower bound >= {factor:g})")
        else:
            text = f"{head}: not shown to beat uniform {reference} by {factor:g}x at any finite epsilon of the grid"
            if row["seeds"] < BOOTSTRAP_MIN_SEEDS:
                text += (f" (undetermined: {row['seeds']} seeds; the bootstrap interval of the ratio needs >= "
                         f"{BOOTSTRAP_MIN_SEEDS})")
        if not math.isnan(row["point_epsilon"]) and row["point_epsilon"] != row["epsilon"]:
            tab = finals.xs(row["horizon"], level="horizon")
            point = ratio_interval(tab[(reference, math.inf)], tab[(row["agent"], row["point_epsilon"])], level=level)
            text += f"; the mean ratio reaches {factor:g}x at epsilon = {epsilon_text(row['point_epsilon'])} "
            text += (f"({point}), but its interval does not exclude less" if point.n >= BOOTSTRAP_MIN_SEEDS
                     else f"({point.estimate:.4g}, {point.n} seeds: no interval)")
        lines.append(text)
    return lines


def plot_frontier(frontier: pd.DataFrame, path: str | Path, *, title: str | None = None, **options) -> Path:
    """Write :func:`frontier_figure` to ``path`` through the output layer (``options``:
    :func:`dpbandit.files.write_atomic`'s); returns the path written."""
    from dpbandit.files import save_figure

    return save_figure(frontier_figure(frontier, title=title), path, **options)


def frontier_figure(frontier: pd.DataFrame, *, title: str | None = None):
    """Final regret against epsilon (log x), one panel per horizon. Finite epsilons are joined by a line with its CI
    band; the noise-off run (epsilon = inf) is a separate open marker with its CI bar right of a dotted separator,
    never joined to the finite points; the references are horizontal lines in their neutral style
    (:mod:`dpbandit.experiment.style`) with light bands. Returns the matplotlib figure."""
    from dpbandit.experiment.plots import plt, sns  # the Agg backend is selected there

    horizons = sorted(frontier["horizon"].unique())
    priv = frontier[frontier["role"] == "private"]
    finite = sorted(e for e in priv["epsilon"].unique() if math.isfinite(e))
    has_inf = bool((~np.isfinite(priv["epsilon"])).any())
    x_inf = (max(finite) if finite else 1.0) * 4.0
    ticks = [*finite, *([x_inf] if has_inf else [])]
    agents = list(dict.fromkeys(frontier["agent"]))
    roles = dict(zip(frontier["agent"], frontier["role"]))
    styles = series_styles(agents, {a: roles[a] == "private" for a in agents})
    guarantee = next((g for g in priv["guarantee"] if g != "none"), "JDP")
    sns.set_theme(style="whitegrid", context="notebook")  # one legend, outside the panels (never over a line)
    fig, axes = plt.subplots(1, len(horizons), figsize=(5.8 * len(horizons) + 3.0, 4.8), squeeze=False)
    for ax, T in zip(axes[0], horizons):
        tab = frontier[frontier["horizon"] == T]
        means = tab["final_regret_mean"].to_numpy()
        floor = max(float(means[means > 0].min()) / 3.0 if (means > 0).any() else 1e-3, 1e-3)  # log-axis bottom
        for agent, g in tab[tab["role"] == "private"].groupby("agent", sort=False):
            st = styles[agent]
            n = int(g["seeds"].min())
            fin = g[np.isfinite(g["epsilon"])].sort_values("epsilon")
            m, h = fin["final_regret_mean"].to_numpy(), fin["final_regret_ci95"].to_numpy()
            ax.plot(fin["epsilon"], np.maximum(m, floor), marker=st["marker"], color=st["color"],
                    linestyle=st["linestyle"], label=f"{agent} (n={n})")
            ax.fill_between(fin["epsilon"], np.maximum(m - h, floor), m + h, color=st["color"], alpha=0.18,
                            linewidth=0)
            off = g[~np.isfinite(g["epsilon"])]
            if len(off):
                m0, h0 = float(off["final_regret_mean"].iloc[0]), float(off["final_regret_ci95"].iloc[0])
                ax.errorbar([x_inf], [max(m0, floor)], yerr=[[max(m0, floor) - max(m0 - h0, floor)], [h0]],
                            fmt=st["marker"], mfc="white", mec=st["color"], ecolor=st["color"], capsize=3,
                            markersize=7)
        for _, r in tab[tab["role"] == "reference"].iterrows():
            st = styles[r["agent"]]
            m, h = r["final_regret_mean"], r["final_regret_ci95"]
            label = ("uniform random" if st["reference"] == "random" else f"{r['agent']} (non-private)") + \
                f" (n={int(r['seeds'])})"
            ax.axhline(max(m, floor), color=st["color"], linestyle=st["linestyle"], linewidth=1.3, label=label)
            ax.axhspan(max(m - h, floor), max(m + h, floor), color=st["color"], alpha=0.08, linewidth=0)
        if has_inf and finite:
            ax.axvline(math.sqrt(max(finite) * x_inf), color="0.5", linestyle=":", linewidth=1.0)
        ax.set_ylim(bottom=floor)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(ticks)
        ax.set_xticklabels([epsilon_text(e) for e in finite] + (["inf\n(noise off)"] if has_inf else []))
        ax.minorticks_off()
        ax.set_xlabel(f"{guarantee} ε (open markers: noise off, no guarantee)" if has_inf else f"{guarantee} ε")
        ax.set_ylabel("final cumulative regret (95% CI)")
        deltas = sorted(set(tab.loc[tab["guarantee"] != "none", "delta"]))
        ax.set_title(f"T = {T:,}" + (f", δ = {deltas[0]:.3g}" if len(deltas) == 1 else ""))
    place_legend(axes[0][-1], len(agents), outside=True)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
