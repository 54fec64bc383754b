"""The empirical audit of one episodic ridge release shared by the part-2 tests (test_release_combination.py,
test_row_clip.py): a curator run on a two-user episode (T = 2, shared, K = 2, d = 2), its output (G~ upper triangle
whitened by the symmetric law's scale, b~), the likelihood-ratio projection for a mean shift (dG, db), and the
planted defect (both noise scales x0.5, built here, never in the library) that the same statistic must catch."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpbandit.agents.episodic import EpisodeSchedule
from dpbandit.agents.episodic_ridge import EpisodicRidgeCurator
from dpbandit.privacy.audit import audit, projection

_IU = np.triu_indices(2)
_SCALE = np.where(_IU[0] == _IU[1], math.sqrt(2), 1.0)


def _mechanism(cal, users_of):
    def mechanism(which, rng, n):
        out = []
        for _ in range(n):
            cur = EpisodicRidgeCurator(cal, EpisodeSchedule(2, 2), 2, rng)
            for u in users_of(which):
                cur.observe(*u)
            r = cur.release()
            out.append(np.concatenate([r.gram[0, _IU[0], _IU[1]] / _SCALE, r.moment[0]]))
        return np.array(out)

    return mechanism


def audit_release_pair(agent, users_of, dG, db) -> None:
    """Assert that the audit of ``users_of("A")`` vs ``users_of("B")`` passes at the agent's noise and catches the
    planted x0.5 noise (6000 samples per input, confidence 1 - 1e-6)."""
    cal = agent.cal
    direction = np.concatenate([dG[_IU] / _SCALE / cal.sigma_G**2, db / cal.sigma_b**2])
    claimed = agent.privacy_report().epsilon
    good = audit(_mechanism(cal, users_of), "A", "B", n_samples=6_000, n_pilot=1_000, delta=agent.delta,
                 rng=np.random.default_rng(2), statistic=projection(direction), confidence=1 - 1e-6)
    assert not good.violates(claimed), str(good)
    planted = dataclasses.replace(cal, sigma_G=cal.sigma_G / 2, sigma_b=cal.sigma_b / 2)
    bad = audit(_mechanism(planted, users_of), "A", "B", n_samples=6_000, n_pilot=1_000, delta=agent.delta,
                rng=np.random.default_rng(3), statistic=projection(direction), confidence=1 - 1e-6)
    assert bad.violates(claimed), str(bad)
