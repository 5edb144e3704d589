"""Exact constrained optimum of the replicator population by backward DP (numpy only).

The replicator environment is deterministic and its state is the pair of qualification
rates, so the optimal values of the constrained problem (Yin et al. 2023, Eq. 1:
``max_pi V_r subject to V_g >= b``) can be computed on a grid of states, for the regret of
Eqs. 2-3 (our extension; the paper reports no optimum):

* :func:`lagrangian_dp_values`: backward induction on ``q in {0, 1/(n-1), ..., 1}^2`` over a
  finite set of candidate actions for the Lagrangian reward ``r + nu g`` (Eq. 4 for a fixed
  ``nu``), with bilinear interpolation of the next-step value; it also carries ``V_r`` and
  ``V_g`` of the greedy policy.
* :func:`constrained_optimum`: bisection on ``nu`` for the smallest multiplier whose greedy
  policy meets ``V_g(q_1) >= b``; the constrained optimum mixes the two deterministic
  policies on either side of it (a mixture of two policies realises any point between
  their ``(V_r, V_g)``).

This module does not import the environments: pass the dynamics as a function,
``step_fn(q_points [M, 2], actions [A, 2]) -> (r [M, A], g [M, A], q_next [M, A, 2])``;
:func:`step_fn_from_statistics` builds one from the env's vectorised
``ReplicatorEnv.step_statistics``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

StepFn = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


def step_fn_from_statistics(statistics: Callable[[np.ndarray, Any], dict]) -> StepFn:
    """A ``step_fn`` built from the env's vectorised per-step statistics.

    ``statistics(actions [A, 2], q [..., 2])`` must return a dict with ``"loss"``,
    ``"disparity"`` and ``"q_next"`` and broadcast over ``q`` (e.g.
    ``ReplicatorEnv.step_statistics``); then ``r = 1 - L``, ``g = 1 - D`` (clipped to [0, 1]).
    """

    def step_fn(q_points: np.ndarray, actions: np.ndarray):
        stats = statistics(actions, np.asarray(q_points, dtype=np.float64)[:, None, :])
        r = 1.0 - np.asarray(stats["loss"], dtype=np.float64)
        g = np.clip(1.0 - np.asarray(stats["disparity"], dtype=np.float64), 0.0, 1.0)
        return r, g, np.asarray(stats["q_next"], dtype=np.float64)

    return step_fn


def _bilinear_weights(points: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices and weights (``[..., 4]`` each) of bilinear interpolation.

    On the uniform ``n x n`` grid of ``[0, 1]^2``; points are clipped to the box.
    """
    x = np.clip(points, 0.0, 1.0) * (n - 1)
    i = np.clip(np.floor(x).astype(np.int64), 0, n - 2)
    fx = x - i
    i0, i1 = i[..., 0], i[..., 1]
    f0, f1 = fx[..., 0], fx[..., 1]
    idx = np.stack([i0 * n + i1, i0 * n + i1 + 1, (i0 + 1) * n + i1, (i0 + 1) * n + i1 + 1], -1)
    w = np.stack([(1 - f0) * (1 - f1), (1 - f0) * f1, f0 * (1 - f1), f0 * f1], -1)
    return idx, w


@dataclass(frozen=True)
class DPSolution:
    """Values of the greedy policy for ``r + nu g`` on the state grid.

    Attributes:
        grid: the ``n`` grid values of each ``q_k`` (``linspace(0, 1, n)``).
        actions: the ``[A, 2]`` candidate actions.
        nu: the multiplier.
        value: ``[H + 1, n, n]`` Lagrangian values ``V_h`` (0-based ``h``; ``V_H = 0``).
        value_r: ``[H + 1, n, n]`` ``V_r`` of the same policy.
        value_g: ``[H + 1, n, n]`` ``V_g`` of the same policy.
        policy: ``[H, n, n]`` index into ``actions`` of the greedy action.
    """

    grid: np.ndarray
    actions: np.ndarray
    nu: float
    value: np.ndarray
    value_r: np.ndarray
    value_g: np.ndarray
    policy: np.ndarray

    def at(self, q: Any, h: int = 0) -> tuple[float, float, float]:
        """``(V, V_r, V_g)`` at step ``h`` and state ``q``, bilinearly interpolated."""
        idx, w = _bilinear_weights(np.asarray(q, dtype=np.float64).reshape(2), len(self.grid))
        return tuple(
            float(np.sum(v[h].reshape(-1)[idx] * w))
            for v in (self.value, self.value_r, self.value_g)
        )  # type: ignore[return-value]


def lagrangian_dp_values(
    step_fn: StepFn, actions: Any, horizon: int, nu: float = 0.0, grid: int = 101
) -> DPSolution:
    """Backward DP for ``max_pi sum_h (r + nu g)`` on a ``grid x grid`` state lattice.

    ``V_H = 0``; ``Q_h(q, a) = r(q, a) + nu g(q, a) + V_{h+1}(q'(q, a))`` with ``V_{h+1}``
    interpolated bilinearly; ``V_h = max_a Q_h`` (first maximiser on ties).
    """
    actions = np.atleast_2d(np.asarray(actions, dtype=np.float64))
    if horizon < 1 or grid < 2:
        raise ValueError(f"horizon={horizon}, grid={grid}: expected horizon >= 1 and grid >= 2")
    axis = np.linspace(0.0, 1.0, grid)
    points = np.stack(np.meshgrid(axis, axis, indexing="ij"), axis=-1).reshape(-1, 2)
    r, g, q_next = step_fn(points, actions)
    r = np.asarray(r, dtype=np.float64)
    g = np.asarray(g, dtype=np.float64)
    idx, w = _bilinear_weights(np.asarray(q_next, dtype=np.float64), grid)  # [M, A, 4]
    lag = r + nu * g  # Eq. 4 for fixed nu
    m = points.shape[0]
    rows = np.arange(m)
    value = np.zeros((horizon + 1, m))
    value_r = np.zeros((horizon + 1, m))
    value_g = np.zeros((horizon + 1, m))
    policy = np.zeros((horizon, m), dtype=np.int64)
    for h in range(horizon - 1, -1, -1):
        q_val = lag + np.sum(value[h + 1][idx] * w, axis=-1)
        best = np.argmax(q_val, axis=1)
        policy[h] = best
        value[h] = q_val[rows, best]
        i_b, w_b = idx[rows, best], w[rows, best]
        value_r[h] = r[rows, best] + np.sum(value_r[h + 1][i_b] * w_b, axis=-1)
        value_g[h] = g[rows, best] + np.sum(value_g[h + 1][i_b] * w_b, axis=-1)
    shape = (horizon + 1, grid, grid)
    return DPSolution(
        grid=axis,
        actions=actions,
        nu=float(nu),
        value=value.reshape(shape),
        value_r=value_r.reshape(shape),
        value_g=value_g.reshape(shape),
        policy=policy.reshape((horizon, grid, grid)),
    )


@dataclass(frozen=True)
class ConstrainedOptimum:
    """Result of :func:`constrained_optimum`.

    Attributes:
        value_r: optimal ``V*_r(q_1)`` of Eq. 1 (the mixture's value).
        value_g: ``V_g(q_1)`` of the mixture (``b`` when the constraint binds).
        nu: the multiplier where the greedy policy becomes feasible.
        mix: weight of the feasible policy ``high`` in the mixture (1 if no mixing).
        feasible: False when even ``nu_max`` does not meet ``V_g >= b``.
        low: the solution just below ``nu`` (infeasible), or ``high`` if ``nu = 0``.
        high: the solution at ``nu`` (feasible).
    """

    value_r: float
    value_g: float
    nu: float
    mix: float
    feasible: bool
    low: DPSolution
    high: DPSolution


def constrained_optimum(
    step_fn: StepFn,
    actions: Any,
    horizon: int,
    q0: Any,
    threshold: float,
    nu_max: float = 100.0,
    iters: int = 40,
    grid: int = 101,
) -> ConstrainedOptimum:
    """``V*`` of Eq. 1 from ``q0``: bisection on ``nu`` of the Lagrangian DP, then mixing.

    Args:
        step_fn: dynamics, see the module docstring.
        actions: ``[A, 2]`` candidate actions.
        horizon: ``H``.
        q0: initial state ``q_1``.
        threshold: ``b`` in ``V_g >= b`` (episode sum of ``g``).
        nu_max: largest multiplier tried.
        iters: bisection steps.
        grid: state-grid points per axis.
    """
    sol = lagrangian_dp_values(step_fn, actions, horizon, 0.0, grid)
    _, vr, vg = sol.at(q0)
    if vg >= threshold:
        return ConstrainedOptimum(vr, vg, 0.0, 1.0, True, sol, sol)
    high = lagrangian_dp_values(step_fn, actions, horizon, nu_max, grid)
    _, vr_hi, vg_hi = high.at(q0)
    if vg_hi < threshold:
        return ConstrainedOptimum(vr_hi, vg_hi, float(nu_max), 1.0, False, high, high)
    low, lo_nu, hi_nu = sol, 0.0, float(nu_max)
    for _ in range(iters):
        mid = 0.5 * (lo_nu + hi_nu)
        cand = lagrangian_dp_values(step_fn, actions, horizon, mid, grid)
        if cand.at(q0)[2] >= threshold:
            high, hi_nu = cand, mid
        else:
            low, lo_nu = cand, mid
    _, vr_lo, vg_lo = low.at(q0)
    _, vr_hi, vg_hi = high.at(q0)
    mix = 1.0 if vg_hi == vg_lo else (threshold - vg_lo) / (vg_hi - vg_lo)
    mix = float(min(1.0, max(0.0, mix)))
    value_r = mix * vr_hi + (1.0 - mix) * vr_lo
    value_g = mix * vg_hi + (1.0 - mix) * vg_lo
    return ConstrainedOptimum(value_r, value_g, hi_nu, mix, True, low, high)
