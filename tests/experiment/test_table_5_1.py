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
    assert QUICK.horizons == (1000,) and QUICK.dims == (5,) and QUICK.seeds == 3 and QUICK.sgd_max_horizon == 0
    assert Table51Config().horizons == (1000, 2000, 5000, 10000) and Table51Config().seeds == 10


@pytest.mark.parametrize("changes, match", [
    ({"ps": (2.0,)}, "ps must be"),
    ({"horizons": (2,)}, "horizons must be an integer >= 4"),
    ({"horizons": ()}, "horizons must not be empty"),
    ({"seeds": 0}, "seeds must be an integer >= 1"),
    ({"epsilon": 0.0}, "epsilon must be"),
    ({"calibration": "loose"}, "calibration must be one of"),
    ({"name": "a/b"}, "name must be"),
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
    assert "NOT PRIVATE" in md and "spec/han-frank-wolfe.md §8.1" in md and md.count("\n| 32 |") == 4


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
