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


def _hooked(*parts) -> bool:
    """Whether any of ``parts`` has a forward or forward-pre hook."""
    return any(p._forward_hooks or p._forward_pre_hooks for p in parts)


def _mlp_steps(model) -> list | None:
    """A ``TorchMLPEncoder``/``TorchMLPHead``'s layers as plan steps, or None.

    None unless the model is exactly that class (a head with no log-std clipping), with
    no hooks, over an ``nn.Sequential`` of ``nn.Linear`` and Tanh/ReLU/Sigmoid layers.
    """
    from ray.rllib.core.models.torch.encoder import TorchMLPEncoder
    from ray.rllib.core.models.torch.heads import TorchMLPHead

    if type(model) not in (TorchMLPEncoder, TorchMLPHead) or getattr(model, "clip_log_std", False):
        return None
    if _hooked(model, model.net):
        return None
    return sequential_steps(model.net.mlp)


def sequential_steps(seq) -> list | None:
    """:func:`run_plan` steps of an ``nn.Sequential``, or None.

    None unless every layer is an ``nn.Linear`` or a Tanh/ReLU/Sigmoid and no hook is
    registered on the layers, the container or globally.
    """
    from torch.nn.modules import module as torch_module

    if torch_module._global_forward_hooks or torch_module._global_forward_pre_hooks:
        return None
    if not isinstance(seq, nn.Sequential) or _hooked(seq):
        return None
    steps = []
    for layer in seq:
        if _hooked(layer):
            return None
        if type(layer) is nn.Linear:
            steps.append(layer)
        elif type(layer) in _ACTIVATIONS:
            steps.append(_ACTIVATIONS[type(layer)])
        else:
            return None
    return steps


def direct_train_plan(module) -> tuple | bool:
    """RLlib's default PPO networks as flat layer lists, or False.

    Returns ``(actor, critic, pi, vf)``: the actor encoder's, the critic encoder's (None
    where the encoder is shared), the pi head's and the value head's steps, each for
    :func:`run_plan`. False unless the module is stateless, its encoder is RLlib's
    ``TorchActorCriticEncoder`` over ``TorchMLPEncoder`` networks and its heads are
    ``TorchMLPHead`` networks (no log-std clipping), built of ``nn.Linear`` layers and
    Tanh, ReLU or Sigmoid activations, with no hooks anywhere (global ones included).
    An inference-only module (an env runner's copy) has no critic: its ``critic`` and
    ``vf`` are None.
    """
    encoder = getattr(module, "encoder", None)
    shared = getattr(getattr(encoder, "config", None), "shared", None)
    if (
        module.is_stateful()
        or type(encoder).__name__ != "TorchActorCriticEncoder"
        or _hooked(encoder, module)
    ):
        return False
    actor = _mlp_steps(getattr(encoder, "encoder" if shared else "actor_encoder", None))
    pi = _mlp_steps(getattr(module, "pi", None))
    if actor is None or pi is None:
        return False
    critic = vf = None
    if not module.inference_only:
        vf = _mlp_steps(getattr(module, "vf", None))
        if not shared:
            critic = _mlp_steps(getattr(encoder, "critic_encoder", None))
        if vf is None or (not shared and critic is None):
            return False
    return actor, critic, pi, vf


def direct_mlp_plan(module) -> list | bool:
    """The actor path obs -> encoder MLP -> pi MLP as one flat list of layers, or False.

    :func:`run_plan` then computes exactly what ``encoder(batch)[ENCODER_OUT][ACTOR]``
    followed by ``pi(...)`` computes (conditions: :func:`direct_train_plan`). The module
    builds its plans at its first forward and keeps them: a forward hook added to its
    layers after that is not called (set ``module._direct_plan = None`` and
    ``module._train_plan = None`` to rebuild).
    """
    plan = direct_train_plan(module)
    return False if plan is False else plan[0] + plan[2]


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
    #: :func:`direct_train_plan` (built on the first train forward or value call).
    _train_plan = None

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

    # -------------------------------------------------------------- train forward
    def _plans(self):
        plan = self._train_plan
        if plan is None:
            plan = self._train_plan = direct_train_plan(self)
        return plan

    def _forward_train(self, batch, **kwargs):
        """RLlib's train forward (actor and critic embeddings, logits), layer by layer.

        Same layers, same ops and the same order of graph construction as RLlib's
        nested path (actor encoder, critic encoder, pi head), so the outputs and the
        gradients are equal bit for bit (``tests/rllib/test_lean.py``); RLlib's path
        where the module is not its default MLP.
        """
        plan = self._plans()
        if plan is False or plan[3] is None:
            return super()._forward_train(batch, **kwargs)
        actor, critic, pi, _ = plan
        obs = batch[Columns.OBS]
        actor_out = run_plan(actor, obs)
        critic_out = actor_out if critic is None else run_plan(critic, obs)
        return {
            Columns.EMBEDDINGS: critic_out,
            Columns.ACTION_DIST_INPUTS: run_plan(pi, actor_out),
        }

    def compute_values(self, batch, embeddings=None):
        """RLlib's ``compute_values`` (value head on the critic embeddings), layer by layer."""
        plan = self._plans()
        if plan is False or plan[3] is None:
            return super().compute_values(batch, embeddings=embeddings)
        actor, critic, _, vf = plan
        if embeddings is None:
            embeddings = run_plan(actor if critic is None else critic, batch[Columns.OBS])
        return run_plan(vf, embeddings).squeeze(-1)

    def setup_extra(self) -> None:
        """Hook for subclasses' extra networks; the base module has none."""
