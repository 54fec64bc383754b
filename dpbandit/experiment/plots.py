"""Seaborn figures of experiment results."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from dpbandit.experiment.results import regret_bands

__all__ = ["plot_regret", "regret_figure", "PSEUDO_REGRET"]

#: The y label of bandit runs (pseudo-regret: best expected reward minus the chosen arm's expected reward).
PSEUDO_REGRET = "cumulative pseudo-regret"


def plot_regret(frame: pd.DataFrame, path: str | Path, *, title: str | None = None, level: float = 0.95,
                ylabel: str = PSEUDO_REGRET, labels: dict[str, str] | None = None) -> Path:
    """Write :func:`regret_figure` of ``frame`` to ``path`` (PNG, SVG, PDF by suffix); returns the path."""
    fig = regret_figure(frame, title=title, level=level, ylabel=ylabel, labels=labels)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def regret_figure(frame: pd.DataFrame, *, title: str | None = None, level: float = 0.95,
                  ylabel: str = PSEUDO_REGRET, labels: dict[str, str] | None = None) -> plt.Figure:
    """Mean cumulative regret against t per agent, with Student-t ``level`` confidence bands across seeds.

    ``frame`` is a tidy result table (:data:`dpbandit.experiment.results.COLUMNS`; ``env_id`` optional). One panel
    per environment; ``ylabel`` names the regret on the y axis (bandit runs: the pseudo-regret; OCO runs: the
    regret against the best point in hindsight). ``labels``: legend text per agent (e.g. with its guarantee and
    ε, :func:`~dpbandit.experiment.results.privacy_legend`). Pseudo-regret bands are clipped at 0 (it cannot be
    negative). Returns the matplotlib figure (shown inline in notebooks).
    """
    if "env_id" not in frame.columns:
        frame = frame.assign(env_id="")
    bands = regret_bands(frame, level, floor=0.0 if ylabel == PSEUDO_REGRET else None)
    labels = labels or {}
    envs = list(dict.fromkeys(frame["env_id"]))
    agents = list(dict.fromkeys(frame["agent"]))
    palette = dict(zip(agents, sns.color_palette("colorblind", len(agents))))
    seeds = frame.groupby("agent")["seed"].nunique()
    sns.set_theme(style="whitegrid", context="notebook")
    fig, axes = plt.subplots(1, len(envs), figsize=(7.5 * len(envs), 4.8), squeeze=False)
    for ax, env in zip(axes[0], envs):
        for agent in agents:
            b = bands[(bands["env_id"] == env) & (bands["agent"] == agent)]
            if b.empty:
                continue
            sns.lineplot(x=b["t"], y=b["mean"], ax=ax, color=palette[agent], label=f"{labels.get(agent, agent)} (n={seeds[agent]})")
            ax.fill_between(b["t"], b["low"], b["high"], color=palette[agent], alpha=0.2, linewidth=0)
        ax.set_xlabel("round t")
        ax.set_ylabel(ylabel)
        ax.set_title(env if len(envs) > 1 else (title or env))
        ax.legend(loc="upper left", fontsize="small")
    if len(envs) > 1 and title:
        fig.suptitle(title)
    fig.text(0.99, 0.01, f"bands: {int(level * 100)}% CI across seeds", ha="right", va="bottom", fontsize="x-small")
    fig.tight_layout()
    return fig
