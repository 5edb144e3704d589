"""G-PPO: the unconstrained PPO baseline with rllib-fair's fairness settings and metrics."""

from rllib_fair.algorithms.ppo.ppo import FairPPO, FairPPOConfig

__all__ = ["FairPPO", "FairPPOConfig"]
