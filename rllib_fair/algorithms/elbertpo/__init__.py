"""ELBERT-PO: PPO with the fairness-aware advantage of Xu et al. 2024."""
