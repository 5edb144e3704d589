"""R-PPO's torch learner."""
