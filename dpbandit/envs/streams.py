"""Streaming stochastic-convex-optimisation problems: regression streams for online learners.

The default is the linear-regression stream of ``spec/han-frank-wolfe.md`` §8.1 (the setup of the paper's
Table 5.1):

* contexts x ~ N(0, context_std^2 I_d), each rescaled to ||x||_q = 1 exactly (q = p/(p-1), the dual exponent);
* theta* with ||theta*||_p = theta_norm (= 1): ``theta="paper"`` draws i.i.d. N(0, 0.05^2) entries and
  normalises (the paper's text), ``theta="code"`` is (1, ..., 1, 0, ..., 0)/||.||_p with ``sparsity`` ones (the
  authors' code, ``spec/han-frank-wolfe.md`` §9.4);
* responses y = x^T theta* + N(0, noise_std^2) (``model="linear"``), or labels y ~ Bernoulli(sigmoid(x^T theta*))
  in {0, 1} (``model="logistic"``, the optional logistic stream; ``noise_std`` is then unused);
* a held-out test set of ``test_size`` points from the same law (the code's 1000, not the paper's 10 000).

Evaluation, exactly as §8.1 defines it: ``risk(theta)`` is the test-set mean loss, (x^T theta - y)^2 for the
linear stream (it includes the noise floor noise_std^2) and log(1 + e^z) - y z for the logistic one;
``subopt(theta) = (risk(theta) - risk(theta*)) / (risk(0) - risk(theta*))`` (> 1 means worse than the zero vector,
where every learner starts). The feasible set of the experiments is the l_p ball of radius ``2 ||theta*||_p``
(:attr:`RegressionStream.radius`).

Randomness: theta* from the seed's ``"instance"`` stream, features from ``"contexts"``, response noise from
``"reward_noise"`` (:func:`dpbandit.seeding.stream`), so a learner's own noise (``"privacy"``) never changes the
data. Within each stream the test set is drawn first and the training rows after it, row by row, so the first t
training samples do not depend on ``horizon``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from dpbandit.geometry import dual_exponent, lp_norm
from dpbandit.seeding import stream
from dpbandit.validation import check_choice, check_int, check_memory, check_real

__all__ = ["MODELS", "THETA_LAWS", "RegressionStream", "StreamData"]

#: Response models of a stream.
MODELS: tuple[str, ...] = ("linear", "logistic")
#: Laws of theta*: the paper's Gaussian draw or the authors' code's sparse all-equal vector.
THETA_LAWS: tuple[str, ...] = ("paper", "code")


@dataclass(frozen=True)
class StreamData:
    """One drawn regression stream.

    Attributes
    ----------
    x: (T, d) training features, ||x_t||_q = 1.      y: (T,) training responses.
    theta_star: (d,) the true parameter.             x_test: (n, d), y_test: (n,) the test set.
    model: "linear" or "logistic".                   p, q: the primal and dual exponents.
    radius: the l_p radius of the experiments' feasible set (2 ||theta*||_p).
    """

    x: np.ndarray
    y: np.ndarray
    theta_star: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    model: str
    p: float
    q: float
    radius: float
    risk_star: float = field(init=False)
    risk_zero: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "risk_star", float(self.risk(self.theta_star)))
        object.__setattr__(self, "risk_zero", float(self.risk(np.zeros_like(self.theta_star))))

    @property
    def dim(self) -> int:
        return self.x.shape[1]

    @property
    def horizon(self) -> int:
        return self.x.shape[0]

    @property
    def loss(self) -> str:
        """Name of the per-sample loss (``dpbandit.optim.make_loss`` accepts it): "squared" or "logistic"."""
        return "squared" if self.model == "linear" else "logistic"

    @property
    def feature_bound(self) -> float:
        """The bound ||x||_q <= 1 a learner may calibrate to (it holds with equality)."""
        return 1.0

    def risk(self, theta: np.ndarray) -> np.ndarray | float:
        """Test-set mean loss of ``theta`` (d,) -> float, or of a stack (k, d) -> (k,)."""
        theta = np.asarray(theta, dtype=float)
        if theta.shape[-1:] != (self.dim,) or theta.ndim > 2:
            raise ValueError(f"theta must have shape ({self.dim},) or (k, {self.dim}), got {theta.shape}")
        z = theta @ self.x_test.T  # (n,) or (k, n)
        if self.model == "linear":
            losses = (z - self.y_test) ** 2
        else:
            losses = np.logaddexp(0.0, z) - self.y_test * z
        out = losses.mean(axis=-1)
        return float(out) if theta.ndim == 1 else out

    def subopt(self, theta: np.ndarray) -> np.ndarray | float:
        """(risk(theta) - risk(theta*)) / (risk(0) - risk(theta*)), for (d,) -> float or (k, d) -> (k,)."""
        return (self.risk(theta) - self.risk_star) / (self.risk_zero - self.risk_star)


@dataclass(frozen=True)
class RegressionStream:
    """A streaming regression problem (``spec/han-frank-wolfe.md`` §8.1 with the defaults).

    Parameters
    ----------
    dim: d >= 1.  horizon: T >= 1 training samples.
    model: "linear" (squared loss) or "logistic".
    p: primal exponent in [1, inf]: ||theta*||_p = theta_norm, features ||x||_q = 1 with q = p/(p-1).
    noise_std: standard deviation of the linear model's response noise (>= 0).
    test_size: number of test points (>= 1).
    theta: "paper" (Gaussian draw, normalised) or "code" (``sparsity`` equal entries, normalised).
    sparsity: number of non-zero entries of the "code" theta* (capped at ``dim``).
    context_std: standard deviation of the raw Gaussian features before rescaling (irrelevant after it; kept for
        fidelity with the code's ``x_std``).
    theta_norm: ||theta*||_p (> 0); the experiments' feasible set has radius 2 theta_norm.
    """

    dim: int
    horizon: int
    model: str = "linear"
    p: float = 1.5
    noise_std: float = 0.05
    test_size: int = 1000
    theta: str = "paper"
    sparsity: int = 5
    context_std: float = 0.05
    theta_norm: float = 1.0

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "dim", check_int("dim", self.dim, low=1))
        set_(self, "horizon", check_int("horizon", self.horizon, low=1))
        check_choice("model", self.model, MODELS)
        set_(self, "p", check_real("p", self.p, low=1.0, allow_inf=True))
        set_(self, "noise_std", check_real("noise_std", self.noise_std, low=0.0))
        set_(self, "test_size", check_int("test_size", self.test_size, low=1))
        check_choice("theta", self.theta, THETA_LAWS)
        set_(self, "sparsity", check_int("sparsity", self.sparsity, low=1))
        set_(self, "context_std", check_real("context_std", self.context_std, low=0.0, low_inclusive=False))
        set_(self, "theta_norm", check_real("theta_norm", self.theta_norm, low=0.0, low_inclusive=False))
        check_memory(f"regression stream (dim={self.dim}, horizon={self.horizon}, test_size={self.test_size})",
                     8 * (2 * (self.horizon + self.test_size) * self.dim + 4 * self.dim), "reduce dim or horizon")

    @property
    def q(self) -> float:
        """Dual exponent p/(p-1) (gradients are measured in ||.||_q)."""
        return dual_exponent(self.p)

    @property
    def radius(self) -> float:
        """Radius of the l_p feasible set of the experiments: 2 ||theta*||_p (``spec/han-frank-wolfe.md`` §8.1)."""
        return 2.0 * self.theta_norm

    def draw_theta(self, rng: np.random.Generator) -> np.ndarray:
        """theta* (d,) with ||theta*||_p = theta_norm, from the "instance" stream ``rng``."""
        if self.theta == "code":
            theta = np.zeros(self.dim)
            theta[: min(self.sparsity, self.dim)] = 1.0
        else:
            theta = 0.05 * rng.standard_normal(self.dim)
        return self.theta_norm * theta / lp_norm(theta, self.p)

    def _features(self, rng: np.random.Generator, n: int) -> np.ndarray:
        raw = self.context_std * rng.standard_normal((n, self.dim))
        return raw / lp_norm(raw, self.q)[:, None]

    def _responses(self, rng: np.random.Generator, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        z = x @ theta
        if self.model == "linear":
            return z + self.noise_std * rng.standard_normal(len(z))
        return (rng.random(len(z)) < expit(z)).astype(float)

    def draw(self, seed: int) -> StreamData:
        """The stream of job ``seed``: theta* ("instance"), features ("contexts"), response noise ("reward_noise")."""
        theta = self.draw_theta(stream(seed, "instance"))
        ctx, noise = stream(seed, "contexts"), stream(seed, "reward_noise")
        x_test = self._features(ctx, self.test_size)
        x = self._features(ctx, self.horizon)
        y_test = self._responses(noise, x_test, theta)
        y = self._responses(noise, x, theta)
        return StreamData(x=x, y=y, theta_star=theta, x_test=x_test, y_test=y_test, model=self.model, p=self.p,
                          q=self.q, radius=self.radius)
