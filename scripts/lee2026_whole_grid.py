"""Lee et al. 2026, Figs. 11-15 over the whole knob grid: quantiles and one verdict per claim.

Reads a whole-grid sweep of all five strategies at one (proportion_certain, delta), either
the sweep's own CSV or the tracked extract it writes, and writes into ``--out``:

* ``lee2026_fullgrid_final.csv.gz``: the final quarter of every configuration, the columns
  the analysis reads (only when ``--csv`` is a sweep CSV, not the extract itself);
* ``lee2026_fullgrid.csv``: each strategy's q25, median and q75 per metric;
* ``lee2026_fullgrid.md``: the table and the claims with their bootstrap intervals
  (:mod:`rllib_fair.reproduce.lee_whole_grid`).

    # the sweep (18,225 runs, 57 min on one core beside two other jobs), then the analysis
    python scripts/uncertainty_sweep.py --levels proportion_certain=0.7 \\
        --levels delta=0.05 --out results/lee2026_appc.csv --num-cpus 1
    python scripts/lee2026_whole_grid.py --csv results/lee2026_appc.csv --out docs/results
    # again from the tracked extract alone
    python scripts/lee2026_whole_grid.py --csv docs/results/lee2026_fullgrid_final.csv.gz \\
        --out docs/results
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXTRACT = "lee2026_fullgrid_final.csv.gz"
QUANTILES = "lee2026_fullgrid.csv"
REPORT = "lee2026_fullgrid.md"


def main(argv: list[str] | None = None) -> int:
    """Writes the extract, the quantiles and the report; 2 on bad input."""
    from rllib_fair.uncertainty.logistic import GROUP_ENCODINGS
    from rllib_fair.uncertainty.sweep import BIAS_GRID

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--csv", required=True, help="a whole-grid sweep CSV or the tracked extract")
    p.add_argument("--out", required=True, help="folder for the three files")
    p.add_argument("--proportion-certain", type=float, default=0.7)
    p.add_argument("--delta", type=float, default=0.05)
    p.add_argument("--reps", type=int, default=2000, help="bootstrap replicates")
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's generator seed")
    p.add_argument(
        "--group-encoding",
        choices=GROUP_ENCODINGS,
        default="centered",
        help="the sweep's --group-encoding (its CSV does not record it)",
    )
    args = p.parse_args(argv)

    import pandas as pd

    from rllib_fair.reproduce.lee_whole_grid import (
        COLUMNS,
        GridError,
        decide,
        final_quarter,
        load,
        quantiles,
        report,
    )

    src = Path(args.csv)
    if not src.is_file():
        print(f"error: --csv: {str(src)!r} is not a file; valid: a sweep CSV", file=sys.stderr)
        return 2
    out = Path(args.out)
    extract = out / EXTRACT
    try:
        frame = pd.read_csv(src)
        if src.resolve() != extract.resolve():
            # the analysis always reads the extract, so rerunning it from the tracked file
            # alone gives the same report to the digit
            load(frame, args.proportion_certain, args.delta)
            last = final_quarter(frame, args.proportion_certain, args.delta)
            out.mkdir(parents=True, exist_ok=True)
            tmp = extract.with_name(extract.name + ".tmp")
            last[list(COLUMNS)].sort_values(["strategy", *BIAS_GRID, "seed"]).to_csv(
                tmp, index=False, float_format="%.6g", compression={"method": "gzip", "mtime": 0}
            )
            tmp.replace(extract)
            frame = pd.read_csv(extract)
        grid = load(frame, args.proportion_certain, args.delta)
        decided = decide(grid, args.reps, args.seed)
    except GridError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rows = pd.DataFrame(quantiles(grid))
    rows.insert(2, "group_encoding", args.group_encoding)
    rows.to_csv(out / QUANTILES, index=False, float_format="%.6g")
    header = (
        f"Written by `scripts/lee2026_whole_grid.py` from `{EXTRACT}`, the final quarter of "
        f"the sweep `scripts/uncertainty_sweep.py --levels "
        f"proportion_certain={args.proportion_certain:g} --levels delta={args.delta:g}` "
        f"(group column: {args.group_encoding}); the quantiles are `{QUANTILES}`. "
        f"Regenerate: `python scripts/lee2026_whole_grid.py --csv <this folder>/{EXTRACT} "
        f"--out <this folder>`."
    )
    (out / REPORT).write_text(report(grid, decided, args.reps, args.seed, header))
    verdicts = [d["verdict"] for d in decided.values()]
    print(
        f"{grid.configs} configurations per strategy; claims: "
        + ", ".join(f"{v} {verdicts.count(v)}" for v in sorted(set(verdicts)))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
