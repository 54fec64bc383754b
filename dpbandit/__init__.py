"""dpbandit: a simulator for differentially private contextual bandits."""

__version__ = "0.1.0"
