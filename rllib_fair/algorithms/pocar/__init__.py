"""POCAR (A-PPO): PPO with fairness-regularised advantages (Yu et al. 2022)."""
