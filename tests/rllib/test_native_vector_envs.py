"""RLlib samples the same episodes from every native vector env as from SyncVectorEnv."""

from __future__ import annotations

import pytest
import torch

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.envs import VECTOR_ENTRY_POINTS
from tests.rllib.test_env_runner import _assert_same_episodes, _runner

pytestmark = pytest.mark.ray


@pytest.mark.parametrize(
    ("env", "max_steps", "lean"),
    [
        # Box actions: RLlib's own sampling loop (the lean one takes Discrete actions)
        ("fair/Attention-v0", 30, False),
        ("fair/SchoolAdmission-v0", 40, True),
        ("fair/Infectious-v0", 20, True),  # an object array in the infos (newly_infected)
        ("fair/Replicator-v0", 25, False),  # a nested dict in the infos (disparities)
        ("fair/LendingDrift-v0", 40, True),
    ],
)
def test_native_and_sync_runners_sample_the_same_episodes(ray_session, env, max_steps, lean):
    assert env in VECTOR_ENTRY_POINTS
    runs = {}
    for native in (True, False):
        torch.manual_seed(0)
        runner = _runner(lean, 8, native, env=env, max_steps=max_steps)
        try:
            assert (type(runner.env.unwrapped).__module__.endswith("_vector")) is native
            runs[native] = [
                runner.sample(num_timesteps=200, explore=True),
                runner.sample(num_timesteps=120, explore=True),  # continues the chunks
            ]
        finally:
            runner.stop()
    for a, b in zip(runs[True], runs[False], strict=True):
        _assert_same_episodes(a, b)
