"""L-UCBFair's cumulative regret (Eq. 3) against the exact constrained optimum (Eq. 1 by DP)."""

from __future__ import annotations

import numpy as np
import pytest

from rllib_fair.algorithms.lucbfair.features import region_grid
from rllib_fair.algorithms.lucbfair.regret import OptimumReference, RegretTracker
from rllib_fair.envs.replicator import ReplicatorEnv
from rllib_fair.fairness.replicator_dp import constrained_optimum, step_fn_from_statistics


def _bandit(q_points, actions):
    """Static state, two actions: r = (1, 0.5), g = (0, 1); b = 0.6 mixes them (V_r = 0.7)."""
    m = q_points.shape[0]
    r = np.tile([1.0, 0.5], (m, 1))
    g = np.tile([0.0, 1.0], (m, 1))
    return r, g, np.repeat(q_points[:, None, :], 2, axis=1)


@pytest.mark.parametrize("horizon", [1, 4])
def test_bandit_optimum_matches_constrained_optimum(horizon):
    """Binding (b = 0.6 H): V* = 0.7 H, both bounds exact; slack; infeasible."""
    actions = np.zeros((2, 2))
    q0 = [0.3, 0.6]
    ref = OptimumReference(_bandit, actions, horizon, 0.6 * horizon, grid=5)
    exact = constrained_optimum(_bandit, actions, horizon, q0, 0.6 * horizon, grid=5)
    bound = ref.bounds(q0)
    assert bound.binding and bound.feasible
    assert bound.lower == pytest.approx(exact.value_r, abs=1e-9)
    assert bound.lower == pytest.approx(0.7 * horizon, abs=1e-9)
    assert bound.upper == pytest.approx(0.7 * horizon, abs=1e-9)  # dual at nu = 0.5
    slack = OptimumReference(_bandit, actions, horizon, 0.0, grid=5).bounds(q0)
    assert not slack.binding and slack.lower == slack.upper == pytest.approx(horizon)
    never = OptimumReference(_bandit, actions, horizon, 2.0 * horizon, grid=5).bounds(q0)
    assert not never.feasible


def test_tracker_sums_eq3_on_the_bandit():
    """H = 4, b = 2.4: V* = 2.8 per episode; realised returns 2.0, 2.5, 3.0 -> 0.8 + 0.3 - 0.2."""
    tracker = RegretTracker(OptimumReference(_bandit, np.zeros((2, 2)), 4, 2.4, grid=5))
    per = tracker.update(np.array([[0.1, 0.2], [0.5, 0.5]]), np.array([2.0, 2.5]))
    np.testing.assert_allclose(per, [0.8, 0.3], atol=1e-9)
    tracker.update(np.array([[0.9, 0.9]]), np.array([3.0]))
    assert tracker.regret_sum == pytest.approx(0.9, abs=1e-9)
    assert tracker.gap_sum == pytest.approx(0.0, abs=1e-9)
    assert (tracker.episodes, tracker.binding, tracker.infeasible) == (3, 3, 0)
    restored = RegretTracker(tracker.reference)
    restored.set_state(tracker.get_state())
    assert restored.get_state() == tracker.get_state()


@pytest.mark.parametrize("threshold", [2.9, 2.99])
def test_replicator_optimum_is_bracketed_by_the_ladder(threshold):
    """H = 3 on the env with the region centres: constrained_optimum's V* (40 bisection
    steps) lies in [lower, upper]; slack states give it exactly. Measured: gaps <= 0.003
    on values ~1.5."""
    env = ReplicatorEnv(max_steps=3)
    step_fn = step_fn_from_statistics(env.step_statistics)
    centres, _ = region_grid(0.1)
    ref = OptimumReference(step_fn, centres, 3, threshold, grid=11)
    kinds = set()
    for q0 in ([0.2, 0.8], [0.5, 0.5], [0.9, 0.1], [0.4, 0.6]):
        exact = constrained_optimum(step_fn, centres, 3, q0, threshold, grid=11)
        bound = ref.bounds(q0)
        kinds.add(bound.binding)
        assert bound.feasible == exact.feasible
        if not bound.binding:
            assert bound.lower == pytest.approx(exact.value_r, abs=1e-12)
        else:
            assert bound.lower - 1e-9 <= exact.value_r <= bound.upper + 1e-9
            assert bound.upper - bound.lower < 0.01
    assert ref.dp_passes <= len(ref.nus)
    assert kinds == {True, False}  # both branches exercised
