"""Stock RLlib algorithms on the fair/* ids: remote env runners, Tune trials, vector envs.

Only ``import rllib_fair`` in the driver: no env runner class, callback or creator of ours
is configured, so a remote runner or a Tune trial never imports the package by itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (the only set-up a user does)
from rllib_fair.envs import ENV_IDS, VECTOR_ENTRY_POINTS
from rllib_fair.envs.lending import LendingEnv
from rllib_fair.envs.lending_vector import LendingVectorEnv
from rllib_fair.envs.rllib_registry import FairEnvCreator

pytestmark = pytest.mark.ray


def _trained_once(config) -> dict:
    algo = config.build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    # RLlib logs a crashed env runner and drops its metrics instead of raising
    assert "env_runners" in result, "an env runner crashed"
    assert result["env_runners"]["num_env_steps_sampled"] > 0
    return result


def test_stock_ppo_with_a_remote_env_runner(ray_session):
    from ray.rllib.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment("fair/Lending-v0", env_config={"max_steps": 50})
        .env_runners(num_env_runners=1)
        .training(train_batch_size_per_learner=100, minibatch_size=50, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    result = _trained_once(config)
    assert result["env_runners"]["num_env_steps_sampled"] == 100
    # env_config reached the constructor: every episode is 50 steps long
    assert result["env_runners"]["episode_len_mean"] == 50


STOCK_REMOTE = [
    # (algorithm config, env, max_steps, rollout fragment, .training() settings)
    ("appo.APPOConfig", "fair/Lending-v0", 20, 20, {"train_batch_size_per_learner": 40}),
    (
        "dqn.DQNConfig",
        "fair/Lending-v0",
        20,
        8,
        {"train_batch_size_per_learner": 8, "num_steps_sampled_before_learning_starts": 8},
    ),
    (  # a Box action env
        "sac.SACConfig",
        "fair/Replicator-v0",
        10,
        8,
        {"train_batch_size_per_learner": 8, "num_steps_sampled_before_learning_starts": 8},
    ),
]


@pytest.mark.parametrize(
    "config_path,env,max_steps,fragment,training",
    STOCK_REMOTE,
    ids=[row[0].split(".")[1] for row in STOCK_REMOTE],
)
def test_stock_algorithm_with_a_remote_env_runner(
    ray_session, config_path, env, max_steps, fragment, training
):
    import importlib

    module, _, name = config_path.rpartition(".")
    config_class = getattr(importlib.import_module(f"ray.rllib.algorithms.{module}"), name)
    config = (
        config_class()
        .environment(env, env_config={"max_steps": max_steps})
        .env_runners(num_env_runners=1, rollout_fragment_length=fragment)
        .training(**training)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=fragment)
        .debugging(seed=0)
    )
    _trained_once(config)


def test_stock_ppo_in_a_tune_trial(ray_session, tmp_path):
    from ray import tune
    from ray.rllib.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment("fair/Lending-v0", env_config={"max_steps": 50})
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=100, minibatch_size=50, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    tuner = tune.Tuner(
        "PPO",
        param_space=config,
        run_config=tune.RunConfig(
            storage_path=str(tmp_path), stop={"training_iteration": 1}, verbose=0
        ),
    )
    results = tuner.fit()
    assert results.errors == []
    result = results[0].metrics
    assert result["training_iteration"] == 1
    assert result["env_runners"]["num_env_steps_sampled"] == 100


def _episodes(env: str, mode: str, num_envs: int) -> list:
    import torch
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    config = (
        PPOConfig()
        .environment(env, env_config={"max_steps": 13})
        .env_runners(
            num_env_runners=0, num_envs_per_env_runner=num_envs, gym_env_vectorize_mode=mode
        )
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=3)
    )
    torch.manual_seed(0)
    runner = SingleAgentEnvRunner(config=config)
    try:
        episodes = runner.sample(num_timesteps=60, explore=True)
        spec_id = runner.env.unwrapped.spec.id
    finally:
        runner.stop()
    return spec_id, episodes


def _same(a, b, where) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _same(a[key], b[key], (*where, key))
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=str(where))


@pytest.mark.parametrize(("mode", "num_envs"), [("sync", 3), ("vector_entry_point", 4)])
def test_tune_creator_gives_the_episodes_of_the_plain_gymnasium_id(ray_session, mode, num_envs):
    # "fair/Lending-v0" resolves through Tune's registry (RLlib's own env id);
    # "rllib_fair:fair/Lending-v0" bypasses it (gymnasium imports the module)
    with warnings.catch_warnings(record=True) as caught:
        via_tune, tune_eps = _episodes("fair/Lending-v0", mode, num_envs)
        via_tune_again, _ = _episodes("fair/Lending-v0", mode, num_envs)
    # RLlib re-registers its private id for the second runner: that warning is ignored
    assert not [w for w in caught if "Overriding environment" in str(w.message)]
    via_gym, gym_eps = _episodes("rllib_fair:fair/Lending-v0", mode, num_envs)
    assert via_tune == via_tune_again == "rllib-single-agent-env-v0"
    assert via_gym == "fair/Lending-v0"
    assert len(tune_eps) == len(gym_eps) > num_envs  # episodes end and restart
    for k, (a, b) in enumerate(zip(tune_eps, gym_eps, strict=True)):
        for getter in ("get_observations", "get_actions", "get_rewards"):
            np.testing.assert_array_equal(getattr(a, getter)(), getattr(b, getter)())
        assert (a.is_terminated, a.is_truncated) == (b.is_terminated, b.is_truncated), k
        infos_a, infos_b = a.get_infos(), b.get_infos()
        assert len(infos_a) == len(infos_b), k
        for t, (ia, ib) in enumerate(zip(infos_a, infos_b, strict=True)):
            _same(ia, ib, (k, t))


def test_every_id_is_a_tune_env_name_with_our_creator(ray_session):
    from ray.tune.registry import ENV_CREATOR, _global_registry

    for env_id in ENV_IDS:
        assert _global_registry.get(ENV_CREATOR, env_id) == FairEnvCreator(env_id), env_id


def test_creator_builds_the_env_or_its_native_vector_version():
    single = FairEnvCreator("fair/Lending-v0")({"max_steps": 7})
    assert type(single) is LendingEnv and single.max_steps == 7
    vector = FairEnvCreator("fair/Lending-v0")({"max_steps": 7, "num_envs": 3})
    assert type(vector) is LendingVectorEnv and vector.num_envs == 3
    assert set(VECTOR_ENTRY_POINTS) < set(ENV_IDS)
    with pytest.raises(ValueError, match=r"vector_entry_point.*fair/QuarterlyLending-v0.*'sync'"):
        FairEnvCreator("fair/QuarterlyLending-v0")({"num_envs": 2})
    with pytest.raises(ValueError, match=r"env_id='fair/Nope-v0': unknown, expected one of"):
        FairEnvCreator("fair/Nope-v0")
    # the plain gymnasium id is unchanged
    assert gym.make("fair/Lending-v0").spec.id == "fair/Lending-v0"


_SCRIPT = """
import sys
import rllib_fair
assert "ray" not in sys.modules and "torch" not in sys.modules, "import rllib_fair imported ray"
import ray
from ray.tune.registry import ENV_CREATOR, _global_registry
# registered when ray.tune.registry was imported, before ray.init
assert _global_registry.contains(ENV_CREATOR, "fair/Lending-v0")
# the import hook is gone and the module keeps its own loader
assert not [f for f in sys.meta_path if type(f).__name__ == "_AfterImport"]
assert type(sys.modules["ray.tune.registry"].__loader__).__name__ == "SourceFileLoader"
for cycle in range(2):
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")
    # in the cluster's store (not only in the driver) in every session
    assert _global_registry.contains(ENV_CREATOR, "fair/Replicator-v0"), cycle
    ray.shutdown()
print("ok")
"""


def test_registered_before_and_after_every_ray_init_without_eager_ray_import():
    env = {"RAY_AUTH_MODE": "disabled", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("ok")
