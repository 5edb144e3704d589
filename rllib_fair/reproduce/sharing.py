"""Grid points that need no training of their own: one proven run, copied.

A method whose algorithm declares an ``INERT_GRID`` (config class attribute:
``{"metric": <learner metric>, "keys": (<config keys>)}``) reports, per training
iteration, a metric that is 0 only when the run could not depend on those keys (POCAR:
the largest regularising term, which its ``beta_1`` and ``beta_2`` multiply). The runner
records the metric's largest value over the whole training in the cell's row
(``inert``). When a plan's method sets ``share_inert_grid: true`` and its grid varies
only such keys, a finished cell whose ``inert`` maximum is exactly 0 proves that every
other point of its (method, setting, seed) would train to the same weights and the same
evaluation: those points are written as copies of it (``same_as`` names the trained
cell; no CPU-hours), not trained.

To get a proof before spending the grid, the runner trains one point per such (method,
setting, seed) first (:func:`schedule`) and the group's other points only when that run
proves nothing.
"""

from __future__ import annotations

import json
from collections import defaultdict

from rllib_fair.reproduce.merge import cell_path, current, proves_inert
from rllib_fair.reproduce.plan import Cell, Plan


def copy_row(plan: Plan, proof_row: dict, cell: Cell) -> dict:
    """``proof_row`` as ``cell``'s row: its metrics and curves, ``cell``'s own setup.

    And ``cell``'s own ``resolved`` record where the plan has a resolver (the proof's
    names other grid values).
    """
    skip = ("finished", "provenance", "resolved")
    row = {k: v for k, v in proof_row.items() if k not in skip}
    row.update(
        cell=cell.to_dict(),
        setup=plan.setup(cell),
        same_as=Cell(**proof_row["cell"]).id,
        wall_s=0.0,
        cpu_hours=0.0,
    )
    if plan.resolver is not None:
        row["resolved"] = plan.resolver(cell)
    return row


def group_of(cell: Cell) -> tuple[str, str, int]:
    """The (method, setting, seed) whose grid points a proof covers."""
    return (cell.method, cell.setting, cell.seed)


def schedule(out, plan: Plan, pending: list[Cell]) -> tuple[list[Cell], list[Cell], list[dict]]:
    """Splits pending cells into ``(train_now, train_later, copies)``.

    ``copies`` are the rows of pending cells a finished cell of their group already
    proves (write them, do not train). For a ``share_inert_grid`` method whose group has
    no finished trained cell, the first pending point trains now and the others wait for
    its proof (``train_later``); every other pending cell trains now.
    """
    now, later, copies = [], [], []
    groups: dict[tuple, list[Cell]] = defaultdict(list)
    for cell in pending:
        if plan.methods[cell.method].get("share_inert_grid"):
            groups[group_of(cell)].append(cell)
        else:
            now.append(cell)
    for (method, setting, seed), cells in groups.items():
        trained = []
        for label in plan.points(method):
            other = Cell(method, setting, seed, label)
            path = cell_path(out, plan, other)
            if not path.is_file():
                continue
            try:
                row = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if current(row, plan, other) and "same_as" not in row:
                trained.append(row)
        proof = next((r for r in trained if proves_inert(plan, r)), None)
        if proof is not None:
            copies += [copy_row(plan, proof, c) for c in cells]
        elif trained:
            now += cells
        else:
            now.append(cells[0])
            later += cells[1:]
    return now, later, copies
