"""TD3's update loop without RLlib's per-minibatch slicing and per-parameter checks.

At one gradient step per env step, TD3's learner runs thousands of tiny updates per
iteration, and RLlib's bookkeeping around each costs more than the networks. Two costs
are removed here, each without changing an update (``tests/algorithms/test_td3.py``
compares the weights with RLlib's path):

* **Minibatches.** TD3's fast replay path hands one ``update()`` call ``n x B`` rows
  already drawn uniformly at random; one pass over them in order (``num_epochs=1``, no
  shuffle) is what RLlib's ``MiniBatchCyclicIterator`` yields, here by plain tensor
  slicing instead of ``SampleBatch`` slicing per minibatch.
* **Optimizer steps.** RLlib's ``apply_gradients`` checks every gradient tensor for
  nan/inf (a host sync each) and steps every optimizer of the module; here the
  gradients are set and only the optimizers of the side being updated (the critics or
  the actor) are stepped. Non-finite gradients are not zeroed as RLlib would (RLlib's
  path runs with torch lr schedulers configured).
"""

from __future__ import annotations

from ray.rllib.core.learner.learner import Learner
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.annotations import override


class FastTD3LearnerMixin:
    """Put in front of :class:`~rllib_fair.algorithms.td3.torch.td3_torch_learner.TD3TorchLearner`.

    Made by :func:`rllib_fair.accel.classes.accelerated_class` when the config's
    speed layer and its learner part are on.
    """

    @override(Learner)
    def _create_iterator_if_necessary(
        self,
        *,
        training_data,
        num_total_minibatches: int = 0,
        num_epochs: int = 1,
        minibatch_size: int | None = None,
        shuffle_batch_per_epoch: bool = False,
        **kwargs,
    ):
        """Consecutive minibatches by plain tensor slicing for the fast replay path.

        Any other input (episodes, several modules, more than one pass, a shuffle, rows
        not a multiple of the minibatch size) goes through RLlib's iterator.
        """
        batch = training_data.batch
        if (
            training_data.episodes is None
            and training_data.data_iterators is None
            and isinstance(batch, MultiAgentBatch)
            and minibatch_size
            and num_epochs == 1
            and not shuffle_batch_per_epoch
            and not num_total_minibatches
            and len(batch.policy_batches) == 1
            and len(next(iter(batch.policy_batches.values()))) % minibatch_size == 0
        ):
            tensors = self._make_batch_if_necessary(training_data=training_data)
            return consecutive_minibatches(tensors, minibatch_size)
        return super()._create_iterator_if_necessary(
            training_data=training_data,
            num_total_minibatches=num_total_minibatches,
            num_epochs=num_epochs,
            minibatch_size=minibatch_size,
            shuffle_batch_per_epoch=shuffle_batch_per_epoch,
            **kwargs,
        )

    def step_optimizers(self, gradients_dict, *, critic: bool) -> None:
        """Sets the gradients and steps the critics' optimizers or the actor's.

        RLlib's ``apply_gradients`` (the learner's own method) where torch lr schedulers
        are configured.
        """
        if self._lr_scheduler_classes is not None:
            return super().step_optimizers(gradients_dict, critic=critic)
        for pid, grad in gradients_dict.items():
            self._params[pid].grad = grad
        for module_id in self._module_optimizers:
            for name, optim in self.get_optimizers_for_module(module_id):
                if (name == "policy") != critic:
                    optim.step()
        return None


def consecutive_minibatches(batch: MultiAgentBatch, size: int):
    """Yields ``len // size`` consecutive single-module minibatches of ``size`` rows."""
    ((module_id, module_batch),) = batch.policy_batches.items()
    columns = dict(module_batch)
    for i in range(len(module_batch) // size):
        rows = slice(i * size, (i + 1) * size)
        yield MultiAgentBatch(
            {module_id: SampleBatch({k: v[rows] for k, v in columns.items()})}, env_steps=size
        )
