"""POCAR's torch learner."""
