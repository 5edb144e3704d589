"""Fairness notions as supply and demand over the per-step counts record.

A fairness notion says what a group's *benefit rate* is. Following the Supply-Demand
MDP of Xu et al. (2024, ELBERT, Sec. 2.1 and App. A), every notion used here writes that
rate as a ratio ``S_g / D_g`` of a group *supply* (e.g. approved qualified applicants)
over a group *demand* (e.g. qualified applicants). Both are linear in the fields of the
counts record (:mod:`rllib_fair.fairness.counts`), so a notion is two small coefficient
matrices of shape ``[K, NUM_FIELDS]`` and :meth:`Notion.supply_demand` is one matrix
product, vectorised over any leading (time, batch) dimensions.

Most notions have one supply-demand pair (``K = 1``). Equalized odds has two, the true
positive rate and the false positive rate (``K = 2``, ELBERT App. A); its gap is the
larger of the two pairs' gaps, like fairlearn's ``agg="worst_case"``.

Sums of supply and of demand over time give ELBERT's long-term benefit rate
(ratio *after* aggregation, Def. 2.3); see :mod:`rllib_fair.fairness.ledger`.

Look notions up by short name with :func:`get_notion`; :func:`list_notions` gives the
valid names.
"""

from __future__ import annotations

import numpy as np

from rllib_fair.fairness.counts import FIELDS, NUM_FIELDS

__all__ = [
    "NOTIONS",
    "AccuracyParity",
    "BenefitRate",
    "DemographicParity",
    "EqualOpportunity",
    "EqualizedOdds",
    "Notion",
    "QualificationParity",
    "get_notion",
    "list_notions",
]


def _row(**coefficients: float) -> tuple[float, ...]:
    """Returns one coefficient row over the counts fields, e.g. ``_row(selected=1.0)``."""
    index = {name: k for k, name in enumerate(FIELDS)}
    row = [0.0] * NUM_FIELDS
    for field, value in coefficients.items():
        row[index[field]] = float(value)
    return tuple(row)


class Notion:
    """A group fairness notion written as per-group supply over per-group demand.

    Subclasses set the class attributes below; instances are immutable and compare
    equal by name. Use the shared instances in :data:`NOTIONS` (or :func:`get_notion`).

    Attributes:
        name: short name used in configs and metric keys (e.g. ``"equal_opportunity"``).
        title: human-readable name.
        pair_names: names of the ``K`` supply-demand pairs (e.g. ``("tpr", "fpr")``).
    """

    name: str = ""
    title: str = ""
    pair_names: tuple[str, ...] = ()
    # One row per pair, one column per counts field: supply = S @ counts, demand = D @ counts.
    _supply_rows: tuple[tuple[float, ...], ...] = ()
    _demand_rows: tuple[tuple[float, ...], ...] = ()

    def __init__(self) -> None:
        supply = np.array(self._supply_rows, dtype=np.float64).reshape(-1, NUM_FIELDS)
        demand = np.array(self._demand_rows, dtype=np.float64).reshape(-1, NUM_FIELDS)
        if not (supply.shape[0] == demand.shape[0] == len(self.pair_names) >= 1):
            raise TypeError(f"{type(self).__name__}: inconsistent pair definition")
        supply.flags.writeable = False
        demand.flags.writeable = False
        self._supply_coef = supply
        self._demand_coef = demand

    @property
    def n_pairs(self) -> int:
        """Number ``K`` of supply-demand pairs."""
        return len(self.pair_names)

    @property
    def supply_coef(self) -> np.ndarray:
        """Read-only ``[K, NUM_FIELDS]`` matrix with ``supply = supply_coef @ counts``."""
        return self._supply_coef

    @property
    def demand_coef(self) -> np.ndarray:
        """Read-only ``[K, NUM_FIELDS]`` matrix with ``demand = demand_coef @ counts``."""
        return self._demand_coef

    def supply_demand(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Maps counts to per-group supply and demand.

        Args:
            counts: array of shape ``[..., NUM_FIELDS, G]``: a single step ``[F, G]``,
                stacked steps ``[T, F, G]``, or any further leading dimensions.

        Returns:
            ``(supply, demand)``, each a ``float64`` array of shape ``[..., K, G]``.

        Raises:
            ValueError: if ``counts`` does not have ``NUM_FIELDS`` rows on axis ``-2``.
        """
        counts = np.asarray(counts, dtype=np.float64)
        if counts.ndim < 2 or counts.shape[-2] != NUM_FIELDS:
            raise ValueError(
                f"counts: expected shape [..., {NUM_FIELDS}, n_groups], got {counts.shape}"
            )
        # [K, F] @ [..., F, G] -> [..., K, G], broadcast over leading dims.
        return self._supply_coef @ counts, self._demand_coef @ counts

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Notion):
            return NotImplemented
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name))

    def __reduce__(self):
        return (type(self), ())

    def __setattr__(self, key: str, value: object) -> None:
        if key in ("_supply_coef", "_demand_coef") and key not in self.__dict__:
            object.__setattr__(self, key, value)
            return
        raise AttributeError(f"{type(self).__name__} is immutable")


class DemographicParity(Notion):
    """Demographic parity (Dwork et al., 2012; ELBERT App. A).

    Estimand: the selection rate ``P(A = 1 | G = g)``; supply is the number selected,
    demand the number decided on. A gap of 0 means every group is selected at the same
    rate, whatever its qualification.
    """

    name = "demographic_parity"
    title = "Demographic parity"
    pair_names = ("selection_rate",)
    _supply_rows = (_row(selected=1),)
    _demand_rows = (_row(decided=1),)


class EqualOpportunity(Notion):
    """Equal opportunity / equality of opportunity (Hardt et al., 2016; ELBERT Sec. 2.1).

    Estimand: the true positive rate ``P(A = 1 | Y = 1, G = g)``; supply is the number
    selected and qualified, demand the number qualified. A gap of 0 means qualified
    individuals of every group are selected at the same rate. (SELLF Sec. 2 writes the
    conditioning event as ``{A = 1, Z = i}`` but the utility as the true positive rate
    ``E[A | Y = 1, Z = i]``; this notion computes the latter.)
    """

    name = "equal_opportunity"
    title = "Equal opportunity"
    pair_names = ("tpr",)
    _supply_rows = (_row(selected_qualified=1),)
    _demand_rows = (_row(qualified=1),)


class EqualizedOdds(Notion):
    """Equalized odds (Hardt et al., 2016; ELBERT App. A), two supply-demand pairs.

    Estimands: the true positive rate ``P(A = 1 | Y = 1, G = g)`` (pair ``"tpr"``:
    selected-and-qualified over qualified) and the false positive rate
    ``P(A = 1 | Y = 0, G = g)`` (pair ``"fpr"``: selected-but-unqualified over
    unqualified). The gap is the larger of the two pairs' gaps; 0 means both rates are
    equal across groups.
    """

    name = "equalized_odds"
    title = "Equalized odds"
    pair_names = ("tpr", "fpr")
    _supply_rows = (
        _row(selected_qualified=1),
        _row(selected=1, selected_qualified=-1),
    )
    _demand_rows = (
        _row(qualified=1),
        _row(decided=1, qualified=-1),
    )


class AccuracyParity(Notion):
    """Accuracy parity (Berk et al., 2021; ELBERT App. A; SELLF Sec. 2).

    Estimand: the accuracy ``P(A = Y | G = g)``; supply is the number of correct
    decisions (selected and qualified plus rejected and unqualified), demand the number
    decided on. A gap of 0 means decisions are equally accurate for every group.
    """

    name = "accuracy_parity"
    title = "Accuracy parity"
    pair_names = ("accuracy",)
    # correct = TP + TN = sel_q + (decided - qualified - selected + sel_q)
    _supply_rows = (_row(decided=1, qualified=-1, selected=-1, selected_qualified=2),)
    _demand_rows = (_row(decided=1),)


class QualificationParity(Notion):
    """Qualification parity (Zhang et al., 2020; SELLF Sec. 2).

    Estimand: the qualification rate ``E[Y | G = g]`` of the *population state*;
    supply is the qualified mass, demand the population size, both read from the
    population-state rows (``QUALIFIED_MASS``, ``POPULATION``) of each step's counts.
    A gap of 0 means every group is equally qualified. This notion measures the state,
    not the decisions, so an action only moves it through the dynamics.

    Over time a :class:`~rllib_fair.fairness.ledger.Ledger` aggregates the population
    snapshot of every step (sum of qualified mass over sum of population, i.e. a
    population-weighted time average of the qualification rate); a
    :class:`~rllib_fair.fairness.ledger.WindowedDisparity` with ``window=1`` gives the
    gap of the current state, SELLF's per-step disparity.
    """

    name = "qualification_parity"
    title = "Qualification parity"
    pair_names = ("qualification_rate",)
    _supply_rows = (_row(qualified_mass=1),)
    _demand_rows = (_row(population=1),)


class BenefitRate(Notion):
    """Environment-defined benefit rate (Xu et al. 2024, Sec. 2 and 5.1; App. D.1).

    Estimand: the share of what a group needed that it received, with supply the
    ``ALLOCATED`` row and demand the ``NEEDED`` row of the counts: incidents discovered
    over incidents occurred per site (attention allocation; equality of discovery
    probability, a special case of equal opportunity, App. A), vaccinations given over
    newly infected per community (infectious disease control, Eq. 22). A gap of 0 means
    every group receives the same share of what it needs over the long term. Supply may
    exceed demand (more vaccinations than new infections), so rates may exceed 1.
    """

    name = "benefit_rate"
    title = "Benefit rate (environment-defined supply / demand)"
    pair_names = ("benefit_rate",)
    _supply_rows = (_row(allocated=1),)
    _demand_rows = (_row(needed=1),)


NOTIONS: dict[str, Notion] = {
    notion.name: notion
    for notion in (
        AccuracyParity(),
        BenefitRate(),
        DemographicParity(),
        EqualOpportunity(),
        EqualizedOdds(),
        QualificationParity(),
    )
}
"""The shared notion instances, by short name."""


def list_notions() -> list[str]:
    """Returns the valid short names of the fairness notions, sorted."""
    return sorted(NOTIONS)


def get_notion(name: str | Notion) -> Notion:
    """Returns the notion with short name ``name`` (a :class:`Notion` passes through).

    Args:
        name: short name such as ``"equal_opportunity"``, or a :class:`Notion`.

    Returns:
        The :class:`Notion` instance.

    Raises:
        ValueError: if ``name`` is not a known short name (or not a string or notion).
    """
    if isinstance(name, Notion):
        return name
    if isinstance(name, str) and name in NOTIONS:
        return NOTIONS[name]
    raise ValueError(
        f"unknown fairness notion {name!r}; valid choices: {', '.join(list_notions())}"
    )
