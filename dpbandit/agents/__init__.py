"""Bandit agents."""
