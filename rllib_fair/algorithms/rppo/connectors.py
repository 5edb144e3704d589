"""R-PPO's learner connector piece: shapes the rewards right before GAE."""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.utils.annotations import override

from rllib_fair.rllib import keys


def disparity_penalty(disparity: torch.Tensor, omega: float, form: str) -> torch.Tensor:
    """The R-PPO penalty per step (before multiplying by zeta_1).

    Args:
        disparity: per-step disparity Delta_t after each decision.
        omega: tolerance.
        form: ``"hinge"``: ``max(0, Delta - omega)``; ``"threshold"``:
            ``Delta * 1[Delta >= omega]``.
    """
    if form == "hinge":
        return torch.clamp(disparity - omega, min=0.0)  # Eq. 27 with the hinge
    return disparity * (disparity >= omega).to(disparity.dtype)  # POCAR lending reference


class ShapeRewardsWithDisparity(ConnectorV2):
    """Replaces ``rewards`` by ``rewards - zeta_1 * penalty(fair_disparity)`` in the batch.

    Runs on the learner after the fairness columns and before GAE, so value targets and
    advantages use the shaped reward while env-runner episode returns stay unshaped.
    """

    def __init__(
        self, input_observation_space=None, input_action_space=None, *, zeta_1, omega, form, **kw
    ):
        super().__init__(input_observation_space, input_action_space, **kw)
        self.zeta_1 = float(zeta_1)
        self.omega = float(omega)
        self.form = form

    @override(ConnectorV2)
    def __call__(self, *, rl_module: Any, batch: dict, episodes: list, **kwargs) -> Any:
        """Shapes every module's reward column in place."""
        for module_batch in batch.values():
            if keys.COL_DISPARITY not in module_batch:
                continue
            rewards = module_batch[Columns.REWARDS]
            penalty = disparity_penalty(
                module_batch[keys.COL_DISPARITY].to(rewards.dtype), self.omega, self.form
            )
            # The bootstrap step is loss-masked and its reward stays 0.
            penalty = penalty * module_batch[keys.COL_VALID].to(rewards.dtype)
            module_batch[Columns.REWARDS] = rewards - self.zeta_1 * penalty
        return batch
