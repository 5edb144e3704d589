"""ELBERT-PO: PPO with the fairness-aware advantage of Xu et al. 2024."""

from rllib_fair.algorithms.elbertpo.elbertpo import ELBERTPO, ELBERTPOConfig

__all__ = ["ELBERTPO", "ELBERTPOConfig"]
