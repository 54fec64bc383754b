"""``dpbandit bench``: the standard benchmark of private contextual-bandit agents (``docs/benchmark.md``).

* :mod:`~dpbandit.experiment.bench.suite` — the versioned suite of named scenarios (TOML files in this package),
  :func:`scenario` (an environment spec by name and size);
* :mod:`~dpbandit.experiment.bench.runner` — runs the suite (one run directory, resumable, locked);
* :mod:`~dpbandit.experiment.bench.scores` — ratios to uniform random play and to the agent's noise-off version,
  with paired-bootstrap intervals over common seeds and the one verdict wording;
* :mod:`~dpbandit.experiment.bench.scorecard` — the Markdown / HTML scorecard and the privacy-regret figures;
* :mod:`~dpbandit.experiment.bench.references` — the shipped reference results and their staleness check;
  ``python -m dpbandit.experiment.bench.make_references --size quick`` regenerates them.
"""

from dpbandit.experiment.bench.suite import (SIZES, Scenario, Size, agent_label, load_scenario, scenario,
                                             scenario_names, suite_name)

__all__ = ["SIZES", "Scenario", "Size", "agent_label", "load_scenario", "scenario", "scenario_names", "suite_name"]
