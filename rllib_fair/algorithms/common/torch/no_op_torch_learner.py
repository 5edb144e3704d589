"""The learner of algorithms that never update a torch module.

RLlib builds a learner group for every algorithm. The myopic baselines, L-UCBFair and the
lending strategies decide from numpy state their ``Algorithm`` maintains; their modules
have no parameters, so their learner registers no optimizer and computes no loss.
"""

from __future__ import annotations

from ray.rllib.core.learner.learner import Learner
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.utils.annotations import override


class NoOpLearner(TorchLearner):
    """A learner with no optimizer and no DDP wrap (its module has no parameters)."""

    @override(TorchLearner)
    def configure_optimizers_for_module(self, module_id, config=None):
        """Registers nothing: the module has no parameters."""

    @override(TorchLearner)
    def _make_modules_ddp_if_necessary(self) -> None:
        """Never wraps the module in DDP.

        Torch refuses DDP for a module without parameters, and with no gradients there is
        nothing to all-reduce: several learners stay identical.
        """

    @override(Learner)
    def compute_loss_for_module(self, **kwargs):
        """Never called: these algorithms never update their learners."""
        raise NotImplementedError(f"{type(self).__name__}: this algorithm never trains a module")
