"""ELBERT-PO's fairness-aware advantage against an exact policy gradient (Prop. 3.1-3.2).

A small tabular supply-demand MDP with a softmax policy: value functions, advantages,
cumulative supply/demand and the discounted state visitation are computed exactly by
linear algebra; the policy gradient formed from the fairness-aware advantage
(``fair_advantage``) must equal a finite-difference gradient of
``J = eta - alpha * h(eta^S / eta^D)`` (+ ``zeta * eta^D_g`` with the demand regulariser).
"""

from __future__ import annotations

import numpy as np
import pytest

from rllib_fair.fairness import bias, soft_bias
from rllib_fair.fairness.objective import fair_advantage, fair_advantage_weights

GAMMA = 0.9


def make_mdp(seed: int, n_states: int = 4, n_actions: int = 3, n_groups: int = 2, n_pairs: int = 1):
    rng = np.random.default_rng(seed)
    p = rng.random((n_states, n_actions, n_states)) + 0.05
    p /= p.sum(axis=-1, keepdims=True)
    return {
        "P": p,
        "r": rng.normal(size=(n_states, n_actions)),
        "S": rng.random((n_pairs, n_groups, n_states, n_actions)),
        "D": rng.random((n_pairs, n_groups, n_states, n_actions)) + 0.2,
        "mu": rng.dirichlet(np.ones(n_states)),
    }


def policy(theta):
    e = np.exp(theta - theta.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def evaluate(mdp, theta):
    """Exact eta, advantages [s, a] and discounted visitation for every reward stream."""
    pi = policy(theta)
    p_pi = np.einsum("sa,sat->st", pi, mdp["P"])
    inv = np.linalg.inv(np.eye(len(mdp["mu"])) - GAMMA * p_pi)

    def stream(x):
        v = inv @ np.einsum("sa,sa->s", pi, x)
        q = x + GAMMA * mdp["P"] @ v
        return mdp["mu"] @ v, q - v[:, None]

    eta_r, adv_r = stream(mdp["r"])
    k, g = mdp["S"].shape[:2]
    eta_s, eta_d = np.zeros((k, g)), np.zeros((k, g))
    adv_s = np.zeros(mdp["r"].shape + (k, g))
    adv_d = np.zeros(mdp["r"].shape + (k, g))
    for i in range(k):
        for j in range(g):
            eta_s[i, j], adv_s[..., i, j] = stream(mdp["S"][i, j])
            eta_d[i, j], adv_d[..., i, j] = stream(mdp["D"][i, j])
    visitation = mdp["mu"] @ inv  # sum_t gamma^t P(s_t = s)
    return pi, eta_r, adv_r, eta_s, eta_d, adv_s, adv_d, visitation


def objective(mdp, theta, alpha, beta, zeta=0.0, group=None):
    _, eta_r, _, eta_s, eta_d, *_ = evaluate(mdp, theta)
    z = eta_s / eta_d
    gaps = bias(z) if beta is None else soft_bias(z, beta)
    j = eta_r - alpha * float(np.sum(np.asarray(gaps) ** 2))
    if zeta:
        j += zeta * eta_d[0, group]
    return j


def analytic_gradient(mdp, theta, alpha, beta, zeta=0.0, group=None):
    pi, _, adv_r, eta_s, eta_d, adv_s, adv_d, d = evaluate(mdp, theta)
    a_fair = fair_advantage(
        adv_r,
        adv_s,
        adv_d,
        eta_s,
        eta_d,
        alpha=alpha,
        beta=beta,
        demand_zeta=zeta,
        demand_group=group,
    )
    # softmax policy: dJ/dtheta[s, b] = d(s) pi(b|s) A^fair(s, b)  (Prop. 3.2)
    return d[:, None] * pi * a_fair


def numeric_gradient(mdp, theta, alpha, beta, zeta=0.0, group=None, eps=1e-6):
    grad = np.zeros_like(theta)
    for idx in np.ndindex(theta.shape):
        up, down = theta.copy(), theta.copy()
        up[idx] += eps
        down[idx] -= eps
        grad[idx] = (
            objective(mdp, up, alpha, beta, zeta, group)
            - objective(mdp, down, alpha, beta, zeta, group)
        ) / (2 * eps)
    return grad


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    ("n_groups", "n_pairs", "beta"),
    [(2, 1, None), (3, 1, 5.0), (5, 1, 20.0), (2, 2, None), (4, 2, 3.0)],
)
def test_fair_advantage_gives_the_exact_policy_gradient(seed, n_groups, n_pairs, beta):
    mdp = make_mdp(seed, n_groups=n_groups, n_pairs=n_pairs)
    theta = np.random.default_rng(100 + seed).normal(size=(4, 3))
    alpha = 3.0
    analytic = analytic_gradient(mdp, theta, alpha, beta)
    numeric = numeric_gradient(mdp, theta, alpha, beta)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)
    # The fairness term matters: without it the gradient is different.
    plain = analytic_gradient(mdp, theta, 0.0, beta)
    assert np.max(np.abs(plain - analytic)) > 1e-3


def test_demand_regulariser_gradient():
    mdp = make_mdp(7, n_groups=2)
    theta = np.random.default_rng(8).normal(size=(4, 3))
    analytic = analytic_gradient(mdp, theta, 2.0, None, zeta=1.5, group=1)
    numeric = numeric_gradient(mdp, theta, 2.0, None, zeta=1.5, group=1)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)


def test_weights_hand_computed_two_groups():
    # z = (0.5, 0.25): b = 0.25, dh/dz = 2 b (+1, -1) = (0.5, -0.5)
    w = fair_advantage_weights([[1.0, 1.0]], [[2.0, 4.0]])
    np.testing.assert_allclose(w.rates, [[0.5, 0.25]])
    np.testing.assert_allclose(w.gap, [0.25])
    assert w.h == pytest.approx(0.0625)
    np.testing.assert_allclose(w.supply, [[0.5 / 2.0, -0.5 / 4.0]])
    np.testing.assert_allclose(w.demand, [[-0.5 * 1.0 / 4.0, 0.5 * 1.0 / 16.0]])


def test_zero_demand_group_gets_no_weight_and_no_nan():
    w = fair_advantage_weights([[1.0, 0.0, 2.0]], [[2.0, 0.0, 4.0]], beta=10.0)
    assert np.all(np.isfinite(w.supply)) and np.all(np.isfinite(w.demand))
    assert w.supply[0, 1] == 0.0 and w.demand[0, 1] == 0.0
    assert not w.defined[0, 1]
