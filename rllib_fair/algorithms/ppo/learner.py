"""The PPO family's torch learner: RLlib's PPO learner with the lean update path.

Every PPO-family learner (G-PPO's, R-PPO's, POCAR's, ELBERT-PO's, SELLF's, PPO-C's,
F-PPO-L's) subclasses :class:`FairPPOTorchLearner`, so ``lean_learner`` and
``optimizer_impl`` (:class:`~rllib_fair.algorithms.ppo.ppo.FairPPOConfig`) reach all of
them; what the lean path changes is in :mod:`rllib_fair.rllib.lean_learner`.
"""

from __future__ import annotations

from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

from rllib_fair.rllib.lean_learner import LeanLearnerMixin


class FairPPOTorchLearner(LeanLearnerMixin, PPOTorchLearner):
    """RLlib's ``PPOTorchLearner`` behind :class:`LeanLearnerMixin`."""
