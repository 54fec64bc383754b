"""``dpbandit reproduce table-5.1``: the published numbers, the three columns, labels, files and determinism."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest

from dpbandit.experiment.reproduce import main as reproduce_main
from dpbandit.experiment.reproduce.table_5_1 import (
    GRIDS,
    PUBLISHED,
    PUBLISHED_COLUMN,
    QUICK,
    Table51Config,
    main,
    run_table_5_1,
    summarise,
    to_markdown,
)
from dpbandit.experiment.reproduce.table_5_1_published import (
    candidate_zero_risk,
    derive_instances,
    implied_zero_risk,
)
from dpbandit.experiment.stats import ratio_to_published
from dpbandit.optim.frank_wolfe import PublishedSettingWarning
from dpbandit.privacy.report import PUBLISHED_CODE_SETTING

SMALL = Table51Config(horizons=(32,), dims=(5,), seeds=2, sgd_max_horizon=32, name="t51-small")


def test_published_table_transcribed_from_the_spec():
    assert len(PUBLISHED) == 47  # 48 cells, no NoisySGD row at T = 10000, d = 5 (spec §8.1)
    assert PUBLISHED[(1000, 5, 1.5, "OFW")] == (0.00536, 0.00155, 0.0172, 0.00987, 0.0929, 0.00157)
    assert PUBLISHED[(10000, 20, math.inf, "NoisySGD")] == (0.0409, 0.00362, 0.482, 0.0453, 3120.0, 27.6)
    assert (10000, 5, math.inf, "NoisySGD") not in PUBLISHED
    assert {k[3] for k in PUBLISHED} == {"OFW", "NoisySFW", "NoisySGD"}
    assert GRIDS[("OFW", 1.5)] == (0.4, 0.6, 1.0) and len(GRIDS[("NoisySFW", 1.5)]) == 6


def test_quick_config_is_small():
    assert QUICK.horizons == (1000,) and QUICK.dims == (5, 20) and QUICK.seeds == 3 and QUICK.sgd_max_horizon == 0
    assert Table51Config().horizons == (1000, 2000, 5000, 10000) and Table51Config().seeds == 10


@pytest.mark.parametrize("changes, match", [
    ({"ps": (2.0,)}, "ps must be"),
    ({"horizons": (2,)}, "horizons must be an integer >= 4"),
    ({"horizons": ()}, "horizons must not be empty"),
    ({"seeds": 0}, r"seeds must be an integer in \[1, 100000\]"),
    ({"seeds": 10**20}, r"seeds must be an integer in \[1, 100000\]"),
    ({"epsilon": 0.0}, "epsilon must be"),
    ({"calibration": "loose"}, "calibration must be one of"),
    ({"name": "a/b"}, "name must be"),
    ({"theta": "three ones"}, "theta must be one of"),
])
def test_config_validation(changes, match):
    with pytest.raises(ValueError, match=match):
        Table51Config(**changes)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    with pytest.warns(PublishedSettingWarning):  # the published-setting learners warn when constructed
        result = run_table_5_1(SMALL, out=out, progress=False)
    return result


def test_rows_and_labels(small_run):
    res = small_run.results
    expected = sum(len(GRIDS[(a, p)]) for p in (1.5, math.inf) for a in SMALL.algorithms(32, p)) * 2 * 2
    assert len(res) == expected
    published = res[res["column"] == PUBLISHED_COLUMN]
    correct = res[res["column"] == "correct (tight)"]
    assert len(published) == len(correct) == expected // 2
    assert (published["guarantee"] == "none").all() and np.isinf(published["epsilon"]).all()
    assert (published["label"] == PUBLISHED_CODE_SETTING).all()
    assert (correct["guarantee"] == "DP").all()
    assert (correct["epsilon"] <= 1.0 + 1e-6).all() and (correct["epsilon"] > 0.99).all()
    assert set(res["algo"]) == {"OFW", "NoisySFW", "NoisySGD"}
    assert np.isfinite(res[["risk", "subopt", "seconds"]].to_numpy()).all()


def test_table_has_three_columns_per_metric(small_run):
    table = small_run.table
    assert len(table) == 4  # (p=1.5: NoisySFW, OFW), (p=inf: NoisySGD, OFW)
    for metric in ("risk", "subopt", "time"):
        for tag in ("published", "rerun_NOT_PRIVATE", "correct"):
            assert f"{metric}_{tag}" in table
    assert (table["risk_published"] == "not published").all()  # T = 32 is not in the paper's grid
    md = (small_run.run_dir / "table.md").read_text()
    assert "NOT PRIVATE" in md and "docs/derivations.md#table-51" in md and md.count("\n| 32 |") == 4
    assert "spec/" not in md
    assert (table["reproduced"] == "not published").all()


def test_run_directory(small_run):
    run_dir = small_run.run_dir
    for name in ("results.csv", "table.csv", "table.md", "manifest.json"):
        assert (run_dir / name).is_file()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["kind"] == "reproduce table-5.1" and manifest["status"] == "complete"
    assert any("NOT" in w for w in manifest["warnings"]) and "versions" in manifest
    back = pd.read_csv(run_dir / "results.csv")
    assert len(back) == len(small_run.results)


def test_best_scale_by_mean_risk():
    rows = []
    for scale, risks in ((0.4, [0.3, 0.1]), (1.0, [0.15, 0.16])):  # means 0.2 and 0.155
        for seed, risk in enumerate(risks):
            for column in ("published", "correct"):
                rows.append(dict(T=1000, d=5, p=1.5, algo="OFW", column=column, seed=seed, lr_scale=scale,
                                 risk=risk, subopt=risk, seconds=1.0))
    table = summarise(pd.DataFrame(rows))
    assert table.loc[0, "scale_correct"] == 1.0 and table.loc[0, "risk_correct"] == "0.155±0.00707"
    assert table.loc[0, "risk_published"] == "0.00536±0.00155"
    assert "| 1000 | 5 | 1.5 | OFW |" in to_markdown(table, Table51Config())


def test_deterministic(tmp_path):
    config = Table51Config(horizons=(16,), dims=(3,), ps=(1.5,), seeds=2, name="t51-par")
    with pytest.warns(PublishedSettingWarning):
        a = run_table_5_1(config, out=None, progress=False).results
    with pytest.warns(PublishedSettingWarning):
        b = run_table_5_1(config, out=None, progress=False).results
    pd.testing.assert_frame_equal(a.drop(columns="seconds"), b.drop(columns="seconds"))


@pytest.mark.slow
def test_joblib_parallel_gives_the_same_numbers():
    config = Table51Config(horizons=(16,), dims=(3,), ps=(1.5,), seeds=2, name="t51-par")
    with pytest.warns(PublishedSettingWarning):
        a = run_table_5_1(config, out=None, progress=False).results
    with pytest.warns(PublishedSettingWarning):
        b = run_table_5_1(dataclasses.replace(config, n_jobs=2), out=None, progress=False).results
    pd.testing.assert_frame_equal(a.drop(columns="seconds"), b.drop(columns="seconds"))


def test_cli(tmp_path, capsys):
    with pytest.warns(PublishedSettingWarning):
        code = reproduce_main(["table-5.1", "--horizons", "16", "--dims", "3", "--ps", "1.5", "--seeds", "1",
                               "--out", str(tmp_path), "--no-progress"])
    assert code == 0
    assert (tmp_path / "table-5.1" / "table.md").is_file()
    assert "NOT PRIVATE" in capsys.readouterr().out
    assert main(["--ps", "3", "--out", str(tmp_path)]) == 2
    assert reproduce_main(["figure-9"]) == 2


def test_refuses_a_foreign_run_directory(tmp_path):
    (tmp_path / "t51-small").mkdir()
    (tmp_path / "t51-small" / "something.txt").write_text("not a reproduction")
    with pytest.raises(ValueError, match="not a table-5.1 reproduction"):
        run_table_5_1(SMALL, out=tmp_path, progress=False)


# -- issue 12 item 1: the instance the published numbers imply, and whether each cell is reproduced ---------------


def test_zero_vector_risk_implied_by_the_published_rows():
    # Risk(0) = Risk* + (Risk - Risk*) / SubOpt with Risk* = 0.05^2
    assert implied_zero_risk((1000, 20, 1.5, "NoisySFW")) == pytest.approx(0.0025 + (0.0414 - 0.0025) / 1.05)
    # the candidates: at d = 20, p = 1.5 all ones give E[(x^T theta*)^2] + 0.0025 ~ 0.041, five ones ~ 0.063
    assert candidate_zero_risk(20, 1.5, 20) == pytest.approx(0.0407, rel=0.03)
    assert candidate_zero_risk(20, 1.5, 5) == pytest.approx(0.0634, rel=0.03)


def test_instance_derived_per_dimension_is_all_ones_at_d_10_and_20():
    instances = derive_instances((5, 10, 20, 7))
    assert instances[5].sparsity == 5 and instances[5].rows == 15
    for d in (10, 20):
        inst = instances[d]
        assert inst.name == "all ones" and inst.sparsity == d and inst.rows == 16
        assert inst.votes == {"five ones": 2, "all ones": 14}
        assert {(k[0], k[3]) for k in inst.dissent} == {(1000, "NoisySGD"), (2000, "NoisySGD")}
        assert "all ones" in inst.describe() and "dissenting rows" in inst.describe()
    assert instances[10].within_5pct + instances[20].within_5pct == 27  # issue 12: 27 of 32 within 5 %
    assert instances[7].rows == 0 and instances[7].sparsity == 5 and "no published rows" in instances[7].describe()
    config = Table51Config(dims=(20,), theta="five ones")
    assert config.instances()[20].sparsity == 5 and Table51Config(dims=(20,)).instances()[20].sparsity == 20


def test_ratio_published_over_rerun_with_interval():
    rows = []
    for seed, risk in enumerate([0.0030, 0.0040, 0.0035, 0.0037]):
        for column in ("published", "correct"):
            rows.append(dict(T=1000, d=5, p=1.5, algo="OFW", column=column, seed=seed, lr_scale=0.4, risk=risk,
                             subopt=risk, seconds=1.0))
    row = summarise(pd.DataFrame(rows)).iloc[0]
    assert row["ratio_published_rerun"] == pytest.approx(0.00536 / 0.00355)
    assert row["ratio_low"] > 1.0 and row["reproduced"] == "not reproduced: published higher"
    interval = ratio_to_published(0.00536, 0.00155, 10, [0.0030, 0.0040, 0.0035, 0.0037])
    assert (interval.low, interval.high) == (row["ratio_low"], row["ratio_high"])
    consistent = ratio_to_published(0.00536, 0.00155, 10, [0.004, 0.007, 0.005])
    assert consistent.low < 1.0 < consistent.high


def test_ratio_to_published_interval_covers_at_its_level():
    """The interval of published/ours covers the true ratio 1 in about 95 % of simulated reruns."""
    rng = np.random.default_rng(7)
    hits = 0
    for k in range(300):
        published = rng.normal(1.0, 0.2, size=10)
        ours = rng.normal(1.0, 0.2, size=10)
        hits += ratio_to_published(published.mean(), published.std(ddof=1), 10, ours, n_boot=2000, seed=k).excludes(
            1.0) is False
    assert 0.88 <= hits / 300 <= 0.99


def test_planned_work_counts_every_learner_step():
    """T steps per streaming run and NoisySGD's n^2, over both columns, every scale of the grid, d and seed."""
    from dpbandit.experiment.reproduce.table_5_1 import planned_work

    small = Table51Config(horizons=(100,), dims=(5,), ps=(math.inf,), seeds=1, sgd_max_horizon=0)
    assert planned_work(small) == (2 * len(GRIDS[("OFW", math.inf)]) * 100, None)  # below CALIBRATE_ROUNDS: no estimate
    sgd = dataclasses.replace(small, sgd_max_horizon=1000)
    steps, seconds = planned_work(sgd)
    assert steps == 2 * len(GRIDS[("NoisySGD", math.inf)]) * 100**2 + 2 * len(GRIDS[("OFW", math.inf)]) * 100
    assert 0 < seconds < 600


def test_a_grid_of_more_than_a_week_is_refused_before_any_work(tmp_path, capsys):
    assert main(["--horizons", "1000000", "--seeds", "10000", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "learner steps, about" in err and "--allow-long" in err, err
    assert list(tmp_path.iterdir()) == []
