"""FLIPHAT: the episodic private sparse bandit of Chakraborty, Roy, Basu (2024, arXiv:2405.14038)
(``spec/episodic-private-agents.md`` §1-2; user guide ``docs/episodic-agents.md``).

A :class:`~dpbandit.agents.private.PrivateAgent` on the episodic skeleton (:mod:`dpbandit.agents.episodic`; its release,
scores and radius C in :mod:`dpbandit.agents.fliphat_release`):

* **Curator** (:class:`FLIPHATCurator`): doubling episodes with forgetting. At the end of each episode it fits N-IHT
  (:func:`~dpbandit.optim.niht.niht`: gradient step, private peeling to s coordinates, l1 projection on radius C)
  on that episode's users only, publishes the (read-only) estimate and drops the episode.
  - ``structure="shared"`` (the paper's model: one theta, K per-arm feature vectors): one fit on the played rows
    ``x_{t, a_t}``; the normaliser is the episode length n (public: the schedule is fixed).
  - ``structure="disjoint"`` (one theta_a per arm): one fit per arm on the users who played it. The per-arm counts
    are data: ``n_tilde_a = n_a + N(0, sigma_c^2)`` is released first and used as the public normaliser; an arm with
    ``n_tilde_a < min_count`` keeps ``theta_a = 0``.
* **Action rule** (static): greedy ``argmax_a x_a^T theta_a`` on the latest release (ties uniformly at random with
  the exploration stream; before the first release every score is 0, i.e. uniform play). No exploration: the
  noise and the forgetting supply it.

**Privacy** (replace-one neighbours; privacy unit: one user = their (K, d) contexts and reward; rewards clipped by
:func:`~dpbandit.agents.private.reward_clip_range`, contexts ``||x||_inf <= x_max`` checked). Let rho be the largest
zCDP parameter whose CKS conversion gives (epsilon, delta) (:class:`~dpbandit.agents.episodic.EpisodicBudget`).

* One fit (:mod:`dpbandit.optim.niht`): M peelings of a vector of l_inf sensitivity
  ``Delta = (eta/n_tilde) 2 x_max G`` (replace one user; ``Delta/2`` for adding or removing one), each at scale
  ``b = Delta sqrt(c M s/rho)`` (c = 2.5 Laplace peeling, 1 Gumbel top-s + Gaussian values;
  :mod:`dpbandit.privacy.peeling`): rho-zCDP (replace), rho/4 (add/remove).
* Shared structure: a neighbour replaces one played row and reward in one fit: rho.
* Disjoint structure, counts at ``rho_c = rho/2`` (``sigma_c = 1/sqrt(rho_c)``), fits at rho. Worst case over the
  neighbour types: (a) the user stays on the same arm: counts unchanged (0), one fit replace-one (rho): **rho**;
  (b) the user moves from arm a to arm b (their arm is a function of their own context, so a neighbour can change
  it): the count vector changes by (-1, +1), l2 norm sqrt(2): ``2/(2 sigma_c^2) = rho_c``; fit a loses and fit b
  gains one user: ``rho/4 + rho/4``; total ``rho/2 + rho_c`` = **rho**; (c) every other arm: unchanged. So
  ``max(rho, rho/2 + rho_c) = rho`` — the counts cost nothing in the worst case.
* Episodes: each user enters one release (parallel composition); later releases use earlier ones only as public
  inputs. The release stream is rho-zCDP, i.e. (epsilon, delta)-DP, and greedy actions on it are
  (epsilon, delta)-JDP (billboard lemma). ``epsilon = inf`` switches all noise off (guarantee "none") and the
  curator keeps every user: each release is N-IHT on all users so far, warm-started at the previous release, on a
  dense public schedule (:mod:`dpbandit.agents.fliphat_noise_off`; a private run forgets, as its proof needs).

``published_setting_not_private=True`` builds the FLIPHAT code's calibration (``SparseBandit/fliphat_simulation_
utils.py``; defects D-F1..D-F3 of the spec): peeling scale ``lambda = eta B`` (4 x_max too small), nominal
``x_max = sqrt(2 ln d)`` with unclipped contexts, per-episode reward clip ``x_max C + sqrt(2 ln(1 + n))``, C passed
by the caller (the code uses the true ``||beta*||_1``). It warns and reports guarantee "none": it is a comparison,
not a private agent.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from dpbandit.agents.baselines import argmax_random_tie
from dpbandit.agents.episode_rows import EpisodeRows, check_disk
from dpbandit.agents.episode_sums import CHUNK_ROWS, EpisodeSums
from dpbandit.agents.episodic import EpisodeSchedule, EpisodicBudget, EpisodicCurator
from dpbandit.agents.episodic_blocks import play_episodic_block
from dpbandit.agents.fliphat_release import FLIPHATRelease, block_scores, default_radius, greedy_scores
from dpbandit.agents.fliphat_noise_off import (KeptUsers, KeptUsersCurator, kept_users_note, noise_off_schedule,
                                               resolve_forget)
from dpbandit.agents.private import PrivateAgent, RewardClip, reward_clip_range
from dpbandit.envs.blocks import RoundBlock
from dpbandit.envs.constants import BanditConstants
from dpbandit.optim.gg_calibration import PublishedSettingWarning
from dpbandit.optim.niht import LINKS, NIHTConfig, mean_at_zero, niht_gradient, published_peeling_scale
from dpbandit.privacy.ledger import PrivacyLedger
from dpbandit.privacy.peeling import SELECTIONS, peeling_scale
from dpbandit.validation import check_choice, check_int, check_real

__all__ = ["FLIPHAT", "FLIPHATCurator", "FLIPHATRelease", "default_radius", "greedy_scores"]


class FLIPHATCurator(KeptUsersCurator, EpisodicCurator):
    """FLIPHAT's data-touching half: one N-IHT fit (shared) or K fits with noisy counts (disjoint) per episode.

    What it keeps of an episode (``docs/episodic-agents.md`` §2.11): with M = 1 iteration (the default), either link,
    the fit from theta^0 = 0 needs only the summed gradient at 0, ``g_m = sum x (mu(0) - y)`` per model, and the counts;
    with M > 1 and the identity link, the sums ``G_m = sum x x^T`` and ``b_m = sum x y`` (the gradient is
    ``G_m theta - b_m``). Both are absorbed chunk by chunk (:mod:`dpbandit.agents.episode_sums`: memory O(K d) or
    O(K d^2), plus :data:`~dpbandit.agents.episode_sums.CHUNK_ROWS` rows). The logistic link with M > 1 needs the
    episode's rows for every gradient pass: each chunk goes to temporary files and every pass streams them back
    (:mod:`dpbandit.agents.episode_rows`: memory O(d) chunks; disk about 8 (d + 1) bytes per user of the longest
    episode, checked against the free space before any work by :class:`FLIPHAT`), the same gradient as from the rows
    in memory.
    """

    drops_release = False  # the noise-off fit is warm-started at the previous release

    def __init__(self, agent: FLIPHAT, rng: np.random.Generator):
        self._agent, self._rng = agent, rng
        c = agent.constants
        self._n_models = agent.n_arms if agent.structure == "disjoint" else 1
        self._sums = self._rows = self._kept = None
        self._with_gram = agent.iterations > 1
        if not agent.forget:  # noise off: every user so far (fliphat_noise_off)
            self._kept = KeptUsers(self._n_models, agent.dim, agent.link)
        elif agent.keeps_sums:
            self._sums = EpisodeSums(self._n_models, agent.dim, gram=self._with_gram)
            self._mu0 = mean_at_zero(agent.link)
        else:
            self._rows = EpisodeRows(self._n_models, agent.dim)
        super().__init__(agent.schedule, agent.budget, c.n_arms, c.dim, c.context_norm, c.context_bound,
                         agent.reward_clip, chunk=CHUNK_ROWS)

    def _initial_release(self) -> FLIPHATRelease:
        a = self._agent
        theta = np.zeros((a.n_arms, a.dim) if a.structure == "disjoint" else a.dim)
        theta.setflags(write=False)
        counts = None
        if a.structure == "disjoint":
            counts = np.zeros(a.n_arms)
            counts.setflags(write=False)
        return FLIPHATRelease(theta, counts, 0)

    def _published_clip(self) -> float:
        """The FLIPHAT code's per-episode reward clip ``x_max C + sqrt(2 ln(1 + n))`` (n: the episode's length)."""
        a = self._agent
        return a.x_max * a.radius + math.sqrt(2.0 * math.log1p(self.schedule.length(self.episode)))

    def _fit_rewards(self, y: np.ndarray) -> np.ndarray:
        """The rewards the fit sees: with the noise off, clipped to N-IHT's range; in the published setting, to the
        code's per-episode clip; otherwise as the curator clipped them."""
        a = self._agent
        if a.budget.noise_off:
            return np.clip(y, a.niht_config.reward_low, a.niht_config.reward_high)
        if a.published_setting_not_private:
            R = self._published_clip()
            return np.clip(y, -R, R)
        return y

    def _fit(self, gradient, n_tilde: float) -> np.ndarray:
        a = self._agent
        if a.budget.noise_off:
            return niht_gradient(gradient, a.dim, n_tilde, a.niht_config, math.inf, self._rng).theta
        if a.published_setting_not_private:  # the code's scale, as a multiple of the correct one (same Delta form)
            R = self._published_clip()
            config = NIHTConfig(a.sparsity, a.step, a.iterations, a.radius, a.x_max, -R, R, a.link, "laplace")
            correct = peeling_scale(config.sensitivity(n_tilde), min(a.sparsity, a.dim), a.rho_fit, "laplace",
                                    repeats=a.iterations)
            published = published_peeling_scale(a.step, n_tilde, a.x_max * a.radius + R, a.sparsity, a.iterations,
                                                a.epsilon, a.delta)
            return niht_gradient(gradient, a.dim, n_tilde, config, a.rho_fit, self._rng,
                                 scale_factor=published / correct).theta
        return niht_gradient(gradient, a.dim, n_tilde, a.niht_config, a.rho_fit, self._rng).theta

    def _absorb(self, X: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        y, models = self._fit_rewards(rewards), arms if self._n_models > 1 else None
        if self._kept is not None:
            self._kept.absorb(X, models, y)
        elif self._rows is not None:
            self._rows.append(X, models, y)
        else:
            self._sums.absorb(X, models, y if self._with_gram else self._mu0 - y)

    def _gradients(self, X: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> tuple[list, np.ndarray]:
        """Per model, the summed gradient as a function of theta and the true count of users (the episode's last
        rows are absorbed first)."""
        self._absorb(X, arms, rewards)
        if self._rows is not None:  # streamed from disk at every evaluation, until the episode is forgotten
            link = self._agent.link
            return [self._rows.gradient(m, link) for m in range(self._n_models)], self._rows.counts.copy()
        gram, moment, counts = self._sums.take()
        if gram is None:  # M = 1: the gradient at theta^0 = 0 is all the fit evaluates
            return [lambda theta, g=g: g for g in moment], counts
        return [lambda theta, G=G, b=b: G @ theta - b for G, b in zip(gram, moment)], counts

    def _publish(self, X: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> FLIPHATRelease:
        if self._kept is not None:
            self._absorb(X, arms, rewards)
            return self._kept_release()
        a = self._agent
        gradients, true_counts = self._gradients(X, arms, rewards)
        counts = None
        if a.structure == "shared":
            theta = np.array(self._fit(gradients[0], float(true_counts[0])))
        else:
            counts = true_counts.astype(float)
            if not a.budget.noise_off:
                counts = counts + a.count_sigma * self._rng.standard_normal(a.n_arms)
            theta = np.zeros((a.n_arms, a.dim))
            for arm in range(a.n_arms):
                if counts[arm] >= a.min_count:
                    theta[arm] = self._fit(gradients[arm], float(counts[arm]))
            counts.setflags(write=False)
        if self._rows is not None:
            self._rows.clear()  # forget the episode's rows (the files are closed and freed)
        theta.setflags(write=False)
        return FLIPHATRelease(theta, counts, self.n_releases + 1)

    def _record_release_cost(self, ledger, count: int) -> None:
        a = self._agent
        if a.budget.noise_off or a.published_setting_not_private:
            what = "noise off (epsilon = inf)" if a.budget.noise_off else "the FLIPHAT code's calibration (D-F1)"
            ledger.add_non_private(f"FLIPHAT with {what}: NOT PRIVATE")
            return
        parts = (f"{a.iterations} N-IHT iteration(s), each a {a.selection} peeling of s = {a.sparsity}"
                 f"{' (l_inf sensitivity at the public ||theta^m||_1)' if a.iterate_sensitivity else ''}")
        if a.structure == "disjoint":
            mechanism = (f"FLIPHAT episode release: K = {a.n_arms} per-arm noisy counts (Gaussian, sigma_c = "
                         f"{a.count_sigma:.4g}, rho_c = rho/2) and per-arm N-IHT fits at rho ({parts})")
            bound = ("worst case over neighbours: same arm -> one fit replace-one (rho); moved between arms -> counts "
                     "(-1,+1) rho_c + two fits add/remove (rho/4 each): rho/2 + rho_c = rho")
        else:
            mechanism = f"FLIPHAT episode release: one N-IHT fit on the played rows ({parts})"
            bound = "replace-one: one fit, M peelings composed (zCDP adds)"
        ledger.add_zcdp(a.rho_fit, count, mechanism=mechanism, bound=bound, parallel=True)

    @property
    def sensitivity_assumption(self) -> str:
        return self._agent.sensitivity_assumption

    def privacy_report(self):
        if not (self._agent.published_setting_not_private or self._kept is not None):
            return super().privacy_report()
        ledger = PrivacyLedger(neighboring="replace-one")
        self._record_release_cost(ledger, self.schedule.n_episodes)
        return ledger.report(self.budget.delta, guarantee="none", sensitivity_assumption=self.sensitivity_assumption,
                             note=self._report_note())

    def _report_note(self) -> str:
        if self._kept is not None:
            return kept_users_note(self.schedule, self.n_releases)
        if self._agent.published_setting_not_private:
            return ("NOT PRIVATE: the FLIPHAT code's calibration (lambda = eta B, 4 x_max too little noise; "
                    "unclipped contexts; C from the true parameter). For comparison only.")
        return ""


class FLIPHAT(PrivateAgent):
    """FLIPHAT (module docstring): doubling episodes, forgetting, N-IHT with private peeling, greedy actions.

    Parameters (all public; defaults from the environment's constants, never from data)
    ----------
    epsilon, delta:
        The (epsilon, delta)-JDP target; ``epsilon`` > 0 or ``inf`` (noise off, guarantee "none"); ``delta`` in
        (0, 1), default 1/T.
    selection:
        ``"laplace"`` (the paper's peeling, default) or ``"gumbel"`` (one-shot Gumbel top-s, Gaussian values).
    sparsity:
        s, coordinates kept per iteration; default ``constants.sparsity`` — the environment's *declared* support
        bound, a public constant like ``theta_bound`` (the paper takes s >= s* as an input; it does not use the
        realised support). At most d.
    step:
        eta > 0 (the step is eta/n_tilde on the summed GLM loss); default ``1/x_max^2`` (the inverse of the bound on
        a coordinate's second moment). With M = 1 from theta^0 = 0 it only rescales theta (greedy is invariant).
        Keeping every user (noise off), logistic link: ``4/x_max^2`` (mu' <= 1/4: the loss's curvature bound).
    iterations:
        M >= 1 N-IHT iterations per fit (default 1: at practical budgets more iterations split rho further).
    min_count:
        Disjoint structure: arms with ``n_tilde_a < min_count`` keep theta_a = 0; default ``max(10, 3 sigma_c)``.
    radius:
        C, the l1 projection radius; default :func:`default_radius` (from ``theta_bound``; spec D-F3; refused in one
        line when ``theta_bound`` is infinite).
    first_episode:
        Users in episode 0 (then doubling); default 1 (the paper's schedule). Not forgetting: ``noise_off_schedule``.
    forget:
        Fit each release on its episode only (the paper's design, which a private run's proof needs: False is refused
        unless ``epsilon = inf``). Default True, except with the noise off (not the published setting): every user is
        kept and each release is N-IHT on all of them (:mod:`dpbandit.agents.fliphat_noise_off`).
    iterate_sensitivity:
        Calibrate each peeling to the public ``||theta^m||_1`` instead of C; default True for ``"gumbel"``, False
        for ``"laplace"`` (fidelity to the paper).
    reward_bound:
        ``None`` (the private agents' clip rule) or c > 0: rewards clipped to [-c, c].
    published_setting_not_private:
        True builds the FLIPHAT code's calibration (NOT PRIVATE; warns, guarantee "none"; shared identity only).
    horizon:
        Optional check: must equal the environment's T.
    """

    name = "fliphat"

    def __init__(self, constants: BanditConstants, epsilon: float = 1.0, delta: float | None = None,
                 selection: str = "laplace", sparsity: int | None = None, step: float | None = None,
                 iterations: int = 1, min_count: float | None = None, radius: float | None = None,
                 first_episode: int = 1, iterate_sensitivity: bool | None = None, reward_bound: float | None = None,
                 published_setting_not_private: bool = False, horizon: int | None = None, forget: bool | None = None):
        if not isinstance(constants, BanditConstants):
            raise TypeError(f"constants must be a BanditConstants, got {type(constants).__name__}")
        c = constants
        if horizon is not None and check_int("horizon", horizon, low=1) != c.horizon:
            raise ValueError(f"horizon={horizon} does not match the environment's horizon T={c.horizon}: FLIPHAT is "
                             "calibrated for the environment's T")
        if c.link not in LINKS:
            raise ValueError(f"FLIPHAT has GLM losses for the links {LINKS}; the environment's link is {c.link!r}")
        if not isinstance(published_setting_not_private, bool):
            raise TypeError(f"published_setting_not_private must be a bool, got {published_setting_not_private!r}")
        self.published_setting_not_private = published_setting_not_private
        self.structure, self.link = c.structure, c.link
        self.selection = check_choice("selection", selection, SELECTIONS)
        self.budget = EpisodicBudget.build(c, epsilon, delta)
        self.epsilon, self.delta = self.budget.epsilon, self.budget.delta
        self.rho_fit = self.budget.rho
        self.forget = resolve_forget(forget, self.budget.noise_off, published_setting_not_private)
        first_episode = check_int("first_episode", first_episode, low=1)
        self.schedule = (noise_off_schedule(c.horizon, first_episode, c.link) if not self.forget
                         else EpisodeSchedule(c.horizon, first_episode))
        self.sparsity = c.sparsity if sparsity is None else check_int("sparsity", sparsity, low=1, high=c.dim)
        self.iterations = check_int("iterations", iterations, low=1)
        self.radius = default_radius(c) if radius is None else check_real("radius", radius, low=0.0,
                                                                          low_inclusive=False)
        self.x_max = c.context_bound  # ||x||_inf <= ||x||_2: an l2 bound is also an l_inf bound
        if iterate_sensitivity is None:
            iterate_sensitivity = selection == "gumbel"
        if not isinstance(iterate_sensitivity, bool):
            raise TypeError(f"iterate_sensitivity must be a bool or None, got {iterate_sensitivity!r}")
        self.iterate_sensitivity = iterate_sensitivity
        self.count_sigma = 0.0 if self.budget.noise_off else 1.0 / math.sqrt(self.rho_fit / 2.0)
        self.min_count = max(10.0, 3.0 * self.count_sigma) if min_count is None else check_real(
            "min_count", min_count, low=0.0, low_inclusive=False)
        if published_setting_not_private:
            self._published(c)
        else:
            self.reward_clip = reward_clip_range(c, reward_bound, name="reward_bound")
        curvature = 0.25 if not self.forget and self.link == "logistic" else 1.0  # warm-started steps (§2.12)
        self.step = (1.0 / (curvature * self.x_max**2) if step is None
                     else check_real("step", step, low=0.0, low_inclusive=False))
        low, high = self.reward_clip.low, self.reward_clip.high
        if published_setting_not_private:  # used only with the noise off: the code's clip at the first episode
            low, high = -(self.x_max * self.radius + 1.0), self.x_max * self.radius + 1.0
        self.niht_config = NIHTConfig(self.sparsity, self.step, self.iterations, self.radius, self.x_max, low,
                                          high, self.link, self.selection, self.iterate_sensitivity)
        self.sensitivity_assumption = self._describe_sensitivity(c)
        check_disk(f"agent 'fliphat' (K={c.n_arms}, d={c.dim}, T={c.horizon}, {c.link} link, M={self.iterations})",
                   self._disk_bytes(c.dim), "set TMPDIR to a larger folder, or reduce dim or horizon"
                   + (", or use iterations=1" if self.forget else ""))
        super().__init__(constants)

    def _published(self, c: BanditConstants) -> None:
        if c.structure != "shared" or c.link != "identity" or self.selection != "laplace":
            raise ValueError("published_setting_not_private reproduces the FLIPHAT code: shared structure, identity "
                             "link, Laplace peeling only")
        warnings.warn("FLIPHAT published_setting_not_private=True: the FLIPHAT code's calibration (noise 4 x_max too "
                      "small, unclipped contexts, oracle C) is NOT differentially private; for comparison only",
                      PublishedSettingWarning, stacklevel=3)
        self.x_max = math.sqrt(2.0 * math.log(c.dim))
        self.reward_clip = RewardClip(-math.inf, math.inf, "published code: per-episode clip x_max C + "
                                                           "sqrt(2 ln(1 + n)) inside the fit")

    def _describe_sensitivity(self, c: BanditConstants) -> str:
        if self.published_setting_not_private:
            return (f"NONE (published code's setting): nominal x_max = sqrt(2 ln d) = {self.x_max:.4g} not enforced, "
                    f"C = {self.radius:g}")
        head = (f"contexts ||x||_{c.context_norm[1:]} <= {c.context_bound:g} (so ||x||_inf <= x_max = "
                f"{self.x_max:g}); {self.reward_clip.describe()}; theta in the l1 ball of radius C = {self.radius:g}")
        r = "||theta^m||_1" if self.iterate_sensitivity else "C"
        return (f"{head}; replace-one l_inf sensitivity of a gradient step (eta/n_tilde) 2 x_max G, G = "
                f"max(mu(x_max {r}) - low, high - mu(-x_max {r})) (dpbandit.optim.niht); s = {self.sparsity}, "
                f"eta = {self.step:.4g}, M = {self.iterations}"
                + (f"; per-arm counts noised with sigma_c = {self.count_sigma:.4g}, min_count = {self.min_count:.4g}"
                   if self.structure == "disjoint" else ""))

    @property
    def keeps_sums(self) -> bool:
        """Whether the curator keeps an episode as sums in bounded memory (M = 1, or the identity link), not as its
        rows (the logistic link with M > 1; :class:`FLIPHATCurator`)."""
        return self.iterations == 1 or self.link == "identity"

    def memory_estimate(self) -> int:
        """The curator's peak, checked before anything is allocated: its buffer of a chunk of rows and the work
        arrays over it (about as large), the episode's sums (:meth:`~dpbandit.agents.episode_sums.EpisodeSums.nbytes`)
        or, for the logistic link with M > 1, the read buffer of the rows on disk
        (:meth:`~dpbandit.agents.episode_rows.EpisodeRows.memory_bytes`), and the release. It does not grow with T."""
        models = self.n_arms if self.structure == "disjoint" else 1
        rows = min(CHUNK_ROWS, self.schedule.max_length)
        kept = (KeptUsers.memory_bytes(models, self.dim, self.link) if not self.forget
                else EpisodeSums.nbytes(models, self.dim, self.iterations > 1) if self.keeps_sums
                else EpisodeRows.memory_bytes(self.dim))
        return 8 * (2 * rows * (self.dim + 2) + 4 * self.n_arms * self.dim) + kept

    def disk_estimate(self) -> int:
        """Bytes of temporary files at the longest episode: 0, or the rows on disk for the logistic link with M > 1
        (:mod:`~dpbandit.agents.episode_rows`)."""
        return self._disk_bytes(self.dim)

    def _disk_bytes(self, dim: int) -> int:
        if not self.forget:
            return KeptUsers.disk_bytes(self.schedule.horizon, dim, self.link)
        return 0 if self.keeps_sums else EpisodeRows.disk_bytes(self.schedule.max_length, dim)

    def _make_curator(self, privacy_rng: np.random.Generator) -> FLIPHATCurator:
        return FLIPHATCurator(self, privacy_rng)

    @staticmethod
    def action_rule(release: FLIPHATRelease, observation: np.ndarray, rng: np.random.Generator) -> int:
        """Greedy ``argmax_a x_a^T theta_a`` (disjoint) or ``x_a^T theta`` (shared); ties at random with ``rng``."""
        return argmax_random_tie(greedy_scores(release.theta, observation), rng)

    def play_block(self, block: RoundBlock) -> np.ndarray:
        """The block's rounds (:mod:`~dpbandit.agents.episodic_blocks`): the arms, releases and draws of ``act`` /
        ``update``; with the noise off and a release after every user, a refit per user (``observe_kept``)."""
        return play_episodic_block(self, block, block_scores)

    def __repr__(self) -> str:
        return (f"FLIPHAT(K={self.n_arms}, d={self.dim}, {self.structure}, epsilon={self.epsilon:g}, "
                f"delta={self.delta:g}, selection={self.selection!r}, s={self.sparsity}, M={self.iterations}"
                f"{', NOT PRIVATE' if self.published_setting_not_private else ''})")
