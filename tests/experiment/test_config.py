import pytest

from dpbandit.experiment.config import AgentSpec, ExperimentConfig, load_config


def _config(**changes):
    base = dict(
        env_id="dpbandit/SparseLinear-v0",
        env_kwargs={"horizon": 50},
        agents=(AgentSpec("random"), AgentSpec("linucb", "LinUCB", {"alpha": 0.5})),
        seeds=2,
    )
    base.update(changes)
    return ExperimentConfig(**base)


def test_round_trip_through_dict():
    config = _config()
    again = ExperimentConfig.from_dict(config.to_dict())
    assert again == config
    assert again.seeds == (0, 1)
    assert again.agents[1].params == {"alpha": 0.5}


def test_toml_file(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(
        'name = "t"\nseeds = [3, 5]\ncheckpoints = "all"\n[env]\nid = "dpbandit/SparseLinear-v0"\nhorizon = 20\n'
        '[[agents]]\ntype = "greedy"\nlam = 2.0\n'
    )
    config = load_config(path)
    assert config.seeds == (3, 5)
    assert config.checkpoints is None
    assert config.env_kwargs == {"horizon": 20}
    assert config.agents == (AgentSpec("greedy", "greedy", {"lam": 2.0}),)


def test_malformed_toml_names_the_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("name = \n[env")
    with pytest.raises(ValueError, match="bad.toml.*not valid TOML"):
        load_config(path)


def test_missing_file():
    with pytest.raises(ValueError, match="does not exist"):
        load_config("/nonexistent/config.toml")


@pytest.mark.parametrize(
    "data, exc, match",
    [
        ({"env": {"id": "x"}, "agents": ["random"], "sedes": 3}, ValueError, "unknown config keys \\['sedes'\\]"),
        ({"agents": ["random"]}, ValueError, "\\[env\\] table"),
        ({"env": {"id": "x"}}, ValueError, "\\[\\[agents\\]\\]"),
        ({"env": {"id": "x"}, "agents": [{"label": "a"}]}, ValueError, "agents\\[0\\].*'type'"),
        ({"env": {"id": "x"}, "agents": ["random"], "seeds": 0}, ValueError, "seeds must be an integer in \\[1, 100000\\]"),
        ({"env": {"id": "x"}, "agents": ["random"], "seeds": [1, -1]}, ValueError, "seeds\\[1\\]"),
        ({"env": {"id": "x"}, "agents": ["random"], "seeds": [1, 1]}, ValueError, "must not repeat"),
        ({"env": {"id": "x"}, "agents": ["random"], "seeds": 2.5}, TypeError, "seeds"),
        ({"env": {"id": "x"}, "agents": ["random"], "n_jobs": 0}, ValueError, "n_jobs"),
        ({"env": {"id": "x"}, "agents": ["random"], "checkpoints": 1}, ValueError, "checkpoints"),
        ({"env": {"id": "x"}, "agents": ["random", "random"]}, ValueError, "labels must be unique"),
    ],
)
def test_bad_configs(data, exc, match):
    with pytest.raises(exc, match=match):
        ExperimentConfig.from_dict(data)


def test_validate_rejects_unknown_env_and_agent():
    with pytest.raises(ValueError, match="dpbandit/Nope-v0"):
        _config(env_id="dpbandit/Nope-v0").validate()
    with pytest.raises(ValueError, match="nosuchagent"):
        _config(agents=(AgentSpec("nosuchagent"),)).validate()
    with pytest.raises((ValueError, TypeError), match="alpha"):
        _config(agents=(AgentSpec("linucb", params={"alpha": -1.0}),)).validate()
    with pytest.raises((ValueError, TypeError), match="n_arms"):
        _config(env_kwargs={"horizon": 10, "n_arms": 1}).validate()


def test_absurd_seed_counts_are_refused_before_any_list_is_built(tmp_path):
    """Issue 24: seeds = 10000000 took minutes and 2 GB building the seed list and a 149 MB manifest."""
    path = tmp_path / "many.toml"
    path.write_text('seeds = 10000000\n[env]\nid = "dpbandit/SparseLinear-v0"\n[[agents]]\ntype = "random"\n')
    with pytest.raises(ValueError, match=r"seeds must be an integer in \[1, 100000\], got 10000000"):
        load_config(path)
    with pytest.raises(ValueError, match=r"seeds must list at most 100000 seeds .*got 100001"):
        _config(seeds=list(range(100_001)))
    assert _config(seeds=100_000).seeds[-1] == 99_999  # the cap itself is accepted
