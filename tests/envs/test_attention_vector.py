"""The native vector Attention envs equal SyncVectorEnv over single copies, bit for bit."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.envs.attention import AttentionEnv, AttentionHardEnv
from rllib_fair.envs.attention_vector import AttentionHardVectorEnv, AttentionVectorEnv
from tests.envs.test_lending_vector import _assert_same

PAIRS = [(AttentionEnv, AttentionVectorEnv), (AttentionHardEnv, AttentionHardVectorEnv)]


def _score_actions(rng, n, sites, bound):
    """Random scores, with some rows all equal (ties) and some beyond the bound (clipped)."""
    scores = rng.normal(0.0, 2.0, size=(n, sites))
    kind = rng.integers(0, 4)
    if kind == 1:
        scores[:] = rng.normal()
    elif kind == 2:
        scores *= 3.0 * bound
    return scores.astype(np.float32)


@pytest.mark.parametrize(("single", "vector"), PAIRS, ids=["Attention", "AttentionHard"])
@pytest.mark.parametrize(
    ("n", "kwargs", "seed"),
    [
        (1, {"max_steps": 40}, 0),
        (4, {"max_steps": 25}, 7),  # copies end and autoreset many times
        (3, {"max_steps": 60, "normalize_obs": False, "history_len": 3}, 1),
        (5, {"max_steps": 30, "obs_ratio": False, "count_cap": 2}, 3),
        (8, {"max_steps": 400, "action_type": "allocation"}, 4),
        (3, {"max_steps": 17, "action_type": "allocation", "history_len": 1}, 5),
    ],
)
def test_same_trajectories_as_sync_vector_env(single, vector, n, kwargs, seed):
    ref = gym.vector.SyncVectorEnv([lambda: single(**kwargs) for _ in range(n)])
    ours = vector(n, **kwargs)
    _assert_same(ours.reset(seed=seed), ref.reset(seed=seed), "reset")
    spec = ours.spec_env
    rng = np.random.default_rng(seed)
    ends = 0
    for t in range(1_200):
        if spec.action_type == "allocation":
            actions = rng.integers(0, spec.action_space.n, size=n)
        else:
            actions = _score_actions(rng, n, spec.n_sites, spec.score_bound)
        out, exp = ours.step(actions), ref.step(actions)
        _assert_same(out, exp, f"step {t}")
        ends += int(np.sum(exp[2] | exp[3]))
        if t == 600:  # a reset without a seed keeps every copy's stream
            _assert_same(ours.reset(), ref.reset(), "reset(None)")
    assert ends > n  # the episodes really ended and restarted
    assert ours.single_observation_space == ref.single_observation_space
    assert ours.observation_space == ref.observation_space
    assert ours.single_action_space == ref.single_action_space
    assert ours.action_space == ref.action_space


@pytest.mark.parametrize("units", [6, 7, 12, 30])
def test_score_split_equals_the_single_envs(units):
    """Many score vectors, tied and nearly tied shares included, split as the single env does."""
    single = AttentionEnv(attention_units=units)
    rng = np.random.default_rng(units)
    rows = [rng.normal(0.0, 1.5, size=5) for _ in range(3_000)]
    rows += [np.zeros(5), np.full(5, 9.0), np.array([3.0, -3.0, 3.0, -3.0, 0.0])]
    rows += [np.log(np.array([5.0, 3.0, 2.0, 1.0, 1.0]) / 12.0)]  # ties in exact shares
    rows += [np.log(rng.integers(1, 6, size=5) / 10.0) for _ in range(500)]
    scores = np.array(rows)
    ours = AttentionVectorEnv(len(rows), attention_units=units)
    got = ours._scores_to_alloc(scores)
    want = np.array([single.scores_to_allocation(s) for s in scores])
    np.testing.assert_array_equal(got, want)
    assert (got.sum(axis=1) == units).all()


@pytest.mark.parametrize(
    ("env_id", "cls"),
    [("fair/Attention-v0", AttentionVectorEnv), ("fair/AttentionHard-v0", AttentionHardVectorEnv)],
)
def test_registered_as_vector_entry_point(env_id, cls):
    env = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", max_steps=10)
    assert type(env) is cls and env.num_envs == 2
    assert env.spec_env.max_steps == 10
    assert type(env.spec_env) is cls.SINGLE_ENV


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: AttentionVectorEnv(0), r"num_envs=0: expected a positive integer"),
        (lambda: AttentionVectorEnv(2, max_steps=0), r"max_steps"),
        (lambda: AttentionVectorEnv(2).step(np.zeros((2, 5))), r"before reset"),
    ],
)
def test_bad_input_is_a_clear_error(call, match):
    with pytest.raises((ValueError, RuntimeError), match=match):
        call()


@pytest.mark.parametrize(
    ("kwargs", "bad"),
    [
        ({}, np.zeros((2, 4))),
        ({}, np.zeros(2)),
        ({}, np.array([[0.0, 1, 2, 3, np.inf], [0.0] * 5])),
        ({"action_type": "allocation"}, np.array([0, 210])),
        ({"action_type": "allocation"}, np.array([0.0, 1.0])),
        ({"action_type": "allocation"}, np.array([1])),
    ],
)
def test_bad_actions_are_rejected(kwargs, bad):
    env = AttentionVectorEnv(2, **kwargs)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="actions"):
        env.step(bad)


def test_remainders_near_a_rounding_half_step_order_as_pythons_round():
    """Remainders whose 1e-9 rounding is a near tie rank as the single env's ``round``."""
    quota = np.array(
        [
            [1.0000000005, 1.0000000004999, 1.0000000005001, 1.4, 1.5999999999],
            [0.25000000015, 0.25000000025, 0.2500000002, 4.9999999985, 0.2500000001],
            [1.2, 1.2, 1.2, 1.2, 1.2],
        ]
    )
    alloc = quota.astype(np.int64)
    units = np.array([7, 6, 6])
    left = units - alloc.sum(axis=1)
    env = AttentionVectorEnv(3)
    got = alloc + env._extra_units(alloc, quota, left)
    for i in range(3):  # the single env's rule, written out
        want = alloc[i].tolist()
        order = sorted(range(5), key=lambda g: round(want[g] - quota[i, g], 9))
        for g in order[: left[i]]:
            want[g] += 1
        np.testing.assert_array_equal(got[i], want)
