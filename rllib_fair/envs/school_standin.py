"""The synthetic ENEM stand-in of the school admission environment.

SELLF (Valdrighi et al., App. D) builds its pool and pass-probability model from the ENEM
2020 microdata, which are not available offline. :func:`make_standin_params` generates a
documented synthetic population calibrated to the published statistics; the calibrated
numbers are committed as ``rllib_fair/envs/data/school_admission_standin.json``
(:func:`standin_params` reads it, :func:`write_standin_json` regenerates it).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rllib_fair.envs.base import as_count, as_distributions
from rllib_fair.envs.school_fit import _sigmoid
from rllib_fair.envs.school_params import SCHOOL_GROUP_NAMES, SchoolAdmissionParams

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
        "group_names": list(SCHOOL_GROUP_NAMES),
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
