"""F-PPO-L's torch learner."""
