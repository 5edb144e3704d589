"""The myopic baselines' torch module (weight-free)."""
