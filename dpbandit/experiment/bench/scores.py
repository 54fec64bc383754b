"""The bench's scores: per (scenario, agent, epsilon), final regret as a ratio to uniform random play and to the
agent's own noise-off version, each with a paired-bootstrap interval over common seeds and the one verdict wording
(:mod:`dpbandit.experiment.stats`), the CPU cost per round and the privacy report.

Input: ``finals`` (one row per (scenario, agent label, seed): ``scenario, agent, stem, epsilon, seed, horizon,
cumulative_regret, cpu_seconds, source``; random play has stem ``"random"``), ``privacy`` (``"scenario / label"`` ->
privacy report dict or None), and the lines of agents that refused a scenario (``refused``), had no noise-off form
(``noise_off``) or were audited (``audits``, keyed (scenario, label)).

A ratio below 1 means less regret than the reference. Intervals need at least
:data:`~dpbandit.experiment.stats.BOOTSTRAP_MIN_SEEDS` seeds (fewer: no interval, and the verdict says how many).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from dpbandit.experiment.results import mean_ci, privacy_columns
from dpbandit.experiment.stats import BOOTSTRAP_MIN_SEEDS, ratio_interval, verdict

__all__ = ["SCORE_COLUMNS", "score_table", "short_verdict"]

#: Columns of the scores table (``scores.csv``).
SCORE_COLUMNS = (
    "scenario", "agent", "epsilon", "source", "seeds", "horizon", "final_regret_mean", "final_regret_ci95",
    "random_regret_mean", "ratio_random", "ratio_random_low", "ratio_random_high", "verdict_random",
    "noise_off_regret_mean", "ratio_noise_off", "ratio_noise_off_low", "ratio_noise_off_high", "verdict_noise_off",
    "cpu_us_per_round", "guarantee", "reported_epsilon", "delta", "rho", "unit", "audit", "note",
)
RANDOM = "uniform random"


def short_verdict(line: str, a_name: str, b_name: str) -> str:
    """The table's short form of a :func:`~dpbandit.experiment.stats.verdict` line: "beats", "beaten", "not
    distinguishable (n seeds)" or "undetermined"."""
    if line.startswith(f"{a_name} beats "):
        return "beats"
    if line.startswith(f"{b_name} beats "):
        return "beaten"
    if "not distinguishable" in line:
        return "not distinguishable" + line[line.index("not distinguishable") + 19:].split(";")[0]
    return "undetermined" if line and not line.startswith("n/a") else ""


def _ratio(num: pd.Series, den: pd.Series, name: str, den_name: str) -> dict:
    """Ratio mean(num)/mean(den) with its paired interval and the verdict line (num's regret vs den's)."""
    try:
        interval = ratio_interval(num, den)
    except ValueError as exc:
        return {"ratio": math.nan, "low": math.nan, "high": math.nan, "verdict": f"n/a: {exc}"}
    low, high = interval.low, interval.high
    if interval.n < BOOTSTRAP_MIN_SEEDS:
        low = high = math.nan
    return {"ratio": interval.estimate, "low": low, "high": high,
            "verdict": verdict(name, den_name, num, den) if interval.n else ""}


def score_table(finals: pd.DataFrame, privacy: Mapping[str, dict | None], *, refused: Mapping[str, str] = {},
                noise_off: Mapping[str, str] = {}, audits: Mapping[tuple[str, str], str] = {}) -> pd.DataFrame:
    """One row per (scenario, agent, epsilon) of ``finals`` (module docstring), uniform random play's row first in
    each scenario, and one "n/a" row per agent that refused a scenario; columns :data:`SCORE_COLUMNS`."""
    rows = []
    scenarios = list(dict.fromkeys(finals["scenario"])) + [k.split(" / ")[0] for k in refused]
    for scenario in dict.fromkeys(scenarios):
        tab = finals[finals["scenario"] == scenario]
        per = {label: g.set_index("seed")["cumulative_regret"] for label, g in tab.groupby("agent", sort=False)}
        rand = per.get("random")
        order = sorted(dict.fromkeys(zip(tab["stem"], tab["epsilon"], tab["agent"])),
                       key=lambda k: (k[0] != "random", k[0], k[1]))
        for stem, eps, label in order:
            g = tab[tab["agent"] == label]
            values = per[label]
            mean, half = mean_ci(values.to_numpy())
            report = privacy.get(f"{scenario} / {label}")
            cols = privacy_columns(report)
            cpu = g["cpu_seconds"].to_numpy(dtype=float) / g["horizon"].to_numpy(dtype=float)
            row = {"scenario": scenario, "agent": stem, "epsilon": float(eps), "source": g["source"].iloc[0],
                   "seeds": int(values.size), "horizon": int(g["horizon"].iloc[0]), "final_regret_mean": mean,
                   "final_regret_ci95": half, "cpu_us_per_round": float(np.nanmean(cpu)) * 1e6
                   if np.isfinite(cpu).any() else math.nan,
                   "guarantee": cols["guarantee"], "reported_epsilon": cols["epsilon"], "delta": cols["delta"],
                   "rho": cols["rho"], "unit": (report or {}).get("privacy_unit", "") if cols["guarantee"] != "none"
                   else "", "audit": audits.get((scenario, label), ""), "note": ""}
            if stem == "random":
                row.update(note="the reference of every ratio", verdict_random="", verdict_noise_off="")
                rows.append(row)
                continue
            if rand is not None:
                r = _ratio(values, rand, label, RANDOM)
                row.update(random_regret_mean=float(rand.loc[rand.index.intersection(values.index)].mean()),
                           ratio_random=r["ratio"], ratio_random_low=r["low"], ratio_random_high=r["high"],
                           verdict_random=r["verdict"])
            else:
                row.update(verdict_random="n/a: no uniform random play on these seeds")
            off_label = label.rsplit(" eps=", 1)[0] + " eps=inf"
            if math.isinf(eps):
                row.update(verdict_noise_off="n/a: this is the noise-off version")
            elif off_label in per:
                off = per[off_label]
                r = _ratio(values, off, label, off_label)
                row.update(noise_off_regret_mean=float(off.loc[off.index.intersection(values.index)].mean()),
                           ratio_noise_off=r["ratio"], ratio_noise_off_low=r["low"], ratio_noise_off_high=r["high"],
                           verdict_noise_off=r["verdict"])
            else:
                why = noise_off.get(f"{scenario} / {stem}", "it was not run")
                row.update(verdict_noise_off=f"n/a: no noise-off version ({why})")
            rows.append(row)
    for key, why in refused.items():
        scenario, stem = key.split(" / ", 1)
        rows.append({"scenario": scenario, "agent": stem, "epsilon": math.nan, "source": "",
                     "verdict_random": "n/a", "verdict_noise_off": "n/a", "note": f"refused: {why}"})
    table = pd.DataFrame(rows, columns=list(SCORE_COLUMNS))
    order = {s: i for i, s in enumerate(dict.fromkeys(scenarios))}
    return table.sort_values("scenario", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)
