"""TD3 (Fujimoto et al. 2018) on RLlib SAC's machinery, with a fast numpy replay path."""

from rllib_fair.algorithms.td3.td3 import TD3, TD3Config

__all__ = ["TD3", "TD3Config"]
