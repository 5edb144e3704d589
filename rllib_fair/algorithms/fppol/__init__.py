"""F-PPO-L (Hu, Lear & Zhang 2023): A-PPO plus long-term distance terms between the groups."""

from rllib_fair.algorithms.fppol.fppol import FPPOL, FPPOLConfig

__all__ = ["FPPOL", "FPPOLConfig"]
