"""Logistic model, delta-method CI and counterfactual gradient (Lee et al. 2026, Sec. 4)."""

import numpy as np
import pytest

from rllib_fair.uncertainty.logistic import (
    DesignTransform,
    LogisticModel,
    counterfactual_gradient,
    counterfactual_objective,
    delta_method_halfwidth,
    fisher_information,
    sigmoid,
)

THETA_TRUE = np.array([-0.5, 1.0, -0.7])
X0 = np.array([1.0, 0.8, -0.3])  # p0 = sigmoid(THETA_TRUE @ X0) = 0.6248


def _draw(rng, n):
    x = np.column_stack([np.ones(n), rng.standard_normal((n, 2))])
    y = (rng.random(n) < sigmoid(x @ THETA_TRUE)).astype(float)
    return x, y


def test_newton_intercept_only_is_logit_of_mean():
    y = np.array([1, 0, 1, 1, 0, 1, 1, 0, 1, 1], dtype=float)
    x = np.ones((10, 1))
    m = LogisticModel(1).fit_mle(x, y)
    assert m.theta[0] == pytest.approx(np.log(0.7 / 0.3), abs=1e-12)


@pytest.mark.parametrize("n", [10, 100, 1000])
def test_intercept_only_delta_method_is_wald(n):
    # No ridge unless Cholesky fails (an always-on 1e-8 ridge is off by 2e-9 at n = 10),
    # so this is exact to rounding.
    rng = np.random.default_rng(n)
    y = (rng.random(n) < 0.3).astype(float)
    y[0], y[1] = 0.0, 1.0
    x = np.ones((n, 1))
    m = LogisticModel(1).fit_mle(x, y)
    p = y.mean()
    half = m.ci_halfwidth(np.ones((1, 1)), x)[0]
    assert half == pytest.approx(1.96 * np.sqrt(p * (1 - p) / n), rel=1e-12)


def test_gradient_of_p_by_finite_differences():
    rng = np.random.default_rng(0)
    m = LogisticModel(3, theta=np.array([0.3, -1.2, 0.8]))
    x = rng.standard_normal((5, 3))
    grad = m.grad_proba(x)
    eps = 1e-6
    for k in range(3):
        e = np.zeros(3)
        e[k] = eps
        fd = (sigmoid(x @ (m.theta + e)) - sigmoid(x @ (m.theta - e))) / (2 * eps)
        np.testing.assert_allclose(grad[:, k], fd, rtol=1e-7, atol=1e-10)


def test_delta_method_matches_finite_difference_jacobian_and_pinv():
    rng = np.random.default_rng(1)
    x, y = _draw(rng, 400)
    m = LogisticModel(3).fit_mle(x, y)
    cov = np.linalg.inv(fisher_information(m.theta, x))
    q = rng.standard_normal((7, 3))
    eps = 1e-6
    jac = np.empty((7, 3))
    for k in range(3):
        e = np.zeros(3)
        e[k] = eps
        jac[:, k] = (sigmoid(q @ (m.theta + e)) - sigmoid(q @ (m.theta - e))) / (2 * eps)
    expected = 1.96 * np.sqrt(np.einsum("ij,jk,ik->i", jac, cov, jac))
    np.testing.assert_allclose(delta_method_halfwidth(m.theta, q, x), expected, rtol=1e-6)


def test_delta_method_singular_fisher_falls_back():
    x = np.column_stack([np.ones(5), np.ones(5)])  # rank 1
    half = delta_method_halfwidth(np.zeros(2), x, x)
    assert np.all(np.isfinite(half))


def _coverage(reps, n, seed):
    rng = np.random.default_rng(seed)
    p0 = sigmoid(X0 @ THETA_TRUE)
    hits, widths, estimates = 0, [], []
    for _ in range(reps):
        x, y = _draw(rng, n)
        m = LogisticModel(3).fit_mle(x, y)
        p = m.predict_proba(X0[None])[0]
        h = m.ci_halfwidth(X0[None], x)[0]
        hits += abs(p - p0) <= h
        widths.append(h)
        estimates.append(p)
    return hits / reps, np.mean(widths), np.std(estimates)


def test_delta_method_coverage_short():
    cov, width, sd = _coverage(300, 1000, seed=0)
    assert 0.91 <= cov <= 0.99
    # Bootstrap-style check: the half-width is 1.96 x the sampling sd of p-hat.
    assert width == pytest.approx(1.96 * sd, rel=0.15)


@pytest.mark.slow
def test_delta_method_coverage_full():
    cov, width, sd = _coverage(2000, 1000, seed=0)
    assert 0.935 <= cov <= 0.965
    assert width == pytest.approx(1.96 * sd, rel=0.07)


def test_full_batch_gradient_ascent_converges_to_newton_mle():
    # Constant-step minibatch SGD only hovers around the MLE (within about 0.05); full
    # batch converges.
    rng = np.random.default_rng(2)
    x, y = _draw(rng, 500)
    mle = LogisticModel(3).fit_mle(x, y).theta
    gd = LogisticModel(3, lr=2.0, n_epochs=3000, batch_size=None).fit(x, y).theta
    np.testing.assert_allclose(gd, mle, atol=1e-6)
    sgd = LogisticModel(3, lr=0.05, n_epochs=200).fit(x, y, rng=np.random.default_rng(0)).theta
    assert np.max(np.abs(sgd - mle)) < 0.1


def test_fit_is_warm_started_and_seeded():
    rng = np.random.default_rng(3)
    x, y = _draw(rng, 300)
    a = LogisticModel(3).fit(x, y, rng=np.random.default_rng(5))
    b = LogisticModel(3).fit(x, y, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(a.theta, b.theta)
    before = a.theta.copy()
    a.fit(x[:0], y[:0], rng=np.random.default_rng(5))  # no rows: no change
    np.testing.assert_array_equal(a.theta, before)
    a.fit(x, y, rng=np.random.default_rng(6), epochs=1)  # continues from theta
    assert np.max(np.abs(a.theta - before)) < 0.5
    with pytest.raises(ValueError):
        LogisticModel(3).fit(x, y)  # minibatches need an rng


def test_counterfactual_gradient_by_finite_differences():
    rng = np.random.default_rng(4)
    x = np.column_stack([np.ones(50), rng.standard_normal((50, 3))])
    y = (rng.random(50) < 0.5).astype(float)
    observed = rng.random(50) < 0.6
    theta = rng.standard_normal(4) * 0.5
    kw = {"gain": 0.4, "loss": 1.0, "alpha": 10.0}
    for obs in (observed, np.ones(50, dtype=bool)):
        grad = counterfactual_gradient(theta, x, y, obs, 0.55, **kw)
        eps = 1e-6
        fd = np.empty(4)
        for k in range(4):
            e = np.zeros(4)
            e[k] = eps
            fd[k] = (
                counterfactual_objective(theta + e, x, y, obs, 0.55, **kw)
                - counterfactual_objective(theta - e, x, y, obs, 0.55, **kw)
            ) / (2 * eps)
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


def test_counterfactual_objective_hard_threshold_limit():
    rng = np.random.default_rng(5)
    x = np.column_stack([np.ones(30), rng.standard_normal(30)])
    y = (rng.random(30) < 0.5).astype(float)
    theta = np.array([0.1, 1.0])
    p = sigmoid(x @ theta)
    tau = 0.5 + 1e-3
    d = (p > tau).astype(float)
    hard = np.sum(d * (0.4 * y - (1 - y)) + (1 - d) * (0.4 * p - (1 - p)))
    soft = counterfactual_objective(theta, x, y, np.ones(30), tau, alpha=1e7)
    assert soft == pytest.approx(hard, abs=1e-6)


def test_counterfactual_fit_ascends_objective():
    rng = np.random.default_rng(6)
    x = np.column_stack([np.ones(200), rng.standard_normal(200)])
    y = (rng.random(200) < sigmoid(x @ np.array([0.2, 1.5]))).astype(float)
    obs = np.ones(200, dtype=bool)
    m = LogisticModel(2)
    before = counterfactual_objective(m.theta, x, y, obs, 0.5)
    m.fit_counterfactual(x, y, obs, 0.5, rng=np.random.default_rng(0), epochs=5)
    assert counterfactual_objective(m.theta, x, y, obs, 0.5) > before


def test_design_transform():
    raw = np.array([[1.0, 0, 1], [3.0, 2, 0], [5.0, 3, 1]])
    t = DesignTransform.fit(raw, ("R", "Q", "A"))
    x = t(raw)
    assert t.names == ("1", "R", "Q", "A")
    np.testing.assert_allclose(x[:, 1], (raw[:, 0] - 3.0) / np.std(raw[:, 0]))
    np.testing.assert_array_equal(x[:, 2], raw[:, 1])
    np.testing.assert_array_equal(x[:, 3], [0.5, -0.5, 0.5])  # A - 1/2 (group_encoding)
    t_ind = DesignTransform.fit(raw, ("R", "Q", "A"), group_encoding="indicator")
    np.testing.assert_array_equal(t_ind(raw)[:, 2:], raw[:, 1:])
    t2 = DesignTransform.fit(raw, ("R", "Q", "A"), use_group_feature=False, q_encoding="onehot")
    assert t2.names == ("1", "R", "Q=1", "Q=2", "Q=3")
    np.testing.assert_array_equal(t2(raw)[:, 2:], [[0, 0, 0], [0, 1, 0], [0, 0, 1]])
