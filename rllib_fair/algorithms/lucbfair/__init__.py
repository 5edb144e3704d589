"""L-UCBFair (Yin et al. 2023, Algorithm 1): numpy core and RLlib algorithm."""
