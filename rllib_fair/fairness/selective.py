"""Disparity under selective labels: true, accepted-only and imputed (SELLF).

Valdrighi et al., "Long-term Fairness with Selective Labels" (SELLF), study decisions
whose label ``Y`` is revealed only when the decision is positive (``A = 1``, e.g. a
loan is granted). This module measures SELLF's three fairness notions on a set of
decisions from three *label sources*, decomposes the imputed disparity as in their
Theorem 3.1, and tracks all of it over a sliding window of the last ``n`` decisions.

Notions (Sec. 2 "Static fairness"; names as in :mod:`rllib_fair.fairness.notions`)
---------------------------------------------------------------------------------
===========================  ===================================  =====================
name                         utility of group ``i``               conditioning event
===========================  ===================================  =====================
``"qualification_parity"``   ``mu^i = E[Y | Z=i]``                ``Z = i``
``"accuracy_parity"``        ``mu^i = E[1{A = Y} | Z=i]``         ``Z = i``
``"equal_opportunity"``      ``mu^i = E[A | Y=1, Z=i]``           ``Y = 1, Z = i``
===========================  ===================================  =====================

Qualification parity here is the label mean of the *decided* individuals (SELLF's
sliding history of applicants), not the population-state rate that
:class:`~rllib_fair.fairness.notions.QualificationParity` reads from the counts.

Label sources
-------------
* ``"true"``: every label ``Y`` (the oracle disparity ``Delta``).
* ``"accepted"``: only the rows with ``A = 1`` (Eq. 2, ``Delta^{A=1}``). For
  equality of opportunity the conditioning event ``{Y=1, A=1, Z=i}`` forces
  ``A = 1``, so ``mu^i = 1`` whenever it is defined and ``Delta^{A=1} = 0``
  identically (Prop. 3.1). For accuracy parity ``1{A=Y} = Y`` on accepted rows, so it
  coincides with accepted-only qualification parity (the precision).
* ``"imputed"``: ``Y~ = A Y + (1 - A) Y^`` (Sec. 3, "Imputation Model"), the true
  label where accepted and the predicted label ``Y^`` where rejected; for equality of
  opportunity the conditioning event becomes ``{Y~ = 1, Z = i}`` (footnote 2).

Labels and predictions may be 0/1 or probabilities in ``[0, 1]``. A probability is read
as the chance that the (sampled) label is 1, and every utility is then the ratio of
*expected* counts (for equality of opportunity ``E[#{A=1, Y~=1}] / E[#{Y~=1}]``).
All utilities are ratios of per-group sums that are linear in five per-row
statistics ``(1, A, Y, A Y, (1 - A) Y^)``, so windows and running sums are exact for
0/1 inputs. Decisions must be 0/1; groups must be 0/1 (SELLF's binary ``Z``). The
labels of rejected rows are never read by the ``"accepted"`` and ``"imputed"``
sources (pass any value in ``[0, 1]``); predictions of accepted rows are never read.

Sign convention
---------------
``Delta = mu^1 - mu^0``: group 1 minus group 0 (Sec. 2). The unsigned gap is
``|Delta|``, which for two groups equals the ledger's ``bias`` (max minus min).

Zero-denominator convention (as in :mod:`rllib_fair.fairness.ledger`)
---------------------------------------------------------------------
A ratio is defined only when its denominator exceeds
:data:`~rllib_fair.fairness.ledger.DEMAND_EPS`. An undefined utility is *reported* as
``0.0`` next to a ``defined`` mask. What it does to a disparity is a parameter,
``undefined`` (one of :data:`UNDEFINED_UTILITY_RULES`):

* ``"exclude"`` (default): it is excluded from the gap: a disparity is ``mu^1 - mu^0``
  when both utilities are defined and ``0.0`` otherwise.
* ``"zero"``: it counts as ``0``, so the disparity is the other group's utility. This is
  what the SELLF authors' environments compute (a group with no accepted row in the
  window has accepted-only utility 0; a group with no positive label has true positive
  rate 0). It matters for the accepted-only source under qualification and accuracy
  parity: with ``"exclude"`` a policy that rejects every member of one group observes
  no disparity at all, with ``"zero"`` it observes the largest one.

Theorem 3.1
terms follow the same rule: ``r^i = 0`` for an empty group, ``eps^i = 0`` for a group
with no rejection (so ``r^i eps^i = 0``), ``phi~^i = 0`` for an empty group, and the
ratio ``r^i eps^i / phi~^i`` is ``0`` when ``phi~^i = 0`` (so ``kappa^i = 1``). Nothing
here returns NaN or inf.

Theorem 3.1 (observed disparity decomposition) on a finite sample
-----------------------------------------------------------------
With empirical frequencies the identities of Theorem 3.1 / App. B.2 hold exactly (up to
floating-point rounding), group by group:

* qualification parity: ``mu~^i = mu^i + r^i eps^i`` so ``Delta~ = Delta + B``;
* accuracy parity: ``mu~^i = mu^i - r^i eps^i`` so ``Delta~ = Delta - B`` (App. B.2,
  Eq. 35; a rejected row's utility is ``1 - Y~``, hence the minus sign);
* equality of opportunity: ``mu~^i = mu^i kappa^i`` with
  ``kappa^i = 1 - r^i eps^i / phi~^i``, so ``Delta~ = mu^1 kappa^1 - mu^0 kappa^0``
  (Eq. 37-42);

where ``B = r^1 eps^1 - r^0 eps^0`` for qualification and accuracy parity and
``B = r^1 eps^1 / phi~^1 - r^0 eps^0 / phi~^0`` for equality of opportunity
(:func:`imputation_bias`; the quantities bounded in Theorem 3.2). The disparity forms
need both groups' utilities to be defined (e.g. both groups present, or
``phi~^i > 0`` for equality of opportunity), which the paper assumes. ``eps^i`` uses
the labels of rejected rows, which a decision-maker never sees: it is for logging and
analysis only.

Calling this from RLlib
-----------------------
The sources cannot share the signature of
:func:`rllib_fair.fairness.sequence.running_disparity`, which sees only the per-step
counts record: the imputed utilities need the predicted labels of the rejected rows.
(The accepted-only source could be written with the counts alone:
``SELECTED_QUALIFIED / SELECTED`` for qualification and accuracy parity, and ``1`` for
equality of opportunity.) Nothing is registered in ``DISPARITY_SOURCES``. A connector
or callback that has, per step, the applicant's group ``z_t``, the decision ``a_t``,
the true label ``y_t`` (the simulator knows it) and the predictor's label or
probability ``y^_t`` calls, for each chunk of an episode::

    deltas, carry = running_selective_disparity(
        "equal_opportunity", z, a, y, y_hat,
        window=n_applicants, source="imputed", carry=carry,  # None at episode start
    )

and keeps ``carry`` with the episode; the concatenated chunks equal
:func:`selective_disparity_series` over the whole episode, which equals
:class:`SelectiveWindow` updated one decision at a time. The carry depends only on the
rows and the window, so one incoming carry serves every source and notion. An
environment that evaluates its own disparity uses :class:`SelectiveWindow` directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from rllib_fair.fairness.ledger import DEMAND_EPS
from rllib_fair.fairness.notions import Notion

__all__ = [
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
    "selective_disparity",
    "selective_disparity_series",
]

SELECTIVE_NOTIONS: tuple[str, ...] = (
    "accuracy_parity",
    "equal_opportunity",
    "qualification_parity",
)
"""Notions SELLF defines under selective labels (short names of :mod:`.notions`)."""

LABEL_SOURCES: tuple[str, ...] = ("true", "accepted", "imputed")
"""Where the labels come from: all true labels, accepted rows only, imputed labels."""

UNDEFINED_UTILITY_RULES: tuple[str, ...] = ("exclude", "zero")
"""What an undefined group utility does to a disparity (see the module docstring)."""

# Per-row statistics, summed per group: count, accepted, label, accepted label,
# predicted label of a rejected row. Every utility below is linear in them.
_N, _A, _Y, _AY, _RP = range(5)
_NUM_STATS = 5


def _vec(**coefficients: float) -> tuple[float, ...]:
    """Returns a coefficient vector over the five per-row statistics."""
    index = {"n": _N, "a": _A, "y": _Y, "ay": _AY, "rp": _RP}
    out = [0.0] * _NUM_STATS
    for key, value in coefficients.items():
        out[index[key]] = float(value)
    return tuple(out)


# (numerator, denominator) of mu^i per (notion, source), over the group's summed stats.
_COEF: dict[tuple[str, str], tuple[tuple[float, ...], tuple[float, ...]]] = {
    # Sec. 2, Valdrighi et al.: qualification parity mu^i = E[Y | Z=i]
    ("qualification_parity", "true"): (_vec(y=1), _vec(n=1)),
    # Sec. 2: accuracy parity mu^i = E[1{A=Y} | Z=i]; #correct = AY + (1-A)(1-Y)
    ("accuracy_parity", "true"): (_vec(n=1, a=-1, y=-1, ay=2), _vec(n=1)),
    # Sec. 2: equality of opportunity mu^i = E[A | Y=1, Z=i]
    ("equal_opportunity", "true"): (_vec(ay=1), _vec(y=1)),
    # Eq. 2: Delta^{A=1}, utilities on the accepted rows only: E[Y | A=1, Z=i]
    ("qualification_parity", "accepted"): (_vec(ay=1), _vec(a=1)),
    # Eq. 2: E[1{A=Y} | A=1, Z=i] = E[Y | A=1, Z=i] (App. B.1, Eq. 13)
    ("accuracy_parity", "accepted"): (_vec(ay=1), _vec(a=1)),
    # Eq. 2 and Prop. 3.1: E[A | Y=1, A=1, Z=i] = 1 whenever defined
    ("equal_opportunity", "accepted"): (_vec(ay=1), _vec(ay=1)),
    # Sec. 3, imputation model: Y~ = A Y + (1-A) Y^, mu~^i = E[Y~ | Z=i]
    ("qualification_parity", "imputed"): (_vec(ay=1, rp=1), _vec(n=1)),
    # Sec. 3: mu~^i = E[1{A=Y~} | Z=i]; #correct = AY + (1-A)(1-Y^)
    ("accuracy_parity", "imputed"): (_vec(n=1, a=-1, ay=1, rp=-1), _vec(n=1)),
    # Sec. 3, footnote 2: mu~^i = E[A | Y~=1, Z=i]; A Y~ = A Y
    ("equal_opportunity", "imputed"): (_vec(ay=1), _vec(ay=1, rp=1)),
}

_COEF_ARRAYS = {
    key: (np.array(num, dtype=np.float64), np.array(den, dtype=np.float64))
    for key, (num, den) in _COEF.items()
}


# --------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------


def _notion_name(notion: str | Notion) -> str:
    """Returns the short name of a selective-labels notion or raises a one-line error."""
    name = notion.name if isinstance(notion, Notion) else notion
    if isinstance(name, str) and name in SELECTIVE_NOTIONS:
        return name
    raise ValueError(
        f"unknown selective-labels notion {name!r}; valid choices: {', '.join(SELECTIVE_NOTIONS)}"
    )


def _source_name(source: str) -> str:
    """Returns ``source`` if it is a label source, else raises a one-line error."""
    if isinstance(source, str) and source in LABEL_SOURCES:
        return source
    raise ValueError(f"unknown label source {source!r}; valid choices: {', '.join(LABEL_SOURCES)}")


def _undefined_rule(undefined: str) -> str:
    """Returns ``undefined`` if it is a rule of :data:`UNDEFINED_UTILITY_RULES`, else raises."""
    if isinstance(undefined, str) and undefined in UNDEFINED_UTILITY_RULES:
        return undefined
    raise ValueError(
        f"undefined utility rule {undefined!r} is unknown; valid choices: "
        f"{', '.join(UNDEFINED_UTILITY_RULES)}"
    )


def _check_window(window: int | None) -> int | None:
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"window must be None or an integer >= 1, got {window!r}")
    return int(window)


def _binary(values, name: str, meaning: str) -> np.ndarray:
    arr = np.asarray(values).reshape(-1)
    if arr.size and not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name} must hold 0 or 1 ({meaning})")
    return arr.astype(np.float64)


def _unit(values, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.size and not (np.all(np.isfinite(arr)) and arr.min() >= 0.0 and arr.max() <= 1.0):
        raise ValueError(f"{name} must hold values in [0, 1] (a 0/1 label or a probability)")
    return arr


def _rows(groups, decisions, labels, predicted) -> tuple[np.ndarray, ...]:
    """Validates the per-decision columns; returns ``(g, a, y, p)`` as flat arrays."""
    g = _binary(groups, "groups", "SELLF's binary sensitive attribute Z").astype(np.int64)
    a = _binary(decisions, "decisions", "1 = accept")
    y = _unit(labels, "labels")
    p = np.zeros_like(y) if predicted is None else _unit(predicted, "predicted")
    if not (g.shape[0] == a.shape[0] == y.shape[0] == p.shape[0]):
        raise ValueError(
            f"groups, decisions, labels and predicted must have the same length, got "
            f"{g.shape[0]}, {a.shape[0]}, {y.shape[0]} and {p.shape[0]}"
        )
    return g, a, y, p


def _need_predicted(predicted, source: str) -> None:
    if predicted is None and source == "imputed":
        raise ValueError("predicted labels are required for the 'imputed' label source")


# --------------------------------------------------------------------------------------
# Sufficient statistics and what follows from them
# --------------------------------------------------------------------------------------


def _row_stats(g: np.ndarray, a: np.ndarray, y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Per-row statistics placed in the row's group: shape ``[T, 2, 5]``."""
    t_len = g.shape[0]
    values = np.stack([np.ones(t_len), a, y, a * y, (1.0 - a) * p], axis=-1)
    out = np.zeros((t_len, 2, _NUM_STATS), dtype=np.float64)
    out[np.arange(t_len), g] = values
    return out


def _group_sums(g: np.ndarray, a: np.ndarray, y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Per-group sums of the per-row statistics: shape ``[2, 5]``."""
    columns = (np.ones(g.shape[0]), a, y, a * y, (1.0 - a) * p)
    return np.stack([np.bincount(g, weights=c, minlength=2) for c in columns], axis=-1)


def _utilities(notion: str, source: str, sums: np.ndarray) -> tuple[np.ndarray, ...]:
    """Utilities from summed stats ``[..., 2, 5]``: ``(mu, defined, num, den)``, ``[..., 2]``."""
    num_coef, den_coef = _COEF_ARRAYS[(notion, source)]
    num = sums @ num_coef
    den = sums @ den_coef
    defined = den > DEMAND_EPS
    mu = np.zeros_like(num)
    np.divide(num, den, out=mu, where=defined)
    return mu, defined, num, den


def _signed(mu: np.ndarray, defined: np.ndarray, undefined: str = "exclude") -> np.ndarray:
    """``mu^1 - mu^0`` (Sec. 2); where a utility is undefined: 0, or with it as 0 (``"zero"``)."""
    if undefined == "zero":
        # mu holds 0.0 wherever it is undefined
        return mu[..., 1] - mu[..., 0]
    both = defined[..., 0] & defined[..., 1]
    return np.where(both, mu[..., 1] - mu[..., 0], 0.0)


def _scalar_disparity(
    notion: str, source: str, sums: list[list[float]], undefined: str = "exclude"
) -> float:
    """Signed disparity from summed stats held as Python lists (fast path of the tracker)."""
    num_coef, den_coef = _COEF[(notion, source)]
    mu = []
    for s in sums:
        den = sum(c * v for c, v in zip(den_coef, s))
        if den <= DEMAND_EPS:
            if undefined != "zero":
                return 0.0
            mu.append(0.0)
            continue
        mu.append(sum(c * v for c, v in zip(num_coef, s)) / den)
    # Sec. 2, Valdrighi et al.: Delta = mu^1 - mu^0
    return mu[1] - mu[0]


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class GroupUtilities:
    """Per-group utilities of one notion from one label source (two groups).

    Attributes:
        notion: short name of the notion.
        source: label source, one of :data:`LABEL_SOURCES`.
        utility: ``mu^i`` per group, shape ``[2]``; 0.0 where undefined.
        defined: whether ``mu^i`` is defined (denominator > ``DEMAND_EPS``), ``[2]``.
        numerator: the (expected) count in the numerator of ``mu^i``, ``[2]``.
        denominator: the (expected) count in the denominator of ``mu^i``, ``[2]``.
        undefined: what an undefined utility does to the disparity (``"exclude"``: the
            disparity is 0; ``"zero"``: it counts as 0).
    """

    notion: str
    source: str
    utility: np.ndarray
    defined: np.ndarray
    numerator: np.ndarray
    denominator: np.ndarray
    undefined: str = "exclude"

    @property
    def disparity(self) -> float:
        """Signed ``Delta = mu^1 - mu^0`` under the ``undefined`` rule."""
        return float(_signed(self.utility, self.defined, self.undefined))

    @property
    def gap(self) -> float:
        """Unsigned gap ``|mu^1 - mu^0|`` under the ``undefined`` rule."""
        return abs(self.disparity)


@dataclass(frozen=True, eq=False)
class ImputationTerms:
    """Terms of the observed-disparity decomposition (Theorem 3.1), per group.

    Arrays have shape ``[2]`` (group 0, group 1). See the module docstring for the
    zero-denominator convention and for how the terms recombine per notion.

    Attributes:
        notion: short name of the notion.
        rejection_rate: ``r^i = P(A=0 | Z=i)``.
        predictor_error: ``eps^i = E[Y^ - Y | A=0, Z=i]`` (uses the true labels of
            rejected rows: for logging only).
        weighted_error: ``r^i eps^i = E[(1 - A)(Y^ - Y) | Z=i]`` (App. B.2, Eq. 17).
        imputed_positive_rate: ``phi~^i = P(Y~ = 1 | Z=i)``.
        kappa: ``kappa^i = 1 - r^i eps^i / phi~^i`` (equality of opportunity; 1.0 where
            ``phi~^i = 0``).
        true_utility: ``mu^i`` from the true labels (0.0 where undefined).
        imputed_utility: ``mu~^i`` from the imputed labels (0.0 where undefined).
        true_disparity: ``Delta = mu^1 - mu^0``.
        imputed_disparity: ``Delta~ = mu~^1 - mu~^0``.
        bias: the imputation bias ``B`` of :func:`imputation_bias`.
    """

    notion: str
    rejection_rate: np.ndarray
    predictor_error: np.ndarray
    weighted_error: np.ndarray
    imputed_positive_rate: np.ndarray
    kappa: np.ndarray
    true_utility: np.ndarray
    imputed_utility: np.ndarray
    true_disparity: float
    imputed_disparity: float
    bias: float

    @property
    def phi_tilde(self) -> np.ndarray:
        """Alias of :attr:`imputed_positive_rate` (the paper's ``phi~^i``)."""
        return self.imputed_positive_rate


class SelectiveDisparities(NamedTuple):
    """Signed disparities ``mu^1 - mu^0`` of one notion from the three label sources."""

    true: float
    accepted: float
    imputed: float

    def gaps(self) -> SelectiveDisparities:
        """Returns the unsigned gaps ``|Delta|`` of the three sources."""
        return SelectiveDisparities(abs(self.true), abs(self.accepted), abs(self.imputed))


def _ratio(num: np.ndarray, den: np.ndarray, undefined: float = 0.0) -> np.ndarray:
    out = np.full(np.broadcast_shapes(num.shape, den.shape), undefined, dtype=np.float64)
    np.divide(num, den, out=out, where=den > DEMAND_EPS)
    return out


def _terms_from_sums(notion: str, sums: np.ndarray) -> ImputationTerms:
    """Theorem 3.1 terms from per-group summed stats ``[2, 5]``."""
    n, a, y, ay, rp = (sums[:, k] for k in range(_NUM_STATS))
    rejected = n - a
    # Theorem 3.1: r^i = P(A=0 | Z=i)
    r = _ratio(rejected, n)
    # Theorem 3.1: eps^i = E[Y^ - Y | A=0, Z=i]; sum over rejected of Y is y - ay
    eps = _ratio(rp - (y - ay), rejected)
    # App. B.2, Eq. 16-17: E[(1-A)(Y^ - Y) | Z=i] = r^i eps^i
    weighted = _ratio(rp - (y - ay), n)
    # Theorem 3.1: phi~^i = P(Y~=1 | Z=i), with Y~ = A Y + (1-A) Y^
    phi = _ratio(ay + rp, n)
    # Theorem 3.1 / App. B.2, Eq. 42: kappa^i = 1 - r^i eps^i / phi~^i
    kappa = 1.0 - _ratio(weighted, phi)
    mu, mu_defined, _, _ = _utilities(notion, "true", sums)
    mu_t, mu_t_defined, _, _ = _utilities(notion, "imputed", sums)
    if notion == "equal_opportunity":
        # Theorem 3.2: B = r^1 eps^1 / phi~^1 - r^0 eps^0 / phi~^0
        per_group = _ratio(weighted, phi)
    else:
        # Theorem 3.1 (QP) and App. B.2, Eq. 35 (AP): B = r^1 eps^1 - r^0 eps^0
        per_group = weighted
    return ImputationTerms(
        notion=notion,
        rejection_rate=r,
        predictor_error=eps,
        weighted_error=weighted,
        imputed_positive_rate=phi,
        kappa=kappa,
        true_utility=mu,
        imputed_utility=mu_t,
        true_disparity=float(_signed(mu, mu_defined)),
        imputed_disparity=float(_signed(mu_t, mu_t_defined)),
        bias=float(per_group[1] - per_group[0]),
    )


# --------------------------------------------------------------------------------------
# Static functions on a set of decisions
# --------------------------------------------------------------------------------------


def group_utilities(
    notion: str | Notion,
    groups,
    decisions,
    labels,
    predicted=None,
    *,
    source: str = "true",
    undefined: str = "exclude",
) -> GroupUtilities:
    """Per-group utilities ``mu^0, mu^1`` of a notion from one label source.

    Args:
        notion: ``"qualification_parity"``, ``"accuracy_parity"`` or
            ``"equal_opportunity"`` (or the matching :class:`Notion`).
        groups: sensitive attribute per decision, 0 or 1.
        decisions: decision per row, 0 (reject) or 1 (accept).
        labels: true label per row, 0/1 or a probability (rejected rows are not read by
            the ``"accepted"`` and ``"imputed"`` sources).
        predicted: predicted label ``Y^`` per row, 0/1 (sampled) or a probability;
            required for ``source="imputed"``, ignored otherwise.
        source: ``"true"``, ``"accepted"`` (Eq. 2) or ``"imputed"`` (Sec. 3).
        undefined: ``"exclude"`` or ``"zero"`` (see the module docstring).

    Returns:
        A :class:`GroupUtilities`.

    Raises:
        ValueError: on an unknown notion or source, missing predictions for the
            imputed source, or malformed columns.
    """
    notion = _notion_name(notion)
    source = _source_name(source)
    undefined = _undefined_rule(undefined)
    _need_predicted(predicted, source)
    sums = _group_sums(*_rows(groups, decisions, labels, predicted))
    mu, defined, num, den = _utilities(notion, source, sums)
    return GroupUtilities(notion, source, mu, defined, num, den, undefined)


def selective_disparity(
    notion: str | Notion,
    groups,
    decisions,
    labels,
    predicted=None,
    *,
    source: str = "true",
    signed: bool = True,
    undefined: str = "exclude",
) -> float:
    """Disparity of a notion from one label source on a set of decisions.

    Args:
        notion: notion short name (see :func:`group_utilities`).
        groups: sensitive attribute per decision, 0 or 1.
        decisions: decision per row, 0 or 1.
        labels: true label per row (0/1 or probability).
        predicted: predicted label per row; required for ``source="imputed"``.
        source: ``"true"``, ``"accepted"`` or ``"imputed"``.
        signed: SELLF's signed ``Delta = mu^1 - mu^0`` if True, else ``|Delta|``.
        undefined: ``"exclude"`` (the disparity is 0.0 unless both groups' utilities
            are defined) or ``"zero"`` (an undefined utility counts as 0).

    Returns:
        The disparity.
    """
    util = group_utilities(
        notion, groups, decisions, labels, predicted, source=source, undefined=undefined
    )
    return util.disparity if signed else util.gap


def imputation_terms(notion: str | Notion, groups, decisions, labels, predicted) -> ImputationTerms:
    """Theorem 3.1 decomposition terms of the imputed disparity on a set of decisions.

    Args:
        notion: notion short name (see :func:`group_utilities`).
        groups: sensitive attribute per decision, 0 or 1.
        decisions: decision per row, 0 or 1.
        labels: true label per row, including rejected rows (needed for ``eps^i``).
        predicted: predicted label ``Y^`` per row (0/1 or probability).

    Returns:
        An :class:`ImputationTerms`.
    """
    notion = _notion_name(notion)
    _need_predicted(predicted, "imputed")
    return _terms_from_sums(notion, _group_sums(*_rows(groups, decisions, labels, predicted)))


def imputation_bias(notion: str | Notion, groups, decisions, labels, predicted) -> float:
    """Imputation bias ``B`` of Theorems 3.1 and 3.2.

    * qualification parity: ``B = r^1 eps^1 - r^0 eps^0`` and ``Delta~ = Delta + B``;
    * accuracy parity: the same ``B`` and ``Delta~ = Delta - B`` (App. B.2, Eq. 35);
    * equality of opportunity: ``B = r^1 eps^1 / phi~^1 - r^0 eps^0 / phi~^0`` (the
      quantity bounded in Theorem 3.2), with ``Delta~ = mu^1 kappa^1 - mu^0 kappa^0``
      and ``kappa^i = 1 - r^i eps^i / phi~^i``.

    Args:
        notion: notion short name.
        groups: sensitive attribute per decision, 0 or 1.
        decisions: decision per row, 0 or 1.
        labels: true label per row, including rejected rows.
        predicted: predicted label per row (0/1 or probability).

    Returns:
        ``B`` as a float.
    """
    return imputation_terms(notion, groups, decisions, labels, predicted).bias


# --------------------------------------------------------------------------------------
# Sliding window
# --------------------------------------------------------------------------------------


class SelectiveWindow:
    """True, accepted-only and imputed disparity over the last ``window`` decisions.

    SELLF's environments evaluate fairness on a sliding history of the last
    ``n_applicants`` decisions; ``window=None`` uses every decision since
    :meth:`reset`. Each :meth:`update` is O(1): a ring buffer keeps the rows
    ``(group, decision, label, predicted)`` of the window, and per-group running sums of
    the five per-row statistics are updated by adding the new row and removing the row
    that leaves the window. The sums are recomputed from the ring every ``window``
    updates so rounding cannot drift (exact anyway for 0/1 inputs).

    Args:
        notion: ``"qualification_parity"``, ``"accuracy_parity"`` or
            ``"equal_opportunity"``.
        window: number of most recent decisions, or None for all since reset.
        undefined: ``"exclude"`` or ``"zero"``: what an undefined group utility does to
            the disparities (see the module docstring).

    Attributes:
        notion: the notion's short name.
        window: the window length (None: all decisions since reset).
        undefined: the undefined-utility rule.
        steps: number of updates since reset.
    """

    def __init__(
        self, notion: str | Notion, window: int | None = None, undefined: str = "exclude"
    ) -> None:
        self.notion: str = _notion_name(notion)
        self.window: int | None = _check_window(window)
        self.undefined: str = _undefined_rule(undefined)
        self._ring = None if self.window is None else np.zeros((self.window, 4))
        self._sums = [[0.0] * _NUM_STATS for _ in range(2)]
        self._pos = 0
        self._last = SelectiveDisparities(0.0, 0.0, 0.0)
        self.steps = 0

    def reset(self) -> None:
        """Forgets every decision."""
        self._sums = [[0.0] * _NUM_STATS for _ in range(2)]
        if self._ring is not None:
            self._ring.fill(0.0)
        self._pos = 0
        self._last = SelectiveDisparities(0.0, 0.0, 0.0)
        self.steps = 0

    @staticmethod
    def _check_row(group, decision, label, predicted) -> tuple[int, float, float, float]:
        if group not in (0, 1):
            raise ValueError(f"group must be 0 or 1, got {group!r}")
        if decision not in (0, 1):
            raise ValueError(f"decision must be 0 or 1, got {decision!r}")
        label = float(label)
        predicted = float(predicted)
        if not (0.0 <= label <= 1.0):
            raise ValueError(f"label must lie in [0, 1], got {label!r}")
        if not (0.0 <= predicted <= 1.0):
            raise ValueError(f"predicted must lie in [0, 1], got {predicted!r}")
        return int(group), float(decision), label, predicted

    def update(
        self, group: int, decision: int, label: float, predicted: float
    ) -> SelectiveDisparities:
        """Adds one decision and returns the three signed disparities after it.

        Args:
            group: sensitive attribute of the individual, 0 or 1.
            decision: 1 accept, 0 reject.
            label: true label (0/1 or probability); for a rejected row it only enters
                the true disparity and ``eps``.
            predicted: predicted label or probability ``Y^`` (only read for a rejected
                row; pass e.g. 0.0 when there is no predictor).

        Returns:
            :class:`SelectiveDisparities` ``(true, accepted, imputed)``, each
            ``mu^1 - mu^0`` over the window (an undefined utility as ``undefined`` says).
        """
        g, a, y, p = self._check_row(group, decision, label, predicted)
        ring = self._ring
        if ring is not None:
            if self.steps >= self.window:
                og, oa, oy, op = ring[self._pos].tolist()
                old = self._sums[int(og)]
                old[_N] -= 1.0
                old[_A] -= oa
                old[_Y] -= oy
                old[_AY] -= oa * oy
                old[_RP] -= (1.0 - oa) * op
            ring[self._pos] = (g, a, y, p)
        new = self._sums[g]
        new[_N] += 1.0
        new[_A] += a
        new[_Y] += y
        new[_AY] += a * y
        new[_RP] += (1.0 - a) * p
        self.steps += 1
        if ring is not None:
            self._pos += 1
            if self._pos == self.window:
                self._pos = 0
                self._sums = self._exact_sums().tolist()
        sums = self._sums
        rule = self.undefined
        self._last = SelectiveDisparities(
            _scalar_disparity(self.notion, "true", sums, rule),
            _scalar_disparity(self.notion, "accepted", sums, rule),
            _scalar_disparity(self.notion, "imputed", sums, rule),
        )
        return self._last

    def _exact_sums(self) -> np.ndarray:
        """Per-group sums recomputed from the ring (ring must be full)."""
        ring = self._ring
        return _group_sums(ring[:, 0].astype(np.int64), ring[:, 1], ring[:, 2], ring[:, 3])

    @property
    def size(self) -> int:
        """Number of decisions currently in the window."""
        return self.steps if self.window is None else min(self.steps, self.window)

    @property
    def disparities(self) -> SelectiveDisparities:
        """The signed disparities after the last update (zeros before any)."""
        return self._last

    @property
    def sums(self) -> np.ndarray:
        """Per-group sums over the window of ``(1, A, Y, A Y, (1-A) Y^)``, ``[2, 5]``."""
        return np.array(self._sums, dtype=np.float64)

    def utilities(self, source: str) -> GroupUtilities:
        """Per-group utilities over the window from one label source."""
        source = _source_name(source)
        mu, defined, num, den = _utilities(self.notion, source, self.sums)
        return GroupUtilities(self.notion, source, mu, defined, num, den, self.undefined)

    def terms(self) -> ImputationTerms:
        """Theorem 3.1 terms over the window."""
        return _terms_from_sums(self.notion, self.sums)

    @property
    def rejection_rate(self) -> np.ndarray:
        """``r^i = P(A=0 | Z=i)`` over the window, ``[2]``."""
        return self.terms().rejection_rate

    @property
    def predictor_error(self) -> np.ndarray:
        """``eps^i = E[Y^ - Y | A=0, Z=i]`` over the window, ``[2]`` (logging only)."""
        return self.terms().predictor_error

    @property
    def phi_tilde(self) -> np.ndarray:
        """``phi~^i = P(Y~=1 | Z=i)`` over the window, ``[2]``."""
        return self.terms().imputed_positive_rate

    @property
    def imputation_bias(self) -> float:
        """The imputation bias ``B`` (see :func:`imputation_bias`) over the window."""
        return self.terms().bias

    def __repr__(self) -> str:
        d = self._last
        return (
            f"SelectiveWindow({self.notion!r}, window={self.window}, "
            f"undefined={self.undefined!r}, steps={self.steps}, "
            f"true={d.true:.4g}, accepted={d.accepted:.4g}, imputed={d.imputed:.4g})"
        )


# --------------------------------------------------------------------------------------
# Whole sequences
# --------------------------------------------------------------------------------------


@dataclass
class SelectiveCarry:
    """What one chunk of an episode leaves for the next (see the module docstring).

    Attributes:
        total: per-group stats summed over every row so far, ``[2, 5]``.
        tail: stats of the last ``min(window - 1, rows so far)`` rows, ``[m, 2, 5]``
            (sliding window only, else None).
        num_steps: rows seen since the episode start.
    """

    total: np.ndarray
    tail: np.ndarray | None
    num_steps: int


def _series(
    notion: str,
    source: str,
    stats: np.ndarray,
    window: int | None,
    carry: SelectiveCarry | None,
    signed: bool,
    undefined: str = "exclude",
) -> tuple[np.ndarray, SelectiveCarry]:
    """Per-row disparity from per-row stats ``[T, 2, 5]`` via cumulative sums."""
    t_len = stats.shape[0]
    total = stats.sum(axis=0) + (0.0 if carry is None else carry.total)
    steps = t_len + (0 if carry is None else carry.num_steps)
    if window is None:
        sums = np.cumsum(stats, axis=0)
        if carry is not None:
            sums += carry.total
        tail = None
    else:
        prefix = np.zeros((0, 2, _NUM_STATS)) if carry is None or carry.tail is None else carry.tail
        joined = np.concatenate([prefix, stats], axis=0)
        sums = np.cumsum(joined, axis=0)
        if window < joined.shape[0]:
            sums[window:] = sums[window:] - sums[:-window]
        sums = sums[prefix.shape[0] :]
        keep = min(window - 1, joined.shape[0])
        tail = joined[joined.shape[0] - keep :].copy()
    mu, defined, _, _ = _utilities(notion, source, sums)
    delta = _signed(mu, defined, undefined)
    return (delta if signed else np.abs(delta)), SelectiveCarry(total, tail, steps)


def selective_disparity_series(
    notion: str | Notion,
    groups,
    decisions,
    labels,
    predicted=None,
    window: int | None = None,
    source: str = "true",
    *,
    signed: bool = True,
    undefined: str = "exclude",
) -> np.ndarray:
    """Disparity after each decision of a sequence, vectorised with cumulative sums.

    Entry ``t`` equals the ``source`` field of :meth:`SelectiveWindow.update` after
    decision ``t`` (exactly for 0/1 inputs, up to rounding for probabilities).

    Args:
        notion: notion short name (see :func:`group_utilities`).
        groups: sensitive attribute per decision, 0 or 1, in time order.
        decisions: decision per row, 0 or 1.
        labels: true label per row (0/1 or probability).
        predicted: predicted label per row; required for ``source="imputed"``.
        window: number of most recent decisions, or None for all so far.
        source: ``"true"``, ``"accepted"`` or ``"imputed"``.
        signed: ``mu^1 - mu^0`` if True (SELLF's convention), else ``|mu^1 - mu^0|``.
        undefined: ``"exclude"`` or ``"zero"`` (see the module docstring).

    Returns:
        A ``float64`` array of shape ``[T]``, never NaN.
    """
    series, _ = running_selective_disparity(
        notion,
        groups,
        decisions,
        labels,
        predicted,
        window=window,
        source=source,
        signed=signed,
        undefined=undefined,
    )
    return series


def running_selective_disparity(
    notion: str | Notion,
    groups,
    decisions,
    labels,
    predicted=None,
    *,
    window: int | None = None,
    source: str = "true",
    signed: bool = True,
    carry: SelectiveCarry | None = None,
    undefined: str = "exclude",
) -> tuple[np.ndarray, SelectiveCarry]:
    """Per-decision disparity of one chunk of an episode, resumable across chunks.

    The counterpart of :func:`rllib_fair.fairness.sequence.running_disparity` for
    selective labels; see the module docstring for how a connector calls it.

    Args:
        notion: notion short name (see :func:`group_utilities`).
        groups: sensitive attribute per decision of the chunk, 0 or 1.
        decisions: decision per row, 0 or 1.
        labels: true label per row (0/1 or probability).
        predicted: predicted label per row; required for ``source="imputed"``.
        window: number of most recent decisions, or None for all since the episode
            start.
        source: ``"true"``, ``"accepted"`` or ``"imputed"``.
        signed: ``mu^1 - mu^0`` if True, else the unsigned gap.
        carry: what the previous chunk of the same episode returned (same ``window``);
            None at the episode start.
        undefined: ``"exclude"`` or ``"zero"``: what an undefined group utility does
            to the disparity (see the module docstring).

    Returns:
        ``(series, carry)``: the disparity after each decision of the chunk
        (``float64 [T]``) and the carry for the next chunk.
    """
    notion = _notion_name(notion)
    source = _source_name(source)
    window = _check_window(window)
    undefined = _undefined_rule(undefined)
    _need_predicted(predicted, source)
    stats = _row_stats(*_rows(groups, decisions, labels, predicted))
    return _series(notion, source, stats, window, carry, signed, undefined)
