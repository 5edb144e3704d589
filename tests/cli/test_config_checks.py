"""The command line checks the file's structure; the config checks its settings' values.

``validate_experiment`` maps the file's keys onto the config and rejects the keys a
data file may not set, then calls the config's own ``validate()``. These tests switch
the config's checks off to show that the command line no longer checks a value itself,
and check how an error of RLlib's own ``validate()`` reaches the user. No Ray, no env
steps.
"""

from __future__ import annotations

import pytest
import torch

from rllib_fair.cli.experiment import ExperimentError, validate_experiment
from rllib_fair.rllib import rllib_settings

torch.set_num_threads(1)


def _spec(**config) -> dict:
    return {
        "run": "PPO",
        "env": "fair/Lending-v0",
        "stop": {"training_iteration": 1},
        "config": {"train_batch_size_per_learner": 400, "minibatch_size": 100, **config},
    }


def test_rllib_setting_values_are_left_to_the_config(monkeypatch, tmp_path):
    spec = _spec(gamma=1.5, model_config={"fcnet_hiddens": [16, -4]})
    with pytest.raises(ExperimentError, match=r"^config\.gamma: 1\.5 is invalid; valid: "):
        validate_experiment("exp", spec, storage_path=str(tmp_path))
    monkeypatch.setattr(rllib_settings, "check_rllib_settings", lambda cfg: None)
    exp = validate_experiment("exp", spec, storage_path=str(tmp_path))
    assert exp.config.gamma == 1.5
    assert exp.config.model_config["fcnet_hiddens"] == [16, -4]


def test_keys_stay_the_files_business(monkeypatch, tmp_path):
    """With the config's checks off, unknown and code-taking keys are still refused."""
    monkeypatch.setattr(rllib_settings, "check_rllib_settings", lambda cfg: None)
    for config, needle in (
        ({"gama": 0.9}, "config.gama: unknown setting for PPO (FairPPOConfig); did you mean"),
        ({"callbacks": "os.system"}, "config.callbacks: takes Python code"),
        ({"model_config": {"fcnet_hidden": [8]}}, "config.model_config.fcnet_hidden: unknown"),
        ({"gamma": float("nan")}, "config.gamma: nan is not finite"),
    ):
        with pytest.raises(ExperimentError) as err:
            validate_experiment("exp", _spec(**config), storage_path=str(tmp_path))
        assert str(err.value).startswith(needle), str(err.value)


@pytest.mark.parametrize(
    ("config", "line"),
    [
        # a declaration: the key as the file spells it (num_workers, lambda)
        ({"num_workers": -1}, "config.num_workers: -1 is invalid; valid: an integer >= 0"),
        ({"lambda": 2}, "config.lambda: 2 is invalid; valid: a number in [0, 1]"),
        # RLlib's own validate(): its words, in the one-line format
        (
            {"minibatch_size": 1000},
            "config.minibatch_size: 1000 is invalid: it must be <= "
            "`train_batch_size_per_learner` (400).",
        ),
    ],
)
def test_a_config_error_is_one_line_in_the_files_words(config, line, tmp_path):
    with pytest.raises(ExperimentError) as err:
        validate_experiment("exp", _spec(**config), storage_path=str(tmp_path))
    assert str(err.value).startswith(line), str(err.value)
    assert "\n" not in str(err.value)
