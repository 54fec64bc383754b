"""Running the suite: :func:`run_bench` scores private agents on every scenario into one run directory.

Each scenario is one experiment of the runner (:func:`~dpbandit.experiment.runner.run_experiment`: the same jobs,
seeding, integrity records, resumption, joblib or Dask execution as every run) in ``scenarios/<name>/``; every
agent of a scenario sees the same users per seed (common random numbers). The bench run directory holds::

    <out>/<name>/
        manifest.json     kind "bench": configuration and hash, versions (plugins too), privacy reports, the
                          reference used, CPU and wall time, the machine's load
        results.csv       the regret curves of every scenario (env_id = scenario, agent = "<agent> eps=<e>"), with the
                          reference's final rows (t = T) for the agents read from it: dpbandit plot / compare read it
        finals.csv        final regret and CPU seconds per (scenario, agent, epsilon, seed), with its source
        scores.csv        the scores (dpbandit.experiment.bench.scores), one row per (scenario, agent, epsilon)
        scorecard.md, scorecard.html, figure-<scenario>.png
        scenarios/        the runner's run directories, one per scenario

Modes: without ``agents`` every built-in private agent runs (this is how the references are made); with ``agents``
(registry names, ``"module:Class"`` or classes) only those run, each with its noise-off version, and uniform random
play and the built-in agents are read from the shipped reference of the size (same seeds, same users), which must be
current (:func:`~dpbandit.experiment.bench.references.reference_problems`), unless ``use_reference=False``.
"""

from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd

from dpbandit.experiment.bench import scores as scoring
from dpbandit.experiment.bench.plan import (Cell, agent_stem, plan_cells, plan_line, reference_for,
                                            seeds_for)
from dpbandit.experiment.bench.references import FINAL_COLUMNS
from dpbandit.experiment.bench.suite import (_ALL_SIZES, TINY_SCENARIOS, load_scenario, scenario_names,
                                             suite_name)
from dpbandit.experiment.config import config_digest, make_env
from dpbandit.experiment.results import COLUMNS, package_versions
from dpbandit.validation import check_choice, check_int, check_run_name

__all__ = ["BenchConfig", "BenchResult", "run_bench"]

#: Files of a bench run directory (the manifest's ``files``).
FILES = {"results": "results.csv", "finals": "finals.csv", "scores": "scores.csv", "scorecard": "scorecard.md",
         "scorecard_html": "scorecard.html", "scenarios": "scenarios/"}


@dataclass(frozen=True)
class BenchConfig:
    """A bench run. ``size``: ``"quick"`` or ``"full"``; ``agents``: the agents to score (empty: every built-in
    private agent, :func:`~dpbandit.experiment.bench.references.builtin_agents`); ``scenarios``: a subset of the
    suite (empty: all); ``epsilons``: replaces every scenario's grid; ``seeds``: the first n seeds instead of the
    size's; ``use_reference``: with ``agents``, read random play and the built-in agents from the shipped reference
    (False: run random play here, without the built-in agents); ``audit``: run ``check_private_agent(..., audit=True)`` per scenario and agent (at its smallest epsilon)."""

    size: str = "quick"
    agents: tuple = ()
    scenarios: tuple[str, ...] = ()
    epsilons: tuple[float, ...] | None = None
    seeds: int | None = None
    use_reference: bool = True
    audit: bool = False
    n_jobs: int = 2
    name: str = ""
    out: str = "runs"

    def __post_init__(self) -> None:
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        check_choice("size", self.size, _ALL_SIZES)
        for name in self.scenarios:
            load_scenario(name)
        set_("scenarios", tuple(self.scenarios) or (TINY_SCENARIOS if self.size == "tiny" else scenario_names()))
        if len(set(self.scenarios)) != len(self.scenarios):
            raise ValueError(f"scenarios must not repeat, got {list(self.scenarios)}")
        stems = [agent_stem(a) for a in self.agents]
        if len(set(stems)) != len(stems):
            raise ValueError(f"agents must not repeat, got {stems}")
        if self.epsilons is not None:
            from dpbandit.validation import check_epsilon

            eps = tuple(sorted(check_epsilon(e, "epsilons entry") for e in self.epsilons))
            if not eps or len(set(eps)) != len(eps):
                raise ValueError(f"epsilons must list distinct finite numbers > 0 (inf is added), got {list(eps)}")
            set_("epsilons", eps)
        if self.seeds is not None:
            from dpbandit.experiment.config import MAX_SEEDS

            check_int("seeds", self.seeds, low=1, high=MAX_SEEDS)
        check_int("n_jobs", self.n_jobs, low=1)
        if not self.name:
            slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(stems)).strip("_")[:60]
            set_("name", f"bench-{self.size}" + (f"-{slug}" if slug else ""))
        check_run_name(self.name)

    @property
    def reads_reference(self) -> bool:
        return bool(self.agents) and self.use_reference

    def to_dict(self) -> dict:
        return {"suite": suite_name(), "size": self.size, "agents": [_type_name(a) for a in self.agents],
                "scenarios": list(self.scenarios), "seeds": self.seeds, "use_reference": self.use_reference,
                "epsilons": None if self.epsilons is None else list(self.epsilons), "audit": self.audit,
                "n_jobs": self.n_jobs, "name": self.name}


def _type_name(agent: Any) -> str:
    return f"{agent.__module__}:{agent.__qualname__}" if isinstance(agent, type) else str(agent)


@dataclass(frozen=True)
class BenchResult:
    """What :func:`run_bench` produced: ``scores`` (:func:`~dpbandit.experiment.bench.scores.score_table`),
    ``finals`` (per seed), ``results`` (curves), the run directory and the scorecard paths (None in memory), the
    driver's wall and CPU seconds, and ``timing`` (a written run's: jobs' CPU seconds, resumed jobs, load)."""

    scores: pd.DataFrame
    finals: pd.DataFrame
    results: pd.DataFrame
    run_dir: Path | None
    scorecard: Path | None
    scorecard_html: Path | None
    seconds: float
    cpu_seconds: float
    timing: dict = field(default_factory=dict)


def _bench_hash(bc: BenchConfig, cells: list[Cell], reference) -> str:
    return config_digest({"bench": bc.to_dict() | {"n_jobs": None}, "scenarios": {
        c.scenario.name: c.config.config_hash() if c.config else None for c in cells},
        "reference": None if reference is None else {"dpbandit": reference.version,
                                                      "made": reference.meta.get("made")}})


def run_bench(bc: BenchConfig, out: str | Path | bool | None = None, progress: bool = True, *, fresh: bool = False,
              backend: str = "local", dask_address: str | None = None, allow_long: bool = False) -> BenchResult:
    """Run the bench ``bc`` into ``<out>/<bc.name>`` (default ``out``: ``bc.out``; False: in memory). Everything is
    validated and the planned work printed before any job runs; running it again resumes it (finished jobs of
    every scenario are read back); another bench in the folder is refused unless ``fresh``."""
    from dpbandit.experiment.planning import check_duration, plan_run
    from dpbandit.experiment.rundir import open_run_dir
    from dpbandit.experiment.runner import run_experiment

    if not isinstance(bc, BenchConfig):
        raise TypeError(f"bc must be a BenchConfig, got {type(bc).__name__}")
    start, cpu_start = time.perf_counter(), time.process_time()
    reference = reference_for(bc)
    cells = plan_cells(bc, seeds_for(bc, reference))
    for cell in cells:
        if cell.config is not None:
            plan_run(cell.config, {0: int(cell.config.envs[0].kwargs["horizon"])}, calibrated=False)  # memory
    line, estimate = plan_line(bc, cells, reference)
    check_duration(f"bench {bc.size}", sum(len(c.config.agents) * len(c.config.seeds) for c in cells if c.config),
                   estimate, allow_long)
    if progress:
        print(line, flush=True)
    audits = _audits(bc, cells) if bc.audit else {}
    run_dir = None if out is False else Path(bc.out if out in (None, True) else out) / bc.name
    if run_dir is None:
        return _gather(bc, cells, reference, audits, None, start, cpu_start, lambda cfg: run_experiment(
            cfg, out=False, progress=progress, backend=backend, dask_address=dask_address, allow_long=True))
    with open_run_dir(run_dir.parent, bc.name, _bench_hash(bc, cells, reference), fresh) as folder:
        from dpbandit.files import write_json_atomic

        write_json_atomic(folder / "manifest.json", {"kind": "bench", "status": "running", "config": bc.to_dict(),
                                                    "config_hash": _bench_hash(bc, cells, reference)})
        return _gather(bc, cells, reference, audits, folder, start, cpu_start, lambda cfg: run_experiment(
            cfg, out=folder / "scenarios", progress=progress, fresh=fresh, backend=backend,
            dask_address=dask_address, allow_long=True))


#: Users the bench audit streams at most (an agent whose first release comes later is "undetermined").
MAX_AUDIT_ROUNDS = 1024


def _audits(bc: BenchConfig, cells: list[Cell]) -> dict[tuple[str, str], str]:
    """(scenario, label) -> the verdict of ``check_private_agent(..., audit=True)`` (conformance and the empirical
    audit: a pass is never a proof), per agent run here at its smallest finite epsilon of the scenario (the tiny
    size audits with 100 samples instead of 2,000). The audited stream runs past the agent's first release
    (:func:`~dpbandit.experiment.checks.audit_rounds`, at least 30 users); an agent that publishes only after
    :data:`MAX_AUDIT_ROUNDS` users is "undetermined", not failed."""
    from dpbandit.agents import make_agent
    from dpbandit.experiment.checks import ConformanceError, audit_rounds, check_private_agent

    samples = 100 if bc.size == "tiny" else 2000
    verdicts = {}
    for cell in cells:
        if cell.config is None:
            continue
        env_spec, done = cell.config.envs[0], set()
        env = make_env(env_spec.id, **env_spec.kwargs)
        try:
            for spec in cell.config.agents:  # each agent's epsilons come in increasing order
                stem, eps = cell.labels[spec.label]
                if stem == "random" or stem in done or not math.isfinite(eps):
                    continue
                done.add(stem)
                agent = make_agent(spec.type, env, **spec.params)
                first, rounds = agent.first_release, audit_rounds(agent)
                limit = min(MAX_AUDIT_ROUNDS, agent.constants.horizon)
                if rounds > limit:
                    verdicts[cell.scenario.name, spec.label] = (
                        f"audit: undetermined (first release after {first} users: the audit would stream {rounds}, "
                        f"beyond the {limit} it may; check_private_agent(..., audit=True, n_rounds=...) on a longer "
                        "stream)")
                    continue
                try:
                    check_private_agent(agent, env, audit=True, audit_samples=samples, n_rounds=rounds)
                    verdicts[cell.scenario.name, spec.label] = f"audit: pass ({samples} samples; never a proof)"
                except ConformanceError as exc:
                    text = " ".join(str(exc).split())
                    verdicts[cell.scenario.name, spec.label] = (
                        f"audit: undetermined (no release within the first {rounds} users: the agent publishes "
                        "later; audit it with check_private_agent on a longer stream)"
                        if "do not depend on the privacy generator" in text else f"audit: FAIL: {text}")
        finally:
            env.close()
    return verdicts


def _gather(bc, cells, reference, audits, run_dir, start, cpu_start, run) -> BenchResult:
    """Run every scenario (through ``run``), then gather finals, scores, the scorecard and the manifest."""
    from dpbandit.experiment.bench.scorecard import write_scorecard
    from dpbandit.files import write_atomic, write_json_atomic

    curves, finals, privacy, refused, noise_off, job_cpu, jobs, resumed = [], [], {}, {}, {}, 0.0, 0, 0
    for cell in cells:
        name = cell.scenario.name
        refused.update({f"{name} / {k}": v for k, v in cell.refused.items()})
        noise_off.update({f"{name} / {k}": v for k, v in cell.noise_off.items()})
        ran = set()
        if cell.config is not None:
            result = run(cell.config)
            curves.append(result.results)
            jobs, resumed = jobs + len(result.jobs), resumed + result.resumed_jobs
            cpu = {(m["agent"], m["seed"]): m.get("cpu_seconds", math.nan) for m in result.jobs}
            job_cpu += sum(v for v in cpu.values() if math.isfinite(v))
            for m in result.jobs:
                stem, eps = cell.labels[m["agent"]]
                if m["seed"] == cell.config.seeds[0]:
                    privacy[f"{name} / {m['agent']}"] = m["privacy_report"]
                    if math.isnan(eps) and m["privacy_report"]:  # an agent without epsilon: the one it reports
                        cell.labels[m["agent"]] = (stem, float(m["privacy_report"]["epsilon"]))
            last = result.results[result.results["t"] == int(cell.config.envs[0].kwargs["horizon"])]
            for row in last.itertuples(index=False):
                stem, eps = cell.labels[row.agent]
                ran.add(stem)
                finals.append({"scenario": name, "agent": row.agent, "stem": stem, "epsilon": eps, "seed": row.seed,
                               "horizon": row.t, "reward": row.reward, "regret": row.regret,
                               "cumulative_reward": row.cumulative_reward, "cumulative_regret": row.cumulative_regret,
                               "cpu_seconds": cpu.get((row.agent, row.seed), math.nan), "source": "this run"})
        if reference is not None:
            seeds = set(cell.config.seeds) if cell.config is not None else set(range(bc.seeds or cell.scenario.size(
                bc.size).seeds))
            f = reference.finals
            rows = f[(f["scenario"] == name) & f["seed"].isin(seeds) & ~f["stem"].isin(ran)]
            finals.extend(rows.assign(source=f"reference (dpbandit {reference.version})").to_dict("records"))
            privacy.update({k: v for k, v in reference.privacy().items()
                            if k.startswith(f"{name} / ") and k.split(" / ", 1)[1] in set(rows["agent"])})
            refused.update({k: v for k, v in reference.refused().items()
                            if k.startswith(f"{name} / ") and k.split(" / ", 1)[1] not in ran})
    finals = pd.DataFrame(finals, columns=[*FINAL_COLUMNS, "source"])
    ref_curves = finals[finals["source"] != "this run"].rename(columns={"scenario": "env_id", "horizon": "t"})
    parts = [*curves, *([ref_curves[list(COLUMNS)]] if len(ref_curves) else [])]
    results = pd.concat(parts, ignore_index=True)[list(COLUMNS)]
    scores = scoring.score_table(finals, privacy, refused=refused, noise_off=noise_off, audits=audits)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    if run_dir is None:
        return BenchResult(scores, finals, results, None, None, None, seconds, cpu_seconds)
    write_atomic(run_dir / FILES["results"], lambda p: results.to_csv(p, index=False))
    write_atomic(run_dir / FILES["finals"], lambda p: finals.to_csv(p, index=False))
    write_atomic(run_dir / FILES["scores"], lambda p: scores.to_csv(p, index=False))
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    timing = {"wall_seconds": seconds, "driver_cpu_seconds": cpu_seconds, "jobs_cpu_seconds": job_cpu,
              "jobs": jobs, "resumed_jobs": resumed, "load_average_1_5_15": load, "cpus": os.cpu_count()}
    md, html, figures = write_scorecard(run_dir, scores, finals, bc, cells_why={c.scenario.name: c.scenario.why
                                                                                  for c in cells},
                                        reference=reference, timing=timing)
    agents = [spec for c in cells if c.config for spec in c.config.agents]
    manifest = {
        "kind": "bench", "status": "complete", "config": bc.to_dict(), "config_hash": _bench_hash(bc, cells, reference),
        "suite": suite_name(), "versions": package_versions(SimpleNamespace(agents=agents, envs=[
            c.config.envs[0] for c in cells if c.config])),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"), "timing": timing,
        "scenario_hashes": {c.scenario.name: c.config.config_hash() for c in cells if c.config},
        "reference": None if reference is None else {"size": reference.size, "dpbandit": reference.version,
                                                      "made": reference.meta.get("made")},
        "privacy": privacy, "refused": refused, "noise_off_unavailable": noise_off,
        "files": {**FILES, **figures},
    }
    write_json_atomic(run_dir / "manifest.json", manifest)
    return BenchResult(scores, finals, results, run_dir, md, html, seconds, cpu_seconds, timing)
