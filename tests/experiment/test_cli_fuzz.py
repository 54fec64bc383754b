"""A property-based fuzz test of the whole command line (issue 24, item 7a).

Every subcommand and every one of its flags is read from the parsers themselves (:func:`dpbandit.experiment.cli.
command_parsers`: ``dpbandit``'s sub-parsers, the delegated ``oco``, ``frontier``, ``replay`` and one parser per
``reproduce`` target), so a new subcommand or flag is fuzzed without editing this file; a new subcommand must only be
given its entry in :data:`TINY` (the flags that keep its valid cases small, and its share of cases), and
:func:`test_every_subcommand_has_a_strategy` fails until it has one.

Argument lists mix valid and invalid values: numbers out of range, huge (``1e12``, ``10**12``), negative, ``nan``,
``inf``, text; paths to missing files, to folders, to files of the wrong kind; small valid CSV / NPZ logs and data
tables written per case (some with a bad cell); small TOML configurations with random keys and values. The invariant
of every case: exit code 0, or exit code 2 with exactly one line on stderr (``dpbandit X: error: ...``); never a
traceback; and no file outside the output folder is created, changed or deleted: a canary tree (files, and links to
it from the output folder, one of them named like a run directory) is compared before and after, by path, bytes,
mode and link target. Cases run in-process through ``main(argv)`` in a temporary working directory; a few run as
subprocesses to check the real stderr and exit code. The Dask backend is not fuzzed (a local cluster takes seconds
to start); ``--backend`` draws ``local`` or an invalid choice.

Failing cases are collected (no shrinking: every one is listed with its argv and what happened) and each
subcommand's test fails listing them. The number of cases per subcommand is printed at the end. The seed is fixed
(``derandomize``); ``DPBANDIT_FUZZ_SEED=n DPBANDIT_FUZZ_SCALE=k`` searches further (seed n, k times the cases) and
``DPBANDIT_FUZZ_LOG=file`` appends every case (argv, exit code, stderr) to a file.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from dpbandit.experiment.cli import command_parsers, main

PARSERS = command_parsers()

#: Per subcommand: flags always added (after the fuzzed ones: they force small work), flags always drawn (their
#: values come from the fuzz pools, whose valid values are small), the number of cases, and flags never drawn
#: ("skip": work no size flag makes small, tested elsewhere).
TINY: dict[str, dict] = {
    "run": {"always": ["--no-progress"], "required": ["--config"], "cases": 80},
    "plot": {"always": [], "required": ["run_dir"], "cases": 30},
    "compare": {"always": [], "required": ["run_dir"], "cases": 24},
    "envs": {"always": [], "required": [], "cases": 2},
    "agents": {"always": [], "required": [], "cases": 2},
    "notebooks": {"always": [], "required": [], "cases": 8},
    "oco": {"always": ["--quick", "--no-progress"], "required": ["--horizon", "--n-jobs"], "cases": 30},
    "frontier": {"always": ["--quick", "--no-progress"], "required": ["--horizons", "--seeds", "--n-jobs"],
                 "cases": 24},
    "replay": {"always": [], "required": ["log", "--agent"], "cases": 60},
    "reproduce table-5.1": {"always": ["--no-progress"], "required": ["--horizons", "--dims", "--seeds", "--ps"],
                            "cases": 20},
    "reproduce figure-5.1": {"always": ["--quick", "--no-progress"], "required": ["--horizon", "--seeds", "--n-jobs"],
                             "cases": 16},
    "reproduce fliphat": {"always": ["--quick", "--no-progress"], "required": ["--horizon", "--seeds", "--arms",
                                                                               "--epsilons"], "cases": 20},
    "reproduce": {"always": [], "required": [], "cases": 8},  # the dispatcher itself: missing / unknown targets
    # --audit runs check_private_agent's empirical audit (tens of seconds): tests/experiment/test_bench.py covers it
    "bench": {"always": ["--tiny", "--no-progress"], "required": ["--n-jobs"], "cases": 16, "skip": ["--audit"]},
}
#: A case that runs longer than this is a failure (a size or time that should have been refused before any work).
CASE_SECONDS = 20
COUNTS: Counter = Counter()

# -- value pools -----------------------------------------------------------------------------------------------------
# Every choice below is a uniform draw from a random.Random that Hypothesis seeds (st.randoms, derandomized): the
# pools are lists, a strategy is a plain function of that generator.

HUGE_INTS = ["1000000000000", "1e12", "99999999999999999999"]
BAD_NUMBERS = ["0", "-1", "-7", "nan", "inf", "-inf", "x", "1.5", "", "0x10", "1e308", "1e-300"]
TEXT = ["", " ", "nope", "-", "--", "../x", "~", "*", "é", "\x00", "\n", "-rf", "..."]
NAMES = ["fz", "fz-2", "exp", "link_dir", "a_file.txt", "..", ".", "-rf", "~", "a/b", "x" * 120, "ok name", ""]
AGENTS = ["random", "oracle", "greedy", "egreedy", "linucb", "lasso", "dp_ucb", "oco", "dp_hdb", "episodic_ridge",
          "fliphat"]
AGENT_PARAMS = ["epsilon", "delta", "alpha", "theta_bound", "reg", "learner", "nope"]
ENVS = ["dpbandit/SparseLinear-v0", "dpbandit/SharedLinear-v0", "dpbandit/SparseLogistic-v0", "dpbandit/Iris-v0",
        "dpbandit/Nope-v0", "CartPole-v1", "nope"]
TOML_VALUES = [0, -1, 10**12, 1e12, 0.5, float("nan"), float("inf"), "x", "", True, [], ["a"], {"a": 1}]


class World:
    """The temporary tree of one test: inputs (data, logs, configs), the canary, the output folder and the cwd."""

    def __init__(self, root: Path):
        self.root = root
        self.inputs, self.canary, self.out, self.cwd = (root / n for n in ("inputs", "canary", "out", "cwd"))
        for folder in (self.inputs / "gen", self.canary / "sub", self.out, self.cwd, self.inputs / "folder.csv",
                       self.inputs / "folder.npz", self.inputs / "folder.toml"):
            folder.mkdir(parents=True, exist_ok=True)
        (self.canary / "precious.txt").write_text("precious\n")
        (self.canary / "sub" / "results.csv").write_text("t,agent\n1,x\n")
        (self.canary / "sub" / "regret.png").write_bytes(b"\x89PNG not really")
        (self.canary / "readonly.txt").write_text("read only\n")
        (self.canary / "readonly.txt").chmod(0o444)
        for name, target in (("link_file", self.canary / "precious.txt"), ("link_dir", self.canary / "sub"),
                             ("exp", self.canary / "sub"), ("table.csv", self.canary / "precious.txt"),
                             ("fig.png", self.canary / "sub" / "regret.png")):
            os.symlink(target, self.out / name)
        (self.out / "a_file.txt").write_text("a file in the output folder\n")
        rng = np.random.default_rng(0)
        rows = "\n".join(f"{a:.3f},{b:.3f},{c:.3f},{int(a > 0)}" for a, b, c in rng.normal(size=(30, 3)))
        files = {"good.csv": f"f0,f1,f2,label\n{rows}\n", "text.npz": "not an archive\n", "empty.csv": "",
                 "header.csv": "f0,f1,label\n", "config.csv": 'name = "x"\n', "data.txt": "f0,label\n1,0\n",
                 "binary.toml": "\udcff\udcfe"}
        for name, text in files.items():
            (self.inputs / name).write_bytes(text.encode("utf-8", "surrogateescape"))
        #: paths of the wrong kind: missing, folders, files of another kind
        self.paths = [str(self.inputs / name) for name in files] + [
            str(self.inputs / n) for n in ("folder.csv", "folder.npz", "folder.toml", "missing.csv", "missing.npz",
                                           "missing.toml")] + [str(self.inputs), str(self.canary)]
        #: output paths that must not be written through or replaced: as a folder (--out, --copy) a link to a file,
        #: a file, a path below a file; as a file (--output, replay's --out) links into the canary and a folder
        self.folder_traps = [str(self.out / n) for n in ("link_file", "a_file.txt", "a_file.txt/below")]
        self.file_traps = [str(self.out / n) for n in ("link_dir", "link_file", "a_file.txt", "exp", "table.csv",
                                                       "fig.png")] + [str(self.out)]

    def prebuild(self) -> None:
        """Finished runs inside the output folder, for plot and compare."""
        config = self.inputs / "prebuilt.toml"
        config.write_text('name = "prebuilt"\nseeds = 2\ncheckpoints = 5\n[env]\nid = "dpbandit/SparseLinear-v0"\n'
                          'horizon = 20\ndim = 5\n[[agents]]\ntype = "random"\n[[agents]]\ntype = "linucb"\n')
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main(["run", "--config", str(config), "--out", str(self.out), "--no-progress"]) == 0
            assert main(["oco", "--quick", "--horizon", "20", "--seeds", "1", "--learners", "pigd,igd", "--out",
                         str(self.out), "--no-progress", "--name", "prebuilt-oco"]) == 0

    def write(self, suffix: str, data: bytes) -> str:
        """A generated input file (named by its content, so equal cases share it)."""
        path = self.inputs / "gen" / f"{hashlib.sha256(data).hexdigest()[:12]}{suffix}"
        if not path.exists():
            path.write_bytes(data)
        return str(path)

    # -- generated files ---------------------------------------------------------------------------------------------

    def log_file(self, rnd: random.Random) -> str:
        """A small log: a valid CSV or NPZ, or one with a bad cell, column or array."""
        n, k = rnd.randint(20, 60), rnd.randint(2, 3)
        rng = np.random.default_rng(rnd.randrange(4))
        action, reward, pscore = rng.integers(k, size=n), rng.random(n).round(3), np.full(n, round(1 / k, 6))
        context = rng.normal(size=(n, 2)).round(3)
        broken = rnd.random() < 0.4
        if rnd.random() < 0.4:
            arrays = {"n_actions": k, "action": action, "reward": reward, "pscore": pscore, "context": context,
                      "n_rounds": n}
            if broken:
                key = rnd.choice(list(arrays))
                arrays[key] = rnd.choice([None, np.array([np.nan] * n), np.array(["x"] * n), n + 1, -1, 10**12])
            buf = io.BytesIO()
            np.savez(buf, **{key: v for key, v in arrays.items() if v is not None})
            return self.write(".npz", buf.getvalue())
        columns = {"c0": context[:, 0], "c1": context[:, 1], "action": action, "reward": reward, "pscore": pscore}
        header, rows = list(columns), [[str(v) for v in row] for row in zip(*columns.values())]
        if broken and rnd.random() < 0.7:
            rows[rnd.randrange(n)][rnd.randrange(len(header))] = rnd.choice(
                ["buy", "", "nan", "inf", "-1", "1e12", "0", "1.5", '"a,b"', "1,2"])
        elif broken:
            header[rnd.randrange(len(header))] = rnd.choice(["propensity", "position", "x", "", "action"])
        return self.write(".csv", ("\n".join([",".join(header)] + [",".join(r) for r in rows]) + "\n").encode())

    def data_file(self, rnd: random.Random) -> str:
        """A small classification/regression table: valid, or with one bad cell."""
        n = rnd.randint(3, 12)
        rng = np.random.default_rng(rnd.randrange(4))
        rows = [[f"{v:.3f}" for v in rng.normal(size=2)] + [str(int(rng.integers(3)))] for _ in range(n)]
        if rnd.random() < 0.4:
            rows[rnd.randrange(n)][rnd.randrange(3)] = rnd.choice(["high", "", "inf", "nan", "1e308", "-0"])
        return self.write(".csv", ("f0,f1,label\n" + "\n".join(",".join(r) for r in rows) + "\n").encode())

    def config_file(self, rnd: random.Random) -> str:
        """A small TOML experiment: valid with small values, or one key, type or size wrong, or not TOML at all."""
        mode = rnd.choice(["valid", "valid", "one bad", "one bad", "not toml"])
        if mode == "not toml":
            return self.write(".toml", rnd.choice([b"name = ", b"[[agents]\n", b"\xff\xfe", b"[env]\nid = 3\n"]))
        env_id = rnd.choice(ENVS[:4] + ["dpbandit/Classification-v0", "dpbandit/Regression-v0"])
        top = {"name": rnd.choice(["fz", "fz-2", "exp"]), "seeds": rnd.choice([1, 2, [0, 3]]),
               "checkpoints": rnd.choice([2, 5, "all"]), "n_jobs": 1, "batch": rnd.choice(["auto", "off"]),
               "out": rnd.choice([str(self.out), "runs-here"])}
        env = {"id": env_id, "horizon": rnd.choice([5, 20])}
        if env_id.startswith(("dpbandit/Sparse", "dpbandit/Shared")):
            env.update(dim=5, sparsity=2)
        if env_id.endswith(("Classification-v0", "Regression-v0")):
            env.update(data=self.data_file(rnd), target="label")
        agents = [{"type": t} for t in rnd.sample(["random", "greedy", "linucb", "oracle", "lasso"], rnd.randint(1, 2))]
        if rnd.random() < 0.5:
            agents.append(rnd.choice([{"type": "dp_ucb", "epsilon": 1.0, "label": "dp"},
                                      {"type": "egreedy", "epsilon": 0.1, "label": "eg"},
                                      {"type": "dp_hdb", "epsilon": 2.0, "label": "hdb"},
                                      {"type": "fliphat", "epsilon": 2.0, "label": "fl"},
                                      {"type": "episodic_ridge", "epsilon": 2.0, "label": "er"}]))
        if mode == "one bad":
            where = rnd.choice(["top", "env", "agent", "data", "id", "type", "drop"])
            if where == "top":
                top[rnd.choice(list(top) + ["nope", "envs"])] = rnd.choice(TOML_VALUES + NAMES)
            elif where == "env":
                env[rnd.choice(["horizon", "dim", "n_arms", "noise_std", "sparsity", "context_bound", "theta_bound",
                                "colour", "standardize", "target"])] = rnd.choice(TOML_VALUES)
            elif where == "agent":
                agents[0][rnd.choice(AGENT_PARAMS)] = rnd.choice(TOML_VALUES)
            elif where == "data":
                env["data"] = rnd.choice(self.paths + TOML_VALUES)
                env.setdefault("target", "label")
            elif where == "id":
                env["id"] = rnd.choice(ENVS[4:] + TOML_VALUES)
            elif where == "type":
                agents[0]["type"] = rnd.choice(["nope", "os:getcwd", "dpbandit.agents:Agent", ""] + TOML_VALUES)
            else:
                top.pop(rnd.choice(["name", "seeds", "out"]))
                agents = agents if rnd.random() < 0.5 else []
        text = _toml_table("", top) + _toml_table("[env]", env) + "".join(_toml_table("[[agents]]", a)
                                                                          for a in agents)
        return self.write(".toml", text.encode())


@pytest.fixture(scope="module", autouse=True)
def cases_per_subcommand(request):
    """After the module: print how many cases each subcommand ran."""
    yield COUNTS
    plugins = request.config.pluginmanager
    reporter, capture = plugins.getplugin("terminalreporter"), plugins.getplugin("capturemanager")
    line = "fuzzed cases per subcommand: " + ", ".join(f"{c} {COUNTS[c]}" for c in TINY if COUNTS[c])
    if reporter is not None and capture is not None and COUNTS:
        with capture.global_and_fixture_disabled():
            reporter.write_line("")
            reporter.write_line(line)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World(tmp_path_factory.mktemp("fuzz"))
    w.prebuild()
    return w


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if value != value else ("inf" if value == float("inf") else "-inf" if value == float("-inf")
                                             else repr(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _toml_table(header: str, table: dict) -> str:
    lines = [header] if header else []
    for key, value in table.items():
        lines.append(f"{json.dumps(key)} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


# -- argument lists --------------------------------------------------------------------------------------------------

def _pools(world: World, command: str, action: argparse.Action) -> tuple:
    """(valid, invalid) values of ``action``: each a list to pick from or a function of the generator. Valid values
    are small, so a valid case stays cheap; invalid ones are out of range, huge, not numbers, of the wrong kind."""
    dest = action.dest
    numbers = BAD_NUMBERS + HUGE_INTS
    if dest in ("out", "output", "copy"):  # output paths: in the output folder, or traps that must stay untouched
        if dest == "output" or (dest == "out" and command == "replay"):  # a file
            names = ["figure", "figure.svg", "plot.png"] if dest == "output" else ["table.out.csv", "t.csv"]
            return [str(world.out / n) for n in names], world.file_traps + [str(world.inputs / "good.csv")]
        return [str(world.out), str(world.out / "new" / "deeper"), "runs-here"], world.folder_traps
    if dest == "config":
        return world.config_file, world.paths
    if dest == "log":
        return world.log_file, world.paths
    if dest == "run_dir":
        return ([str(world.out / n) for n in ("prebuilt", "prebuilt-oco", "fz", "fz-2")],
                [str(world.out / n) for n in ("exp", "link_dir", "a_file.txt", "new")] + world.paths)
    if dest == "agent":
        return (["random", "greedy", "linucb", "egreedy:epsilon=0.1", "dp_ucb:epsilon=1", "oracle", "lasso",
                 "dp_hdb:epsilon=2", "episodic_ridge", "fliphat:epsilon=2"],
                lambda rnd: f"{rnd.choice(AGENTS + ['nope', ''])}:{rnd.choice(AGENT_PARAMS)}={rnd.choice(numbers)}")
    if dest in ("agents", "references"):
        return ["dp_ucb", "dp_hdb"] if dest == "agents" else ["random", "linucb"], AGENTS + ["nope", ""]
    if dest == "env":
        return ENVS[:4], ENVS[4:]
    if dest in ("problems", "learners"):
        names = ["linear", "logistic"] if dest == "problems" else ["pigd", "igd", "dp-tofw", "online-fw"]
        return lambda rnd: ",".join(rnd.sample(names, rnd.randint(1, 2))), TEXT + ["linear,,", ",".join(names * 9)]
    if dest == "name":
        return ["fz", "fz-2"], NAMES
    if dest == "backend":  # the Dask backend is not fuzzed: a local cluster takes seconds to start
        return ["local"], ["nope"]
    if dest == "dask_address":
        return [], ["tcp://127.0.0.1:1"]
    if dest == "baseline":
        return ["random", "linucb", "pigd"], ["nope", ""]
    if dest == "n_jobs":  # one valid value: parallel workers take seconds to start
        return ["1"], numbers
    if action.choices is not None:
        return [str(c) for c in action.choices], TEXT
    if dest == "ps":
        return ["1.5", "inf"], numbers
    if dest == "level":
        return ["0.9", "0.95"], numbers
    if dest == "dims":
        return ["3", "4"], numbers
    if action.type is float or dest in ("epsilon", "epsilons", "delta", "context_bound", "theta_bound",
                                        "reward_range"):
        return ["0.5", "1", "2"], numbers
    if dest == "seeds":
        return ["1", "2"], numbers
    if action.type is not None:
        return ["2", "3", "16", "20"], numbers + ["1"]
    return ["x", "a b"], TEXT + world.paths


def _value(rnd: random.Random, world: World, command: str, action: argparse.Action, bad: bool) -> list[str]:
    """A value list for ``action`` from its valid pool, or its invalid pool when ``bad``."""
    pool = _pools(world, command, action)[bad]
    pick = (lambda: pool(rnd)) if callable(pool) else (lambda: rnd.choice(pool))
    count = rnd.randint(1, 2) if action.nargs in ("+", "*") else action.nargs if isinstance(action.nargs, int) else 1
    return [pick() for _ in range(count)]


def argv_of(rnd: random.Random, world: World, command: str) -> list[str]:
    """One case of ``command``: every required flag and about a third of the others; valid values, or one bad value
    (out of range, huge, not a number, a path of the wrong kind), or an extra argument."""
    if command == "reproduce":  # the dispatcher: no target, an unknown one, or options first
        return ["reproduce", *rnd.sample(["table-5.2", "--quick", "-h", "x", "figure"], rnd.randint(0, 2))]
    spec = TINY[command]
    actions = [a for a in PARSERS[command]._actions if not isinstance(a, (argparse._HelpAction,
                                                                        argparse._VersionAction))]
    actions = [a for a in actions if not set(a.option_strings) & set(spec.get("skip", ()))]
    chosen = [a for a in actions if (a.option_strings[-1] if a.option_strings else a.dest) in spec["required"]
              or not a.option_strings or rnd.random() < 0.3]
    mode = rnd.choice(["valid", "valid", "one bad value", "one bad value", "extra argument"])
    valued = [a for a in chosen if a.nargs != 0 and (not a.option_strings or _pools(world, command, a)[1])]
    bad = rnd.choice(valued) if mode == "one bad value" and valued else None
    positional, flags = [], []
    for action in chosen:
        if not action.option_strings:
            positional += _value(rnd, world, command, action, action is bad)
        elif action.nargs == 0:
            flags.append(action.option_strings[-1])
        elif action is bad or _pools(world, command, action)[0]:
            flags += [action.option_strings[-1], *_value(rnd, world, command, action, action is bad)]
    if mode == "extra argument":
        flags.insert(rnd.randint(0, len(flags)), rnd.choice(["--nope", "-h", "stray", "--seeds", "--out"]))
    return [*command.split(), *positional, *flags, *spec["always"]]


# -- the invariant ---------------------------------------------------------------------------------------------------

def snapshot(world: World) -> dict:
    """Every entry under the world except inside the output folder and the cwd: kind, mode, bytes, link target; and
    the links at the top of the output folder."""
    seen = {}
    for folder, dirs, files in os.walk(world.root):
        here = Path(folder)
        if here in (world.out, world.cwd):
            dirs[:] = []
            if here == world.out:
                for name in os.listdir(here):
                    if (here / name).is_symlink():
                        seen[str(here / name)] = ("link", os.readlink(here / name))
            continue
        for name in dirs + files:
            path = here / name
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                seen[str(path)] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                seen[str(path)] = ("dir", info.st_mode)
            else:
                seen[str(path)] = ("file", info.st_mode, path.read_bytes())
    return seen


#: Words of Python's, numpy's, pandas' and gymnasium's own messages: an error line holding one of them reports a
#: library's failure instead of naming the parameter, file or column (issue 24, item 6).
LIBRARY_WORDS = ("Traceback", "allow_pickle", "was raised from the environment creator", "invalid literal for int()",
                 "could not convert string to float", "No columns to parse", "loop of ufunc", "cannot reindex",
                 "has no attribute", "unsupported operand type", "NoneType", "index out of range",
                 "out of bounds for axis")


class CaseTimeout(BaseException):
    """Raised by the watchdog in a case that runs longer than :data:`CASE_SECONDS`."""


def _alarm(signum, frame):
    raise CaseTimeout()


def run_case(world: World, argv: list[str]) -> str | None:
    """Run ``dpbandit argv`` in-process; the broken invariant in words, or None."""
    before = snapshot(world)
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    cwd = os.getcwd()
    started = time.perf_counter()
    problem = None
    try:
        os.chdir(world.cwd)
        signal.alarm(CASE_SECONDS)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as exc:
        code = exc.code
    except CaseTimeout:
        code, problem = None, f"still running after {CASE_SECONDS} s (no refusal before the work)"
    except BaseException as exc:  # noqa: BLE001 - the point: any escaping exception is a finding
        code, problem = None, f"raised {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        os.chdir(cwd)
    text = err.getvalue()
    lines = text.strip().splitlines()
    if problem is None and code == 2 and (len(lines) != 1 or ": error: " not in lines[0]):
        problem = f"exit 2 with {len(lines)} stderr line(s): {text.strip()[:400]!r}"
    elif problem is None and code not in (0, 2):
        problem = f"exit code {code!r}; stderr {text.strip()[:300]!r}"
    elif problem is None and "Traceback" in text:
        problem = f"a traceback on stderr (exit {code})"
    elif problem is None and code == 2 and any(words in lines[0] for words in LIBRARY_WORDS):
        problem = f"a library's message instead of one naming the parameter or file: {lines[0][:300]!r}"
    if os.environ.get("DPBANDIT_FUZZ_LOG"):  # every case, for reading what the fuzzer tried
        with open(os.environ["DPBANDIT_FUZZ_LOG"], "a", encoding="utf-8") as log:
            log.write(f"{code} {time.perf_counter() - started:.2f}s {argv!r}\n    {text.strip()[:300]!r}\n")
    after = snapshot(world)
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    if changed:
        what = [f"{p} ({'created' if p not in before else 'deleted' if p not in after else 'changed'})"
                for p in changed[:5]]
        problem = (problem + "; " if problem else "") + f"touched outside the output folder: {', '.join(what)}"
    if problem:
        return f"dpbandit {' '.join(map(repr, argv))}\n    -> {problem} [{time.perf_counter() - started:.1f} s]"
    return None


# -- the tests -------------------------------------------------------------------------------------------------------

def test_every_subcommand_has_a_strategy():
    """A new subcommand (or reproduce target) must say how to keep its cases small before it is fuzzed."""
    missing = sorted(set(PARSERS) - set(TINY))
    assert not missing, f"no fuzz strategy for {missing}: add them to TINY in {__file__}"
    for command, spec in TINY.items():
        if command == "reproduce":
            continue
        names = {a.option_strings[-1] if a.option_strings else a.dest for a in PARSERS[command]._actions}
        assert set(spec["required"]) | set(spec["always"]) | set(spec.get("skip", ())) <= names, (command, spec)


@pytest.mark.parametrize("command", list(TINY))
def test_fuzz_subcommand(world, command):
    """Exit 0, or exit 2 with one line on stderr; never a traceback; nothing outside the output folder touched."""
    failures: list[str] = []

    explore = os.environ.get("DPBANDIT_FUZZ_SEED")  # a longer search elsewhere: another seed, SCALE x the cases
    cases = TINY[command]["cases"] * int(os.environ.get("DPBANDIT_FUZZ_SCALE", "1"))

    @settings(max_examples=cases, derandomize=explore is None, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @seed(int(explore or 0))
    @given(rnd=st.randoms(use_true_random=True))
    def fuzz(rnd):
        COUNTS[command] += 1
        problem = run_case(world, argv_of(rnd, world, command))
        if problem:
            failures.append(problem)

    fuzz()
    assert not failures, f"{len(failures)} of {COUNTS[command]} cases failed:\n" + "\n".join(failures)


@pytest.mark.parametrize("argv,code", [
    (["run", "--seeds", "1e12"], 2),
    (["replay", "missing.npz", "--agent", "random"], 2),
    (["reproduce"], 2),
    (["envs"], 0),
])
def test_real_process_stderr_and_exit_code(tmp_path, argv, code):
    """The installed entry point, in a process of its own: the exit code, and one stderr line for a failure."""
    done = subprocess.run([sys.executable, "-m", "dpbandit.experiment.cli", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert (len(lines) == 1 and ": error: " in lines[0]) if code == 2 else not lines, done.stderr
    assert list(tmp_path.iterdir()) == []
