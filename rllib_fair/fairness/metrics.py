"""Static fairness metrics with fairlearn's names, built on the notions.

Each function takes one static dataset (one row per individual), aggregates it into a
single counts record with :func:`~rllib_fair.fairness.counts.counts_from_decisions`, maps
it to supply and demand with the matching notion, and compares the per-group rates. A
static dataset is therefore exactly one step of the sequential machinery, and static and
sequential numbers agree by construction.

Signatures and results follow ``fairlearn.metrics`` (``y_true, y_pred, *,
sensitive_features, method="between_groups", sample_weight=None``); inputs may be lists,
numpy arrays or pandas Series (read with ``np.asarray``, pandas is never imported).
Labels and decisions are 0/1 (booleans work; fractional values in ``[0, 1]`` are read as
probabilities and give expected counts). ``sensitive_features`` may be one column of any
sortable values or a 2-d array whose rows are combined into groups, as in fairlearn.

``method="between_groups"`` compares the largest and smallest group rate;
``method="to_overall"`` compares each group with the rate on the whole dataset (largest
absolute difference, smallest ratio expressed as a number <= 1).

Zero-demand convention (differs from the ledger on purpose): like fairlearn, which
computes rates with scikit-learn's ``zero_division`` default, a group that is present but
has zero demand (e.g. no qualified individual for the true positive rate) gets rate
``0.0`` **and takes part in the gap**. The sequential :class:`~rllib_fair.fairness.ledger.Ledger`
instead excludes such groups (see :mod:`rllib_fair.fairness.ledger`). One further
difference: when every group's rate is 0 the ratio here is ``1.0`` (all groups equal)
where fairlearn returns NaN.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from rllib_fair.fairness.counts import counts_from_decisions
from rllib_fair.fairness.ledger import benefit_rates
from rllib_fair.fairness.ledger import bias as _between_difference
from rllib_fair.fairness.ledger import ratio as _between_ratio
from rllib_fair.fairness.notions import Notion, get_notion

__all__ = [
    "accuracy_parity_difference",
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "equal_opportunity_difference",
    "equal_opportunity_ratio",
    "equalized_odds_difference",
    "equalized_odds_ratio",
    "group_rates",
    "qualification_parity_difference",
]

Method = Literal["between_groups", "to_overall"]
Agg = Literal["worst_case", "mean"]
_METHODS = ("between_groups", "to_overall")
_AGGS = ("worst_case", "mean")


def _encode_groups(sensitive_features) -> tuple[np.ndarray, np.ndarray]:
    """Returns ``(group codes 0..G-1, group labels)``; rows of a 2-d input are combined."""
    features = np.asarray(sensitive_features)
    if features.ndim == 2 and features.shape[1] == 1:
        features = features[:, 0]
    if features.ndim == 1:
        labels, codes = np.unique(features, return_inverse=True)
        return codes.reshape(-1), labels
    if features.ndim != 2:
        raise ValueError(
            f"sensitive_features must be 1-d or 2-d (rows = individuals), got {features.shape}"
        )
    column_codes = []
    sizes = []
    for j in range(features.shape[1]):
        values, codes = np.unique(features[:, j], return_inverse=True)
        column_codes.append(codes.reshape(-1))
        sizes.append(len(values))
    combined = np.ravel_multi_index(tuple(column_codes), tuple(sizes))
    keys, codes = np.unique(combined, return_inverse=True)
    labels = np.stack(np.unravel_index(keys, tuple(sizes)), axis=-1)
    return codes.reshape(-1), labels


def group_rates(
    notion: str | Notion,
    y_true,
    y_pred,
    *,
    sensitive_features,
    sample_weight=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-group and overall rates of a notion on a static dataset (fairlearn convention).

    Args:
        notion: notion or short name.
        y_true: 0/1 labels (1 = qualified).
        y_pred: 0/1 decisions (1 = selected).
        sensitive_features: group membership per individual.
        sample_weight: optional non-negative weight per individual.

    Returns:
        ``(rates [K, G], overall [K], groups)``: the per-group rates (0.0 for a present
        group with zero demand), the rates on the whole dataset, and the sorted group
        labels that index the columns.

    Raises:
        ValueError: on empty or inconsistent inputs.
    """
    notion = get_notion(notion)
    codes, labels = _encode_groups(sensitive_features)
    if codes.shape[0] == 0:
        raise ValueError("empty input: need at least one individual")
    counts = counts_from_decisions(y_true, y_pred, codes, len(labels), sample_weight=sample_weight)
    supply, demand = notion.supply_demand(counts)  # [K, G]
    rates, _ = benefit_rates(supply, demand)
    overall, _ = benefit_rates(supply.sum(axis=-1), demand.sum(axis=-1))
    return rates, overall, labels


def _check_method(method: str) -> None:
    if method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(_METHODS)}; got {method!r}")


def _differences(rates: np.ndarray, overall: np.ndarray, method: str) -> np.ndarray:
    """Per-pair difference ``[K]``: ``max - min`` or ``max |rate - overall|``."""
    _check_method(method)
    if method == "between_groups":
        return np.asarray(_between_difference(rates), dtype=np.float64).reshape(-1)
    return np.max(np.abs(rates - overall[:, None]), axis=-1)


def _ratios(rates: np.ndarray, overall: np.ndarray, method: str) -> np.ndarray:
    """Per-pair ratio ``[K]``: ``min / max`` or the smallest ``min(r/o, o/r)``."""
    _check_method(method)
    if method == "between_groups":
        return np.asarray(_between_ratio(rates), dtype=np.float64).reshape(-1)
    reference = np.broadcast_to(overall[:, None], rates.shape)
    small = np.minimum(rates, reference)
    large = np.maximum(rates, reference)
    # Equal rates (also both 0) give 1; one of them 0 and the other not gives 0.
    per_group = np.divide(small, large, out=np.ones_like(rates), where=large > 0.0)
    return np.min(per_group, axis=-1)


def _difference(notion: str, y_true, y_pred, sensitive_features, method, sample_weight):
    rates, overall, _ = group_rates(
        notion, y_true, y_pred, sensitive_features=sensitive_features, sample_weight=sample_weight
    )
    return _differences(rates, overall, method)


def _ratio(notion: str, y_true, y_pred, sensitive_features, method, sample_weight):
    rates, overall, _ = group_rates(
        notion, y_true, y_pred, sensitive_features=sensitive_features, sample_weight=sample_weight
    )
    return _ratios(rates, overall, method)


def _aggregate(values: np.ndarray, agg: str, worst) -> float:
    if agg not in _AGGS:
        raise ValueError(f"agg must be one of {', '.join(_AGGS)}; got {agg!r}")
    return float(worst(values) if agg == "worst_case" else np.mean(values))


def demographic_parity_difference(
    y_true,
    y_pred,
    *,
    sensitive_features,
    method: Method = "between_groups",
    sample_weight=None,
) -> float:
    """Largest minus smallest group selection rate ``P(A = 1 | G = g)``.

    Args:
        y_true: 0/1 labels (unused by the rate; kept for fairlearn's signature).
        y_pred: 0/1 decisions.
        sensitive_features: group membership per individual.
        method: ``"between_groups"`` or ``"to_overall"``.
        sample_weight: optional weight per individual.

    Returns:
        The difference; 0 means every group has the same selection rate.
    """
    return float(
        _difference(
            "demographic_parity", y_true, y_pred, sensitive_features, method, sample_weight
        )[0]
    )


def demographic_parity_ratio(
    y_true,
    y_pred,
    *,
    sensitive_features,
    method: Method = "between_groups",
    sample_weight=None,
) -> float:
    """Smallest over largest group selection rate.

    Args:
        y_true: 0/1 labels (unused by the rate; kept for fairlearn's signature).
        y_pred: 0/1 decisions.
        sensitive_features: group membership per individual.
        method: ``"between_groups"`` or ``"to_overall"``.
        sample_weight: optional weight per individual.

    Returns:
        The ratio; 1 means every group has the same selection rate.
    """
    return float(
        _ratio("demographic_parity", y_true, y_pred, sensitive_features, method, sample_weight)[0]
    )


def equal_opportunity_difference(
    y_true,
    y_pred,
    *,
    sensitive_features,
    method: Method = "between_groups",
    sample_weight=None,
) -> float:
    """Largest minus smallest group true positive rate ``P(A = 1 | Y = 1, G = g)``.

    Args:
        y_true: 0/1 labels.
        y_pred: 0/1 decisions.
        sensitive_features: group membership per individual.
        method: ``"between_groups"`` or ``"to_overall"``.
        sample_weight: optional weight per individual.

    Returns:
        The difference; 0 means every group has the same true positive rate.
    """
    return float(
        _difference("equal_opportunity", y_true, y_pred, sensitive_features, method, sample_weight)[
            0
        ]
    )


def equal_opportunity_ratio(
    y_true,
    y_pred,
    *,
    sensitive_features,
    method: Method = "between_groups",
    sample_weight=None,
) -> float:
    """Smallest over largest group true positive rate.

    Args:
        y_true: 0/1 labels.
        y_pred: 0/1 decisions.
        sensitive_features: group membership per individual.
        method: ``"between_groups"`` or ``"to_overall"``.
        sample_weight: optional weight per individual.

    Returns:
        The ratio; 1 means every group has the same true positive rate.
    """
    return float(
        _ratio("equal_opportunity", y_true, y_pred, sensitive_features, method, sample_weight)[0]
    )


def equalized_odds_difference(
    y_true,
    y_pred,
    *,
    sensitive_features,
    method: Method = "between_groups",
    sample_weight=None,
    agg: Agg = "worst_case",
) -> float:
    """Difference of true positive rates and of false positive rates, aggregated.

    Args:
        y_true: 0/1 labels.
        y_pred: 0/1 decisions.
        sensitive_features: group membership per individual.
        method: ``"between_groups"`` or ``"to_overall"``.
        sample_weight: optional weight per individual.
        agg: ``"worst_case"`` (the larger of the two differences) or ``"mean"``.

    Returns:
        The aggregated difference; 0 means equal TPR and FPR across groups.

    Raises:
        ValueError: if ``agg`` or ``method`` is not a valid choice.
    """
    if agg not in _AGGS:
        raise ValueError(f"agg must be one of {', '.join(_AGGS)}; got {agg!r}")
    values = _difference(
        "equalized_odds", y_true, y_pred, sensitive_features, method, sample_weight
    )
    return _aggregate(values, agg, np.max)


def equalized_odds_ratio(
    y_true,
    y_pred,
    *,
    sensitive_features,
    method: Method = "between_groups",
    sample_weight=None,
    agg: Agg = "worst_case",
) -> float:
    """Ratio of true positive rates and of false positive rates, aggregated.

    Args:
        y_true: 0/1 labels.
        y_pred: 0/1 decisions.
        sensitive_features: group membership per individual.
        method: ``"between_groups"`` or ``"to_overall"``.
        sample_weight: optional weight per individual.
        agg: ``"worst_case"`` (the smaller of the two ratios) or ``"mean"``.

    Returns:
        The aggregated ratio; 1 means equal TPR and FPR across groups.

    Raises:
        ValueError: if ``agg`` or ``method`` is not a valid choice.
    """
    if agg not in _AGGS:
        raise ValueError(f"agg must be one of {', '.join(_AGGS)}; got {agg!r}")
    values = _ratio("equalized_odds", y_true, y_pred, sensitive_features, method, sample_weight)
    return _aggregate(values, agg, np.min)


def accuracy_parity_difference(
    y_true,
    y_pred,
    *,
    sensitive_features,
    method: Method = "between_groups",
    sample_weight=None,
) -> float:
    """Largest minus smallest group accuracy ``P(A = Y | G = g)`` (not in fairlearn).

    Equals ``MetricFrame(metrics=accuracy_score, ...).difference(method)`` in fairlearn.

    Args:
        y_true: 0/1 labels.
        y_pred: 0/1 decisions.
        sensitive_features: group membership per individual.
        method: ``"between_groups"`` or ``"to_overall"``.
        sample_weight: optional weight per individual.

    Returns:
        The difference; 0 means decisions are equally accurate for every group.
    """
    return float(
        _difference("accuracy_parity", y_true, y_pred, sensitive_features, method, sample_weight)[0]
    )


def qualification_parity_difference(
    y_true,
    y_pred,
    *,
    sensitive_features,
    method: Method = "between_groups",
    sample_weight=None,
) -> float:
    """Largest minus smallest group qualification rate, the mean of ``y_true`` per group.

    On static data the sample is the population, so this is the qualification parity
    notion applied to one step (not in fairlearn; it measures labels, not decisions).

    Args:
        y_true: 0/1 labels.
        y_pred: 0/1 decisions (unused by the rate; kept for a uniform signature).
        sensitive_features: group membership per individual.
        method: ``"between_groups"`` or ``"to_overall"``.
        sample_weight: optional weight per individual.

    Returns:
        The difference; 0 means every group is equally qualified.
    """
    return float(
        _difference(
            "qualification_parity", y_true, y_pred, sensitive_features, method, sample_weight
        )[0]
    )
