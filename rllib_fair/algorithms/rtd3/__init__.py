"""R-TD3 (Yin et al. 2023, Eq. 6): TD3 on the relaxed fairness reward."""
