"""``dpbandit reproduce fliphat``: FLIPHAT's published experiment (Chakraborty, Roy, Basu 2024, arXiv:2405.14038;
code ``sunritc/FLIPHAT``) rerun honestly, beside the published numbers (``spec/episodic-private-agents.md`` §1-2;
user guide ``docs/episodic-agents.md``).

Setting of the repository's ``simulation.py`` (setting 5): d = 400, s* = 5, K = 2 and 3, contexts x_{t,a} iid
N(0, Sigma) with AR(0.1) Sigma, beta* entries U[0.5, 1] with random signs on 5 coordinates, reward noise N(0, 0.1^2),
delta = 0.01, T = 10^4, epsilon in {0.5, 1, 2, 5}, FLIPHAT with s = 10 and M = 1, one fixed beta* for all seeds.
Here beta* is rescaled to ||beta*||_1 = 3.75 (= 5 x E U[0.5, 1]; the environment's public bound C) and contexts are
clipped to the code's nominal ``x_max = sqrt(2 ln d)`` = 3.46 in l_inf (D-F2: the code never clips).

Columns per (K, epsilon), final cumulative regret (mean and 95% CI over seeds, the same users for every column):

* **published**: the repository's saved results (``simulations/result_effect_K.npy``, mean of 50 repetitions);
* **published calibration — NOT PRIVATE**: ``fliphat`` with ``published_setting_not_private=True`` (the code's
  lambda = eta B noise, 4 x_max too small, D-F1) on *unclipped* contexts; guarantee "none";
* **correct (Laplace)** and **correct (Gumbel)**: ``fliphat`` with the derived calibration, (epsilon, delta)-JDP;
* **DP-HDB** and **FLIPHAT disjoint**: DP-HDB needs one parameter per arm, so it runs in the *disjoint analogue*
  of the setting (one beta*_a per arm with the same law, every arm seeing the user's context), next to FLIPHAT's
  disjoint form.

References: uniform random play and non-private FLIPHAT (epsilon = inf) in the shared setting; uniform random and the
LASSO bandit (non-private) in the disjoint analogue.

Verdicts per (K, epsilon), paired over the common seeds (:func:`dpbandit.experiment.stats.verdict`: "A beats B" only
when the paired 95% interval excludes zero): correct (Laplace) vs the published calibration, correct (Laplace) vs
uniform random play, correct (Laplace) vs correct (Gumbel).

Output under ``<out>/fliphat[-quick]``: ``results.csv`` (one row per run), ``table.csv``, ``table.md``,
``comparison.csv`` (the verdicts with their paired differences), ``figure.png`` (mean cumulative regret with 95% CI
bands, one panel per (K, epsilon), the references in every panel of their K), ``summary.txt``. ``--quick`` (CI):
K = 2, T = 1000, 2 seeds, epsilon in {1, 5}.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from datetime import datetime, timezone
from pathlib import Path

import gymnasium
import numpy as np
import pandas as pd

import dpbandit.envs  # noqa: F401  (registers the environments)
from dpbandit.agents import make_agent
from dpbandit.experiment.plots import plot_regret
from dpbandit.experiment.results import mean_ci, write_atomic, write_json_atomic
from dpbandit.experiment.rundir import claim_run_dir, run_lock
from dpbandit.experiment.runner import simulate
from dpbandit.experiment.stats import paired_difference, verdict
from dpbandit.optim.gg_calibration import PublishedSettingWarning
from dpbandit.validation import check_epsilon, check_int

__all__ = ["PAPER", "PUBLISHED", "QUICK", "VERDICTS", "compare_columns", "env_kwargs", "fliphat_table", "main",
           "run_fliphat"]

#: Published final regrets (T = 1e4, d = 400): sunritc/FLIPHAT simulations/result_effect_K.npy, mean of 50 runs.
PUBLISHED: dict[int, dict[float, float]] = {2: {0.5: 6739, 1.0: 3901, 2.0: 2022, 5.0: 862},
                                            3: {0.5: 12395, 1.0: 6891, 2.0: 3683, 5.0: 1551}}
PUBLISHED_SOURCE = "sunritc/FLIPHAT simulations/result_effect_K.npy (mean final regret of 50 repetitions)"
PAPER = dict(horizon=10_000, seeds=5, epsilons=(0.5, 1.0, 2.0, 5.0), arms=(2, 3))
#: The manifest kind of this reproduction's run folder.
KIND = "reproduce fliphat"

QUICK = dict(horizon=1000, seeds=2, epsilons=(1.0, 5.0), arms=(2,))
DIM, SPARSITY, DELTA, S_CODE = 400, 5, 0.01, 10
X_MAX = math.sqrt(2.0 * math.log(DIM))
#: (column, structure, clipped contexts, agent, params builder) per epsilon; references have epsilon None.
COLUMNS = (
    ("published calibration (NOT PRIVATE)", "shared", False, "fliphat",
     lambda e: dict(epsilon=e, delta=DELTA, sparsity=S_CODE, published_setting_not_private=True)),
    ("correct (Laplace)", "shared", True, "fliphat", lambda e: dict(epsilon=e, delta=DELTA, sparsity=S_CODE)),
    ("correct (Gumbel)", "shared", True, "fliphat",
     lambda e: dict(epsilon=e, delta=DELTA, sparsity=S_CODE, selection="gumbel")),
    ("DP-HDB (disjoint analogue)", "disjoint", True, "dp_hdb", lambda e: dict(epsilon=e, delta=DELTA)),
    ("FLIPHAT disjoint (Laplace)", "disjoint", True, "fliphat",
     lambda e: dict(epsilon=e, delta=DELTA, sparsity=S_CODE)),
)
REFERENCES = (
    ("uniform random (shared)", "shared", True, "random", {}),
    ("non-private FLIPHAT (shared, epsilon = inf)", "shared", True, "fliphat",  # the paper's: episodes forget
     dict(epsilon=math.inf, sparsity=S_CODE, forget=True)),
    ("uniform random (disjoint)", "disjoint", True, "random", {}),
    ("LASSO bandit (disjoint, non-private)", "disjoint", True, "lasso", {}),
)

#: The paired verdicts of every (K, epsilon): (a, b) column names, a's per-seed regret against b's on common seeds.
VERDICTS = (
    ("correct (Laplace)", "published calibration (NOT PRIVATE)"),
    ("correct (Laplace)", "uniform random (shared)"),
    ("correct (Laplace)", "correct (Gumbel)"),
)


def env_kwargs(n_arms: int, horizon: int, structure: str = "shared", clipped: bool = True) -> dict:
    """``GLMBandit-v0`` keyword arguments of the FLIPHAT setting (module docstring). ``clipped=False``: contexts are
    not clipped (the code's setting; the declared bound 1e3 is never reached by these Gaussian contexts)."""
    return dict(n_arms=n_arms, dim=DIM, horizon=horizon, structure=structure, link="identity", noise_std=0.1,
                theta="sparse", sparsity=SPARSITY, theta_values="uniform", theta_norm="l1", theta_bound=3.75,
                contexts="ar", rho=0.1, context_scale=1.0, context_norm="linf",
                context_bound=X_MAX if clipped else 1e3, normalize="clip", instance_seed=20)


def run_fliphat(*, horizon: int, seeds: int, epsilons: tuple[float, ...], arms: tuple[int, ...],
                progress: bool = True) -> pd.DataFrame:
    """One row per (K, epsilon, column, seed): the final cumulative regret and the privacy guarantee."""
    return _run(horizon=horizon, seeds=seeds, epsilons=epsilons, arms=arms, progress=progress)[0]


def _jobs(*, horizon: int, seeds: int, epsilons: tuple[float, ...], arms: tuple[int, ...]) -> list[tuple]:
    """The validated jobs ``(K, epsilon, column, structure, clip, agent type, params)`` of a reproduction."""
    from dpbandit.experiment.config import MAX_SEEDS

    check_int("horizon", horizon, low=2)
    check_int("seeds", seeds, low=1, high=MAX_SEEDS)
    epsilons = tuple(check_epsilon(e) for e in epsilons)
    for k in arms:
        check_int("arms", k, low=2)
    jobs = [(k, None, name, st, cl, agent, params) for k in arms for name, st, cl, agent, params in REFERENCES]
    return jobs + [(k, e, name, st, cl, agent, build(e)) for k in arms for e in epsilons
                   for name, st, cl, agent, build in COLUMNS]


def _build(job: tuple, horizon: int):
    k, e, name, st, cl, agent_name, params = job
    env = gymnasium.make("dpbandit/GLMBandit-v0", **env_kwargs(k, horizon, st, cl))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PublishedSettingWarning)  # labelled NOT PRIVATE in every output
        return env, make_agent(agent_name, env, **params)


def check_cost(settings: dict, allow_long: bool = False) -> None:
    """Before any work: the settings are valid and, for runs of at least
    :data:`~dpbandit.experiment.planning.CALIBRATE_ROUNDS` rounds, the time estimated from a few timed rounds of
    every job fits in a week (``ValueError`` stating the estimate otherwise, unless ``allow_long``)."""
    from dpbandit.experiment.planning import (CALIBRATE_ROUNDS, CALIBRATION_SECONDS, check_duration,
                                              seconds_per_round)

    jobs = _jobs(**settings)
    rounds = len(jobs) * settings["seeds"] * settings["horizon"]
    if rounds < CALIBRATE_ROUNDS:
        return
    seconds = 0.0
    for job in jobs:
        env, agent = _build(job, settings["horizon"])
        seconds += seconds_per_round(env, agent, 0, CALIBRATION_SECONDS / len(jobs)) * settings["seeds"] \
            * settings["horizon"]
        env.close()
    check_duration("planned work", rounds, seconds, allow_long)


def _run(*, horizon: int, seeds: int, epsilons: tuple[float, ...], arms: tuple[int, ...],
         progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`run_fliphat`'s rows and the runs' checkpointed curves (tidy: ``K, epsilon, agent`` = the column,
    ``seed, t, cumulative_regret``)."""
    jobs = _jobs(horizon=horizon, seeds=seeds, epsilons=epsilons, arms=arms)
    rows, curves = [], []
    for i, job in enumerate(jobs, 1):
        k, e, name, st, cl, agent_name, params = job
        env, agent = _build(job, horizon)
        guarantee = agent.privacy_report().guarantee if getattr(agent, "private", False) else "none"
        for seed in range(seeds):
            frame = simulate(env, agent, seed=seed, checkpoints=10)
            rows.append(dict(K=k, epsilon=e, column=name, seed=seed,
                             final_regret=float(frame["cumulative_regret"].iloc[-1]), guarantee=guarantee))
            curves.append(frame[["t", "cumulative_regret"]].assign(K=k, epsilon=e, agent=name, seed=seed,
                                                                   structure=st))
        if progress:
            print(f"  [{i}/{len(jobs)}] K={k} eps={e} {name}", file=sys.stderr)
    return pd.DataFrame(rows), pd.concat(curves, ignore_index=True)


def _per_seed(part: pd.DataFrame, column: str) -> pd.Series:
    return part.loc[part["column"] == column].set_index("seed")["final_regret"]


def compare_columns(results: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """The :data:`VERDICTS` of every (K, epsilon): ``K, epsilon, a, b, seeds, difference`` (b's final regret minus
    a's, paired over common seeds: > 0 = a better), ``low, high`` (its Student-t ``level`` interval) and ``verdict``
    (:func:`dpbandit.experiment.stats.verdict`). A reference column (no epsilon) is compared at every epsilon."""
    rows = []
    refs = results[results["epsilon"].isna()]
    for (k, e), part in results[results["epsilon"].notna()].groupby(["K", "epsilon"], sort=True):
        part = pd.concat([part, refs[refs["K"] == k]])
        for a_name, b_name in VERDICTS:
            a, b = _per_seed(part, a_name), _per_seed(part, b_name)
            if a.empty or b.empty:
                continue
            diff = paired_difference(b, a, level=level)
            rows.append(dict(K=k, epsilon=e, a=a_name, b=b_name, seeds=diff.n, difference=diff.estimate,
                             low=diff.low, high=diff.high,
                             verdict=verdict(a_name, b_name, a, b, level=level, quantity="final regret")))
    return pd.DataFrame(rows)


def figure_frame(results: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame:
    """The curves as one panel per (K, epsilon) (``env_id``), the references of each K repeated in its panels."""
    panels = []
    for (k, e), _ in results[results["epsilon"].notna()].groupby(["K", "epsilon"], sort=True):
        mine = curves[(curves["K"] == k) & ((curves["epsilon"] == e) | curves["epsilon"].isna())]
        panels.append(mine.assign(env_id=f"K = {k}, ε = {e:g}"))
    return pd.concat(panels, ignore_index=True)


def _cell(values: np.ndarray) -> str:
    mean, half = mean_ci(values)
    return f"{mean:.0f}" if values.size < 2 else f"{mean:.0f} ± {half:.0f}"


def fliphat_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per (K, epsilon): the published number and every column's final regret (mean ± 95% CI)."""
    rows = []
    for (k, e), part in results[results["epsilon"].notna()].groupby(["K", "epsilon"], sort=True):
        row = {"K": k, "epsilon": e, "published (repository, T = 1e4)": PUBLISHED.get(k, {}).get(e, math.nan)}
        for name, *_ in COLUMNS:
            row[name] = _cell(part.loc[part["column"] == name, "final_regret"].to_numpy())
        rows.append(row)
    return pd.DataFrame(rows)


def _markdown(table: pd.DataFrame) -> str:
    head = "| " + " | ".join(map(str, table.columns)) + " |"
    rule = "|" + "---|" * len(table.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join([head, rule, *body]) + "\n"


def format_summary(results: pd.DataFrame, table: pd.DataFrame, horizon: int,
                   comparison: pd.DataFrame | None = None) -> str:
    lines = [(f"FLIPHAT setting (d = {DIM}, s* = {SPARSITY}, AR(0.1) contexts, noise 0.1, delta = {DELTA}, "
              f"T = {horizon}): final cumulative regret, mean ± 95% CI over seeds, the same users in every column."),
             ("NOT PRIVATE = the FLIPHAT code's calibration (lambda = eta B: a sensitivity 4 x_max = 13.9x too small, "
              "7.9-13x too little noise end to end at epsilon = 0.5-5, docs/episodic-agents.md; unclipped contexts); "
              "its guarantee is 'none'. 'correct' columns are (epsilon, delta)-JDP."),
             "", table.to_string(index=False), "", "References (no epsilon):"]
    refs = results[results["epsilon"].isna()]
    for (k, name), part in refs.groupby(["K", "column"], sort=False):
        lines.append(f"  K={k} {name}: {_cell(part['final_regret'].to_numpy())}")
    if comparison is not None and len(comparison):
        lines += ["", "Verdicts (final regret, paired over common seeds, 95% Student-t interval of the difference):"]
        for (k, e), part in comparison.groupby(["K", "epsilon"], sort=True):
            lines.append(f"  K={k} epsilon={e:g}:")
            lines += [f"    {v}" for v in part["verdict"]]
    lines.append(f"\nPublished numbers: {PUBLISHED_SOURCE}; they were produced with the NOT PRIVATE calibration.")
    return "\n".join(lines)


def reproduce(*, quick: bool = False, out: str | Path | bool = "runs", progress: bool = True,
              allow_long: bool = False, **overrides):
    """Run the reproduction (``quick``: :data:`QUICK`, else :data:`PAPER`; keyword overrides) and write its files
    under ``<out>/fliphat[-quick]`` (``out=False``: nothing written). Returns (results, table, summary, run_dir);
    the verdicts are in the summary and ``comparison.csv``, the figure is ``figure.png``. Bad settings and a run
    estimated at more than a week (unless ``allow_long``) are refused before any work (:func:`check_cost`)."""
    settings = {**(QUICK if quick else PAPER), **{k: v for k, v in overrides.items() if v is not None}}
    check_cost(settings, allow_long)
    if out is False:
        return (*_reproduce(settings, progress)[:3], None)
    run_dir = claim_run_dir(Path(out) / ("fliphat-quick" if quick else "fliphat"), KIND)
    with run_lock(run_dir):
        manifest = {"kind": KIND, "status": "running", "settings": {k: list(v) if isinstance(v, tuple) else v
                                                                    for k, v in settings.items()},
                    "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        write_json_atomic(run_dir / "manifest.json", manifest)
        results, table, summary, comparison, curves = _reproduce(settings, progress)
        write_atomic(run_dir / "results.csv", lambda p: results.to_csv(p, index=False))
        write_atomic(run_dir / "table.csv", lambda p: table.to_csv(p, index=False))
        write_atomic(run_dir / "comparison.csv", lambda p: comparison.to_csv(p, index=False))
        private = dict(zip(results["column"], results["guarantee"] != "none"))
        plot_regret(figure_frame(results, curves), run_dir / "figure.png", private=private,
                    title=f"FLIPHAT setting (d = {DIM}, T = {settings['horizon']}, delta = {DELTA}): mean cumulative "
                          "regret, 95% CI over seeds")
        write_atomic(run_dir / "table.md", lambda p: p.write_text(_markdown(table)))
        write_atomic(run_dir / "summary.txt", lambda p: p.write_text(summary + "\n"))
        manifest.update(status="complete", finished=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                        files={"results": "results.csv", "table": "table.csv", "markdown": "table.md",
                               "comparison": "comparison.csv", "figure": "figure.png", "summary": "summary.txt"})
        write_json_atomic(run_dir / "manifest.json", manifest)
    return results, table, summary, run_dir


def _reproduce(settings: dict, progress: bool):
    """(results, table, summary, comparison, curves) of one run of the reproduction."""
    results, curves = _run(progress=progress, **settings)
    table = fliphat_table(results)
    comparison = compare_columns(results)
    return results, table, format_summary(results, table, settings["horizon"], comparison), comparison, curves


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``dpbandit reproduce fliphat`` (one-line usage errors)."""
    from dpbandit.experiment.arguments import Distinct, OneLineParser, add_allow_long

    parser = OneLineParser(prog="dpbandit reproduce fliphat", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI variant: K = 2, T = 1000, 2 seeds, eps 1 and 5")
    parser.add_argument("--out", default="runs", help="parent folder of the run directory (default: runs)")
    parser.add_argument("--seeds", type=int, help="number of seeds (default 5; quick 2)")
    parser.add_argument("--horizon", type=int, help="horizon T (default 10000; quick 1000)")
    parser.add_argument("--epsilons", type=float, nargs="+", action=Distinct, help="epsilons (default 0.5 1 2 5)")
    parser.add_argument("--arms", type=int, nargs="+", action=Distinct, help="values of K (default 2 3)")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines")
    add_allow_long(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        _, _, summary, run_dir = reproduce(
            quick=args.quick, out=args.out, progress=not args.no_progress, allow_long=args.allow_long,
            seeds=args.seeds, horizon=args.horizon,
            epsilons=tuple(args.epsilons) if args.epsilons else None, arms=tuple(args.arms) if args.arms else None)
    except (ValueError, TypeError) as exc:
        print(f"dpbandit reproduce fliphat: error: {exc}", file=sys.stderr)
        return 2
    print(summary)
    print(f"\nFigure:        {run_dir / 'figure.png'}")
    print(f"Run directory: {run_dir}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
