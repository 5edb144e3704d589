"""The PPO family's torch learner: RLlib's PPO learner with a choice of Adam.

Every PPO-family learner (G-PPO's, R-PPO's, POCAR's, ELBERT-PO's, SELLF's, PPO-C's,
F-PPO-L's) subclasses :class:`FairPPOTorchLearner`. What it adds to RLlib's
``PPOTorchLearner``:

* ``optimizer_impl`` (:class:`~rllib_fair.algorithms.ppo.ppo.FairPPOConfig`): Adam as
  torch's multi-tensor kernel (``"foreach"``, bit-identical to RLlib's on CPU; with the
  speed layer on, :class:`~rllib_fair.accel.flat_adam.FlatAdam`, the same numbers on one
  buffer per parameter group), the fused kernel or RLlib's own construction;
  ``adam_epsilon`` where a config has one;
* the speed layer's hooks: with the layer on, the config's ``learner_class`` is this
  class behind :class:`~rllib_fair.accel.learner.LeanLearnerMixin` (:attr:`ACCEL_MIXIN`),
  which sets :attr:`accel_loss` (PPO's loss as :func:`~rllib_fair.accel.ppo_loss.lean_ppo_loss`)
  and answers :meth:`last_value_log_due`. With the layer off, RLlib's loop and loss run.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.annotations import override

# ``minibatch_masked_mean`` is also what ELBERT-PO's extra value loss averages with.
from rllib_fair.accel.ppo_loss import lean_loss_applies, lean_ppo_loss, minibatch_masked_mean

__all__ = ["OPTIMIZER_IMPLS", "FairPPOTorchLearner", "minibatch_masked_mean"]

#: ``optimizer_impl`` values: how the PPO family's Adam runs.
OPTIMIZER_IMPLS = ("foreach", "fused", "rllib")


class FairPPOTorchLearner(PPOTorchLearner):
    """RLlib's ``PPOTorchLearner`` with the configured Adam (see the module docs).

    Configs with an ``adam_epsilon`` attribute (PPO-C's family, POCAR / A-PPO, F-PPO-L:
    the Stable-Baselines3 value 1e-5 their reference code trains with) get Adam with that
    epsilon; the others keep torch's default (1e-8).
    """

    #: Where the speed layer's mixin for this learner lives (``module:Class``).
    ACCEL_MIXIN: ClassVar[str] = "rllib_fair.accel.learner:LeanLearnerMixin"
    #: True in the speed layer's learner: Discrete-action modules get
    #: :func:`~rllib_fair.accel.ppo_loss.lean_ppo_loss` (RLlib's loss, same tensors).
    accel_loss: ClassVar[bool] = False
    #: True in the speed layer's learner: ``optimizer_impl: foreach`` builds
    #: :class:`~rllib_fair.accel.flat_adam.FlatAdam` (the same numbers, on one buffer).
    accel_flat_adam: ClassVar[bool] = False

    def make_adam(self, params, **kwargs) -> torch.optim.Adam:
        """``torch.optim.Adam(params, **kwargs)`` in the configured ``optimizer_impl``.

        For learners that build their own Adam (another epsilon, a second optimiser).
        """
        impl = getattr(self.config, "optimizer_impl", "rllib")
        if impl == "foreach" and self.accel_flat_adam:
            from rllib_fair.accel.flat_adam import FlatAdam

            return FlatAdam(params, **kwargs)
        if impl != "rllib":
            kwargs[impl] = True
        return torch.optim.Adam(params, **kwargs)

    @override(PPOTorchLearner)
    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        """Adam over the module's parameters (``make_adam``; ``adam_epsilon`` if any)."""
        eps = getattr(config, "adam_epsilon", None)
        if eps is None and getattr(self.config, "optimizer_impl", "rllib") == "rllib":
            return super().configure_optimizers_for_module(module_id, config)
        params = self.get_parameters(self.module[module_id])
        kwargs = {} if eps is None else {"eps": float(eps)}
        self.register_optimizer(
            module_id=module_id,
            optimizer=self.make_adam(params, **kwargs),
            params=params,
            lr_or_lr_schedule=config.lr,
        )
        return None

    @staticmethod
    def valid_mask(batch) -> torch.Tensor:
        """The minibatch's rows that count in the loss, as a bool tensor.

        RLlib's loss mask (False on the bootstrap step appended to each episode chunk),
        or every row of the advantages' shape where the batch has no mask.
        """
        mask = batch.get(Columns.LOSS_MASK)
        if mask is None:
            return torch.ones_like(batch[Postprocessing.ADVANTAGES], dtype=torch.bool)
        return mask.bool()

    def last_value_log_due(self) -> bool:
        """Whether a ``window=1`` record made now can reach the update's result.

        Always in RLlib's update loop; the speed layer's loop answers for its minibatches
        (:meth:`rllib_fair.accel.learner.LeanLearnerMixin.last_value_log_due`).
        Statistics that are only logged (not part of the loss) can be skipped when False.
        """
        return True

    @override(PPOTorchLearner)
    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        """PPO's loss: :func:`lean_ppo_loss` with the speed layer on, else RLlib's."""
        module = self.module[module_id].unwrapped()
        if self.accel_loss and lean_loss_applies(module):
            return lean_ppo_loss(
                self,
                module_id=module_id,
                config=config,
                batch=batch,
                fwd_out=fwd_out,
                module=module,
            )
        return super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
