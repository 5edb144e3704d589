"""Building the school admission environment from ENEM microdata (or any categorical CSV).

:func:`load_enem` reads the data, encodes the categorical features and fits the logistic
pass-probability model (:func:`rllib_fair.envs.school_fit.fit_logistic`), returning
:class:`rllib_fair.envs.school_params.SchoolAdmissionParams` for
``SchoolAdmissionEnv(params=...)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rllib_fair.envs.base import _fmt, as_count, as_positive
from rllib_fair.envs.school_fit import _sigmoid, fit_logistic
from rllib_fair.envs.school_params import SCHOOL_GROUP_NAMES, SchoolAdmissionParams

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
                f"({SCHOOL_GROUP_NAMES[g]}) left; expected both groups"
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
