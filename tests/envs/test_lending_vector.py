"""The native vector Lending envs equal SyncVectorEnv over single copies, bit for bit."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.envs.lending import LendingEnv
from rllib_fair.envs.lending_fico import LendingFICOEnv
from rllib_fair.envs.lending_fico_vector import LendingFICOVectorEnv
from rllib_fair.envs.lending_hard import LendingHardEnv
from rllib_fair.envs.lending_vector import LendingHardVectorEnv, LendingVectorEnv


def _assert_same(ours, ref, where: str) -> None:
    if isinstance(ref, dict):
        assert ours.keys() == ref.keys(), where
        for key in ref:
            _assert_same(ours[key], ref[key], f"{where}.{key}")
        return
    if isinstance(ref, (tuple, list)):
        assert len(ours) == len(ref), where
        for i, (o, r) in enumerate(zip(ours, ref, strict=True)):
            _assert_same(o, r, f"{where}[{i}]")
        return
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.dtype == ref.dtype, (where, ours.dtype, ref.dtype)
    np.testing.assert_array_equal(ours, ref, err_msg=where)


@pytest.mark.parametrize(
    ("single", "vector"),
    [(LendingEnv, LendingVectorEnv), (LendingHardEnv, LendingHardVectorEnv)],
    ids=["Lending", "LendingHard"],
)
@pytest.mark.parametrize(
    ("n", "kwargs", "seed"),
    [
        (1, {"max_steps": 40}, 0),
        (4, {"max_steps": 25}, 7),  # copies end and autoreset many times
        (3, {"max_steps": 60, "starting_cash": 3.0}, 1),  # bankruptcy: terminated
        (5, {"max_steps": 30, "obs_tpr": False, "cluster_shift_increment": 0.2}, 3),
        (8, {"max_steps": 400}, 4),  # mostly steps without a resetting copy
    ],
)
def test_same_trajectories_as_sync_vector_env(single, vector, n, kwargs, seed):
    _compare_with_sync(single, vector, n, kwargs, seed)


@pytest.mark.parametrize(
    ("n", "kwargs", "seed"),
    [
        (1, {"max_steps": 40, "n_applicants": 50}, 0),
        (4, {"max_steps": 25, "n_applicants": 30}, 7),  # copies end and autoreset often
        (3, {"max_steps": 300, "starting_resource": 2.0, "n_applicants": 40}, 1),  # broke
        (5, {"max_steps": 30, "obs_group": False, "cost": 0.3}, 3),
        (8, {"max_steps": 400, "n_applicants": 200}, 4),
    ],
)
def test_fico_same_trajectories_as_sync_vector_env(n, kwargs, seed):
    _compare_with_sync(LendingFICOEnv, LendingFICOVectorEnv, n, kwargs, seed)


def _compare_with_sync(single, vector, n, kwargs, seed):
    ref = gym.vector.SyncVectorEnv([lambda: single(**kwargs) for _ in range(n)])
    ours = vector(n, **kwargs)
    _assert_same(ours.reset(seed=seed), ref.reset(seed=seed), "reset")
    rng = np.random.default_rng(seed)
    ends = 0
    for t in range(3_000):  # > LendingEnv._UNIFORM_BLOCK draws per copy: buffer refills
        actions = rng.integers(0, 2, size=n)
        out, exp = ours.step(actions), ref.step(actions)
        _assert_same(out, exp, f"step {t}")
        ends += int(np.sum(exp[2] | exp[3]))
        if t == 1_500:  # a reset without a seed keeps every copy's stream
            _assert_same(ours.reset(), ref.reset(), "reset(None)")
    assert ends > n  # the episodes really ended and restarted
    assert ours.single_observation_space == ref.single_observation_space
    assert ours.observation_space == ref.observation_space


def test_rllibs_info_conversion_gives_the_single_env_infos():
    from gymnasium.wrappers.vector import DictInfoToList

    ref = DictInfoToList(gym.vector.SyncVectorEnv([lambda: LendingEnv() for _ in range(3)]))
    ours = DictInfoToList(LendingVectorEnv(3))
    _assert_same(ours.reset(seed=5)[1], ref.reset(seed=5)[1], "reset infos")
    for t in range(50):
        out, exp = ours.step(np.array([1, 0, 1])), ref.step(np.array([1, 0, 1]))
        assert len(out[4]) == 3
        for i in range(3):
            _assert_same(out[4][i], exp[4][i], f"step {t} env {i}")


@pytest.mark.parametrize(
    ("env_id", "cls"),
    [
        ("fair/Lending-v0", LendingVectorEnv),
        ("fair/LendingHard-v0", LendingHardVectorEnv),
        ("fair/LendingFICO-v0", LendingFICOVectorEnv),
    ],
)
def test_registered_as_vector_entry_point(env_id, cls):
    env = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", max_steps=10)
    assert type(env) is cls and env.num_envs == 2
    assert env.spec_env.max_steps == 10
    assert type(env.spec_env) is getattr(cls, "SINGLE_ENV", LendingFICOEnv)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: LendingVectorEnv(0), r"num_envs=0: expected a positive integer"),
        (lambda: LendingVectorEnv(2, max_steps=0), r"max_steps"),
        (lambda: LendingVectorEnv(2).step(np.array([0, 1])), r"before reset"),
    ],
)
def test_bad_input_is_a_clear_error(call, match):
    with pytest.raises((ValueError, RuntimeError), match=match):
        call()


@pytest.mark.parametrize("cls", [LendingVectorEnv, LendingFICOVectorEnv])
def test_bad_actions_are_rejected(cls):
    env = cls(2)
    env.reset(seed=0)
    for bad in (np.array([0, 2]), np.array([1]), np.array([0.5, 1.0])):
        with pytest.raises(ValueError, match="actions"):
            env.step(bad)
