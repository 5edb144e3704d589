"""Lee et al. 2026, App. C.3 (Figs. 11-15) over the whole Table 2 knob grid, with verdicts.

The paper's violins pool the final quarter of every bias configuration and seed of its
sweep ("no filtering by bias type") and read each strategy's distribution by its position
and spread. Here the distributions are those of the sweep of
:mod:`rllib_fair.uncertainty.sweep` at one pair of method parameters (``proportion_certain``,
``delta``; App. C's 0.7 and 0.05 by default) for all five strategies: 3^6 knob
combinations x the seeds, the same configurations for every strategy.

* Position is the **median** and spread the **interquartile range** (q75 - q25; the paper
  names no statistic for "narrow" or "wide", the IQR is the box inside a violin) of the
  final quarter's ``|Delta M|`` for the four disparities and of the cumulative profit
  (Fig. 15's "normalised" profit: the paper does not give the normalisation; a common
  positive scale changes no comparison below).
* A claim is a set of comparisons of such statistics (between strategies, or between
  metrics with each metric's statistic averaged over the five strategies). Each
  comparison's 95% interval comes from a **paired bootstrap over seeds, stratified by knob
  combination**: a replicate redraws, for every knob combination, its seeds with
  replacement, the same draw for every strategy and metric, and recomputes the statistics
  on the pooled values. The knob grid is the design and stays fixed; the seeds are the
  random part of each configuration. *holds* when the percentile interval lies on the
  claimed side of 0, *does not hold* when it lies strictly on the other side,
  *inconclusive* when it contains 0; a claim with several comparisons holds when all do
  and does not hold when any does not.

Resampling five seeds per stratum makes the intervals slightly too narrow (the bootstrap
variance of a mean of n values is (n - 1) / n of the usual estimate): a verdict whose
interval only just excludes 0 should be read with that in mind; the report prints every
interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rllib_fair.reproduce.stats import FAILS, HOLDS, INCONCLUSIVE, difference_verdict, overall
from rllib_fair.uncertainty.strategies import STRATEGIES
from rllib_fair.uncertainty.sweep import BIAS_GRID, FIXED_DELTA, FIXED_PC

#: The pooled metrics: the four final-quarter disparities (absolute) and the profit.
METRICS: tuple[str, ...] = ("delta_sr", "delta_fpr", "delta_fnr", "delta_acc", "cumulative_profit")
#: Metrics read in absolute value.
ABSOLUTE: tuple[str, ...] = ("delta_sr", "delta_fpr", "delta_fnr", "delta_acc")
#: The columns a whole-grid CSV needs (the sweep's own CSV has them, and more).
COLUMNS: tuple[str, ...] = (
    "strategy",
    *BIAS_GRID,
    "proportion_certain",
    "delta",
    "seed",
    "quarter",
    *METRICS,
)
STATISTICS: tuple[str, ...] = ("median", "iqr")
#: Every strategy's statistic averaged: ``Side("*", metric)``.
ALL = "*"
LABEL = {
    "naive": "naive",
    "naive_exploration": "naive expl.",
    "prob_weighted": "prob-weighted",
    "uncertainty_aware": "UA",
    "counterfactual": "counterfactual",
    ALL: "mean of the five",
    "delta_sr": "|dSR|",
    "delta_fpr": "|dFPR|",
    "delta_fnr": "|dFNR|",
    "delta_acc": "|dAcc|",
    "cumulative_profit": "cumulative profit",
}


class GridError(ValueError):
    """Data that cannot be pooled into the whole grid; the message is one line."""


@dataclass(frozen=True)
class WholeGrid:
    """Final-quarter values on a complete grid.

    ``values[metric]`` has the shape (strategies, knob combinations, seeds).
    """

    strategies: tuple[str, ...]
    combos: tuple[tuple[float, ...], ...]
    seeds: tuple[int, ...]
    values: dict[str, np.ndarray]
    proportion_certain: float
    delta: float

    @property
    def configs(self) -> int:
        """Configurations per strategy (knob combinations x seeds)."""
        return len(self.combos) * len(self.seeds)


def final_quarter(frame, proportion_certain: float, delta: float):
    """The rows of ``frame``'s last quarter at one (proportion_certain, delta)."""
    last = frame[frame["quarter"] == frame["quarter"].max()]
    return last[
        np.isclose(last["proportion_certain"], proportion_certain)
        & np.isclose(last["delta"], delta)
    ]


def load(frame, proportion_certain: float = FIXED_PC, delta: float = FIXED_DELTA) -> WholeGrid:
    """The final quarter of a sweep's rows at one (pc, delta), as a complete grid.

    ``frame``: a pandas DataFrame with :data:`COLUMNS` (the sweep CSV or the tracked
    extract). Every strategy of :data:`STRATEGIES` must have run every (knob combination,
    seed) that any of them ran, once.
    """
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise GridError(
            f"columns: {missing[0]!r} is missing; valid: a CSV with {', '.join(COLUMNS)}"
        )
    last = final_quarter(frame, proportion_certain, delta)
    ran = set(last["strategy"])
    unknown = sorted(ran - set(STRATEGIES))
    if unknown:
        raise GridError(f"strategy: {unknown[0]!r} is invalid; valid: {', '.join(STRATEGIES)}")
    absent = [s for s in STRATEGIES if s not in ran]
    if absent:
        raise GridError(
            f"strategy: {absent[0]!r} has no final-quarter row at proportion_certain "
            f"{proportion_certain:g}, delta {delta:g}; valid: a sweep of {', '.join(STRATEGIES)}"
        )
    knobs = list(BIAS_GRID)
    key = [*knobs, "seed"]
    dup = last.duplicated(["strategy", *key])
    if dup.any():
        row = last[dup].iloc[0]
        raise GridError(
            f"configuration: {row['strategy']!r} at {_describe(row, key)} appears twice; "
            "valid: one row per strategy and configuration (one sweep per file)"
        )
    combos = tuple(sorted({tuple(float(v) for v in r) for r in last[knobs].to_numpy()}))
    seeds = tuple(sorted({int(s) for s in last["seed"]}))
    if len(seeds) < 2:
        raise GridError(
            f"seed: {list(seeds)!r} is too few; valid: at least 2 seeds per configuration"
        )
    expected = len(combos) * len(seeds)
    counts = last.groupby("strategy").size()
    short = [s for s in STRATEGIES if int(counts.get(s, 0)) != expected]
    if short:
        raise GridError(
            f"strategy: {short[0]!r} ran {int(counts.get(short[0], 0))} configurations; valid: "
            f"{expected} ({len(combos)} knob combinations x {len(seeds)} seeds, as the others)"
        )
    combo_index = {c: i for i, c in enumerate(combos)}
    seed_index = {s: i for i, s in enumerate(seeds)}
    s_idx = last["strategy"].map({s: i for i, s in enumerate(STRATEGIES)}).to_numpy()
    c_idx = np.array([combo_index[tuple(float(v) for v in r)] for r in last[knobs].to_numpy()])
    n_idx = last["seed"].map(lambda s: seed_index[int(s)]).to_numpy()
    values = {}
    for m in METRICS:
        arr = np.full((len(STRATEGIES), len(combos), len(seeds)), np.nan)
        v = last[m].to_numpy(dtype=np.float64)
        arr[s_idx, c_idx, n_idx] = np.abs(v) if m in ABSOLUTE else v
        if not np.isfinite(arr).all():
            raise GridError(
                f"{m}: a value is missing or not finite; valid: finite numbers for every "
                "strategy, knob combination and seed"
            )
        values[m] = arr
    return WholeGrid(
        tuple(STRATEGIES), combos, seeds, values, float(proportion_certain), float(delta)
    )


def _describe(row, key: list[str]) -> str:
    return ", ".join(f"{k} {row[k]:g}" for k in key)


def _stats(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``{metric: (3, strategies[, reps])}`` quartiles from (strategies, ..., pooled) arrays."""
    return {m: np.quantile(v, [0.25, 0.5, 0.75], axis=-1) for m, v in values.items()}


def quantiles(grid: WholeGrid) -> list[dict]:
    """One row per strategy: configurations and each metric's q25, median and q75."""
    q = _stats({m: v.reshape(len(grid.strategies), -1) for m, v in grid.values.items()})
    rows = []
    for i, s in enumerate(grid.strategies):
        row: dict = {"strategy": s, "configs": grid.configs}
        for m in METRICS:
            row[f"{m}_q25"], row[f"{m}_median"], row[f"{m}_q75"] = (float(x) for x in q[m][:, i])
        rows.append(row)
    return rows


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a strategy's (or :data:`ALL`'s) statistic of a metric."""

    strategy: str
    metric: str
    statistic: str

    def text(self) -> str:
        """``"median |dSR| of naive"``."""
        return f"{self.statistic} {LABEL[self.metric]} of {LABEL[self.strategy]}"


@dataclass(frozen=True)
class Comparison:
    """``a < b`` (``kind="less"``) or ``a > b`` (``"greater"``)."""

    a: Side
    b: Side
    kind: str


@dataclass(frozen=True)
class Claim:
    """A statement of the paper's App. C.3 as comparisons that must all hold."""

    id: str
    text: str
    comparisons: tuple[Comparison, ...]


def _vs_others(strategy: str, metric: str, statistic: str, kind: str) -> tuple[Comparison, ...]:
    return tuple(
        Comparison(Side(strategy, metric, statistic), Side(o, metric, statistic), kind)
        for o in STRATEGIES
        if o != strategy
    )


def _vs(pairs: Sequence[tuple[str, str]], metric: str, statistic: str, kind: str):
    return tuple(
        Comparison(Side(a, metric, statistic), Side(b, metric, statistic), kind) for a, b in pairs
    )


_UA_PW_VS_NAIVE = (("uncertainty_aware", "naive"), ("prob_weighted", "naive"))

#: App. C.3's statements about Figs. 11-15 that a comparison of medians or IQRs can test.
#: Not here: Fig. 11's bimodal counterfactual (a shape, and it names the bias types the
#: pooled violin does not separate; the single-bias rows test it), Fig. 12's "the tails,
#: not the medians, are where methods diverge most" and Fig. 13's "no method fully controls
#: the upper tail" (no criterion given).
CLAIMS: tuple[Claim, ...] = (
    Claim(
        "fig11_sr_ua_pw_lower_narrower",
        "Fig. 11: uncertainty-aware and prob-weighted exploration show narrower, "
        "lower-positioned |dSR| violins than naive",
        _vs(_UA_PW_VS_NAIVE, "delta_sr", "median", "less")
        + _vs(_UA_PW_VS_NAIVE, "delta_sr", "iqr", "less"),
    ),
    Claim(
        "fig12_fpr_pw_most_compact",
        "Fig. 12: prob-weighted exploration produces the most compact |dFPR| violin",
        _vs_others("prob_weighted", "delta_fpr", "iqr", "less"),
    ),
    Claim(
        "fig13_fnr_most_volatile",
        "Fig. 13: |dFNR| is the most volatile metric (widest spread, mean over the strategies)",
        tuple(
            Comparison(Side(ALL, "delta_fnr", "iqr"), Side(ALL, m, "iqr"), "greater")
            for m in ABSOLUTE
            if m != "delta_fnr"
        ),
    ),
    Claim(
        "fig13_fnr_cf_widest",
        "Fig. 13: counterfactual utility has the widest |dFNR| distribution",
        _vs_others("counterfactual", "delta_fnr", "iqr", "greater"),
    ),
    Claim(
        "fig14_acc_narrower_than_fnr",
        "Fig. 14: |dAcc| distributions are narrower than |dFNR|'s (mean over the strategies)",
        (Comparison(Side(ALL, "delta_acc", "iqr"), Side(ALL, "delta_fnr", "iqr"), "less"),),
    ),
    Claim(
        "fig14_acc_ua_pw_lower_median",
        "Fig. 14: uncertainty-aware and prob-weighted exploration show lower |dAcc| medians "
        "than naive",
        _vs(_UA_PW_VS_NAIVE, "delta_acc", "median", "less"),
    ),
    Claim(
        "fig14_acc_cf_widest",
        "Fig. 14: counterfactual utility shows the widest |dAcc| spread",
        _vs_others("counterfactual", "delta_acc", "iqr", "greater"),
    ),
    Claim(
        "fig15_profit_pw_highest_median",
        "Fig. 15: prob-weighted exploration achieves the highest median profit",
        _vs_others("prob_weighted", "cumulative_profit", "median", "greater"),
    ),
    Claim(
        "fig15_profit_pw_narrowest",
        "Fig. 15: ... with the narrowest profit distribution",
        _vs_others("prob_weighted", "cumulative_profit", "iqr", "less"),
    ),
    Claim(
        "fig15_profit_cf_lowest_median",
        "Fig. 15: counterfactual utility has the lowest median profit",
        _vs_others("counterfactual", "cumulative_profit", "median", "less"),
    ),
    Claim(
        "fig15_profit_naive_between",
        "Fig. 15: naive falls between (median below prob-weighted's, above the "
        "counterfactual's) with a wider spread than prob-weighted's",
        (
            Comparison(
                Side("naive", "cumulative_profit", "median"),
                Side("prob_weighted", "cumulative_profit", "median"),
                "less",
            ),
            Comparison(
                Side("naive", "cumulative_profit", "median"),
                Side("counterfactual", "cumulative_profit", "median"),
                "greater",
            ),
            Comparison(
                Side("naive", "cumulative_profit", "iqr"),
                Side("prob_weighted", "cumulative_profit", "iqr"),
                "greater",
            ),
        ),
    ),
)


def _side_value(stats: dict[str, np.ndarray], side: Side, strategies: tuple[str, ...]):
    q = stats[side.metric]  # (3, strategies, ...)
    value = q[1] if side.statistic == "median" else q[2] - q[0]
    if side.strategy == ALL:
        return value.mean(axis=0)
    return value[strategies.index(side.strategy)]


def bootstrap(grid: WholeGrid, reps: int = 2000, seed: int = 0, chunk: int = 50) -> dict:
    """Each metric's quartiles per strategy over ``reps`` stratified paired replicates.

    Returns ``{metric: (3, strategies, reps)}``; deterministic in ``seed``.
    """
    if reps < 100:
        raise GridError(f"reps: {reps!r} is too few; valid: an integer >= 100")
    rng = np.random.default_rng(seed)
    n_c, n_s = len(grid.combos), len(grid.seeds)
    out = {m: np.empty((3, len(grid.strategies), reps)) for m in METRICS}
    rows = np.arange(n_c)[None, :, None]
    for start in range(0, reps, chunk):
        k = min(chunk, reps - start)
        draw = rng.integers(0, n_s, size=(k, n_c, n_s))
        for m, v in grid.values.items():
            # (strategies, k, combos, seeds) -> pooled per replicate
            pooled = v[:, rows, draw].reshape(len(grid.strategies), k, -1)
            out[m][:, :, start : start + k] = np.quantile(pooled, [0.25, 0.5, 0.75], axis=-1)
    return out


@dataclass(frozen=True)
class Result:
    """A comparison's estimate (``a - b`` on the data), its 95% interval and verdict."""

    comparison: Comparison
    estimate: float
    low: float
    high: float
    verdict: str


def decide(grid: WholeGrid, reps: int = 2000, seed: int = 0, claims=CLAIMS) -> dict[str, dict]:
    """``{claim id: {"verdict", "results": [Result, ...]}}`` for every claim."""
    point = _stats({m: v.reshape(len(grid.strategies), -1) for m, v in grid.values.items()})
    boot = bootstrap(grid, reps, seed)
    decided = {}
    for claim in claims:
        results = []
        for c in claim.comparisons:
            est = float(
                _side_value(point, c.a, grid.strategies) - _side_value(point, c.b, grid.strategies)
            )
            diffs = _side_value(boot, c.a, grid.strategies) - _side_value(
                boot, c.b, grid.strategies
            )
            low, high = (float(x) for x in np.percentile(diffs, [2.5, 97.5]))
            try:
                verdict = difference_verdict(low, high, c.kind)
            except ValueError as err:
                raise GridError(str(err)) from None
            results.append(Result(c, est, low, high, verdict))
        decided[claim.id] = {
            "claim": claim,
            "verdict": overall([r.verdict for r in results]),
            "results": results,
        }
    return decided


def _cell(text: str) -> str:
    """Text for a markdown table cell (its ``|`` escaped)."""
    return text.replace("|", "\\|")


def report(grid: WholeGrid, decided: dict, reps: int, seed: int, header: str = "") -> str:
    """The markdown report: quantile table, then one verdict per claim with its intervals."""
    lines = [
        "# Lee et al. 2026, Figs. 11-15 over the whole knob grid",
        "",
    ]
    if header:
        lines += [header, ""]
    lines += [
        f"Final quarter of every knob combination ({len(grid.combos)}) x seeds "
        f"{', '.join(map(str, grid.seeds))} = {grid.configs:,} configurations per strategy, "
        f"proportion_certain {grid.proportion_certain:g}, delta {grid.delta:g}; the same "
        "configurations for the five strategies. Position: median; spread: IQR (q75 - q25). "
        f"Intervals: 95% percentile intervals of a paired bootstrap over seeds stratified by "
        f"knob combination ({reps:,} replicates, generator seed {seed}; "
        "`rllib_fair/reproduce/lee_whole_grid.py` says why and its limit).",
        "",
        "| strategy | " + " | ".join(_cell(f"{LABEL[m]} median [IQR]") for m in METRICS) + " |",
        "|---|" + "---|" * len(METRICS),
    ]
    for row in quantiles(grid):
        cells = []
        for m in METRICS:
            q25, q50, q75 = row[f"{m}_q25"], row[f"{m}_median"], row[f"{m}_q75"]
            fmt = ".0f" if m == "cumulative_profit" else ".3f"
            cells.append(f"{q50:{fmt}} [{q25:{fmt}}, {q75:{fmt}}]")
        lines.append(f"| {LABEL[row['strategy']]} | " + " | ".join(cells) + " |")
    counts = {
        v: sum(d["verdict"] == v for d in decided.values()) for v in (HOLDS, FAILS, INCONCLUSIVE)
    }
    lines += [
        "",
        f"## Claims: {counts[HOLDS]} hold, {counts[FAILS]} do not, "
        f"{counts[INCONCLUSIVE]} inconclusive",
        "",
        "| claim | verdict | comparisons: a - b on the data [95% interval] |",
        "|---|---|---|",
    ]
    for cid, d in decided.items():
        parts = []
        for r in d["results"]:
            sign = "<" if r.comparison.kind == "less" else ">"
            fmt = ".0f" if r.comparison.a.metric == "cumulative_profit" else ".4f"
            tie = " (equal on every replicate)" if r.estimate == r.low == r.high == 0.0 else ""
            parts.append(
                f"{r.comparison.a.text()} {sign} {r.comparison.b.text()}: "
                f"{r.estimate:{fmt}} [{r.low:{fmt}}, {r.high:{fmt}}] {r.verdict}{tie}"
            )
        head = f"| `{cid}`: {_cell(d['claim'].text)} | **{d['verdict']}** | "
        lines.append(head + _cell("; ".join(parts)) + " |")
    return "\n".join(lines) + "\n"
