"""G-PPO, the unconstrained baseline: RLlib's PPO plus the shared fairness settings.

The policy is trained on the environment reward only ("greedy" PPO in Yu et al. 2022
and Xu et al. 2024). What it adds over ``ray.rllib.algorithms.ppo.PPO``: the typed
``fairness(...)`` settings, the fairness metrics callback and the fairness train-batch
columns, all from :class:`~rllib_fair.rllib.config.FairnessConfigMixin`.
"""

from __future__ import annotations

from ray.rllib.algorithms.ppo import PPO, PPOConfig

from rllib_fair.rllib.config import FairnessConfigMixin


class FairPPOConfig(FairnessConfigMixin, PPOConfig):
    """PPOConfig with the shared fairness settings (see ``FairnessConfigMixin``).

    Example:
        >>> from rllib_fair.algorithms.ppo.ppo import FairPPOConfig
        >>> config = (
        ...     FairPPOConfig()
        ...     .environment("fair/Lending-v0")
        ...     .fairness(notion="equal_opportunity")
        ... )
    """

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or FairPPO)


class FairPPO(PPO):
    """RLlib PPO whose default config is :class:`FairPPOConfig`."""

    @classmethod
    def get_default_config(cls) -> FairPPOConfig:
        """Returns a fresh :class:`FairPPOConfig`."""
        return FairPPOConfig()
