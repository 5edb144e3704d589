"""POCAR learner: regularises the advantages of each minibatch before PPO's loss."""

from __future__ import annotations

import torch
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.annotations import override

from rllib_fair.algorithms.common.advantages import minmax, regularizer_terms
from rllib_fair.algorithms.common.torch.regularizer_max import log_regularizer_max
from rllib_fair.algorithms.ppo.torch.ppo_torch_learner import FairPPOTorchLearner
from rllib_fair.rllib import keys


def combine_advantages(
    advantages: torch.Tensor,
    vt: torch.Tensor,
    div: torch.Tensor,
    mask: torch.Tensor,
    *,
    beta_0: float,
    beta_1: float,
    beta_2: float,
    normalization: str,
) -> torch.Tensor:
    """The weighted sum of PPO's advantage and the terms of :func:`regularizer_terms`."""
    if normalization == "none":
        return beta_0 * advantages + beta_1 * vt + beta_2 * div  # Eq. 28
    combined = beta_0 * minmax(advantages, mask) + beta_1 * vt + beta_2 * div
    valid = combined[mask]
    return (combined - valid.mean()) / (valid.std() + 1e-8)


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
    """POCAR's regularised advantage for one minibatch (Eq. 28; see the POCAR config module)."""
    vt, div = regularizer_terms(
        disparity,
        disparity_prev,
        mask,
        omega=omega,
        normalization=normalization,
        timing=timing,
        dtype=advantages.dtype,
    )
    return combine_advantages(
        advantages,
        vt,
        div,
        mask,
        beta_0=beta_0,
        beta_1=beta_1,
        beta_2=beta_2,
        normalization=normalization,
    )


class POCARTorchLearner(FairPPOTorchLearner):
    """PPO torch learner whose minibatch advantages are POCAR-regularised."""

    @override(FairPPOTorchLearner)
    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        """Replaces the advantages of this minibatch, then computes PPO's loss."""
        if keys.COL_DISPARITY not in batch:
            raise ValueError(
                "POCAR: the train batch has no 'fair_disparity' column; keep "
                "fairness_columns true and the FairnessMetricsCallback installed"
            )
        mask = self.valid_mask(batch)
        advantages = batch[Postprocessing.ADVANTAGES]
        vt, div = regularizer_terms(
            batch[keys.COL_DISPARITY],
            batch[keys.COL_DISPARITY_PREV],
            mask,
            omega=config.omega,
            normalization=config.advantage_normalization,
            timing=config.delta_timing,
            dtype=advantages.dtype,
        )
        log_regularizer_max(self.metrics, module_id, vt, div, mask)
        new_adv = combine_advantages(
            advantages,
            vt,
            div,
            mask,
            beta_0=config.beta_0,
            beta_1=config.beta_1,
            beta_2=config.beta_2,
            normalization=config.advantage_normalization,
        )
        batch = dict(batch)
        batch[Postprocessing.ADVANTAGES] = new_adv
        return super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
