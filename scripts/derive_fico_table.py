"""Derive the 10-bin FICO (TransRisk) table of ``fair/LendingFICO-v0``.

Reads the raw TransRisk CSVs (not shipped with the package) and writes the small
derived table ``rllib_fair/envs/data/fico_bins.json`` that the environment loads.

Usage::

    python scripts/derive_fico_table.py [DATA_DIR] [--out PATH]

``DATA_DIR`` (default: ``DEFAULT_DATA_DIR``, a data folder beside the repository) must
hold ``transrisk_cdf_by_race_ssa.csv`` and ``transrisk_performance_by_race_ssa.csv``
(published with Hardt et al. 2016; e.g. ``code/creditscore/data/`` of
github.com/fairmlbook/fairmlbook.github.io).

Method (SELLF, Valdrighi et al., App. D; their ``notebooks/fico.ipynb``):

* Groups: ``Black`` (column ``"Black"``) and ``white`` (column ``"Non- Hispanic white"``);
  group 0 is Black.
* The 198 score rows (scores 0 .. 100 in steps of 0.5; the files have no rows for 72.5,
  77.5 and 92.5) are cut into 10 consecutive bins by row index: ``bin = row // 20``, so
  bins 0-8 hold 20 rows each and bin 9 holds the last 18 rows (SELLF slices
  ``[i * 20:(i + 1) * 20]`` the same way).
* ``cluster_probs[g][bin]``: per-row probability mass = increments of ``CDF / 100``
  with the first increment equal to the first CDF value (mass at or below the lowest
  score), summed over the bin's rows and normalised to sum to 1. (SELLF's notebook drops
  the first CDF value, i.e. uses ``np.diff`` without it, which shifts its increments by
  one row; we keep every row's mass in its own bin.)
* ``success_probs[g][bin]``: mean over the bin's rows of ``(100 - performance) / 100``,
  where performance is the percentage of the score's population that defaulted.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import hashlib
import json
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data" / "fico"
DEFAULT_OUT = REPO_ROOT / "rllib_fair" / "envs" / "data" / "fico_bins.json"

CDF_FILE = "transrisk_cdf_by_race_ssa.csv"
PERF_FILE = "transrisk_performance_by_race_ssa.csv"
TOTALS_FILE = "totals.csv"

#: (group name in the table, column in the CSVs); group 0 first.
GROUPS: tuple[tuple[str, str], ...] = (("Black", "Black"), ("white", "Non- Hispanic white"))
N_BINS = 10
ROWS_PER_BIN = 20
EXPECTED_ROWS = 198

ORIGIN = (
    "TransRisk credit-score CDF and percent defaulting per score by race, from the "
    "Federal Reserve's 2007 report on credit scoring (as used by Hardt et al. 2016, "
    "Liu et al. 2018, fairmlbook code/creditscore/data/)"
)
METHOD = (
    "Groups Black (column 'Black') and white (column 'Non- Hispanic white'). The 198 score "
    "rows (0..100 step 0.5; no rows for 72.5, 77.5, 92.5) are cut into 10 consecutive bins "
    "by row index, bin = row // 20: bins 0-8 hold 20 rows, bin 9 the last 18 rows (as SELLF's "
    "slices [i*20:(i+1)*20]); because of the 3 missing scores, bins 7-9 cover 70-80.5, "
    "81-90.5 and 91-100 (see bin_score_ranges). cluster_probs[g][bin] = sum over the "
    "bin's rows of the increments of CDF/100 (first increment = first CDF value), "
    "normalised to sum to 1. "
    "success_probs[g][bin] = mean over the bin's rows of (100 - performance)/100 "
    "(performance = percent defaulting)."
)


def _read_columns(path: Path) -> tuple[list[float], dict[str, list[float]]]:
    """Returns the score column and every other column of a TransRisk CSV as floats."""
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], [r for r in rows[1:] if r]
    if header[0] != "Score":
        raise ValueError(f"{path}: expected first column 'Score', got {header[0]!r}")
    scores = [float(r[0]) for r in body]
    columns = {name: [float(r[k]) for r in body] for k, name in enumerate(header) if k > 0}
    return scores, columns


def bin_of_row(row: int) -> int:
    """Bin index of score row ``row`` (``row // 20``)."""
    return row // ROWS_PER_BIN


def derive(data_dir: Path) -> dict:
    """Derives the table (without provenance) from the CSVs in ``data_dir``."""
    data_dir = Path(data_dir)
    scores, cdf = _read_columns(data_dir / CDF_FILE)
    perf_scores, perf = _read_columns(data_dir / PERF_FILE)
    if scores != perf_scores:
        raise ValueError(f"{data_dir}: score rows of {CDF_FILE} and {PERF_FILE} differ")
    if len(scores) != EXPECTED_ROWS:
        raise ValueError(f"{data_dir / CDF_FILE}: expected {EXPECTED_ROWS} rows, got {len(scores)}")
    bins = [bin_of_row(r) for r in range(len(scores))]
    if max(bins) != N_BINS - 1:
        raise ValueError(f"binning gives {max(bins) + 1} bins, expected {N_BINS}")

    cluster_probs, success_probs = [], []
    for _, column in GROUPS:
        values = [v / 100.0 for v in cdf[column]]
        increments = [values[0]] + [b - a for a, b in zip(values[:-1], values[1:])]
        mass = [0.0] * N_BINS
        for row, inc in enumerate(increments):
            mass[bins[row]] += inc
        total = sum(mass)
        cluster_probs.append([m / total for m in mass])

        repay = [(100.0 - v) / 100.0 for v in perf[column]]
        sums, counts = [0.0] * N_BINS, [0] * N_BINS
        for row, p in enumerate(repay):
            sums[bins[row]] += p
            counts[bins[row]] += 1
        success_probs.append([s / c for s, c in zip(sums, counts)])

    score_ranges = []
    for k in range(N_BINS):
        rows = [r for r in range(len(scores)) if bins[r] == k]
        score_ranges.append([scores[rows[0]], scores[rows[-1]]])
    return {
        "group_names": [name for name, _ in GROUPS],
        "n_bins": N_BINS,
        "cluster_probs": cluster_probs,
        "success_probs": success_probs,
        "bin_score_ranges": score_ranges,
        "bin_row_counts": [bins.count(k) for k in range(N_BINS)],
    }


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_table(data_dir: Path) -> dict:
    """Derives the table and adds its provenance record."""
    data_dir = Path(data_dir)
    table = derive(data_dir)
    sources = {}
    for name in (CDF_FILE, PERF_FILE, TOTALS_FILE):
        path = data_dir / name
        if path.exists():
            sources[name] = {"sha256": _sha256(path)}
    ssa_totals = None
    if (data_dir / TOTALS_FILE).exists():
        with (data_dir / TOTALS_FILE).open(newline="") as fh:
            header, values = list(csv.reader(fh))[:2]
        totals = dict(zip(header[1:], (int(v) for v in values[1:])))
        ssa_totals = {name: totals.get(column) for name, column in GROUPS}
    table["provenance"] = {
        "source_files": sources,
        "origin": ORIGIN,
        "columns": {name: column for name, column in GROUPS},
        "derivation": METHOD,
        "binning": "bin = row // 20 over the 198 score rows (rows per bin: 20 x 9, 18)",
        "ssa_population_counts": ssa_totals,
        "note": (
            "group_probs of the environment default to (0.5, 0.5) as in SELLF App. D, not "
            "to the SSA population counts"
        ),
        "script": "scripts/derive_fico_table.py",
        "date": datetime.date.today().isoformat(),
    }
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "data_dir",
        nargs="?",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help=f"folder with the TransRisk CSVs (default: {DEFAULT_DATA_DIR})",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output json path")
    args = parser.parse_args(argv)
    table = build_table(args.data_dir)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(table, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
