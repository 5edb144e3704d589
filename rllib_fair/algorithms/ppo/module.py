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
from ray.rllib.core.columns import Columns
from torch import nn

from rllib_fair.rllib.lean import CachedTrainModeMixin

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


#: Activation modules run as their torch function in :func:`run_plan`.
_ACTIVATIONS = {nn.Tanh: torch.tanh, nn.ReLU: torch.relu, nn.Sigmoid: torch.sigmoid}


def direct_mlp_plan(module) -> list | bool:
    """The actor path obs -> encoder MLP -> pi MLP as a flat list of layers, or False.

    Only for RLlib's default PPO networks: an MLP actor encoder (shared with the value
    function or not) and an MLP pi head made of ``nn.Linear`` layers and Tanh, ReLU or
    Sigmoid activations; no state, no hooks. :func:`run_plan` then computes exactly what
    ``encoder(batch)[ENCODER_OUT][ACTOR]`` followed by ``pi(...)`` computes. The module
    builds the plan at its first sampling forward and keeps it: a forward hook added to
    its layers after that is not called (set ``module._direct_plan = None`` to rebuild).
    """
    from ray.rllib.core.models.torch.encoder import TorchMLPEncoder
    from ray.rllib.core.models.torch.heads import TorchMLPHead

    encoder = getattr(module, "encoder", None)
    shared = getattr(getattr(encoder, "config", None), "shared", None)
    # the actor path: the shared encoder, or the separate actor encoder
    actor = getattr(encoder, "encoder" if shared else "actor_encoder", None)
    pi = getattr(module, "pi", None)
    if (
        module.is_stateful()
        or type(encoder).__name__ != "TorchActorCriticEncoder"
        or encoder._forward_hooks
        or encoder._forward_pre_hooks
        or type(actor) is not TorchMLPEncoder
        or type(pi) is not TorchMLPHead
    ):
        return False
    plan = []
    for part in (actor, actor.net, pi, pi.net):
        if part._forward_hooks or part._forward_pre_hooks:
            return False
    for seq in (actor.net.mlp, pi.net.mlp):
        if not isinstance(seq, nn.Sequential) or seq._forward_hooks or seq._forward_pre_hooks:
            return False
        for layer in seq:
            if layer._forward_hooks or layer._forward_pre_hooks:
                return False
            if type(layer) is nn.Linear:
                plan.append(layer)
            elif type(layer) in _ACTIVATIONS:
                plan.append(_ACTIVATIONS[type(layer)])
            else:
                return False
    from torch.nn.modules import module as torch_module

    if torch_module._global_forward_hooks or torch_module._global_forward_pre_hooks:
        return False
    return plan


def run_plan(plan: list, x: torch.Tensor) -> torch.Tensor:
    """Applies a :func:`direct_mlp_plan` plan: ``F.linear`` for layers, else the function."""
    linear = torch.nn.functional.linear
    for step in plan:
        x = linear(x, step.weight, step.bias) if isinstance(step, nn.Linear) else step(x)
    return x


class FairPPOTorchRLModule(CachedTrainModeMixin, DefaultPPOTorchRLModule):
    """RLlib's default PPO module; applies ``model_config["weight_init"]`` after setup.

    Its ``train``/``eval`` return at once when the mode is already set
    (:class:`~rllib_fair.rllib.lean.CachedTrainModeMixin`: RLlib toggles the mode on
    every sampled step and every minibatch).

    Subclasses add their own networks in :meth:`setup_extra` (called before the
    initialisation, so those networks are re-initialised too) and name their output
    layers' gains in :attr:`OUTPUT_GAINS`.
    """

    #: Child attribute -> gain of its output layer under ``"orthogonal"``.
    OUTPUT_GAINS: ClassVar[dict[str, float]] = {"pi": 0.01, "vf": 1.0}

    #: The layer-by-layer plan of the actor path (built on the first sampling forward;
    #: False where the module is not RLlib's default MLP).
    _direct_plan = None

    def setup(self):
        """RLlib's networks, the subclass's extra networks, then the initialisation."""
        super().setup()
        self.setup_extra()
        apply_weight_init(self, self.model_config.get("weight_init", "rllib"), self.OUTPUT_GAINS)
        if self.inference_only:
            # An env runner's copy only ever runs forward_exploration/_inference, which
            # switch to eval mode and back to train mode on every step unless it starts
            # in eval mode (the MLP has no dropout or batch norm: outputs are equal).
            self.eval()

    # -------------------------------------------------------------- sampling forward
    def _forward(self, batch, **kwargs):
        """RLlib's exploration/inference forward, layer by layer where possible.

        Where the module is RLlib's default MLP (see :func:`direct_mlp_plan`): the same
        layers and ops give the same outputs, without the nested model wrappers'
        per-call overhead (about a tenth of a sampling step at one env per runner).
        """
        plan = self._direct_plan
        if plan is None:
            plan = self._direct_plan = direct_mlp_plan(self)
        if plan is False:
            return super()._forward(batch, **kwargs)
        return {Columns.ACTION_DIST_INPUTS: run_plan(plan, batch[Columns.OBS])}

    def setup_extra(self) -> None:
        """Hook for subclasses' extra networks; the base module has none."""
