"""The shared l_p helpers (dpbandit.geometry): known answers, shapes, validation, and the import rule that makes
them shareable (a leaf module; the environments never import dpbandit.optim)."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

import dpbandit
from dpbandit import geometry
from dpbandit.envs import streams
from dpbandit.geometry import check_p, dual_exponent, lp_norm
from dpbandit.optim import oracles

PACKAGE = Path(dpbandit.__file__).parent


def test_dual_exponent_known_answers():
    assert dual_exponent(1.5) == pytest.approx(3.0)
    assert dual_exponent(3.0) == pytest.approx(1.5)
    assert dual_exponent(2.0) == 2.0
    assert dual_exponent(1.0) == math.inf
    assert dual_exponent(math.inf) == 1.0


def test_lp_norm_known_answers_and_shapes():
    x = np.array([[3.0, -4.0, 0.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(lp_norm(x, 2.0), [5.0, 0.0])
    np.testing.assert_allclose(lp_norm(x, 1.0), [7.0, 0.0])
    np.testing.assert_allclose(lp_norm(x, math.inf), [4.0, 0.0])
    np.testing.assert_allclose(lp_norm(x, 3.0), [(27 + 64) ** (1 / 3), 0.0])
    assert lp_norm(x, 1.5).shape == (2,)
    assert lp_norm(np.zeros((4, 2, 3)), 3.0).shape == (4, 2)
    one = lp_norm(np.array([3.0, -4.0]), 2.0)
    assert type(one) is float and one == 5.0


def test_lp_norm_does_not_overflow_or_underflow():
    np.testing.assert_allclose(lp_norm(np.array([1e200, 1e200]), 3.0), 1e200 * 2 ** (1 / 3), rtol=1e-14)
    np.testing.assert_allclose(lp_norm(np.array([1e-200, 1e-200]), 3.0), 1e-200 * 2 ** (1 / 3), rtol=1e-14)
    np.testing.assert_allclose(lp_norm(np.array([2.0, 1.0]), 400.0), 2.0, rtol=1e-14)


@pytest.mark.parametrize("p", [1.0, 1.5, 2.0, 3.0, math.inf])
def test_holder_duality(p):
    """||g||_q = max over the unit l_p sphere of <g, v>, attained by the LMO direction (spec/han-frank-wolfe.md §1)."""
    g = np.random.default_rng(3).standard_normal((50, 6))
    v = oracles.lp_ball_lmo(g, p, 1.0)
    np.testing.assert_allclose(-np.sum(g * v, axis=1), lp_norm(g, dual_exponent(p)), rtol=1e-12)


@pytest.mark.parametrize("bad, exc, text", [(0.5, ValueError, "p must be a number >= 1"),
                                            (math.nan, ValueError, "p must be a number >= 1, got nan"),
                                            ("2", TypeError, "p must be a real number"),
                                            (True, TypeError, "p must be a real number")])
def test_bad_exponents_are_refused(bad, exc, text):
    for call in (lambda: check_p(bad), lambda: dual_exponent(bad), lambda: lp_norm(np.ones(2), bad)):
        with pytest.raises(exc, match=text):
            call()
    with pytest.raises(ValueError, match="q must be a number >= 1"):
        check_p(0.0, "q")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module)
    return names


def test_geometry_is_a_leaf_and_the_only_implementation():
    assert _imports(PACKAGE / "geometry.py") <= {"__future__", "math", "numpy", "dpbandit.validation"}
    for module in (PACKAGE / "envs").glob("*.py"):  # envs must not import the learners' layer
        assert not any(name.startswith("dpbandit.optim") for name in _imports(module)), module.name
    # the re-exports are the same objects, not copies
    assert oracles.lp_norm is geometry.lp_norm and oracles.dual_exponent is geometry.dual_exponent
    assert streams.lp_norm is geometry.lp_norm and streams.dual_exponent is geometry.dual_exponent
    defining = [path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
                if any(isinstance(node, ast.FunctionDef) and node.name in ("lp_norm", "dual_exponent")
                       for node in ast.walk(ast.parse(path.read_text())))]
    assert defining == ["geometry.py"]
