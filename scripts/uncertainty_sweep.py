"""Lee et al. (FAccT 2026) Table 2 sweep on Ray: one tidy CSV, resumable, with progress.

Every configuration runs :func:`rllib_fair.uncertainty.run_quarters` (numpy) inside a
one-CPU Ray task; see :mod:`rllib_fair.uncertainty.sweep` for the grid and the CSV.

    # the whole sweep (105,705 distinct runs) on this machine, 2 CPUs
    python scripts/uncertainty_sweep.py --out results/lee2026_sweep.csv --num-cpus 2
    # on a running Ray cluster (same command, rerun it to resume after an interruption)
    python scripts/uncertainty_sweep.py --out results/lee2026_sweep.csv --address auto
    # a slice: one strategy, two seeds
    python scripts/uncertainty_sweep.py --strategies naive --seeds 0,20 --out s.csv
    # a tiny grid (tests): one level per knob, small data
    python scripts/uncertainty_sweep.py --levels l_y=0,4 --levels l_m_y=0 ... --dim 400
    # the same runs with the raw 0/1 group column and the generator's own group labels
    python scripts/uncertainty_sweep.py ... --group-encoding indicator --disadvantaged-group 1

``--group-encoding`` and ``--disadvantaged-group`` are not written to the CSV: keep runs
with different values in different files.
"""

from __future__ import annotations

import argparse
import json
import sys

from rllib_fair.uncertainty.logistic import GROUP_ENCODINGS
from rllib_fair.uncertainty.loop import QuarterlyConfig
from rllib_fair.uncertainty.strategies import STRATEGIES
from rllib_fair.uncertainty.sweep import (
    BIAS_GRID,
    DELTAS,
    PROPORTION_CERTAIN,
    SEEDS,
    grid,
    run_sweep,
    single_bias_grid,
)


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(v) for v in text.split(",") if v != "")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line arguments (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the CSV (appended to when resuming)")
    p.add_argument("--strategies", default=",".join(STRATEGIES), help="comma-separated")
    p.add_argument("--seeds", default=",".join(map(str, SEEDS)), help="comma-separated")
    p.add_argument(
        "--levels",
        action="append",
        default=[],
        metavar="KEY=V1,V2",
        help="override the levels of a knob, proportion_certain or delta",
    )
    p.add_argument(
        "--single-bias",
        action="store_true",
        help="only no-bias and each knob alone (Fig. 4/5 rows) at pc 0.7, delta 0.05",
    )
    p.add_argument("--no-dedupe", action="store_true", help="full pc x delta cross for all")
    p.add_argument("--limit", type=int, default=None, help="first N configurations only")
    p.add_argument("--dim", type=int, default=None, help="applicants per run (Table 2: 20000)")
    p.add_argument(
        "--group-encoding",
        choices=GROUP_ENCODINGS,
        default="centered",
        help="group column of the model: A - 1/2 (default) or the raw 0/1 indicator",
    )
    p.add_argument(
        "--disadvantaged-group",
        type=int,
        choices=(0, 1),
        default=0,
        help="0: relabel so the biased group is group 0 (default); 1: the generator's labels",
    )
    p.add_argument("--address", default=None, help="Ray cluster address (default: local)")
    p.add_argument("--num-cpus", type=int, default=None, help="local Ray CPUs")
    p.add_argument("--chunk-size", type=int, default=8, help="configurations per task")
    p.add_argument("--progress-every", type=float, default=10.0, help="seconds")
    return p.parse_args(argv)


def base_config(args: argparse.Namespace) -> QuarterlyConfig:
    """The constants every run of the sweep shares (Table 2's, plus the flags)."""
    base = QuarterlyConfig(
        group_encoding=args.group_encoding, disadvantaged_group=args.disadvantaged_group
    )
    return base if args.dim is None else base.replace(dim=args.dim)


def main(argv: list[str] | None = None) -> int:
    """Runs the (remaining part of the) sweep; prints a JSON summary on stdout."""
    args = parse_args(argv)
    bias_grid = dict(BIAS_GRID)
    pcs, deltas = PROPORTION_CERTAIN, DELTAS
    for item in args.levels:
        key, _, values = item.partition("=")
        if key in bias_grid:
            bias_grid[key] = _floats(values)
        elif key == "proportion_certain":
            pcs = _floats(values)
        elif key == "delta":
            deltas = _floats(values)
        else:
            print(f"--levels: unknown key {key!r}", file=sys.stderr)
            return 2
    configs = grid(
        [s for s in args.strategies.split(",") if s],
        seeds=[int(s) for s in args.seeds.split(",") if s],
        dedupe=not args.no_dedupe,
        bias_grid=bias_grid,
        proportion_certain=pcs,
        deltas=deltas,
    )
    if args.single_bias:
        configs = single_bias_grid(
            [s for s in args.strategies.split(",") if s],
            seeds=[int(s) for s in args.seeds.split(",") if s],
        )
    if args.limit is not None:
        configs = configs[: args.limit]
    base = base_config(args)

    import ray

    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        ray.init(
            address="local",
            num_cpus=args.num_cpus,
            include_dashboard=False,
            log_to_driver=False,
        )
    try:
        summary = run_sweep(
            configs,
            args.out,
            chunk_size=args.chunk_size,
            base=base,
            progress_every_s=args.progress_every,
        )
    finally:
        ray.shutdown()
    summary["cpus"] = args.num_cpus
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
