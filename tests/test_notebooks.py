"""Every teaching notebook runs top to bottom (outputs are not stored in the repository)."""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

#: Seconds a single cell may run before it counts as hung (>= 10x the slowest cell's normal duration).
CELL_HANG_GUARD = 900

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"), "store notebooks without outputs"
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # no oversubscription under load
        monkeypatch.setenv(var, "1")
    # The notebooks bound their work (small T and seeds: the slowest cell, notebook 04's frontier, is ~35 s of CPU
    # on an idle 2-core machine); the timeout is only a hang guard, far above any cell's normal duration.
    client = nbclient.NotebookClient(nb, timeout=CELL_HANG_GUARD, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
