"""The lending strategies of Lee et al. (FAccT 2026) as RLlib algorithms."""

from rllib_fair.algorithms.uncertainty.uncertainty import (
    VARIANTS,
    Uncertainty,
    UncertaintyAware,
    UncertaintyAwareConfig,
    UncertaintyConfig,
    UncertaintyCounterfactual,
    UncertaintyCounterfactualConfig,
    UncertaintyNaiveExploration,
    UncertaintyNaiveExplorationConfig,
    UncertaintyProbWeighted,
    UncertaintyProbWeightedConfig,
)

__all__ = [
    "VARIANTS",
    "Uncertainty",
    "UncertaintyAware",
    "UncertaintyAwareConfig",
    "UncertaintyConfig",
    "UncertaintyCounterfactual",
    "UncertaintyCounterfactualConfig",
    "UncertaintyNaiveExploration",
    "UncertaintyNaiveExplorationConfig",
    "UncertaintyProbWeighted",
    "UncertaintyProbWeightedConfig",
]
