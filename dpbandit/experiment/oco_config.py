"""OCO experiments: the problems (regression streams with a loss) and the validated grid of problems x learners.

A *problem* is a :class:`~dpbandit.envs.streams.RegressionStream` in the Euclidean geometry (``p = 2``: features
with ``||x_t||_2 = 1``, ``||theta*||_2 = theta_norm``) with a loss

    f_t(w) = phi(x_t^T w, y_t) + (mu/2) ||w||^2,

``phi`` the squared loss ``(1/2)(x^T w - y)^2`` (``model="linear"``) or the logistic loss (``"logistic"``), and
``mu = 0`` (convex) or ``mu > 0`` (strongly convex, problems named ``*-ridge``). Every learner sees the same
samples (seed streams "instance", "contexts", "reward_noise") and draws its own noise from the "privacy" stream.

Learners come from :data:`dpbandit.optim.registry.LEARNERS`; the public constants of the problem (``loss``,
``mu``, the geometry ``p = 2``, ``x_bound = 1``, ``y_bound``, ``radius`` = the stream radius ``2 theta_norm``) are
passed to every learner that accepts them. Learners whose ``mu`` is required (strongly convex methods) run only on
the ``*-ridge`` problems. :meth:`OCOConfig.config_hash` identifies the experiment in its run directory (everything
but ``n_jobs`` and ``out``), as :meth:`dpbandit.experiment.config.ExperimentConfig.config_hash` does for bandit
runs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from dpbandit.envs.streams import RegressionStream
from dpbandit.experiment.config import config_digest
from dpbandit.optim.losses import LogisticLoss, Loss, SquaredLoss
from dpbandit.optim.protocol import StreamingLearner
from dpbandit.optim.registry import (
    LEARNERS,
    learner_class,
    learner_hyperparameters,
    make_learner,
    noise_off_params,
    requires_strong_convexity,
    with_known_constants,
)
from dpbandit.seeding import STREAM_LAYOUT, stream
from dpbandit.validation import check_int, check_n_jobs, check_real, check_run_name

__all__ = ["PROBLEMS", "LearnerSpec", "OCOConfig", "default_learners"]

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
    """An OCO experiment: problems x learners x seeds. ``mu`` is the ridge of the ``*-ridge`` problems; the run
    directory is ``<out>/<name>``."""

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
        check_n_jobs(self.n_jobs)
        check_run_name(self.name)
        for problem in problems:
            self.stream(problem)  # refuses up front a stream that cannot fit in memory
        if not isinstance(self.out, str) or not self.out:
            raise TypeError(f"out must be a non-empty path string, got {self.out!r}")

    def stream(self, problem: str, horizon: int | None = None) -> RegressionStream:
        """The stream of ``problem`` (of ``horizon`` rounds instead of T: a short one to time the learners)."""
        return RegressionStream(dim=self.dim, horizon=horizon or self.horizon, model=PROBLEMS[problem][0], p=2.0,
                                noise_std=self.noise_std, test_size=1, theta_norm=self.theta_norm)

    def problem_mu(self, problem: str) -> float:
        return self.mu if PROBLEMS[problem][1] else 0.0

    def loss(self, problem: str) -> Loss:
        return SquaredLoss(scale=0.5) if PROBLEMS[problem][0] == "linear" else LogisticLoss()

    def constants(self, problem: str) -> dict[str, Any]:
        """The public constants every learner may calibrate to: loss, ridge, the geometry ``p = 2`` (learners on
        l_p balls play in the l2 ball), data bounds, comparator radius. ``y_bound`` for the linear stream is
        ``theta_norm + 4 noise_std`` (learners clip the rare larger responses; the regret is measured on the true
        ones)."""
        linear = PROBLEMS[problem][0] == "linear"
        return dict(loss=self.loss(problem), mu=self.problem_mu(problem), p=2.0, x_bound=1.0,
                    y_bound=self.theta_norm + 4.0 * self.noise_std if linear else 1.0,
                    radius=self.stream(problem).radius)

    def build(self, problem: str, spec: LearnerSpec, seed: int) -> StreamingLearner:
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
        """A JSON-able dict (non-finite numbers such as ``tau = inf`` stay floats: the run directory's writer,
        :func:`~dpbandit.experiment.results.write_json_atomic`, stores them as the strings "inf"/"-inf"/"nan")."""
        out = asdict(self)
        out["learners"] = [{"name": s.name, "label": s.label, "params": dict(s.params)} for s in self.learners]
        return out

    def config_hash(self) -> str:
        """SHA-256 of everything that determines the results (not ``n_jobs`` or ``out``), with the random streams'
        layout (:data:`~dpbandit.seeding.STREAM_LAYOUT`: DP-POFW's draws changed in 0.2.0)."""
        data = {k: v for k, v in self.to_dict().items() if k not in ("n_jobs", "out")}
        return config_digest({**data, "stream_layout": STREAM_LAYOUT})


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
