"""The native vector LendingDrift env equals SyncVectorEnv over single copies, bit for bit."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.envs.lending_drift import LendingDriftEnv
from rllib_fair.envs.lending_drift_vector import LendingDriftVectorEnv
from tests.envs.test_lending_vector import _assert_same


@pytest.mark.parametrize(
    ("n", "kwargs", "seed"),
    [
        (1, {"max_steps": 40}, 0),
        (4, {"max_steps": 25, "history_window": 7}, 7),  # the window fills and slides
        (3, {"max_steps": 300, "starting_cash": 3.0, "setting": 2}, 1),  # broke: terminated
        (5, {"max_steps": 30, "obs_bin": False, "obs_group": False, "setting": 3}, 3),
        (4, {"max_steps": 60, "obs_history": False, "time_limit_terminates": True}, 5),
        (2, {"max_steps": 50, "individuals_per_group": 20, "group_probs": (0.2, 0.8)}, 6),
        (8, {"max_steps": 400}, 4),  # mostly steps without a resetting copy
    ],
)
def test_same_trajectories_as_sync_vector_env(n, kwargs, seed):
    ref = gym.vector.SyncVectorEnv([lambda: LendingDriftEnv(**kwargs) for _ in range(n)])
    ours = LendingDriftVectorEnv(n, **kwargs)
    _assert_same(ours.reset(seed=seed), ref.reset(seed=seed), "reset")
    rng = np.random.default_rng(seed)
    ends = 0
    for t in range(1_500):  # > 1024 draws per copy: the uniform buffer refills
        actions = rng.integers(0, 2, size=n)
        out, exp = ours.step(actions), ref.step(actions)
        _assert_same(out, exp, f"step {t}")
        ends += int(np.sum(exp[2] | exp[3]))
        if t == 700:  # a reset without a seed keeps every copy's stream
            _assert_same(ours.reset(), ref.reset(), "reset(None)")
    assert ends > n  # the episodes really ended and restarted
    assert ours.single_observation_space == ref.single_observation_space
    assert ours.observation_space == ref.observation_space
    for i, env in enumerate(ref.envs):  # the populations drifted alike
        np.testing.assert_array_equal(ours._bins[i], env.unwrapped.population_bins())


def test_registered_as_vector_entry_point():
    env = gym.make_vec(
        "fair/LendingDrift-v0", num_envs=2, vectorization_mode="vector_entry_point", max_steps=10
    )
    assert type(env) is LendingDriftVectorEnv and env.num_envs == 2
    assert env.spec_env.max_steps == 10


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: LendingDriftVectorEnv(0), r"num_envs=0: expected a positive integer"),
        (lambda: LendingDriftVectorEnv(2, setting=7), r"setting=7"),
        (lambda: LendingDriftVectorEnv(2).step(np.array([0, 1])), r"before reset"),
    ],
)
def test_bad_input_is_a_clear_error(call, match):
    with pytest.raises((ValueError, RuntimeError), match=match):
        call()


def test_bad_actions_are_rejected():
    env = LendingDriftVectorEnv(2)
    env.reset(seed=0)
    for bad in (np.array([0, 2]), np.array([1]), np.array([0.5, 1.0])):
        with pytest.raises(ValueError, match="actions"):
            env.step(bad)
