"""Reference estimates from Open Bandit Pipeline (OBP) 0.5.7 for two small logs (issue 26, item 8).

How the committed fixture was made (three steps; no OBP code is copied into dpbandit):

1. ``.venv/bin/python tests/offline/data/make_obp_reference.py inputs`` (dpbandit's venv) writes
   ``obp_reference_inputs.npz``: two logs with known truth, the cross-fitted ridge reward model ``q`` and the
   evaluated action distributions ``pi`` of three policies (uniform play, a fixed arm, and LinUCB as replayed by
   ``dpbandit.offline.evaluate_offline`` with seed 0):

   * ``synthetic``: ``dpbandit/SparseLogistic-v0`` (K = 3, d = 5, instance_seed 0) logged by a non-uniform policy
     (0.6, 0.25, 0.15), n = 2000, with every arm's expected reward (the truth);
   * ``rare``: a uniform log, K = 8, d = 2, n = 3000, Bernoulli rewards with click rates 0.2-1.5 % (logistic in the
     context), the truth from the known click rates.

2. In a scratch Python 3.10 venv (OBP 0.5.7 requires Python < 3.11), outside the project::

       python3.10 -m venv /tmp/obpenv
       /tmp/obpenv/bin/pip install --no-deps obp==0.5.7
       /tmp/obpenv/bin/pip install "numpy<2" scipy scikit-learn "pandas<3" tqdm matplotlib seaborn pyyaml
       /tmp/obpenv/bin/python tests/offline/data/make_obp_reference.py obp

   ``obp.utils`` imports torch at module level although the OPE estimators used here never call it; torch is not
   installed: this script puts an inert stand-in module named ``torch`` on the import path (``_stub_torch``) so that
   ``obp.ope`` imports. The installed versions were obp 0.5.7, numpy 1.26.4, scipy 1.15.3, scikit-learn 1.7.2,
   pandas 2.3.3 (OBP pins older ones; its estimators are plain numpy). It writes ``obp_reference.json``: for every
   log and policy, OBP's ``estimate_policy_value`` of ``DirectMethod``, ``InverseProbabilityWeighting``,
   ``SelfNormalizedInverseProbabilityWeighting``, ``DoublyRobust``, ``SelfNormalizedDoublyRobust``,
   ``SwitchDoublyRobust(lambda_=CLIP)``, ``InverseProbabilityWeighting(lambda_=CLIP)`` and
   ``DoublyRobust(lambda_=CLIP)`` (CLIP = 2.0, so clipping and switching bite) with the same ``q`` and ``pi``,
   OBP's 95 % percentile-bootstrap interval (``estimate_interval``, 1000 resamples, random_state 0), and the truth.

3. ``.venv/bin/python tests/offline/data/make_obp_reference.py show`` prints dpbandit's estimates and intervals
   next to the truth and OBP's numbers (the closing note of issue 26); ``tests/offline/test_obp_reference.py``
   checks them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
INPUTS = HERE / "obp_reference_inputs.npz"
OUTPUT = HERE / "obp_reference.json"
CLIP = 2.0
POLICIES = ("uniform", "fixed_arm", "linucb")
OBP_NAMES = {"dm": "DirectMethod", "ips": "InverseProbabilityWeighting",
             "snips": "SelfNormalizedInverseProbabilityWeighting", "dr": "DoublyRobust",
             "sndr": "SelfNormalizedDoublyRobust", "switch_dr": "SwitchDoublyRobust",
             "clipped_ips": "InverseProbabilityWeighting", "clipped_dr": "DoublyRobust"}


def _rare_log(seed: int = 11, n: int = 3000, k: int = 8):
    from dpbandit.offline import LoggedData

    rng = np.random.default_rng(seed)
    context = rng.uniform(-1, 1, size=(n, 2))
    theta = rng.normal(size=(k, 2))
    base = np.log(np.linspace(0.002, 0.015, k) / (1 - np.linspace(0.002, 0.015, k)))
    means = 1 / (1 + np.exp(-(base[None, :] + 0.5 * context @ theta.T)))
    action = rng.integers(k, size=n)
    reward = (rng.random(n) < means[np.arange(n), action]).astype(float)
    return LoggedData(context, action, reward, k, pscore=np.full(n, 1 / k), extra={"expected_reward": means})


def logs():
    """The two logs (dpbandit's LoggedData, truth in ``extra["expected_reward"]``) and their replay settings."""
    import gymnasium

    import dpbandit.envs  # noqa: F401
    from dpbandit.offline import log_policy

    env = gymnasium.make("dpbandit/SparseLogistic-v0", horizon=10_000, n_arms=3, dim=5, sparsity=2, instance_seed=0)
    synthetic = log_policy(env, 2000, seed=5, policy=lambda obs, rng: np.array([0.6, 0.25, 0.15]))
    return {"synthetic": (synthetic, dict(context_norm="linf", theta_norm="l1", theta_bound=3.0)),
            "rare": (_rare_log(), dict(context_norm="linf"))}


def linucb(data, replay_options):
    """LinUCB (alpha = 0.5) built for replaying ``data`` (the learning agent of the fixture)."""
    from dpbandit.agents import make_agent
    from dpbandit.offline import ReplayEnv

    return make_agent("linucb", ReplayEnv.from_logged(data, data.n_rounds, **replay_options), alpha=0.5)


def policies(data, replay_options):
    """``name -> pi (n, K)``: uniform play, always the last arm, LinUCB replayed with seed 0."""
    from dpbandit.offline import evaluate_offline, fixed_arm, uniform_policy

    learned = evaluate_offline(data, linucb(data, replay_options), 0, estimators=("ips",)).pi
    return {"uniform": uniform_policy(data.n_rounds, data.n_actions),
            "fixed_arm": fixed_arm(data.n_actions - 1, data.n_rounds, data.n_actions), "linucb": learned}


def make_inputs() -> None:
    from dpbandit.offline.reward_model import cross_fitted_rewards

    arrays = {}
    for name, (data, options) in logs().items():
        arrays.update({f"{name}/context": data.context, f"{name}/action": data.action, f"{name}/reward": data.reward,
                       f"{name}/pscore": data.pscore, f"{name}/truth": data.extra["expected_reward"],
                       f"{name}/q": cross_fitted_rewards(data)})
        for policy, pi in policies(data, options).items():
            arrays[f"{name}/pi/{policy}"] = pi
    np.savez_compressed(INPUTS, **arrays)
    print(f"wrote {INPUTS}")


def _stub_torch() -> None:
    """An inert module named ``torch`` (obp.utils imports it at module level; the OPE estimators never use it)."""
    import importlib.abc
    import importlib.machinery
    import types

    class _Any:
        def __init__(self, *args, **kwargs):
            pass

        def __call__(self, *args, **kwargs):
            return _Any()

        def __getattr__(self, name):
            return _Any()

        def __mro_entries__(self, bases):
            return (object,)

    class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):
            if name == "torch" or name.startswith("torch."):
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec):
            module = types.ModuleType(spec.name)
            module.__path__ = []
            module.__getattr__ = lambda attr: _Any()
            return module

        def exec_module(self, module):
            pass

    sys.meta_path.insert(0, _Finder())


def make_obp() -> None:
    _stub_torch()
    import obp
    from obp import ope

    inputs = np.load(INPUTS)
    out = {"obp_version": obp.__version__, "numpy_version": np.__version__, "clip": CLIP, "logs": {}}
    for log in ("synthetic", "rare"):
        g = {key.split("/", 1)[1]: inputs[key] for key in inputs.files if key.startswith(log + "/")}
        n = g["action"].size
        feedback = dict(action=g["action"], reward=g["reward"], pscore=g["pscore"], position=np.zeros(n, int))
        entry = {}
        for policy in POLICIES:
            pi = g[f"pi/{policy}"]
            truth = float((pi * g["truth"]).sum(axis=1).mean())
            rows = {"truth": truth}
            for name, cls in OBP_NAMES.items():
                kwargs = {"lambda_": CLIP} if name in ("switch_dr", "clipped_ips", "clipped_dr") else {}
                estimator = getattr(ope, cls)(**kwargs)
                args = dict(action_dist=pi[:, :, None], **feedback)
                if name in ("dm", "dr", "sndr", "switch_dr", "clipped_dr"):
                    args["estimated_rewards_by_reg_model"] = g["q"][:, :, None]
                if name == "dm":
                    args = {k: v for k, v in args.items() if k in ("action_dist", "position",
                                                                   "estimated_rewards_by_reg_model")}
                value = float(estimator.estimate_policy_value(**args))
                ci = estimator.estimate_interval(**args, alpha=0.05, n_bootstrap_samples=1000, random_state=0)
                rows[name] = {"value": value, "obp_low": float(ci["95.0% CI (lower)"]),
                              "obp_high": float(ci["95.0% CI (upper)"])}
            entry[policy] = rows
        out["logs"][log] = entry
    OUTPUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUTPUT}")


def show() -> None:
    """dpbandit's estimates and intervals next to the truth and OBP's fixture (issue 26's acceptance table)."""
    import warnings

    from dpbandit.offline import evaluate_offline
    from dpbandit.offline.estimators import ESTIMATORS

    reference = json.loads(OUTPUT.read_text())
    for log, (data, options) in logs().items():
        print(f"\n== {log} log: n={data.n_rounds}, K={data.n_actions}, rewards {int((data.reward > 0).sum())} "
              f"non-zero, clip level {reference['clip']:g} for switch/clipped")
        for policy, pi in policies(data, options).items():
            ref = reference["logs"][log][policy]
            target = linucb(data, options) if policy == "linucb" else pi  # the agent itself: its own replay
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                result = evaluate_offline(data, target, 0, estimators=("replay",) + ESTIMATORS, clip=reference["clip"])
            w_max = float((pi[np.arange(data.n_rounds), data.action] / data.pscore).max())
            binds = "binds: switch/clipped estimate a biased target" if w_max > reference["clip"] else "does not bind"
            print(f"-- {policy}: truth {ref['truth']:.5f} (largest weight {w_max:.3g}: clipping at "
                  f"{reference['clip']:g} {binds})")
            print(f"   {'estimator':<12}{'dpbandit':>10}  {'95% interval (bca)':<22}{'covers':>7}  {'OBP 0.5.7':>10}"
                  f"  {'OBP interval (percentile)':<24}")
            for name, e in result.estimates.items():
                obp = ref.get(name)
                obp_text = (f"{obp['value']:>10.5f}  [{obp['obp_low']:.5f}, {obp['obp_high']:.5f}]" if obp else
                            f"{'-':>10}")
                print(f"   {name:<12}{e.value:>10.5f}  [{e.low:.5f}, {e.high:.5f}]{'':<2}"
                      f"{'yes' if e.covers(ref['truth']) else 'NO':>5}  {obp_text}")


if __name__ == "__main__":
    step = sys.argv[1] if len(sys.argv) > 1 else ""
    if step not in ("inputs", "obp", "show"):
        sys.exit("usage: make_obp_reference.py inputs|obp|show (see the module docstring)")
    {"inputs": make_inputs, "obp": make_obp, "show": show}[step]()
