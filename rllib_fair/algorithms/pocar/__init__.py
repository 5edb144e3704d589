"""POCAR (A-PPO): PPO with fairness-regularised advantages (Yu et al. 2022)."""

from rllib_fair.algorithms.pocar.pocar import POCAR, POCARConfig

__all__ = ["POCAR", "POCARConfig"]
