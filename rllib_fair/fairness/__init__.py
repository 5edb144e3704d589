"""Fairness core of rllib-fair (numpy only): counts, notions, ledgers, metrics.

* :mod:`~rllib_fair.fairness.counts`: the per-group, per-step counts record every
  environment puts into ``info["fairness"]``.
* :mod:`~rllib_fair.fairness.notions`: fairness notions as supply and demand over the
  counts (Xu et al. 2024, Sec. 2 and App. A), looked up by short name.
* :mod:`~rllib_fair.fairness.ledger`: long-term benefit rates, bias (Eq. 1), soft bias
  (Eq. 6) and their gradients, the cumulative :class:`Ledger`, and the per-step
  :class:`WindowedDisparity` used by POCAR and SELLF. Its module docstring states the
  zero-demand convention used throughout.
* :mod:`~rllib_fair.fairness.metrics`: static metrics with fairlearn's names.
* :mod:`~rllib_fair.fairness.selective`: disparity under selective labels (SELLF): true,
  accepted-only and imputed utilities, the Theorem 3.1 decomposition, and a sliding
  window over the last ``n`` decisions.
* :mod:`~rllib_fair.fairness.replicator`: per-step squared disparities, the Eq. 8 losses,
  relaxed / Lagrangian rewards, regret and distortion of the replicator population (Yin
  et al. 2023); :mod:`~rllib_fair.fairness.replicator_dp`: its exact constrained optimum
  by backward DP (``lagrangian_dp_values``, ``constrained_optimum``).
* :mod:`~rllib_fair.fairness.qualification`: qualification gain, its causal decomposition
  and benefit fairness (Lear & Zhang 2025); :mod:`~rllib_fair.fairness.sinkhorn`: the
  debiased Sinkhorn divergence between 1-D point clouds that F-PPO-L's reference uses;
  :mod:`~rllib_fair.fairness.qualification_metrics`: the qualification-gain metric block.
* :mod:`~rllib_fair.fairness.blocks`: fairness metrics by declaration: the metric blocks an
  environment declares (``METRIC_BLOCKS``: the notions' block, the selective-labels block),
  its label-hiding rule (``LABEL_HIDING``) and the annotators an algorithm declares
  (``ENV_RUNNER_ANNOTATORS``), which the metrics callback runs on the env runners.
"""

from rllib_fair.fairness import (
    counts,
    ledger,
    metrics,
    notions,
    objective,
    replicator,
    replicator_dp,
    selective,
)
from rllib_fair.fairness.counts import (
    FIELDS,
    NUM_FIELDS,
    counts_as_dict,
    counts_from_decisions,
    decision_counts,
    empty_counts,
)
from rllib_fair.fairness.ledger import (
    DEMAND_EPS,
    Ledger,
    WindowedDisparity,
    benefit_rates,
    bias,
    bias_grad,
    difference,
    disparity_series,
    ratio,
    soft_bias,
    soft_bias_grad,
)
from rllib_fair.fairness.metrics import (
    accuracy_parity_difference,
    demographic_parity_difference,
    demographic_parity_ratio,
    equal_opportunity_difference,
    equal_opportunity_ratio,
    equalized_odds_difference,
    equalized_odds_ratio,
    group_rates,
    qualification_parity_difference,
)
from rllib_fair.fairness.notions import (
    NOTIONS,
    AccuracyParity,
    BenefitRate,
    DemographicParity,
    EqualizedOdds,
    EqualOpportunity,
    Notion,
    QualificationParity,
    get_notion,
    list_notions,
)
from rllib_fair.fairness.objective import (
    FairAdvantageWeights,
    fair_advantage,
    fair_advantage_weights,
)
from rllib_fair.fairness.selective import (
    LABEL_SOURCES,
    SELECTIVE_NOTIONS,
    UNDEFINED_UTILITY_RULES,
    GroupUtilities,
    ImputationTerms,
    SelectiveCarry,
    SelectiveDisparities,
    SelectiveWindow,
    group_utilities,
    imputation_bias,
    imputation_terms,
    running_selective_disparity,
    selective_disparity,
    selective_disparity_series,
)

__all__ = [
    "DEMAND_EPS",
    "FIELDS",
    "NOTIONS",
    "NUM_FIELDS",
    "AccuracyParity",
    "FairAdvantageWeights",
    "fair_advantage",
    "fair_advantage_weights",
    "BenefitRate",
    "DemographicParity",
    "EqualOpportunity",
    "EqualizedOdds",
    "Ledger",
    "Notion",
    "QualificationParity",
    "WindowedDisparity",
    "accuracy_parity_difference",
    "benefit_rates",
    "bias",
    "bias_grad",
    "counts",
    "counts_as_dict",
    "counts_from_decisions",
    "decision_counts",
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "difference",
    "disparity_series",
    "empty_counts",
    "equal_opportunity_difference",
    "equal_opportunity_ratio",
    "equalized_odds_difference",
    "equalized_odds_ratio",
    "get_notion",
    "group_rates",
    "ledger",
    "list_notions",
    "metrics",
    "notions",
    "objective",
    "qualification_parity_difference",
    "ratio",
    "replicator",
    "replicator_dp",
    "soft_bias",
    "soft_bias_grad",
    # selective labels (SELLF)
    "LABEL_SOURCES",
    "SELECTIVE_NOTIONS",
    "UNDEFINED_UTILITY_RULES",
    "GroupUtilities",
    "ImputationTerms",
    "SelectiveCarry",
    "SelectiveDisparities",
    "SelectiveWindow",
    "group_utilities",
    "imputation_bias",
    "imputation_terms",
    "running_selective_disparity",
    "selective",
    "selective_disparity",
    "selective_disparity_series",
]
