"""G-PPO: the unconstrained PPO baseline with rllib-fair's fairness settings and metrics."""
