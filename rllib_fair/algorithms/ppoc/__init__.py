"""PPO-C, PPO-Cb and PPO-KL (Lear & Zhang, ICLR 2025); F-PPO-L has its own folder."""

from rllib_fair.algorithms.ppoc.ppoc import (
    PPOC,
    PPOKL,
    PPOCb,
    PPOCbConfig,
    PPOCConfig,
    PPOKLConfig,
)

__all__ = ["PPOC", "PPOCConfig", "PPOCb", "PPOCbConfig", "PPOKL", "PPOKLConfig"]
