"""SELLF: long-term fairness with selective labels (Valdrighi et al.)."""

from rllib_fair.algorithms.sellf.sellf import SELLF, SELLFConfig

__all__ = ["SELLF", "SELLFConfig"]
