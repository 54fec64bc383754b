"""Regenerate the shipped reference results of a size: ``python -m dpbandit.experiment.bench.make_references
--size quick`` (or ``--size full``).

Runs the suite with every built-in private agent and uniform random play (``dpbandit bench`` without ``--agent``,
into ``<out>/references-<size>``, resumable like every run), then writes ``references/<size>.csv`` (the final row and
CPU seconds of every job) and ``references/<size>.json`` (suite, dpbandit version, per scenario and agent the config
hash of :func:`~dpbandit.experiment.bench.references.reference_experiment` and the seeds, the privacy reports, the refusals,
the machine's load) into this package. Run it after anything that changes results (a new random-stream layout, a
version bump, a changed scenario): ``tests/experiment/test_bench.py`` fails while a shipped reference is stale.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from dpbandit.experiment.errors import EXPECTED, report

__all__ = ["config_hashes", "main", "make_reference"]


def config_hashes(scenario: str, size: str, agents) -> dict[str, str]:
    """Per agent of the reference of ``scenario`` (``"random"`` and the built-in agents whose rows it holds): the
    config hash of the experiment that made its rows."""
    from dpbandit.experiment.bench.references import reference_experiment

    return {a: reference_experiment(scenario, size, a).config_hash() for a in agents}


def make_reference(size: str, *, out: str = "runs", name: str = "", resume: bool = False, n_jobs: int = 2,
                   backend: str = "local", dask_address: str | None = None, progress: bool = True,
                   folder: Path | None = None) -> Path:
    """Run the suite at ``size`` with the built-in agents into ``<out>/<name>`` (default name
    ``references-<size>``) and write the reference files into ``folder`` (default: this package's
    ``references/``); returns the table's path. Every job is computed afresh (an earlier run there is discarded: its
    jobs may come from older code, which no config hash sees), unless ``resume``: then the finished jobs of a bench
    of the same size there (e.g. ``name="bench-quick"``, a ``dpbandit bench --quick`` just run with this code) are
    read back."""
    from dpbandit import __version__
    from dpbandit.experiment.bench.references import COMMAND, FINAL_COLUMNS
    from dpbandit.experiment.bench.runner import BenchConfig, run_bench
    from dpbandit.experiment.bench.suite import load_scenario, suite_name
    from dpbandit.files import read_manifest, write_atomic, write_json_atomic

    bc = BenchConfig(size=size, n_jobs=n_jobs, name=name or f"references-{size}", out=out)
    result = run_bench(bc, progress=progress, fresh=not resume, backend=backend, dask_address=dask_address,
                       allow_long=True)
    finals = result.finals[list(FINAL_COLUMNS)]
    manifest = read_manifest(result.run_dir)
    meta = {
        "suite": suite_name(), "size": size, "dpbandit": __version__,
        "made": datetime.now(timezone.utc).isoformat(timespec="seconds"), "command": COMMAND.format(size=size),
        "scenarios": {name: {"config_hashes": config_hashes(name, size, dict.fromkeys(
                                 finals.loc[finals["scenario"] == name, "stem"])),
                             "seeds": load_scenario(name).size(size).seeds,
                             "horizon": load_scenario(name).size(size).horizon,
                             "epsilons": list(load_scenario(name).size(size).epsilons)} for name in bc.scenarios},
        "privacy": manifest["privacy"], "refused": manifest["refused"],
        "noise_off_unavailable": manifest["noise_off_unavailable"],
        "timing": manifest["timing"], "load": manifest["timing"].get("load_average_1_5_15"),
        "versions": manifest["versions"],
    }
    folder = Path(__file__).with_name("references") if folder is None else Path(folder)
    folder.mkdir(exist_ok=True)
    table = write_atomic(folder / f"{size}.csv", lambda p: finals.to_csv(p, index=False), kind="single",
                         overwrite=True)
    write_json_atomic(folder / f"{size}.json", meta, kind="single", overwrite=True)
    return table


def main(argv: list[str] | None = None) -> int:
    from dpbandit.experiment.arguments import OneLineParser

    parser = OneLineParser(prog="python -m dpbandit.experiment.bench.make_references",
                           description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("quick", "full"), required=True)
    parser.add_argument("--out", default="runs", help="parent folder of the bench run (default: runs)")
    parser.add_argument("--name", default="", help="run folder name (default: references-<size>)")
    parser.add_argument("--resume", action="store_true", help="read back the finished jobs of the bench in that "
                        "folder (only when they were computed by this code: e.g. --name bench-quick right after "
                        "'dpbandit bench --quick'); default: compute every job afresh")
    parser.add_argument("--n-jobs", dest="n_jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--backend", choices=("local", "dask"), default="local")
    parser.add_argument("--dask-address", dest="dask_address")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    try:
        path = make_reference(args.size, out=args.out, name=args.name, resume=args.resume, n_jobs=args.n_jobs,
                              backend=args.backend,
                              dask_address=args.dask_address, progress=not args.no_progress)
    except EXPECTED as exc:
        return report("make_references", exc)
    print(f"Reference written: {path} and {path.with_suffix('.json')}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
