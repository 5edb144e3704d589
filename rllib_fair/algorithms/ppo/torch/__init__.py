"""Torch pieces of G-PPO: the RL module and the learner every PPO-family method builds on."""
