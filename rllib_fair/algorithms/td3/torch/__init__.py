"""Torch pieces of TD3: the RL module and the learner."""
