"""PPO-C, PPO-Cb, PPO-KL and F-PPO-L (Lear & Zhang, ICLR 2025)."""
