"""The OCO runner: regret of streaming learners against the best fixed point in hindsight on regression streams.

The problems and the grid of problems x learners x seeds are an :class:`~dpbandit.experiment.oco_config.OCOConfig`
(:mod:`dpbandit.experiment.oco_config`). The regret of a learner with iterates ``w_s`` after t rounds is

    R_t = sum_{s<=t} f_s(w_s) - min_{u in C} sum_{s<=t} f_s(u),

with ``C`` **the learner's own domain**: ``learner.domain`` (a :class:`~dpbandit.optim.projections.Domain`: the
simplex or l1 ball of WDP-COCOL, the l2 ball of the gradient-descent and FTL learners, an l_p ball); a learner that
declares none is unconstrained (the parameter-free learners) and is compared with the l2 ball of the stream radius.
The comparator is recomputed at every recorded round by
:func:`~dpbandit.experiment.comparators.best_in_hindsight` (exact on l2 balls for the squared loss, otherwise
certified by its duality gap; the largest gap of a job is recorded as ``comparator_gap``).

Jobs are (problem, seed) pairs (one stream draw and one comparator per distinct domain for all learners), run like
bandit jobs (:func:`dpbandit.experiment.execution.execute_jobs`) into the run directory ``<out>/<name>``
(:func:`dpbandit.experiment.results.prepare_run_dir`): every finished job is written to ``jobs/`` at once, running
the same experiment again resumes it (finished jobs are read back, not recomputed), and a different experiment
there is refused unless ``fresh=True`` (CLI ``--fresh``). Files: a tidy ``results.csv`` with columns
:data:`OCO_COLUMNS` (``stream`` plays the role of ``env_id`` and ``learner`` of ``agent``), ``summary.csv`` (final
regret with 95% CI, log-log regret slope, microseconds per round, guarantee label, comparator domain),
``regret.png`` and ``manifest.json`` (config and its hash, versions, privacy reports, comparators; strict JSON).
Command line: :func:`main` (``dpbandit oco [--quick] [--fresh]``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from dpbandit.experiment.comparators import best_in_hindsight, comparator_domain, hindsight_gap
from dpbandit.experiment.errors import EXPECTED, report
from dpbandit.experiment.oco_config import PROBLEMS, LearnerSpec, OCOConfig, default_learners
from dpbandit.experiment.plots import plot_regret
from dpbandit.experiment.results import (
    checkpoint_rounds,
    load_job,
    package_versions,
    privacy_columns,
    store_job,
    summary_table,
    write_atomic,
    write_json_atomic,
)
from dpbandit.experiment.rundir import open_run_dir
from dpbandit.experiment.execution import execute_jobs
from dpbandit.experiment.planning import CALIBRATE_ROUNDS, CALIBRATION_ROUNDS, check_duration, duration
from dpbandit.optim.losses import Loss
from dpbandit.optim.projections import Domain
from dpbandit.optim.registry import LEARNERS
from dpbandit.seeding import STREAM_LAYOUT
from dpbandit.validation import check_int

__all__ = ["OCO_COLUMNS", "PROBLEMS", "LearnerSpec", "OCOConfig", "OCOResult", "best_in_hindsight", "play",
           "regret_slopes", "run_oco", "default_learners", "main"]

OCO_COLUMNS = ("stream", "learner", "seed", "t", "loss", "regret", "cumulative_loss", "cumulative_regret",
               "average_regret")
#: The y label of OCO regret plots.
OCO_REGRET = "cumulative regret (vs best point in hindsight)"


def play(learner, x: np.ndarray, y: np.ndarray, loss: Loss, mu: float) -> tuple[np.ndarray, float]:
    """Run ``learner`` over the stream; returns the per-round losses ``f_t(w_t)`` (T,) and the wall time (s)."""
    T = len(y)
    losses = np.empty(T)
    start = time.perf_counter()
    for t in range(T):
        w = learner.predict()
        losses[t] = float(loss.phi(float(x[t] @ w), y[t])) + 0.5 * mu * float(w @ w)
        learner.update(x[t], y[t])
    return losses, time.perf_counter() - start


def _comparator(data, loss: Loss, mu: float, domain: Domain, rounds: np.ndarray) -> dict:
    """Best-in-hindsight values (n,), the comparator's loss at each recorded round (n,) and the largest gap."""
    best, ustar = best_in_hindsight(data.x, data.y, loss, mu, domain, rounds)
    idx = rounds - 1
    round_loss = loss.phi(np.einsum("nd,nd->n", data.x[idx], ustar), data.y[idx]) + 0.5 * mu * np.sum(
        ustar * ustar, axis=1)
    gap = max(hindsight_gap(data.x[:t], data.y[:t], loss, mu, domain, u) for t, u in zip(rounds, ustar))
    return {"best": best, "round_loss": round_loss, "gap": gap}


def _job_stem(job: tuple[str, int]) -> str:
    problem, seed = job
    return f"{problem}__seed{seed}"


def _run_job(config: OCOConfig, runs: list[tuple[str, LearnerSpec]], job: tuple[str, int]) -> tuple[pd.DataFrame,
                                                                                                     list[dict]]:
    """Every learner of ``problem`` on the stream of ``seed``, each against its own domain's comparator (computed
    once per distinct domain); a pure function of its arguments (any process)."""
    problem, seed = job
    data = config.stream(problem).draw(seed)
    loss, mu = config.loss(problem), config.problem_mu(problem)
    rounds = checkpoint_rounds(config.horizon, config.checkpoints)
    idx = rounds - 1
    comparators: dict[Domain, dict] = {}
    frames, metas = [], []
    for spec in (s for p, s in runs if p == problem):
        learner = config.build(problem, spec, seed)
        domain = comparator_domain(getattr(learner, "domain", None) or data.radius)
        if domain not in comparators:
            comparators[domain] = _comparator(data, loss, mu, domain, rounds)
        comp = comparators[domain]
        losses, seconds = play(learner, data.x, data.y, loss, mu)
        cumulative = np.cumsum(losses)[idx]
        frames.append(pd.DataFrame({
            "stream": problem, "learner": spec.label, "seed": seed, "t": rounds, "loss": losses[idx],
            "regret": losses[idx] - comp["round_loss"], "cumulative_loss": cumulative,
            "cumulative_regret": cumulative - comp["best"], "average_regret": (cumulative - comp["best"]) / rounds,
        }))
        report = learner.privacy_report()
        metas.append({"stream": problem, "learner": spec.label, "name": spec.name, "seed": seed,
                      "params": dict(spec.params), "seconds": seconds, "rounds": config.horizon,
                      "comparator": domain.describe(), "comparator_gap": comp["gap"],
                      "guarantee": "non-private (no guarantee)" if report is None else report.label,
                      "privacy_report": None if report is None else report.to_dict()})
    return pd.concat(frames, ignore_index=True)[list(OCO_COLUMNS)], metas


def regret_slopes(frame: pd.DataFrame, t_min: int = 1) -> pd.DataFrame:
    """Per (stream, learner): slope of log(mean cumulative regret across seeds) against log t over the recorded
    rounds ``t >= t_min`` (NaN when some mean regret there is <= 0). ~0.5 for O(sqrt T), ~0 for O(log T)."""
    rows = []
    for (problem, learner), group in frame.groupby(["stream", "learner"], sort=False):
        mean = group[group["t"] >= t_min].groupby("t")["cumulative_regret"].mean()
        ok = len(mean) >= 2 and bool(np.all(mean.to_numpy() > 0))
        slope = np.polyfit(np.log(mean.index.to_numpy(float)), np.log(mean.to_numpy()), 1)[0] if ok else math.nan
        rows.append({"stream": problem, "learner": learner, "regret_slope": float(slope)})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class OCOResult:
    """What :func:`run_oco` produced (paths ``None`` for an in-memory run)."""

    results: pd.DataFrame
    summary: pd.DataFrame
    run_dir: Path | None
    plot_path: Path | None
    resumed_jobs: int = 0


def planned_work(config: OCOConfig, plan: list) -> tuple[str, float | None]:
    """The planned work in one line and, from :data:`~dpbandit.experiment.planning.CALIBRATE_ROUNDS` learner rounds
    on, its wall time over ``n_jobs`` processes: every (problem, learner) timed on a short stream of its first seed
    (the learner built for the full horizon)."""
    runs = [(p, s) for p, s, reason in plan if not reason]
    problems = sorted({p for p, _ in runs})
    jobs, rounds = len(problems) * len(config.seeds), len(runs) * len(config.seeds) * config.horizon
    workers = max(1, min(config.n_jobs, jobs))
    line = (f"{config.name}: {jobs:,} jobs ({len(problems)} problem{'s' * (len(problems) > 1)} x "
            f"{len(config.seeds)} seed{'s' * (len(config.seeds) > 1)}); {len(runs)} (problem, learner) pair{'s' * (len(runs) > 1)} x "
            f"{len(config.seeds)} x {config.horizon:,} rounds = {rounds:,} learner rounds")
    if rounds < CALIBRATE_ROUNDS:
        return line, None
    n, seconds = min(config.horizon, CALIBRATION_ROUNDS), 0.0
    for problem, spec in runs:
        data = config.stream(problem, n).draw(config.seeds[0])
        _, spent = play(config.build(problem, spec, config.seeds[0]), data.x, data.y, config.loss(problem),
                        config.problem_mu(problem))
        seconds += spent / n * config.horizon * len(config.seeds)
    seconds /= workers
    return f"{line}; about {duration(seconds)} with {workers} parallel job{'s' * (workers > 1)}", seconds


def run_oco(config: OCOConfig, out: str | Path | bool | None = None, progress: bool = True, *,
            fresh: bool = False, allow_long: bool = False) -> OCOResult:
    """Run every (problem, learner, seed) of ``config`` into ``<out>/<name>`` (default ``out``: ``config.out``;
    ``False`` keeps everything in memory). Re-running the same experiment there resumes it; a different one is
    refused unless ``fresh=True``. Invalid configurations raise before any job starts; so does a run planned at
    more than a week (:func:`planned_work`) unless ``allow_long``."""
    if not isinstance(config, OCOConfig):
        raise TypeError(f"config must be an OCOConfig, got {type(config).__name__}")
    plan = config.validate()
    line, seconds = planned_work(config, plan)
    if seconds is not None:
        check_duration(config.name, len(config.seeds) * config.horizon, seconds, allow_long,
                       unit="rounds per learner")
    if progress:
        print(line, flush=True)
    if out is False:
        return _run(config, plan, None, progress)
    with open_run_dir(config.out if out in (None, True) else out, config.name, config.config_hash(), fresh) as run_dir:
        return _run(config, plan, run_dir, progress)


def _run(config: OCOConfig, plan: list, run_dir: Path | None, progress: bool) -> OCOResult:
    runs = [(p, s) for p, s, reason in plan if not reason]
    started = time.perf_counter()
    manifest = {"status": "running", "kind": "oco", "config": config.to_dict(), "config_hash": config.config_hash(),
                "stream_layout": STREAM_LAYOUT, "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "versions": package_versions()}
    jobs = [(p, seed) for p in config.problems for seed in config.seeds if any(q == p for q, _ in runs)]
    finished: dict[tuple[str, int], tuple[pd.DataFrame, list[dict]]] = {}
    if run_dir is not None:
        write_json_atomic(run_dir / "manifest.json", manifest)
        finished = {job: loaded for job in jobs if (loaded := load_job(run_dir, _job_stem(job))) is not None}
    resumed = len(finished)

    def store(job, output):
        if run_dir is not None:
            store_job(run_dir, _job_stem(job), *output)
        finished[job] = output

    execute_jobs(partial(_run_job, config, runs), [j for j in jobs if j not in finished], store,
                 n_jobs=config.n_jobs, desc=f"{config.name} jobs", progress=progress)
    outputs = [finished[job] for job in jobs]  # configuration order: problem, seed
    results = pd.concat([f for f, _ in outputs], ignore_index=True)
    metas = [m for _, ms in outputs for m in ms]
    timings = pd.DataFrame([{"env_id": m["stream"], "agent": m["learner"], "seed": m["seed"],
                             "seconds": m["seconds"], "rounds": m["rounds"]} for m in metas])
    as_bandit = results.rename(columns={"stream": "env_id", "learner": "agent"})
    summary = summary_table(as_bandit, timings).rename(columns={"env_id": "stream", "agent": "learner"})
    summary = summary.merge(regret_slopes(results, max(10, config.horizon // 100)), on=["stream", "learner"],
                            how="left")
    first = {(m["stream"], m["learner"]): m for m in metas if m["seed"] == config.seeds[0]}
    for column in ("guarantee", "comparator"):
        summary[column] = [first[key][column] for key in zip(summary["stream"], summary["learner"])]
    privacy = [privacy_columns(first[key]["privacy_report"]) for key in zip(summary["stream"], summary["learner"])]
    for column in ("epsilon", "delta", "rho"):
        summary[column] = [p[column] for p in privacy]
    plot_path = None
    if run_dir is not None:
        write_atomic(run_dir / "results.csv", lambda p: results.to_csv(p, index=False))
        write_atomic(run_dir / "summary.csv", lambda p: summary.to_csv(p, index=False))
        plot_path = plot_regret(as_bandit, run_dir / "regret.png", ylabel=OCO_REGRET,
                                title=f"{config.name}: OCO regret vs best fixed point in hindsight")
        manifest.update(
            status="complete", finished=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            seconds=time.perf_counter() - started, resumed_jobs=resumed,
            skipped=[f"{s.label} on {p}: {reason}" for p, s, reason in plan if reason],
            privacy={f"{k[0]}/{k[1]}": m["privacy_report"] for k, m in first.items()},
            comparators={f"{k[0]}/{k[1]}": m["comparator"] for k, m in first.items()},
            comparator_gap=max(m["comparator_gap"] for m in metas),
            files={"results": "results.csv", "summary": "summary.csv", "plot": "regret.png", "jobs": "jobs/"},
        )
        write_json_atomic(run_dir / "manifest.json", manifest)
    return OCOResult(results, summary, run_dir, plot_path, resumed)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``dpbandit oco`` (one-line usage errors, :mod:`dpbandit.experiment.arguments`)."""
    from dpbandit.experiment.arguments import OneLineParser, add_allow_long

    parser = OneLineParser(prog="dpbandit oco", description="Regret of the (private) OCO learners against "
                                     "the best fixed point in hindsight on regression streams.")
    parser.add_argument("--quick", action="store_true", help="small and fast: d=5, T=1000, 2 seeds, problems "
                        "linear and linear-ridge")
    parser.add_argument("--problems", help=f"comma-separated, from {', '.join(PROBLEMS)}")
    parser.add_argument("--learners", help=f"comma-separated registry names (default: all: {', '.join(LEARNERS)})")
    parser.add_argument("--seeds", type=int, help="number of seeds")
    parser.add_argument("--horizon", type=int, help="T")
    parser.add_argument("--dim", type=int, help="d")
    parser.add_argument("--n-jobs", dest="n_jobs", type=int, help="parallel jobs")
    parser.add_argument("--out", help="parent folder of the run directory <out>/<name> (default: runs)")
    parser.add_argument("--name", help="run directory name (default: oco, or oco-quick with --quick)")
    parser.add_argument("--fresh", action="store_true", help="discard an earlier run of this name, do not resume")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_allow_long(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """``dpbandit oco``: run the OCO comparison and print its summary (``--quick``: the small CI version)."""
    args = build_parser().parse_args(argv)
    try:
        base = dict(dim=5, horizon=1000, seeds=(0, 1), problems=("linear", "linear-ridge"), checkpoints=20) \
            if args.quick else dict(problems=tuple(PROBLEMS))
        names = args.learners.split(",") if args.learners else None
        settings = {**base, "learners": default_learners(names), "name": "oco-quick" if args.quick else "oco"}
        if args.problems:
            settings["problems"] = tuple(args.problems.split(","))
        for key in ("horizon", "dim", "n_jobs", "out", "name"):
            if getattr(args, key) is not None:
                settings[key] = getattr(args, key)
        if args.seeds is not None:
            settings["seeds"] = tuple(range(check_int("seeds", args.seeds, low=1)))
        result = run_oco(OCOConfig(**settings), progress=not args.no_progress, fresh=args.fresh,
                         allow_long=args.allow_long)
    except EXPECTED as exc:
        return report("dpbandit oco", exc)
    if result.resumed_jobs:
        print(f"Resumed: {result.resumed_jobs} finished job(s) read back from {result.run_dir / 'jobs'}")
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(result.summary.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"\nResults table: {result.run_dir / 'results.csv'}\nRegret plot:   {result.plot_path}\n"
          f"Manifest:      {result.run_dir / 'manifest.json'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
