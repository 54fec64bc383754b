"""DP-HDB played by blocks of rounds (the block protocol, :mod:`dpbandit.envs.blocks`; issue 25).

:func:`play_block` plays the n rounds of a :class:`~dpbandit.envs.blocks.RoundBlock` as :class:`~dpbandit.agents.
dp_hdb.DPHDB`'s ``act`` and ``update`` would round by round, with the same numbers from the same streams in the same
order, so every result is bit for bit the ``step`` path's (``tests/experiment/test_loop.py``). A single seed and a
lockstep unit both play through it (:func:`~dpbandit.experiment.loop.play_blocks`, seed after seed).

The rounds run in one compiled kernel, :func:`play_rounds`: the action rule (the warm-up's round robin, then the
compiled :func:`~dpbandit.agents.dp_hdb.greedy_index` on the learners' vertex sums, whose quotients ``V / (t + 1)``
are the release's), the curator's checks on the played user (context bound, feature bound, reward clip, horizon),
the played learner's gradient (:func:`~dpbandit.optim.pofw_kernels.gradient_step`) and every learner's selection
from the step's pre-drawn numbers (:func:`~dpbandit.optim.pofw_kernels.select_drawn`) and vertex move. The kernel
stops, and this module's Python finishes the round through the single path's own code, wherever the single path
draws or computes something a kernel cannot reproduce bit for bit, or raises:

* ``DRAWS``: the next block of selection numbers is due (:meth:`~dpbandit.optim.pofw_draws.SelectionDraws.ensure`,
  drawn before the round: the exploration stream, the only other draw of a round, is another generator);
* ``TIE``: the action rule's candidates tie (or hold a NaN): ``argmax_random_tie`` with the exploration stream;
* ``OBSERVE``: a check would fail or clip: :meth:`~dpbandit.agents.dp_hdb.HDBCurator.observe` (its error or clip);
* ``SELECT``: a selection needs numpy's ``exp`` (a row that is not near uniform, or 2d <= 2B) or a further
  rejection round (its draws): the learners' own ``_select_and_move``;
* ``FORCED``: the warm-up ended: the forced-sample estimators are frozen (``predict``).

The curator / action-rule split of :class:`~dpbandit.agents.private.PrivateAgent` holds within the kernel: a
round's action reads only what the latest release holds (the quotients ``V / (t + 1)`` and the frozen estimators)
and the user's own row, before the curator sees that user; no noise is drawn in a kernel (the privacy stream's
numbers are drawn by numpy, in the single path's order).

The Laplace form draws its noise every step, and where numpy's BLAS ``ddot`` could not be bound
(:data:`~dpbandit.optim.pofw_kernels.NUMPY_DOT`) the played learner's product would not be the single path's: both
play their rounds through ``act`` and ``update``. Nothing is batched over seeds: every seed's work is its own (its
contexts, draws and learners), so a lockstep unit plays its seeds one after the other
(``benchmarks/dphdb_benchmark.py`` prints what that leaves to gain).
"""

from __future__ import annotations

import math

import numpy as np

from dpbandit.agents.baselines import argmax_random_tie
from dpbandit.agents.dp_hdb import _linf_norm, greedy_index
from dpbandit.compiled import kernel
from dpbandit.envs.blocks import RoundBlock
from dpbandit.optim import pofw, pofw_kernels
from dpbandit.optim.losses import LogisticLoss, SquaredLoss

__all__ = ["play_block", "play_rounds"]

DONE, DRAWS, TIE, OBSERVE, SELECT, FORCED = range(6)
#: The kernel passes an l2 context whose squared norm is within this relative margin of the bound's square (the
#: single path, with BLAS's sum of squares, refuses only beyond ``bound (1 + CONTEXT_RTOL)``, 4e-10); others go to
#: ``observe``.
_FAST_CHECK_RTOL = 1e-12


@kernel
def play_rounds(obs, rewards, i, acted, arms, values, scores, V, s_inf, last_j, last_value, theta_forced, t,
                k, u, v, first, rows, chosen, warmup, horizon, h, logistic, linf, fast_bound, feature_bound, low,
                high, lipschitz, two_scale, radius, coefficient, exact, span):
    """Play rounds ``i, i + 1, ...`` of a block (``obs`` (n, K, d), every arm's ``rewards`` (n, K)) into ``arms``
    (n,), from the learners' state after step t (``scores`` (K, 2d), ``V`` (K, d), ``s_inf``, ``last_j``,
    ``last_value`` (K,), ``theta_forced`` (K, d), or (0, d) during the warm-up) and the selection numbers ``k``,
    ``u`` (R, K, B) (R, 0, 0 without proposals), ``v`` (R, K) of steps ``first ..``; ``acted``: round i's arm is
    ``arms[i]`` already. Returns ``(i, status, t)``: the round to go on with, why the kernel stopped there (the module
    docstring; ``DONE`` at the block's end) and the steps taken. ``values`` (K,): the action rule's candidate values
    of the last round that ran it. Constants: the warm-up's rounds, T, h, the link, the context check (``linf`` and
    its bound ``fast_bound``, squared for l2), the feature bound, the reward clip [low, high], L0, the squared
    loss's ``2 scale``, the radius r, the noise scale's coefficient, ``exact`` (noise off) and the rejection
    span."""
    n, K = rewards.shape
    R = v.shape[0]
    while i < n:
        step = t + 1
        if not acted:
            if step - first >= R:
                return i, DRAWS, t
            if theta_forced.shape[0] == 0:
                arms[i] = t % K  # the warm-up's round robin: release.round = t
            else:
                best, ties = greedy_index(obs[i], theta_forced, V, t + 1.0, h, logistic, values)
                if ties != 1:
                    return i, TIE, t
                arms[i] = best
        acted = False
        arm = arms[i]
        x = obs[i, arm]
        reward = rewards[i, arm]
        x_inf = _linf_norm(x)
        if linf:
            fits = x_inf <= fast_bound
        else:
            norm2 = 0.0
            for j in range(x.shape[0]):
                norm2 += x[j] * x[j]
            fits = norm2 <= fast_bound
        low_reward = low if low > reward else reward  # Python's min(max(reward, low), high)
        y = high if high < low_reward else low_reward
        if not (fits and x_inf <= feature_bound and step <= horizon and x.flags.c_contiguous and math.isfinite(y)
                and not math.isnan(reward)):
            return i, OBSERVE, t
        t = step
        if x_inf > 0.0:  # the zero sample has zero gradient
            pofw_kernels.gradient_step(scores, V, s_inf, last_j, last_value, arm, x, x_inf, y, t, lipschitz,
                                       logistic, two_scale)
        a = 1.0 if exact else radius / ((t + 1.0) * (coefficient / math.sqrt(t + 1.0)))
        j = t - first
        if not pofw_kernels.select_drawn(scores, s_inf, a, k[j], u[j], v[j], exact, span, rows, chosen):
            return i, SELECT, t
        pofw_kernels.move_to_vertices(V, chosen, radius, last_j, last_value)
        i += 1
        if t == warmup:
            return i, FORCED, t
    return i, DONE, t


def play_block(agent, block: RoundBlock) -> np.ndarray:
    """Play ``block`` with the DP-HDB ``agent`` (module docstring); returns the arms (n,) intp and leaves the agent
    with the release, learners and streams its ``act`` and ``update`` would have left."""
    curator = agent.curator
    engine = curator.learners
    n = block.n
    if engine.calibration.form == "laplace" or not pofw_kernels.NUMPY_DOT or not _kernel_loss(engine.loss):
        return _play_steps(agent, block)
    cal, c, draws = engine.calibration, agent.constants, engine.draws
    arms, values = np.empty(n, dtype=np.intp), np.empty(agent.n_arms)
    rows, chosen = np.arange(agent.n_arms), np.empty(agent.n_arms, dtype=np.int64)
    linf = c.context_norm == "linf"
    bound = c.context_bound if linf else (c.context_bound * (1.0 + _FAST_CHECK_RTOL)) ** 2
    logistic = isinstance(engine.loss, LogisticLoss)
    two_scale = 0.0 if logistic else 2.0 * engine.loss.scale
    no_k, no_u = np.empty((draws.rounds, 0, 0), dtype=np.int64), np.empty((draws.rounds, 0, 0))  # no proposals
    i, acted = 0, False
    try:
        while True:
            forced = curator._theta_forced if curator._theta_forced is not None else _no_forced(agent.dim)
            i, status, t = play_rounds(
                block.obs, block.rewards, i, acted, arms, values, engine._scores, engine.V, engine._s_inf,
                engine._last_j, engine._last_value, forced, engine.t, no_k if draws.k is None else draws.k,
                no_u if draws.u is None else draws.u, draws.v, draws.first, rows, chosen, curator._warmup,
                cal.horizon, curator._h, logistic, linf, bound, engine.feature_bound, *agent.reward_range,
                cal.lipschitz, two_scale, cal.radius, cal.coefficient, cal.noise_off, pofw._REJECTION_SPAN)
            engine.t = curator.round = t
            acted = False
            if status == DONE:
                break
            if status == DRAWS:
                draws.ensure(t + 1)
            elif status == TIE:  # the action rule's tie (or NaN: its error), with the exploration stream
                arms[i], acted = argmax_random_tie(values, agent.rng), True
            elif status == OBSERVE:  # the single path's checks, clip or error, then the whole step
                curator.observe(block.obs[i], int(arms[i]), block.rewards[i, arms[i]])
                i += 1
            elif status == SELECT:  # the gradient is in: the single path's selection and vertex moves of step t
                engine._select_and_move(t)
                if t == curator._warmup:
                    curator._theta_forced = engine.predict()
                i += 1
            else:  # FORCED
                curator._theta_forced = engine.predict()
    finally:  # the release of the rounds played (as after each ``update``), also when a round raised
        agent._release = curator.release()
    return arms


def _play_steps(agent, block: RoundBlock) -> np.ndarray:
    """The block's rounds through ``act`` and ``update`` (the Laplace form, or no numpy ``ddot`` to call)."""
    arms = np.empty(block.n, dtype=np.intp)
    for i in range(block.n):
        arms[i] = arm = agent.act(block.obs[i])
        agent.update(block.obs[i], arm, block.rewards[i, arm], {})
    return arms


def _kernel_loss(loss) -> bool:
    """Whether :func:`~dpbandit.optim.pofw_kernels.gradient_step` has this loss's derivative."""
    return type(loss) in (SquaredLoss, LogisticLoss)


def _no_forced(dim: int) -> np.ndarray:
    """The (0, d) stand-in for the forced-sample estimators during the warm-up (read-only, like the release's)."""
    empty = np.empty((0, dim))
    empty.flags.writeable = False
    return empty
