"""Seaborn figures of experiment results (styles: :mod:`dpbandit.experiment.style`)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from dpbandit.experiment.results import regret_bands
from dpbandit.experiment.style import LEGEND_INSIDE_MAX, place_legend, series_styles

__all__ = ["plot_regret", "regret_figure", "save_figure", "PSEUDO_REGRET"]

#: The y label of bandit runs (pseudo-regret: best expected reward minus the chosen arm's expected reward).
PSEUDO_REGRET = "cumulative pseudo-regret"


def save_figure(fig: plt.Figure, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` (PNG, SVG, PDF by suffix) with a tight bounding box (outside legends included),
    close it and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_regret(frame: pd.DataFrame, path: str | Path, *, title: str | None = None, level: float = 0.95,
                ylabel: str = PSEUDO_REGRET, private: dict[str, bool] | None = None,
                facet: str = "env_id") -> Path:
    """Write :func:`regret_figure` of ``frame`` to ``path`` (PNG, SVG, PDF by suffix); returns the path."""
    return save_figure(regret_figure(frame, title=title, level=level, ylabel=ylabel, private=private, facet=facet),
                       path)


def regret_figure(frame: pd.DataFrame, *, title: str | None = None, level: float = 0.95,
                  ylabel: str = PSEUDO_REGRET, private: dict[str, bool] | None = None,
                  facet: str = "env_id") -> plt.Figure:
    """Mean cumulative regret against t per agent, with Student-t ``level`` confidence bands across seeds.

    ``frame`` is a tidy result table (:data:`dpbandit.experiment.results.COLUMNS`; ``env_id`` optional). One panel
    per value of ``facet`` (default: per environment); ``ylabel`` names the regret on the y axis (bandit runs: the
    pseudo-regret; OCO runs: the regret against the best point in hindsight). ``private`` (label -> whether the run
    is private, from its privacy report) draws the non-private series next to private ones as neutral references;
    uniform random play is always a reference (:mod:`dpbandit.experiment.style`). Returns the matplotlib figure
    (shown inline in notebooks).
    """
    if "env_id" not in frame.columns:
        frame = frame.assign(env_id="")
    if facet not in frame.columns:
        raise ValueError(f"facet must be a column of the results, got {facet!r}")
    panels = list(dict.fromkeys(frame[facet]))
    agents = list(dict.fromkeys(frame["agent"]))
    styles = series_styles(agents, private)
    legend_outside = len(agents) > LEGEND_INSIDE_MAX
    sns.set_theme(style="whitegrid", context="notebook")
    cols = min(len(panels), 3)
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.4 * cols + (3.2 if legend_outside else 0.0), 4.6 * rows),
                             squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        sub = frame[frame[facet] == panel].assign(env_id=str(panel))  # one curve per agent and panel
        bands = regret_bands(sub, level)
        seeds = sub.groupby("agent")["seed"].nunique()
        for agent in agents:
            b = bands[bands["agent"] == agent]
            if b.empty:
                continue
            style = styles[agent]
            width = 1.4 if style["reference"] else 1.8
            ax.plot(b["t"], b["mean"], color=style["color"], linestyle=style["linestyle"], linewidth=width,
                    label=f"{agent} (n={seeds[agent]})")
            ax.fill_between(b["t"], b["low"], b["high"], color=style["color"],
                            alpha=0.1 if style["reference"] else 0.18, linewidth=0)
        ax.set_xlabel("round t")
        ax.set_ylabel(ylabel)
        name = f"{facet} = {panel}" if facet != "env_id" else str(panel)
        ax.set_title(name if len(panels) > 1 else (title or name))
        if ax is axes.flat[0] or not legend_outside:
            place_legend(ax, len(agents))
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    if len(panels) > 1 and title:
        fig.suptitle(title)
    fig.text(0.99, 0.0, f"bands: {int(level * 100)}% CI across seeds", ha="right", va="bottom", fontsize="x-small")
    fig.tight_layout()
    return fig
