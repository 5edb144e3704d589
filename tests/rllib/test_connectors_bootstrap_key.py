"""RLlib still marks the bootstrap step under the key ``rllib_fair.accel.shared_data`` reads.

The fairness and qualification columns count one step fewer per episode chunk when
RLlib's ``AddOneTsToEpisodesAndTruncate`` appended its artificial bootstrap step; they
learn that from a private ``shared_data`` key. A Ray release that renames it would make
every chunk one step too long, silently, so this test runs RLlib's piece on a real
episode and reads the flag back.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from ray.rllib.connectors.learner.add_one_ts_to_episodes_and_truncate import (
    AddOneTsToEpisodesAndTruncate,
)
from ray.rllib.env.single_agent_episode import SingleAgentEpisode

import rllib_fair  # noqa: F401  (registers the envs)
from rllib_fair.accel.shared_data import bootstrap_step_added


def _chunk(steps: int) -> SingleAgentEpisode:
    env = gym.make("fair/Lending-v0")
    obs, info = env.reset(seed=0)
    ep = SingleAgentEpisode(observations=[obs], infos=[info], len_lookback_buffer=0)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        a = int(rng.integers(2))
        obs, r, term, trunc, info = env.step(a)
        ep.add_env_step(obs, a, r, infos=info, terminated=term, truncated=trunc)
    return ep


def test_rllib_sets_the_bootstrap_key_and_pads_the_chunk():
    ep = _chunk(5)
    shared: dict = {}
    assert not bootstrap_step_added(shared) and not bootstrap_step_added(None)
    AddOneTsToEpisodesAndTruncate()(rl_module=None, batch={}, episodes=[ep], shared_data=shared)
    assert bootstrap_step_added(shared)
    assert len(ep) == 6  # the five real steps and the appended bootstrap step
