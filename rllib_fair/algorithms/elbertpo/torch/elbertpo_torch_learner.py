"""ELBERT-PO torch learner: PPO's loss plus the supply/demand value loss."""

from __future__ import annotations

from ray.rllib.core.columns import Columns
from ray.rllib.utils.annotations import override

from rllib_fair.accel.ppo_loss import minibatch_masked_mean
from rllib_fair.algorithms.elbertpo.connectors import FAIR_VALUE_TARGETS, ELBERTAdvantage
from rllib_fair.algorithms.ppo.torch.ppo_torch_learner import FairPPOTorchLearner


class ELBERTPOTorchLearner(FairPPOTorchLearner):
    """PPO torch learner with ELBERT-PO's advantage and supply/demand value loss."""

    @override(FairPPOTorchLearner)
    def build(self) -> None:
        """Builds PPO's learner and appends :class:`ELBERTAdvantage` after its GAE."""
        super().build()
        self._elbert_connector = None
        if self._learner_connector is not None:
            self._elbert_connector = ELBERTAdvantage(config=self.config)
            self._learner_connector.append(self._elbert_connector)

    def fairness_batch_state(self) -> dict[str, float]:
        """The last batch's eta^S, eta^D, rates, gap and h (equal on every learner)."""
        return {} if self._elbert_connector is None else dict(self._elbert_connector.last_stats)

    @override(FairPPOTorchLearner)
    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        """PPO's loss plus ``vf_loss_coeff`` x the mean squared error of the streams.

        The masked mean over the minibatch's valid rows is the PPO loss's own
        (:func:`~rllib_fair.accel.ppo_loss.minibatch_masked_mean`: the valid rows
        are found once per minibatch, no boolean indexing where all rows are valid). The
        connector's batch estimates are the same on every minibatch of an update; they
        and the stream loss are logged (``window=1``) where such a record reaches the
        result (``last_value_log_due``: the last minibatch of a lean update).
        """
        total = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        module = self.module[module_id].unwrapped()
        pred = module.compute_fair_values(batch)
        err = (pred - batch[FAIR_VALUE_TARGETS]) ** 2
        mask = batch.get(Columns.LOSS_MASK)
        if mask is not None:
            mask = mask.bool()  # the same tensor where it is bool already (the PPO loss's)
        fair_vf_loss = minibatch_masked_mean(self, mask)(err.sum(dim=-1))
        if self.last_value_log_due():
            self.metrics.log_value((module_id, "fair_vf_loss"), fair_vf_loss.detach(), window=1)
            if self._elbert_connector is not None:
                for key, value in self._elbert_connector.last_stats.items():
                    self.metrics.log_value((module_id, key), value, window=1)
        return total + config.vf_loss_coeff * fair_vf_loss
