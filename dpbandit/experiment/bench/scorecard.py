"""The bench's scorecard: one page (Markdown and HTML) with a summary table across scenarios, then per scenario why
it is in the suite, its scores table and its privacy-regret figure (final regret against epsilon, the frontier's
figure: :func:`dpbandit.experiment.frontier_report.frontier_figure`).

The page is built once as a list of blocks (heading, text, table, image) and rendered twice, so the Markdown and the
HTML always say the same thing. Every file is written through the output layer (:mod:`dpbandit.files`).
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpbandit.experiment.bench.scores import short_verdict
from dpbandit.experiment.bench.suite import suite_name

__all__ = ["summary_table", "scenario_table", "scenario_figure", "write_scorecard"]


def _eps(value: float) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else \
        ("inf" if math.isinf(value) else f"{value:g}")


def _num(value: float, digits: int = 3) -> str:
    return "" if value is None or not np.isfinite(value) else f"{value:.{digits}g}"


def _interval(ratio: float, low: float, high: float) -> str:
    if not np.isfinite(ratio):
        return "n/a"
    return f"{ratio:.3g} [{low:.3g}, {high:.3g}]" if np.isfinite(low) and np.isfinite(high) else f"{ratio:.3g} (no interval)"


def _geomean(ratios: pd.Series) -> str:
    r = ratios.astype(float)
    r = r[np.isfinite(r) & (r > 0)]
    return _num(float(np.exp(np.log(r).mean()))) if len(r) else "n/a"


def summary_table(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per (agent, epsilon) across scenarios: scenarios scored, in how many it beats uniform random play or
    is beaten by it (paired interval excluding 0), the geometric means of its ratios to random play and to its
    noise-off version, the median CPU microseconds per round, and the scenarios it refused."""
    scored = scores[(scores["agent"] != "random") & scores["epsilon"].notna()]
    rows = []
    for (agent, eps), g in scored.groupby(["agent", "epsilon"], sort=True):
        verdicts = [short_verdict(str(v), f"{agent} eps={_eps(eps)}", "uniform random") for v in g["verdict_random"]]
        rows.append({"agent": agent, "epsilon": _eps(eps) + (" (noise off)" if math.isinf(eps) else ""),
                     "guarantee": "/".join(sorted(set(g["guarantee"]))),
                     "scenarios": int(len(g)), "beats random": int(sum(v == "beats" for v in verdicts)),
                     "beaten by random": int(sum(v == "beaten" for v in verdicts)),
                     "geo-mean ratio to random": _geomean(g["ratio_random"]),
                     "geo-mean ratio to noise-off": _geomean(g["ratio_noise_off"]) if math.isfinite(eps) else "",
                     "median CPU us/round": _num(float(g["cpu_us_per_round"].astype(float).median())),
                     "refused": int((scores["agent"].eq(agent) & scores["note"].astype(str).str.startswith(
                         "refused")).sum())})
    return pd.DataFrame(rows)


def scenario_table(scores: pd.DataFrame, scenario: str) -> pd.DataFrame:
    """The scorecard's table of one scenario: agent, epsilon, privacy, both ratios with intervals and verdicts, CPU,
    source, audit (refusals as notes)."""
    rows = []
    for r in scores[scores["scenario"] == scenario].to_dict("records"):
        label = f"{r['agent']} eps={_eps(r['epsilon'])}"
        if str(r.get("note", "")).startswith("refused"):
            rows.append({"agent": r["agent"], "ε": "", "guarantee": "", "final regret": "", "ratio to random [95%]":
                         "n/a", "vs random": "", "ratio to noise-off [95%]": "n/a", "vs noise-off": "",
                         "CPU µs/round": "", "source": "", "note": r["note"]})
            continue
        privacy = r["guarantee"] if r["guarantee"] == "none" else \
            f"{r['guarantee']} ε={_num(r['reported_epsilon'])} δ={_num(r['delta'], 2)}" + \
            (f" ρ={_num(r['rho'])}" if np.isfinite(float(r["rho"])) else "")
        vn = str(r.get("verdict_noise_off") or "")
        rows.append({
            "agent": r["agent"], "ε": _eps(r["epsilon"]), "guarantee": privacy,
            "final regret": f"{_num(r['final_regret_mean'], 4)} ± {_num(r['final_regret_ci95'], 2)}",
            "ratio to random [95%]": "" if r["agent"] == "random" else _interval(
                r["ratio_random"], r["ratio_random_low"], r["ratio_random_high"]),
            "vs random": short_verdict(str(r.get("verdict_random") or ""), label, "uniform random"),
            "ratio to noise-off [95%]": _interval(r["ratio_noise_off"], r["ratio_noise_off_low"],
                                                  r["ratio_noise_off_high"]) if not vn.startswith("n/a") else
            ("" if r["agent"] == "random" else "noise off" if math.isinf(r["epsilon"]) else vn),
            "vs noise-off": short_verdict(vn, label, f"{r['agent']} eps=inf"),
            "CPU µs/round": _num(r["cpu_us_per_round"]), "source": r["source"],
            "note": "; ".join(x for x in (str(r.get("audit") or ""), str(r.get("note") or "")) if x)})
    return pd.DataFrame(rows)


def scenario_figure(scores: pd.DataFrame, scenario: str):
    """Final regret against epsilon for one scenario (the frontier's figure: private agents with 95% CI bands, noise
    off as open markers at the right, uniform random play as a horizontal band)."""
    from dpbandit.experiment.frontier_report import frontier_figure

    tab = scores[(scores["scenario"] == scenario) & np.isfinite(scores["final_regret_mean"].astype(float))].copy()
    tab["role"] = np.where(tab["agent"] == "random", "reference", "private")
    tab["delta"] = tab["delta"].astype(float)
    tab["horizon"] = tab["horizon"].astype(int)  # a panel title "T = 2,000"
    fig = frontier_figure(tab, title=f"{scenario} ({suite_name()})")
    return fig


def _markdown_table(frame: pd.DataFrame) -> str:
    cells = lambda row: "| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |"  # noqa: E731
    return "\n".join([cells(frame.columns), "|" + "---|" * len(frame.columns),
                      *(cells(row) for row in frame.itertuples(index=False))])


def _render(blocks: list[tuple[str, Any]]) -> tuple[str, str]:
    md, body = [], []
    for kind, value in blocks:
        if kind == "h1":
            md.append(f"# {value}\n")
            body.append(f"<h1>{html.escape(value)}</h1>")
        elif kind == "h2":
            md.append(f"## {value}\n")
            body.append(f"<h2 id=\"{html.escape(value)}\">{html.escape(value)}</h2>")
        elif kind == "p":
            md.append(f"{value}\n")
            body.append(f"<p>{html.escape(value)}</p>")
        elif kind == "table":
            md.append(_markdown_table(value) + "\n")
            body.append(value.to_html(index=False, escape=True, border=0, classes="scores"))
        elif kind == "img":
            md.append(f"![{value}]({value})\n")
            body.append(f"<img src=\"{html.escape(value)}\" alt=\"{html.escape(value)}\" style=\"max-width:100%\">")
    style = ("body{font-family:sans-serif;max-width:1400px;margin:2em auto;padding:0 1em}"
             "table.scores{border-collapse:collapse;font-size:0.85em}"
             "table.scores td,table.scores th{border:1px solid #ccc;padding:3px 6px;text-align:left}")
    page = (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{suite_name()} scorecard</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
    return "\n".join(md), page


def write_scorecard(run_dir: Path, scores: pd.DataFrame, finals: pd.DataFrame, bc: Any, *,
                    cells_why: dict[str, str], reference: Any, timing: dict) -> tuple[Path, Path, dict[str, str]]:
    """Write ``scorecard.md``, ``scorecard.html`` and one ``figure-<scenario>.png`` per scenario into ``run_dir``;
    returns the two pages' paths and the figures (manifest key -> file name)."""
    from dpbandit.files import save_figure, write_atomic

    figures, blocks = {}, [("h1", f"{suite_name()} scorecard ({bc.size})")]
    sources = sorted(set(finals["source"]))
    blocks.append(("p", f"Agents: {', '.join(dict.fromkeys(s for s in scores['agent'] if s != 'random'))}. "
                        f"Results from: {', '.join(sources)}. Ratios are final regret of the agent divided by that of "
                        "uniform random play and by that of the agent's own noise-off version (epsilon = inf) on the "
                        "same seeds (the same users), with 95% paired-bootstrap intervals over seeds; below 1 is "
                        "better. 'beats' / 'beaten' only when the 95% paired-t interval of the difference excludes 0, "
                        "otherwise 'not distinguishable'. CPU is process time per round of one job."))
    if reference is not None:
        blocks.append(("p", f"Reference rows: shipped with dpbandit (made by dpbandit {reference.version} on "
                            f"{reference.meta.get('made', '?')}, load {reference.meta.get('load', '?')}); their CPU "
                            "times were measured on that machine, not this one."))
    load = timing.get("load_average_1_5_15")
    resumed = (f" ({timing['resumed_jobs']} of its {timing['jobs']} jobs read back from an earlier run, their CPU "
               "counted)" if timing.get("resumed_jobs") else "")
    blocks.append(("p", f"This run: {timing['wall_seconds']:.0f} s wall, {timing['jobs_cpu_seconds']:.0f} s CPU in "
                        f"jobs{resumed}, {timing['cpus']} CPUs, load average "
                        f"{', '.join(f'{x:.2f}' for x in load) if load else '?'}."))
    blocks += [("h2", "Summary across scenarios"), ("table", summary_table(scores))]
    for scenario in dict.fromkeys(scores["scenario"]):
        blocks += [("h2", scenario), ("p", cells_why.get(scenario, "")), ("table", scenario_table(scores, scenario))]
        if np.isfinite(scores.loc[scores["scenario"] == scenario, "final_regret_mean"].astype(float)).any():
            name = f"figure-{scenario}.png"
            save_figure(scenario_figure(scores, scenario), run_dir / name)
            figures[f"figure {scenario}"] = name
            blocks.append(("img", name))
    md, page = _render(blocks)
    md_path = write_atomic(run_dir / "scorecard.md", lambda p: p.write_text(md, encoding="utf-8"))
    html_path = write_atomic(run_dir / "scorecard.html", lambda p: p.write_text(page, encoding="utf-8"))
    return md_path, html_path, figures
