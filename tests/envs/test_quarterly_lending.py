"""``fair/QuarterlyLending-v0`` (Lee et al. 2026; docs/methods/lee2026.md).

The base quarter is step 0 of the episode (an env runner decides the reset observation in
the same sample call, so the base model cannot come from an info), and under observed
label access the counts hold no rejected applicant's label.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rllib_fair  # noqa: F401  (registers the ids)
from rllib_fair.envs.quarterly_lending import QuarterlyLendingEnv
from rllib_fair.fairness.counts import QUALIFIED, QUALIFIED_MASS, SELECTED_QUALIFIED
from rllib_fair.uncertainty import DesignTransform, QuarterlyConfig, run_quarters

ENV_ID = "fair/QuarterlyLending-v0"


def _episode(env, seed, policy):
    obs, info = env.reset(seed=seed)
    trace = [(obs, info)]
    while True:
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        trace.append((obs, info, reward))
        if terminated or truncated:
            return trace


def _top_b(obs):
    """Naive top-B by the standardised first feature (any deterministic policy)."""
    n = int(obs["mask"].sum())
    b = int(obs["budget"][0])
    action = np.zeros(obs["mask"].shape, dtype=np.int8)
    order = np.argsort(-obs["features"][:n, 0], kind="stable")
    action[order[:b]] = 1
    return action


def test_check_env_small():
    check_env(QuarterlyLendingEnv(dim=400), skip_render_check=True)
    check_env(gym.make(ENV_ID, dim=400).unwrapped, skip_render_check=True)


def test_spaces_episode_length_and_base_quarter_labels():
    env = QuarterlyLendingEnv(dim=1000, num_partitions=5)
    assert env.n_max == 200
    assert isinstance(env.action_space, gym.spaces.MultiBinary)
    trace = _episode(env, 0, _top_b)
    assert len(trace) == 1 + 5  # base quarter + 4 decision rounds
    obs0, info0 = trace[0]
    assert np.all(obs0["labels"][obs0["mask"] > 0] >= 0)  # base quarter: labels shown
    assert info0["quarter"] == 1 and info0["next_budget"] > 0
    assert trace[1][2] == 0.0  # the base step's action is ignored
    for obs, _info, _r in trace[1:-1]:
        assert np.all(obs["labels"] == -1)  # decision quarters: no labels in obs
        assert env.observation_space.contains(obs)
    assert [t[1]["quarter"] for t in trace[1:]] == [1, 2, 3, 4, 5]


def test_features_are_the_core_design_and_budgets_match():
    env = QuarterlyLendingEnv(dim=2000, num_partitions=4, l_m_y=2.0)
    obs, _ = env.reset(seed=7)
    problem = env._problem
    data = problem.data
    base = problem.parts[0]
    # The observation holds the group label 0/1; the bank's design codes it (centered).
    design = DesignTransform.fit(
        data.features[base], data.feature_names, group_encoding="indicator"
    )
    n = len(base)
    np.testing.assert_array_equal(obs["features"][:n], design(data.features[base])[:, 1:])
    np.testing.assert_array_equal(obs["features"][:n, -1], data.group[base])
    core = DesignTransform.fit(data.features[base], data.feature_names)
    k = len(data.feature_names)
    bank = DesignTransform(data.feature_names, (0.0,) * k, (1.0,) * k)  # as design_for
    np.testing.assert_array_equal(bank(obs["features"][:n]), core(data.features[base]))
    np.testing.assert_array_equal(obs["labels"][:n], data.y[base])
    assert obs["budget"][0] == problem.budgets[0]


def test_y_obs_only_on_granted_rows_and_metrics_match_core():
    env = QuarterlyLendingEnv(dim=2000)
    trace = _episode(env, 3, _top_b)
    for _obs, info, reward in trace[2:]:
        granted = info["granted"].astype(bool)
        assert np.all(info["y_obs"][~granted] == -1)
        np.testing.assert_array_equal(
            info["y_obs"][granted],
            env._problem.data.y[env._problem.parts[info["quarter"] - 1]][granted],
        )
        assert reward == info["metrics"]["utility_q"]
        assert info["over_budget"] == 0
        counts = info["fairness"]
        assert counts[QUALIFIED].sum() == info["y_real"].sum()


def test_seeded_determinism_and_seed_matches_run_quarters_data():
    a = _episode(QuarterlyLendingEnv(dim=1000), 11, _top_b)
    b = _episode(QuarterlyLendingEnv(dim=1000), 11, _top_b)
    c = _episode(QuarterlyLendingEnv(dim=1000), 12, _top_b)
    for (oa, *_), (ob, *_) in zip(a, b):
        for k in oa:
            np.testing.assert_array_equal(oa[k], ob[k])
    assert not np.array_equal(a[0][0]["features"], c[0][0]["features"])
    # Same seed, same world: budgets and quarter sizes equal run_quarters'.
    records = run_quarters(QuarterlyConfig().replace(dim=1000), seed=11)
    assert [r.budget for r in records] == [t[1]["budget"] for t in a[1:][1:]]


def test_bad_actions_and_arguments_are_rejected():
    env = QuarterlyLendingEnv(dim=400)
    env.reset(seed=0)
    for bad in (1, np.full(env.n_max, 2), np.zeros(3), np.full(env.n_max, 0.5)):
        with pytest.raises(ValueError, match=r"^action=.*expected"):
            env.step(bad)
    with pytest.raises(ValueError, match="unknown argument"):
        QuarterlyLendingEnv(foo=1)
    with pytest.raises(ValueError, match="bias"):
        QuarterlyLendingEnv(bias={"nope": 1})
    with pytest.raises(ValueError, match="budget_label"):
        QuarterlyLendingEnv(budget_label="x")


def test_enforce_budget_and_over_budget_info():
    grant_all = lambda obs: obs["mask"].astype(np.int8)  # noqa: E731
    free = _episode(QuarterlyLendingEnv(dim=1000), 0, grant_all)
    assert free[2][1]["over_budget"] > 0
    capped = _episode(QuarterlyLendingEnv(dim=1000, enforce_budget=True), 0, grant_all)
    for _obs, info, _r in capped[2:]:
        assert info["granted"].sum() == info["budget"]


def test_declared_label_hiding_strips_y_real_and_qualified_counts():
    pytest.importorskip("ray")
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    env = QuarterlyLendingEnv(dim=1000)
    trace = _episode(env, 0, _top_b)
    infos = [trace[0][1]] + [t[1] for t in trace[1:]]
    observed = [int(i["granted"].sum()) for i in infos]
    sizes = [int(i["y_real"].size) for i in infos]
    episode = SingleAgentEpisode(
        observations=[t[0] for t in trace],
        infos=infos,
        actions=[np.zeros(env.n_max, dtype=np.int8)] * (len(trace) - 1),
        rewards=[0.0] * (len(trace) - 1),
        len_lookback_buffer=0,
    )
    removed = QuarterlyLendingEnv.LABEL_HIDING.hide(episode.get_infos())
    assert removed == sum(sizes) - sum(observed)
    for info in episode.get_infos():
        assert "y_real" not in info and "metrics" not in info
        counts = info["fairness"]
        np.testing.assert_array_equal(counts[QUALIFIED], counts[SELECTED_QUALIFIED])
        assert np.all(counts[QUALIFIED_MASS] == 0)
        assert np.all(info["y_obs"][info["granted"] == 0] == -1)
