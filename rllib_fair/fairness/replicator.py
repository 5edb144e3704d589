"""Per-step losses, disparities and rewards of the replicator-dynamics population (numpy only).

Yin, Raab, Liu, Liu (NeurIPS 2023), "Long-Term Fairness with Unknown Dynamics"; the paper's
equations had to be rebuilt from its words (the text we have lost most symbols; see
``docs/methods/yin2023.md``) and the disparity / loss definitions follow the supplementary
code of the paper (its loss / disparity functions file: ``loss_tp_frac``, ``loss_tp_tn``,
``loss_qr``, ``equal_opportunity_disparity``, ``equalized_odds_disparity``).

* Disparities (paper Sec. 2, "D(s, a) = ||xi(g1) - xi(g2)||^2"): :func:`squared_disparity`
  ``sum_{i<j} (v_i - v_j)^2`` of a per-group statistic, and the four named ones
  :func:`dp_disparity` (acceptance rates), :func:`eop_disparity` (true positive rates),
  :func:`eo_disparity` (half TPR term plus half TNR term), :func:`qr_disparity`
  (post-update qualification rates). For two groups and rates in ``[0, 1]`` every value
  lies in ``[0, 1]``; with more groups the reference formula can exceed 1, so only the
  utility ``g = 1 - D`` is clipped (:func:`utility`).
* Losses (Eq. 8): ``L = 1 - sum_k pi_k (w_tp tp_k + w_tn tn_k)`` (:func:`classification_loss`)
  with the presets of :data:`LOSS_WEIGHTS`, the group-conditioned ``L_k`` of the Maxmin
  baselines (:func:`group_losses`) and the qualification loss :func:`qr_loss`. Weights in
  ``[0, 1]`` keep ``L`` in ``[0, 1]`` because ``tp_k + tn_k <= 1``.
* Rewards: ``r = 1 - L``, ``g = 1 - D``; the Lagrangian reward ``1 - ((1 - lam) L + lam D)``
  and the time-relaxed reward of R-TD3 (Eq. 6) with the reference's sharpening
  ``psi_kappa(D) = 1 - (1 - D)^kappa`` and the schedule ``lambda_t = min(1, lambda_final t/H)``.
* Episode aggregates (cumulative loss / disparity, mean episode loss) and the regret and
  distortion of Eqs. 2-3.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Names of the per-step disparities.
DISPARITIES: tuple[str, ...] = ("dp", "eop", "eo", "qr")

#: (w_tp, w_tn) of the classification-loss presets (Eq. 8; ``tp_tn`` weight 0.7 on tn as
#: the reference ``loss_tp_tn``). The ``qr`` loss is not of this form (:func:`qr_loss`).
LOSS_WEIGHTS: dict[str, tuple[float, float]] = {
    "tp": (1.0, 0.0),
    "tp_tn": (1.0, 0.7),
    "zero_one": (1.0, 1.0),
}

#: Names of every loss preset (the three of :data:`LOSS_WEIGHTS` plus ``qr``).
LOSSES: tuple[str, ...] = ("tp", "tp_tn", "zero_one", "qr")


# ----------------------------------------------------------------------------- disparities


def squared_disparity(values: Any) -> Any:
    """``sum_{i<j} (v_i - v_j)^2`` over the last axis (the groups).

    Equals the reference's ``sum_{i,j} (v_i - v_j)^2 / 2``. Computed as
    ``G sum v^2 - (sum v)^2``; for two groups ``(v_0 - v_1)^2`` exactly.

    Returns:
        A float for a 1-d input, else an array of the leading shape.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.shape[-1] == 2:
        out = (v[..., 0] - v[..., 1]) ** 2
    else:
        diff = v[..., :, None] - v[..., None, :]
        out = 0.5 * np.sum(diff * diff, axis=(-2, -1))
    return float(out) if np.ndim(out) == 0 else out


def dp_disparity(accept_rate: Any) -> Any:
    """Demographic-parity disparity: squared gap of ``P(Y_hat = 1 | G = k)`` (paper Sec. 2)."""
    return squared_disparity(accept_rate)


def eop_disparity(tpr: Any) -> Any:
    """Equal-opportunity disparity: squared gap of the true positive rates."""
    return squared_disparity(tpr)


def eo_disparity(tpr: Any, tnr: Any) -> Any:
    """Equalized-odds disparity: ``0.5 sqdiff(TPR) + 0.5 sqdiff(TNR)`` (reference form)."""
    return 0.5 * squared_disparity(tpr) + 0.5 * squared_disparity(tnr)


def qr_disparity(q_next: Any) -> Any:
    """Qualification-rate disparity: squared gap of the post-update rates ``q'_k``."""
    return squared_disparity(q_next)


# ----------------------------------------------------------------------------- losses


def classification_loss(tp: Any, tn: Any, shares: Any, w_tp: float, w_tn: float) -> Any:
    """Eq. 8: ``L = 1 - sum_k pi_k (w_tp tp_k + w_tn tn_k)`` (groups on the last axis).

    Args:
        tp: per-group ``tp_k = P(Y_hat = 1, Y = 1 | G = k)``, shape ``[..., G]``.
        tn: per-group ``tn_k = P(Y_hat = 0, Y = 0 | G = k)``, shape ``[..., G]``.
        shares: group shares ``pi_k``, shape ``[G]``.
        w_tp: weight of true positives in ``[0, 1]``.
        w_tn: weight of true negatives in ``[0, 1]``.
    """
    gain = w_tp * np.asarray(tp, dtype=np.float64) + w_tn * np.asarray(tn, dtype=np.float64)
    out = 1.0 - gain @ np.asarray(shares, dtype=np.float64)
    return float(out) if np.ndim(out) == 0 else out


def group_losses(tp: Any, tn: Any, w_tp: float, w_tn: float) -> np.ndarray:
    """Group-conditioned losses ``L_k = 1 - (w_tp tp_k + w_tn tn_k)`` (Eq. 7c-d, no ``pi_k``)."""
    return 1.0 - (w_tp * np.asarray(tp, dtype=np.float64) + w_tn * np.asarray(tn, np.float64))


def qr_loss(q_next: Any, shares: Any) -> Any:
    """Qualification loss ``L = 1 - sum_k pi_k q'_k`` (reference ``loss_qr``, post-update)."""
    out = 1.0 - np.asarray(q_next, dtype=np.float64) @ np.asarray(shares, dtype=np.float64)
    return float(out) if np.ndim(out) == 0 else out


# ----------------------------------------------------------------------------- rewards


def reward(loss: Any) -> Any:
    """``r = 1 - L`` (paper Sec. 2)."""
    return 1.0 - loss


def utility(disparity: Any) -> Any:
    """``g = 1 - D`` clipped to ``[0, 1]`` (paper Sec. 2; clipping matters for G > 2 only)."""
    return np.clip(1.0 - np.asarray(disparity, dtype=np.float64), 0.0, 1.0)[()]


def lambda_schedule(t: Any, horizon: int, lambda_final: float = 1.0) -> Any:
    """R-TD3 weight ``lambda_t = min(1, lambda_final * t / H)`` of the ``t``-th step, ``t = 1..H``.

    Eq. 6 uses ``lambda_t = t / H`` (``lambda_final = 1``); the reference ``RelaxationEnv``
    adds ``lbd / episode_len`` before computing each reward, i.e. ``t`` starts at 1.
    """
    return np.minimum(1.0, lambda_final * np.asarray(t, dtype=np.float64) / horizon)[()]


def sharpen(disparity: Any, kappa: float = 20.0) -> Any:
    """``psi_kappa(D) = 1 - (1 - D)^kappa`` (reference ``RelaxationEnv``, kappa = 20)."""
    return (1.0 - (1.0 - np.asarray(disparity, dtype=np.float64)) ** kappa)[()]


def relaxed_reward(loss: Any, disparity: Any, lam: Any, kappa: float = 1.0) -> Any:
    """Eq. 6 (R-TD3): ``1 - ((1 - lam) L + lam psi_kappa(D))``.

    ``kappa = 1`` gives Eq. 6 exactly (``(1 - lam) r + lam g``); the reference used 20.
    """
    return (1.0 - ((1.0 - lam) * np.asarray(loss, np.float64) + lam * sharpen(disparity, kappa)))[
        ()
    ]


def lagrangian_reward(loss: Any, disparity: Any, lam: float) -> Any:
    """``1 - ((1 - lam) L + lam D)`` with a constant ``lam`` (reference ``reward_fn_``)."""
    return relaxed_reward(loss, disparity, lam, 1.0)


# ----------------------------------------------------------------------------- episodes


def cumulative_loss(losses: Any) -> float:
    """``sum_h L_h`` over one episode (paper Fig. 4)."""
    return float(np.sum(np.asarray(losses, dtype=np.float64)))


def cumulative_disparity(disparities: Any) -> float:
    """``sum_h D_h`` over one episode (paper Fig. 4)."""
    return float(np.sum(np.asarray(disparities, dtype=np.float64)))


def mean_episode_loss(losses: Any) -> float:
    """``(1/H) sum_h L_h`` over one episode (paper Figs. 1 e, 2 a3 / b3)."""
    arr = np.asarray(losses, dtype=np.float64)
    return float(arr.mean()) if arr.size else 0.0


def episode_values(losses: Any, disparities: Any) -> tuple[float, float]:
    """Realised ``(V_r, V_g) = (sum_h (1 - L_h), sum_h (1 - D_h))`` of one episode."""
    losses = np.asarray(losses, dtype=np.float64)
    return float(np.sum(1.0 - losses)), float(np.sum(utility(disparities)))


def regret(optimal_values: Any, values: Any) -> float:
    """Eqs. 2-3: ``Regret(K) = sum_k (V*_r(s_1^k) - V^{pi_k}_r(s_1^k))``.

    With one episode this is Eq. 2. ``optimal_values`` may be a scalar (same start state
    every episode) or one value per episode.
    """
    values = np.asarray(values, dtype=np.float64)
    return float(np.sum(np.broadcast_to(optimal_values, values.shape) - values))


def distortion(threshold: float, utilities: Any) -> float:
    """Eqs. 2-3: ``Distortion(K) = max(0, sum_k (b - V^{pi_k}_g(s_1^k)))``."""
    utilities = np.asarray(utilities, dtype=np.float64)
    return float(max(0.0, float(np.sum(threshold - utilities))))
