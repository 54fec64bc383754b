"""Seaborn figures of experiment results (styles: :mod:`dpbandit.experiment.style`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from dpbandit.files import save_figure
from dpbandit.experiment.results import regret_bands
from dpbandit.experiment.style import LEGEND_INSIDE_MAX, place_legend, series_styles

__all__ = ["plot_regret", "regret_figure", "save_figure", "PSEUDO_REGRET"]

#: The y label of bandit runs (pseudo-regret: best expected reward minus the chosen arm's expected reward).
PSEUDO_REGRET = "cumulative pseudo-regret"


def plot_regret(frame: pd.DataFrame, path: str | Path, *, title: str | None = None, level: float = 0.95,
                ylabel: str = PSEUDO_REGRET, private: dict[str, bool] | None = None,
                facet: str = "env_id", labels: dict[str, str] | None = None, **options: Any) -> Path:
    """Write :func:`regret_figure` of ``frame`` to ``path`` (PNG, SVG, PDF by suffix) through the output layer
    (:func:`dpbandit.files.save_figure`, which takes ``options``); returns the path written."""
    return save_figure(regret_figure(frame, title=title, level=level, ylabel=ylabel, private=private, facet=facet,
                                     labels=labels), path, **options)


def regret_figure(frame: pd.DataFrame, *, title: str | None = None, level: float = 0.95,
                  ylabel: str = PSEUDO_REGRET, private: dict[str, bool] | None = None,
                  facet: str = "env_id", labels: dict[str, str] | None = None) -> plt.Figure:
    """Mean cumulative regret against t per agent, with Student-t ``level`` confidence bands across seeds.

    ``frame`` is a tidy result table (:data:`dpbandit.experiment.results.COLUMNS`; ``env_id`` optional). One panel
    per value of ``facet`` (default: per environment); ``ylabel`` names the regret on the y axis (bandit runs: the
    pseudo-regret; OCO runs: the regret against the best point in hindsight). ``private`` (label -> whether the run
    is private, from its privacy report) draws the non-private series next to private ones as neutral references;
    uniform random play is always a reference (:mod:`dpbandit.experiment.style`). ``labels``: legend text per
    agent (e.g. its guarantee and ε, :func:`~dpbandit.experiment.results.privacy_legend`). Pseudo-regret bands are
    clipped at 0 (it cannot be negative). Returns the matplotlib figure (shown inline in notebooks).
    """
    labels = labels or {}
    if "env_id" not in frame.columns:
        frame = frame.assign(env_id="")
    if facet not in frame.columns:
        raise ValueError(f"facet must be a column of the results, got {facet!r}")
    panels = list(dict.fromkeys(frame[facet]))
    agents = list(dict.fromkeys(frame["agent"]))
    styles = series_styles(agents, private)
    per_panel = [set(frame.loc[frame[facet] == p, "agent"]) for p in panels]
    # one figure legend outside the panels when it is long or the panels hold different series
    legend_outside = len(agents) > LEGEND_INSIDE_MAX or any(a != per_panel[0] for a in per_panel)
    alpha = 0.18 if len(agents) <= LEGEND_INSIDE_MAX else 0.07
    handles: dict[str, Any] = {}
    sns.set_theme(style="whitegrid", context="notebook")
    cols = min(len(panels), 3)
    rows = -(-len(panels) // cols)
    height = max(4.6 * rows, 0.24 * len(agents) + 0.8) if legend_outside else 4.6 * rows  # room for the legend
    fig, axes = plt.subplots(rows, cols, figsize=(6.4 * cols, height), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        sub = frame[frame[facet] == panel].assign(env_id=str(panel))  # one curve per agent and panel
        bands = regret_bands(sub, level, floor=0.0 if ylabel == PSEUDO_REGRET else None)
        seeds = sub.groupby("agent")["seed"].nunique()
        for agent in agents:
            b = bands[bands["agent"] == agent]
            if b.empty:
                continue
            style = styles[agent]
            width = 1.4 if style["reference"] else 1.8
            (line,) = ax.plot(b["t"], b["mean"], color=style["color"], linestyle=style["linestyle"],
                              linewidth=width, label=f"{labels.get(agent, agent)} (n={seeds[agent]})")
            handles.setdefault(agent, line)
            ax.fill_between(b["t"], b["low"], b["high"], color=style["color"],
                            alpha=min(alpha, 0.1) if style["reference"] else alpha, linewidth=0)
        ax.set_xlabel("round t")
        ax.set_ylabel(ylabel)
        name = f"{facet} = {panel}" if facet not in ("env_id", "panel") else str(panel)
        ax.set_title(name if len(panels) > 1 else (title or name))
        if not legend_outside:
            place_legend(ax, len(agents))
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    if len(panels) > 1 and title:
        fig.suptitle(title)
    fig.text(0.99, 0.0, f"bands: {int(level * 100)}% CI across seeds", ha="right", va="bottom", fontsize="x-small")
    fig.tight_layout()
    if legend_outside:  # after tight_layout, so the panels keep their size; saved with a tight bounding box
        fig.legend(list(handles.values()), [h.get_label() for h in handles.values()], loc="upper left",
                   bbox_to_anchor=(1.0, 0.95), fontsize="small", ncol=1 if len(handles) <= 24 else 2)
    return fig
