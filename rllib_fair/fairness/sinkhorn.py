"""Debiased Sinkhorn divergence between one-dimensional point clouds (numpy, batched).

F-PPO-L (Hu, Lear & Zhang 2023), as its authors' code runs it in the PPO-C comparison of
Lear & Zhang (ICLR 2025), measures the distance between the two groups' recent credit
histograms with the GeomLoss library's ``SamplesLoss("sinkhorn", p=1, blur=0.01)`` (all
other arguments at their defaults: ``scaling=0.5``, ``debias=True``, no ``reach``, the
dense "tensorized" solver for such small clouds). This module computes the same number
without that dependency, written from the method's definition:

* Measures: ``alpha = (1/N) sum_i delta_{x_i}``, ``beta = (1/M) sum_j delta_{y_j}``
  (uniform weights, one-dimensional points).
* Cost: ``C(x, y) = |x - y|^p / p``. For ``p = 1`` the library evaluates
  ``sqrt(max(|x - y|^2, 1e-8))``, so two coincident points cost ``1e-4``, not 0; this is
  kept (:data:`P1_COST_FLOOR`) so the values match.
* Entropic OT: ``OT_eps(a, b) = min_pi <pi, C> + eps KL(pi | a (x) b)`` with
  ``eps = blur^p``; the debiased divergence
  ``S_eps(a, b) = OT_eps(a, b) - OT_eps(a, a)/2 - OT_eps(b, b)/2``, evaluated from the
  dual potentials as ``<a, f_ba - f_aa> + <b, g_ab - g_bb>``.
* Solver (symmetric Sinkhorn with epsilon-scaling): the soft-min
  ``softmin_eps(C, h)_i = -eps log sum_j exp(h_j - C_ij / eps)``; the temperature
  schedule starts at ``diameter^p`` (diameter = max - min over both clouds), then
  ``exp(e)`` for ``e`` in ``arange(p log diameter, p log blur, p log scaling)``, then
  ``blur^p``. The four potentials start as ``softmin`` of the bare log-weights at the
  first temperature; at every temperature each potential is averaged with its update
  (``f <- (f + softmin(C, log w + g / eps)) / 2``, the cross pair ``f_ba``/``g_ab`` each
  reading the other's previous value, the self pairs reading their own); after the
  schedule one full (unaveraged) update of all four at ``blur^p`` ("extrapolation").

The schedule is short (about ``log2(diameter / blur) + 2`` temperatures for ``p = 1``),
so the iterates are not converged: on the credit histograms of ``fair/LendingDrift-v0``
the value is typically 15-30% below the exact 1-Wasserstein distance between the two
clouds, which it approaches as ``scaling -> 1`` and ``blur -> 0``
(``tests/fairness/test_sinkhorn.py``).

Where every point of both clouds coincides (diameter 0), the schedule is undefined (the
library fails on ``log 0``); this module returns 0, the divergence of identical measures.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["P1_COST_FLOOR", "SINKHORN_PS", "epsilon_schedule", "sinkhorn_divergence_1d"]

#: Exponents ``p`` of the ground cost ``|x - y|^p / p`` (the two the library defines).
SINKHORN_PS: tuple[int, ...] = (1, 2)

#: For ``p = 1`` the cost is ``sqrt(max(|x - y|^2, P1_COST_FLOOR^2))``.
P1_COST_FLOOR: float = 1e-4


def epsilon_schedule(diameter: float, *, p: int, blur: float, scaling: float) -> list[float]:
    """The temperatures of the annealed Sinkhorn loop, first to last (see module docs).

    ``[diameter^p] + [exp(e) for e in arange(p log diameter, p log blur, p log scaling)]
    + [blur^p]``.
    """
    steps = np.arange(p * np.log(diameter), p * np.log(blur), p * np.log(scaling))
    return [diameter**p] + [float(np.exp(e)) for e in steps] + [blur**p]


def _cost(u: np.ndarray, v: np.ndarray, p: int) -> np.ndarray:
    """``C[j, b, i] = |u[b, i] - v[b, j]|^p / p`` (with the p = 1 floor).

    The summed index ``j`` comes first: numpy reduces over a leading axis with whole-array
    operations, several times faster than over a short last axis.
    """
    sq = (u[None, :, :] - v.T[:, :, None]) ** 2
    if p == 1:
        return np.sqrt(np.maximum(sq, P1_COST_FLOOR**2))
    return sq / 2.0


def _softmin(eps: np.ndarray, cost: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``f[b, i] = -eps_b log sum_j exp(h[b, j] - C[j, b, i] / eps_b)``, with a max shift.

    In place on one work array (this loop is the whole cost of the module); ``C / eps``
    is taken as ``C * (1 / eps)``, which moves values by about one unit in the last place.
    """
    z = cost * (-1.0 / eps)[None, :, None]
    z += h.T[:, :, None]
    m = z.max(axis=0)
    z -= m
    np.exp(z, out=z)
    out = z.sum(axis=0)
    np.log(out, out=out)
    out += m
    out *= -eps[:, None]
    return out


def _check(name: str, value: Any, ok: bool, valid: str) -> None:
    if not ok:
        raise ValueError(f"{name}: {value!r} is invalid; valid: {valid}")


def sinkhorn_divergence_1d(
    x: Any, y: Any, *, p: int = 1, blur: float = 0.01, scaling: float = 0.5
) -> np.ndarray | float:
    """Debiased Sinkhorn divergence ``S_eps`` between 1-D point clouds (see module docs).

    Args:
        x: ``[..., N]`` points of the first cloud (uniform weights 1/N).
        y: ``[..., M]`` points of the second cloud; leading shape equal to ``x``'s.
        p: cost exponent, 1 or 2 (F-PPO-L's reference: 1).
        blur: final blur scale; the final temperature is ``blur^p`` (reference: 0.01).
        scaling: ratio of successive blur scales in the annealing, in (0, 1)
            (reference: 0.5, the library's default).

    Returns:
        ``S_eps`` with the leading shape (a float for 1-D inputs), in float64.

    Raises:
        ValueError: on a bad ``p``, ``blur``, ``scaling``, non-finite points, an empty
            cloud or mismatched leading shapes.
    """
    _check("p", p, not isinstance(p, bool) and p in SINKHORN_PS, "1 or 2")
    _check("blur", blur, isinstance(blur, (int, float)) and 0 < blur < np.inf, "a number > 0")
    _check("scaling", scaling, isinstance(scaling, (int, float)) and 0 < scaling < 1, "in (0, 1)")
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.float64)
    if xs.ndim == 0 or ys.ndim == 0 or xs.shape[-1] == 0 or ys.shape[-1] == 0:
        raise ValueError(
            f"x, y: shapes {xs.shape} and {ys.shape} are invalid; valid: [..., N] and "
            "[..., M] with N, M >= 1"
        )
    if xs.shape[:-1] != ys.shape[:-1]:
        raise ValueError(
            f"x, y: leading shapes {xs.shape[:-1]} and {ys.shape[:-1]} differ; valid: equal"
        )
    if not (np.isfinite(xs).all() and np.isfinite(ys).all()):
        raise ValueError("x, y: non-finite points are invalid; valid: finite numbers")
    lead = xs.shape[:-1]
    n, m = xs.shape[-1], ys.shape[-1]
    xs, ys = xs.reshape(-1, n), ys.reshape(-1, m)
    out = np.zeros(xs.shape[0])
    diameter = np.maximum(xs.max(1), ys.max(1)) - np.minimum(xs.min(1), ys.min(1))
    rows = np.flatnonzero(diameter > 0)
    if rows.size:
        out[rows] = _divergence(xs[rows], ys[rows], diameter[rows], p, float(blur), scaling)
    return float(out[0]) if not lead else out.reshape(lead)


def _divergence(xs, ys, diameter, p, blur, scaling) -> np.ndarray:
    """The annealed symmetric Sinkhorn loop for rows with a positive diameter."""
    rows, n = xs.shape
    m = ys.shape[1]
    schedules: dict[float, list[float]] = {}
    for d in np.unique(diameter):
        schedules[float(d)] = epsilon_schedule(float(d), p=p, blur=blur, scaling=scaling)
    length = max(len(s) for s in schedules.values())
    eps_table = np.full((rows, length), blur**p)
    active = np.zeros((rows, length), dtype=bool)
    for r, d in enumerate(diameter.tolist()):
        s = schedules[d]
        eps_table[r, : len(s)] = s
        active[r, : len(s)] = True
    c_xy, c_yx = _cost(xs, ys, p), _cost(ys, xs, p)  # potentials on x from y, on y from x
    c_xx, c_yy = _cost(xs, xs, p), _cost(ys, ys, p)
    a_log = np.broadcast_to(np.log(np.full(n, 1.0 / n)), (rows, n))
    b_log = np.broadcast_to(np.log(np.full(m, 1.0 / m)), (rows, m))

    eps = eps_table[:, 0]
    g_ab = _softmin(eps, c_yx, a_log)
    f_ba = _softmin(eps, c_xy, b_log)
    f_aa = _softmin(eps, c_xx, a_log)
    g_bb = _softmin(eps, c_yy, b_log)
    for i in range(length):
        eps = eps_table[:, i]
        on = active[:, i][:, None]
        ft_ba = _softmin(eps, c_xy, b_log + g_ab / eps[:, None])
        gt_ab = _softmin(eps, c_yx, a_log + f_ba / eps[:, None])
        ft_aa = _softmin(eps, c_xx, a_log + f_aa / eps[:, None])
        gt_bb = _softmin(eps, c_yy, b_log + g_bb / eps[:, None])
        f_ba = np.where(on, 0.5 * (f_ba + ft_ba), f_ba)
        g_ab = np.where(on, 0.5 * (g_ab + gt_ab), g_ab)
        f_aa = np.where(on, 0.5 * (f_aa + ft_aa), f_aa)
        g_bb = np.where(on, 0.5 * (g_bb + gt_bb), g_bb)
    eps = np.full(rows, blur**p)  # the last temperature of every schedule
    f_ba, g_ab = (
        _softmin(eps, c_xy, b_log + g_ab / eps[:, None]),
        _softmin(eps, c_yx, a_log + f_ba / eps[:, None]),
    )
    f_aa = _softmin(eps, c_xx, a_log + f_aa / eps[:, None])
    g_bb = _softmin(eps, c_yy, b_log + g_bb / eps[:, None])
    a, b = 1.0 / n, 1.0 / m
    return (a * (f_ba - f_aa)).sum(axis=1) + (b * (g_ab - g_bb)).sum(axis=1)
