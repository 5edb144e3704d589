"""The native vector SchoolAdmission env equals SyncVectorEnv over single copies, bit for bit."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.envs.school_admission import SchoolAdmissionEnv
from rllib_fair.envs.school_admission_vector import SchoolAdmissionVectorEnv
from tests.envs.test_lending_vector import _assert_same


@pytest.mark.parametrize(
    ("n", "kwargs", "seed", "steps"),
    [
        (1, {"max_steps": 40, "n_applicants": 30}, 0, 1_500),
        (4, {"max_steps": 25, "n_applicants": 20}, 7, 1_500),  # many autoresets
        # a small resource: accepted failures end the episode (terminated)
        (3, {"max_steps": 300, "n_applicants": 40, "starting_resource": 2.0}, 1, 1_500),
        (5, {"max_steps": 30, "n_applicants": 25, "obs_group": False, "cost": 0.2}, 3, 1_500),
        (4, {"max_steps": 50, "n_applicants": 15, "gain": 1.0}, 5, 1_500),
        (3, {"max_steps": 50, "n_applicants": 15, "gain": 0.0, "group_probs": [0.9, 0.1]}, 6, 800),
        (8, {"max_steps": 400}, 4, 1_000),  # the default pool of 4000 applicants
    ],
)
def test_same_trajectories_as_sync_vector_env(n, kwargs, seed, steps):
    ref = gym.vector.SyncVectorEnv([lambda: SchoolAdmissionEnv(**kwargs) for _ in range(n)])
    ours = SchoolAdmissionVectorEnv(n, **kwargs)
    _assert_same(ours.reset(seed=seed), ref.reset(seed=seed), "reset")
    rng = np.random.default_rng(seed)
    ends = 0
    for t in range(steps):  # > 1024 draws per copy: the uniform buffer refills
        actions = rng.integers(0, 2, size=n)
        out, exp = ours.step(actions), ref.step(actions)
        _assert_same(out, exp, f"step {t}")
        ends += int(np.sum(exp[2] | exp[3]))
        if t == steps // 2:  # a reset without a seed keeps every copy's stream
            _assert_same(ours.reset(), ref.reset(), "reset(None)")
    assert ends > n  # the episodes really ended and restarted
    assert ours.single_observation_space == ref.single_observation_space
    assert ours.observation_space == ref.observation_space
    for i, env in enumerate(ref.envs):  # the pools evolved alike (ageing, gains)
        np.testing.assert_array_equal(ours._pool_age[i], env.unwrapped.pool_ages)
        np.testing.assert_array_equal(ours._pool_gain[i], env.unwrapped.pool_gains == 1)
        np.testing.assert_array_equal(ours._pool_p[i], env.unwrapped.pass_probabilities)


def test_registered_as_vector_entry_point():
    env = gym.make_vec(
        "fair/SchoolAdmission-v0",
        num_envs=2,
        vectorization_mode="vector_entry_point",
        max_steps=10,
        n_applicants=30,
    )
    assert type(env) is SchoolAdmissionVectorEnv and env.num_envs == 2
    assert env.spec_env.max_steps == 10 and env.spec_env.n_applicants == 30


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: SchoolAdmissionVectorEnv(0), r"num_envs=0: expected a positive integer"),
        (lambda: SchoolAdmissionVectorEnv(2, gain=2.0), r"gain=2"),
        (lambda: SchoolAdmissionVectorEnv(2).step(np.array([0, 1])), r"before reset"),
    ],
)
def test_bad_input_is_a_clear_error(call, match):
    with pytest.raises((ValueError, RuntimeError), match=match):
        call()


def test_bad_actions_are_rejected():
    env = SchoolAdmissionVectorEnv(2, n_applicants=10)
    env.reset(seed=0)
    for bad in (np.array([0, 2]), np.array([1]), np.array([0.5, 1.0])):
        with pytest.raises(ValueError, match="actions"):
            env.step(bad)
