"""Parameters of a school admission environment: :class:`SchoolAdmissionParams` and checks.

The population (categorical features per group, or data rows) and the logistic
pass-probability model ``alpha(x, z)`` of ``fair/SchoolAdmission-v0``; made by the
stand-in generator (:mod:`rllib_fair.envs.school_standin`) or the ENEM loader
(:mod:`rllib_fair.envs.school_enem`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rllib_fair.envs.base import MAX_MAGNITUDE, _fmt, as_distributions, check_magnitude
from rllib_fair.envs.school_fit import _sigmoid

#: Group 0 = SELLF's "Black/brown" (ENEM race codes 2 and 3), group 1 = "white"
#: (code 1); "_" instead of "/" keeps the names usable as metric keys and paths.
SCHOOL_GROUP_NAMES: tuple[str, str] = ("Black_brown", "white")


@dataclass(frozen=True, eq=False)
class SchoolAdmissionParams:
    """Population and pass-probability model of a school admission environment.

    Features are ``F`` categorical variables; feature ``k`` has ``cardinalities[k]``
    levels and is one-hot encoded into a block of the ``D = sum(cardinalities)``-dim
    vector ``x`` (blocks in feature order). The pass probability of an applicant of
    group ``z`` (0 or 1) is ``alpha(x, z) = sigmoid(coefficients . x + group_coefficient
    * z + intercept)``; with the gain indicator set it is ``min(1, alpha + gain)``.

    Attributes:
        feature_names: one name per feature.
        levels: the level labels of each feature (their order is the one-hot order; for
            the age feature, youngest first).
        coefficients: float64 ``[D]`` logistic coefficients of the one-hot vector.
        intercept: logistic intercept.
        group_coefficient: logistic coefficient of the group indicator ``z``.
        age_feature: index of the ordinal age feature, or ``None`` (no ageing).
        group_probs: probability of each group in a fresh pool.
        category_probs: stand-in only: per feature a float64 ``[2, cardinality]`` array,
            the level distribution per group (features independent given the group).
        rows: data only: int64 ``[N, F]`` level index of every data row.
        row_groups: data only: int64 ``[N]`` group of every data row.
        info: provenance and calibration / fit statistics (JSON-serialisable).
    """

    feature_names: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]
    coefficients: np.ndarray
    intercept: float
    group_coefficient: float
    age_feature: int | None
    group_probs: tuple[float, float]
    category_probs: tuple[np.ndarray, ...] | None = None
    rows: np.ndarray | None = None
    row_groups: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def cardinalities(self) -> tuple[int, ...]:
        """Number of levels of each feature."""
        return tuple(len(lv) for lv in self.levels)

    @property
    def n_dims(self) -> int:
        """Length ``D`` of the one-hot feature vector."""
        return int(sum(self.cardinalities))

    @property
    def offsets(self) -> np.ndarray:
        """int64 ``[F]``: first one-hot column of each feature's block."""
        cards = np.asarray(self.cardinalities, dtype=np.int64)
        return np.concatenate([[0], np.cumsum(cards)[:-1]]).astype(np.int64)

    def logits(self, categories: Any, groups: Any) -> np.ndarray:
        """``coefficients . x + group_coefficient * z + intercept`` per applicant.

        Args:
            categories: int ``[n, F]`` level index of every feature.
            groups: int ``[n]`` group (0 or 1).
        """
        cats = np.asarray(categories, dtype=np.int64)
        cols = cats + self.offsets[None, :]
        z = np.asarray(groups, dtype=np.float64)
        return self.coefficients[cols].sum(axis=1) + self.group_coefficient * z + self.intercept

    def pass_probability(
        self, categories: Any, groups: Any, gains: Any = 0, gain: float = 0.5
    ) -> np.ndarray:
        """``min(1, alpha(x, z) + gain * indicator)`` per applicant (float64 ``[n]``).

        Args:
            categories: int ``[n, F]`` level index of every feature.
            groups: int ``[n]`` group (0 or 1).
            gains: ``[n]`` (or scalar) gain indicator, 0 or 1.
            gain: the increase of the pass probability while the indicator is set.
        """
        alpha = _sigmoid(self.logits(categories, groups))
        return np.minimum(1.0, alpha + gain * np.asarray(gains, dtype=np.float64))


def _check_params(params: Any) -> SchoolAdmissionParams:
    """Validates a :class:`SchoolAdmissionParams` (one-line ``ValueError`` otherwise)."""
    if not isinstance(params, SchoolAdmissionParams):
        raise ValueError(
            f"params={_fmt(params)}: expected a SchoolAdmissionParams (see load_enem, "
            "make_standin_params) or None"
        )
    cards = params.cardinalities
    n_features = len(cards)
    if n_features < 1 or min(cards) < 1 or len(params.feature_names) != n_features:
        raise ValueError(
            f"params.levels: expected at least one feature with >= 1 level and one name "
            f"per feature, got cardinalities {list(cards)} and "
            f"{len(params.feature_names)} names"
        )
    coefs = np.asarray(params.coefficients)
    if coefs.shape != (sum(cards),) or not np.all(np.isfinite(coefs)):
        raise ValueError(
            f"params.coefficients: expected {sum(cards)} finite numbers, got shape {coefs.shape}"
        )
    # Logits are sums of F + 2 of these terms: bounded terms keep them finite (no NaN).
    check_magnitude("params.coefficients", coefs, coefs.astype(np.float64))
    for name in ("intercept", "group_coefficient"):
        value = float(getattr(params, name))
        if not abs(value) <= MAX_MAGNITUDE:
            raise ValueError(
                f"params.{name}={getattr(params, name)!r}: expected a finite number in "
                f"[{-MAX_MAGNITUDE:g}, {MAX_MAGNITUDE:g}]"
            )
    age = params.age_feature
    if age is not None and (
        isinstance(age, bool) or not isinstance(age, (int, np.integer)) or not 0 <= age < n_features
    ):
        raise ValueError(
            f"params.age_feature={age!r}: expected None or a feature index in [0, {n_features})"
        )
    as_distributions("params.group_probs", params.group_probs, (2,))
    if (params.category_probs is None) == (params.rows is None):
        raise ValueError(
            "params: expected exactly one of category_probs (stand-in) and rows (data)"
        )
    if params.category_probs is not None:
        if len(params.category_probs) != n_features:
            raise ValueError(
                f"params.category_probs: expected {n_features} arrays, "
                f"got {len(params.category_probs)}"
            )
        for k, p in enumerate(params.category_probs):
            as_distributions(f"params.category_probs[{k}]", p, (2, cards[k]))
    else:
        rows = np.asarray(params.rows)
        groups = np.asarray(params.row_groups)
        if (
            rows.ndim != 2
            or rows.shape[1] != n_features
            or rows.shape[0] < 1
            or groups.shape != (rows.shape[0],)
        ):
            raise ValueError(
                f"params.rows / params.row_groups: expected shapes (N, {n_features}) and "
                f"(N,), got {rows.shape} and {groups.shape}"
            )
        if np.any(rows < 0) or np.any(rows >= np.asarray(cards)[None, :]):
            raise ValueError("params.rows: every level index must lie in [0, cardinality)")
        if not np.all((groups == 0) | (groups == 1)):
            raise ValueError("params.row_groups: every group must be 0 or 1")
    return params
