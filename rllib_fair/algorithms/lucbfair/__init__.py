"""L-UCBFair (Yin et al. 2023, Algorithm 1): numpy core and RLlib algorithm.

The numpy core (``features``, ``lsvi``, ``core``, ``regret``, ``binding``) imports no Ray,
so the RLlib classes are handed on lazily: ``from rllib_fair.algorithms.lucbfair import
LUCBFair`` imports Ray, ``import rllib_fair.algorithms.lucbfair.core`` does not.
"""

from importlib import import_module

__all__ = ["LUCBFair", "LUCBFairConfig"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(import_module("rllib_fair.algorithms.lucbfair.lucbfair"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
