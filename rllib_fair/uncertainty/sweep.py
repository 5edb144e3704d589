"""The Table 2 sweep of Lee et al. 2026 fanned out over Ray tasks.

Grid: ``l_y, l_m_y`` in {0, 2, 4}; ``l_h_r, l_h_q`` in {0, 1, 4}; ``l_m`` in {0, 1, 2};
``l_y_b`` in {0, 2, 4}; ``proportion_certain`` in {0.6, 0.7, 0.8}; ``delta`` in
{0.02, 0.05, 0.1}; ``seed`` in {0, 20, 40, 60, 80}: 3^6 * 3 * 3 * 5 = 32,805 configurations
per exploration strategy. Naive and counterfactual ignore ``proportion_certain`` and
``delta`` (their decisions do not read them), so by default they run 3^6 * 5 = 3,645
configurations each (with the App. C values 0.7 / 0.05 recorded); ``dedupe=False`` runs
the full cross for them too.
Distinct total: 3 * 32,805 + 2 * 3,645 = 105,705 runs.

Output: one tidy CSV, one row per (configuration, quarter): the configuration's keys
(``config_id``, ``strategy``, the six knobs, ``proportion_certain``, ``delta``, ``seed``)
then :data:`METRIC_COLUMNS` from :meth:`rllib_fair.uncertainty.QuarterRecord.as_row`. Rows
of a configuration are written together after it finished, so resuming reads the
``config_id`` column and skips every configuration already present (a torn last line,
from a kill mid-write, is dropped and its configuration rerun).

The numpy core does the work (:func:`rllib_fair.uncertainty.run_quarters`); Ray only fans
out chunks of configurations as tasks (``ray.init(address=...)`` joins a cluster, so the
same command runs on a laptop or on many nodes). This module imports Ray lazily.
"""

from __future__ import annotations

import csv
import itertools
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rllib_fair.uncertainty.loop import QuarterlyConfig, run_quarters
from rllib_fair.uncertainty.strategies import STRATEGIES

#: Swept bias knobs and their Table 2 levels.
BIAS_GRID: dict[str, tuple[float, ...]] = {
    "l_y": (0.0, 2.0, 4.0),
    "l_m_y": (0.0, 2.0, 4.0),
    "l_h_r": (0.0, 1.0, 4.0),
    "l_h_q": (0.0, 1.0, 4.0),
    "l_m": (0.0, 1.0, 2.0),
    "l_y_b": (0.0, 2.0, 4.0),
}
PROPORTION_CERTAIN: tuple[float, ...] = (0.6, 0.7, 0.8)
DELTAS: tuple[float, ...] = (0.02, 0.05, 0.1)
SEEDS: tuple[int, ...] = (0, 20, 40, 60, 80)
#: Strategies that ignore ``proportion_certain`` and ``delta`` (their decisions do not read them).
NO_EXPLORATION: tuple[str, ...] = ("naive", "counterfactual")
#: Values recorded for them (App. C's fixed values).
FIXED_PC, FIXED_DELTA = 0.7, 0.05

KEY_COLUMNS: tuple[str, ...] = (
    "config_id",
    "strategy",
    *BIAS_GRID,
    "proportion_certain",
    "delta",
    "seed",
)
METRIC_COLUMNS: tuple[str, ...] = (
    "quarter",
    "budget",
    "n_applicants",
    "n_granted",
    "n_granted_0",
    "n_granted_1",
    "n_explored",
    "n_candidates",
    "sr_0",
    "sr_1",
    "delta_sr",
    "fpr_0",
    "fpr_1",
    "delta_fpr",
    "fnr_0",
    "fnr_1",
    "delta_fnr",
    "acc_0",
    "acc_1",
    "delta_acc",
    "profit",
    "utility_q",
    "cumulative_profit",
    "cumulative_utility",
    "auc",
    "tau",
)
COLUMNS: tuple[str, ...] = KEY_COLUMNS + METRIC_COLUMNS


@dataclass(frozen=True)
class SweepConfig:
    """One configuration of the sweep (a strategy, six knobs, pc, delta, seed)."""

    strategy: str
    l_y: float
    l_m_y: float
    l_h_r: float
    l_h_q: float
    l_m: float
    l_y_b: float
    proportion_certain: float
    delta: float
    seed: int

    @property
    def config_id(self) -> str:
        """A stable, readable id (the resume key)."""
        knobs = "-".join(f"{k}{getattr(self, k):g}" for k in BIAS_GRID)
        return f"{self.strategy}/{knobs}/pc{self.proportion_certain:g}/d{self.delta:g}/s{self.seed}"

    def keys(self) -> dict[str, object]:
        """The key columns of this configuration's rows."""
        out: dict[str, object] = {"config_id": self.config_id, "strategy": self.strategy}
        for k in (*BIAS_GRID, "proportion_certain", "delta", "seed"):
            out[k] = getattr(self, k)
        return out


def grid(
    strategies: Iterable[str] = STRATEGIES,
    *,
    seeds: Iterable[int] = SEEDS,
    dedupe: bool = True,
    bias_grid: dict[str, tuple[float, ...]] | None = None,
    proportion_certain: Iterable[float] = PROPORTION_CERTAIN,
    deltas: Iterable[float] = DELTAS,
) -> list[SweepConfig]:
    """The Table 2 grid for ``strategies``, in a fixed order.

    Args:
        strategies: strategies to include.
        seeds: Table 2's random seeds.
        dedupe: run naive and counterfactual once per (knobs, seed): the two knobs do not
            change them.
        bias_grid: levels per knob (default :data:`BIAS_GRID`).
        proportion_certain: levels of ``proportion_certain``.
        deltas: levels of ``delta``.

    Raises:
        ValueError: for an unknown strategy.
    """
    bias_grid = dict(BIAS_GRID if bias_grid is None else bias_grid)
    if set(bias_grid) != set(BIAS_GRID):
        raise ValueError(f"bias_grid: keys must be {', '.join(BIAS_GRID)}")
    seeds, pcs, deltas = list(seeds), list(proportion_certain), list(deltas)
    out: list[SweepConfig] = []
    for strategy in strategies:
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy: {strategy!r} is invalid; valid: {', '.join(STRATEGIES)}")
        fixed = dedupe and strategy in NO_EXPLORATION
        methods = [(FIXED_PC, FIXED_DELTA)] if fixed else list(itertools.product(pcs, deltas))
        for levels in itertools.product(*(bias_grid[k] for k in BIAS_GRID)):
            for pc, delta in methods:
                for seed in seeds:
                    out.append(SweepConfig(strategy, *levels, pc, delta, int(seed)))
    return out


def single_bias_grid(
    strategies: Iterable[str] = STRATEGIES,
    *,
    seeds: Iterable[int] = SEEDS,
    proportion_certain: float = FIXED_PC,
    delta: float = FIXED_DELTA,
) -> list[SweepConfig]:
    """The rows of the paper's Fig. 4/5 heatmaps at one ``proportion_certain`` and ``delta``.

    No bias, then each knob alone at each non-zero Table 2 level: 13 settings.
    """
    settings = [dict.fromkeys(BIAS_GRID, 0.0)]
    for knob, levels in BIAS_GRID.items():
        for level in levels:
            if level != 0.0:
                settings.append({**dict.fromkeys(BIAS_GRID, 0.0), knob: level})
    out = []
    for strategy in strategies:
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy: {strategy!r} is invalid; valid: {', '.join(STRATEGIES)}")
        for knobs in settings:
            for seed in seeds:
                levels = [knobs[k] for k in BIAS_GRID]
                out.append(SweepConfig(strategy, *levels, proportion_certain, delta, int(seed)))
    return out


def run_config(cfg: SweepConfig, base: QuarterlyConfig | None = None) -> list[dict[str, object]]:
    """Runs one configuration with the numpy core; returns its tidy rows (one per quarter)."""
    base = QuarterlyConfig() if base is None else base
    qcfg = base.replace(
        strategy=cfg.strategy,
        proportion_certain=cfg.proportion_certain,
        delta=cfg.delta,
        **{k: getattr(cfg, k) for k in BIAS_GRID},
    )
    keys = cfg.keys()
    rows = []
    for rec in run_quarters(qcfg, seed=cfg.seed):
        row = rec.as_row()
        rows.append({**keys, **{c: row.get(c, math.nan) for c in METRIC_COLUMNS}})
    return rows


def run_chunk(configs: list[SweepConfig], base: QuarterlyConfig | None = None) -> list[dict]:
    """Runs a chunk of configurations (one Ray task's work)."""
    return [row for cfg in configs for row in run_config(cfg, base)]


def finished_ids(path: str | os.PathLike) -> set[str]:
    """``config_id`` of every configuration complete in ``path`` (empty if absent).

    A kill mid-write can only damage the end of the file: a torn last line (no trailing
    newline) is cut off, and then the rows of any configuration with fewer rows than the
    others (its quarters were cut) are removed, so that configuration is rerun and the CSV
    stays tidy (exactly one row per configuration and quarter).
    """
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return set()
    data = path.read_bytes()
    torn = not data.endswith(b"\n")
    if torn:
        data = data[: data.rfind(b"\n") + 1]
    lines = data.decode().splitlines()
    if not lines:
        path.write_bytes(b"")
        return set()
    reader = csv.DictReader(lines)
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise ValueError(f"{path}: not a sweep CSV of this version (columns differ)")
    rows = list(reader)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["config_id"]] = counts.get(row["config_id"], 0) + 1
    full = max(counts.values(), default=0)
    partial = {cid for cid, n in counts.items() if n < full}
    if torn or partial:
        keep = [lines[0]] + [
            line for line, row in zip(lines[1:], rows) if row["config_id"] not in partial
        ]
        path.write_text("\n".join(keep) + "\n")
    return {cid for cid in counts if cid not in partial}


def _chunks(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def run_sweep(
    configs: list[SweepConfig],
    out: str | os.PathLike,
    *,
    chunk_size: int = 8,
    max_in_flight: int | None = None,
    base: QuarterlyConfig | None = None,
    progress: Callable[[str], None] | None = None,
    progress_every_s: float = 10.0,
) -> dict[str, float]:
    """Runs every configuration not yet in ``out`` as Ray tasks and appends their rows.

    Ray must be initialised by the caller (``ray.init()`` locally or on a cluster).

    Args:
        configs: configurations (e.g. :func:`grid`).
        out: the CSV file (created with a header; appended to when resuming).
        chunk_size: configurations per task (amortises the task overhead).
        max_in_flight: tasks submitted at once (default: 2 x cluster CPUs).
        base: the constants (default: Table 2's :class:`QuarterlyConfig`).
        progress: a sink for one-line progress messages (default: stderr).
        progress_every_s: seconds between progress lines.

    Returns:
        ``{"total", "skipped", "ran", "seconds", "configs_per_s"}``.
    """
    import ray

    say = progress or (lambda msg: print(msg, file=sys.stderr, flush=True))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = finished_ids(out)
    todo = [c for c in configs if c.config_id not in done]
    skipped = len(configs) - len(todo)
    say(f"sweep: {len(configs)} configurations, {skipped} already in {out}, {len(todo)} to run")
    remote = ray.remote(num_cpus=1)(run_chunk)
    base_ref = ray.put(base)
    if max_in_flight is None:
        max_in_flight = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
    pending = list(_chunks(todo, max(1, chunk_size)))
    pending.reverse()
    in_flight: dict = {}
    new_file = not out.exists() or out.stat().st_size == 0
    t0 = last = time.monotonic()
    ran = 0
    with out.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        if new_file:
            writer.writeheader()
            fh.flush()
        while pending or in_flight:
            while pending and len(in_flight) < max_in_flight:
                chunk = pending.pop()
                in_flight[remote.remote(chunk, base_ref)] = len(chunk)
            ready, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in ready:
                rows = ray.get(ref)
                writer.writerows(rows)
                fh.flush()
                ran += in_flight.pop(ref)
            now = time.monotonic()
            if now - last >= progress_every_s or not (pending or in_flight):
                rate = ran / max(now - t0, 1e-9)
                eta = (len(todo) - ran) / rate if rate > 0 else math.inf
                say(
                    f"sweep: {skipped + ran}/{len(configs)} done ({ran} this run), "
                    f"{rate:.2f} configs/s, ETA {eta / 60:.1f} min"
                )
                last = now
    seconds = time.monotonic() - t0
    return {
        "total": float(len(configs)),
        "skipped": float(skipped),
        "ran": float(ran),
        "seconds": seconds,
        "configs_per_s": ran / seconds if seconds > 0 else math.nan,
    }
