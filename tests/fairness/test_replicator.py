"""Replicator fairness core: disparities, losses, rewards, regret / distortion, DP optimum."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from rllib_fair.envs.replicator import ReplicatorEnv
from rllib_fair.fairness import replicator as fr
from rllib_fair.fairness.replicator_dp import (
    constrained_optimum,
    lagrangian_dp_values,
    step_fn_from_statistics,
)


def test_squared_disparity_matches_pairwise_reference():
    rng = np.random.default_rng(0)
    for g in (2, 3, 5):
        v = rng.random(g)
        ref = sum((v[i] - v[j]) ** 2 for i in range(g) for j in range(g)) / 2
        assert math.isclose(fr.squared_disparity(v), ref, rel_tol=1e-12)
    batch = rng.random((7, 2))
    np.testing.assert_allclose(fr.squared_disparity(batch), (batch[:, 0] - batch[:, 1]) ** 2)
    assert fr.squared_disparity([0.2, 0.2]) == 0.0
    # More than two groups can exceed 1; the utility is clipped.
    assert fr.squared_disparity([0.0, 1.0, 1.0]) == 2.0
    assert fr.utility(2.0) == 0.0 and fr.utility(0.25) == 0.75


def test_named_disparities_by_hand():
    assert fr.dp_disparity([0.5, 0.3634621]) == pytest.approx(0.0186426, abs=1e-7)
    assert fr.eop_disparity([0.9, 0.6]) == pytest.approx(0.09)
    assert fr.eo_disparity([0.9, 0.6], [0.8, 0.4]) == pytest.approx(0.5 * 0.09 + 0.5 * 0.16)
    assert fr.qr_disparity([0.1, 0.4]) == pytest.approx(0.09)


def test_losses_by_hand():
    tp, tn, pi = np.array([0.3, 0.1]), np.array([0.4, 0.6]), np.array([0.25, 0.75])
    for name, (w_tp, w_tn) in fr.LOSS_WEIGHTS.items():
        want = 1 - (0.25 * (w_tp * 0.3 + w_tn * 0.4) + 0.75 * (w_tp * 0.1 + w_tn * 0.6))
        assert fr.classification_loss(tp, tn, pi, w_tp, w_tn) == pytest.approx(want), name
    assert fr.LOSS_WEIGHTS["tp_tn"] == (1.0, 0.7)
    np.testing.assert_allclose(fr.group_losses(tp, tn, 1.0, 1.0), [0.3, 0.3])
    assert fr.qr_loss([0.2, 0.6], pi) == pytest.approx(1 - 0.05 - 0.45)
    # Weights in [0, 1] keep L in [0, 1] (w_tp + w_tn <= 1 is not needed): tp + tn <= 1
    # per group.
    rng = np.random.default_rng(1)
    q, tpr, fpr = rng.random((3, 1000, 2))
    tp, tn = q * tpr, (1 - q) * (1 - fpr)
    w = rng.random((1000, 2))
    losses = [fr.classification_loss(tp[i], tn[i], [0.5, 0.5], *w[i]) for i in range(1000)]
    assert min(losses) >= 0 and max(losses) <= 1


def test_rewards_and_schedule():
    assert fr.reward(0.3) == pytest.approx(0.7)
    h = 8
    lam = fr.lambda_schedule(np.arange(1, h + 1), h)
    np.testing.assert_allclose(lam, np.arange(1, h + 1) / h)
    assert fr.lambda_schedule(3, 4, 2.0) == 1.0
    assert fr.sharpen(0.1, 20.0) == pytest.approx(1 - 0.9**20)
    # kappa = 1 is Eq. 6: (1 - lam) r + lam g.
    assert fr.relaxed_reward(0.4, 0.1, 0.25) == pytest.approx(0.75 * 0.6 + 0.25 * 0.9)
    assert fr.relaxed_reward(0.4, 0.1, 0.25, 20.0) == pytest.approx(
        1 - (0.75 * 0.4 + 0.25 * (1 - 0.9**20))
    )
    assert fr.lagrangian_reward(0.4, 0.1, 0.5) == pytest.approx(1 - 0.25)


def test_episode_aggregates_regret_distortion():
    losses, disp = [0.2, 0.4, 0.3], [0.01, 0.0, 0.05]
    assert fr.cumulative_loss(losses) == pytest.approx(0.9)
    assert fr.cumulative_disparity(disp) == pytest.approx(0.06)
    assert fr.mean_episode_loss(losses) == pytest.approx(0.3)
    assert fr.mean_episode_loss([]) == 0.0
    v_r, v_g = fr.episode_values(losses, disp)
    assert v_r == pytest.approx(2.1) and v_g == pytest.approx(2.94)
    # Eq. 3 over K = 3 episodes.
    assert fr.regret(5.0, [4.0, 4.5, 5.0]) == pytest.approx(1.5)
    assert fr.regret([5.0, 6.0], [4.0, 6.5]) == pytest.approx(0.5)
    assert fr.distortion(2.0, [1.5, 2.5, 1.8]) == pytest.approx(0.2)
    assert fr.distortion(2.0, [2.5, 2.5]) == 0.0  # surplus cancels, never negative


# ------------------------------------------------------------------ DP optimum


def _bandit(q_points, actions):
    """Static state, two actions: r = (1, 0.5), g = (0, 1); b = 0.6 mixes them (V_r = 0.7)."""
    m = q_points.shape[0]
    r = np.tile([1.0, 0.5], (m, 1))
    g = np.tile([0.0, 1.0], (m, 1))
    return r, g, np.repeat(q_points[:, None, :], 2, axis=1)


@pytest.mark.parametrize("horizon", [1, 4])
def test_constrained_optimum_mixes_on_a_bandit(horizon):
    out = constrained_optimum(_bandit, np.zeros((2, 2)), horizon, [0.3, 0.6], 0.6 * horizon, grid=5)
    assert out.feasible
    assert out.value_r == pytest.approx(0.7 * horizon, abs=1e-9)
    assert out.value_g == pytest.approx(0.6 * horizon, abs=1e-9)
    assert out.nu == pytest.approx(0.5, abs=1e-6) and out.mix == pytest.approx(0.6, abs=1e-9)
    free = constrained_optimum(_bandit, np.zeros((2, 2)), horizon, [0.3, 0.6], 0.0, grid=5)
    assert free.nu == 0.0 and free.value_r == pytest.approx(horizon)
    never = constrained_optimum(
        _bandit, np.zeros((2, 2)), horizon, [0.3, 0.6], 2.0 * horizon, grid=5
    )
    assert not never.feasible


@pytest.mark.parametrize("nu", [0.0, 1.0, 5.0])
def test_lagrangian_dp_matches_brute_force_on_the_env(nu):
    env = ReplicatorEnv()
    actions = np.array([[0.5, 0.5], [0.0, 0.0], [0.4, 0.6], [0.55, 0.45]])
    horizon, q0 = 3, np.array([0.5, 0.3])
    sol = lagrangian_dp_values(step_fn_from_statistics(env.step_statistics), actions, horizon, nu)
    best = -np.inf
    for seq in itertools.product(range(len(actions)), repeat=horizon):
        q, total = q0, 0.0
        for k in seq:
            s = env.step_statistics(actions[k][None], q)
            total += 1 - s["loss"][0] + nu * (1 - s["disparity"][0])
            q = s["q_next"][0]
        best = max(best, total)
    value, v_r, v_g = sol.at(q0)
    assert value == pytest.approx(best, abs=2e-3)
    assert value == pytest.approx(v_r + nu * v_g, abs=1e-9)
    assert sol.value.shape == (horizon + 1, 101, 101) and sol.policy.shape == (horizon, 101, 101)
    assert np.all(sol.value[-1] == 0.0)
