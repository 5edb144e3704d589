"""Myopic baselines of the replicator population (Yin et al. 2023, Sec. 3.3, Eq. 7); numpy only.

A myopic baseline observes the current state and deploys the thresholds that minimise one
objective of the current step only (repeated risk minimisation), ignoring the dynamics:

* ``"myopic"`` (Eq. 7a): ``L``;
* ``"myopic_fair"`` (Eq. 7b): ``(1 - lam) L + lam D``;
* ``"maxmin"`` (Eq. 7c): ``max_k L_k``;
* ``"maxmin_fair"`` (Eq. 7d): ``(1 - lam) max_k L_k + lam D``;

with the environment's configured loss and disparity (see
:meth:`rllib_fair.envs.replicator.ReplicatorEnv.objective_values`). The paper optimises a
parameterised policy by "simple gradient descent"; here (our solver) the objective is
evaluated on a ``grid x grid`` lattice of thresholds, then refined by projected
gradient descent with central-difference gradients from the best lattice point (a step is
kept only if it lowers the objective, otherwise the step size is halved). Everything is
deterministic. Maxmin objectives can have many optimal thresholds (the better group's
threshold is free over a range), so compare objective values, not thresholds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rllib_fair.envs.base import as_count, as_positive
from rllib_fair.envs.replicator import OBJECTIVES, ReplicatorEnv

#: Half-width of the central differences of the numerical gradient.
GRADIENT_EPS = 1e-4


def myopic_action(
    env: Any,
    objective: str = "myopic",
    lam: float = 0.5,
    q: Any = None,
    grid: int = 101,
    iters: int = 100,
    step: float = 0.05,
    tol: float = 1e-10,
) -> np.ndarray:
    """Thresholds minimising a myopic objective at state ``q`` (lattice, then descent).

    Args:
        env: a :class:`~rllib_fair.envs.replicator.ReplicatorEnv` (or a gymnasium wrapper of
            one); its feature model, loss, disparity, utilities and group shares are used.
        objective: one of ``"myopic"``, ``"myopic_fair"``, ``"maxmin"``, ``"maxmin_fair"``.
        lam: fairness weight ``lam`` in ``[0, 1]`` of the ``"_fair"`` objectives.
        q: qualification rates ``(q_0, q_1)``; defaults to the env's current state.
        grid: lattice points per threshold (``>= 2``).
        iters: gradient-descent iterations after the lattice search (0 = lattice only).
        step: initial step size of the projected gradient descent.
        tol: stop when the gradient norm or the step size falls below ``tol``, and the
            smallest decrease of the objective a step must achieve to be kept.

    Returns:
        float64 ``[2]`` thresholds in ``[0, 1]``.

    Raises:
        ValueError: for an unknown objective or an argument out of range.
    """
    base = getattr(env, "unwrapped", env)
    if not isinstance(base, ReplicatorEnv):
        raise ValueError(
            f"env={type(env).__name__}: expected a ReplicatorEnv (or a wrapper of one)"
        )
    if not isinstance(objective, str) or objective not in OBJECTIVES:
        raise ValueError(f"objective={objective!r}: expected one of {list(OBJECTIVES)}")
    lam = as_positive("lam", lam, allow_zero=True, maximum=1.0)
    grid = as_count("grid", grid, minimum=2)
    iters = as_count("iters", iters, minimum=0)
    step = as_positive("step", step)
    tol = as_positive("tol", tol)
    q = base.q if q is None else np.asarray(q, dtype=np.float64).reshape(2)

    def values(points: np.ndarray) -> np.ndarray:
        return base.objective_values(points, q, objective, lam)

    axis = np.linspace(0.0, 1.0, grid)
    lattice = np.stack(np.meshgrid(axis, axis, indexing="ij"), axis=-1).reshape(-1, 2)
    lattice_values = values(lattice)
    best = int(np.argmin(lattice_values))  # first minimum: deterministic tie-break
    a = lattice[best].copy()
    f = float(lattice_values[best])
    h = step
    eye = np.eye(2) * GRADIENT_EPS
    for _ in range(iters):
        probes = np.clip(np.concatenate([a + eye, a - eye]), 0.0, 1.0)
        pv = values(probes)
        width = np.diag(probes[:2] - probes[2:])  # 2 eps inside, eps at a bound
        grad = (pv[:2] - pv[2:]) / width
        if float(np.linalg.norm(grad)) < tol:
            break
        cand = np.clip(a - h * grad, 0.0, 1.0)  # projected step
        fc = float(values(cand[None])[0])
        if fc < f - tol:
            a, f = cand, fc
        else:
            h *= 0.5
            if h < tol:
                break
    return a
