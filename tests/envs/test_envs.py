"""Tests of the rllib-fair environments: API, determinism, dynamics vs parameters, info."""

from __future__ import annotations

import math
import re

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the ids)
from rllib_fair.envs import (
    ENV_IDS,
    LendingEnv,
    LendingFICOEnv,
    env_class,
    env_info,
    register_envs,
)
from rllib_fair.envs.lending_drift import QUALIFICATION_INFO_KEYS
from rllib_fair.envs.lending_fico import load_fico_table
from rllib_fair.fairness.counts import (
    DECIDED,
    NUM_FIELDS,
    POPULATION,
    QUALIFIED,
    QUALIFIED_MASS,
    SELECTED,
    SELECTED_QUALIFIED,
)

from .helpers import rollout, run_check_env, same, sd_tol

# Warnings check_env may emit without anything being wrong with the environment.
# Only the wrapped variant: check_env always warns that a gymnasium.make() env is not
# the raw env (the checks still run through the wrappers).
WRAPPED_ALLOWED_WARNINGS = (re.compile(r"is different from the unwrapped version"),)
# The attention envs keep the reference's Box(-3, 3) score action (POCAR / ELBERT), which
# check_env flags as a recommendation only.
BOX_RANGE_WARNING = re.compile(r"recommend using a symmetric and normalized space")
ALLOWED_WARNINGS = {
    "fair/Attention-v0": (BOX_RANGE_WARNING,),
    "fair/AttentionHard-v0": (BOX_RANGE_WARNING,),
}
INFO_KEYS = {"fairness", "group", "label", "decision", "label_observed"}
# Keys an environment adds to the common ones (exactly these, at reset and every step).
EXTRA_INFO_KEYS = {"fair/LendingDrift-v0": set(QUALIFICATION_INFO_KEYS)}
# Environments with a Dict observation deciding a batch per step: their own tests check
# seeded determinism (tests/envs/test_quarterly_lending.py).
BATCH_IDS = ("fair/QuarterlyLending-v0",)
# Environments that decide on one individual per step (accept / reject).
LENDING_IDS = tuple(i for i in ENV_IDS if i.startswith("fair/Lending"))


# ------------------------------------------------------------------ registry and API


def test_register_envs_is_idempotent_and_ids_resolve():
    register_envs()
    register_envs()
    for env_id in ENV_IDS:
        assert env_id in gym.registry
        info = env_info(env_id)
        cls = env_class(env_id)
        assert info["id"] == env_id
        assert info["group_names"] == cls.GROUP_NAMES
        assert info["n_groups"] == len(cls.GROUP_NAMES) >= 2
        assert info["default_notion"] in info["supported_notions"]
        assert info["description"] and "\n" not in info["description"]
    with pytest.raises(ValueError, match="unknown"):
        env_info("fair/NoSuchEnv-v0")


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_unwrapped(env_id):
    # The raw env from gymnasium.make keeps its spec, so check_env also runs its
    # render/close checks (a directly constructed env has no spec and check_env warns).
    run_check_env(gym.make(env_id).unwrapped, allowed=ALLOWED_WARNINGS.get(env_id, ()))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_wrapped(env_id):
    allowed = WRAPPED_ALLOWED_WARNINGS + ALLOWED_WARNINGS.get(env_id, ())
    run_check_env(gym.make(env_id), allowed=allowed)


@pytest.mark.parametrize(
    ("env_id", "kwargs", "size"),
    [
        ("fair/Lending-v0", {}, 11),
        ("fair/Lending-v0", {"obs_tpr": False}, 9),
        ("fair/Lending-v0", {"obs_bin": False, "obs_group": False}, 2),
        ("fair/LendingFICO-v0", {}, 12),
        ("fair/LendingFICO-v0", {"obs_group": False}, 10),
        ("fair/LendingFICO-v0", {"obs_bin": False}, 2),
    ],
)
def test_observation_parts(env_id, kwargs, size):
    env = gym.make(env_id, **kwargs)
    assert env.observation_space.shape == (size,)
    assert np.all(np.isfinite(env.observation_space.low))
    assert np.all(np.isfinite(env.observation_space.high))
    obs, _ = env.reset(seed=1)
    actions = np.random.default_rng(1).integers(0, 2, 300)
    for a in actions:
        assert obs.dtype == np.float32 and obs in env.observation_space
        obs, *_ = env.step(int(a))
    run_check_env(env.unwrapped, allowed=())


# ------------------------------------------------------------------ determinism


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_seeded_determinism(env_id):
    if env_id in BATCH_IDS:
        pytest.skip("dict observation, batch decisions: own determinism test")
    space = gym.make(env_id).action_space
    space.seed(7)
    actions = [space.sample() for _ in range(3000)]
    kwargs = {"max_steps": 700}  # crosses episode ends (unseeded resets)
    run_a = rollout(env_id, 42, actions, **kwargs)
    run_b = rollout(env_id, 42, actions, **kwargs)
    assert len(run_a) == len(run_b)
    for step_a, step_b in zip(run_a, run_b):
        assert all(same(x, y) for x, y in zip(step_a, step_b))
    run_c = rollout(env_id, 43, actions, **kwargs)
    obs_a = np.stack([s[0] for s in run_a[:200]])
    obs_c = np.stack([s[0] for s in run_c[:200]])
    assert not np.array_equal(obs_a, obs_c)


# ------------------------------------------------------------------ info contract


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_common_info_contract(env_id):
    """Every env: the base keys, counts of shape [NUM_FIELDS, n_groups], finite, ints."""
    env = gym.make(env_id)
    n_groups = env_info(env_id)["n_groups"]
    _, info = env.reset(seed=3)
    env.action_space.seed(3)
    for _ in range(300):
        _, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert INFO_KEYS <= set(info)
        counts = info["fairness"]
        assert counts.shape == (NUM_FIELDS, n_groups) and counts.dtype == np.float64
        assert np.all(np.isfinite(counts)) and np.all(counts >= 0)
        for key in ("group", "label", "decision", "label_observed"):
            assert isinstance(info[key], (int, np.integer))
            assert -1 <= info[key] < max(n_groups, 2) or key == "decision"
        assert isinstance(reward, float) and math.isfinite(reward)
        assert type(terminated) is bool and type(truncated) is bool
        if terminated or truncated:
            env.reset()


@pytest.mark.parametrize("env_id", LENDING_IDS)
def test_info_contract(env_id):
    env = gym.make(env_id)
    keys = INFO_KEYS | EXTRA_INFO_KEYS.get(env_id, set())
    _, info = env.reset(seed=3)
    assert set(info) == keys
    counts = info["fairness"]
    assert counts.shape == (NUM_FIELDS, 2) and counts.dtype == np.float64
    assert np.all(counts[:POPULATION] == 0.0)
    assert info["group"] == info["label"] == info["decision"] == -1
    rng = np.random.default_rng(3)
    for _ in range(2000):
        a = int(rng.integers(0, 2))
        _, reward, terminated, truncated, info = env.step(a)
        assert set(info) == keys
        for key in ("group", "label", "decision", "label_observed"):
            assert type(info[key]) is int
        counts = info["fairness"]
        assert counts.shape == (NUM_FIELDS, 2) and counts.dtype == np.float64
        g, y = info["group"], info["label"]
        assert info["decision"] == a and info["label_observed"] == a
        assert y in (0, 1)
        expected = np.zeros((POPULATION, 2))
        expected[DECIDED, g] = 1.0
        expected[QUALIFIED, g] = y
        expected[SELECTED, g] = a
        expected[SELECTED_QUALIFIED, g] = y * a
        assert np.array_equal(counts[:POPULATION], expected)
        assert np.all(counts[POPULATION] > 0)
        assert np.all(counts[QUALIFIED_MASS] <= counts[POPULATION] + 1e-12)
        assert isinstance(reward, float)
        assert type(terminated) is bool and type(truncated) is bool
        if terminated or truncated:  # fair/LendingDrift-v0: 500-step episodes
            env.reset()


@pytest.mark.parametrize("env_id", LENDING_IDS)
def test_info_refers_to_previously_shown_individual(env_id):
    env = gym.make(env_id)
    obs, _ = env.reset(seed=5)
    n_bins = env.unwrapped.n_bins
    for a in np.random.default_rng(5).integers(0, 2, 500):
        shown_group = int(np.argmax(obs[n_bins : n_bins + 2]))
        obs, _, _, _, info = env.step(int(a))
        assert info["group"] == shown_group


# ------------------------------------------------------------------ fair/Lending-v0


def test_lending_initial_distribution_matches_cluster_probs():
    # One long episode (stepping past the end of an episode is an error).
    env = LendingEnv(max_steps=100_000)
    # Applicants drawn at reset ...
    n_resets = 4000
    counts = np.zeros((2, 7))
    env.reset(seed=11)
    for _ in range(n_resets):
        obs, _ = env.reset()
        counts[int(np.argmax(obs[7:9])), int(np.argmax(obs[:7]))] += 1
    # ... and under always-reject (distribution never changes), many more.
    for _ in range(60_000):
        obs, *_ = env.step(0)
        counts[int(np.argmax(obs[7:9])), int(np.argmax(obs[:7]))] += 1
    group_n = counts.sum(axis=1)
    total = group_n.sum()
    for g in range(2):
        assert abs(group_n[g] / total - 0.5) <= sd_tol(0.5, total)
        for b in range(7):
            p = env.initial_cluster_probs[g, b]
            freq = counts[g, b] / group_n[g]
            if p == 0.0:
                assert counts[g, b] == 0
            else:
                assert abs(freq - p) <= sd_tol(p, group_n[g]), (g, b, freq, p)


def test_lending_repay_rate_matches_success_probs_and_reject_changes_nothing():
    env = LendingEnv()
    obs, _ = env.reset(seed=12)
    before = env.cluster_probs
    repaid = np.zeros((2, 7))
    seen = np.zeros((2, 7))
    for _ in range(80_000):
        b = int(np.argmax(obs[:7]))
        obs, reward, terminated, truncated, info = env.step(0)
        assert reward == 0.0 and info["label_observed"] == 0
        seen[info["group"], b] += 1
        repaid[info["group"], b] += info["label"]
        if truncated:
            obs, _ = env.reset()
        else:
            assert env.cash == env.starting_cash
            assert np.array_equal(env.cluster_probs, before)
    for g in range(2):
        for b in range(7):
            if seen[g, b] >= 100:
                p = env.success_probs[g, b]
                assert abs(repaid[g, b] / seen[g, b] - p) <= sd_tol(p, seen[g, b])


def test_lending_single_step_moves_exactly_increment():
    # All of group 0 in bin 3, everyone repays: one accept moves 0.01 from bin 3 to 4.
    cluster = [[0, 0, 0, 1.0, 0, 0, 0], [0.1, 0.1, 0.2, 0.3, 0.3, 0, 0]]
    env = LendingEnv(group_probs=(1.0, 0.0), cluster_probs=cluster, success_probs=[1.0] * 7)
    env.reset(seed=0)
    assert env.applicant == (0, 3)
    _, reward, _, _, info = env.step(1)
    assert info["label"] == 1 and reward == 1.0
    after = env.cluster_probs
    assert after[0, 3] == 1.0 - 0.01 and after[0, 4] == 0.01
    assert np.array_equal(np.delete(after[0], [3, 4]), np.zeros(5))
    assert np.array_equal(after[1], np.asarray(cluster[1]))
    # Default moves one bin down.
    env = LendingEnv(group_probs=(1.0, 0.0), cluster_probs=cluster, success_probs=[0.0] * 7)
    env.reset(seed=0)
    env.step(1)
    assert env.cluster_probs[0, 3] == 0.99 and env.cluster_probs[0, 2] == 0.01


@pytest.mark.parametrize(("bin_", "success"), [(6, 1.0), (0, 0.0)])
def test_lending_clipped_shift_moves_nothing(bin_, success):
    cluster = [[0.0] * 7, [0.1, 0.1, 0.2, 0.3, 0.3, 0, 0]]
    cluster[0][bin_] = 1.0
    env = LendingEnv(group_probs=(1.0, 0.0), cluster_probs=cluster, success_probs=[success] * 7)
    env.reset(seed=0)
    env.step(1)
    assert np.array_equal(env.cluster_probs, np.asarray(cluster))


def test_lending_shift_and_cash_match_hand_computation():
    inc, rate, loan = 0.05, 0.3, 2.0  # large increment: min(inc, p) binds often
    env = LendingEnv(
        interest_rate=rate, loan_amount=loan, cluster_shift_increment=inc, max_steps=5000
    )
    obs, _ = env.reset(seed=21)
    rng = np.random.default_rng(21)
    total_reward = 0.0
    qualified = np.zeros(2)
    sel_qualified = np.zeros(2)
    for _ in range(3000):
        a = int(rng.random() < 0.8)
        g, b = env.applicant
        before = env.cluster_probs
        cash_before = env.cash
        obs, reward, terminated, truncated, info = env.step(a)
        y = info["label"]
        expected = before.copy()
        if a:
            dst = min(b + 1, 6) if y else max(b - 1, 0)
            if dst != b:
                mass = min(inc, before[g, b])
                expected[g, b] = before[g, b] - mass
                expected[g, dst] = before[g, dst] + mass
            assert reward == (loan * rate if y else -loan)
        else:
            assert reward == 0.0
        assert np.array_equal(env.cluster_probs, expected)
        assert env.cash == cash_before + reward
        total_reward += reward
        # Population rows: group probability and expected qualified mass.
        counts = info["fairness"]
        assert np.array_equal(counts[POPULATION], [0.5, 0.5])
        qm = 0.5 * (env.cluster_probs * env.success_probs).sum(axis=1)
        np.testing.assert_allclose(counts[QUALIFIED_MASS], qm, rtol=0, atol=1e-12)
        # Running TPR in the observation (last two entries).
        qualified[g] += y
        sel_qualified[g] += y * a
        tpr = np.divide(sel_qualified, qualified, out=np.zeros(2), where=qualified > 0)
        np.testing.assert_allclose(obs[-2:], tpr.astype(np.float32), rtol=0, atol=0)
        assert not terminated and not truncated
    assert math.isclose(env.cash, env.starting_cash + total_reward, rel_tol=0, abs_tol=1e-9)
    assert np.allclose(env.cluster_probs.sum(axis=1), 1.0)
    assert np.all(env.cluster_probs >= 0.0)


def test_lending_episode_end():
    env = LendingEnv(max_steps=5)
    env.reset(seed=0)
    flags = [env.step(0)[3] for _ in range(5)]
    assert flags == [False, False, False, False, True]
    # Nobody repays: cash 3 -> 2 -> 1 -> 0, terminated once cash < loan_amount.
    env = LendingEnv(starting_cash=3.0, success_probs=[0.0] * 7)
    env.reset(seed=0)
    terms = [env.step(1)[2] for _ in range(3)]
    assert terms == [False, False, True]
    assert env.cash == 0.0


# ------------------------------------------------------------------ fair/LendingFICO-v0


def test_fico_defaults_come_from_the_table():
    table = load_fico_table()
    env = LendingFICOEnv()
    assert list(env.GROUP_NAMES) == table["group_names"]
    assert np.array_equal(env.initial_cluster_probs, np.asarray(table["cluster_probs"]))
    assert np.array_equal(env.success_probs, np.asarray(table["success_probs"]))
    assert (env.cost, env.n_applicants, env.starting_resource, env.max_steps) == (
        0.8,
        4000,
        1000.0,
        10_000,
    )


def test_fico_pool_matches_cluster_probs():
    env = LendingFICOEnv()
    counts = np.zeros((2, 10))
    env.reset(seed=31)
    for _ in range(40):
        env.reset()
        groups, bins = env.pool_groups, env.pool_bins
        np.add.at(counts, (groups, bins), 1)
    group_n = counts.sum(axis=1)
    total = group_n.sum()
    assert abs(group_n[0] / total - 0.5) <= sd_tol(0.5, total)
    for g in range(2):
        for b in range(10):
            p = env.initial_cluster_probs[g, b]
            assert abs(counts[g, b] / group_n[g] - p) <= sd_tol(p, group_n[g]), (g, b)


def test_fico_shown_individual_and_repay_rate():
    env = LendingFICOEnv(max_steps=100_000)
    obs, _ = env.reset(seed=32)
    groups, bins = env.pool_groups, env.pool_bins
    seen = np.zeros((2, 10))
    repaid = np.zeros((2, 10))
    picks = np.zeros(env.n_applicants)
    for _ in range(60_000):
        i, g, b = env.applicant
        assert (g, b) == (groups[i], bins[i])
        assert obs[b] == 1.0 and obs[10 + g] == 1.0 and obs.sum() == 2.0
        picks[i] += 1
        obs, reward, _, _, info = env.step(0)
        assert reward == 0.0 and info["group"] == g
        seen[g, b] += 1
        repaid[g, b] += info["label"]
    assert np.array_equal(env.pool_bins, bins)  # reject keeps every score
    for g in range(2):
        for b in range(10):
            if seen[g, b] >= 100:
                p = env.success_probs[g, b]
                assert abs(repaid[g, b] / seen[g, b] - p) <= sd_tol(p, seen[g, b])
    # Uniform over the pool: picks per individual ~ Binomial(60000, 1/4000), mean 15.
    assert abs(picks.mean() - 15.0) < 1e-9 and 10.0 < picks.var() < 20.0


def test_fico_scores_move_by_label_and_population_rows_match_recount():
    cost = 0.8
    env = LendingFICOEnv(max_steps=100_000, starting_resource=1e9)
    env.reset(seed=33)
    rng = np.random.default_rng(33)
    success = env.success_probs
    total_reward = 0.0
    for step in range(20_000):
        a = int(rng.random() < 0.7)
        i, g, b = env.applicant
        bins_before = env.pool_bins if step % 1000 == 0 else None
        resource_before = env.resource
        _, reward, _, _, info = env.step(a)
        y = info["label"]
        new_bin = env.pool_bins[i]
        if a:
            assert new_bin == (min(b + 1, 9) if y else max(b - 1, 0))
            assert reward == y - cost
        else:
            assert new_bin == b and reward == 0.0
        assert env.resource == resource_before + reward
        total_reward += reward
        if bins_before is not None:
            changed = np.flatnonzero(env.pool_bins != bins_before)
            assert set(changed.tolist()) <= {i}
        if step % 997 == 0:
            groups, bins = env.pool_groups, env.pool_bins
            counts = info["fairness"]
            assert np.array_equal(counts[POPULATION], np.bincount(groups, minlength=2))
            recount = [success[g2][bins[groups == g2]].sum() for g2 in range(2)]
            np.testing.assert_allclose(counts[QUALIFIED_MASS], recount, rtol=0, atol=1e-8)
    assert math.isclose(env.resource, 1e9 + total_reward, rel_tol=1e-12)


def test_fico_episode_end():
    env = LendingFICOEnv(max_steps=4)
    env.reset(seed=0)
    flags = [env.step(1)[3] for _ in range(4)]
    assert flags == [False, False, False, True]
    # Large cost: every accepted loan loses at least 4, terminated once resource <= 0.
    env = LendingFICOEnv(cost=5.0, starting_resource=10.0)
    env.reset(seed=0)
    resource = 10.0
    for _ in range(3):
        _, reward, terminated, _, _ = env.step(1)
        resource += reward
        assert terminated == (resource <= 0)
        if terminated:
            break
    assert terminated and env.resource <= 0


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("cls", "kwargs", "name"),
    [
        (LendingEnv, {"group_probs": (0.3, 0.3)}, "group_probs"),
        (LendingEnv, {"group_probs": (0.5, 0.25, 0.25)}, "group_probs"),
        (LendingEnv, {"group_probs": (1.5, -0.5)}, "group_probs"),
        (LendingEnv, {"cluster_probs": [[0.5, 0.5], [0.5, 0.5]]}, "success_probs"),
        (LendingEnv, {"cluster_probs": [[1.0] + [0.0] * 6]}, "cluster_probs"),
        (LendingEnv, {"cluster_probs": [[0.2] * 7, [0.1] * 7]}, "cluster_probs"),
        (LendingEnv, {"cluster_probs": [[1.0], [1.0]]}, "cluster_probs"),
        (LendingEnv, {"success_probs": [0.5] * 6}, "success_probs"),
        (LendingEnv, {"success_probs": [1.2] * 7}, "success_probs"),
        (LendingEnv, {"success_probs": [[0.5] * 7] * 3}, "success_probs"),
        (LendingEnv, {"interest_rate": -1.0}, "interest_rate"),
        (LendingEnv, {"loan_amount": 0.0}, "loan_amount"),
        (LendingEnv, {"starting_cash": float("nan")}, "starting_cash"),
        (LendingEnv, {"cluster_shift_increment": 1.5}, "cluster_shift_increment"),
        (LendingEnv, {"max_steps": 0}, "max_steps"),
        (LendingEnv, {"max_steps": 10.5}, "max_steps"),
        (LendingEnv, {"obs_tpr": "yes"}, "obs_tpr"),
        (LendingEnv, {"obs_bin": False, "obs_group": False, "obs_tpr": False}, "obs_bin"),
        (LendingFICOEnv, {"group_probs": (0.6, 0.6)}, "group_probs"),
        (LendingFICOEnv, {"cluster_probs": [[0.1] * 10]}, "cluster_probs"),
        (LendingFICOEnv, {"success_probs": [0.5] * 10}, "success_probs"),
        (LendingFICOEnv, {"cost": -0.1}, "cost"),
        (LendingFICOEnv, {"n_applicants": 0}, "n_applicants"),
        (LendingFICOEnv, {"starting_resource": 0}, "starting_resource"),
        (LendingFICOEnv, {"max_steps": -3}, "max_steps"),
        (LendingFICOEnv, {"obs_bin": False, "obs_group": False}, "obs_bin"),
    ],
)
def test_constructor_validation(cls, kwargs, name):
    with pytest.raises(ValueError) as excinfo:
        cls(**kwargs)
    message = str(excinfo.value)
    assert name in message and "\n" not in message


@pytest.mark.parametrize("env_id", LENDING_IDS)
def test_invalid_action_and_step_before_reset(env_id):
    env = env_class(env_id)()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(2)
