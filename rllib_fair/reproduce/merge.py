"""A plan's finished cells merged into its tables, claims and figure.

Reads ``<out>/<plan>/cells/*.json`` (one file per finished cell, written by the runner)
and writes ``<out>/<plan>/README.md``: the budget and seeds, per setting a table of every
metric as mean ± 95% interval over seeds next to the paper's value, one verdict per claim
with the test it rests on (:mod:`rllib_fair.reproduce.stats`), the CPU-hours spent and
the projected wall time of the whole plan on 16 and 64 CPUs; ``<plan>.png``: per
metric and setting, each method's mean with its interval, the paper's value as a cross;
and, when the plan follows training curves, ``<plan>_curves.png``
(:mod:`rllib_fair.reproduce.curves`).

Stale cells, of another budget than the plan's or (where the cell records it) another
setup (:meth:`~rllib_fair.reproduce.plan.Plan.setup`), are left out and counted; a run
trains them again. For a
method with a ``grid`` the ``selection`` rule picks one point per setting on the points'
metric means over seeds (:func:`select_points`); the README names each choice, and the
tables, claims and figure use the chosen point's cells only. Cells copied from a run that
proved its grid keys inert (:mod:`rllib_fair.reproduce.sharing`) count as finished and
enter the tables; they are left out of the time per cell.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from rllib_fair.reproduce import stats
from rllib_fair.reproduce.curves import cells_with_curves, plot_curves
from rllib_fair.reproduce.plan import Cell, Plan
from rllib_fair.reproduce.resolved import upgraded


def cells_dir(out: Path, plan: Plan) -> Path:
    """The folder of a plan's cell files."""
    return Path(out) / plan.name / "cells"


def cell_path(out: Path, plan: Plan, cell: Cell) -> Path:
    """The result file of one cell."""
    return cells_dir(out, plan) / f"{cell.id}.json"


def _observed_from_row(row: dict, plan: Plan, cell: Cell) -> float | None:
    """``observed_disparity`` of a row recorded before the deployment reported it.

    The true disparity for an algorithm that observes the true one, and 0 for
    accepted-only labels under equal opportunity (every accepted applicant's label is
    seen and granted: Valdrighi et al., Prop. 3.1); otherwise it cannot be told.
    """
    config = (row.get("resolved") or {}).get("config") or {}
    source = config.get("fairness_disparity_source") or "true"
    recorded = (row.get("setup") or {}).get("evaluation", {}).get("metrics", {})
    truth = next((n for n, p in recorded.items() if p == "disparity"), None)
    if source == "true" and truth in row.get("metrics", {}):
        return float(row["metrics"][truth])
    if source == "accepted" and plan.settings[cell.setting].get("notion") == "equal_opportunity":
        return 0.0
    return None


#: Deployment outputs added after cells were recorded, by output name: how a row written
#: before then gives the value, from what it records (or None where it cannot).
ADDED_OUTPUTS = {"observed_disparity": _observed_from_row}


def with_added_metrics(row: dict, plan: Plan, cell: Cell) -> dict:
    """``row`` as if recorded with the metrics the plan added since, where they follow.

    A metric of the plan whose path is one of :data:`ADDED_OUTPUTS` and which the row's
    recorded setup lacks is filled in (the row and its setup's metric list), when the
    row's own record gives it; the row is returned unchanged otherwise (and then
    compares stale). The filled names are listed under ``derived``.
    """
    setup = row.get("setup")
    if not isinstance(setup, dict) or not isinstance(setup.get("evaluation"), dict):
        return row
    recorded = setup["evaluation"].get("metrics") or {}
    wanted = plan.evaluation_for(cell.setting).get("metrics") or {}
    missing = {n: p for n, p in wanted.items() if n not in recorded and p in ADDED_OUTPUTS}
    if not missing:
        return row
    metrics, derived = dict(row.get("metrics") or {}), list(row.get("derived") or ())
    for name, path in missing.items():
        value = ADDED_OUTPUTS[path](row, plan, cell)
        if value is None:
            return row
        metrics[name] = value
        derived.append(name)
    evaluation = {**setup["evaluation"], "metrics": {**recorded, **missing}}
    return {
        **row,
        "metrics": metrics,
        "derived": derived,
        "setup": {**setup, "evaluation": evaluation},
    }


def current(row: dict, plan: Plan, cell: Cell) -> bool:
    """Whether a cell file's row was run as the plan now says.

    At the plan's budget and, where the row records its setup (cells written since
    2026-11-29), with that setup (:meth:`~rllib_fair.reproduce.plan.Plan.setup`: the
    plan's part and the tuned example's). Older rows record none and are taken at their
    budget (the shipped cells all record one: older ones had it added, marked
    ``setup_note``, where the plan and the example at their commit gave the same).
    When the plan has a :attr:`~rllib_fair.reproduce.plan.Plan.resolver`, a row that
    records what its config resolved the package's defaults to (``resolved``) must
    also match what the current code resolves the cell to; a setting added to the
    package since the row was written counts at the value that reproduces the row's run
    (:func:`~rllib_fair.reproduce.resolved.upgraded`).
    """
    row = with_added_metrics(row, plan, cell)
    if row.get("budget") != plan.budget_for(cell):
        return False
    if "setup" in row and row["setup"] != plan.setup(cell):
        return False
    if plan.resolver is not None and "resolved" in row:
        now = plan.resolver(cell)
        class_of = getattr(plan.resolver, "config_class", None)
        recorded = row["resolved"]
        if now is not None and class_of is not None:
            recorded = upgraded(recorded, class_of(cell))
        return recorded == now
    return True


def proves_inert(plan: Plan, row: dict) -> bool:
    """Whether a trained cell's row proves its method's grid keys had no effect."""
    proof = row.get("inert")
    if "same_as" in row or not isinstance(proof, dict):
        return False
    grid = plan.methods[row["cell"]["method"]].get("grid") or {}
    value = proof.get("max")
    return (
        bool(grid)
        and set(grid) <= set(proof.get("keys") or ())
        and isinstance(value, (int, float))
        and math.isfinite(value)
        and value == 0
    )


def read_cells(out: Path, plan: Plan) -> tuple[list[dict], int]:
    """The plan's current cells, and how many files were stale (:func:`current`)."""
    rows, stale = [], 0
    for path in sorted(cells_dir(out, plan).glob("*.json")):
        row = json.loads(path.read_text())
        cell = row.get("cell", {})
        if cell.get("method") not in plan.methods or cell.get("setting") not in plan.settings:
            continue
        if cell.get("point", "") not in plan.points(cell["method"]):
            continue  # a point the plan's grid no longer has
        row = with_added_metrics(row, plan, Cell(**cell))
        if not current(row, plan, Cell(**cell)):
            stale += 1
            continue
        if plan.counts(Cell(**cell)):  # else a seed the plan does not run (for this method)
            rows.append(row)
    return rows, stale


def finished(out: Path, plan: Plan, cell: Cell) -> bool:
    """Whether ``cell`` has a current result file (:func:`current`); a stale one reruns."""
    path = cell_path(out, plan, cell)
    if not path.is_file():
        return False
    try:
        return current(json.loads(path.read_text()), plan, cell)
    except (OSError, ValueError):
        return False


@dataclass
class Merged:
    """What :func:`merge` found: the tables' numbers, the claims' verdicts, the cost."""

    intervals: dict[tuple[str, str, str], stats.Interval] = field(default_factory=dict)
    claims: dict[str, dict] = field(default_factory=dict)
    n_cells: int = 0
    stale: int = 0
    #: cells copied from a run that proved its grid keys inert (not trained)
    copies: int = 0
    #: (method, setting) pairs whose grid a finished run proved inert
    shared: frozenset = frozenset()
    cpu_hours: float = 0.0
    mean_cell_hours: float = float("nan")
    #: ``{method: mean wall hours of its finished cells}``
    method_hours: dict[str, float] = field(default_factory=dict)
    #: ``{(setting, method): Choice}`` for the methods with a grid
    selected: dict[tuple[str, str], Choice] = field(default_factory=dict)
    #: ``{(setting, method): grid points with a cell on a seed the choice reads}``
    grid_points: dict[tuple[str, str], int] = field(default_factory=dict)


@dataclass(frozen=True)
class Choice:
    """The grid point the selection rule chose for one (method, setting)."""

    point: str  # its label (the cell ids' part)
    params: dict
    disparity: float  # the scores the rule saw: means over the point's seeds
    reward: float
    n_seeds: int
    n_points: int  # points that had cells


def select_points(plan: Plan, rows: list[dict]) -> tuple[list[dict], dict]:
    """The rows of the chosen grid points (and every row of methods without a grid).

    Per (method, setting) with a grid, each point that has cells is scored by the means
    over its seeds of the selection's disparity (rounded to ``decimals`` when given) and
    reward metrics; the plan's rule (:func:`rllib_fair.fairness.selection.select_by_rule`)
    picks one. With staged selection (:meth:`~rllib_fair.reproduce.plan.Plan.staged`)
    the scores are the selection seeds' rows, a choice is made only once every point has
    all of them, and the chosen point's rows on the plan's seeds are kept. Returns the
    kept rows and ``{(setting, method): Choice}``.
    """
    from rllib_fair.fairness.selection import select_by_rule

    sel = plan.selection
    kept = [r for r in rows if not plan.methods[r["cell"]["method"]].get("grid")]
    chosen: dict[tuple[str, str], Choice] = {}
    for method, entry in plan.methods.items():
        if not entry.get("grid"):
            continue
        staged = plan.staged(method)
        on = set(plan.selection_seeds if staged else plan.seeds)
        for setting in plan.settings:
            mine: dict[str, list[dict]] = {}
            for r in rows:
                c = r["cell"]
                if c["method"] == method and c["setting"] == setting:
                    mine.setdefault(c.get("point", ""), []).append(r)
            labels, scores = [], []
            for label in plan.points(method):
                scored = [r for r in mine.get(label, ()) if int(r["cell"]["seed"]) in on]
                if not scored or (staged and len(scored) < len(on)):
                    continue
                d = sum(float(r["metrics"][sel["disparity"]]) for r in scored) / len(scored)
                w = sum(float(r["metrics"][sel["reward"]]) for r in scored) / len(scored)
                if sel["decimals"] is not None:
                    d = round(d, sel["decimals"])
                labels.append((label, len(scored)))
                scores.append({"disparity": d, "reward": w})
            if staged and len(scores) < len(plan.points(method)):
                continue  # the grid is not complete on the selection seeds
            index = select_by_rule(scores, sel["rule"], sel["omega"]) if scores else None
            if index is None:
                continue
            label, n = labels[index]
            chosen[(setting, method)] = Choice(
                label,
                plan.points(method)[label],
                scores[index]["disparity"],
                scores[index]["reward"],
                n,
                len(scores),
            )
            kept += [r for r in mine[label] if int(r["cell"]["seed"]) in plan.seeds]
    return kept, chosen


def grid_points_with_cells(plan: Plan, rows: list[dict]) -> dict[tuple[str, str], int]:
    """``{(setting, method): points with a cell}`` of the grid methods, chosen or not.

    Counts the cells on the seeds the choice reads: the selection seeds of a staged grid,
    the plan's seeds otherwise.
    """
    points: dict[tuple[str, str], set] = {}
    for r in rows:
        c = r["cell"]
        method = c["method"]
        if not plan.methods[method].get("grid"):
            continue
        on = plan.selection_seeds if plan.staged(method) else plan.seeds
        if int(c["seed"]) in on:
            points.setdefault((c["setting"], method), set()).add(c.get("point", ""))
    return {key: len(labels) for key, labels in points.items()}


def staged_choices(plan: Plan, rows: list[dict]) -> dict[tuple[str, str], str]:
    """``{(method, setting): point label}`` of the staged grids chosen so far.

    The form :meth:`~rllib_fair.reproduce.plan.Plan.cells` takes as ``chosen``.
    """
    _, chosen = select_points(plan, rows)
    return {(m, s): c.point for (s, m), c in chosen.items() if plan.staged(m)}


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


def projected_wall_hours(
    plan: Plan, method_hours: dict[str, float], cpus: int, shared: frozenset = frozenset()
) -> float:
    """Wall time of the whole plan on ``cpus`` CPUs, cells run in the plan's order.

    Each cell takes its method's mean (``method_hours``, from the finished cells; a
    method with none takes the mean of the others) and starts on the first free slot
    (``cpus // cell_cpus`` slots), as Tune runs them; the result is the last finish.
    ``shared``: (method, setting) pairs whose grid a finished run proved inert (see
    :func:`shared_grids`): only their first grid point trains, the others are copies.
    """
    known = [h for h in method_hours.values() if math.isfinite(h)]
    if not known:
        return float("nan")
    stand_in = sum(known) / len(known)
    slots = [0.0] * max(1, int(cpus // plan.cell_cpus))
    firsts = {m: next(iter(plan.points(m))) for m in plan.methods}
    for cell in plan.full_cells():
        if (cell.method, cell.setting) in shared and cell.point != firsts[cell.method]:
            continue
        hours = method_hours.get(cell.method, float("nan"))
        i = min(range(len(slots)), key=slots.__getitem__)
        slots[i] += hours if math.isfinite(hours) else stand_in
    return max(slots)


def shared_grids(plan: Plan, rows: list[dict]) -> frozenset:
    """(method, setting) pairs of ``share_inert_grid`` methods with a proving row."""
    return frozenset(
        (r["cell"]["method"], r["cell"]["setting"])
        for r in rows
        if plan.methods[r["cell"]["method"]].get("share_inert_grid") and proves_inert(plan, r)
    )


def merge(out: Path, plan: Plan, *, plots: bool = True) -> Merged:
    """Writes the plan's README.md (and figure) from its cells; returns what it found."""
    every, stale = read_cells(out, plan)
    rows, selected = select_points(plan, every)
    merged = Merged(
        n_cells=len(every),
        stale=stale,
        selected=selected,
        grid_points=grid_points_with_cells(plan, every),
    )
    metrics = list(plan.evaluation["metrics"])
    for setting in plan.settings:
        for method in plan.methods:
            for metric in metrics:
                values = _by_seed(rows, method, setting, metric)
                merged.intervals[(setting, method, metric)] = stats.mean_interval(values.values())
    merged.claims = evaluate_claims(plan, rows)
    merged.cpu_hours = sum(float(r.get("cpu_hours", 0.0)) for r in every)
    # copies of a proven-inert run (rllib_fair.reproduce.sharing) trained nothing
    trained = [r for r in every if "same_as" not in r]
    merged.copies = len(every) - len(trained)
    merged.shared = shared_grids(plan, trained)
    if trained:
        merged.mean_cell_hours = sum(float(r["wall_s"]) for r in trained) / len(trained) / 3600.0
        for method in plan.methods:
            walls = [float(r["wall_s"]) for r in trained if r["cell"]["method"] == method]
            if walls:
                merged.method_hours[method] = sum(walls) / len(walls) / 3600.0
    folder = Path(out) / plan.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "README.md").write_text(_markdown(plan, rows, merged))
    if plots and rows:
        _figure(plan, merged, folder / f"{plan.name}.png")
        if plan.curves:
            plot_curves(plan, rows, folder / f"{plan.name}_curves.png")
    return merged


def _unmeasured(plan: Plan, merged: Merged) -> str:
    missing = [plan.label(m) for m in plan.methods if m not in merged.method_hours]
    if not missing or not merged.method_hours:
        return ""
    return (
        f" ({', '.join(missing)}: no finished cell yet, counted at the other methods' mean, "
        "so the projection is rough)"
    )


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
        f"- Cells finished: {merged.n_cells} of {len(plan.full_cells())} "
        f"(seeds {', '.join(map(str, seeds)) or '-'}); stale cells (another budget, "
        f"setup or package default) left out: {merged.stale}"
        + (
            f"; {merged.copies} of the finished are copies of a run whose training proved "
            "the grid's keys inert (`share_inert_grid`; not trained)"
            if merged.copies
            else ""
        )
        + ".",
        f"- Evaluation: `{plan.evaluation['evaluator']}`: {_protocol(plan.evaluation)}"
        + "".join(
            f"; {s}: {_protocol(plan.evaluation_for(s))}"
            for s in plan.settings
            if plan.evaluation_for(s) != plan.evaluation
        )
        + ".",
        f"- CPU-hours spent: {merged.cpu_hours:.2f}; mean per cell "
        f"{_duration(merged.mean_cell_hours)} (the cell's own training and evaluation, "
        "without the trial's start); projected wall time of the whole plan (each cell at "
        "its method's mean): "
        f"{_duration(projected_wall_hours(plan, merged.method_hours, 16, merged.shared))} "
        "on 16 CPUs, "
        f"{_duration(projected_wall_hours(plan, merged.method_hours, 64, merged.shared))} "
        "on 64 CPUs"
        + _unmeasured(plan, merged)
        + (
            " (the grids proved inert train one point: "
            + ", ".join(f"{plan.label(m)} on {s}" for m, s in sorted(merged.shared))
            + ")"
            if merged.shared
            else ""
        )
        + ".",
    ]
    if plan.curves:
        lines.append(
            f"- Training curves ({', '.join(plan.curves['metrics'])}): recorded by "
            f"{cells_with_curves(rows)} of the {len(rows)} cells, "
            f"`{plan.name}_curves.png` (cells run before the plan named curves have none)."
        )
    if plan.budget_note:
        lines.append(f"- Budget note: {plan.budget_note}")
    lines += ["", "Values: mean ± 95% t-interval over seeds (n seeds in brackets).", ""]
    if merged.selected or plan.selection:
        lines += _selection_lines(plan, merged)
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
                f"| {_cell_text(claim.text)} (`{claim.id}`) | **{found['verdict']}** | "
                f"{_cell_text('; '.join(parts))} |"
            )
        lines.append("")
    return "\n".join(lines)


def _protocol(evaluation: dict) -> str:
    """What the plan's evaluator runs, in one line for the README.

    The evaluator's own ``describe`` where it has one, else the episodes and whether
    actions are sampled.
    """
    from rllib_fair.reproduce.evaluators import EVALUATORS

    describe = getattr(EVALUATORS[evaluation["evaluator"]], "describe", None)
    if describe is not None:
        return describe(evaluation)
    actions = "sampled" if evaluation["explore"] else "greedy"
    env = evaluation.get("env_config")
    on = " of an env with " + ", ".join(f"{k} {v}" for k, v in env.items()) if env else ""
    return f"{evaluation['episodes']} episodes{on}, {actions} actions"


def _duration(hours: float) -> str:
    """``hours`` as hours, minutes or seconds, whichever reads best (``-`` if unknown)."""
    if not math.isfinite(hours):
        return "-"
    if hours >= 1.0:
        return f"{hours:.1f} h"
    if hours * 60 >= 1.0:
        return f"{hours * 60:.1f} min"
    return f"{hours * 3600:.1f} s"


def _cell_text(text: str) -> str:
    """``text`` safe inside a markdown table cell (a ``|`` would split the row)."""
    return text.replace("|", "\\|")


def _selection_lines(plan: Plan, merged: Merged) -> list[str]:
    """The grid points the selection rule chose, one row per (setting, method)."""
    sel = plan.selection
    rounding = f", disparity rounded to {sel['decimals']} decimals" if sel["decimals"] else ""
    lines = [
        "## Selected grid points",
        "",
        f"Rule `{sel['rule']}` (omega {sel['omega']:g}{rounding}) on `{sel['disparity']}` and "
        f"`{sel['reward']}`, "
        + (
            f"means over the selection seeds ({', '.join(map(str, plan.selection_seeds))}), "
            "once every point has them all; only the chosen point then trains on the plan's "
            f"seeds ({', '.join(map(str, plan.seeds))}), whose cells alone make the tables "
            "and claims."
            if plan.selection_seeds
            else "means over each point's seeds; the tables and claims use the chosen "
            "point's cells."
        ),
        "",
        f"| setting | method | chosen point | {sel['disparity']} | {sel['reward']} "
        "| seeds | points with cells |",
        "|---|---|---|---|---|---|---|",
    ]
    for setting in plan.settings:
        for method in plan.methods:
            if not plan.methods[method].get("grid"):
                continue
            c = merged.selected.get((setting, method))
            grid_size = len(plan.points(method))
            if c is None:
                done = merged.grid_points.get((setting, method), 0)
                lines.append(
                    f"| {setting} | {plan.label(method)} | - | - | - | 0 | {done} of {grid_size} |"
                )
                continue
            params = ", ".join(f"{k}={v}" for k, v in c.params.items())
            lines.append(
                f"| {setting} | {plan.label(method)} | {params} | {c.disparity:.4g} | "
                f"{c.reward:.4g} | {c.n_seeds} | {c.n_points} of {grid_size} |"
            )
    return lines + [""]


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
    # many panels (Lee et al.: 9 metrics x 18 settings) at a lower resolution
    fig.savefig(path, dpi=110 if len(metrics) * len(settings) <= 24 else 50)
    plt.close(fig)
