"""R-PPO: PPO on a reward penalised by the per-step disparity (Yu et al. 2022; Xu et al. 2024)."""

from rllib_fair.algorithms.rppo.rppo import RPPO, RPPOConfig

__all__ = ["RPPO", "RPPOConfig"]
