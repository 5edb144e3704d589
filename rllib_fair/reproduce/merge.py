"""A plan's finished cells merged into its tables, claims and figure.

Reads ``<out>/<plan>/cells/*.json`` (one file per finished cell, written by the runner)
and writes ``<out>/<plan>/README.md``: the budget and seeds, per setting a table of every
metric as mean ± 95% interval over seeds next to the paper's value, one verdict per claim
with the test it rests on (:mod:`rllib_fair.reproduce.stats`), the CPU-hours spent and
the projected wall time of the whole plan on 16 and 64 CPUs; ``<plan>.png``: per
metric and setting, each method's mean with its interval, the paper's value as a cross;
and, when the plan follows training curves, ``<plan>_curves.png``
(:mod:`rllib_fair.reproduce.curves`).

Cells of another budget than the plan's (an older run) are left out and counted.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from rllib_fair.reproduce import stats
from rllib_fair.reproduce.curves import cells_with_curves, plot_curves
from rllib_fair.reproduce.plan import Cell, Plan


def cells_dir(out: Path, plan: Plan) -> Path:
    """The folder of a plan's cell files."""
    return Path(out) / plan.name / "cells"


def cell_path(out: Path, plan: Plan, cell: Cell) -> Path:
    """The result file of one cell."""
    return cells_dir(out, plan) / f"{cell.id}.json"


def read_cells(out: Path, plan: Plan) -> tuple[list[dict], int]:
    """The plan's finished cells at its budget, and how many files were of another budget."""
    rows, stale = [], 0
    for path in sorted(cells_dir(out, plan).glob("*.json")):
        row = json.loads(path.read_text())
        cell = row.get("cell", {})
        if cell.get("method") not in plan.methods or cell.get("setting") not in plan.settings:
            continue
        if row.get("budget") != plan.budget_for(Cell(**cell)):
            stale += 1
            continue
        rows.append(row)
    return rows, stale


def finished(out: Path, plan: Plan, cell: Cell) -> bool:
    """Whether ``cell`` has a result file at the plan's budget."""
    path = cell_path(out, plan, cell)
    if not path.is_file():
        return False
    try:
        return json.loads(path.read_text()).get("budget") == plan.budget_for(cell)
    except (OSError, ValueError):
        return False


@dataclass
class Merged:
    """What :func:`merge` found: the tables' numbers, the claims' verdicts, the cost."""

    intervals: dict[tuple[str, str, str], stats.Interval] = field(default_factory=dict)
    claims: dict[str, dict] = field(default_factory=dict)
    n_cells: int = 0
    stale: int = 0
    cpu_hours: float = 0.0
    mean_cell_hours: float = float("nan")


def _by_seed(rows: list[dict], method: str, setting: str, metric: str) -> dict[int, float]:
    return {
        int(r["cell"]["seed"]): float(r["metrics"][metric])
        for r in rows
        if r["cell"]["method"] == method and r["cell"]["setting"] == setting
    }


def evaluate_claims(plan: Plan, rows: list[dict]) -> dict[str, dict]:
    """``{claim id: {"verdict": ..., "settings": {setting: Verdict}}}``."""
    out = {}
    for claim in plan.claims:
        per_setting = {}
        for setting in claim.settings:
            a = _by_seed(rows, claim.a, setting, claim.metric)
            if claim.kind in ("less", "greater"):
                b = _by_seed(rows, claim.b, setting, claim.metric)
                per_setting[setting] = stats.compare(a, b, claim.kind)
            else:
                per_setting[setting] = stats.threshold(a, claim.threshold, claim.kind)
        verdict = stats.overall([v.verdict for v in per_setting.values()])
        out[claim.id] = {"verdict": verdict, "settings": per_setting}
    return out


def projected_wall_hours(plan: Plan, mean_cell_hours: float, cpus: int) -> float:
    """Wall time of the whole plan on ``cpus`` CPUs: waves of parallel cells."""
    if not math.isfinite(mean_cell_hours):
        return float("nan")
    parallel = max(1, int(cpus // plan.cell_cpus))
    waves = math.ceil(len(plan.cells()) / parallel)
    return waves * mean_cell_hours


def merge(out: Path, plan: Plan, *, plots: bool = True) -> Merged:
    """Writes the plan's README.md (and figure) from its cells; returns what it found."""
    rows, stale = read_cells(out, plan)
    merged = Merged(n_cells=len(rows), stale=stale)
    metrics = list(plan.evaluation["metrics"])
    for setting in plan.settings:
        for method in plan.methods:
            for metric in metrics:
                values = _by_seed(rows, method, setting, metric)
                merged.intervals[(setting, method, metric)] = stats.mean_interval(values.values())
    merged.claims = evaluate_claims(plan, rows)
    merged.cpu_hours = sum(float(r.get("cpu_hours", 0.0)) for r in rows)
    if rows:
        merged.mean_cell_hours = sum(float(r["wall_s"]) for r in rows) / len(rows) / 3600.0
    folder = Path(out) / plan.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "README.md").write_text(_markdown(plan, rows, merged))
    if plots and rows:
        _figure(plan, merged, folder / f"{plan.name}.png")
        if plan.curves:
            plot_curves(plan, rows, folder / f"{plan.name}_curves.png")
    return merged


def _markdown(plan: Plan, rows: list[dict], merged: Merged) -> str:
    seeds = sorted({int(r["cell"]["seed"]) for r in rows})
    lines = [f"# {plan.title}", ""]
    budget = f"{plan.budget:,} env steps per cell"
    if plan.paper_budget:
        budget += f" (the paper: {plan.paper_budget:,}; {plan.budget / plan.paper_budget:.1%})"
    own = {m: v["budget"] for m, v in plan.methods.items() if "budget" in v}
    if own:
        budget += "; own budgets: " + ", ".join(f"{plan.label(m)} {b:,}" for m, b in own.items())
    lines += [
        f"- Plan: `{plan.name}` (`rllib-fair reproduce {plan.name}`); budget: {budget}.",
        f"- Cells finished: {merged.n_cells} of {len(plan.cells())} "
        f"(seeds {', '.join(map(str, seeds)) or '-'}); cells of another budget left out: "
        f"{merged.stale}.",
        f"- Evaluation: `{plan.evaluation['evaluator']}`, {plan.evaluation['episodes']} "
        f"episodes, {'sampled' if plan.evaluation['explore'] else 'greedy'} actions.",
        f"- CPU-hours spent: {merged.cpu_hours:.2f}; mean per cell "
        f"{merged.mean_cell_hours * 60:.1f} min; projected wall time of the whole plan: "
        f"{projected_wall_hours(plan, merged.mean_cell_hours, 16):.1f} h on 16 CPUs, "
        f"{projected_wall_hours(plan, merged.mean_cell_hours, 64):.1f} h on 64 CPUs.",
    ]
    if plan.curves:
        lines.append(
            f"- Training curves ({', '.join(plan.curves['metrics'])}): recorded by "
            f"{cells_with_curves(rows)} of the {merged.n_cells} cells, "
            f"`{plan.name}_curves.png` (cells run before the plan named curves have none)."
        )
    if plan.budget_note:
        lines.append(f"- Budget note: {plan.budget_note}")
    lines += ["", "Values: mean ± 95% t-interval over seeds (n seeds in brackets).", ""]
    metrics = list(plan.evaluation["metrics"])
    for setting in plan.settings:
        lines += [f"## {setting}", ""]
        head = "| method | " + " | ".join(f"{m} (ours) | {m} (paper)" for m in metrics) + " |"
        lines += [head, "|---|" + "---|---|" * len(metrics)]
        for method in plan.methods:
            cells = []
            for metric in metrics:
                iv = merged.intervals[(setting, method, metric)]
                paper = plan.paper.get(setting, {}).get(method, {}).get(metric)
                cells += [f"{iv.text()} ({iv.n})", "-" if paper is None else f"{paper:g}"]
            lines.append(f"| {plan.label(method)} | " + " | ".join(cells) + " |")
        lines.append("")
    if plan.claims:
        lines += [
            "## Claims",
            "",
            "| claim | verdict | per setting (interval; test) |",
            "|---|---|---|",
        ]
        for claim in plan.claims:
            found = merged.claims[claim.id]
            parts = []
            for setting, v in found["settings"].items():
                what = "a - b" if claim.kind in ("less", "greater") else "mean"
                parts.append(f"{setting}: {v.verdict} ({what} {v.interval.text()}; {v.test})")
            lines.append(
                f"| {claim.text} (`{claim.id}`) | **{found['verdict']}** | {'; '.join(parts)} |"
            )
        lines.append("")
    return "\n".join(lines)


def _figure(plan: Plan, merged: Merged, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = list(plan.evaluation["metrics"])
    settings = list(plan.settings)
    fig, axes = plt.subplots(
        len(metrics), len(settings), figsize=(4 * len(settings), 3 * len(metrics)), squeeze=False
    )
    methods = list(plan.methods)
    for i, metric in enumerate(metrics):
        for j, setting in enumerate(settings):
            ax = axes[i][j]
            for k, method in enumerate(methods):
                iv = merged.intervals[(setting, method, metric)]
                if iv.n:
                    err = iv.half if iv.defined else 0.0
                    ax.errorbar(k, iv.mean, yerr=err, fmt="o", capsize=4)
                paper = plan.paper.get(setting, {}).get(method, {}).get(metric)
                if paper is not None:
                    ax.plot(k, paper, "kx")
            ax.set_xticks(range(len(methods)), [plan.label(m) for m in methods], rotation=30)
            ax.set_title(f"{setting}: {metric}", fontsize=9)
    fig.suptitle(f"{plan.title} (o: ours, 95% interval; x: paper)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
