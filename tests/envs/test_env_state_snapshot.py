"""Every env's attributes can be saved and restored into another instance.

``FairEnvRunner`` checkpoints its envs with :func:`snapshot_envs` and restores them into
the envs of a new runner with :func:`restore_envs`, so a restored run continues the
stream of episodes. This checks, for every registered env, that the snapshot pickles
and that the restored env then resets and steps exactly as the original.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.envs.base import restore_envs, snapshot_envs


def _ids() -> list[str]:
    return sorted(env_id for env_id in gym.registry if env_id.startswith("fair/"))


def _same(a, b) -> None:
    if isinstance(a, dict):
        assert set(a) == set(b)
        for key in a:
            _same(a[key], b[key])
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("env_id", _ids())
def test_restored_attributes_continue_the_env_exactly(env_id):
    original = gym.make(env_id)
    original.reset(seed=11)
    original.action_space.seed(0)
    for _ in range(3):
        original.step(original.action_space.sample())
    original.reset()  # mid-stream, after an episode start
    snapshot = snapshot_envs([original.unwrapped])

    restored = gym.make(env_id)
    restored.reset(seed=12345)  # another stream, replaced by the snapshot
    restore_envs([restored.unwrapped], snapshot)

    obs_a, _ = original.reset()
    obs_b, _ = restored.reset()
    _same(obs_a, obs_b)
    actions = original.action_space
    actions.seed(1)
    for _ in range(5):
        action = actions.sample()
        a = original.step(action)
        b = restored.step(action)
        _same(a[0], b[0])
        assert a[1:4] == b[1:4]
        if a[2] or a[3]:
            break


def test_snapshot_of_another_count_is_refused():
    env = gym.make("fair/Lending-v0").unwrapped
    with pytest.raises(ValueError, match="env snapshot: 1 envs saved, 2 to restore"):
        restore_envs([env, env], snapshot_envs([env]))
