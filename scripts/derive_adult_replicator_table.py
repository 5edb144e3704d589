"""Derive the 32-bin Adult score table of ``fair/ReplicatorAdult-v0``.

Reads the cleaned UCI Adult CSV (not shipped with the package) and writes the small derived
table ``rllib_fair/envs/data/adult_replicator.json`` that the environment loads.

Usage::

    python scripts/derive_adult_replicator_table.py [CSV] [--group sex|race] [--out PATH]

``CSV`` (default: ``DEFAULT_CSV``, a data folder beside the repository) is the cleaned UCI
Adult table (30,162 rows).

Method (the paper's Appendix A.2, which describes its fit, is not available, so every step
below is a documented choice; docs/methods/yin2023.md):

* Label ``Y = 1`` iff ``income == ">50K"``. Group: ``sex`` (group 0 ``Male``, group 1
  ``Female``; default) or ``race`` (group 0 ``White``, group 1 every other value).
* Score ``X = P(Y = 1 | features)`` of one logistic regression fitted on all rows by IRLS
  (Newton's method, 30 iterations, ridge 1e-6 on every coefficient): standardised ``age``,
  ``education_num``, ``hr_per_week``, ``log1p(capital_gain)``, ``log1p(capital_loss)`` plus
  one-hot (drop-first, categories sorted) ``type_employer``, ``marital``, ``occupation``,
  ``relationship``, ``race`` and an intercept (40 coefficients). Not used: the group
  attribute ``sex``, ``fnlwgt``, ``education`` (duplicates ``education_num``), ``country``.
  With ``--group race`` the ``race`` columns are dropped from the features instead and
  ``sex`` is used.
* Bins: 32 equal-width bins of the score on [0, 1] (bin ``j = [j/32, (j+1)/32)``, a score of
  exactly 1 in bin 31). Per (group, label) the histogram with add-1/2 (Jeffreys) smoothing:
  ``f[k][y][j] = (n_kyj + 1/2) / (n_ky + 32/2)``.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import hashlib
import json
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CSV = REPO_ROOT.parent / "shared" / "data" / "adult" / "adult_clean.csv"
DEFAULT_OUT = REPO_ROOT / "rllib_fair" / "envs" / "data" / "adult_replicator.json"

N_BINS = 32
IRLS_ITERATIONS = 30
RIDGE = 1e-6
NUMERIC = ("age", "education_num", "hr_per_week")
LOG_NUMERIC = ("capital_gain", "capital_loss")
CATEGORICAL = ("type_employer", "marital", "occupation", "relationship", "race")
#: group attribute -> (group names, function of the attribute value giving the group index)
GROUPINGS = {
    "sex": (("Male", "Female"), lambda v: 0 if v == "Male" else 1),
    "race": (("White", "non-White"), lambda v: 0 if v == "White" else 1),
}

ORIGIN = (
    "UCI Adult (census income, Kohavi 1996), cleaned: 30,162 rows without missing values; "
    "columns age, type_employer, fnlwgt, education, education_num, marital, occupation, "
    "relationship, race, sex, capital_gain, capital_loss, hr_per_week, country, income"
)


def _read(path: Path) -> list[dict[str, str]]:
    with Path(path).open(newline="") as fh:
        return [row for row in csv.DictReader(fh) if row]


def design_matrix(rows: list[dict[str, str]], group: str) -> tuple[np.ndarray, list[str]]:
    """The standardised numeric columns, drop-first one-hots and an intercept column."""
    names: list[str] = []
    cols: list[np.ndarray] = []
    for name in NUMERIC + LOG_NUMERIC:
        x = np.array([float(r[name]) for r in rows])
        if name in LOG_NUMERIC:
            x = np.log1p(x)
        cols.append((x - x.mean()) / x.std())
        names.append(f"log1p({name})" if name in LOG_NUMERIC else name)
    categorical = tuple(c for c in CATEGORICAL if c != group)
    for name in categorical:
        values = [r[name] for r in rows]
        for level in sorted(set(values))[1:]:
            cols.append(np.array([1.0 if v == level else 0.0 for v in values]))
            names.append(f"{name}={level}")
    if group != "sex":
        # The group attribute is never a feature; with race as the group, sex is one.
        cols.append(np.array([1.0 if r["sex"] == "Male" else 0.0 for r in rows]))
        names.append("sex=Male")
    cols.append(np.ones(len(rows)))
    names.append("intercept")
    return np.stack(cols, axis=1), names


def fit_logistic(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Logistic regression by IRLS (Newton), ``IRLS_ITERATIONS`` steps, ridge ``RIDGE``."""
    w = np.zeros(x.shape[1])
    ridge = RIDGE * np.eye(x.shape[1])
    for _ in range(IRLS_ITERATIONS):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (y - p) - RIDGE * w
        hess = (x * (p * (1.0 - p))[:, None]).T @ x + ridge
        w = w + np.linalg.solve(hess, grad)
    return w


def derive(csv_path: Path, group: str = "sex") -> dict:
    """Derives the table (without provenance) from the cleaned Adult CSV."""
    if group not in GROUPINGS:
        raise ValueError(f"group={group!r}: expected one of {list(GROUPINGS)}")
    rows = _read(csv_path)
    group_names, group_of = GROUPINGS[group]
    y = np.array([1.0 if r["income"].strip() == ">50K" else 0.0 for r in rows])
    g = np.array([group_of(r[group]) for r in rows])
    x, names = design_matrix(rows, group)
    w = fit_logistic(x, y)
    score = 1.0 / (1.0 + np.exp(-(x @ w)))
    accuracy = float(np.mean((score >= 0.5) == (y == 1.0)))
    bins = np.minimum((score * N_BINS).astype(np.int64), N_BINS - 1)
    counts = np.zeros((2, 2, N_BINS), dtype=np.int64)
    np.add.at(counts, (g, y.astype(np.int64), bins), 1)
    smoothed = (counts + 0.5) / (counts.sum(axis=2, keepdims=True) + N_BINS / 2)
    q_emp = [float(y[g == k].mean()) for k in range(2)]
    return {
        "group_attribute": group,
        "group_names": list(group_names),
        "label": "income == '>50K'",
        "n_bins": N_BINS,
        "bin_edges": [j / N_BINS for j in range(N_BINS + 1)],
        "class_conditionals": smoothed.tolist(),
        "bin_counts": counts.tolist(),
        "q_emp": q_emp,
        "group_sizes": [int(np.sum(g == k)) for k in range(2)],
        "n_rows": len(rows),
        "features": names,
        "coefficients": w.tolist(),
        "accuracy": accuracy,
    }


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def build_table(csv_path: Path, group: str = "sex") -> dict:
    """Derives the table and adds its provenance record."""
    table = derive(csv_path, group)
    table["provenance"] = {
        "source_files": {Path(csv_path).name: {"sha256": _sha256(csv_path)}},
        "origin": ORIGIN,
        "derivation": (__doc__ or "").split("Method")[1].strip(),
        "layout": (
            "class_conditionals[k][y][j] = P(X in bin j | Y = y, G = k) (k = group, y = label), "
            "bin_counts[k][y][j] the raw counts, q_emp[k] = P(Y = 1 | G = k)"
        ),
        "note": (
            "the environment mixes the fixed class-conditionals by the current qualification "
            "rates (re-weighting, not re-fitting); group shares default to (0.5, 0.5) as in "
            "the reference code, not the data's ratio"
        ),
        "script": "scripts/derive_adult_replicator_table.py",
        "date": datetime.date.today().isoformat(),
    }
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("csv", nargs="?", type=Path, default=DEFAULT_CSV, help="adult_clean.csv")
    parser.add_argument("--group", choices=sorted(GROUPINGS), default="sex")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output json path")
    args = parser.parse_args(argv)
    table = build_table(args.csv, args.group)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {args.out} (accuracy {table['accuracy']:.4f}, q_emp {table['q_emp']})")


if __name__ == "__main__":
    main()
