"""Cumulative regret of L-UCBFair against the exact constrained optimum (numpy, no Ray).

Eq. 3: ``Regret(K) = sum_k (V*_r(s_1^k) - V^{pi_k}_r(s_1^k))`` with ``V*`` the value of the
constrained problem of Eq. 1 (``max V_r`` subject to ``V_g >= b``) from the episode's
first state, and ``V^{pi_k}_r`` the realised ``sum_h r_h`` of episode ``k`` (an unbiased
estimate: the actions are drawn from ``pi_k``). ``V*`` comes from the backward DP of
:mod:`rllib_fair.fairness.replicator_dp` (our extension: state grid with bilinear
interpolation, actions restricted to the region centres, the comparator class of the
planner).

Every episode starts from a fresh random state, and :func:`~rllib_fair.fairness.
replicator_dp.constrained_optimum` runs up to 40 DP passes per state (about 0.3 s each
at ``H = 100`` on a 51-point grid). :class:`OptimumReference` instead computes the
Lagrangian DP once per multiplier of a fixed ladder ``nu_0 = 0 < nu_1 < ...`` (lazily,
memoised; at most ``len(nus)`` passes for the whole run) and evaluates each first state
from those solutions:

* the constraint is slack at ``nu = 0`` (the unconstrained optimum already meets
  ``V_g >= b``): ``V*`` is exact, as in ``constrained_optimum``'s first branch;
* it binds: the first feasible ladder multiplier ``nu_hi`` and the one below it
  ``nu_lo`` are mixed to meet ``V_g = b`` exactly as ``constrained_optimum`` mixes its
  bisection's end points. The mixture is a feasible policy, so its value is a lower bound
  of ``V*``; the dual function ``min_nu (V_nu(s_1) - nu b)`` over the ladder is an upper
  bound (weak duality). Both are equal when one policy switch lies between ``nu_lo`` and
  ``nu_hi`` (then this is the bisection's limit); the sum of the gaps is reported so
  a reader sees how tight the regret is;
* no ladder multiplier is feasible: ``V*`` is ``V_r`` of the largest multiplier's policy
  (``constrained_optimum``'s infeasible convention) and the episode is counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rllib_fair.fairness.replicator_dp import DPSolution, StepFn, lagrangian_dp_values

#: Default multiplier ladder: 0 and ``2^-6 .. 2^7`` (15 DP passes at most per run).
DEFAULT_NUS: tuple[float, ...] = (0.0,) + tuple(2.0**k for k in range(-6, 8))


@dataclass(frozen=True)
class OptimumBounds:
    """Bounds of ``V*_r`` at one first state.

    Attributes:
        lower: value of the feasible mixture (used for the regret).
        upper: the dual bound.
        binding: the constraint binds.
        feasible: some ladder multiplier meets ``V_g >= b``.
    """

    lower: float
    upper: float
    binding: bool
    feasible: bool


class OptimumReference:
    """``V*_r(s_1)`` of Eq. 1 for any first state from a memoised multiplier ladder.

    Args:
        step_fn: dynamics as in :mod:`rllib_fair.fairness.replicator_dp`.
        actions: ``[A, 2]`` candidate actions (L-UCBFair: the region centres).
        horizon: ``H``.
        threshold: ``b`` on the episode sum of ``g``.
        grid: state-grid points per axis of the DP.
        nus: multiplier ladder (sorted here; 0 is added when missing).
    """

    def __init__(
        self,
        step_fn: StepFn,
        actions: Any,
        horizon: int,
        threshold: float,
        grid: int = 51,
        nus: Sequence[float] = DEFAULT_NUS,
    ) -> None:
        self.step_fn = step_fn
        self.actions = np.atleast_2d(np.asarray(actions, dtype=np.float64))
        self.horizon = int(horizon)
        self.threshold = float(threshold)
        self.grid = int(grid)
        ladder = sorted({0.0, *(float(n) for n in nus)})
        if ladder[0] < 0.0:
            raise ValueError(f"nus={list(nus)}: expected multipliers >= 0")
        self.nus = tuple(ladder)
        self._solutions: dict[float, DPSolution] = {}

    def solution(self, nu: float) -> DPSolution:
        """The Lagrangian DP at ``nu`` (computed on first use)."""
        if nu not in self._solutions:
            self._solutions[nu] = lagrangian_dp_values(
                self.step_fn, self.actions, self.horizon, nu, self.grid
            )
        return self._solutions[nu]

    @property
    def dp_passes(self) -> int:
        """DP passes computed so far."""
        return len(self._solutions)

    def bounds(self, q0: Any) -> OptimumBounds:
        """Lower / upper bound of ``V*_r(q0)``; equal when the constraint is slack."""
        b = self.threshold
        upper = np.inf
        prev = None
        for nu in self.nus:
            v, vr, vg = self.solution(nu).at(q0)
            upper = min(upper, v - nu * b)  # dual function d(nu) >= V* (weak duality)
            if vg >= b:
                if prev is None:  # nu = 0 feasible: unconstrained optimum, exact
                    return OptimumBounds(vr, vr, False, True)
                vr_lo, vg_lo = prev
                mix = 1.0 if vg == vg_lo else (b - vg_lo) / (vg - vg_lo)
                mix = min(1.0, max(0.0, mix))
                lower = mix * vr + (1.0 - mix) * vr_lo
                return OptimumBounds(lower, max(lower, upper), True, True)
            prev = (vr, vg)
        return OptimumBounds(vr, vr, True, False)


class RegretTracker:
    """Accumulates Eq. 3's regret of realised episodes against :class:`OptimumReference`.

    Attributes:
        regret_sum: ``sum_k (V*_lower(s_1^k) - sum_h r_h^k)`` (the reported regret).
        gap_sum: ``sum_k (V*_upper - V*_lower)``: the regret with the dual bound is at
            most ``regret_sum + gap_sum``.
        episodes, binding, infeasible: episode counts.
    """

    def __init__(self, reference: OptimumReference) -> None:
        self.reference = reference
        self.regret_sum = 0.0
        self.gap_sum = 0.0
        self.episodes = 0
        self.binding = 0
        self.infeasible = 0

    def update(self, q0: np.ndarray, returns_r: np.ndarray) -> np.ndarray:
        """Adds episodes with first states ``q0[N, 2]`` and realised ``sum_h r_h`` ``[N]``.

        Returns:
            The per-episode regrets ``[N]``.
        """
        q0 = np.atleast_2d(np.asarray(q0, dtype=np.float64))
        returns_r = np.asarray(returns_r, dtype=np.float64).reshape(-1)
        out = np.empty(len(q0))
        for i, (q, ret) in enumerate(zip(q0, returns_r, strict=True)):
            bound = self.reference.bounds(q)
            out[i] = bound.lower - ret
            self.gap_sum += bound.upper - bound.lower
            self.binding += int(bound.binding)
            self.infeasible += int(not bound.feasible)
        self.regret_sum += float(out.sum())
        self.episodes += len(q0)
        return out

    def get_state(self) -> dict:
        """Sums and counts (the DP solutions are recomputed on demand)."""
        return {
            "regret_sum": self.regret_sum,
            "gap_sum": self.gap_sum,
            "episodes": self.episodes,
            "binding": self.binding,
            "infeasible": self.infeasible,
        }

    def set_state(self, state: dict) -> None:
        """Restores :meth:`get_state`."""
        self.regret_sum = float(state.get("regret_sum", 0.0))
        self.gap_sum = float(state.get("gap_sum", 0.0))
        for key in ("episodes", "binding", "infeasible"):
            setattr(self, key, int(state.get(key, 0)))
