"""Per-group, per-step fairness counts: the one record every environment emits.

Every environment of rllib-fair puts, at every step, a ``float64`` array of shape
``[NUM_FIELDS, n_groups]`` into ``info["fairness"]``. Row ``k`` is the field named
``FIELDS[k]``; column ``g`` is group ``g``. The counts describe *what happened to each
group in this one transition* (obs_t, a_t) -> obs_{t+1}, plus a snapshot of the
population state after the transition. Fairness notions
(:mod:`rllib_fair.fairness.notions`) map these counts to supply and demand.

A single array (instead of a dict of arrays) keeps ``env.step`` cheap and lets the
learner connector stack a whole episode into one ``[T, NUM_FIELDS, G]`` column.

Fields (all per group, may be fractional where an environment reports expectations):

========================  ==========================================================
``DECIDED``               individuals a decision was made about this step
``QUALIFIED``             of those, label-positive (qualified, would repay, Y=1)
``SELECTED``              of those, selected (accepted, treated, A=1)
``SELECTED_QUALIFIED``    of those, selected and label-positive (A=1, Y=1)
``POPULATION``            population size (or probability mass) of the group after
                          the step
``QUALIFIED_MASS``        qualified size (or expected qualified mass) of the group
                          after the step; ``QUALIFIED_MASS / POPULATION`` is the
                          group's qualification rate
``ALLOCATED``             resource the group received this step in allocation settings
                          where the decision is not a per-individual accept/reject:
                          incidents discovered at a site (attention allocation),
                          vaccinations given to the group (infectious disease); 0
                          elsewhere
``NEEDED``                what the group needed this step in those settings: incidents
                          that occurred at the site, individuals newly infected; 0
                          elsewhere. ``ALLOCATED / NEEDED`` aggregated over time is the
                          environment-defined long-term benefit rate (notion
                          ``benefit_rate``; Xu et al. 2024, Sec. 5.1 and App. D.1)
========================  ==========================================================

Add fields at the end (never reorder) when later environments need them, and document
them here.
"""

from __future__ import annotations

import numpy as np

DECIDED = 0
QUALIFIED = 1
SELECTED = 2
SELECTED_QUALIFIED = 3
POPULATION = 4
QUALIFIED_MASS = 5
ALLOCATED = 6
NEEDED = 7

FIELDS: tuple[str, ...] = (
    "decided",
    "qualified",
    "selected",
    "selected_qualified",
    "population",
    "qualified_mass",
    "allocated",
    "needed",
)
NUM_FIELDS = len(FIELDS)


def empty_counts(n_groups: int) -> np.ndarray:
    """Returns a zero counts array of shape ``[NUM_FIELDS, n_groups]``."""
    return np.zeros((NUM_FIELDS, n_groups), dtype=np.float64)


def counts_as_dict(counts: np.ndarray) -> dict[str, np.ndarray]:
    """Returns a ``{field name: per-group array}`` view of a counts array.

    Works on a single step ``[NUM_FIELDS, G]`` or on stacked steps ``[..., NUM_FIELDS, G]``.
    """
    counts = np.asarray(counts)
    if counts.ndim < 2 or counts.shape[-2] != NUM_FIELDS:
        raise ValueError(
            f"counts: expected shape [..., {NUM_FIELDS}, n_groups], got {counts.shape}"
        )
    return {name: counts[..., k, :] for k, name in enumerate(FIELDS)}


def decision_counts(
    group: int, label: int, decision: int, n_groups: int, out: np.ndarray | None = None
) -> np.ndarray:
    """Fills the decision rows for one individual of ``group`` with ``label`` and ``decision``.

    Args:
        group: group index of the individual.
        label: 1 if label-positive (qualified), else 0.
        decision: 1 if selected (accepted), else 0.
        n_groups: number of groups.
        out: optional array to write into (its decision rows are zeroed first); the
            population rows are left untouched.

    Returns:
        The counts array (``out`` when given).
    """
    if out is None:
        out = empty_counts(n_groups)
    else:
        out[:POPULATION] = 0.0
    out[DECIDED, group] = 1.0
    out[QUALIFIED, group] = float(label)
    out[SELECTED, group] = float(decision)
    out[SELECTED_QUALIFIED, group] = float(label and decision)
    return out


def counts_from_decisions(
    y_true,
    y_pred,
    groups,
    n_groups: int | None = None,
    *,
    sample_weight=None,
) -> np.ndarray:
    """Aggregates individual decisions into one counts array of shape ``[NUM_FIELDS, G]``.

    This is the bridge between static data (one row per individual) and the per-step
    counts record: a static dataset is one step. The population rows are filled with
    the sample itself (``POPULATION = DECIDED`` and ``QUALIFIED_MASS = QUALIFIED``), so
    qualification parity on static data is the per-group mean of ``y_true``.

    Args:
        y_true: labels in ``[0, 1]`` (1 = qualified); fractional values are read as
            probabilities and give expected counts.
        y_pred: decisions in ``[0, 1]`` (1 = selected); fractional values likewise
            (a label and a decision probability of the same individual are treated as
            independent, so ``SELECTED_QUALIFIED`` gets ``y_true * y_pred``).
        groups: integer group index per individual, in ``[0, n_groups)``.
        n_groups: number of groups; defaults to ``max(groups) + 1``.
        sample_weight: optional non-negative weight per individual (default 1).

    Returns:
        A ``float64`` array of shape ``[NUM_FIELDS, n_groups]``.

    Raises:
        ValueError: on mismatched lengths, labels outside ``[0, 1]``, negative weights, or
            group indices that are not integers in ``[0, n_groups)``.
    """
    y_true = np.asarray(y_true, dtype=np.float64).reshape(-1)
    y_pred = np.asarray(y_pred, dtype=np.float64).reshape(-1)
    groups = np.asarray(groups).reshape(-1)
    n = y_true.shape[0]
    if y_pred.shape[0] != n or groups.shape[0] != n:
        raise ValueError(
            f"y_true, y_pred and groups must have the same length, got "
            f"{n}, {y_pred.shape[0]} and {groups.shape[0]}"
        )
    for arr_name, arr in (("y_true", y_true), ("y_pred", y_pred)):
        if n and (np.min(arr) < 0.0 or np.max(arr) > 1.0 or np.isnan(arr).any()):
            raise ValueError(f"{arr_name} must hold values in [0, 1] (1 = positive)")
    if n and not np.issubdtype(groups.dtype, np.integer):
        as_int = groups.astype(np.int64)
        if not np.array_equal(as_int, groups):
            raise ValueError("groups must be integer group indices")
        groups = as_int
    groups = groups.astype(np.int64, copy=False)
    if n_groups is None:
        n_groups = int(groups.max()) + 1 if n else 1
    if n and (groups.min() < 0 or groups.max() >= n_groups):
        raise ValueError(f"groups must lie in [0, {n_groups}), got {groups.min()}..{groups.max()}")
    if sample_weight is None:
        weight = np.ones(n, dtype=np.float64)
    else:
        weight = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
        if weight.shape[0] != n:
            raise ValueError(f"sample_weight must have length {n}, got {weight.shape[0]}")
        if n and np.min(weight) < 0.0:
            raise ValueError("sample_weight must be non-negative")
    out = empty_counts(n_groups)
    out[DECIDED] = np.bincount(groups, weights=weight, minlength=n_groups)
    out[QUALIFIED] = np.bincount(groups, weights=weight * y_true, minlength=n_groups)
    out[SELECTED] = np.bincount(groups, weights=weight * y_pred, minlength=n_groups)
    out[SELECTED_QUALIFIED] = np.bincount(
        groups, weights=weight * y_true * y_pred, minlength=n_groups
    )
    out[POPULATION] = out[DECIDED]
    out[QUALIFIED_MASS] = out[QUALIFIED]
    return out
