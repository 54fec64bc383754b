"""Han et al.'s Table 5.1 reproduced honestly: published numbers, the published calibration rerun (NOT PRIVATE) and
the correctly calibrated algorithms, side by side (``spec/han-frank-wolfe.md`` §8.1, §9.1, §9.5).

    dpbandit reproduce table-5.1 [--quick] [--seeds N] [--n-jobs J] [--horizons ...] [--dims ...] [--ps ...]

Setup of §8.1: the linear-regression stream (:class:`~dpbandit.envs.streams.RegressionStream`, the authors' code's
theta* = (1, ..., 1, 0, ...)/||.||_p with five ones, which produced the published numbers), l_p radius 2,
epsilon = 1, delta = 1/T, lr-scale grids of the paper's ``execute.sh``, best scale by mean test risk over the seeds
(``summarize_table.ipynb``). Algorithms: DP-TOFW ("OFW") and NoisySFW for p = 1.5, DP-TOFW and NoisySGD for
p = inf. Each cell has three columns:

* **published**: the numbers of the paper's Table 5.1, hard-coded from ``spec/han-frank-wolfe.md`` §8.1 (the GG rows
  were produced with under-calibrated noise, D1 of §9.1);
* **published calibration rerun — NOT PRIVATE**: the published code's setting (L1 = 1, the GG sampler with the D1
  radius, D2 direction and D3 exponent; for NoisySGD the projection radius 1 at p = inf), run here; its privacy
  report has guarantee "none" (DP-TOFW at p > 2 draws its node noise with the same sampler at r = 2, as the code's
  ``OFW_pge2`` does);
* **correct**: the correctly calibrated learners of :mod:`dpbandit.optim` (L1 = 2, E2 constants, the correct GG
  sampler; calibration "tight" by default, "paper" on request), each reporting (epsilon, delta)-DP.

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
from pathlib import Path

import pandas as pd

from dpbandit.envs.streams import RegressionStream
from dpbandit.experiment.errors import EXPECTED, report
from dpbandit.experiment.results import package_versions, write_atomic, write_json_atomic
from dpbandit.experiment.rundir import LOCK_FILE, run_lock
from dpbandit.optim.frank_wolfe import CALIBRATIONS, DPTOFW, PublishedSettingWarning
from dpbandit.optim.sco_baselines import NoisySFW, NoisySGD
from dpbandit.privacy.report import PUBLISHED_CODE_SETTING
from dpbandit.seeding import stream
from dpbandit.validation import check_choice, check_epsilon, check_int, check_run_name

__all__ = ["PUBLISHED", "GRIDS", "Table51Config", "QUICK", "run_table_5_1", "main"]

INF = math.inf
PUBLISHED_SOURCE = "spec/han-frank-wolfe.md §8.1, Table 5.1 (published values, under-calibrated: §9.1 D1)"
_PUBLISHED_TEXT = """
1000 5 1.5 NoisySFW 0.0885 0.00907 0.522 0.0565 0.0189 0.00216
1000 5 1.5 OFW 0.00536 0.00155 0.0172 0.00987 0.0929 0.00157
1000 5 INF NoisySGD 0.0259 0.0176 0.0802 0.0613 30.2 0.805
1000 5 INF OFW 0.0357 0.0216 0.112 0.0727 0.0765 0.00345
1000 10 1.5 NoisySFW 0.0771 0.0107 0.953 0.0947 0.0216 0.000514
1000 10 1.5 OFW 0.0183 0.00332 0.201 0.0483 0.105 0.0124
1000 10 INF NoisySGD 0.0525 0.0149 0.636 0.186 31.2 0.516
1000 10 INF OFW 0.0915 0.0209 0.582 0.157 0.0852 0.0109
1000 20 1.5 NoisySFW 0.0414 0.000302 1.05 0.0108 0.0217 0.0027
1000 20 1.5 OFW 0.0307 0.00344 0.775 0.128 0.108 0.00901
1000 20 INF NoisySGD 0.0202 0.00262 0.955 0.111 31.4 0.945
1000 20 INF OFW 0.0766 0.00464 0.982 0.0768 0.0825 0.0114
2000 5 1.5 NoisySFW 0.0746 0.00644 0.44 0.0287 0.0376 0.000492
2000 5 1.5 OFW 0.00285 0.000197 0.00235 0.00106 0.222 0.0184
2000 5 INF NoisySGD 0.0127 0.00371 0.0344 0.0133 119 0.962
2000 5 INF OFW 0.0152 0.00585 0.0432 0.02 0.156 0.00851
2000 10 1.5 NoisySFW 0.0701 0.00493 0.887 0.0691 0.0366 0.00502
2000 10 1.5 OFW 0.00704 0.00247 0.0595 0.0321 0.189 0.00384
2000 10 INF NoisySGD 0.0382 0.0133 0.484 0.178 124 2.36
2000 10 INF OFW 0.0582 0.0113 0.364 0.0795 0.159 0.00928
2000 20 1.5 NoisySFW 0.0376 0.00262 0.957 0.0673 0.0397 0.00427
2000 20 1.5 OFW 0.018 0.00374 0.406 0.106 0.2 0.00776
2000 20 INF NoisySGD 0.0209 0.00148 0.947 0.0672 125 0.345
2000 20 INF OFW 0.067 0.00799 0.82 0.114 0.164 0.0098
5000 5 1.5 NoisySFW 0.0587 0.0212 0.35 0.135 0.0979 0.0143
5000 5 1.5 OFW 0.00258 1.58e-05 0.000702 0.00051 0.469 0.00995
5000 5 INF NoisySGD 0.00538 0.000982 0.00989 0.00378 742 3.35
5000 5 INF OFW 0.00667 0.000392 0.0145 0.00153 0.397 0.0291
5000 10 1.5 NoisySFW 0.0659 0.00926 0.808 0.115 0.0867 0.00326
5000 10 1.5 OFW 0.00376 0.000479 0.0163 0.0053 0.477 0.0189
5000 10 INF NoisySGD 0.0201 0.00175 0.115 0.0118 747 2.4
5000 10 INF OFW 0.022 0.00347 0.125 0.0204 0.38 0.0117
5000 20 1.5 NoisySFW 0.0401 0.000848 1 0.0264 0.0834 0.0121
5000 20 1.5 OFW 0.00962 0.00209 0.185 0.0558 0.527 0.0121
5000 20 INF NoisySGD 0.049 0.00585 0.602 0.0571 755 2.89
5000 20 INF OFW 0.0535 0.00736 0.637 0.105 0.413 0.004
10000 5 1.5 NoisySFW 0.0607 0.027 0.351 0.161 0.163 0.00869
10000 5 1.5 OFW 0.00255 4.72e-05 0.000318 0.000179 1.04 0.0295
10000 5 INF OFW 0.00337 0.000336 0.00293 0.00106 0.76 0.0157
10000 10 1.5 NoisySFW 0.0646 0.00522 0.789 0.0744 0.175 0.0253
10000 10 1.5 OFW 0.00282 0.00025 0.00465 0.00184 1.07 0.0987
10000 10 INF NoisySGD 0.0103 0.000748 0.0505 0.00514 3.03e3 8.8
10000 10 INF OFW 0.00976 0.00259 0.0467 0.0159 0.803 0.013
10000 20 1.5 NoisySFW 0.0391 0.00178 0.937 0.0303 0.153 0.0194
10000 20 1.5 OFW 0.00487 0.000584 0.0592 0.0155 1.04 0.102
10000 20 INF NoisySGD 0.0409 0.00362 0.482 0.0453 3.12e3 27.6
10000 20 INF OFW 0.0316 0.00192 0.363 0.0283 0.844 0.0464
"""
#: (T, d, p, algo) -> (risk mean, risk std, SubOpt mean, SubOpt std, time mean, time std), as published.
PUBLISHED: dict[tuple[int, int, float, str], tuple[float, ...]] = {
    (int(f[0]), int(f[1]), float(f[2]), f[3]): tuple(float(v) for v in f[4:])
    for f in (line.split() for line in _PUBLISHED_TEXT.strip().splitlines())
}
#: lr-scale grids of execute.sh (spec §8.1) per (algo, p).
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
    """The grid to run (defaults: the full grid of §8.1). ``seeds`` is the number of seeds 0..seeds-1;
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

    def __post_init__(self) -> None:
        for field, values, low in (("horizons", self.horizons, 4), ("dims", self.dims, 3)):
            if not values:
                raise ValueError(f"{field} must not be empty")
            object.__setattr__(self, field, tuple(check_int(field, v, low=low) for v in values))
        if not self.ps or any(p not in (1.5, INF) for p in self.ps):
            raise ValueError(f"ps must be a non-empty subset of (1.5, inf) (the table's geometries), got {self.ps!r}")
        object.__setattr__(self, "ps", tuple(float(p) for p in self.ps))
        check_int("seeds", self.seeds, low=1)
        check_epsilon(self.epsilon)
        check_choice("calibration", self.calibration, CALIBRATIONS)
        check_int("sgd_max_horizon", self.sgd_max_horizon, low=0)
        check_int("n_jobs", self.n_jobs, low=1)
        check_run_name(self.name)
        RegressionStream(max(self.dims), max(self.horizons), theta="code")  # refuses up front what cannot fit

    def algorithms(self, horizon: int, p: float) -> tuple[str, ...]:
        if p == 1.5:
            return ("NoisySFW", "OFW")
        return ("NoisySGD", "OFW") if horizon <= self.sgd_max_horizon else ("OFW",)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["ps"] = [str(p) for p in self.ps]
        return out


#: ``--quick``: one cell pair (T = 1000, d = 5, both geometries), 3 seeds, NoisySGD skipped; seconds on 2 cores.
QUICK = Table51Config(horizons=(1000,), dims=(5,), seeds=3, sgd_max_horizon=0, name="table-5.1-quick")


def _learner(algo: str, column: str, horizon: int, d: int, p: float, scale: float, seed: int,
             config: Table51Config):
    kwargs = dict(p=p, radius=2.0, epsilon=config.epsilon, delta=1.0 / horizon, lipschitz=1.0, lr_scale=scale,
                  rng=stream(seed, "privacy"))
    if column == "published":
        return _CLASSES[algo](d, horizon, published_setting_not_private=True, **kwargs)
    return _CLASSES[algo](d, horizon, calibration=config.calibration, **kwargs)


_REPORTS: dict[tuple, object] = {}


def _run_cell(config: Table51Config, horizon: int, d: int, p: float, seed: int) -> tuple[list[dict], set[str]]:
    """Every (algorithm, column, scale) of one (T, d, p) cell on the data of one seed."""
    data = RegressionStream(d, horizon, p=p, theta="code").draw(seed)
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


def _fmt(mean: float, std: float) -> str:
    return f"{mean:.3g}±{std:.3g}"


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (T, d, p, algo): published numbers and, per column, the best scale by mean risk with
    mean ± std (over seeds) of Risk, SubOpt and Time at that scale."""
    stats = (results.groupby(["T", "d", "p", "algo", "column", "lr_scale"])[["risk", "subopt", "seconds"]]
             .agg(["mean", "std"]))
    stats.columns = [f"{a}_{b}" for a, b in stats.columns]
    stats = stats.reset_index()
    best = stats.loc[stats.groupby(["T", "d", "p", "algo", "column"])["risk_mean"].idxmin()]
    rows = []
    for (horizon, d, p, algo), group in best.groupby(["T", "d", "p", "algo"], sort=True):
        row = dict(T=horizon, d=d, p="inf" if math.isinf(p) else f"{p:g}", algo=algo)
        pub = PUBLISHED.get((horizon, d, p, algo))
        for k, metric in enumerate(("risk", "subopt", "time")):
            row[f"{metric}_published"] = _fmt(pub[2 * k], pub[2 * k + 1]) if pub else "not published"
            for column, tag in (("published", "rerun_NOT_PRIVATE"), ("correct", "correct")):
                sel = group[group["column"] == column]
                key = "seconds" if metric == "time" else metric
                row[f"{metric}_{tag}"] = (_fmt(sel[f"{key}_mean"].iloc[0], sel[f"{key}_std"].iloc[0])
                                          if len(sel) else "not run")
        for column, tag in (("published", "rerun_NOT_PRIVATE"), ("correct", "correct")):
            sel = group[group["column"] == column]
            row[f"scale_{tag}"] = float(sel["lr_scale"].iloc[0]) if len(sel) else float("nan")
            row[f"risk_mean_{tag}"] = float(sel["risk_mean"].iloc[0]) if len(sel) else float("nan")
        row["risk_mean_published"] = pub[0] if pub else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def to_markdown(table: pd.DataFrame, config: Table51Config) -> str:
    """The table in the paper's layout, three columns per metric."""
    cols = ["T", "d", "p", "algo"]
    heads = ["T", "d", "p", "algo"]
    for metric, name in (("risk", "Risk"), ("subopt", "SubOpt"), ("time", "Time (s)")):
        for tag, label in (("published", "published"), ("rerun_NOT_PRIVATE", "published calibration, NOT PRIVATE"),
                           ("correct", f"correct, ε={config.epsilon:g}")):
            cols.append(f"{metric}_{tag}")
            heads.append(f"{name}: {label}")
    cols += ["scale_rerun_NOT_PRIVATE", "scale_correct"]
    heads += ["best scale (NOT PRIVATE rerun)", "best scale (correct)"]
    lines = [
        f"# Table 5.1 of Han et al., published vs correctly calibrated ({config.calibration} calibration)",
        "",
        f"Published column: {PUBLISHED_SOURCE}. The middle column reruns the published code's calibration and is",
        f"labelled '{PUBLISHED_CODE_SETTING}': it does not meet the stated ε. The right column is (ε={config.epsilon:g},",
        "δ=1/T)-DP. Mean ± std over seeds at the best lr scale by mean risk; times are this",
        "implementation's.",
        "",
        "| " + " | ".join(heads) + " |",
        "|" + "---|" * len(heads),
    ]
    for _, row in table.iterrows():
        lines.append("| " + " | ".join(f"{row[c]:g}" if isinstance(row[c], float) else str(row[c]) for c in cols)
                     + " |")
    return "\n".join(lines) + "\n"


@dataclasses.dataclass(frozen=True)
class Table51Result:
    results: pd.DataFrame
    table: pd.DataFrame
    run_dir: Path | None


def _prepare(run_dir: Path) -> None:
    manifest = run_dir / "manifest.json"
    if run_dir.exists() and (not run_dir.is_dir() or any(p.name != LOCK_FILE for p in run_dir.iterdir())):
        import json

        try:
            kind = json.loads(manifest.read_text()).get("kind") if manifest.is_file() else None
        except (OSError, ValueError, AttributeError):
            kind = None
        if kind != "reproduce table-5.1":
            raise ValueError(f"run directory {str(run_dir)!r} exists and is not a table-5.1 reproduction; it is left "
                             "untouched: choose another --name or --out")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot create the run directory {str(run_dir)!r}: {exc.strerror}") from None


def run_table_5_1(config: Table51Config = Table51Config(), out: str | Path | None = "runs",
                  progress: bool = True) -> Table51Result:
    """Run the grid of ``config`` (cells in parallel over ``n_jobs`` processes); write the run directory
    ``<out>/<config.name>`` unless ``out`` is None. A previous reproduction of the same name is overwritten."""
    if not isinstance(config, Table51Config):
        raise TypeError(f"config must be a Table51Config, got {type(config).__name__}")
    if out is None:
        return _run(config, None, progress)
    run_dir = Path(out) / config.name
    _prepare(run_dir)
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
    jobs = [(T, d, p, s) for T in config.horizons for d in config.dims for p in config.ps for s in range(config.seeds)]
    from tqdm.auto import tqdm

    bar = tqdm(total=len(jobs), desc=f"{config.name} cells", unit="cell", disable=not progress)
    rows, warned = [], set()
    try:
        if config.n_jobs == 1:
            outputs = (_run_cell(config, *job) for job in jobs)
        else:
            from joblib import Parallel, delayed

            outputs = Parallel(n_jobs=config.n_jobs, return_as="generator_unordered")(
                delayed(_run_cell)(config, *job) for job in jobs)
        for cell_rows, cell_warned in outputs:
            rows += cell_rows
            warned |= cell_warned
            bar.update()
    finally:
        bar.close()
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
    parser = argparse.ArgumentParser(prog="dpbandit reproduce table-5.1", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small subset for CI (T=1000, d=5, 3 seeds)")
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
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
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
        result = run_table_5_1(config, out=args.out, progress=not args.no_progress)
    except EXPECTED as exc:
        return report("dpbandit reproduce table-5.1", exc)
    print(to_markdown(result.table, config))
    print(f"Results: {result.run_dir / 'results.csv'}\nTable:   {result.run_dir / 'table.md'}\n"
          f"Manifest: {result.run_dir / 'manifest.json'}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
