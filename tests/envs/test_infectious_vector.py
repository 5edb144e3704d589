"""The native vector Infectious envs equal SyncVectorEnv over single copies, bit for bit."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.envs.infectious import N_NODES, InfectiousEnv, InfectiousHardEnv
from rllib_fair.envs.infectious_vector import InfectiousHardVectorEnv, InfectiousVectorEnv
from tests.envs.test_lending_vector import _assert_same

PAIRS = [(InfectiousEnv, InfectiousVectorEnv), (InfectiousHardEnv, InfectiousHardVectorEnv)]


@pytest.mark.parametrize(("single", "vector"), PAIRS, ids=["Infectious", "InfectiousHard"])
@pytest.mark.parametrize(
    ("n", "kwargs", "seed"),
    [
        (1, {}, 0),
        (4, {"max_steps": 7}, 7),  # copies end and autoreset many times
        (3, {"max_steps": 60, "recovery_prob": 0.3, "tau": 0.2}, 1),
        (5, {"max_steps": 30, "burn_in": 3, "initial_infected": 33}, 3),
        (8, {"max_steps": 400, "relapse_prob": 0.05}, 4),  # mostly no resetting copy
        (4, {"max_steps": 9, "horizon_terminal": True}, 5),  # ends are terminations
    ],
)
def test_same_trajectories_as_sync_vector_env(single, vector, n, kwargs, seed):
    ref = gym.vector.SyncVectorEnv([lambda: single(**kwargs) for _ in range(n)])
    ours = vector(n, **kwargs)
    _assert_same(ours.reset(seed=seed), ref.reset(seed=seed), "reset")
    rng = np.random.default_rng(seed)
    ends = 0
    states = rng.integers(0, 3, size=N_NODES)
    for t in range(1_500):  # > 1024 uniform rows per copy: the buffer refills
        actions = rng.integers(0, N_NODES + 1, size=n)
        out, exp = ours.step(actions), ref.step(actions)
        _assert_same(out, exp, f"step {t}")
        ends += int(np.sum(exp[2] | exp[3]))
        if t == 700:  # a reset without a seed keeps every copy's stream
            _assert_same(ours.reset(), ref.reset(), "reset(None)")
        if t == 1_100:  # given health states, as options
            options = {"health_states": states}
            _assert_same(ours.reset(options=options), ref.reset(options=options), "options")
    assert ends > n  # the episodes really ended and restarted
    assert ours.single_observation_space == ref.single_observation_space
    assert ours.observation_space == ref.observation_space
    assert ours.action_space == ref.action_space
    for i, env in enumerate(ref.envs):
        np.testing.assert_array_equal(ours._state[i], env.unwrapped.health_states)


@pytest.mark.parametrize(
    ("env_id", "cls"),
    [
        ("fair/Infectious-v0", InfectiousVectorEnv),
        ("fair/InfectiousHard-v0", InfectiousHardVectorEnv),
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
        (lambda: InfectiousVectorEnv(0), r"num_envs=0: expected a positive integer"),
        (lambda: InfectiousVectorEnv(2, tau=2.0), r"tau=2"),
        (lambda: InfectiousVectorEnv(2).step(np.array([0, 1])), r"before reset"),
        (lambda: InfectiousVectorEnv(2).reset(options={"nope": 1}), r"options: unknown"),
        (
            lambda: InfectiousVectorEnv(2).reset(options={"health_states": [3] * N_NODES}),
            r"health_states",
        ),
    ],
)
def test_bad_input_is_a_clear_error(call, match):
    with pytest.raises((ValueError, RuntimeError), match=match):
        call()


def test_bad_actions_are_rejected():
    env = InfectiousVectorEnv(2)
    env.reset(seed=0)
    for bad in (np.array([0, N_NODES + 1]), np.array([-1, 0]), np.array([1]), np.array([0.0, 1.0])):
        with pytest.raises(ValueError, match="actions"):
            env.step(bad)
