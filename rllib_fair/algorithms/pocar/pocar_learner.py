"""POCAR learner: regularises the advantages of each minibatch before PPO's loss."""

from __future__ import annotations

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing

from rllib_fair.algorithms.ppo.learner import FairPPOTorchLearner
from rllib_fair.rllib import keys


def _minmax(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Min-max normalisation over the masked entries, ``(x - min) / (max - min + 1e-8)``."""
    valid = x[mask]
    lo, hi = valid.min(), valid.max()
    return (x - lo) / (hi - lo + 1e-8)


def pocar_terms(
    disparity: torch.Tensor, disparity_prev: torch.Tensor, omega: float, timing: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """Value-thresholding and decrease-in-violation terms of A-PPO (Eq. 28).

    Args:
        disparity: Delta_t, per-step disparity after the decision at t.
        disparity_prev: Delta_{t-1}, before it.
        omega: tolerance.
        timing: ``"post"`` (reference code) or ``"pre"`` (paper's indexing).

    Returns:
        ``(vt, div)``, both <= 0.
    """
    if timing == "post":
        delta = disparity
        vt = torch.clamp(omega - delta, max=0.0)  # min(0, omega - Delta)
        # min(0, -1[Delta > omega] (Delta_t - Delta_{t-1})), the reference's div term
        div = torch.clamp(-(delta > omega).to(delta.dtype) * (delta - disparity_prev), max=0.0)
        return vt, div
    delta, delta_next = disparity_prev, disparity  # Delta(s_t), Delta(s_{t+1})
    vt = torch.clamp(omega - delta, max=0.0)  # Eq. 28, beta_1 term
    div = torch.clamp(delta - delta_next, max=0.0) * (delta > omega).to(delta.dtype)  # beta_2
    return vt, div


def regularize_advantages(
    advantages: torch.Tensor,
    disparity: torch.Tensor,
    disparity_prev: torch.Tensor,
    mask: torch.Tensor,
    *,
    beta_0: float,
    beta_1: float,
    beta_2: float,
    omega: float,
    normalization: str,
    timing: str,
) -> torch.Tensor:
    """POCAR's regularised advantage for one minibatch (see :mod:`.pocar`)."""
    disparity = disparity.to(advantages.dtype)
    disparity_prev = disparity_prev.to(advantages.dtype)
    vt, div = pocar_terms(disparity, disparity_prev, omega, timing)
    if normalization == "none":
        return beta_0 * advantages + beta_1 * vt + beta_2 * div  # Eq. 28
    combined = (
        beta_0 * _minmax(advantages, mask)
        + beta_1 * _minmax(vt, mask)
        + beta_2 * _minmax(div, mask)
    )
    valid = combined[mask]
    return (combined - valid.mean()) / (valid.std() + 1e-8)


class POCARTorchLearner(FairPPOTorchLearner):
    """PPO torch learner whose minibatch advantages are POCAR-regularised."""

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        """Replaces the advantages of this minibatch, then computes PPO's loss."""
        if keys.COL_DISPARITY not in batch:
            raise ValueError(
                "POCAR: the train batch has no 'fair_disparity' column; keep "
                "fairness_columns true and the FairnessMetricsCallback installed"
            )
        mask = batch.get(Columns.LOSS_MASK)
        if mask is None:
            mask = torch.ones_like(batch[Postprocessing.ADVANTAGES], dtype=torch.bool)
        mask = mask.bool()
        new_adv = regularize_advantages(
            batch[Postprocessing.ADVANTAGES],
            batch[keys.COL_DISPARITY],
            batch[keys.COL_DISPARITY_PREV],
            mask,
            beta_0=config.beta_0,
            beta_1=config.beta_1,
            beta_2=config.beta_2,
            omega=config.omega,
            normalization=config.advantage_normalization,
            timing=config.delta_timing,
        )
        batch = dict(batch)
        batch[Postprocessing.ADVANTAGES] = new_adv
        return super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
