"""PPO-C's torch learner."""
