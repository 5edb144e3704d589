"""A learner mixin that logs statistics averaged over every minibatch of one update."""

from __future__ import annotations

import torch
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override


class UpdateMeanMetrics:
    """Learner mixin: statistics averaged over every minibatch of one update, logged once.

    Put it before the learner class in the bases (``class L(UpdateMeanMetrics,
    FairPPOTorchLearner)``). :meth:`add_update_means` adds one minibatch's values (0-dim
    tensors on the module's device) to running sums kept on that device; after the
    update's minibatch loop (:meth:`after_gradient_based_update`) the means are moved to
    the host in one transfer and logged with ``window=1``, so a result reports the mean
    over all of the update's minibatches (as the PPO-C and F-PPO-L reference code logs
    its diagnostics).
    """

    def add_update_means(self, module_id, values: dict[str, torch.Tensor]) -> None:
        """Adds one minibatch's ``{name: 0-dim tensor}`` to ``module_id``'s running sums."""
        sums = self.__dict__.setdefault("_update_means", {})
        names = tuple(values)
        stacked = torch.stack([v.detach().to(torch.float32) for v in values.values()])
        entry = sums.get(module_id)
        if entry is None or entry[0] != names:
            sums[module_id] = [names, stacked, 1]
        else:
            entry[1] = entry[1] + stacked
            entry[2] += 1

    @override(Learner)
    def before_gradient_based_update(self, *, timesteps) -> None:
        """Drops sums left by loss evaluations outside an update, then the parent's hook."""
        self.__dict__["_update_means"] = {}
        super().before_gradient_based_update(timesteps=timesteps)

    @override(Learner)
    def after_gradient_based_update(self, *, timesteps) -> None:
        """The parent's hook, then logs each module's means (one host transfer each)."""
        super().after_gradient_based_update(timesteps=timesteps)
        sums, self.__dict__["_update_means"] = self.__dict__.get("_update_means", {}), {}
        for module_id, (names, total, count) in sums.items():
            means = (total / count).tolist()
            self.metrics.log_dict(dict(zip(names, means, strict=True)), key=module_id, window=1)
