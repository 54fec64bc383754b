"""Issue 28 measurements: private agents on the hard problems, as ratios of final regret to uniform random play with
paired-bootstrap 95 % intervals over common seeds (:func:`dpbandit.experiment.stats.ratio_interval`). Prints JSON;
not a test.

Scenarios (the bench suite's definitions, ``dpbandit/experiment/bench/scenarios/*.toml``, at the issue's horizon):

* ``sparse-logistic-ar-d100`` / ``-d400``, ``sparse-logistic-equicorrelated-d400`` / ``-d100``: disjoint sparse
  logistic rewards, AR(0.5) or equicorrelated (0.3) contexts, K = 3, T = 2e4, epsilon = 4 (target: best private
  agent <= 0.65x random, interval's upper end < 0.70; ``support_ridge`` is the sparse agent, docs §8);
* ``digits``: classification of scikit-learn's digits (K = 10, d = 64, theta_bound = 1), T = 2e4, epsilon = 1
  (target <= 0.70x random);
* ``dense-shared-linear`` (SharedLinear-v0) and ``han-figure-5.1`` at epsilon = 1: no regression of the episodic
  agents (the previous defaults are run beside the new ones: ``episodic_ridge_v1`` = mode "forget", no centring,
  the old share, no row clip, no pooled Gram shape);
* ``fliphat-sparse-shared``, ``sparse-probit``, ``small-signal`` at epsilon = 1: the suite's other sparse scenarios
  (``support_ridge``'s noise-off form beside greedy ridge and the LASSO bandit, docs §8.7; ``fliphat-sparse-shared``
  is FLIPHAT's own setting);
* noise off: every episodic ridge variant beside its non-private counterpart (greedy ridge; for ``support_ridge``
  also the LASSO bandit, the non-private sparse agent, and its two stages with the noise off, ``*_staged``); FLIPHAT
  (which keeps every user with the noise off, docs §2.12; ``fliphat_noise_off_forget``: its forgetting form) beside
  greedy ridge and the LASSO bandit (disjoint scenarios only);
* the public schedule of ``docs/episodic-agents.md`` §6.5 against the doubling schedule it replaced (labels
  ``*_doubling``: ``episode_scale=inf``, and for the noise-off agents the previous noise-off defaults), paired by seed;
  ``--epsilons 1,4`` runs the private agents at each listed epsilon instead of the scenario's one (labels ``@eps``).

Every agent sees the same users and reward noise for a seed (common random numbers), so ratios are paired by seed.

    python benchmarks/hard_problems.py [--seeds 5] [--horizon 20000] [--scenarios sparse-logistic-ar-d100,...]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import tomllib
from pathlib import Path

import gymnasium
import numpy as np

import dpbandit  # noqa: F401  (registers the environments)
from dpbandit.agents import make_agent
from dpbandit.agents.episodic_ridge import default_row_clip
from dpbandit.experiment.stats import ratio_interval

SCENARIOS = Path(__file__).resolve().parent.parent / "dpbandit" / "experiment" / "bench" / "scenarios"
EPSILON = {"sparse-logistic-ar-d100": 4.0, "sparse-logistic-ar-d400": 4.0, "sparse-logistic-equicorrelated-d400": 4.0,
           "sparse-logistic-equicorrelated-d100": 4.0, "digits": 1.0, "dense-shared-linear": 1.0,
           "han-figure-5.1": 1.0, "fliphat-sparse-shared": 1.0, "sparse-probit": 1.0, "small-signal": 1.0}
INF = math.inf


def agents(theta_bound: float, row_clip: float) -> dict[str, tuple[str, dict]]:
    """name -> (registry name, parameters without epsilon); ``None`` epsilon: non-private."""
    # the defaults before issue 28: forget, uncentred, share L S / (L S + 2 B), the declared context bound
    old = {"mode": "forget", "centre": False, "target_bound": theta_bound, "row_clip": INF, "gram_pool": False}
    # the noise-off defaults before the noise-scaled schedule: doubling from K d users, centred, rows clipped
    doubling_off = {"epsilon": INF, "episode_scale": INF, "first_episode": None, "centre": True, "row_clip": row_clip}
    return {
        "greedy": ("greedy", {}),
        "linucb": ("linucb", {}),
        "episodic_ridge": ("episodic_ridge", {}),
        "episodic_ridge_doubling": ("episodic_ridge", {"episode_scale": INF}),
        "episodic_ridge_noise_off_doubling": ("episodic_ridge", doubling_off),
        "episodic_glm_doubling": ("episodic_glm", {"episode_scale": INF}),
        "episodic_glm_noise_off": ("episodic_glm", {"epsilon": INF}),
        "episodic_glm_noise_off_doubling": ("episodic_glm", {"epsilon": INF, "episode_scale": INF}),
        "fliphat_noise_off": ("fliphat", {"epsilon": INF}),
        "fliphat_noise_off_forget": ("fliphat", {"epsilon": INF, "forget": True}),  # before issue 28's kept users
        "lasso": ("lasso", {}),
        "episodic_ridge_unpooled": ("episodic_ridge", {"gram_pool": False}),
        "episodic_ridge_thompson": ("episodic_ridge", {"rule": "thompson"}),
        "episodic_ridge_ucb": ("episodic_ridge", {"rule": "ucb"}),
        "episodic_ridge_v1": ("episodic_ridge", old),
        "episodic_ridge_noise_off": ("episodic_ridge", {"epsilon": INF}),
        "episodic_ridge_noise_off_uncentred": ("episodic_ridge", {"epsilon": INF, "centre": False}),
        "episodic_ridge_v1_noise_off": ("episodic_ridge", dict(old, epsilon=INF)),
        "episodic_glm": ("episodic_glm", {}),
        "fliphat": ("fliphat", {}),
        "support_ridge": ("support_ridge", {}),
        # the sparsity assumed instead of declared: runs on the dense scenarios, where the declared s = d is refused
        "support_ridge_assumed_s5": ("support_ridge", {"sparsity": 5}),
        "support_ridge_noise_off": ("support_ridge", {"epsilon": INF}),
        # the two stages with the noise off (the noise-off form before the greedy one, docs §8.7)
        "support_ridge_noise_off_staged": ("support_ridge", {"epsilon": INF, "noise_off_form": "staged"}),
        "support_ridge_doubling": ("support_ridge", {"ridge_params": {"episode_scale": INF}}),
        "support_ridge_noise_off_doubling": ("support_ridge", {"epsilon": INF, "noise_off_form": "staged",
                                                               "ridge_params": {"episode_scale": INF, "centre": True}}),
        "random": ("random", {}),
    }


PRIVATE = {"episodic_ridge", "episodic_glm", "episodic_ridge_unpooled", "episodic_ridge_thompson", "episodic_ridge_ucb",
           "episodic_ridge_v1", "fliphat", "support_ridge", "support_ridge_assumed_s5", "episodic_ridge_doubling",
           "episodic_glm_doubling", "support_ridge_doubling"}
#: noise-off agent -> its in-run references (its non-private counterpart first), for paired ratios
NOISE_OFF = {"episodic_ridge_noise_off": ("greedy", "episodic_ridge_noise_off_doubling"),
             "episodic_ridge_noise_off_doubling": ("greedy",),
             "episodic_ridge_noise_off_uncentred": ("greedy",), "episodic_ridge_v1_noise_off": ("greedy",),
             "episodic_glm_noise_off": ("greedy", "episodic_glm_noise_off_doubling"),
             "episodic_glm_noise_off_doubling": ("greedy",),
             "fliphat_noise_off": ("greedy", "lasso", "fliphat_noise_off_forget"),
             "fliphat_noise_off_forget": ("greedy", "lasso"),
             "support_ridge_noise_off": ("greedy", "lasso", "support_ridge_noise_off_staged"),
             "support_ridge_noise_off_staged": ("greedy", "lasso", "support_ridge_noise_off_doubling")}


def run(env, name: str, params: dict, seed: int, rounds: int | None = None) -> tuple[float, float]:
    """(final regret, seconds) of one seed (over the horizon, or its first ``rounds``); the loop of
    ``runner.simulate``."""
    agent = make_agent(name, env, **params)
    start = time.perf_counter()
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    regret = 0.0
    for _ in range(rounds or env.unwrapped.constants.horizon):
        arm = agent.act(obs)
        next_obs, reward, _, _, info = env.step(arm)
        agent.update(obs, arm, reward, info)
        regret += info["regret"]
        obs = next_obs
    return regret, time.perf_counter() - start


def scenario(name: str, horizon: int, seeds: int, only: set[str] | None, epsilons: list[float] | None) -> dict:
    spec = tomllib.loads((SCENARIOS / f"{name}.toml").read_text())
    kwargs = {k: v for k, v in spec["env"].items() if k != "id"}
    env = gymnasium.make(spec["env"]["id"], horizon=horizon, **kwargs)
    c = env.unwrapped.constants
    eps = EPSILON[name]
    regrets, seconds, cpu, refused = {}, {}, {}, {}
    jobs = []
    for label, (agent, params) in agents(c.theta_bound, default_row_clip(c)).items():
        if only and label not in only and label != "random":
            continue
        params = {k: v for k, v in params.items() if v is not None or k != "first_episode"}
        if label in PRIVATE and epsilons:
            jobs += [(f"{label}@{e:g}", agent, dict(params, epsilon=e)) for e in epsilons]
        else:
            if label in PRIVATE:
                params.setdefault("epsilon", eps)
            jobs.append((label, agent, params))
    for label, agent, params in jobs:
        try:
            make_agent(agent, env, **params)
        except (ValueError, TypeError) as exc:
            refused[label] = str(exc)
            continue
        run(env, agent, params, 0, rounds=50)  # compile the numba kernels (greedy's and the noise-off ridge's) first
        start = time.process_time()
        out = [run(env, agent, params, s) for s in range(seeds)]
        cpu[label] = (time.process_time() - start) / seeds
        regrets[label] = np.array([r for r, _ in out])
        seconds[label] = float(np.mean([t for _, t in out]))
    rnd = regrets["random"]
    rows = {}
    for label, r in regrets.items():
        iv = ratio_interval(r, rnd)
        rows[label] = {"ratio_to_random": round(iv.estimate, 4), "ci95": [round(iv.low, 4), round(iv.high, 4)],
                       "mean_regret": round(float(r.mean()), 2), "seconds_per_seed": round(seconds[label], 2),
                       "cpu_seconds_per_seed": round(cpu[label], 2)}
    pairs = [(off, ref) for off, refs in NOISE_OFF.items() for ref in refs]
    pairs += [("episodic_ridge", "episodic_ridge_v1"), ("episodic_ridge", "episodic_ridge_unpooled"),
              ("support_ridge", "episodic_ridge"), ("support_ridge_assumed_s5", "episodic_ridge")]
    pairs += [(f"{new}{at}", f"{new}_doubling{at}") for new in ("episodic_ridge", "episodic_glm", "support_ridge")
              for at in ([""] + [f"@{e:g}" for e in epsilons or []])]
    for label, ref in pairs:
        if label in regrets and ref in regrets:
            iv = ratio_interval(regrets[label], regrets[ref])
            rows[label][f"ratio_to_{ref}"] = [round(iv.estimate, 4), round(iv.low, 4), round(iv.high, 4)]
            rows[label][f"cpu_ratio_to_{ref}"] = round(cpu[label] / cpu[ref], 3)
    return {"env": spec["env"], "horizon": horizon, "epsilon": eps, "seeds": seeds, "delta": "1/T",
            "agents": rows, "refused": refused}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--horizon", type=int, default=20_000)
    parser.add_argument("--scenarios", default=",".join(EPSILON))
    parser.add_argument("--agents", default="", help="comma-separated labels (random is always run)")
    parser.add_argument("--epsilons", default="", help="comma-separated epsilons for the private agents")
    args = parser.parse_args()
    only = set(args.agents.split(",")) if args.agents else None
    epsilons = [float(e) for e in args.epsilons.split(",")] if args.epsilons else None
    out = {"load": os.getloadavg(), "cpus": os.cpu_count(), "scenarios": {}}
    for name in args.scenarios.split(","):
        out["scenarios"][name] = scenario(name, args.horizon, args.seeds, only, epsilons)
        print(json.dumps({name: out["scenarios"][name]}), flush=True)
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
