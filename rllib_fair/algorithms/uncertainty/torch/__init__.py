"""The lending strategies' torch module (numpy state, no torch parameters)."""
