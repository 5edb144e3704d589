"""Training curves of a plan's cells: recorded during training, binned, plotted by the merge.

A plan may name result paths to follow over training (the papers' learning-curve
figures)::

    curves:
      points: 100                      # bins over the run (default 100)
      metrics: {gap: fairness.qualification_gain.gain_gap_abs,
                lambda: learners.default_policy.ppoc.lambda}

:class:`CurveRecorder` reads every path from each training result; a path the result
does not have (a learner metric another method does not report, or an iteration without
a finished episode) counts as missing, not as an error. At the end the iterations are
cut into ``points`` contiguous bins: each bin keeps its last env-step count and the mean
of the values it has (``None`` when it has none), so a cell file holds at most
``points`` numbers per curve whatever the budget. :func:`plot_curves` draws, per curve
and setting, each method's mean over the cells that recorded it, with a band of one
standard error over seeds.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

DEFAULT_POINTS = 100


def _lookup(result: dict, path: str) -> float:
    """The finite number at the dotted ``path``, or NaN when it is absent or not a number.

    A learner may log under a key that itself holds a ``/`` (``ppoc/lambda`` under
    ``learners.default_policy``): at each level the longest run of the path's parts that
    is one key there is taken, so ``learners.default_policy.ppoc.lambda`` finds it.
    """
    node: Any = result
    parts = path.split(".")
    i = 0
    while i < len(parts):
        if not isinstance(node, dict):
            return math.nan
        for j in range(len(parts), i, -1):
            key = "/".join(parts[i:j])
            if key in node:
                node, i = node[key], j
                break
        else:
            return math.nan
    try:
        value = float(node)
    except (TypeError, ValueError):
        return math.nan
    return value if math.isfinite(value) else math.nan


class CurveRecorder:
    """Follows the plan's curve paths over one cell's training iterations."""

    def __init__(self, metrics: dict[str, str], points: int = DEFAULT_POINTS):
        self.metrics = dict(metrics)
        self.points = int(points)
        self.steps: list[int] = []
        self.values: dict[str, list[float]] = {name: [] for name in self.metrics}

    def add(self, env_steps: int, result: dict) -> None:
        """Records one training iteration's values."""
        self.steps.append(int(env_steps))
        for name, path in self.metrics.items():
            self.values[name].append(_lookup(result, path))

    def binned(self) -> dict[str, list]:
        """``{"env_steps": [...], name: [...]}`` with at most ``points`` bins each."""
        n = len(self.steps)
        bins = min(self.points, n)
        edges = [round(i * n / bins) for i in range(bins + 1)] if bins else [0]
        out: dict[str, list] = {"env_steps": [self.steps[edges[i + 1] - 1] for i in range(bins)]}
        for name, series in self.values.items():
            column = []
            for i in range(bins):
                chunk = [v for v in series[edges[i] : edges[i + 1]] if not math.isnan(v)]
                column.append(sum(chunk) / len(chunk) if chunk else None)
            out[name] = column
        return out


def _series(rows: list[dict], method: str, setting: str, name: str):
    """The binned curves of ``(method, setting)`` that recorded ``name``, cut to one length."""
    import numpy as np

    found = [
        r["curves"]
        for r in rows
        if r["cell"]["method"] == method
        and r["cell"]["setting"] == setting
        and name in (r.get("curves") or {})
    ]
    if not found:
        return None, None
    length = min(len(c["env_steps"]) for c in found)
    steps = np.asarray(found[0]["env_steps"][:length], dtype=float)
    values = np.array(
        [[math.nan if v is None else v for v in c[name][:length]] for c in found], dtype=float
    )
    return steps, values


def cells_with_curves(rows: list[dict]) -> int:
    """How many cells recorded curves."""
    return sum(1 for r in rows if r.get("curves"))


def plot_curves(plan, rows: list[dict], path: Path) -> bool:
    """Draws the plan's curves (rows: curves, columns: settings); False when none exist."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(plan.curves["metrics"]) if plan.curves else []
    if not names or not cells_with_curves(rows):
        return False
    settings = list(plan.settings)
    fig, axes = plt.subplots(
        len(names), len(settings), figsize=(4 * len(settings), 2.6 * len(names)), squeeze=False
    )
    for i, name in enumerate(names):
        for j, setting in enumerate(settings):
            ax = axes[i][j]
            for method in plan.methods:
                steps, values = _series(rows, method, setting, name)
                if steps is None:
                    continue
                have = ~np.isnan(values)
                counts = have.sum(axis=0)
                if not counts.any():
                    continue
                with np.errstate(invalid="ignore", divide="ignore"):
                    mean = np.nansum(values, axis=0) / np.where(counts, counts, 1)
                    mean[counts == 0] = np.nan
                    dev = np.sqrt(
                        np.nansum((values - mean) ** 2, axis=0) / np.maximum(counts - 1, 1)
                    )
                    err = np.where(counts > 1, dev / np.sqrt(np.maximum(counts, 1)), 0.0)
                label = f"{plan.label(method)} ({int(counts.max())})"
                (line,) = ax.plot(steps, mean, label=label, lw=1.2)
                ax.fill_between(steps, mean - err, mean + err, color=line.get_color(), alpha=0.2)
            ax.set_title(f"{setting}: {name}", fontsize=9)
            ax.tick_params(labelsize=7)
            if i == len(names) - 1:
                ax.set_xlabel("env steps", fontsize=8)
            if i == 0 and j == 0:
                ax.legend(fontsize=6)
    fig.suptitle(
        f"{plan.title}\ntraining curves: mean over seeds, band one standard error, "
        "seeds in brackets",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
