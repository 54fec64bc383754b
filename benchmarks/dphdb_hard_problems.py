"""Issue 28 item 6: why DP-HDB's regret does not move from epsilon = 1 to 16 on the sparse logistic problem with
correlated contexts (docs/derivations.md#hfw-6-hard). Prints JSON; not a test.

For the bench suite's ``sparse-logistic-ar-d100`` and ``-d400`` environments (K = 3, AR(0.5) contexts scaled to
||x||_inf = 1, 5-sparse theta_a with ||theta_a||_1 = 3, logistic rewards) at T = 2e4:

* final regret of DP-HDB as a ratio to uniform random play (paired-bootstrap 95 % interval over common seeds) at
  epsilon in {1, 4, 16, 256, inf}, with the default warm-up and h, with a warm-up of 100 samples per arm, and with
  h = 10 (no pre-selection);
* the two sides of DP-POFW's vertex selection: the Gumbel scale beta_t = coefficient / sqrt(t + 1) of the
  calibration (spec/errata.md E4) at t = 1e3 and t = T, and the noise-free scores r |grad_j F(0)| of the top
  coordinates, from the average logistic-loss gradient at theta = 0 over 6000 users of uniform play.

    python benchmarks/dphdb_hard_problems.py [--seeds 5] [--horizon 20000] [--dims 100,400]
"""

from __future__ import annotations

import argparse
import json
import math
import os

import gymnasium
import numpy as np

import dpbandit  # noqa: F401  (registers the environments)
from dpbandit.agents import make_agent
from dpbandit.experiment.stats import ratio_interval

EPSILONS = (1.0, 4.0, 16.0, 256.0, math.inf)


def regret(env, name: str, params: dict, seed: int) -> float:
    agent = make_agent(name, env, **params)
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    total = 0.0
    for _ in range(env.unwrapped.constants.horizon):
        arm = agent.act(obs)
        next_obs, reward, _, _, info = env.step(arm)
        agent.update(obs, arm, reward, info)
        total += info["regret"]
        obs = next_obs
    return total


def scores_at_zero(env, n: int = 6000) -> list[list[float]]:
    """r |grad_j F(0)| of each arm's three largest coordinates: the noise-free vertex scores at theta = 0."""
    c = env.unwrapped.constants
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    grad, count = np.zeros((c.n_arms, c.dim)), np.zeros(c.n_arms)
    for _ in range(n):
        arm = int(rng.integers(c.n_arms))
        next_obs, reward, _, _, _ = env.step(arm)
        grad[arm] += (0.5 - reward) * obs[arm]  # logistic loss gradient at theta = 0: (mu(0) - y) x
        count[arm] += 1
        obs = next_obs
    top = np.sort(np.abs(grad / count[:, None]), axis=1)[:, ::-1][:, :3]
    return (c.theta_bound * top).round(4).tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--horizon", type=int, default=20_000)
    parser.add_argument("--dims", default="100,400")
    args = parser.parse_args()
    out = {"benchmark": "dphdb_hard_problems", "load": os.getloadavg(), "seeds": args.seeds,
           "horizon": args.horizon, "dims": {}}
    for d in map(int, args.dims.split(",")):
        env = gymnasium.make("dpbandit/SparseLogistic-v0", n_arms=3, dim=d, contexts="ar", rho=0.5,
                             horizon=args.horizon)
        rnd = np.array([regret(env, "random", {}, s) for s in range(args.seeds)])
        rows = {}
        for eps in EPSILONS:
            for tag, extra in (("default", {}), ("warmup=100", {"warmup": 100}), ("h=10", {"h": 10.0})):
                if tag != "default" and eps not in (1.0, 16.0):
                    continue
                params = dict(extra, epsilon=eps)
                agent = make_agent("dp_hdb", env, **params)
                cal = agent._make_curator(np.random.default_rng(0)).learners.calibration
                r = np.array([regret(env, "dp_hdb", params, s) for s in range(args.seeds)])
                iv = ratio_interval(r, rnd)
                rows[f"epsilon={eps:g} {tag}"] = {
                    "ratio_to_random": round(iv.estimate, 4), "ci95": [round(iv.low, 4), round(iv.high, 4)],
                    "warmup_rounds": agent.warmup_rounds, "h": round(agent.h, 4),
                    "gumbel_scale_t1000": round(cal.coefficient / math.sqrt(1001), 4),
                    "gumbel_scale_tT": round(cal.coefficient / math.sqrt(args.horizon + 1), 4),
                }
                print(json.dumps({d: {f"epsilon={eps:g} {tag}": rows[f"epsilon={eps:g} {tag}"]}}), flush=True)
        out["dims"][d] = {"agents": rows, "noise_free_top_scores_r_grad_at_0": scores_at_zero(env),
                          "log_2d": round(math.log(2 * d), 3)}
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
