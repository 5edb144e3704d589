"""SELLF's RLModule: PPO's module plus the label predictor phi(x, z)."""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.utils.annotations import override
from torch import nn

from rllib_fair.accel.module import run_plan, sequential_steps
from rllib_fair.algorithms.ppo.torch.ppo_torch_rl_module import FairPPOTorchRLModule
from rllib_fair.rllib import keys
from rllib_fair.rllib.distributed import exclude_from_ddp


class SELLFTorchRLModule(FairPPOTorchRLModule):
    """The PPO family's module with ``predictor``: obs -> logit of P(Y = 1 | x, z).

    The predictor is part of the inference module (env runners need it to impute the
    labels of rejected individuals): every forward pass adds
    :data:`rllib_fair.rllib.keys.LABEL_PREDICTION`, which RLlib stores per step in the
    episode. With ``predictor_hiddens: []`` it is the paper's logistic model (App. E);
    under ``weight_init: orthogonal`` its output layer gets the reference's gain 0.01.
    """

    OUTPUT_GAINS = {**FairPPOTorchRLModule.OUTPUT_GAINS, "predictor": 0.01}
    #: phi's layers for :meth:`predict_logits` (built on its first call; False: nested)
    _predictor_plan = None

    def setup_extra(self) -> None:
        """Builds the predictor (PPO's networks exist already)."""
        width = int(np.prod(self.observation_space.shape))
        layers: list[nn.Module] = []
        for h in self.model_config.get("predictor_hiddens", []):
            layers += [nn.Linear(width, h), nn.Tanh()]
            width = h
        layers.append(nn.Linear(width, 1))
        self.predictor = nn.Sequential(*layers)
        # phi is trained by its own loss (Eq. 7) outside PPO's, so data-parallel
        # learners (num_learners >= 2) must not expect it in the DDP-reduced loss; the
        # learner keeps the copies equal instead (see rllib_fair.rllib.distributed).
        exclude_from_ddp(self, "predictor")

    def predict_logits(self, obs: torch.Tensor) -> torch.Tensor:
        """Logits of P(Y = 1 | x, z), shape ``[B]``.

        phi runs layer by layer (the same ops as its ``nn.Sequential``, so the same
        values and gradients) unless hooks make it take the nested path.
        """
        plan = self._predictor_plan
        if plan is None:
            plan = self._predictor_plan = sequential_steps(self.predictor) or False
        x = obs
        if x.dim() != 2 or x.dtype != torch.float32:
            x = obs.reshape(obs.shape[0], -1).float()
        return (self.predictor(x) if plan is False else run_plan(plan, x)).squeeze(-1)

    @override(FairPPOTorchRLModule)
    def _forward(self, batch, **kwargs):
        out = super()._forward(batch, **kwargs)
        # the env runners' forward runs without autograd already: no second no_grad
        with torch.no_grad() if torch.is_grad_enabled() else contextlib.nullcontext():
            out[keys.LABEL_PREDICTION] = torch.sigmoid(self.predict_logits(batch[Columns.OBS]))
        return out
