"""Coverage of every off-policy estimator's 95 % interval over many synthetic logs with known truth (issue 26, item
8). Prints JSON.

The logs are those of ``tests/offline/test_coverage.py`` (K = 5, d = 3, Bernoulli rewards linear in the context,
logged by the non-uniform policy (0.3, 0.25, 0.2, 0.15, 0.1), n = 10,000 rounds by default), drawn from seeds
``first_seed, first_seed + 1, ...`` (default 3000-, disjoint from the test's pre-registered 1000-1019 and 5000-5399).
Each log is evaluated for uniform play, a fixed arm (4, the rarest logged action: weights 10) and LinUCB (alpha 0.5,
replayed), with every estimator (clip 10 = the largest weight, so switch-DR and the clipped estimators are unbiased)
and both intervals, BCa (``--resamples`` bootstrap resamples; 499 in the test, fewer here only to save time, stated
in the output) and Student-t. The truth of a static policy is its population value 0.5; LinUCB's is the mean over the
log of its replayed distributions' true values ``mean_i sum_a pi_i(a) mu(x_i, a)``.

For every (policy, estimator, interval) the output gives the number of logs whose interval covers the truth, the
coverage with its 95 % Wilson interval, the mean error (estimate - truth) with its standard error, the error's
standard deviation and the mean half-width (an interval that is too narrow has a mean half-width below 1.96 x the
error's standard deviation; a biased one a mean error many standard errors from 0). ``p_18_of_20`` is the chance
that a calibrated interval with this coverage covers in >= 18 of 20 draws.

    python benchmarks/offline_coverage_acceptance.py [--logs 300] [--rounds 10000] [--resamples 499]
        [--policies uniform,fixed arm 4,linucb] [--estimators replay,dm,ips,...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "offline"))

from _bench import emit, machine  # noqa: E402
from test_coverage import K, _log  # noqa: E402

from dpbandit.agents import make_agent  # noqa: E402
from dpbandit.offline import ReplayEnv, evaluate_offline, fixed_arm, uniform_policy  # noqa: E402
from dpbandit.offline.estimators import estimate  # noqa: E402
from dpbandit.offline.replay import ESTIMATORS  # noqa: E402
from dpbandit.offline.reward_model import fit_reward_model  # noqa: E402


POLICIES = ("uniform", "fixed arm 4", "linucb")


def _policies(data, names):
    n = data.n_rounds
    make = {"uniform": lambda: uniform_policy(n, K), "fixed arm 4": lambda: fixed_arm(4, n, K),
            "linucb": lambda: make_agent("linucb", ReplayEnv.from_logged(data, n, context_norm="linf"), alpha=0.5)}
    return [(name, make[name]()) for name in names]


def _t_estimates(result, data, q, estimators):
    """The Student-t intervals of the same evaluation (same pi and q; replay's over its accepted rewards; DM's
    interval is its model-refit bootstrap under either setting, so it is not repeated)."""
    out = {}
    for name in estimators:
        if name == "replay":
            rewards = result.curve["reward"].to_numpy()
            m = rewards.size
            out[name] = estimate("ips", rewards, np.zeros(m, np.int64), np.ones(m), np.ones((m, 1)), interval="t",
                                 reward_range=(0.0, 1.0))
        elif name != "dm":
            out[name] = estimate(name, data.reward, data.action, data.pscore, result.pi, q, clip=10.0, interval="t",
                                 reward_range=(0.0, 1.0))
    return out


def measure(logs: int, rounds: int, resamples: int, first_seed: int, policies=POLICIES, estimators=ESTIMATORS) -> dict:
    records: dict[tuple[str, str, str], list[tuple[float, float, float, float]]] = {}
    for draw in range(logs):
        data, means = _log(first_seed + draw, rounds)
        q = fit_reward_model(data, "ridge", 2, seed=draw)  # the model evaluate_offline fits (same seed, same folds)
        for label, policy in _policies(data, policies):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                result = evaluate_offline(data, policy, draw, estimators=estimators, clip=10.0, n_resamples=resamples)
                t_estimates = _t_estimates(result, data, q, estimators)
            truth = 0.5 if label != "linucb" else float((result.pi * means).sum(axis=1).mean())
            for interval, estimates in (("bca", result.estimates), ("t", t_estimates)):
                for name, e in estimates.items():
                    records.setdefault((label, name, interval), []).append((e.value, e.low, e.high, truth))
        if (draw + 1) % 10 == 0:
            print(f"{draw + 1}/{logs} logs", file=sys.stderr, flush=True)
    out = []
    for (label, name, interval), rows in records.items():
        value, low, high, truth = np.array(rows).T
        covered = int(np.count_nonzero((low <= truth) & (truth <= high)))
        ci = stats.binomtest(covered, len(rows)).proportion_ci(0.95, method="wilson")
        error = value - truth
        coverage = covered / len(rows)
        out.append({"policy": label, "estimator": name, "interval": interval, "logs": len(rows), "covered": covered,
                    "coverage": round(coverage, 4), "wilson_95": [round(ci.low, 4), round(ci.high, 4)],
                    "p_18_of_20": round(float(stats.binom.sf(17, 20, coverage)), 3),
                    "mean_error": float(f"{error.mean():.3g}"),
                    "mean_error_se": float(f"{error.std(ddof=1) / np.sqrt(len(rows)):.2g}"),
                    "error_sd": float(f"{error.std(ddof=1):.3g}"),
                    "mean_half_width": float(f"{((high - low) / 2).mean():.3g}")})
    return {"cells": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=499)
    parser.add_argument("--first-seed", type=int, default=3000)
    parser.add_argument("--policies", default=",".join(POLICIES), help="comma-separated subset of " + str(POLICIES))
    parser.add_argument("--estimators", default=",".join(ESTIMATORS), help="comma-separated subset")
    args = parser.parse_args()
    policies, estimators = tuple(args.policies.split(",")), tuple(args.estimators.split(","))
    if not set(policies) <= set(POLICIES) or not set(estimators) <= set(ESTIMATORS):
        parser.error(f"--policies from {POLICIES}, --estimators from {ESTIMATORS}")
    load = os.getloadavg()
    start, cpu = time.perf_counter(), time.process_time()
    result = measure(args.logs, args.rounds, args.resamples, args.first_seed, policies, estimators)
    emit({"benchmark": "offline_coverage", "logs": args.logs, "rounds": args.rounds,
          "bca_resamples": args.resamples, "first_seed": args.first_seed, "level": 0.95, **result,
          "seconds": round(time.perf_counter() - start, 1), "cpu": {"seconds": round(time.process_time() - cpu, 1)},
          "machine": machine(load)})


if __name__ == "__main__":
    main()
