"""The OCO runner: regret of streaming learners against the best fixed point in hindsight on regression streams.

A *problem* is a :class:`~dpbandit.envs.streams.RegressionStream` in the Euclidean geometry (``p = 2``: features
with ``||x_t||_2 = 1``, ``||theta*||_2 = theta_norm``) with a loss

    f_t(w) = phi(x_t^T w, y_t) + (mu/2) ||w||^2,

``phi`` the squared loss ``(1/2)(x^T w - y)^2`` (``model="linear"``) or the logistic loss (``"logistic"``), and
``mu = 0`` (convex) or ``mu > 0`` (strongly convex, problems named ``*-ridge``). The regret after t rounds is

    R_t = sum_{s<=t} f_s(w_s) - min_{||u||_2 <= R} sum_{s<=t} f_s(u),     R = stream radius = 2 theta_norm,

with the comparator recomputed at every recorded round (closed form plus a secular equation for the squared loss,
SLSQP for the logistic loss). Every learner sees the same samples (seed streams "instance", "contexts",
"reward_noise") and draws its own noise from the "privacy" stream.

Learners come from :data:`dpbandit.optim.registry.LEARNERS`; the public constants of the problem (``loss``,
``mu``, ``x_bound = 1``, ``y_bound``, ``radius``) are passed to every learner that accepts them. Learners whose
``mu`` is required (strongly convex methods) run only on the ``*-ridge`` problems.

Output, as for bandit runs (``dpbandit.experiment.results``): a tidy table with columns :data:`OCO_COLUMNS`
(``stream`` plays the role of ``env_id`` and ``learner`` of ``agent``), ``summary.csv`` (final regret with 95% CI,
log-log regret slope, microseconds per round, guarantee label), ``regret.png``, ``manifest.json`` (config,
versions, privacy reports) and ``jobs/``, under ``<out>/<name>-<timestamp>/``. Command line: :func:`main`
(``dpbandit oco [--quick]``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import brentq, minimize

from dpbandit.envs.streams import RegressionStream
from dpbandit.experiment.plots import plot_regret
from dpbandit.experiment.results import (
    checkpoint_rounds,
    package_versions,
    summary_table,
    write_atomic,
    write_json_atomic,
)
from dpbandit.optim.losses import LogisticLoss, Loss, SquaredLoss
from dpbandit.optim.registry import (
    LEARNERS,
    learner_class,
    learner_hyperparameters,
    make_learner,
    noise_off_params,
    requires_strong_convexity,
    with_known_constants,
)
from dpbandit.seeding import stream
from dpbandit.validation import check_int, check_real

__all__ = ["OCO_COLUMNS", "PROBLEMS", "LearnerSpec", "OCOConfig", "OCOResult", "best_in_hindsight",
           "play", "regret_slopes", "run_oco", "default_learners", "main"]

OCO_COLUMNS = ("stream", "learner", "seed", "t", "loss", "regret", "cumulative_loss", "cumulative_regret",
               "average_regret")
#: Problem name -> (stream model, strongly convex).
PROBLEMS: dict[str, tuple[str, bool]] = {
    "linear": ("linear", False), "linear-ridge": ("linear", True),
    "logistic": ("logistic", False), "logistic-ridge": ("logistic", True),
}
#: Hyperparameters a default run gives learners that require more than the problem's constants.
_EXTRA_DEFAULTS: dict[str, dict[str, Any]] = {"wdp-cocop": {"window": 128}, "wdp-cocol": {"window": 128}}


@dataclass(frozen=True)
class LearnerSpec:
    """One learner of an OCO run: registry ``name``, result ``label`` (default: the name), hyperparameters."""

    name: str
    label: str = ""
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        learner_class(self.name)
        if not isinstance(self.label, str):
            raise TypeError(f"learner label must be a string, got {self.label!r}")
        object.__setattr__(self, "label", self.label or self.name)
        object.__setattr__(self, "params", dict(self.params))


@dataclass(frozen=True)
class OCOConfig:
    """An OCO experiment: problems x learners x seeds. ``mu`` is the ridge of the ``*-ridge`` problems."""

    learners: tuple[LearnerSpec, ...]
    problems: tuple[str, ...] = ("linear", "linear-ridge")
    dim: int = 10
    horizon: int = 5000
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    mu: float = 0.1
    noise_std: float = 0.05
    theta_norm: float = 1.0
    checkpoints: int = 40
    n_jobs: int = 1
    name: str = "oco"
    out: str = "runs"

    def __post_init__(self) -> None:
        learners = tuple(s if isinstance(s, LearnerSpec) else LearnerSpec(**s) for s in self.learners)
        labels = [s.label for s in learners]
        if not learners or len(set(labels)) != len(labels):
            raise ValueError(f"learners must list at least one learner, with unique labels; got {labels}")
        object.__setattr__(self, "learners", learners)
        problems = tuple(self.problems)
        if not problems or any(p not in PROBLEMS for p in problems):
            raise ValueError(f"unknown problem in {list(problems)}; known problems: {', '.join(PROBLEMS)}")
        object.__setattr__(self, "problems", problems)
        check_int("dim", self.dim, low=1)
        check_int("horizon", self.horizon, low=2)
        seeds = tuple(check_int(f"seeds[{i}]", s, low=0) for i, s in enumerate(self.seeds))
        if not seeds or len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds must be a non-empty list of distinct integers >= 0, got {list(self.seeds)}")
        object.__setattr__(self, "seeds", seeds)
        check_real("mu", self.mu, low=0.0, low_inclusive=False)
        check_real("noise_std", self.noise_std, low=0.0)
        check_real("theta_norm", self.theta_norm, low=0.0, low_inclusive=False)
        check_int("checkpoints", self.checkpoints, low=2)
        check_int("n_jobs", self.n_jobs, low=1)
        if not isinstance(self.name, str) or not self.name or "/" in self.name:
            raise ValueError(f"name must be a non-empty string without '/', got {self.name!r}")

    def stream(self, problem: str) -> RegressionStream:
        return RegressionStream(dim=self.dim, horizon=self.horizon, model=PROBLEMS[problem][0], p=2.0,
                                noise_std=self.noise_std, test_size=1, theta_norm=self.theta_norm)

    def problem_mu(self, problem: str) -> float:
        return self.mu if PROBLEMS[problem][1] else 0.0

    def loss(self, problem: str) -> Loss:
        return SquaredLoss(scale=0.5) if PROBLEMS[problem][0] == "linear" else LogisticLoss()

    def constants(self, problem: str) -> dict[str, Any]:
        """The public constants every learner may calibrate to: loss, ridge, data bounds, comparator radius.
        ``y_bound`` for the linear stream is ``theta_norm + 4 noise_std`` (learners clip the rare larger
        responses; the regret is measured on the true ones)."""
        linear = PROBLEMS[problem][0] == "linear"
        return dict(loss=self.loss(problem), mu=self.problem_mu(problem), x_bound=1.0,
                    y_bound=self.theta_norm + 4.0 * self.noise_std if linear else 1.0,
                    radius=self.stream(problem).radius)

    def build(self, problem: str, spec: LearnerSpec, seed: int):
        params = with_known_constants(spec.name, spec.params, **self.constants(problem))
        return make_learner(spec.name, self.dim, self.horizon, rng=stream(seed, "privacy"), **params)

    def plan(self) -> list[tuple[str, LearnerSpec, str]]:
        """Every (problem, learner, reason) of the grid; ``reason`` is "" for the pairs that run, else why the pair
        is skipped: a strongly convex learner on a problem without ridge, or a learner that refuses the problem
        (e.g. PQFTL on a logistic stream)."""
        out = []
        for p in self.problems:
            for s in self.learners:
                reason = ""
                if not PROBLEMS[p][1] and requires_strong_convexity(s.name):
                    reason = "needs a strongly convex loss (mu > 0)"
                else:
                    try:
                        self.build(p, s, 0)
                    except (TypeError, ValueError) as exc:
                        reason = str(exc)
                out.append((p, s, reason))
        return out

    def runs(self) -> list[tuple[str, LearnerSpec]]:
        """The (problem, learner) pairs that run (see :meth:`plan`)."""
        return [(p, s) for p, s, reason in self.plan() if not reason]

    def validate(self) -> list[tuple[str, LearnerSpec, str]]:
        """:meth:`plan`, after checking that every learner runs on some problem (bad hyperparameters fail before
        any work, naming the reasons)."""
        plan = self.plan()
        for spec in self.learners:
            reasons = [f"{p}: {r}" for p, s, r in plan if s is spec]
            if all(r for _, s, r in plan if s is spec):
                raise ValueError(f"learner {spec.label!r} cannot run on any problem of this config; "
                                 + "; ".join(reasons))
        return plan

    def to_dict(self) -> dict:
        """A strict-JSON-able dict (non-finite numbers, e.g. ``tau = inf``, as the strings "inf"/"-inf")."""
        out = asdict(self)
        out["learners"] = [{"name": s.name, "label": s.label, "params": _json_safe(s.params)} for s in self.learners]
        return out


def _json_safe(value: Any) -> Any:
    value = value.tolist() if isinstance(value, np.ndarray) else value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    return [_json_safe(v) for v in value] if isinstance(value, (list, tuple)) else value


def best_in_hindsight(x: np.ndarray, y: np.ndarray, loss: Loss, mu: float, radius: float,
                      rounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``min_{||u||_2 <= radius} sum_{s<=t} f_s(u)`` and its minimiser for every ``t`` in ``rounds``.

    ``x`` (T, d), ``y`` (T,); returns ``(values (n,), points (n, d))``. Squared loss ``s (z - y)^2``: the objective
    is ``u'Hu/2 - g'u + s sum y^2`` with ``H = 2s X'X + t mu I``; the constrained minimiser is
    ``(H + lam I)^{-1} g`` with ``lam = 0`` if feasible, else the root of ``||u(lam)|| = radius`` (exact up to
    the root finder). Logistic: SLSQP on the ball, warm-started from the previous round's minimiser.
    """
    d = x.shape[1]
    values, points = np.empty(len(rounds)), np.empty((len(rounds), d))
    if isinstance(loss, SquaredLoss):
        s = loss.scale
        A, b, c, start = np.zeros((d, d)), np.zeros(d), 0.0, 0
        for i, t in enumerate(rounds):
            xs, ys = x[start:t], y[start:t]
            A += xs.T @ xs
            b += xs.T @ ys
            c += float(ys @ ys)
            start = t
            lam_h, V = np.linalg.eigh(2.0 * s * A + t * mu * np.eye(d))
            p = V.T @ (2.0 * s * b)
            lam_h = np.maximum(lam_h, 0.0)
            null = lam_h <= 1e-12 * max(lam_h.max(), 1.0)

            def coords(lam: float) -> np.ndarray:
                q = np.zeros(d)
                live = ~null if lam == 0.0 else np.ones(d, dtype=bool)
                q[live] = p[live] / (lam_h[live] + lam)
                return q

            q = coords(0.0)  # the minimum-norm minimiser when H is singular
            if np.linalg.norm(q) > radius:
                hi = np.linalg.norm(p) / radius
                q = coords(brentq(lambda lam: np.linalg.norm(coords(lam)) - radius, 0.0, hi, xtol=1e-14,
                                  rtol=1e-14) if hi > 0 else 0.0)
            values[i] = 0.5 * float(q @ (lam_h * q)) - float(p @ q) + s * c
            points[i] = V @ q
        return values, points
    u = np.zeros(d)
    ball = {"type": "ineq", "fun": lambda w: radius**2 - w @ w, "jac": lambda w: -2.0 * w}
    for i, t in enumerate(rounds):
        xs, ys = x[:t], y[:t]

        def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
            z = xs @ w
            f = float(np.sum(loss.phi(z, ys))) + 0.5 * t * mu * float(w @ w)
            return f, xs.T @ loss.dphi(z, ys) + t * mu * w

        res = minimize(objective, u, jac=True, method="SLSQP", constraints=[ball],
                       options={"maxiter": 500, "ftol": 1e-14})
        u = res.x * min(1.0, radius / max(np.linalg.norm(res.x), 1e-300))
        values[i], points[i] = objective(u)[0], u
    return values, points


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


def _run_seed(config: OCOConfig, runs: list, problem: str, seed: int, run_dir: Path | None) -> tuple[pd.DataFrame,
                                                                                                     list]:
    """Every learner of ``problem`` on the stream of ``seed`` (one comparator computation for all of them)."""
    data = config.stream(problem).draw(seed)
    loss, mu = config.loss(problem), config.problem_mu(problem)
    rounds = checkpoint_rounds(config.horizon, config.checkpoints)
    best, ustar = best_in_hindsight(data.x, data.y, loss, mu, data.radius, rounds)
    idx = rounds - 1
    comparator_loss = loss.phi(np.einsum("nd,nd->n", data.x[idx], ustar), data.y[idx]) + 0.5 * mu * np.sum(
        ustar * ustar, axis=1)
    frames, metas = [], []
    for prob, spec in runs:
        if prob != problem:
            continue
        learner = config.build(problem, spec, seed)
        losses, seconds = play(learner, data.x, data.y, loss, mu)
        cumulative = np.cumsum(losses)[idx]
        frames.append(pd.DataFrame({
            "stream": problem, "learner": spec.label, "seed": seed, "t": rounds, "loss": losses[idx],
            "regret": losses[idx] - comparator_loss, "cumulative_loss": cumulative,
            "cumulative_regret": cumulative - best, "average_regret": (cumulative - best) / rounds,
        }))
        report = learner.privacy_report()
        metas.append({"stream": problem, "learner": spec.label, "name": spec.name, "seed": seed,
                      "params": _json_safe(spec.params), "seconds": seconds, "rounds": config.horizon,
                      "guarantee": "non-private (no guarantee)" if report is None else report.label,
                      "privacy_report": None if report is None else report.to_dict()})
    frame = pd.concat(frames, ignore_index=True)[list(OCO_COLUMNS)]
    if run_dir is not None:
        stem = f"{problem}__seed{seed}"
        write_atomic(run_dir / "jobs" / f"{stem}.csv", lambda p: frame.to_csv(p, index=False))
        write_json_atomic(run_dir / "jobs" / f"{stem}.json", metas)
    return frame, metas


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
    results: pd.DataFrame
    summary: pd.DataFrame
    run_dir: Path | None
    plot_path: Path | None


def run_oco(config: OCOConfig, out: str | Path | bool | None = None, progress: bool = True) -> OCOResult:
    """Run every (problem, learner, seed) of ``config``; write a run directory unless ``out=False``."""
    if not isinstance(config, OCOConfig):
        raise TypeError(f"config must be an OCOConfig, got {type(config).__name__}")
    plan = config.validate()
    runs = [(p, s) for p, s, reason in plan if not reason]
    run_dir = None
    if out is not False:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        run_dir = base = Path(config.out if out in (None, True) else out) / f"{config.name}-{stamp}"
        for i in range(1, 1000):
            if not run_dir.exists():
                break
            run_dir = base.with_name(f"{base.name}-{i}")
        run_dir.mkdir(parents=True)
    started = time.perf_counter()
    jobs = [(p, seed) for p in config.problems for seed in config.seeds if any(q == p for q, _ in runs)]
    from tqdm.auto import tqdm

    if config.n_jobs == 1 or len(jobs) == 1:
        outputs = [_run_seed(config, runs, p, s, run_dir) for p, s in tqdm(jobs, desc="oco jobs",
                                                                             disable=not progress)]
    else:
        from joblib import Parallel, delayed

        parallel = Parallel(n_jobs=min(config.n_jobs, len(jobs)))
        outputs = parallel(delayed(_run_seed)(config, runs, p, s, run_dir) for p, s in jobs)
    results = pd.concat([f for f, _ in outputs], ignore_index=True)
    metas = [m for _, ms in outputs for m in ms]
    timings = pd.DataFrame([{"env_id": m["stream"], "agent": m["learner"], "seed": m["seed"],
                             "seconds": m["seconds"], "rounds": m["rounds"]} for m in metas])
    as_bandit = results.rename(columns={"stream": "env_id", "learner": "agent"})
    summary = summary_table(as_bandit, timings).rename(columns={"env_id": "stream", "agent": "learner"})
    t_min = max(10, config.horizon // 100)
    summary = summary.merge(regret_slopes(results, t_min), on=["stream", "learner"], how="left")
    labels = {(m["stream"], m["learner"]): m["guarantee"] for m in metas if m["seed"] == config.seeds[0]}
    summary["guarantee"] = [labels[(s, a)] for s, a in zip(summary["stream"], summary["learner"])]
    plot_path = None
    if run_dir is not None:
        write_atomic(run_dir / "results.csv", lambda p: results.to_csv(p, index=False))
        write_atomic(run_dir / "summary.csv", lambda p: summary.to_csv(p, index=False))
        plot_path = plot_regret(as_bandit, run_dir / "regret.png",
                                title=f"{config.name}: OCO regret vs best fixed point in hindsight")
        skipped = [f"{s.label} on {p}: {reason}" for p, s, reason in plan if reason]
        write_json_atomic(run_dir / "manifest.json", {
            "status": "complete", "kind": "oco", "config": config.to_dict(), "versions": package_versions(),
            "seconds": time.perf_counter() - started, "skipped": skipped,
            "privacy": {f"{m['stream']}/{m['learner']}": m["privacy_report"] for m in metas
                        if m["seed"] == config.seeds[0]},
            "files": {"results": "results.csv", "summary": "summary.csv", "plot": "regret.png", "jobs": "jobs/"},
        })
    return OCOResult(results, summary, run_dir, plot_path)


def default_learners(names: list[str] | None = None) -> tuple[LearnerSpec, ...]:
    """Each learner at its default privacy and, labelled "(noise off)", its non-private original."""
    specs = []
    for name in names or list(LEARNERS):
        extra = {k: v for k, v in _EXTRA_DEFAULTS.get(name, {}).items() if k in learner_hyperparameters(name)}
        specs.append(LearnerSpec(name, params=extra))
        off = noise_off_params(name)
        if off:
            specs.append(LearnerSpec(name, label=f"{name} (noise off)", params={**extra, **off}))
    return tuple(specs)


def main(argv: list[str] | None = None) -> int:
    """``dpbandit oco``: run the OCO comparison and print its summary (``--quick``: the small CI version)."""
    parser = argparse.ArgumentParser(prog="dpbandit oco", description="Regret of the (private) OCO learners against "
                                     "the best fixed point in hindsight on regression streams.")
    parser.add_argument("--quick", action="store_true", help="small and fast: d=5, T=1000, 2 seeds, problems "
                        "linear and linear-ridge")
    parser.add_argument("--problems", help=f"comma-separated, from {', '.join(PROBLEMS)}")
    parser.add_argument("--learners", help=f"comma-separated registry names (default: all: {', '.join(LEARNERS)})")
    parser.add_argument("--seeds", type=int, help="number of seeds")
    parser.add_argument("--horizon", type=int, help="T")
    parser.add_argument("--dim", type=int, help="d")
    parser.add_argument("--n-jobs", dest="n_jobs", type=int, help="parallel jobs")
    parser.add_argument("--out", help="parent folder of the run directory (default: runs)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        base = dict(dim=5, horizon=1000, seeds=(0, 1), problems=("linear", "linear-ridge"), checkpoints=20) \
            if args.quick else dict(problems=tuple(PROBLEMS))
        names = args.learners.split(",") if args.learners else None
        settings = {**base, "learners": default_learners(names), "name": "oco-quick" if args.quick else "oco"}
        if args.problems:
            settings["problems"] = tuple(args.problems.split(","))
        for key in ("horizon", "dim", "n_jobs"):
            if getattr(args, key) is not None:
                settings[key] = getattr(args, key)
        if args.seeds is not None:
            settings["seeds"] = tuple(range(check_int("seeds", args.seeds, low=1)))
        if args.out:
            settings["out"] = args.out
        result = run_oco(OCOConfig(**settings), progress=not args.no_progress)
    except (TypeError, ValueError) as exc:
        print(f"dpbandit oco: error: {exc}", file=sys.stderr)
        return 2
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(result.summary.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"\nResults table: {result.run_dir / 'results.csv'}\nRegret plot:   {result.plot_path}\n"
          f"Manifest:      {result.run_dir / 'manifest.json'}")
    return 0
