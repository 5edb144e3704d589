"""Every tuned example is a valid experiment with AND-ed pass criteria (no training here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rllib_fair.cli.experiment import load_experiments, validate_experiment

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "tuned_examples").glob("*/*.yaml"))


def test_every_algorithm_has_tuned_examples():
    from rllib_fair.algorithms import ALGORITHMS

    folders = {f.parent.name for f in FILES}
    assert {spec.name.lower() for spec in ALGORITHMS.values() if spec.variant_of is None} <= folders
    # a variant (same classes, another default) lives in its base algorithm's folder
    runs = {validate_experiment(*next(iter(load_experiments(f).items()))).run for f in FILES}
    assert set(ALGORITHMS) <= runs, set(ALGORITHMS) - runs


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_tuned_example_validates(path):
    ((name, spec),) = load_experiments(path).items()
    assert name == path.stem  # one experiment per file, named like the file
    exp = validate_experiment(name, spec)
    from rllib_fair.algorithms import ALGORITHMS

    assert (ALGORITHMS[exp.run].variant_of or exp.run).lower() == path.parent.name
    assert exp.env == spec["env"]
    assert exp.stop.get("num_env_steps_sampled_lifetime", 0) > 0
    if exp.is_sweep:  # a sweep: a rule selects on a fairness metric instead of pass criteria
        assert exp.selection is not None
        assert exp.selection.disparity.startswith("fairness/")
        assert exp.selection.reward == "env_runners/episode_return_mean"
        return
    assert len(exp.pass_criteria) >= 2  # a return bound AND a fairness bound
    metrics = {c.metric for c in exp.pass_criteria}
    assert "env_runners/episode_return_mean" in metrics
    assert any(m.startswith("fairness/") for m in metrics)
    assert exp.stop.get("num_env_steps_sampled_lifetime", 0) > 0
