"""Replicator episode metrics of FairnessMetricsCallback (Yin et al. 2023 envs only)."""

from __future__ import annotations

from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

import rllib_fair  # noqa: F401
from rllib_fair.algorithms import get_config_class
from rllib_fair.rllib import keys
from rllib_fair.rllib.callbacks import FairnessMetricsCallback


def _episode(seed: int, horizon: int, **env_kwargs):
    env = gym.make("fair/Replicator-v0", max_steps=horizon, **env_kwargs)
    obs, info = env.reset(seed=seed)
    ep = SingleAgentEpisode(observations=[obs], infos=[info], len_lookback_buffer=0)
    rng = np.random.default_rng(seed)
    infos = []
    while not ep.is_done:
        a = rng.random(2).astype(np.float32)
        obs, r, term, trunc, info = env.step(a)
        ep.add_env_step(obs, a, r, infos=info, terminated=term, truncated=trunc)
        infos.append(info)
    return ep, infos


def test_replicator_episode_means_over_chunks():
    cfg = get_config_class("PPO")().environment("fair/Replicator-v0", env_config={"max_steps": 30})
    runner = SimpleNamespace(config=cfg)
    cb = FairnessMetricsCallback()
    eps = [_episode(seed, 30) for seed in (1, 2)]
    ml = MetricsLogger()
    ep, _ = eps[0]
    # First episode in two chunks (carried between calls), the second whole.
    cb.on_sample_end(env_runner=runner, metrics_logger=ml, samples=[ep.slice(slice(0, 12))])
    assert (keys.REPLICATOR, keys.REPLICATOR_LOSS_MEAN) not in ml
    cb.on_sample_end(
        env_runner=runner, metrics_logger=ml, samples=[ep.slice(slice(12, 30)), eps[1][0]]
    )
    per_episode = []
    for _, infos in eps:
        loss = np.array([i["loss"] for i in infos])
        disp = np.array([i["disparity"] for i in infos])
        qn = np.array([i["q_next"] for i in infos])
        per_episode.append(
            {
                keys.REPLICATOR_LOSS_MEAN: loss.mean(),
                keys.REPLICATOR_DISPARITY_MEAN: disp.mean(),
                keys.REPLICATOR_CUMULATIVE_LOSS: loss.sum(),
                keys.REPLICATOR_CUMULATIVE_DISPARITY: disp.sum(),
                keys.REPLICATOR_Q_MEAN: qn.mean(),
                keys.REPLICATOR_Q_GAP: np.abs(qn[:, 0] - qn[:, 1]).mean(),
                keys.REPLICATOR_REWARD_RETURN: (1.0 - loss).sum(),
            }
        )
    for name in per_episode[0]:
        want = np.mean([p[name] for p in per_episode])
        assert ml.peek((keys.REPLICATOR, name)) == pytest.approx(want, rel=1e-12), name
    assert not cb._carries  # both episodes finished: nothing is carried


def test_reward_return_is_the_env_reward_under_a_relaxed_reward():
    """R-TD3's env pays the relaxed reward; reward_return still sums the env's r = 1 - L."""
    cfg = get_config_class("PPO")().environment("fair/Replicator-v0", env_config={"max_steps": 30})
    cb = FairnessMetricsCallback()
    ep, infos = _episode(3, 30, reward_mode="relaxed")
    ml = MetricsLogger()
    cb.on_sample_end(env_runner=SimpleNamespace(config=cfg), metrics_logger=ml, samples=[ep])
    env_return = sum(1.0 - i["loss"] for i in infos)
    got = ml.peek((keys.REPLICATOR, keys.REPLICATOR_REWARD_RETURN))
    assert got == pytest.approx(env_return, rel=1e-12)
    assert abs(got - ep.get_return()) > 1e-3  # the episode's own return is the relaxed one


def test_other_envs_log_no_replicator_keys():
    cfg = get_config_class("PPO")().environment("fair/Lending-v0", env_config={"max_steps": 20})
    env = gym.make("fair/Lending-v0", max_steps=20)
    obs, info = env.reset(seed=0)
    ep = SingleAgentEpisode(observations=[obs], infos=[info], len_lookback_buffer=0)
    while not ep.is_done:
        obs, r, term, trunc, info = env.step(1)
        ep.add_env_step(obs, 1, r, infos=info, terminated=term, truncated=trunc)
    ml = MetricsLogger()
    FairnessMetricsCallback().on_sample_end(
        env_runner=SimpleNamespace(config=cfg), metrics_logger=ml, samples=[ep]
    )
    assert (keys.REPLICATOR, keys.REPLICATOR_LOSS_MEAN) not in ml
