"""Torch learner pieces shared by several algorithm folders."""
