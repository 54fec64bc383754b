"""Running, recording and showing experiments: configs, the evaluation loop, tidy results, plots, the CLI."""

from dpbandit.experiment.config import AgentSpec, ExperimentConfig, load_config
from dpbandit.experiment.runner import RunResult, run_experiment, simulate

__all__ = ["AgentSpec", "ExperimentConfig", "load_config", "RunResult", "run_experiment", "simulate"]
