"""SELLF: long-term fairness with selective labels (Valdrighi et al.)."""
