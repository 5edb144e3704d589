"""RLlib glue: shared fairness config settings, metrics callback, learner connector, keys."""
