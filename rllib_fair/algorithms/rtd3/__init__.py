"""R-TD3 (Yin et al. 2023, Eq. 6): TD3 on the relaxed fairness reward."""

from rllib_fair.algorithms.rtd3.rtd3 import RTD3, RTD3Config

__all__ = ["RTD3", "RTD3Config"]
