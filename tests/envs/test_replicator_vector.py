"""The native vector Replicator envs equal SyncVectorEnv over single copies, bit for bit."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.envs.replicator import ReplicatorAdultEnv, ReplicatorEnv
from rllib_fair.envs.replicator_vector import ReplicatorAdultVectorEnv, ReplicatorVectorEnv
from tests.envs.test_lending_vector import _assert_same

PAIRS = [(ReplicatorEnv, ReplicatorVectorEnv), (ReplicatorAdultEnv, ReplicatorAdultVectorEnv)]


def _thresholds(rng, n):
    """Random thresholds, some outside [0, 1] (clipped) and some exactly 0 or 1."""
    a = rng.uniform(-0.2, 1.2, size=(n, 2))
    a[rng.random((n, 2)) < 0.1] = 1.0
    return a.astype(np.float32)


@pytest.mark.parametrize(("single", "vector"), PAIRS, ids=["Replicator", "ReplicatorAdult"])
@pytest.mark.parametrize(
    ("n", "kwargs", "seed"),
    [
        (1, {"max_steps": 40}, 0),
        (4, {"max_steps": 9, "reward_mode": "relaxed", "disparity": "eo"}, 7),
        (3, {"max_steps": 30, "reward_mode": "lagrangian", "loss": "qr", "disparity": "qr"}, 1),
        (5, {"max_steps": 20, "population_size": 50, "observation_mode": "distribution"}, 3),
        (2, {"max_steps": 15, "include_time": True, "terminate_at_horizon": False}, 5),
        (3, {"max_steps": 12, "loss": [0.3, 0.7], "disparity": "eop", "eta_rep": 0.5}, 6),
    ],
)
def test_same_trajectories_as_sync_vector_env(single, vector, n, kwargs, seed):
    ref = gym.vector.SyncVectorEnv([lambda: single(**kwargs) for _ in range(n)])
    ours = vector(n, **kwargs)
    _assert_same(ours.reset(seed=seed), ref.reset(seed=seed), "reset")
    rng = np.random.default_rng(seed)
    ends = 0
    for t in range(400):
        actions = _thresholds(rng, n)
        out, exp = ours.step(actions), ref.step(actions)
        _assert_same(out, exp, f"step {t}")
        ends += int(np.sum(exp[2] | exp[3]))
        if t == 150:  # a reset without a seed keeps every copy's stream
            _assert_same(ours.reset(), ref.reset(), "reset(None)")
        if t == 250:
            options = {"q": [0.2, 0.7], "group_shares": [0.3, 0.7]}
            _assert_same(ours.reset(options=options), ref.reset(options=options), "options")
    assert ends > n  # the episodes really ended and restarted
    assert ours.single_observation_space == ref.single_observation_space
    assert ours.observation_space == ref.observation_space
    assert ours.action_space == ref.action_space


def test_binned_gaussian_model_too():
    kwargs = {"bins": 16, "max_steps": 10}
    ref = gym.vector.SyncVectorEnv([lambda: ReplicatorEnv(**kwargs) for _ in range(3)])
    ours = ReplicatorVectorEnv(3, **kwargs)
    _assert_same(ours.reset(seed=2), ref.reset(seed=2), "reset")
    rng = np.random.default_rng(2)
    for t in range(60):
        actions = _thresholds(rng, 3)
        _assert_same(ours.step(actions), ref.step(actions), f"step {t}")


@pytest.mark.parametrize(
    ("env_id", "cls"),
    [
        ("fair/Replicator-v0", ReplicatorVectorEnv),
        ("fair/ReplicatorAdult-v0", ReplicatorAdultVectorEnv),
    ],
)
def test_registered_as_vector_entry_point(env_id, cls):
    env = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", max_steps=10)
    assert type(env) is cls and env.num_envs == 2
    assert env.spec_env.max_steps == 10
    assert type(env.spec_env) is cls.SINGLE_ENV


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: ReplicatorVectorEnv(0), r"num_envs=0: expected a positive integer"),
        (lambda: ReplicatorVectorEnv(2, disparity="x"), r"disparity='x'"),
        (lambda: ReplicatorVectorEnv(2).step(np.zeros((2, 2))), r"before reset"),
        (lambda: ReplicatorVectorEnv(2).reset(options={"nope": 1}), r"unknown keys"),
    ],
)
def test_bad_input_is_a_clear_error(call, match):
    with pytest.raises((ValueError, RuntimeError), match=match):
        call()


def test_bad_actions_are_rejected():
    env = ReplicatorVectorEnv(2)
    env.reset(seed=0)
    for bad in (np.zeros((2, 3)), np.zeros(2), np.array([[0.5, np.nan], [0.1, 0.2]])):
        with pytest.raises(ValueError, match="actions"):
            env.step(bad)
