"""The numpy logistic model of the school admission environment: sigmoid and fit.

:func:`fit_logistic` fits ``P(y = 1 | x) = sigmoid(w . x + b)`` by Newton's method; it is
what :func:`rllib_fair.envs.school_enem.load_enem` uses to build ``alpha(x, z)`` from data.
Nothing here imports ray or torch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rllib_fair.envs.base import as_count, as_positive


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function of an array."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=np.float64)))


def _sigmoid1(z: float) -> float:
    """Numerically stable logistic function of one float."""
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    ez = math.exp(z)
    return ez / (1.0 + ez)


def fit_logistic(
    features: Any, labels: Any, *, l2: float = 1.0, iterations: int = 100, tol: float = 1e-10
) -> tuple[np.ndarray, float, dict[str, Any]]:
    """Fits ``P(y = 1 | x) = sigmoid(w . x + b)`` by Newton's method (IRLS) with numpy.

    Minimises ``sum_i logloss_i + l2 / 2 * |w|^2`` (the intercept ``b`` is not
    penalised; ``l2 = 1`` is scikit-learn's default ``C = 1``). Each Newton step is
    halved until the objective does not increase (at most 30 halvings); the fit stops
    after ``iterations`` steps or once a step moves no parameter by more than ``tol``.
    A ridge of 1e-9 keeps the Newton system solvable when ``l2 = 0`` and the design is
    collinear (one-hot blocks).

    Args:
        features: ``[n, d]`` design matrix.
        labels: ``[n]`` labels in {0, 1}.
        l2: L2 penalty on ``w`` (>= 0).
        iterations: maximum number of Newton steps (>= 1).
        tol: convergence threshold on the largest parameter change.

    Returns:
        ``(w [d], b, stats)`` with ``stats = {"iterations", "converged", "objective"}``.
    """
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    l2 = as_positive("l2", l2, allow_zero=True)
    iterations = as_count("iterations", iterations)
    n, d = x.shape
    design = np.hstack([x, np.ones((n, 1))])
    penalty = np.full(d + 1, l2)
    penalty[-1] = 0.0
    theta = np.zeros(d + 1)

    def objective(t: np.ndarray) -> float:
        z = design @ t
        return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * np.sum(penalty * t * t))

    current = objective(theta)
    converged = False
    done = 0
    for done in range(1, iterations + 1):  # noqa: B007 - the count is reported
        prob = _sigmoid(design @ theta)
        grad = design.T @ (prob - y) + penalty * theta
        hess = (design * (prob * (1.0 - prob))[:, None]).T @ design
        hess[np.diag_indices(d + 1)] += penalty + 1e-9
        step = np.linalg.solve(hess, grad)
        scale = 1.0
        for _ in range(30):
            candidate = theta - scale * step
            value = objective(candidate)
            if value <= current:
                break
            scale *= 0.5
        else:
            converged = True  # no decrease possible: at the optimum up to rounding
            break
        theta, current = candidate, value
        if float(np.max(np.abs(scale * step))) <= tol:
            converged = True
            break
    stats = {"iterations": done, "converged": converged, "objective": current}
    return theta[:d].copy(), float(theta[d]), stats
