"""``fair/SchoolAdmission-v0``: SELLF's school admission environment (ENEM stand-in).

Follows SELLF's ``EnemEnv`` (Valdrighi et al., "Long-term Fairness with Selective
Labels", Sec. 5.2 and App. D "School Admission"; hiaac-finance/sellf
``fairrl/environments/resampling.py`` and ``notebooks/enem.ipynb``). The paper builds
the pool and the pass-probability model ``alpha(x, z)`` from the ENEM 2020 microdata,
which are not available offline, so the default environment runs on a documented
synthetic stand-in calibrated to the published statistics (see
:func:`make_standin_params`; the calibrated numbers are committed as
``rllib_fair/envs/data/school_admission_standin.json``, whose ``provenance`` field says
how they were made). :func:`load_enem` builds the same environment from real ENEM
microdata (or any CSV / DataFrame of categorical features) by fitting the logistic
model with numpy.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from rllib_fair.envs.base import (
    MAX_MAGNITUDE,
    _fmt,
    as_count,
    as_distributions,
    as_flag,
    as_positive,
    check_magnitude,
)
from rllib_fair.envs.pool import PoolEnv

STANDIN_PATH = Path(__file__).resolve().parent / "data" / "school_admission_standin.json"

#: Seed of the committed stand-in (``school_admission_standin.json``).
DEFAULT_STANDIN_SEED = 20250924

#: Published statistics of SELLF's ENEM sample (App. D; Sec. 5.2) the stand-in matches.
TARGET_GROUP_PROBS: tuple[float, float] = (0.38, 0.62)  # Black/brown, white
TARGET_POSITIVE_RATE = 0.37
TARGET_QUALIFICATION_GAP = 0.125  # white minus Black/brown qualification rate

#: Cardinality of each of the stand-in's 38 categorical features (sum 126). Feature 0 is
#: the three-level age band; the other 37 are anonymous socio-economic features with
#: 2-6 levels (11 x 2, 11 x 3, 9 x 4, 4 x 5, 2 x 6 levels), in this fixed order.
STANDIN_CARDINALITIES: tuple[int, ...] = (
    3,
    2, 4, 3, 5, 2, 3, 4, 6, 2, 3, 4, 2,
    5, 3, 2, 4, 3, 2, 4, 3, 6, 2, 4, 3,
    2, 5, 3, 4, 2, 3, 4, 5, 2, 3, 4, 2, 3,
)  # fmt: skip
STANDIN_FEATURE_NAMES: tuple[str, ...] = ("age_band",) + tuple(
    f"ses_{k:02d}" for k in range(1, len(STANDIN_CARDINALITIES))
)

#: Stand-in age band: initial distribution per group (young, middle, old) and the
#: logistic coefficient of each level (older applicants are less likely to pass).
STANDIN_AGE_PROBS: tuple[tuple[float, ...], ...] = ((0.50, 0.32, 0.18), (0.60, 0.27, 0.13))
STANDIN_AGE_COEFFICIENTS: tuple[float, ...] = (0.0, -0.4, -0.8)

#: Strength of the group difference in the stand-in's socio-economic feature
#: distributions (see :func:`make_standin_params`).
STANDIN_TILT = 0.15

#: Draws per group of the Monte Carlo sample the stand-in's intercepts are calibrated on.
STANDIN_CALIBRATION_SIZE = 200_000

#: The 36 socio-economic columns of SELLF's ENEM notebook besides race (the group) and
#: age (``TP_FAIXA_ETARIA``); a convenient ``feature_columns`` for :func:`load_enem` on
#: the ENEM microdata.
ENEM_FEATURE_COLUMNS: tuple[str, ...] = (
    "TP_SEXO",
    "TP_ESTADO_CIVIL",
    "TP_ST_CONCLUSAO",
    "TP_ANO_CONCLUIU",
    "TP_ESCOLA",
    "TP_ENSINO",
    "IN_TREINEIRO",
    "TP_DEPENDENCIA_ADM_ESC",
    "TP_LOCALIZACAO_ESC",
    "TP_SIT_FUNC_ESC",
    "TP_LINGUA",
) + tuple(f"Q{k:03d}" for k in range(1, 26))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function of an array."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=np.float64)))


def _sigmoid1(z: float) -> float:
    """Numerically stable logistic function of one float."""
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    ez = math.exp(z)
    return ez / (1.0 + ez)


# ----------------------------------------------------------------------------- parameters


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


def _sample_standin(
    category_probs: Sequence[np.ndarray], groups: np.ndarray, u: np.ndarray
) -> np.ndarray:
    """Level index ``[n, F]`` of every feature from uniforms ``u [n, F]`` per group."""
    n_features = len(category_probs)
    width = max(p.shape[1] for p in category_probs)
    cats = np.empty((groups.shape[0], n_features), dtype=np.int64)
    for g in range(2):
        # Cumulative level probabilities padded to a common width: the last real entry
        # is forced to exactly 1 (> any uniform) and the padding to 2, so the number of
        # entries <= u is the sampled level (searchsorted side="right", vectorised).
        cum = np.full((n_features, width), 2.0)
        for k, p in enumerate(category_probs):
            m = p.shape[1]
            cum[k, :m] = np.cumsum(p[g])
            cum[k, m - 1] = 1.0
        members = np.flatnonzero(groups == g)
        cats[members] = (cum[None, :, :] <= u[members, :, None]).sum(axis=2)
    return cats


def _solve_intercept(scores: np.ndarray, target: float) -> float:
    """Intercept ``b`` with ``mean(sigmoid(scores + b)) = target`` (bisection, 64 steps)."""
    lo, hi = -30.0, 30.0
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        if float(_sigmoid(scores + mid).mean()) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def make_standin_params(
    seed: int = DEFAULT_STANDIN_SEED,
    *,
    group_probs: Sequence[float] = TARGET_GROUP_PROBS,
    positive_rate: float = TARGET_POSITIVE_RATE,
    qualification_gap: float = TARGET_QUALIFICATION_GAP,
    tilt: float = STANDIN_TILT,
    calibration_size: int = STANDIN_CALIBRATION_SIZE,
) -> SchoolAdmissionParams:
    """Generates and calibrates the synthetic ENEM stand-in (deterministic in ``seed``).

    Generation, all from ``numpy.random.default_rng(seed)``, feature by feature:

    * Age band (feature 0, 3 levels): level distributions :data:`STANDIN_AGE_PROBS`,
      coefficients :data:`STANDIN_AGE_COEFFICIENTS` (fixed, not drawn).
    * Every other feature ``k`` with ``m`` levels (:data:`STANDIN_CARDINALITIES`): a
      relevance ``r_k ~ U(0.1, 0.4)``; coefficients ``r_k * (v - mean(v))`` with ``v``
      the sorted draws of ``m`` standard normals (so higher levels qualify more, like an
      income or schooling ladder); a base level distribution ``Dirichlet(4, ..., 4)``;
      a group tilt ``f_k ~ U(0, 1)``; level distribution of group ``g``
      ``proportional to base * exp(s_g * tilt * f_k * (v - mean(v)))`` with
      ``s_0 = -1/2`` (Black/brown) and ``s_1 = +1/2`` (white): white applicants are
      shifted towards the better-qualifying levels.

    Calibration: ``calibration_size`` applicants per group are drawn from these
    distributions (same generator) and their feature scores ``coefficients . x`` are
    computed; a bisection per group finds the intercept ``b_g`` for which the group's
    mean pass probability is its target, ``q_0 = positive_rate - p_1 * gap`` and
    ``q_1 = q_0 + gap`` (``p_1 = group_probs[1]``), so that the population's positive
    rate is ``positive_rate`` and the white minus Black/brown qualification gap is
    ``qualification_gap``. Then ``intercept = b_0`` and ``group_coefficient = b_1 - b_0``
    (the part of the gap the feature distributions do not explain).

    Args:
        seed: seed of the generator.
        group_probs: (Black/brown, white) shares of the population.
        positive_rate: target mean pass probability of the population.
        qualification_gap: target white minus Black/brown mean pass probability.
        tilt: strength of the group difference in the feature distributions.
        calibration_size: Monte Carlo draws per group for the calibration.

    Returns:
        The parameters; ``info`` holds the targets, the achieved values on the
        calibration sample and the generation settings.
    """
    gp = as_distributions("group_probs", group_probs, (2,))
    rate = float(positive_rate)
    gap = float(qualification_gap)
    q0 = rate - float(gp[1]) * gap
    q1 = q0 + gap
    if not (0.0 < q0 < 1.0 and 0.0 < q1 < 1.0):
        raise ValueError(
            f"positive_rate={rate!r}, qualification_gap={gap!r}: the group rates "
            f"({q0:.4f}, {q1:.4f}) must lie in (0, 1)"
        )
    n_cal = as_count("calibration_size", calibration_size)
    rng = np.random.default_rng(seed)
    cards = STANDIN_CARDINALITIES
    coefs: list[np.ndarray] = [np.asarray(STANDIN_AGE_COEFFICIENTS, dtype=np.float64)]
    probs: list[np.ndarray] = [np.asarray(STANDIN_AGE_PROBS, dtype=np.float64)]
    for m in cards[1:]:
        relevance = rng.uniform(0.1, 0.4)
        v = np.sort(rng.standard_normal(m))
        v = v - v.mean()
        base = rng.dirichlet(np.full(m, 4.0))
        strength = tilt * rng.uniform(0.0, 1.0)
        per_group = np.empty((2, m))
        for g, sign in enumerate((-0.5, 0.5)):
            weights = base * np.exp(sign * strength * v)
            per_group[g] = weights / weights.sum()
        coefs.append(relevance * v)
        probs.append(per_group)
    coefficients = np.concatenate(coefs)

    offsets = np.concatenate([[0], np.cumsum(cards)[:-1]])
    scores = []
    for g in range(2):
        groups = np.full(n_cal, g, dtype=np.int64)
        cats = _sample_standin(probs, groups, rng.random((n_cal, len(cards))))
        scores.append(coefficients[cats + offsets[None, :]].sum(axis=1))
    b0 = _solve_intercept(scores[0], q0)
    b1 = _solve_intercept(scores[1], q1)
    achieved = [float(_sigmoid(scores[g] + b).mean()) for g, b in ((0, b0), (1, b1))]
    feature_only = [float(_sigmoid(scores[g] + b0).mean()) for g in range(2)]
    info = {
        "source": "standin",
        "generator": "rllib_fair.envs.school_admission.make_standin_params",
        "seed": int(seed),
        "settings": {
            "tilt": float(tilt),
            "calibration_size": n_cal,
            "age_probs": [list(p) for p in STANDIN_AGE_PROBS],
            "age_coefficients": list(STANDIN_AGE_COEFFICIENTS),
        },
        "targets": {
            "group_probs": [float(p) for p in gp],
            "positive_rate": rate,
            "qualification_gap": gap,
            "group_rates": [q0, q1],
        },
        "achieved_on_calibration_sample": {
            "group_rates": achieved,
            "positive_rate": float(gp[0] * achieved[0] + gp[1] * achieved[1]),
            "qualification_gap": achieved[1] - achieved[0],
            "gap_from_features_alone": feature_only[1] - feature_only[0],
        },
    }
    return SchoolAdmissionParams(
        feature_names=STANDIN_FEATURE_NAMES,
        levels=tuple(tuple(str(c) for c in range(m)) for m in cards),
        coefficients=coefficients,
        intercept=b0,
        group_coefficient=b1 - b0,
        age_feature=0,
        group_probs=(float(gp[0]), float(gp[1])),
        category_probs=tuple(probs),
        info=info,
    )


def standin_to_dict(params: SchoolAdmissionParams) -> dict[str, Any]:
    """JSON-serialisable form of stand-in parameters (the layout of the committed file)."""
    if params.category_probs is None:
        raise ValueError("params: not a stand-in (category_probs is None); nothing to write")
    return {
        "group_names": list(SchoolAdmissionEnv.GROUP_NAMES),
        "feature_names": list(params.feature_names),
        "cardinalities": list(params.cardinalities),
        "age_feature": params.age_feature,
        "group_probs": list(params.group_probs),
        "category_probs": [p.tolist() for p in params.category_probs],
        "coefficients": params.coefficients.tolist(),
        "intercept": params.intercept,
        "group_coefficient": params.group_coefficient,
        "calibration": params.info,
        "provenance": {
            "what": (
                "Synthetic stand-in for SELLF's ENEM school admission pool and pass-"
                "probability model (the ENEM microdata cannot be downloaded here)."
            ),
            "derivation": (
                "rllib_fair.envs.school_admission.make_standin_params(seed) with the "
                "module defaults; written by write_standin_json(). Feature distributions "
                "and coefficients are drawn from numpy.random.default_rng(seed); the "
                "intercept and group coefficient are calibrated by bisection on a "
                "Monte Carlo sample (see calibration)."
            ),
            "published_statistics_matched": (
                "SELLF App. D: groups white 62% / Black-brown 38%, 37% positive labels, "
                "38 categorical features one-hot encoded to 126 dimensions, a three-level "
                "age category; Sec. 5.2: initial qualification disparity 0.125."
            ),
            "not_matched": (
                "Everything else (per-feature distributions, coefficients, the size of "
                "the age effect) is synthetic and not fitted to ENEM."
            ),
        },
    }


def params_from_dict(table: Mapping[str, Any]) -> SchoolAdmissionParams:
    """Stand-in parameters from the dict written by :func:`standin_to_dict`."""
    cards = [int(m) for m in table["cardinalities"]]
    return SchoolAdmissionParams(
        feature_names=tuple(table["feature_names"]),
        levels=tuple(tuple(str(c) for c in range(m)) for m in cards),
        coefficients=np.asarray(table["coefficients"], dtype=np.float64),
        intercept=float(table["intercept"]),
        group_coefficient=float(table["group_coefficient"]),
        age_feature=table["age_feature"],
        group_probs=tuple(float(p) for p in table["group_probs"]),  # type: ignore[arg-type]
        category_probs=tuple(np.asarray(p, dtype=np.float64) for p in table["category_probs"]),
        info=dict(table.get("calibration", {})),
    )


@functools.lru_cache(maxsize=1)
def load_standin_table() -> dict[str, Any]:
    """Returns the committed stand-in table (``school_admission_standin.json``).

    The returned dict is shared; do not modify it.
    """
    with STANDIN_PATH.open() as fh:
        return json.load(fh)


def write_standin_json(
    path: str | Path = STANDIN_PATH, seed: int = DEFAULT_STANDIN_SEED
) -> dict[str, Any]:
    """Generates the stand-in for ``seed`` and writes it to ``path``; returns the dict."""
    table = standin_to_dict(make_standin_params(seed))
    Path(path).write_text(json.dumps(table, indent=1) + "\n")
    return table


def standin_params(seed: int | None = None) -> SchoolAdmissionParams:
    """The committed stand-in (``seed=None``) or a fresh one generated from ``seed``."""
    if seed is None:
        return params_from_dict(load_standin_table())
    return make_standin_params(seed)


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


# ----------------------------------------------------------------------------- environment


class SchoolAdmissionEnv(PoolEnv):
    """Admission to a preparatory program on a resampled pool of ENEM-like applicants.

    ## Description

    SELLF's school admission environment (Valdrighi et al., Sec. 5.2, App. D), after
    ``EnemEnv`` of hiaac-finance/sellf. A decision-maker accepts applicants into a
    preparatory program for the ENEM exam; the label ``y`` (1 = passes, i.e. scores
    above a threshold) is only observed for accepted applicants. At reset a pool of
    ``n_applicants`` individuals is drawn: group ~ ``group_probs`` (Black/brown 38%,
    white 62%), then 38 categorical socio-economic features (one-hot, 126 dims) from the
    group's feature distributions (stand-in) or a data row of that group (real data).
    Each step one individual is drawn uniformly from the pool and shown; its label is
    drawn as ``Bernoulli(p)`` when it is shown, with the pass probability

    ``p = min(1, alpha(x, z) + gain * indicator)``,
    ``alpha(x, z) = sigmoid(w . x + w_z * z + b)``

    (a logistic model; ``z`` = 1 for white). After the decision on the shown
    individual:

    * Gain: if it was accepted (``a = 1``) or passed (``y = 1``, observed or not) its
      gain indicator is set (once; it never resets): ``gain`` (0.5) is added to its pass
      probability on every later draw, capped at 1. This is SELLF's "extra indicator
      feature ... 1 if it has already been previously accepted or if it has previously
      had the label Y=1 which increases the probability of the positive label by 0.5"
      (``EnemEnv.sample_label``: ``p = min(model_p + 0.5 * gain, 1)``).
    * Age: its age band moves one level up (young -> middle -> old, capped at the top
      level) whatever the decision, and the age coefficients (negative: 0, -0.4, -0.8 in
      the stand-in) lower its qualification. "Each iteration the age of the applicant
      will increase" is read as each time that applicant is decided on, as
      ``EnemEnv.update_features`` does for the decided individual only (O(1) per step;
      the alternative, ageing the whole pool every step, would put everybody in the top
      band within two steps).

    Individuals stay in the pool, so each group's qualification drifts with the policy
    (up through the gain, down through age).

    The default population is a synthetic stand-in (``school_admission_standin.json``,
    :func:`make_standin_params`) calibrated so that, over the population, the group
    shares are 0.38 / 0.62, the mean pass probability (positive rate) is 0.37 and the
    white minus Black/brown qualification gap is 0.125 (SELLF's initial disparity under
    qualification parity); see the table's ``calibration`` field for the achieved
    values. The population parameters (feature distributions, coefficients) are fixed
    by the stand-in seed; the pool is redrawn from ``self.np_random`` at every reset.
    :meth:`from_enem_csv` / :func:`load_enem` build the same environment from the real
    ENEM microdata.

    Differences from SELLF's code: the age update of ``EnemEnv`` hard-codes two age
    levels and edits the first two age x race columns (those of the Black/brown group)
    whatever the applicant's group, and its notebook's binning ``(code - 1) // 7`` of
    ``TP_FAIXA_ETARIA <= 14`` yields two levels, while the paper describes three; here
    the applicant's own age block moves up one of three levels. SELLF restores one
    fixed pool (the first 4000 rows of its 10,000-row sample) at every reset; here the
    pool is redrawn from ``self.np_random``. SELLF draws the label in ``step``; here it
    is drawn when the individual is shown (same distribution: nothing changes between).

    ## Action Space

    ``Discrete(2)``: 0 = reject, 1 = accept (admit to the program).

    ## Observation Space

    ``Box(0, 1, (n,), float32)`` describing the individual to decide on next:

    | part | indices (stand-in) | size |
    |---|---|---|
    | one-hot features, a block per feature (block 0: age band) | 0-125 | 126 (``D``) |
    | gain indicator | 126 | 1 |
    | one-hot group (Black/brown, white); ``obs_group`` | 127-128 | 2 |

    ``n = 129`` by default (``D + 1 + 2`` with data of ``D`` one-hot dims; 127 without
    the group). SELLF's 126-dim vector differs in layout: it holds the race indicator,
    age x race interactions, the other one-hot features and the gain indicator.

    ## Rewards

    ``a * (y - cost)``: ``1 - cost`` for an accepted applicant who passes, ``-cost`` for
    one who fails, 0 for a rejection. The resource (starting at ``starting_resource``)
    changes by the reward. ``cost`` is 0.5 as in SELLF Sec. 5.2; App. D and the
    reference code (``EnemEnv(cost=0.4)``) use 0.4 (pass ``cost=0.4`` for that).

    ## Episode End

    * Termination: the resource is ``<= 0`` (SELLF's condition).
    * Truncation: after ``max_steps`` steps (2048, SELLF's ``EnemEnv``).

    ## Arguments

    | argument | default | meaning |
    |---|---|---|
    | ``cost`` | 0.5 | cost of an acceptance (reward ``y - cost``) |
    | ``n_applicants`` | 4000 | pool size (SELLF's ``EnemEnv``) |
    | ``starting_resource`` | 1000 | resource at reset |
    | ``max_steps`` | 2048 | truncation horizon |
    | ``gain`` | 0.5 | pass-probability increase once accepted or passed |
    | ``group_probs`` | from ``params`` (0.38, 0.62) | probability of each group in the pool |
    | ``standin_seed`` | None | None: the committed stand-in; int: a new one from that seed (~1 s) |
    | ``params`` | None | :class:`SchoolAdmissionParams` replacing the stand-in (see load_enem) |
    | ``obs_group`` | True | append the one-hot group to the observation |

    ## Fairness signals

    ``info`` of ``step`` (``reset`` gives the same keys, zero decision counts and
    ``group = label = decision = -1``):

    * ``"fairness"``: float64 ``[NUM_FIELDS, 2]`` counts
      (:mod:`rllib_fair.fairness.counts`). Decision rows: the individual decided on in
      this step (shown in the previous observation) with its true label. Population
      rows, after the step: ``population[g]`` = number of pool members in group ``g``;
      ``qualified_mass[g]`` = sum of the group's current pass probabilities (gain and
      age included), maintained incrementally (O(1) per step). Their ratio is the
      group's qualification rate, the estimand of ``qualification_parity`` (the default
      notion, as in SELLF Sec. 5.2).
    * ``"group"``, ``"label"`` (1 = passes), ``"decision"`` (action taken),
      ``"label_observed"`` (1 iff accepted), all python ``int``.

    ## Version History

    * v0: initial version.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    #: Group 0 = SELLF's "Black/brown" (ENEM race codes 2 and 3), group 1 = "white"
    #: (code 1); "_" instead of "/" keeps the names usable as metric keys and paths.
    GROUP_NAMES: ClassVar[tuple[str, ...]] = ("Black_brown", "white")
    DEFAULT_NOTION: ClassVar[str] = "qualification_parity"
    DESCRIPTION: ClassVar[str] = (
        "SELLF school admission (ENEM stand-in): pool of 4000 applicants, 38 categorical "
        "features (126 one-hot), logistic pass model, acceptance gain +0.5, ageing; cost 0.5"
    )

    _UNIFORM_WIDTH: ClassVar[int] = 2  # pool index, label

    def __init__(
        self,
        cost: float = 0.5,
        n_applicants: int = 4000,
        starting_resource: float = 1000.0,
        max_steps: int = 2048,
        gain: float = 0.5,
        group_probs: Any = None,
        standin_seed: int | None = None,
        params: SchoolAdmissionParams | None = None,
        obs_group: bool = True,
    ) -> None:
        self.cost = as_positive("cost", cost, allow_zero=True)
        self.n_applicants = as_count("n_applicants", n_applicants)
        self.starting_resource = as_positive("starting_resource", starting_resource)
        self.max_steps = as_count("max_steps", max_steps)
        self.gain = as_positive("gain", gain, allow_zero=True)
        if self.gain > 1.0:
            raise ValueError(f"gain={_fmt(gain)}: expected a number in [0, 1]")
        self.obs_group = as_flag("obs_group", obs_group)
        if standin_seed is not None:
            standin_seed = as_count("standin_seed", standin_seed, minimum=0)
            if params is not None:
                raise ValueError(
                    f"standin_seed={standin_seed!r}: give either standin_seed or params, not both"
                )
        params = standin_params(standin_seed) if params is None else _check_params(params)
        gp = params.group_probs if group_probs is None else group_probs
        gp = as_distributions("group_probs", gp, (2,))
        if params.rows is not None:
            present = np.bincount(np.asarray(params.row_groups, dtype=np.int64), minlength=2)
            for g in range(2):
                if gp[g] > 0 and present[g] == 0:
                    raise ValueError(
                        f"group_probs={_fmt(gp)}: group {g} ({self.GROUP_NAMES[g]}) has no "
                        "data rows, so its probability must be 0"
                    )

        self.params = params
        self.standin_seed = standin_seed
        self.group_probs = (float(gp[0]), float(gp[1]))
        self._group_cum = np.cumsum(gp)
        cards = params.cardinalities
        self.n_features = len(cards)
        self.n_dims = params.n_dims
        self._offsets = params.offsets
        self._coefficients = np.asarray(params.coefficients, dtype=np.float64)
        age = params.age_feature
        if age is None:
            self._age_offset = 0
            self._age_coef = [0.0]
        else:
            self._age_offset = int(self._offsets[age])
            self._age_coef = self._coefficients[
                self._age_offset : self._age_offset + cards[age]
            ].tolist()
        self._top_age = len(self._age_coef) - 1
        # Logit of every feature but age (the age term is added from _age_coef).
        self._non_age = [k for k in range(self.n_features) if k != age]
        if params.rows is not None:
            rows = np.asarray(params.rows, dtype=np.int64)
            row_groups = np.asarray(params.row_groups, dtype=np.int64)
            self._group_rows = [rows[row_groups == g] for g in range(2)]
        else:
            self._group_rows = None

        self.gain_index = self.n_dims
        self.group_index = self.n_dims + 1 if self.obs_group else -1
        size = self.n_dims + 1 + (2 if self.obs_group else 0)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(size,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)

        # Episode state (set in reset()); the pool bookkeeping lives in PoolEnv.
        self._init_pool(2, self.n_applicants)
        self._pool_age: list[int] = []
        self._pool_gain: list[int] = []
        self._pool_base: list[float] = []
        self._pool_alpha: list[float] = []
        self._pool_cats = np.zeros((0, self.n_features), dtype=np.int64)
        self._pool_obs = np.zeros((0, size), dtype=np.float32)
        self._resource = self.starting_resource

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_enem_csv(
        cls,
        path: Any,
        *,
        label_column: str,
        group_column: str,
        age_column: str | None = None,
        feature_columns: Sequence[str] | None = None,
        positive_threshold: float | None = None,
        group_map: Mapping[Any, int] | None = None,
        min_frequency: float = 0.0,
        l2: float = 1.0,
        fit_iterations: int = 100,
        sep: str = ",",
        encoding: str | None = None,
        **env_kwargs: Any,
    ) -> SchoolAdmissionEnv:
        """Builds the environment from ENEM microdata (or any CSV) via :func:`load_enem`.

        Args:
            path: CSV path or a ``pandas.DataFrame``.
            label_column: label (0/1) or score column (with ``positive_threshold``).
            group_column: sensitive attribute, binary (or mapped by ``group_map``).
            age_column: ordinal age column (levels sorted, youngest first) or None.
            feature_columns: categorical feature columns; default: all other columns.
            positive_threshold: label = ``score > positive_threshold`` when given.
            group_map: raw group value -> group index (0 Black/brown, 1 white).
            min_frequency: levels rarer than this share are merged into one level.
            l2: L2 penalty of the logistic fit (sklearn's ``1 / C``).
            fit_iterations: maximum Newton iterations of the fit.
            sep: CSV separator (ENEM microdata: ``";"``).
            encoding: CSV encoding (ENEM microdata: ``"latin-1"`` or ``"cp860"``).
            **env_kwargs: further constructor arguments (``cost``, ``n_applicants``...).
        """
        params = load_enem(
            path,
            label_column=label_column,
            group_column=group_column,
            age_column=age_column,
            feature_columns=feature_columns,
            positive_threshold=positive_threshold,
            group_map=group_map,
            min_frequency=min_frequency,
            l2=l2,
            fit_iterations=fit_iterations,
            sep=sep,
            encoding=encoding,
        )
        return cls(params=params, **env_kwargs)

    # ------------------------------------------------------------------ public state

    @property
    def resource(self) -> float:
        """The decision-maker's current resource."""
        return self._resource

    @property
    def pool_categories(self) -> np.ndarray:
        """int64 ``[n_applicants, F]``: current level of every feature (a copy)."""
        cats = self._pool_cats.copy()
        if self.params.age_feature is not None and cats.shape[0]:
            cats[:, self.params.age_feature] = self._pool_age
        return cats

    @property
    def pool_ages(self) -> np.ndarray:
        """Current age level of every pool member (zeros without an age feature)."""
        return np.array(self._pool_age, dtype=np.int64)

    @property
    def pool_gains(self) -> np.ndarray:
        """Gain indicator (0/1) of every pool member (a copy)."""
        return np.array(self._pool_gain, dtype=np.int64)

    @property
    def pass_probabilities(self) -> np.ndarray:
        """Current pass probability of every pool member, as maintained by the env."""
        return np.array(self._pool_p, dtype=np.float64)

    @property
    def pool_observations(self) -> np.ndarray:
        """float32 ``[n_applicants, n]``: the observation of every pool member (a copy)."""
        return self._pool_obs.copy()

    @property
    def applicant(self) -> tuple[int, int, float]:
        """``(pool index, group, pass probability)`` of the individual shown last."""
        i = self._index
        return i, self._group, (self._pool_p[i] if i >= 0 else math.nan)

    # ------------------------------------------------------------------ dynamics

    def _fill_pool(self, rng: np.random.Generator) -> None:
        """Draws a fresh pool (group, then features or a data row); resets the resource."""
        n, n_features = self.n_applicants, self.n_features
        groups = np.searchsorted(self._group_cum, rng.random(n) * self._group_cum[-1], side="right")
        groups = np.minimum(groups, 1)
        if self._group_rows is None:
            cats = _sample_standin(self.params.category_probs, groups, rng.random((n, n_features)))
        else:
            cats = np.empty((n, n_features), dtype=np.int64)
            u_rows = rng.random(n)
            for g in range(2):
                members = np.flatnonzero(groups == g)
                if members.size:
                    table = self._group_rows[g]
                    picks = np.minimum(
                        (u_rows[members] * table.shape[0]).astype(np.int64), table.shape[0] - 1
                    )
                    cats[members] = table[picks]
        cols = cats + self._offsets[None, :]
        coefs = self._coefficients
        base = (
            coefs[cols[:, self._non_age]].sum(axis=1)
            + self.params.group_coefficient * groups
            + self.params.intercept
        )
        age_feature = self.params.age_feature
        ages = cats[:, age_feature] if age_feature is not None else np.zeros(n, dtype=np.int64)
        p = _sigmoid(base + np.asarray(self._age_coef)[ages])
        obs = np.zeros((n, self.observation_space.shape[0]), dtype=np.float32)
        rows = np.arange(n)
        obs[rows[:, None], cols] = 1.0
        if self.obs_group:
            obs[rows, self.group_index + groups] = 1.0

        self._pool_cats = cats
        self._pool_obs = obs
        self._pool_group = groups.tolist()
        self._pool_age = ages.tolist()
        self._pool_gain = [0] * n
        self._pool_base = base.tolist()
        self._pool_alpha = p.tolist()
        self._pool_p = list(self._pool_alpha)
        self._reset_population(groups, p)
        self._resource = self.starting_resource

    def _decide(self, a: int) -> tuple[float, bool]:
        """Sets the decided individual's gain indicator (accepted or passed) and ages it."""
        i = self._index
        y = self._label
        if a:
            reward = y - self.cost
            self._resource += reward
        else:
            reward = 0.0

        age = self._pool_age[i]
        gained = (a or y) and not self._pool_gain[i]
        aged = age < self._top_age
        if gained or aged:
            row = self._pool_obs[i]
            if gained:
                self._pool_gain[i] = 1
                row[self.gain_index] = 1.0
            if aged:
                row[self._age_offset + age] = 0.0
                age += 1
                row[self._age_offset + age] = 1.0
                self._pool_age[i] = age
                alpha = self._pool_alpha[i] = _sigmoid1(self._pool_base[i] + self._age_coef[age])
            else:
                alpha = self._pool_alpha[i]
            if self._pool_gain[i]:
                p = alpha + self.gain
                if p > 1.0:
                    p = 1.0
            else:
                p = alpha
            # PoolEnv._set_probability, inlined (most steps change the probability).
            g = self._group
            qm = self._qualified_mass[g] = self._qualified_mass[g] + p - self._pool_p[i]
            self._pool_p[i] = p
            self._pop_rows[1, g] = qm
        return reward, self._resource <= 0.0


# ----------------------------------------------------------------------------- real data


def fit_logistic(
    features: Any, labels: Any, *, l2: float = 1.0, iterations: int = 100, tol: float = 1e-10
) -> tuple[np.ndarray, float, dict[str, Any]]:
    """Fits ``P(y = 1 | x) = sigmoid(w . x + b)`` by Newton's method (IRLS) with numpy.

    Minimises ``sum_i logloss_i + l2 / 2 * |w|^2`` (the intercept ``b`` is not
    penalised; ``l2 = 1`` is scikit-learn's default ``C = 1``). Each Newton step is
    halved until the objective does not increase (at most 30 halvings); the fit stops
    after ``iterations`` steps or once a step moves no parameter by more than ``tol``.
    A ridge of 1e-9 keeps the Newton system solvable when ``l2 = 0`` and the design is
    collinear (one-hot blocks).

    Args:
        features: ``[n, d]`` design matrix.
        labels: ``[n]`` labels in {0, 1}.
        l2: L2 penalty on ``w`` (>= 0).
        iterations: maximum number of Newton steps (>= 1).
        tol: convergence threshold on the largest parameter change.

    Returns:
        ``(w [d], b, stats)`` with ``stats = {"iterations", "converged", "objective"}``.
    """
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    l2 = as_positive("l2", l2, allow_zero=True)
    iterations = as_count("iterations", iterations)
    n, d = x.shape
    design = np.hstack([x, np.ones((n, 1))])
    penalty = np.full(d + 1, l2)
    penalty[-1] = 0.0
    theta = np.zeros(d + 1)

    def objective(t: np.ndarray) -> float:
        z = design @ t
        return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * np.sum(penalty * t * t))

    current = objective(theta)
    converged = False
    done = 0
    for done in range(1, iterations + 1):  # noqa: B007 - the count is reported
        prob = _sigmoid(design @ theta)
        grad = design.T @ (prob - y) + penalty * theta
        hess = (design * (prob * (1.0 - prob))[:, None]).T @ design
        hess[np.diag_indices(d + 1)] += penalty + 1e-9
        step = np.linalg.solve(hess, grad)
        scale = 1.0
        for _ in range(30):
            candidate = theta - scale * step
            value = objective(candidate)
            if value <= current:
                break
            scale *= 0.5
        else:
            converged = True  # no decrease possible: at the optimum up to rounding
            break
        theta, current = candidate, value
        if float(np.max(np.abs(scale * step))) <= tol:
            converged = True
            break
    stats = {"iterations": done, "converged": converged, "objective": current}
    return theta[:d].copy(), float(theta[d]), stats


def _columns_text(columns: Sequence[Any]) -> str:
    """Short one-line list of column names for error messages."""
    names = [str(c) for c in columns]
    text = repr(names[:20])
    return text[:-1] + f", ... ({len(names)} columns)]" if len(names) > 20 else text


def _sorted_values(values: Any) -> list[Any]:
    """Distinct values, sorted naturally (numbers numerically), else by their text."""
    uniq = list(dict.fromkeys(values.tolist()))
    try:
        return sorted(uniq)
    except TypeError:
        return sorted(uniq, key=str)


def load_enem(
    source: Any,
    *,
    label_column: str,
    group_column: str,
    age_column: str | None = None,
    feature_columns: Sequence[str] | None = None,
    positive_threshold: float | None = None,
    group_map: Mapping[Any, int] | None = None,
    min_frequency: float = 0.0,
    l2: float = 1.0,
    fit_iterations: int = 100,
    sep: str = ",",
    encoding: str | None = None,
) -> SchoolAdmissionParams:
    """Builds :class:`SchoolAdmissionParams` from ENEM microdata (or any categorical CSV).

    Reads ``source`` (a CSV path, read with pandas, only the needed columns; or a
    ``pandas.DataFrame``), then:

    1. Group: ``group_map[value]`` when given (rows whose value is not a key are dropped;
       ENEM: ``{1: 1, 2: 0, 3: 0}`` for white = 1, Black/brown = 0, as SELLF); otherwise
       the column must hold exactly two distinct values (missing values are dropped):
       the smaller is group 0 (Black/brown), the larger group 1 (white).
    2. Label: ``score > positive_threshold`` when a threshold is given (SELLF:
       ``NU_NOTA_LC > 575``; rows without a numeric score are dropped); otherwise the
       column must hold 0/1 (or booleans); rows with a missing label are dropped.
    3. Age: ``age_column``'s distinct values, sorted, are the age levels (youngest
       first; rows without an age are dropped); bin the raw ``TP_FAIXA_ETARIA`` codes
       first (pass a DataFrame), e.g. SELLF's ``(code - 1) // 7`` for codes <= 14.
       Without an age column nobody ages.
    4. Features: ``feature_columns`` (default: every column but the label and group
       columns; :data:`ENEM_FEATURE_COLUMNS` are SELLF's ENEM columns) are categorical:
       each distinct value is a level (sorted; a missing value is a level of its own),
       levels with a share below ``min_frequency`` are merged into one ``"infrequent"``
       level (SELLF used 0.1 via scikit-learn's ``OneHotEncoder``); the age feature is
       block 0, the others follow in the given order.
    5. ``alpha(x, z)``: :func:`fit_logistic` on the one-hot features plus the group
       indicator (L2 penalty ``l2``, at most ``fit_iterations`` Newton steps). SELLF
       fitted scikit-learn's ``LogisticRegression`` on the race indicator, age x race
       interactions and the other one-hot features.

    The environment's pool is resampled from the data rows: group ~ ``group_probs``
    (default: the data's group shares), then a uniform row of that group.

    Args:
        source: CSV path or a ``pandas.DataFrame``.
        label_column: label (0/1) or score column (with ``positive_threshold``).
        group_column: sensitive attribute.
        age_column: ordinal age column or None.
        feature_columns: categorical feature columns (the age column may be included).
        positive_threshold: label = ``score > positive_threshold`` when given.
        group_map: raw group value -> group index (0 or 1).
        min_frequency: share in [0, 1) below which levels are merged.
        l2: L2 penalty of the logistic fit (>= 0).
        fit_iterations: maximum Newton iterations (>= 1).
        sep: CSV separator (ENEM microdata: ``";"``).
        encoding: CSV encoding (ENEM microdata: ``"latin-1"``).

    Returns:
        The parameters; ``info`` holds the data and fit statistics.

    Raises:
        ValueError: (one line, naming the argument or column) on a missing file, an empty
            file, a missing column, a group column that is not binary, labels that are
            not 0/1 without a threshold, or no rows left.
    """
    import pandas as pd

    l2 = as_positive("l2", l2, allow_zero=True)
    fit_iterations = as_count("fit_iterations", fit_iterations)
    min_frequency = as_positive("min_frequency", min_frequency, allow_zero=True)
    if min_frequency >= 1.0:
        raise ValueError(f"min_frequency={_fmt(min_frequency)}: expected a number in [0, 1)")
    if positive_threshold is not None:
        positive_threshold = float(positive_threshold)
        if not math.isfinite(positive_threshold):
            raise ValueError(f"positive_threshold={positive_threshold!r}: expected a finite number")

    # ---- read only the needed columns
    if isinstance(source, pd.DataFrame):
        where = "the DataFrame"
        header = list(source.columns)
    else:
        path = Path(source)
        where = f"path={str(path)!r}"
        if not path.is_file():
            raise ValueError(f"{where}: no such file")
        try:
            header = list(pd.read_csv(path, sep=sep, encoding=encoding, nrows=0).columns)
        except pd.errors.EmptyDataError:
            raise ValueError(f"{where}: empty file, expected a CSV with a header row") from None
    for arg, col in (
        ("label_column", label_column),
        ("group_column", group_column),
        ("age_column", age_column),
    ):
        if col is not None and col not in header:
            raise ValueError(
                f"{arg}={col!r}: no such column in {where}; columns are {_columns_text(header)}"
            )
    if label_column == group_column or age_column in (label_column, group_column):
        raise ValueError(
            f"label_column={label_column!r}, group_column={group_column!r}, "
            f"age_column={age_column!r}: expected three different columns"
        )
    reserved = {label_column, group_column}
    if feature_columns is None:
        features = [c for c in header if c not in reserved]
    else:
        if isinstance(feature_columns, str):
            raise ValueError(
                f"feature_columns={feature_columns!r}: expected a list of column names"
            )
        features = list(feature_columns)
        for col in features:
            if col not in header:
                raise ValueError(
                    f"feature_columns: column {col!r} not in {where}; columns are "
                    f"{_columns_text(header)}"
                )
            if col in reserved:
                raise ValueError(
                    f"feature_columns: {col!r} is the label or group column; expected "
                    "feature columns only"
                )
    features = [c for c in dict.fromkeys(features) if c != age_column]
    if age_column is not None:
        features = [age_column, *features]
    if not features:
        raise ValueError(
            f"feature_columns={_fmt(feature_columns)}: expected at least one feature column"
        )
    needed = list(dict.fromkeys([label_column, group_column, *features]))
    if isinstance(source, pd.DataFrame):
        df = source[needed]
    else:
        df = pd.read_csv(path, sep=sep, encoding=encoding, usecols=needed, low_memory=False)
    if df.shape[0] == 0:
        raise ValueError(f"{where}: no data rows")

    # ---- group
    raw_group = df[group_column]
    if group_map is not None:
        mapping = dict(group_map)
        if not mapping or any(v not in (0, 1) or isinstance(v, bool) for v in mapping.values()):
            raise ValueError(
                f"group_map={_fmt(group_map)}: expected a non-empty dict of raw value -> 0 or 1"
            )
        groups = raw_group.map(lambda v: mapping.get(v, -1)).to_numpy(dtype=np.int64)
    else:
        values = _sorted_values(raw_group.dropna())
        if len(values) != 2:
            shown = ", ".join(repr(v) for v in values[:10]) + (", ..." if len(values) > 10 else "")
            raise ValueError(
                f"group_column={group_column!r}: expected exactly 2 distinct values (or a "
                f"group_map), got {len(values)}: [{shown}]"
            )
        codes = {values[0]: 0, values[1]: 1}
        groups = raw_group.map(lambda v: codes.get(v, -1)).to_numpy(dtype=np.int64)
    keep = groups >= 0

    # ---- label
    raw_label = df[label_column]
    if positive_threshold is not None:
        scores = pd.to_numeric(raw_label, errors="coerce").to_numpy(dtype=np.float64)
        has = np.isfinite(scores)
        if not has.any():
            raise ValueError(
                f"label_column={label_column!r}: no numeric scores to compare with "
                f"positive_threshold={positive_threshold!r}"
            )
        labels = np.where(has, scores > positive_threshold, False).astype(np.int64)
        keep &= has
    else:
        present = raw_label.dropna()
        values = _sorted_values(present)
        if not all(isinstance(v, (bool, np.bool_, int, float, np.number)) for v in values) or not (
            set(float(v) for v in values) <= {0.0, 1.0}
        ):
            shown = ", ".join(repr(v) for v in values[:10]) + (", ..." if len(values) > 10 else "")
            raise ValueError(
                f"label_column={label_column!r}: expected 0/1 labels (or a score column with "
                f"positive_threshold), got values [{shown}]"
            )
        has = raw_label.notna().to_numpy()
        labels = np.where(has, raw_label.fillna(0).to_numpy(dtype=np.float64), 0.0)
        labels = labels.astype(np.int64)
        keep &= has

    # ---- age
    if age_column is not None:
        keep &= df[age_column].notna().to_numpy()
    n_rows = int(keep.sum())
    if n_rows == 0:
        raise ValueError(
            f"{where}: no rows left after dropping rows without a group in "
            f"{{0, 1}}, a label or an age"
        )
    df = df.loc[keep]
    groups = groups[keep]
    labels = labels[keep]
    shares = np.bincount(groups, minlength=2) / n_rows
    for g in range(2):
        if shares[g] == 0.0:
            raise ValueError(
                f"group_column={group_column!r}: no rows of group {g} "
                f"({SchoolAdmissionEnv.GROUP_NAMES[g]}) left; expected both groups"
            )

    # ---- features: levels and codes
    levels: list[tuple[str, ...]] = []
    codes_cols: list[np.ndarray] = []
    for col in features:
        column = df[col]
        missing = column.isna().to_numpy()
        values = _sorted_values(column[~missing])
        labels_of = [str(v) for v in values]
        index = {v: k for k, v in enumerate(values)}
        codes = np.full(n_rows, len(values), dtype=np.int64)
        codes[~missing] = column[~missing].map(index).to_numpy(dtype=np.int64)
        if missing.any():
            labels_of.append("missing")
        if col != age_column and min_frequency > 0.0:
            counts = np.bincount(codes, minlength=len(labels_of)) / n_rows
            rare = counts < min_frequency
            if rare.any():
                kept = np.flatnonzero(~rare)
                remap = np.full(len(labels_of), len(kept), dtype=np.int64)
                remap[kept] = np.arange(len(kept))
                codes = remap[codes]
                labels_of = [labels_of[k] for k in kept] + ["infrequent"]
        levels.append(tuple(labels_of))
        codes_cols.append(codes)
    rows = np.stack(codes_cols, axis=1)
    cards = [len(lv) for lv in levels]
    offsets = np.concatenate([[0], np.cumsum(cards)[:-1]]).astype(np.int64)
    onehot = np.zeros((n_rows, int(sum(cards))))
    onehot[np.arange(n_rows)[:, None], rows + offsets[None, :]] = 1.0
    design = np.hstack([onehot, groups[:, None].astype(np.float64)])
    w, b, fit = fit_logistic(design, labels, l2=l2, iterations=fit_iterations)
    alpha = _sigmoid(design @ w + b)

    info = {
        "source": "data",
        "where": where,
        "label_column": label_column,
        "group_column": group_column,
        "age_column": age_column,
        "positive_threshold": positive_threshold,
        "min_frequency": min_frequency,
        "l2": l2,
        "n_rows": n_rows,
        "positive_rate": float(labels.mean()),
        "group_shares": shares.tolist(),
        "group_rates": [float(labels[groups == g].mean()) for g in range(2)],
        "model_group_rates": [float(alpha[groups == g].mean()) for g in range(2)],
        "train_accuracy": float(np.mean((alpha > 0.5) == (labels == 1))),
        "fit": fit,
    }
    return SchoolAdmissionParams(
        feature_names=tuple(str(c) for c in features),
        levels=tuple(levels),
        coefficients=w[:-1].copy(),
        intercept=b,
        group_coefficient=float(w[-1]),
        age_feature=0 if age_column is not None else None,
        group_probs=(float(shares[0]), float(shares[1])),
        rows=rows,
        row_groups=groups.astype(np.int64),
        info=info,
    )
