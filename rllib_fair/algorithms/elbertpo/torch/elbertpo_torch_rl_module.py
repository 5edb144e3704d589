"""ELBERT-PO's RLModule: PPO's module plus one critic MLP for the supply/demand streams."""

from __future__ import annotations

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.utils.annotations import override
from torch import nn

from rllib_fair.accel.module import run_plan, sequential_steps
from rllib_fair.algorithms.ppo.torch.ppo_torch_rl_module import FairPPOTorchRLModule

_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "swish": nn.SiLU, "silu": nn.SiLU}


class ELBERTPOTorchRLModule(FairPPOTorchRLModule):
    """The PPO family's module with ``fair_vf``: obs -> 2 K M supply/demand values.

    The reference builds 2 M separate critic MLPs; here one MLP with the critic's hidden
    sizes outputs all streams (the streams share features, the cost is one extra critic
    forward pass). It exists on the learner only (``get_non_inference_attributes``), so
    env runners and weight sync are unchanged. Under ``weight_init: orthogonal`` its
    output layer gets the value function's gain 1.
    """

    OUTPUT_GAINS = {**FairPPOTorchRLModule.OUTPUT_GAINS, "fair_vf": 1.0}
    #: fair_vf's layers for :meth:`compute_fair_values` (built on its first call; False:
    #: the nested ``nn.Sequential`` call)
    _fair_vf_plan = None

    def setup_extra(self) -> None:
        """(Learner only) builds the supply/demand critic; PPO's networks exist already."""
        if self.inference_only:
            return
        n_out = int(self.model_config["fair_value_streams"])
        hiddens = list(self.model_config.get("fcnet_hiddens", [256, 256]))
        act_name = self.model_config.get("fcnet_activation", "tanh")
        act = _ACTIVATIONS.get(str(act_name).lower(), nn.Tanh)
        layers: list[nn.Module] = []
        width = int(np.prod(self.observation_space.shape))
        for h in hiddens:
            layers += [nn.Linear(width, h), act()]
            width = h
        layers.append(nn.Linear(width, n_out))
        self.fair_vf = nn.Sequential(*layers)

    @override(FairPPOTorchRLModule)
    def get_non_inference_attributes(self) -> list[str]:
        """PPO's learner-only attributes plus ``fair_vf``."""
        return super().get_non_inference_attributes() + ["fair_vf"]

    def compute_fair_values(self, batch: dict) -> torch.Tensor:
        """Values of the supply/demand streams, ``[B, 2 K M]`` (supply block first)."""
        obs = batch[Columns.OBS]
        x = obs.reshape(obs.shape[0], -1).float()
        plan = self._fair_vf_plan
        if plan is None:
            plan = self._fair_vf_plan = sequential_steps(self.fair_vf) or False
        # layer by layer: the same ops as the nn.Sequential, so the same values and
        # gradients, without its per-layer call overhead (run in every minibatch)
        return self.fair_vf(x) if plan is False else run_plan(plan, x)
