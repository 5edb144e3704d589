"""The myopic baselines' solver on the replicator env (Yin et al. 2023, Eqs. 7a-d)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the ids)
from rllib_fair.envs.replicator import OBJECTIVES, ReplicatorEnv
from rllib_fair.envs.replicator_myopic import myopic_action

AXIS = np.linspace(0.0, 1.0, 201)
LATTICE_201 = np.stack(np.meshgrid(AXIS, AXIS, indexing="ij"), axis=-1).reshape(-1, 2)


@pytest.mark.parametrize("kwargs", [{}, {"bins": 32}, {"feature_model": "adult"}])
def test_tp_objective_accepts_everyone(kwargs):
    env = ReplicatorEnv(**kwargs)
    for q in ([0.5, 0.3], [0.05, 0.95], [0.7, 0.7]):
        np.testing.assert_array_equal(myopic_action(env, "myopic", q=q), [0.0, 0.0])


@pytest.mark.parametrize("kwargs", [{"loss": "zero_one"}, {"loss": "zero_one", "bins": 32}])
def test_myopic_fair_with_lambda_near_one_equalises_acceptance(kwargs):
    # Identical groups (same feature model), different qualification rates.
    env = ReplicatorEnv(**kwargs)
    for q in ([0.3, 0.7], [0.5, 0.2]):
        a = myopic_action(env, "myopic_fair", lam=0.999, q=q)
        ar = env.step_statistics(a[None], q)["accept_rate"][0]
        assert abs(ar[0] - ar[1]) < 2e-3, (q, a, ar)
    # Equal q: the fair optimum keeps the unconstrained one (equal thresholds already).
    a = myopic_action(env, "myopic_fair", lam=0.999, q=[0.5, 0.5])
    assert abs(a[0] - a[1]) < 1e-6


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("kwargs", [{"loss": "tp_tn"}, {"loss": "zero_one", "disparity": "eo"}])
def test_solver_matches_brute_force_value(objective, kwargs):
    # Maxmin optima are not unique (the better group's threshold is free over a range):
    # compare objective values, not thresholds.
    env = ReplicatorEnv(**kwargs)
    for q in ([0.6, 0.2], [0.35, 0.8]):
        a = myopic_action(env, objective, lam=0.5, q=q)
        assert np.all((a >= 0) & (a <= 1))
        value = env.objective_values(a[None], q, objective, 0.5)[0]
        brute = env.objective_values(LATTICE_201, q, objective, 0.5).min()
        assert value <= brute + 1e-6, (objective, q, value, brute)


def test_maxmin_minimises_the_worse_group_loss():
    env = ReplicatorEnv(loss="zero_one")
    q = np.array([0.6, 0.2])
    a = myopic_action(env, "maxmin", q=q)
    group_loss = env.step_statistics(a[None], q)["group_loss"][0]
    brute = env.step_statistics(LATTICE_201, q)["group_loss"].max(axis=1).min()
    assert group_loss.max() <= brute + 1e-6


def test_deterministic_defaults_and_wrappers():
    env = gym.make("fair/Replicator-v0", loss="tp_tn")
    env.reset(seed=4)
    a = myopic_action(env, "maxmin_fair")
    b = myopic_action(env.unwrapped, "maxmin_fair", q=env.unwrapped.q)
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.float64 and a.shape == (2,)
    lattice_only = myopic_action(env, "maxmin_fair", iters=0, grid=11)
    assert np.all(np.isin(np.round(lattice_only, 12), np.round(np.linspace(0, 1, 11), 12)))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"objective": "greedy"}, "objective"),
        ({"lam": 1.5}, "lam"),
        ({"grid": 1}, "grid"),
        ({"iters": -1}, "iters"),
        ({"step": 0.0}, "step"),
        ({"tol": -1.0}, "tol"),
    ],
)
def test_bad_arguments(kwargs, name):
    env = ReplicatorEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=rf"^{name}="):
        myopic_action(env, **kwargs)
    with pytest.raises(ValueError, match=r"^env="):
        myopic_action(gym.make("CartPole-v1"))
