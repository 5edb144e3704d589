"""Numpy core of Lee et al. (FAccT 2026): fairness under uncertainty in lending.

No Ray, no torch: the BiasOnDemand generator (:mod:`.bias_on_demand`), the logistic model
with delta-method confidence half-widths (:mod:`.logistic`), the five decision strategies
behind one :func:`~.strategies.decide` (:mod:`.strategies`), the quarterly loop
(:mod:`.loop`, entry point :func:`~.loop.run_quarters`) and the metrics (:mod:`.metrics`).
See ``README.md`` in this folder for the taxonomy, the equation-to-code map and the choices.
"""

from rllib_fair.uncertainty.bias_on_demand import BiasOnDemandConfig, BiasOnDemandData, generate
from rllib_fair.uncertainty.logistic import (
    GROUP_ENCODINGS,
    DesignTransform,
    LogisticModel,
    counterfactual_gradient,
    counterfactual_objective,
    delta_method_halfwidth,
    fisher_information,
    sigmoid,
)
from rllib_fair.uncertainty.loop import (
    QuarterlyAgent,
    QuarterlyConfig,
    QuarterlyProblem,
    QuarterRecord,
    make_streams,
    run_quarters,
)
from rllib_fair.uncertainty.metrics import (
    group_rates,
    profit,
    quarter_metrics,
    signed_differences,
    table1_bookkeeping,
    utility,
)
from rllib_fair.uncertainty.strategies import STRATEGIES, Decision, decide, eligible_mask

__all__ = [
    "GROUP_ENCODINGS",
    "STRATEGIES",
    "BiasOnDemandConfig",
    "BiasOnDemandData",
    "Decision",
    "DesignTransform",
    "LogisticModel",
    "QuarterRecord",
    "QuarterlyAgent",
    "QuarterlyConfig",
    "QuarterlyProblem",
    "counterfactual_gradient",
    "counterfactual_objective",
    "decide",
    "delta_method_halfwidth",
    "eligible_mask",
    "fisher_information",
    "generate",
    "group_rates",
    "make_streams",
    "profit",
    "quarter_metrics",
    "run_quarters",
    "sigmoid",
    "signed_differences",
    "table1_bookkeeping",
    "utility",
]
