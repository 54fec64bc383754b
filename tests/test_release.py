"""Release files: license, citation, changelog, one version, typing marker, lint config, the site builder."""

import importlib.util
import sys
from pathlib import Path

import pytest

import dpbandit
from dpbandit.experiment.cli import main

ROOT = Path(__file__).resolve().parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_license_is_mit_as_the_metadata_says():
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    meta = _pyproject()["project"]
    assert meta["license"] == {"text": "MIT"}
    assert "License :: OSI Approved :: MIT License" in meta["classifiers"]


def test_version_has_one_source(capsys):
    project = _pyproject()
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "dpbandit.__version__"}
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"dpbandit {dpbandit.__version__}"
    yaml = pytest.importorskip("yaml")
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert str(citation["version"]) == dpbandit.__version__  # CITATION.cff must follow a version bump
    assert (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").startswith("# Changelog")


def test_citation_lists_the_project_and_the_implemented_papers():
    yaml = pytest.importorskip("yaml")
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software" and citation["license"] == "MIT"
    titles = " | ".join(ref["title"] for ref in citation["references"])
    for words in ("High Dimensional Contextual Bandits", "Differentially Private Online Learning",
                  "Privacy Expiration", "User-Specified Local Differential Privacy",
                  "Differentially Private Contextual Linear Bandits", "Unbiased Offline Evaluation"):
        assert words in titles, words
    for ref in citation["references"]:
        assert ref["authors"] and all("family-names" in a for a in ref["authors"])


def test_typed_package_and_lint_configuration():
    assert (ROOT / "dpbandit" / "py.typed").is_file()
    project = _pyproject()
    assert project["tool"]["setuptools"]["package-data"]["dpbandit"] == ["py.typed"]
    assert set(project["tool"]["ruff"]["lint"]["select"]) >= {"E4", "E7", "E9", "F"}
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "ruff check ." in ci and "docs/build_site.py" in ci
    assert {"pdoc", "nbformat", "nbclient"} <= {d.split(">")[0] for d in project["project"]["optional-dependencies"]["docs"]}


def test_site_renders_an_executed_notebook():
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("pygments")
    pytest.importorskip("markdown2")
    spec = importlib.util.spec_from_file_location("build_site", ROOT / "docs" / "build_site.py")
    site = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(site)
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title\n\nSome *text*."),
        nbformat.v4.new_code_cell("print(1 < 2)", outputs=[nbformat.v4.new_output("stream", text="True\n")]),
        nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output(
            "execute_result", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})]),
    ])
    html = site.render_notebook(nb)
    assert "<h1" in html and "<em>text</em>" in html and "<pre class='out'>True\n</pre>" in html
    assert "data:image/png;base64,iVBORw0KGgo=" in html and "&lt;Figure&gt;" not in html
    nb.cells.append(nbformat.v4.new_code_cell("1/0", outputs=[nbformat.v4.new_output(
        "error", ename="ZeroDivisionError", evalue="division by zero", traceback=[])]))
    with pytest.raises(RuntimeError, match="notebook cell failed: ZeroDivisionError"):
        site.render_notebook(nb)
