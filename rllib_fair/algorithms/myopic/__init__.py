"""Myopic baselines of Yin et al. 2023 (Eq. 7a-d): per-step risk minimisers."""
