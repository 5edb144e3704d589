"""RLlib's own settings are checked by the configs' ``validate()`` (rllib.rllib_settings).

The same checks the command line relies on hold for a config built from Python: a
value set to other than the algorithm's default must pass its declaration (or the kind
of its default), and RLlib's defaults themselves are never refused. No env is stepped
and Ray is not started.
"""

from __future__ import annotations

import pytest
import torch

from rllib_fair.algorithms import ALGORITHMS, get_config_class
from rllib_fair.settings import SettingError

torch.set_num_threads(1)


def _ppo():
    return get_config_class("PPO")().environment("fair/Lending-v0")


@pytest.mark.parametrize("run", list(ALGORITHMS))
def test_every_algorithm_default_passes(run):
    """RLlib's defaults are its own: TD3's lr=None, minibatch_size=None without minibatches."""
    cfg = get_config_class(run)().environment(ALGORITHMS[run].smoke_env)
    cfg.validate()
    cfg.validate()  # RLlib's validate() sets simple_optimizer; a second call still passes


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"gamma": 1.5}, "gamma: 1.5 is invalid; valid: a number in [0, 1]"),
        ({"lambda_": 2}, "lambda_: 2 is invalid; valid: a number in [0, 1]"),
        ({"num_epochs": 2.5}, "num_epochs: 2.5 is invalid; valid: an integer >= 1"),
        ({"minibatch_size": None}, "minibatch_size: None is invalid; valid: an integer >= 1"),
        ({"use_kl_loss": "yes"}, "use_kl_loss: 'yes' is invalid; valid: true or false"),
        (
            {"min_sample_timesteps_per_iteration": "many"},
            "min_sample_timesteps_per_iteration: 'many' (str) is invalid; valid: a number",
        ),
        # a derived property (train_batch_size_per_learner) is checked after its inputs
        ({"num_learners": -1}, "num_learners: -1 is invalid; valid: an integer >= 0"),
        ({"train_batch_size": 1.5}, "train_batch_size: 1.5 is invalid"),
    ],
)
def test_a_bad_rllib_setting_from_python_is_refused(settings, message):
    cfg = _ppo()
    cfg.update_from_dict(settings)
    with pytest.raises(SettingError) as err:
        cfg.validate()
    assert str(err.value).startswith(message), str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            {"fcnet_hiddens": [16, -4]},
            "model_config.fcnet_hiddens: [16, -4] is invalid; valid: a list of positive",
        ),
        ({"fcnet_activation": "sigmoidd"}, "model_config.fcnet_activation: 'sigmoidd' is invalid"),
        ({"vf_share_layers": "no"}, "model_config.vf_share_layers: 'no' is invalid"),
    ],
)
def test_a_bad_model_config_entry_is_refused(model, message):
    cfg = _ppo().rl_module(model_config=model)
    with pytest.raises(SettingError) as err:
        cfg.validate()
    assert str(err.value).startswith(message), str(err.value)


def test_valid_changed_values_pass():
    cfg = _ppo().training(gamma=1.0, lambda_=0.0, lr=[[0, 1e-3], [1000, 1e-4]], grad_clip=None)
    cfg.rl_module(model_config={"fcnet_hiddens": [8], "fcnet_activation": "GELU"})
    cfg.env_runners(num_env_runners=0, rollout_fragment_length="auto")
    cfg.validate()


def test_a_class_declaration_replaces_the_rllib_one():
    """Uncertainty declares its own lr (the logistic model's step size)."""
    from rllib_fair.rllib.rllib_settings import check_rllib_settings
    from rllib_fair.settings import collect

    cls = get_config_class("Uncertainty")
    own = collect(cls)[0]["lr"]
    cfg = cls().environment(ALGORITHMS["Uncertainty"].smoke_env)
    cfg.lr = -1.0
    check_rllib_settings(cfg)  # the RLlib declaration of lr is not applied ...
    assert own.problem(-1.0) is not None  # ... the class's own (checked by check_object) is
