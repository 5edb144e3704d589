"""Staged grid selection (``selection.seeds``): choose on held-out seeds, report the rest.

A grid method's points train on the selection seeds only; Alg. 2 picks one point per
(method, setting) once every point has them all; the chosen point alone trains on the
plan's seeds, whose cells alone make the tables and claims. Checked on hand-made cell
files (exact), and end to end on a tiny FICO plan (a selection round, then the chosen
point's round).
"""

from __future__ import annotations

import json

import pytest
import torch

from rllib_fair.reproduce import stats
from rllib_fair.reproduce.merge import merge, projected_wall_hours, read_cells, staged_choices
from rllib_fair.reproduce.plan import Cell, PlanError, parse_plan

from .test_reproduce_sellf import GRID, POINTS, _write

torch.set_num_threads(1)

STAGED = {**GRID, "seeds": [1, 2, 3], "selection": {**GRID["selection"], "seeds": [0]}}


@pytest.mark.parametrize(
    "seeds, message",
    [
        (
            [1],
            "selection.seeds: [1] is invalid; valid: a list of distinct integers >= 0 that "
            "are not among the plan's seeds (1, 2, 3)",
        ),
        ([0, 0], "selection.seeds: [0, 0] is invalid"),
        (["a"], "selection.seeds: ['a'] is invalid"),
        (0, "selection.seeds: 0 is invalid"),
        ([True], "selection.seeds: [True] is invalid"),
    ],
)
def test_bad_selection_seeds_are_one_line(seeds, message):
    with pytest.raises(PlanError) as e:
        parse_plan({**STAGED, "selection": {**STAGED["selection"], "seeds": seeds}})
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_cells_grid_points_on_the_selection_seeds_then_the_chosen_point():
    plan = parse_plan(STAGED)
    assert plan.selection_seeds == (0,) and plan.staged("sellf") and not plan.staged("ppo")
    points = list(plan.points("sellf"))
    # before a choice: the 4 points on seed 0, and PPO on the plan's seeds
    assert [c.id for c in plan.cells()] == [f"sellf+{p}__fico__s0" for p in points] + [
        f"ppo__fico__s{s}" for s in (1, 2, 3)
    ]
    chosen = {("sellf", "fico"): points[2]}
    assert [c.id for c in plan.cells(chosen=chosen)][4:] == [
        f"{m}__fico__s{s}" for s in (1, 2, 3) for m in ("ppo", f"sellf+{points[2]}")
    ]
    assert [c.id for c in plan.cells((2,), chosen)] == [
        "ppo__fico__s2",
        f"sellf+{points[2]}__fico__s2",
    ]
    assert [c.id for c in plan.cells((0,))] == [f"sellf+{p}__fico__s0" for p in points]
    # the whole plan: 4 selection cells + 3 PPO + 3 of the chosen point
    assert len(plan.full_cells()) == 10
    assert plan.counts(Cell("sellf", "fico", 0, points[0])) and not plan.counts(
        Cell("ppo", "fico", 0)
    )
    # without selection seeds nothing changes: every point on every seed
    assert len(parse_plan(GRID).full_cells()) == len(parse_plan(GRID).cells()) == 15


def _staged_cells(out, plan, *, on_plan_seeds=True):
    # the selection seed 0 carries POINTS' seed-0 numbers: D (beta_1-5+beta_2-1e06) is
    # within omega with the most reward among those within (0.048, 129)
    for point, values in POINTS.items():
        d, w = values[0]
        _write(out, plan, "sellf", point, 0, d, w)
    for seed, d in zip((1, 2, 3), (0.30, 0.32, 0.31)):
        _write(out, plan, "ppo", "", seed, d, 600.0)
        if on_plan_seeds:
            _write(out, plan, "sellf", "beta_1-5+beta_2-1e06", seed, 0.02 + seed / 100, 140.0)


def test_the_choice_uses_the_selection_seeds_and_the_tables_the_plan_seeds(tmp_path):
    plan = parse_plan(STAGED)
    _staged_cells(tmp_path, plan)
    # a grid point's row on a plan seed that it was not chosen for (say an earlier
    # choice) changes neither the choice nor the tables
    _write(tmp_path, plan, "sellf", "beta_1-5+beta_2-0.01", 1, 0.0, 9999.0)
    merged = merge(tmp_path, plan, plots=False)
    choice = merged.selected[("fico", "sellf")]
    assert choice.point == "beta_1-5+beta_2-1e06" and (choice.n_seeds, choice.n_points) == (1, 4)
    assert choice.reward == pytest.approx(129.0)  # seed 0's, not the reported seeds'
    iv = merged.intervals[("fico", "sellf", "reward")]
    assert iv.mean == pytest.approx(140.0) and iv.n == 3  # seeds 1-3 of the chosen point
    assert merged.intervals[("fico", "sellf", "disparity")].mean == pytest.approx(0.04)
    assert merged.claims["fairer"]["verdict"] == stats.HOLDS  # paired over seeds 1-3
    assert staged_choices(plan, []) == {}
    text = (tmp_path / "gridded" / "README.md").read_text()
    assert "means over the selection seeds (0), once every point has them all" in text
    assert "Cells finished: 12 of 10" not in text and "of 10 (seeds 1, 2, 3)" in text


def test_no_choice_before_every_point_has_every_selection_seed(tmp_path):
    plan = parse_plan({**STAGED, "selection": {**STAGED["selection"], "seeds": [0, 9]}})
    _staged_cells(tmp_path, plan, on_plan_seeds=False)
    # seed 9 is missing everywhere: no choice yet, so no plan-seed cells to run
    assert staged_choices(plan, read_cells(tmp_path, plan)[0]) == {}
    before = merge(tmp_path, plan, plots=False)
    assert ("fico", "sellf") not in before.selected
    # the README still counts the points that have cells (4 of 4 on seed 0)
    assert before.grid_points[("fico", "sellf")] == 4
    text = (tmp_path / "gridded" / "README.md").read_text()
    assert "| fico | SELLF | - | - | - | 0 | 4 of 4 |" in text
    for point, values in POINTS.items():
        _write(tmp_path, plan, "sellf", point, 9, *values[1])
    merged = merge(tmp_path, plan, plots=False)
    # means over seeds 0 and 9: D 0.0485 / 129.5 is the richest within omega
    assert merged.selected[("fico", "sellf")].point == "beta_1-5+beta_2-1e06"
    assert merged.selected[("fico", "sellf")].n_seeds == 2
    # a PPO row on a selection seed is no cell of the plan (PPO has no grid)
    _write(tmp_path, plan, "ppo", "", 0, 0.9, 1.0)
    assert merge(tmp_path, plan, plots=False).n_cells == merged.n_cells


def test_the_projection_counts_one_point_per_reported_seed():
    plan = parse_plan(STAGED)
    # 10 cells at 0.1 h on one slot (the grid's 4 selection cells, 3 + 3 reported)
    assert projected_wall_hours(plan, {"ppo": 0.1, "sellf": 0.1}, 1) == pytest.approx(1.0)
    # unstaged: 15 cells
    assert projected_wall_hours(parse_plan(GRID), {"ppo": 0.1, "sellf": 0.1}, 1) == pytest.approx(
        1.5
    )


def test_a_seed_outside_the_plan_is_a_one_line_error(tmp_path, capsys):
    from rllib_fair.cli import main

    plan_file = tmp_path / "staged.json"
    plan_file.write_text(json.dumps(STAGED))
    out = tmp_path / "out"
    assert main(["reproduce", str(plan_file), "--seeds", "7", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--seeds: 7 is invalid; valid: the plan's seeds (1, 2, 3, 0)" in err
    assert "\n" not in err and not out.exists()


@pytest.mark.ray
def test_a_staged_plan_trains_its_selection_round_then_the_chosen_point(
    ray_session, tmp_path, capsys
):
    from rllib_fair.cli.reproduce import run_plan
    from rllib_fair.reproduce.merge import cell_path

    from .test_reproduce_sharing import TINY_FICO

    plan = parse_plan(
        {
            **TINY_FICO,
            "seeds": [1],
            "methods": {"pocar_oracle": TINY_FICO["methods"]["pocar_oracle"]},
            "selection": {**TINY_FICO["selection"], "seeds": [0]},
        }
    )
    out = tmp_path / "out"
    assert run_plan(plan, out, storage_path=str(tmp_path / "tune"), plots=False) == 0
    text = capsys.readouterr().out
    assert "1 grids choose their point on seeds 0 first" in text
    assert "3 cells, 0 finished, 3 to run" in text
    files = sorted(p.name for p in (out / plan.name / "cells").glob("*.json"))
    (chosen,) = staged_choices(plan, read_cells(out, plan)[0]).values()
    assert files == sorted(
        [f"pocar_oracle+beta_1-{b}__fico_eo__s0.json" for b in (1, 10)]
        + [f"pocar_oracle+{chosen}__fico_eo__s1.json"]
    )
    row = json.loads(cell_path(out, plan, Cell("pocar_oracle", "fico_eo", 1, chosen)).read_text())
    assert row["setup"]["overrides"]["seed"] == 1
    # a second run finds everything finished and trains nothing
    assert run_plan(plan, out, storage_path=str(tmp_path / "tune"), plots=False) == 0
    assert "3 cells, 3 finished, 0 to run" in capsys.readouterr().out
