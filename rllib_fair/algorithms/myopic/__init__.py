"""Myopic baselines of Yin et al. 2023 (Eq. 7a-d): per-step risk minimisers."""

from rllib_fair.algorithms.myopic.myopic import (
    Maxmin,
    MaxminConfig,
    MaxminFair,
    MaxminFairConfig,
    Myopic,
    MyopicConfig,
    MyopicFair,
    MyopicFairConfig,
)

__all__ = [
    "Maxmin",
    "MaxminConfig",
    "MaxminFair",
    "MaxminFairConfig",
    "Myopic",
    "MyopicConfig",
    "MyopicFair",
    "MyopicFairConfig",
]
