"""L-UCBFair's torch module (numpy plan, no torch parameters)."""
