"""L-UCBFair's numpy core (Yin et al. 2023, Algorithm 1; docs/methods/yin2023.md).

No Ray: the core (regions, feature maps, the LSVI planning pass, the softmax policy, the
dual step) is pure numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

from rllib_fair.algorithms.lucbfair import lsvi
from rllib_fair.algorithms.lucbfair.core import LUCBFairCore, Settings, act
from rllib_fair.algorithms.lucbfair.features import (
    FeatureMap,
    make_feature_map,
    rbf_features,
    region_grid,
    region_index,
    sample_in_regions,
)


# ------------------------------------------------------------------ item 12: regions
def test_region_grid_tiles_the_box():
    centres, eps = region_grid(0.1)
    assert eps == pytest.approx(0.1) and centres.shape == (25, 2)
    axis = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    np.testing.assert_allclose(np.unique(centres[:, 0]), axis)
    np.testing.assert_allclose(np.unique(centres[:, 1]), axis)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 25, size=5000)
    a = sample_in_regions(rng, centres, idx, eps)
    assert np.all((a >= 0) & (a <= 1))
    assert np.all(np.abs(a - centres[idx]) <= eps + 1e-12)
    np.testing.assert_array_equal(region_index(a, eps), idx)  # each point in its own cell
    # tiling: every point of the box falls in exactly one region, the nearest centre
    pts = rng.random((5000, 2))
    nearest = np.argmin(((pts[:, None] - centres[None]) ** 2).sum(-1), axis=1)
    np.testing.assert_array_equal(region_index(pts, eps), nearest)


# ------------------------------------------------------------------ feature maps
def test_rbf_blocks_sum_to_half_and_are_additive():
    rng = np.random.default_rng(1)
    s, a = rng.random((50, 2)), rng.random((50, 2))
    phi = rbf_features(s, a)
    assert phi.shape == (50, 32)
    np.testing.assert_allclose(phi[:, :16].sum(1), 0.5)
    np.testing.assert_allclose(phi[:, 16:].sum(1), 0.5)
    assert np.all(np.linalg.norm(phi, axis=1) <= 1.0)
    # E12: group 0's block depends only on (q_0, a_0)
    s2 = s.copy()
    s2[:, 1] = rng.random(50)
    np.testing.assert_allclose(rbf_features(s2, a)[:, :16], phi[:, :16])


def test_feature_map_options():
    fm = make_feature_map("tabular", state_cells=2)
    phi = fm(np.array([[0.1, 0.9]]), np.array([[0.5, 0.5]]))
    assert fm.dim == 4 * 25 and phi.sum() == 1.0
    user = make_feature_map("rllib_fair.algorithms.lucbfair.features:rbf_features")
    assert user.dim == 32
    assert make_feature_map(lambda s, a: np.ones((len(s), 3))).dim == 3
    with pytest.raises(ValueError, match="feature_kwargs"):
        make_feature_map("learned")


def test_shipped_learned_map():
    """The weights written by scripts/train_lucbfair_features.py (20k transitions)."""
    from pathlib import Path

    import rllib_fair.algorithms.lucbfair as pkg

    path = Path(pkg.__file__).parent / "replicator_features.npz"
    fm = make_feature_map("learned", path=str(path))
    phi = fm(np.random.default_rng(0).random((5, 2)), np.full((5, 2), 0.5))
    assert fm.dim == 10
    np.testing.assert_allclose(phi.sum(1), 1.0)
    with np.load(path) as data:
        assert float(data["r2_r"]) > 0.9 and float(data["r2_g"]) > 0.9


def test_learned_map_path_finds_the_shipped_file(tmp_path, monkeypatch):
    """A bare file name finds the shipped map from any working directory (tuned examples)."""
    from pathlib import Path

    import rllib_fair.algorithms.lucbfair as pkg
    from rllib_fair.algorithms.lucbfair.features import resolve_learned_path

    monkeypatch.chdir(tmp_path)
    shipped = Path(pkg.__file__).parent / "replicator_features.npz"
    assert resolve_learned_path("replicator_features.npz") == shipped
    states, actions = np.random.default_rng(1).random((4, 2)), np.full((4, 2), 0.3)
    by_name = make_feature_map("learned", path="replicator_features.npz")(states, actions)
    by_path = make_feature_map("learned", path=str(shipped))(states, actions)
    np.testing.assert_array_equal(by_name, by_path)
    # a file in the working directory takes precedence over the shipped one
    np.savez(tmp_path / "replicator_features.npz", W0=np.ones((4, 3)), b0=np.zeros(3))
    assert resolve_learned_path("replicator_features.npz") == Path("replicator_features.npz")
    assert make_feature_map("learned", path="replicator_features.npz").dim == 3
    with pytest.raises(ValueError) as err:
        make_feature_map("learned", path="missing.npz")
    msg = str(err.value)
    assert msg.startswith("feature_kwargs.path: 'missing.npz' is invalid") and "\n" not in msg
    assert "replicator_features.npz" in msg  # the valid choices


# ------------------------------------------------------------------ item 13: tiny linear MDP
def _tiny_mdp(seed):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(2), size=(2, 2))  # P[s, a] -> next-state distribution
    R = rng.random((2, 2))
    return P, R


def _q_star(P, R, H):
    q = np.zeros((H, 2, 2))
    v = np.zeros(2)
    for h in range(H - 1, -1, -1):
        q[h] = R + P @ v
        v = q[h].max(axis=1)
    return q


def _uniform_data(P, R, H, n, rng):
    """n uniform-behaviour episodes: one-hot phi(s, a) (d = 4) and phi(s', region)."""
    eye = np.eye(4)
    s = rng.integers(0, 2, size=n)
    phi_sa = np.zeros((n, H, 4))
    phi_next = np.zeros((n, H, 2, 4))
    r = np.zeros((n, H))
    for h in range(H):
        a = rng.integers(0, 2, size=n)
        phi_sa[:, h] = eye[2 * s + a]
        r[:, h] = R[s, a]
        s = (rng.random(n) > P[s, a, 0]).astype(int)
        phi_next[:, h] = eye[np.stack([2 * s, 2 * s + 1], axis=1)]
    return phi_sa, r, phi_next


def _planned_q(plan, beta, H):
    eye = np.eye(4).reshape(2, 2, 4)
    return np.stack(
        [
            lsvi.q_values(plan.w_r[h], plan.lambda_inv[h], eye, beta, lsvi.q_upper(h, H))
            for h in range(H)
        ]
    )


def test_planning_recovers_q_star_on_an_exact_linear_mdp():
    H = 3
    P, R = _tiny_mdp(0)
    phi_sa, r, phi_next = _uniform_data(P, R, H, 20_000, np.random.default_rng(0))
    plan = lsvi.plan_lsvi(phi_sa, r, r, phi_next, beta=0.0, alpha=1e6, dual=0.0)
    assert np.abs(_planned_q(plan, 0.0, H) - _q_star(P, R, H)).max() < 0.02


def test_optimism_holds_on_most_seeds():
    H, beta = 3, 3.0 * 3
    ok = 0
    for seed in range(200):
        P, R = _tiny_mdp(1000 + seed)
        phi_sa, r, phi_next = _uniform_data(P, R, H, 200, np.random.default_rng(seed))
        plan = lsvi.plan_lsvi(phi_sa, r, r, phi_next, beta=beta, alpha=1e6, dual=0.0)
        ok += bool(np.all(_planned_q(plan, beta, H) >= _q_star(P, R, H) - 1e-9))
    assert ok >= 198


# ------------------------------------------------------------------ item 14: ridge
def test_ridge_equals_cell_averages_for_one_hot_features():
    rng = np.random.default_rng(3)
    cells = rng.integers(0, 5, size=400)
    y = rng.random(400)
    phi = np.eye(5)[cells][:, None, :]  # H = 1
    plan = lsvi.plan_lsvi(phi, y[:, None], y[:, None], np.zeros((400, 1, 1, 5)), ridge=1e-9)
    means = np.array([y[cells == c].mean() for c in range(5)])
    np.testing.assert_allclose(plan.w_r[0], means, atol=1e-6)


# ------------------------------------------------------------------ item 15: primal-dual bandit
def _bandit(xi, beta, K=5000, seed=0):
    """H = 1, two regions: r = (1, 0.5), g = (0, 1), b = 0.6 (E1: beta, xi, alpha set)."""
    rng = np.random.default_rng(seed)
    eye = np.eye(2)
    rew, utl, b = np.array([1.0, 0.5]), np.array([0.0, 1.0]), 0.6
    alpha = lsvi.default_alpha(2, K, xi, 1)
    eta = lsvi.default_eta(xi, K, 1)
    counts, sums_r, sums_g = np.zeros(2), np.zeros(2), np.zeros(2)
    dual, ys, realised, raised = 0.0, [], [], []
    for _ in range(K):
        gram = np.diag(counts) + np.eye(2)
        inv = np.linalg.inv(gram)
        plan = lsvi.Plan(
            np.linalg.solve(gram, sums_r)[None], np.linalg.solve(gram, sums_g)[None], inv[None]
        )
        probs, _, _, _, v_g = lsvi.step_values(
            plan, 0, eye[None], beta=beta, alpha=alpha, dual=dual
        )
        i = lsvi.choose_regions(probs, rng, True)[0]
        counts[i] += 1
        sums_r[i] += rew[i]
        sums_g[i] += utl[i]
        realised.append((rew[i], utl[i]))
        new = lsvi.dual_step(dual, eta, b, float(v_g[0]), xi)
        if v_g[0] < b and dual < xi:
            raised.append(new > dual)
        dual = new
        ys.append(dual)
    return np.array(realised), np.array(ys), np.array(raised)


def test_primal_dual_reaches_the_constrained_optimum():
    realised, ys, raised = _bandit(xi=20.0, beta=1.0)
    v_r, v_g = realised.mean(axis=0)
    assert v_g >= 0.55 and v_r >= 0.65  # optimum mixes to V_g = 0.6, V_r = 0.7
    assert ys.min() >= 0 and ys.max() <= 20.0
    assert raised.size and raised.all()  # E1: Y rises whenever planned V_g < b and Y < xi


# ------------------------------------------------------------------ item 16: xi = 0
def test_xi_zero_pins_the_dual_at_zero():
    realised, ys, _ = _bandit(xi=0.0, beta=1.0, K=300)
    assert np.all(ys == 0.0)
    assert realised[:, 0].mean() > 0.9  # unconstrained: the reward-optimal region


# ------------------------------------------------------------------ item 17: reference mode
def test_reference_online_reproduces_the_accumulator_trace():
    H, d = 2, 3
    phi = np.array([[[1.0, 0, 0], [0, 1.0, 0]], [[0, 0, 1.0], [1.0, 0, 0]]])  # [k, H, d]
    r = np.array([[0.5, 0.25], [1.0, 0.0]])
    g = np.array([[1.0, 1.0], [0.0, 0.5]])
    v_r = np.array([[7.0, 3.0], [2.0, 4.0]])  # softmax values computed while acting
    v_g = np.array([[6.0, 1.0], [5.0, 2.0]])
    acc = lsvi.reference_accumulators(H, d)
    for k in range(2):
        acc = lsvi.reference_accumulate(acc, phi[k], r[k], g[k], v_r[k], v_g[k])
    # by hand: step 0 targets r_0 + V[k, 1]; step 1 targets r_1 + V[k, 2] = r_1
    np.testing.assert_allclose(acc["b_r"][0], [0.5 + 3.0, 0, 1.0 + 4.0])
    np.testing.assert_allclose(acc["b_r"][1], [0.0, 0.25, 0])
    np.testing.assert_allclose(acc["b_g"][0], [1.0 + 1.0, 0, 0.0 + 2.0])
    np.testing.assert_allclose(acc["gram"][0], np.diag([1.0, 0, 1.0]))
    plan = lsvi.plan_reference(acc, ridge=1.0)
    np.testing.assert_allclose(plan.w_r[0], [3.5 / 2, 0, 5.0 / 2])
    np.testing.assert_allclose(plan.w_g[1], [0.5 / 2, 1.0 / 2, 0])


# ------------------------------------------------------------------ item 18: softmax policy
def test_softmax_policy_and_inference_argmax():
    rng = np.random.default_rng(5)
    qr, qg = rng.random((4, 25)), rng.random((4, 25))
    p = lsvi.softmax_policy(qr, qg, 0.7, 3.0)
    z = np.exp(3.0 * (qr + 0.7 * qg))
    np.testing.assert_allclose(p, z / z.sum(1, keepdims=True))
    fm = make_feature_map("rbf")
    centres, eps = region_grid(0.1)
    state = {
        "w_r": rng.random((5, 32)),
        "w_g": rng.random((5, 32)),
        "lambda_inv": np.broadcast_to(np.eye(32), (5, 32, 32)),
        "dual": 0.3,
        "alpha": 50.0,
        "beta": 0.0,
    }
    q = rng.random((3, 2))
    a = act(state, fm, centres, eps, q, np.array([0, 2, 4]), rng, explore=False)
    for i, h in enumerate((0, 2, 4)):
        phi = fm.all_regions(q[i : i + 1], centres)[0]
        best = np.argmax(phi @ state["w_r"][h] + 0.3 * (phi @ state["w_g"][h]))
        np.testing.assert_allclose(a[i], centres[best])


# ------------------------------------------------------------------ core: store and restore
def test_core_state_round_trip_and_planning_cost():
    import time

    H, K = 15, 500
    fm = FeatureMap(lambda s, a: rbf_features(s, a)[:, ::3][:, :10] + 1e-3, 10, "d10")
    rng = np.random.default_rng(0)
    core = LUCBFairCore(Settings(horizon=H, beta=1.0, alpha=5.0, xi=20, eta=0.1), fm)
    q = rng.random((K, H + 1, 2))
    core.observe(q, rng.random((K, H, 2)), rng.random((K, H)), rng.random((K, H)))
    t0 = time.perf_counter()
    core.replan()
    assert time.perf_counter() - t0 < 1.0  # K = 500, H = 15, M = 25, d = 10 (issue 12)
    other = LUCBFairCore(core.settings, fm)
    other.set_state(core.get_state())
    other.replan()
    np.testing.assert_allclose(other.plan.w_r, core.plan.w_r)
    assert other.dual == core.dual
