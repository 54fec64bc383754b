"""Han et al.'s Table 5.1 reproduced honestly: published numbers, the published calibration rerun (NOT PRIVATE) and
the correctly calibrated algorithms, side by side, on the instance the published numbers imply.

    dpbandit reproduce table-5.1 [--quick] [--seeds N] [--n-jobs J] [--horizons ...] [--dims ...] [--ps ...]

Setup (``docs/derivations.md#table-51``): the linear-regression stream
(:class:`~dpbandit.envs.streams.RegressionStream`, theta* = (1, ..., 1, 0, ...)/||.||_p), l_p radius 2,
epsilon = 1, delta = 1/T, lr-scale grids of the paper's ``execute.sh``, best scale by mean test risk over the seeds
(``summarize_table.ipynb``). Algorithms: DP-TOFW ("OFW") and NoisySFW for p = 1.5, DP-TOFW and NoisySGD for
p = inf.

**Instance.** The number of ones of theta* is derived per d from the published numbers
(:mod:`~dpbandit.experiment.reproduce.table_5_1_published`): each published row implies the risk of the zero vector
through Risk(0) = Risk* + (Risk - Risk*)/SubOpt, and at d = 10 and 20 that matches all ones in 28 of the 32 rows
(27 within 5 %), not the five ones of the authors' repository (which the four NoisySGD rows at T <= 2000 match).
``--theta`` overrides the derivation ("five ones", "all ones"). The derivation is printed with the table.

Each cell has three columns:

* **published**: the numbers of the paper's Table 5.1 (the GG rows were produced with under-calibrated noise);
* **published calibration rerun — NOT PRIVATE**: the published code's setting (L1 = 1, the GG sampler with the
  published radius, direction and exponent defects; for NoisySGD the projection radius 1 at p = inf), run here;
  its privacy report has guarantee "none" (DP-TOFW at p > 2 draws its node noise with the same sampler at r = 2);
* **correct**: the correctly calibrated learners of :mod:`dpbandit.optim` (L1 = 2, corrected constants and GG
  sampler; calibration "tight" by default, "paper" on request), each reporting (epsilon, delta)-DP.

**Reproduced or not.** Per cell, the ratio published / rerun of the mean risk at the rerun's best scale, with a 95 %
bootstrap interval that carries our seeds and the published mean's own standard error (sd/sqrt(10),
:func:`~dpbandit.experiment.stats.ratio_to_published`). A cell is "consistent" when the interval contains 1 and
"not reproduced" otherwise. The best scale is chosen on the same seeds, which biases the rerun's risk down a little.

Time is the wall-clock time of a run's updates in this implementation (the published times are the authors').
NoisySGD costs n^2 steps per run; cells with T above ``--sgd-max-horizon`` are marked "not run".
Output (run directory ``<out>/<name>``): ``results.csv`` (one row per run), ``table.csv``, ``table.md``,
``manifest.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
import warnings
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

import pandas as pd

from dpbandit.envs.streams import RegressionStream
from dpbandit.experiment.reproduce.table_5_1_published import (
    CANDIDATES,
    PUBLISHED,
    PUBLISHED_SOURCE,
    Instance,
    derive_instances,
)
from dpbandit.experiment.reproduce.table_5_1_report import summarise, to_markdown
from dpbandit.experiment.config import MAX_SEEDS
from dpbandit.experiment.errors import EXPECTED, report
from dpbandit.experiment.execution import execute_jobs
from dpbandit.experiment.planning import CALIBRATE_ROUNDS, check_duration, duration
from dpbandit.experiment.results import package_versions, write_atomic, write_json_atomic
from dpbandit.experiment.rundir import claim_run_dir, run_lock
from dpbandit.optim.frank_wolfe import CALIBRATIONS, DPTOFW, PublishedSettingWarning
from dpbandit.optim.sco_baselines import NoisySFW, NoisySGD
from dpbandit.privacy.report import PUBLISHED_CODE_SETTING
from dpbandit.seeding import stream
from dpbandit.validation import check_choice, check_epsilon, check_int, check_n_jobs, check_run_name

__all__ = ["PUBLISHED", "GRIDS", "Table51Config", "QUICK", "run_table_5_1", "planned_work", "main"]

INF = math.inf
#: Choices of ``theta``: derived from the published numbers per d, or one candidate at every d.
THETAS: tuple[str, ...] = ("derived", *CANDIDATES)
#: lr-scale grids of execute.sh per (algo, p).
GRIDS: dict[tuple[str, float], tuple[float, ...]] = {
    ("OFW", 1.5): (0.4, 0.6, 1.0),
    ("NoisySFW", 1.5): (0.01, 0.02, 0.04, 0.06, 0.08, 0.1),
    ("OFW", INF): (0.6, 0.7, 0.8, 1.0),
    ("NoisySGD", INF): (0.1, 0.4, 0.8, 1.0, 1.2, 2.0),
}
PUBLISHED_COLUMN = f"published calibration rerun ({PUBLISHED_CODE_SETTING})"
_CLASSES = {"OFW": DPTOFW, "NoisySFW": NoisySFW, "NoisySGD": NoisySGD}


@dataclasses.dataclass(frozen=True)
class Table51Config:
    """The grid to run (defaults: the published grid). ``seeds`` is the number of seeds 0..seeds-1;
    ``calibration`` is that of the correct column; NoisySGD runs only for ``T <= sgd_max_horizon``."""

    horizons: tuple[int, ...] = (1000, 2000, 5000, 10000)
    dims: tuple[int, ...] = (5, 10, 20)
    ps: tuple[float, ...] = (1.5, INF)
    seeds: int = 10
    epsilon: float = 1.0
    calibration: str = "tight"
    sgd_max_horizon: int = 1000
    n_jobs: int = 1
    name: str = "table-5.1"
    theta: str = "derived"

    def __post_init__(self) -> None:
        for field, values, low in (("horizons", self.horizons, 4), ("dims", self.dims, 3)):
            if not values:
                raise ValueError(f"{field} must not be empty")
            object.__setattr__(self, field, tuple(check_int(field, v, low=low) for v in values))
        if not self.ps or any(p not in (1.5, INF) for p in self.ps):
            raise ValueError(f"ps must be a non-empty subset of (1.5, inf) (the table's geometries), got {self.ps!r}")
        object.__setattr__(self, "ps", tuple(float(p) for p in self.ps))
        check_int("seeds", self.seeds, low=1, high=MAX_SEEDS)
        check_epsilon(self.epsilon)
        check_choice("calibration", self.calibration, CALIBRATIONS)
        check_int("sgd_max_horizon", self.sgd_max_horizon, low=0)
        check_n_jobs(self.n_jobs)
        check_choice("theta", self.theta, THETAS)
        check_run_name(self.name)
        RegressionStream(max(self.dims), max(self.horizons), theta="code")  # refuses up front what cannot fit

    def algorithms(self, horizon: int, p: float) -> tuple[str, ...]:
        if p == 1.5:
            return ("NoisySFW", "OFW")
        return ("NoisySGD", "OFW") if horizon <= self.sgd_max_horizon else ("OFW",)

    def instances(self) -> dict[int, Instance]:
        """theta* per d: :func:`derive_instances`, or the candidate named by ``theta`` at every d."""
        derived = derive_instances(self.dims)
        if self.theta == "derived":
            return derived
        return {d: dataclasses.replace(i, name=self.theta, sparsity=CANDIDATES[self.theta](d))
                for d, i in derived.items()}

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["ps"] = [str(p) for p in self.ps]
        return out


#: ``--quick``: T = 1000, d = 5 and 20 (where the instance matters), both geometries, 3 seeds, NoisySGD skipped;
#: well under a minute on 2 cores.
QUICK = Table51Config(horizons=(1000,), dims=(5, 20), seeds=3, sgd_max_horizon=0, name="table-5.1-quick")


def _learner(algo: str, column: str, horizon: int, d: int, p: float, scale: float, seed: int,
             config: Table51Config):
    kwargs = dict(p=p, radius=2.0, epsilon=config.epsilon, delta=1.0 / horizon, lipschitz=1.0, lr_scale=scale,
                  rng=stream(seed, "privacy"))
    if column == "published":
        return _CLASSES[algo](d, horizon, published_setting_not_private=True, **kwargs)
    return _CLASSES[algo](d, horizon, calibration=config.calibration, **kwargs)


_REPORTS: dict[tuple, object] = {}


def planned_work(config: Table51Config) -> tuple[int, float | None]:
    """The grid's learner steps (T per streaming run; NoisySGD's n^2 = T^2) and, from :data:`CALIBRATE_ROUNDS`
    steps on, their wall time on this machine over ``n_jobs`` processes: each (algorithm, p) timed at the largest d
    on a short stream (the correct column; the published one costs the same steps)."""
    work: dict[tuple[str, float], int] = {}
    for horizon in config.horizons:
        for p in config.ps:
            for algo in config.algorithms(horizon, p):
                runs = 2 * len(GRIDS[(algo, p)]) * len(config.dims) * config.seeds
                work[(algo, p)] = work.get((algo, p), 0) + runs * (horizon * horizon if algo == "NoisySGD" else horizon)
    steps = sum(work.values())
    if steps < CALIBRATE_ROUNDS:
        return steps, None
    d = max(config.dims)
    seconds = sum(n * _seconds_per_step(algo, p, d, config) for (algo, p), n in work.items())
    return steps, seconds / _workers(config)


def _workers(config: Table51Config) -> int:
    return min(config.n_jobs, len(config.horizons) * len(config.dims) * len(config.ps) * config.seeds)


def _seconds_per_step(algo: str, p: float, d: int, config: Table51Config) -> float:
    """Seconds per step of ``algo``: NoisySGD's n^2 = 1,600 steps (all at its last sample), else the second half
    of 400 updates (the first ones pay for loading compiled kernels)."""
    n = 40 if algo == "NoisySGD" else 400
    data = RegressionStream(d, n, p=p, theta="code", sparsity=1).draw(0)
    learner = _learner(algo, "correct", n, d, p, GRIDS[(algo, p)][0], 0, config)
    timed_from = 0 if algo == "NoisySGD" else n // 2
    for i, (x, y) in enumerate(zip(data.x, data.y)):
        if i == timed_from:
            start = time.perf_counter()
        learner.update(x, y)
    return (time.perf_counter() - start) / (n * n if algo == "NoisySGD" else n - timed_from)


def _run_job(config: Table51Config, job: tuple) -> tuple[list[dict], set[str]]:
    return _run_cell(config, *job)


def _run_cell(config: Table51Config, horizon: int, d: int, p: float, seed: int,
              sparsity: int) -> tuple[list[dict], set[str]]:
    """Every (algorithm, column, scale) of one (T, d, p) cell on the data of one seed (theta* with ``sparsity``
    ones)."""
    data = RegressionStream(d, horizon, p=p, theta="code", sparsity=sparsity).draw(seed)
    rows, warned = [], set()
    for algo in config.algorithms(horizon, p):
        for column in ("published", "correct"):
            for scale in GRIDS[(algo, p)]:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", PublishedSettingWarning)
                    learner = _learner(algo, column, horizon, d, p, scale, seed, config)
                warned.update(str(w.message) for w in caught if issubclass(w.category, PublishedSettingWarning))
                start = time.perf_counter()
                for x, y in zip(data.x, data.y):
                    learner.update(x, y)
                seconds = time.perf_counter() - start
                key = (algo, column, scale, horizon, d, p, config.epsilon, config.calibration)
                if key not in _REPORTS:  # reports depend on the configuration only, not on the seed's data
                    _REPORTS[key] = learner.privacy_report()
                report = _REPORTS[key]
                if column == "correct" and report.guarantee != "DP":  # never aggregate a non-private run as private
                    raise RuntimeError(f"{algo} in the correct column reports {report.guarantee!r}")
                theta = learner.predict()
                rows.append(dict(T=horizon, d=d, p=p, algo=algo, column=column, seed=seed, lr_scale=scale,
                                 risk=data.risk(theta), subopt=data.subopt(theta), seconds=seconds,
                                 guarantee=report.guarantee, epsilon=report.epsilon, label=report.label))
    return rows, warned


@dataclasses.dataclass(frozen=True)
class Table51Result:
    results: pd.DataFrame
    table: pd.DataFrame
    run_dir: Path | None


def run_table_5_1(config: Table51Config = Table51Config(), out: str | Path | None = "runs",
                  progress: bool = True, allow_long: bool = False) -> Table51Result:
    """Run the grid of ``config`` (cells in parallel over ``n_jobs`` processes); write the run directory
    ``<out>/<config.name>`` unless ``out`` is None. A previous reproduction of the same name is overwritten. The
    planned work (:func:`planned_work`) is printed with ``progress``; more than a week of it is refused before any
    work unless ``allow_long``."""
    if not isinstance(config, Table51Config):
        raise TypeError(f"config must be a Table51Config, got {type(config).__name__}")
    steps, seconds = planned_work(config)
    if seconds is not None:
        check_duration(config.name, steps, seconds, allow_long, unit="learner steps")
    if progress:
        workers = _workers(config)
        about = "" if seconds is None else f"; about {duration(seconds)} with {workers} parallel job" + (
            "s" if workers > 1 else "")
        print(f"{config.name}: {steps:,} learner steps{about}", flush=True)
    if out is None:
        return _run(config, None, progress)
    run_dir = claim_run_dir(Path(out) / config.name, "reproduce table-5.1")
    with run_lock(run_dir):
        return _run(config, run_dir, progress)


def _run(config: Table51Config, run_dir: Path | None, progress: bool) -> Table51Result:
    manifest = {"kind": "reproduce table-5.1", "status": "running", "config": config.to_dict(),
                "started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "versions": package_versions(),
                "published_source": PUBLISHED_SOURCE}
    if run_dir is not None:
        write_json_atomic(run_dir / "manifest.json", manifest)
    warnings.warn(f"the middle column of Table 5.1 reruns the published code's calibration: {PUBLISHED_COLUMN} "
                  "results are not differentially private and are labelled as such", PublishedSettingWarning,
                  stacklevel=2)
    instances = config.instances()
    manifest["instances"] = {str(d): {"theta": i.name, "ones": i.sparsity, "derivation": i.describe()}
                             for d, i in instances.items()}
    jobs = [(T, d, p, s, instances[d].sparsity)
            for T in config.horizons for d in config.dims for p in config.ps for s in range(config.seeds)]
    rows, warned = [], set()

    def store(job, output):
        cell_rows, cell_warned = output
        rows.extend(cell_rows)
        warned.update(cell_warned)

    # execute_jobs: workers that end with the driver, Ctrl-C in one line (dpbandit.experiment.execution)
    execute_jobs(partial(_run_job, config), jobs, store, n_jobs=config.n_jobs, desc=f"{config.name} cells",
                 progress=progress, unit="cell")
    results = pd.DataFrame(rows).sort_values(["T", "d", "p", "algo", "column", "lr_scale", "seed"], kind="stable")
    results = results.reset_index(drop=True)
    results["column"] = results["column"].map({"published": PUBLISHED_COLUMN,
                                               "correct": f"correct ({config.calibration})"})
    table = summarise(results.assign(column=results["column"].map(
        lambda c: "published" if c == PUBLISHED_COLUMN else "correct")))
    if run_dir is not None:
        write_atomic(run_dir / "results.csv", lambda path: results.to_csv(path, index=False))
        write_atomic(run_dir / "table.csv", lambda path: table.to_csv(path, index=False))
        write_atomic(run_dir / "table.md", lambda path: path.write_text(to_markdown(table, config)))
        manifest.update(status="complete", finished=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                        warnings=sorted(warned), files={"results": "results.csv", "table": "table.csv",
                                                        "markdown": "table.md"},
                        note=f"rows labelled {PUBLISHED_COLUMN!r} are NOT private runs (guarantee 'none')")
        write_json_atomic(run_dir / "manifest.json", manifest)
    return Table51Result(results, table, run_dir)


def build_parser() -> argparse.ArgumentParser:
    from dpbandit.experiment.arguments import OneLineParser, add_allow_long

    parser = OneLineParser(prog="dpbandit reproduce table-5.1", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small subset for CI (T=1000, d=5 and 20, 3 seeds)")
    parser.add_argument("--out", default="runs", help="parent folder of the run directory (default: runs)")
    parser.add_argument("--seeds", type=int, help="number of seeds (default 10; 3 with --quick)")
    parser.add_argument("--n-jobs", dest="n_jobs", type=int, help="parallel processes over cells (default 1)")
    parser.add_argument("--horizons", type=int, nargs="+", help="T values (default 1000 2000 5000 10000)")
    parser.add_argument("--dims", type=int, nargs="+", help="d values (default 5 10 20)")
    parser.add_argument("--ps", type=float, nargs="+", help="p values among 1.5 and inf (default both)")
    parser.add_argument("--calibration", choices=CALIBRATIONS, help="calibration of the correct column (tight)")
    parser.add_argument("--sgd-max-horizon", dest="sgd_max_horizon", type=int,
                        help="run NoisySGD (n^2 steps) only up to this T (default 1000; 0 with --quick)")
    parser.add_argument("--name", help="run directory name (default table-5.1, table-5.1-quick)")
    parser.add_argument("--theta", choices=THETAS,
                        help="theta* of the stream: derived per d from the published numbers (default), or one "
                             "candidate at every d")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_allow_long(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    """CLI entry point (``dpbandit reproduce table-5.1 ...``); returns the exit code."""
    args = build_parser().parse_args(argv)
    base = QUICK if args.quick else Table51Config()
    changes = {k: v for k, v in vars(args).items()
               if k in {f.name for f in dataclasses.fields(Table51Config)} and v is not None}
    for key in ("horizons", "dims", "ps"):
        if key in changes:
            changes[key] = tuple(changes[key])
    try:
        config = dataclasses.replace(base, **changes)
        result = run_table_5_1(config, out=args.out, progress=not args.no_progress, allow_long=args.allow_long)
    except EXPECTED as exc:
        return report("dpbandit reproduce table-5.1", exc)
    print(to_markdown(result.table, config))
    print(f"Results: {result.run_dir / 'results.csv'}\nTable:   {result.run_dir / 'table.md'}\n"
          f"Manifest: {result.run_dir / 'manifest.json'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
