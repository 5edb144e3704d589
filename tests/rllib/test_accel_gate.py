"""The speed layer's one switch and its Ray-version gate.

On a Ray version the layer is not tested on, training runs RLlib's own classes and loops
(env runner loop, pipelines, learner loop and loss, module forward) and the process logs
one line saying so, once.
"""

from __future__ import annotations

import logging

import pytest
import torch
from ray.rllib.connectors.env_to_module.env_to_module_pipeline import EnvToModulePipeline
from ray.rllib.connectors.module_to_env.module_to_env_pipeline import ModuleToEnvPipeline

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.accel import gate
from rllib_fair.algorithms import get_config_class
from rllib_fair.rllib.env_runner import FairEnvRunner

torch.set_num_threads(1)

UNTESTED = "2.58.0"


@pytest.mark.parametrize(
    ("version", "tested"),
    [("2.60.0", True), ("2.60.12", True), ("2.59.1", False), ("2.6.0", False), ("3.0", False)],
)
def test_gate_knows_the_tested_versions(version, tested):
    assert gate.version_tested(version) is tested
    assert gate.TESTED_RAY_VERSIONS == ("2.60",)


def test_switch_off_or_untested_ray_means_inactive(monkeypatch, caplog):
    cfg = get_config_class("PPO")()
    assert gate.accel_active(cfg) is gate.version_tested()
    caplog.clear()  # on an untested Ray the call above has logged its line
    cfg.accel(enabled=False)
    monkeypatch.setattr(gate, "_logged_untested", False)
    with caplog.at_level(logging.WARNING, logger=gate.__name__):
        assert gate.accel_active(cfg) is False
    assert not caplog.records  # switched off by the user: nothing to say
    cfg.accel(enabled=True)
    monkeypatch.setattr(gate, "ray_version", lambda: UNTESTED)
    with caplog.at_level(logging.WARNING, logger=gate.__name__):
        assert gate.accel_active(cfg) is False
        assert gate.accel_active(cfg) is False
    (record,) = caplog.records  # once per process
    assert UNTESTED in record.getMessage() and "2.60.x" in record.getMessage()


@pytest.mark.ray
def test_untested_ray_trains_on_rllibs_own_path_and_says_so_once(ray_session, monkeypatch, caplog):
    from rllib_fair.accel.learner import LeanLearnerMixin

    monkeypatch.setattr(gate, "ray_version", lambda: UNTESTED)
    monkeypatch.setattr(gate, "_logged_untested", False)
    cfg = (
        get_config_class("PPO")()
        .environment("fair/Lending-v0", env_config={"max_steps": 100})
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    assert cfg.use_accel and cfg.lean_sampling and cfg.lean_learner  # asked for, yet off
    with caplog.at_level(logging.WARNING, logger=gate.__name__):
        algo = cfg.build_algo()
        try:
            result = algo.train()
            runner = algo.env_runner
            learner = algo.learner_group._learner
            assert type(runner) is FairEnvRunner
            assert type(runner._env_to_module) is EnvToModulePipeline
            assert type(runner._module_to_env) is ModuleToEnvPipeline
            assert not isinstance(learner, LeanLearnerMixin) and not learner.accel_loss
            module = learner.module["default_policy"].unwrapped()
            assert module.accel_on() is False and module._train_plan is False
            assert runner.module.accel_on() is False and runner.module._direct_plan is False
            assert "env_runners" in result and result["env_runners"]["num_env_steps_sampled"]
            assert "policy_loss" in result["learners"]["default_policy"]
        finally:
            algo.stop()
    lines = [r.getMessage() for r in caplog.records if r.name == gate.__name__]
    assert len(lines) == 1, lines
    assert f"Ray {UNTESTED} runs RLlib's own sampling and update path" in lines[0]
