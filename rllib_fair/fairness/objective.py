"""ELBERT's fairness-aware advantage (Xu et al. 2024, Sec. 3; App. E).

The objective ``J(pi) = eta(pi) - alpha * h(z) (+ zeta * eta^D_{g*})`` with
``z_g = eta^S_g / eta^D_g`` the long-term benefit rates and ``h = sum_k b_k^2`` (one gap
per supply-demand pair: Eq. 3 for one pair, Eq. 9 for equalized odds' two pairs), with
``b`` the exact gap (Eq. 1) or the soft gap of temperature ``beta`` (Eq. 6-7). Prop. 3.2
turns its gradient into a policy gradient with the fairness-aware advantage

    A^fair_t = A_t - alpha * sum_{k,g} dh/dz_{k,g} (A^S_{k,g,t} / eta^D_{k,g}
               - eta^S_{k,g} A^D_{k,g,t} / (eta^D_{k,g})^2)  (+ zeta A^D_{g*,t})

(Eq. 5; Eq. 30 with the demand regulariser). This module computes the per-stream
weights of that sum, so an algorithm forms ``A^fair = A - alpha (A^S . w^S + A^D . w^D)``
with whatever tensor library it uses, and the exact gradient test checks the same code.
numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rllib_fair.fairness.ledger import DEMAND_EPS, bias, bias_grad, soft_bias, soft_bias_grad


@dataclass(frozen=True)
class FairAdvantageWeights:
    """Weights of the supply and demand advantages in Eq. 5 (and Eq. 30).

    Attributes:
        supply: ``dh/dz / eta^D``, shape ``[K, G]``.
        demand: ``-dh/dz * eta^S / (eta^D)^2`` (plus ``-zeta / alpha`` on the regularised
            group's demand when ``alpha > 0``), shape ``[K, G]``.
        rates: the long-term benefit rates ``z = eta^S / eta^D`` (0 where undefined).
        defined: where ``eta^D > 0``.
        gap: ``b`` (or ``b_soft``) per pair, shape ``[K]``.
        h: ``sum_k gap_k^2``.
    """

    supply: np.ndarray
    demand: np.ndarray
    rates: np.ndarray
    defined: np.ndarray
    gap: np.ndarray
    h: float


def fair_advantage_weights(
    eta_supply,
    eta_demand,
    *,
    beta: float | None = None,
    alpha: float = 1.0,
    demand_zeta: float = 0.0,
    demand_group: int | None = None,
) -> FairAdvantageWeights:
    """Per-stream weights of the fairness term of the fairness-aware advantage.

    Args:
        eta_supply: cumulative supply per pair and group, ``[K, G]``.
        eta_demand: cumulative demand per pair and group, ``[K, G]``.
        beta: soft-gap temperature (Eq. 6); None uses the exact gap (Eq. 1), whose
            gradient is +1 at the largest and -1 at the smallest rate.
        alpha: the bias coefficient; only used to fold the demand regulariser into the
            demand weights (``A^fair = A - alpha (A^S . w^S + A^D . w^D)``).
        demand_zeta: zeta of the demand regulariser (Eq. 29-30), 0 to switch it off.
        demand_group: the group whose demand is regularised (pair 0); None picks the
            group with the lowest benefit rate.

    Returns:
        The weights; groups with zero demand get zero weight (their rate is undefined
        and excluded from the gap, see :mod:`rllib_fair.fairness.ledger`).
    """
    eta_s = np.atleast_2d(np.asarray(eta_supply, dtype=np.float64))
    eta_d = np.atleast_2d(np.asarray(eta_demand, dtype=np.float64))
    defined = eta_d > DEMAND_EPS
    safe_d = np.where(defined, eta_d, 1.0)
    z = np.where(defined, eta_s / safe_d, 0.0)
    if beta is None:
        gap = np.asarray(bias(z, defined), dtype=np.float64).reshape(-1)
        dgap = bias_grad(z, defined)
    else:
        gap = np.asarray(soft_bias(z, beta, defined), dtype=np.float64).reshape(-1)
        dgap = soft_bias_grad(z, beta, defined)
    dh = 2.0 * gap[:, None] * dgap  # h = sum_k b_k^2 (Eq. 3, 7, 9)
    w_s = np.where(defined, dh / safe_d, 0.0)  # Eq. 5: (1 / eta^D) A^S
    w_d = np.where(defined, -dh * eta_s / safe_d**2, 0.0)  # Eq. 5: -(eta^S / eta^D^2) A^D
    if demand_zeta:
        if alpha <= 0:
            raise ValueError(f"alpha: {alpha!r} must be > 0 when demand_zeta is used")
        g = (
            int(np.argmin(np.where(defined[0], z[0], np.inf)))
            if demand_group is None
            else demand_group
        )
        w_d = w_d.copy()
        w_d[0, g] -= demand_zeta / alpha  # Eq. 30: + zeta A^D_{g*} = - alpha (-zeta/alpha) A^D
    return FairAdvantageWeights(w_s, w_d, z, defined, gap, float(np.sum(gap**2)))


def fair_advantage(
    advantages,
    supply_advantages,
    demand_advantages,
    eta_supply,
    eta_demand,
    *,
    alpha: float,
    beta: float | None = None,
    demand_zeta: float = 0.0,
    demand_group: int | None = None,
) -> np.ndarray:
    """The fairness-aware advantage of Eq. 5 (Eq. 30 with ``demand_zeta``), numpy.

    Args:
        advantages: reward advantages ``A``, shape ``[...]``.
        supply_advantages: supply advantages, shape ``[..., K, G]``.
        demand_advantages: demand advantages, shape ``[..., K, G]``.
        eta_supply: cumulative supply, ``[K, G]``.
        eta_demand: cumulative demand, ``[K, G]``.
        alpha: bias coefficient.
        beta: soft-gap temperature, or None for the exact gap.
        demand_zeta: demand regulariser strength.
        demand_group: regularised group (None: lowest benefit rate).

    Returns:
        ``A^fair`` with the shape of ``advantages``.
    """
    w = fair_advantage_weights(
        eta_supply,
        eta_demand,
        beta=beta,
        alpha=alpha,
        demand_zeta=demand_zeta,
        demand_group=demand_group,
    )
    a_s = np.asarray(supply_advantages, dtype=np.float64)
    a_d = np.asarray(demand_advantages, dtype=np.float64)
    fairness = np.sum(a_s * w.supply, axis=(-2, -1)) + np.sum(a_d * w.demand, axis=(-2, -1))
    return np.asarray(advantages, dtype=np.float64) - alpha * fairness  # Eq. 5
