"""The PPO family's RLModule: RLlib's default PPO module plus a choice of initialisation.

``weight_init`` (a :class:`~rllib_fair.algorithms.ppo.ppo.FairPPOConfig` setting, passed
to the module through ``model_config``) picks how the networks start:

* ``"rllib"`` (default): RLlib's own initialisation, unchanged.
* ``"orthogonal"``: the scheme of the papers' Stable-Baselines3 / CleanRL-style code (the
  SELLF reference, ``fairrl/agents/policy.py`` ``layer_init``): every linear layer gets
  an orthogonal weight matrix (``torch.nn.init.orthogonal_``) with gain sqrt(2) and a zero
  bias, except the output layers: the policy's with gain 0.01 (so the initial policy is
  uniform: every logit is ~0), the value function's with gain 1. Extra heads of
  subclasses declare their output gain in :attr:`FairPPOTorchRLModule.OUTPUT_GAINS`.

The re-initialisation draws from torch's global generator, which RLlib seeds from
``config.seed`` in every process; data-parallel learners start from rank 0's weights
(DDP broadcasts them) and env runners receive the learner's weights before sampling.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.utils.annotations import override
from torch import nn

# The speed layer's forward passes (no private RLlib names; each falls back to RLlib's
# where the speed layer is off). ``run_plan`` and ``sequential_steps`` are what the
# family's modules with extra heads (SELLF, ELBERT-PO) run those heads with.
from rllib_fair.accel.module import AcceleratedPPOModuleMixin, run_plan, sequential_steps

__all__ = [
    "HIDDEN_GAIN",
    "WEIGHT_INITS",
    "FairPPOTorchRLModule",
    "apply_weight_init",
    "run_plan",
    "sequential_steps",
]

#: Valid values of ``weight_init``.
WEIGHT_INITS = ("rllib", "orthogonal")
#: Gain of every hidden layer under ``"orthogonal"`` (the reference's ``np.sqrt(2)``).
HIDDEN_GAIN = math.sqrt(2.0)


def apply_weight_init(module: nn.Module, scheme: str, output_gains: dict[str, float]) -> None:
    """Re-initialises ``module``'s linear layers in place under ``scheme``.

    Args:
        module: the RLModule (any ``nn.Module``).
        scheme: one of :data:`WEIGHT_INITS`; ``"rllib"`` leaves the module unchanged.
        output_gains: child attribute name -> gain of that child's last linear layer
            (its output layer); every other linear layer gets :data:`HIDDEN_GAIN`.

    Raises:
        ValueError: one line naming the bad scheme and the valid choices.
    """
    if scheme not in WEIGHT_INITS:
        raise ValueError(
            f"weight_init: {scheme!r} is invalid; valid choices: {', '.join(WEIGHT_INITS)}"
        )
    if scheme == "rllib":
        return
    outputs = {}
    for name, gain in output_gains.items():
        child = getattr(module, name, None)
        linears = [m for m in child.modules() if isinstance(m, nn.Linear)] if child else []
        if linears:
            outputs[id(linears[-1])] = gain
    with torch.no_grad():
        for layer in module.modules():
            if isinstance(layer, nn.Linear):
                nn.init.orthogonal_(layer.weight, gain=outputs.get(id(layer), HIDDEN_GAIN))
                if layer.bias is not None:
                    layer.bias.zero_()


class FairPPOTorchRLModule(AcceleratedPPOModuleMixin, DefaultPPOTorchRLModule):
    """RLlib's default PPO module; applies ``model_config["weight_init"]`` after setup.

    With the speed layer on (``model_config["accel"]``, set by the config), its forward
    passes run layer by layer and ``train``/``eval`` return at once when the mode is
    already set (:class:`~rllib_fair.accel.module.AcceleratedPPOModuleMixin`).

    Subclasses add their own networks in :meth:`setup_extra` (called before the
    initialisation, so those networks are re-initialised too) and name their output
    layers' gains in :attr:`OUTPUT_GAINS`.
    """

    #: Child attribute -> gain of its output layer under ``"orthogonal"``.
    OUTPUT_GAINS: ClassVar[dict[str, float]] = {"pi": 0.01, "vf": 1.0}

    @override(DefaultPPOTorchRLModule)
    def setup(self):
        """RLlib's networks, the subclass's extra networks, then the initialisation."""
        super().setup()
        self.setup_extra()
        apply_weight_init(self, self.model_config.get("weight_init", "rllib"), self.OUTPUT_GAINS)
        self.accel_setup()

    def setup_extra(self) -> None:
        """Hook for subclasses' extra networks; the base module has none."""
