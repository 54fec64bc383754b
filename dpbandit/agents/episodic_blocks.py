"""Episodic agents by blocks of rounds (issue 25; the block protocol: :mod:`dpbandit.envs.blocks`).

An episodic agent's release changes only when an episode ends, so the rounds up to the curator's next event (an
absorbed chunk or a release, :meth:`~dpbandit.agents.episodic.EpisodicCurator.rounds_to_event`) form a *run* played
with one release. A run of m rounds costs a few numpy calls instead of m ``act`` / ``update`` pairs:

* **Act** (the action rule's side: the latest release and the users' own rows only). The rows are clipped as the
  rule clips them (:func:`~dpbandit.agents.episodic_ridge_calibration.clip_rows` on the (m, K, d) rows) and scored
  by the rule's own score function with a leading round axis (``scores(release, X (m, K, d)) -> (m, K)``:
  :func:`~dpbandit.agents.release_rules.ridge_scores`, whose leading axes run the single round's kernels: the same
  einsum contraction, a matrix-vector product per round). Each round's arm is the first largest score; a round with
  ties draws ``rng.integers(n_best)`` from the exploration stream, in round order, exactly as
  :func:`~dpbandit.agents.baselines.argmax_random_tie` does (the stream is consumed only there, so the draws are
  the step path's). ``tests/agents/test_episodic_blocks.py`` checks these identities bit for bit.
* **Observe** (the curator's side: the raw played rows, arms and rewards):
  :meth:`~dpbandit.agents.episodic.EpisodicCurator.observe_rows`, the checks, buffer and release of m observes.

With the noise off and a release after every user (episodic ridge's Sherman-Morrison form), the block's rows and
rewards are checked at once for every arm, and each round is the rule's scores on the latest release and the
curator's ``observe_kept`` (its clip, Sherman-Morrison step and release, without the buffer's bookkeeping).

Rounds are played one by one, through the action rule and ``observe`` (the step path itself), where a run is short
(under :data:`MIN_RUN` rounds), where a score is NaN or a check fails (the step path's error), and for rules without
a vectorised score (``scores`` None: episodic ridge's UCB and Thompson rules). So a block gives the step path's
arms, releases and privacy-stream draws, bit for bit, for every configuration.

Memory: the rows and scores of one run, at most ``chunk`` rounds (:data:`~dpbandit.agents.episode_sums.CHUNK_ROWS`)
and :data:`RUN_ELEMENTS` row entries. While an episode's release is computed the agent does not hold the previous
one (its d x d arrays need not be in memory twice).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dpbandit.agents.episodic_ridge_calibration import clip_rows
from dpbandit.envs.blocks import RoundBlock

__all__ = ["MIN_RUN", "RUN_ELEMENTS", "play_episodic_block"]

#: Runs shorter than this are played round by round (a run's fixed numpy calls cost more than a few rounds).
MIN_RUN = 4
#: A run holds at most this many row entries (m K d <= RUN_ELEMENTS, 512 KB of clipped rows): its work arrays stay
#: small next to the agent's d x d matrices (at d = 1000, K = 2: runs of 32 rounds).
RUN_ELEMENTS = 2**16


def play_episodic_block(agent, block: RoundBlock, scores: Callable[[object, np.ndarray], np.ndarray] | None
                        ) -> np.ndarray:
    """Play the block's n rounds as ``agent.act`` / ``agent.update`` would (module docstring) and return the arms
    (n,) intp. ``agent``: an episodic :class:`~dpbandit.agents.private.PrivateAgent` (``curator`` an
    :class:`~dpbandit.agents.episodic.EpisodicCurator`, a release with ``row_clip``); ``scores``: its rule's scores
    of a release on rows (m, K, d), or None to play every round one by one."""
    obs, rewards, n = block.obs, block.rewards, block.n
    cur = agent.curator
    arms = np.empty(n, dtype=np.intp)
    runs = scores is not None and obs.dtype == np.float64 and obs.shape[1:] == (cur.n_arms, cur.dim)
    longest = max(MIN_RUN, RUN_ELEMENTS // (cur.n_arms * cur.dim))
    if runs and getattr(cur, "keeps_users_one_by_one", False):  # a release after every user (noise off)
        try:
            if _kept_users(agent, obs, rewards, arms, scores):
                return arms
        finally:
            agent._release = cur.release()
    t = 0
    try:
        while t < n:
            m = min(n - t, max(cur.rounds_to_event(), 1), longest)
            agent._release = None  # (the curator holds it; it drops it while it computes the next)
            part = slice(t, t + m)
            if not (runs and m >= MIN_RUN and _run(agent, obs[part], rewards[part], arms[part], scores)):
                _steps(agent, obs[part], rewards[part], arms[part])
            t += m
    finally:
        agent._release = cur.release()  # as PrivateAgent.update
    return arms


def _run(agent, X: np.ndarray, rewards: np.ndarray, arms: np.ndarray, scores) -> bool:
    """One run of m rounds with one release; False (nothing done) if a score is NaN."""
    values = _scores(agent.curator.release(), X, scores)  # (m, K); the release is not held past this line
    rows = np.arange(len(X))
    best = values.argmax(axis=1)
    top = values[rows, best]
    n_best = np.count_nonzero(values == top[:, None], axis=1)
    if not n_best.all():  # NaN: the step path raises at its round
        return False
    arms[:] = best
    rng = agent.rng
    for i in np.flatnonzero(n_best > 1):  # ties, in round order: argmax_random_tie's draw
        arms[i] = np.flatnonzero(values[i] == top[i])[rng.integers(int(n_best[i]))]
    agent.curator.observe_rows(X[rows, arms], arms, rewards[rows, arms])
    return True


def _kept_users(agent, obs: np.ndarray, rewards: np.ndarray, arms: np.ndarray, scores) -> bool:
    """A block of one-user episodes (noise off, Sherman-Morrison): per round the rule's scores on the latest
    release, the first largest (ties: ``argmax_random_tie``'s draw) and the curator's ``observe_kept``, after the
    checks of every arm's row and reward of the block at once (False, nothing done, if any fails: the step path then
    raises where it does); a NaN score hands the rest of the block to the step path."""
    cur = agent.curator
    if not cur.inside(obs, rewards):
        return False
    rng = agent.rng
    for i in range(len(obs)):
        values = _scores(cur.release(), obs[i], scores)
        best = values.argmax()
        n_best = np.count_nonzero(values == values[best])
        if n_best != 1:
            if n_best == 0:  # NaN: the step path's error
                _steps(agent, obs[i:], rewards[i:], arms[i:])
                return True
            best = np.flatnonzero(values == values[best])[rng.integers(n_best)]
        arms[i] = best
        cur.observe_kept(obs[i, best], int(best), float(rewards[i, best]))
    return True


def _scores(release, X: np.ndarray, scores) -> np.ndarray:
    """The rule's scores of the rounds' rows X (m, K, d), clipped as the rule clips them: (m, K)."""
    return scores(release, clip_rows(X, release.row_clip) if math.isfinite(release.row_clip) else X)


def _steps(agent, X: np.ndarray, rewards: np.ndarray, arms: np.ndarray) -> None:
    """The rounds one by one: the action rule on the latest release, then ``observe`` (the step path)."""
    rule, cur, rng = type(agent).action_rule, agent.curator, agent.rng
    for i in range(len(X)):
        a = rule(cur.release(), X[i], rng)
        arms[i] = a
        cur.observe(X[i], a, float(rewards[i, a]))
