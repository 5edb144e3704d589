"""The fairness columns connector: alignment with the transition that produced the info.

No Ray instance is started: episodes are built by hand from real env rollouts.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate
from ray.rllib.env.single_agent_episode import SingleAgentEpisode

import rllib_fair  # noqa: F401
from rllib_fair.fairness.counts import NUM_FIELDS, SELECTED, SELECTED_QUALIFIED
from rllib_fair.rllib import keys
from rllib_fair.rllib.connectors import AddFairnessColumns, fairness_columns_from_infos


def rollout(env_id: str, n: int, seed: int = 0):
    """Returns (episode, step_infos, actions) for n steps of a seeded random policy."""
    env = gym.make(env_id)
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    episode = SingleAgentEpisode(observations=[obs], infos=[info], len_lookback_buffer=0)
    step_infos, actions = [], []
    for _ in range(n):
        a = int(rng.integers(2))
        obs, r, term, trunc, info = env.step(a)
        episode.add_env_step(obs, a, r, infos=info, terminated=term, truncated=trunc)
        step_infos.append(info)
        actions.append(a)
    return episode, step_infos, actions


def collect(batch: dict, column: str, episode) -> np.ndarray:
    items = batch[column][(episode.id_,)]
    return np.concatenate([np.asarray(x) for x in items])


@pytest.mark.parametrize("env_id", ["fair/Lending-v0", "fair/LendingFICO-v0"])
def test_row_t_is_the_info_returned_by_step_t(env_id):
    episode, step_infos, actions = rollout(env_id, 25)
    batch = AddFairnessColumns()(rl_module=None, batch={}, episodes=[episode], shared_data={})
    counts = collect(batch, keys.COL_COUNTS, episode)
    assert counts.shape == (25, NUM_FIELDS, 2)
    for t, info in enumerate(step_infos):
        np.testing.assert_allclose(counts[t], info["fairness"], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(collect(batch, keys.COL_DECISION, episode), actions)
    np.testing.assert_array_equal(
        collect(batch, keys.COL_GROUP, episode), [i["group"] for i in step_infos]
    )
    np.testing.assert_array_equal(
        collect(batch, keys.COL_LABEL, episode), [i["label"] for i in step_infos]
    )
    # Lenders see the repayment of accepted loans only.
    np.testing.assert_array_equal(collect(batch, keys.COL_LABEL_OBSERVED, episode), actions)
    # The selected row of the counts is the action taken in that very transition.
    np.testing.assert_array_equal(counts[:, SELECTED].sum(axis=1), actions)
    assert collect(batch, keys.COL_VALID, episode).all()


def test_builtin_infos_connector_is_off_by_one_and_ours_is_not():
    """Documents why the connector exists: RLlib pairs obs[t] with infos[t]."""
    episode, step_infos, actions = rollout("fair/Lending-v0", 10)
    builtin = episode.get_infos(slice(0, len(episode)))
    assert builtin[0]["decision"] == -1  # the reset info, not the first transition's
    assert [i["decision"] for i in builtin[1:]] == actions[:-1]
    ours = fairness_columns_from_infos(episode.get_infos(slice(1, len(episode) + 1)), 2)
    assert list(ours[keys.COL_DECISION]) == actions


def test_artificial_bootstrap_step_gets_zeros():
    episode, step_infos, actions = rollout("fair/Lending-v0", 12)
    shared: dict = {}
    batch: dict = {}
    AddOneTsToEpisodesAndTruncate()(
        rl_module=None, batch=batch, episodes=[episode], shared_data=shared
    )
    AddFairnessColumns()(rl_module=None, batch=batch, episodes=[episode], shared_data=shared)
    counts = collect(batch, keys.COL_COUNTS, episode)
    valid = collect(batch, keys.COL_VALID, episode)
    decision = collect(batch, keys.COL_DECISION, episode)
    assert counts.shape[0] == 13  # 12 transitions + RLlib's bootstrap step
    assert valid.tolist() == [True] * 12 + [False]
    assert decision.tolist() == actions + [-1]
    assert not counts[12].any()
    for t in range(12):
        np.testing.assert_allclose(counts[t], step_infos[t]["fairness"], rtol=1e-6, atol=1e-6)
    # Same length as the loss mask RLlib adds, so the columns batch together.
    assert len(batch["loss_mask"][(episode.id_,)]) == 13


def test_chunked_episode_keeps_alignment():
    episode, step_infos, actions = rollout("fair/LendingFICO-v0", 30)
    first = episode.slice(slice(0, 17))
    second = episode.slice(slice(17, 30))
    rows = []
    for chunk in (first, second):
        batch = AddFairnessColumns()(rl_module=None, batch={}, episodes=[chunk], shared_data={})
        rows.append(collect(batch, keys.COL_COUNTS, chunk))
    counts = np.concatenate(rows)
    assert counts.shape[0] == 30
    for t in range(30):
        np.testing.assert_allclose(counts[t], step_infos[t]["fairness"], rtol=1e-6, atol=1e-6)
    sq = counts[:, SELECTED_QUALIFIED].sum(axis=1)
    labels = np.array([i["label"] for i in step_infos])
    np.testing.assert_array_equal(sq, labels * np.array(actions))


def test_connector_is_the_first_custom_learner_piece():
    from rllib_fair.algorithms import get_config_class

    cfg = get_config_class("PPO")().environment("fair/Lending-v0")
    env = gym.make("fair/Lending-v0")
    pipeline = cfg.build_learner_connector(env.observation_space, env.action_space)
    assert type(pipeline.connectors[0]).__name__ == "AddFairnessColumns"
    cfg2 = get_config_class("PPO")().environment("fair/Lending-v0").fairness(columns=False)
    names = [
        type(c).__name__
        for c in cfg2.build_learner_connector(env.observation_space, env.action_space).connectors
    ]
    assert "AddFairnessColumns" not in names


def test_env_without_fairness_counts_is_a_clear_error():
    env = gym.make("CartPole-v1")
    obs, info = env.reset(seed=0)
    ep = SingleAgentEpisode(observations=[obs], infos=[info], len_lookback_buffer=0)
    obs, r, term, trunc, info = env.step(0)
    ep.add_env_step(obs, 0, r, infos=info, terminated=term, truncated=trunc)
    with pytest.raises(ValueError, match="info\\['fairness'\\]"):
        AddFairnessColumns()(rl_module=None, batch={}, episodes=[ep], shared_data={})
