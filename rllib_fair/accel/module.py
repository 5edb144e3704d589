"""The PPO module's forward passes layer by layer, and a cached train/eval mode.

Two per-call costs of RLlib's default PPO module, removed without changing an output:

* **Nested model wrappers.** RLlib's default PPO networks are ``TorchMLPEncoder`` /
  ``TorchMLPHead`` objects around an ``nn.Sequential``; each forward goes through the
  wrappers' dict plumbing (about a tenth of a sampling step at one env per runner). Where
  the module is exactly RLlib's default MLP (:func:`direct_train_plan`), the module's
  forward passes run the same layers with the same ops in the same order as flat lists
  (:func:`run_plan`): the same outputs and the same gradients, bit for bit
  (``tests/rllib/test_lean.py``).
* **Train/eval toggles.** ``TorchRLModule.forward_exploration`` and
  ``forward_inference`` call ``self.eval()`` on every step, and ``forward_train`` calls
  ``self.train()`` on every minibatch; each walks every submodule and sets an attribute
  on each. :class:`AcceleratedPPOModuleMixin` skips the walk when the module is already
  in the requested mode, and an env runner's inference-only copy starts in eval mode
  (the networks have no dropout or batch norm: outputs are equal).

Both run only where the module's ``model_config["accel"]`` is true (the config sets it
from :func:`rllib_fair.accel.gate.accel_active`; a module built without the key follows
the Ray-version gate alone).
"""

from __future__ import annotations

import torch
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.utils.annotations import override
from torch import nn

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


class AcceleratedPPOModuleMixin:
    """Put in front of ``DefaultPPOTorchRLModule`` (see the module docs).

    Every method falls back to RLlib's where :meth:`accel_on` is False or the networks
    are not RLlib's default MLP.
    """

    #: The layer-by-layer plan of the actor path (built on the first sampling forward;
    #: False where the module is not RLlib's default MLP or the layer is off).
    _direct_plan = None
    #: :func:`direct_train_plan` (built on the first train forward or value call).
    _train_plan = None
    #: The train/eval mode last set through :meth:`train` (None: not known).
    _cached_train_mode: bool | None = None
    #: Whether the speed layer runs in this module (decided on first use).
    _accel_on: bool | None = None

    def accel_on(self) -> bool:
        """``model_config["accel"]``; without the key, whether the Ray version is tested."""
        if self._accel_on is None:
            from rllib_fair.accel.gate import version_tested

            model_config = getattr(self, "model_config", None)
            if model_config is None:  # not set up yet: decide later
                return version_tested()
            flag = model_config.get("accel")
            self._accel_on = version_tested() if flag is None else bool(flag)
        return self._accel_on

    def accel_setup(self) -> None:
        """Called at the end of ``setup()``: an inference-only copy starts in eval mode.

        An env runner's copy only ever runs forward_exploration/_inference, which switch
        to eval mode and back to train mode on every step unless it starts in eval mode.
        """
        if self.accel_on() and self.inference_only:
            self.eval()

    @override(nn.Module)
    def train(self, mode: bool = True):
        """Sets train/eval mode recursively unless this module is already in ``mode``.

        The mode is remembered by the module itself: calling ``train``/``eval`` on a
        submodule directly bypasses the cache (nothing in RLlib or this package does).
        """
        mode = bool(mode)
        if not self.accel_on():
            return super().train(mode)
        if self._cached_train_mode is mode:
            return self
        out = super().train(mode)
        self._cached_train_mode = mode
        return out

    def layer_plan(self, seq) -> list | bool:
        """:func:`sequential_steps` of an extra head, or False (RLlib's path)."""
        if not self.accel_on():
            return False
        return sequential_steps(seq) or False

    @override(DefaultPPOTorchRLModule)
    def _forward(self, batch, **kwargs):
        """RLlib's exploration/inference forward, layer by layer where possible."""
        plan = self._direct_plan
        if plan is None:
            plan = self._direct_plan = self.accel_on() and direct_mlp_plan(self)
        if plan is False:
            return super()._forward(batch, **kwargs)
        return {Columns.ACTION_DIST_INPUTS: run_plan(plan, batch[Columns.OBS])}

    def _plans(self):
        plan = self._train_plan
        if plan is None:
            plan = self._train_plan = self.accel_on() and direct_train_plan(self)
        return plan

    @override(DefaultPPOTorchRLModule)
    def _forward_train(self, batch, **kwargs):
        """RLlib's train forward (actor and critic embeddings, logits), layer by layer.

        Same layers, same ops and the same order of graph construction as RLlib's
        nested path (actor encoder, critic encoder, pi head), so the outputs and the
        gradients are equal bit for bit; RLlib's path where the module is not its
        default MLP.
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

    @override(DefaultPPOTorchRLModule)
    def compute_values(self, batch, embeddings=None):
        """RLlib's ``compute_values`` (value head on the critic embeddings), layer by layer."""
        plan = self._plans()
        if plan is False or plan[3] is None:
            return super().compute_values(batch, embeddings=embeddings)
        actor, critic, _, vf = plan
        if embeddings is None:
            embeddings = run_plan(actor if critic is None else critic, batch[Columns.OBS])
        return run_plan(vf, embeddings).squeeze(-1)
