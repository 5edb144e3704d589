"""One seeded stream of episodes per env runner: seeded, never replayed.

RLlib 2.60's ``SingleAgentEnvRunner`` passes the config seed to ``env.reset`` again at
the start of every ``sample(num_episodes=...)`` call, so a seeded run that samples whole
episodes trains on the same episode over and over. :class:`FairEnvRunner` seeds each env
once. These tests sample ``fair/Replicator-v0``, whose initial qualification rates are
drawn from the env's generator at every reset (continuous: two different resets never
give the same first observation by chance).
"""

from __future__ import annotations

import numpy as np
import pytest
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.algorithms import get_config_class
from rllib_fair.rllib.env_runner import FairEnvRunner, recreated_env_seed

pytestmark = pytest.mark.ray


def _config(seed: int, num_envs: int = 1, lean: bool = True):
    cfg = (
        get_config_class("PPO")()
        .environment("fair/Replicator-v0", env_config={"max_steps": 5})
        .env_runners(num_env_runners=0, num_envs_per_env_runner=num_envs)
        .accel(sampling=lean)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=seed)
    )
    cfg.validate()
    return cfg


def _runner(cfg) -> FairEnvRunner:
    """The runner the frozen config names (the lean loop's subclass where it is on)."""
    cfg.freeze()
    assert issubclass(cfg.env_runner_cls, FairEnvRunner)
    return cfg.env_runner_cls(config=cfg)


def _first_observations(episodes) -> list[bytes]:
    """The reset observation of every episode that starts in ``episodes``."""
    return [np.asarray(ep.get_observations(0)).tobytes() for ep in episodes if ep.t_started == 0]


def _stream(runner, calls: int, num_episodes: int | None = None, num_timesteps=None):
    firsts = []
    for _ in range(calls):
        episodes = runner.sample(
            num_episodes=num_episodes, num_timesteps=num_timesteps, explore=True
        )
        firsts += _first_observations(episodes)
    return firsts


@pytest.mark.parametrize("lean", [True, False], ids=["lean", "rllib_loop"])
@pytest.mark.parametrize("num_envs", [1, 3])
def test_whole_episode_samples_continue_one_seeded_stream(ray_session, num_envs, lean):
    runs = []
    for _ in range(2):
        runner = _runner(_config(seed=7, num_envs=num_envs, lean=lean))
        try:
            runs.append(_stream(runner, calls=3, num_episodes=num_envs))
        finally:
            runner.stop()
    first, second = runs
    assert len(first) == 3 * num_envs
    assert len(set(first)) == len(first), "an episode's randomness was replayed"
    assert first == second, "the same seed must give the same episodes"
    other = _runner(_config(seed=8, num_envs=num_envs, lean=lean))
    try:
        assert _stream(other, calls=1, num_episodes=num_envs)[0] != first[0]
    finally:
        other.stop()


def test_episode_and_timestep_sampling_share_the_stream(ray_session):
    """Mixing ``num_timesteps`` and ``num_episodes`` calls never goes back to the seed."""
    runner = _runner(_config(seed=3))
    try:
        firsts = _stream(runner, calls=2, num_timesteps=7)
        firsts += _stream(runner, calls=2, num_episodes=1)
        firsts += _stream(runner, calls=1, num_timesteps=7)
    finally:
        runner.stop()
    assert len(firsts) >= 6
    assert len(set(firsts)) == len(firsts)


def test_rllibs_own_runner_replays_the_seeded_episode(ray_session):
    """Why the fix exists: RLlib 2.60's runner reseeds at every whole-episode call.

    If this starts failing, RLlib fixed its runner and the override in
    :class:`FairEnvRunner` can be dropped for that Ray version.
    """
    runner = SingleAgentEnvRunner(config=_config(seed=7))
    try:
        firsts = _stream(runner, calls=3, num_episodes=1)
    finally:
        runner.stop()
    assert len(firsts) == 3 and len(set(firsts)) == 1


def test_recreated_env_is_seeded_from_the_seed_but_does_not_replay(ray_session):
    assert recreated_env_seed(7, 1) == 7
    assert recreated_env_seed(7, 2) == recreated_env_seed(7, 2) != 7
    assert recreated_env_seed(7, 2) != recreated_env_seed(7, 3)
    runs = []
    for _ in range(2):
        runner = _runner(_config(seed=7))
        try:
            firsts = _stream(runner, calls=1, num_episodes=1)
            runner.make_env()  # what a failed env step or reset does
            firsts += _stream(runner, calls=2, num_episodes=1)
        finally:
            runner.stop()
        runs.append(firsts)
    assert len(set(runs[0])) == 3
    assert runs[0] == runs[1]


def test_runner_state_carries_the_envs_stream(ray_session):
    """A runner restored from another's state samples the same next episodes."""
    from rllib_fair.rllib.env_runner import FAIR_ENV_STATE

    first = _runner(_config(seed=7, num_envs=2))
    second = _runner(_config(seed=7, num_envs=2))
    try:
        _stream(first, calls=2, num_episodes=2)
        state = first.get_state()
        assert FAIR_ENV_STATE in state
        # weight and connector syncs name their components: no env state travels
        assert FAIR_ENV_STATE not in first.get_state(components=["rl_module"])
        second.set_state(state)
        assert _stream(second, calls=2, num_episodes=2) == _stream(first, calls=2, num_episodes=2)
    finally:
        first.stop()
        second.stop()


def test_runner_state_of_another_role_is_not_applied(ray_session):
    """An evaluation runner (or another index) keeps its own stream."""
    source = _runner(_config(seed=7))
    target = _runner(_config(seed=7))
    try:
        _stream(source, calls=2, num_episodes=1)
        state = source.get_state()
        from rllib_fair.rllib.env_runner import FAIR_ENV_STATE

        state[FAIR_ENV_STATE]["in_evaluation"] = True
        target.set_state(state)
        # not applied: the target starts its own stream at the seed
        fresh = _runner(_config(seed=7))
        try:
            own = _stream(target, calls=1, num_episodes=1)
            assert own == _stream(fresh, calls=1, num_episodes=1)
        finally:
            fresh.stop()
    finally:
        source.stop()
        target.stop()
