"""POCAR learner: regularises the advantages of each minibatch before PPO's loss."""

from __future__ import annotations

import torch
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.annotations import override

from rllib_fair.algorithms.common.advantages import minmax, pocar_terms
from rllib_fair.algorithms.ppo.torch.ppo_torch_learner import FairPPOTorchLearner
from rllib_fair.rllib import keys


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
    disparity = disparity.to(advantages.dtype)
    disparity_prev = disparity_prev.to(advantages.dtype)
    vt, div = pocar_terms(disparity, disparity_prev, omega, timing)
    if normalization == "none":
        return beta_0 * advantages + beta_1 * vt + beta_2 * div  # Eq. 28
    combined = (
        beta_0 * minmax(advantages, mask) + beta_1 * minmax(vt, mask) + beta_2 * minmax(div, mask)
    )
    valid = combined[mask]
    return (combined - valid.mean()) / (valid.std() + 1e-8)


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
