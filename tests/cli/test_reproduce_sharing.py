"""Grid points copied from a run that proved the grid's keys inert (``share_inert_grid``).

POCAR regularised by the accepted-only equal-opportunity disparity (0 by construction on
FICO lending) trains the same whatever its betas. The engine trains one grid point, reads
the proof from its learner metric, and writes the other points as copies; the end-to-end
test trains a copied point as well and checks the copy is exactly what training gives.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from rllib_fair.reproduce.merge import cell_path, merge, projected_wall_hours, proves_inert
from rllib_fair.reproduce.plan import Cell, PlanError, parse_plan
from rllib_fair.reproduce.sharing import copy_row, schedule

torch.set_num_threads(1)

TINY_FICO = {
    "name": "tiny_inert",
    "title": "Tiny plan: POCAR's grid on FICO / EO",
    "seeds": [0],
    "budget": 400,
    "example": "tuned_examples/pocar/{setting}-{method}.yaml",
    "methods": {
        "pocar": {"label": "POCAR (accepted-only)", "grid": {"beta_1": [1, 10]}},
        "pocar_oracle": {"label": "POCAR (Oracle)", "grid": {"beta_1": [1, 10]}},
    },
    "settings": {
        "fico_eo": {
            "notion": "equal_opportunity",
            "example_setting": "lending_fico",
            "env_config": {"max_steps": 100},
            "config": {"train_batch_size_per_learner": 200, "minibatch_size": 100, "num_epochs": 1},
        }
    },
    "evaluation": {
        "evaluator": "greedy_episodes",
        "episodes": 1,
        "metrics": {"bias": "fairness.{notion}.bias", "reward_per_step": "reward_per_step"},
    },
    "selection": {"disparity": "bias", "reward": "reward_per_step"},
}


def _shared(**extra) -> dict:
    methods = {m: {**v, "share_inert_grid": True, **extra} for m, v in TINY_FICO["methods"].items()}
    return {**TINY_FICO, "methods": methods}


def _row(plan, cell: Cell, inert_max, keys=("beta_1", "beta_2"), bias=0.3) -> dict:
    return {
        "plan": plan.name,
        "cell": cell.to_dict(),
        "budget": plan.budget_for(cell),
        "setup": plan.setup(cell),
        "env_steps": 400,
        "metrics": {"bias": bias, "reward_per_step": 0.5},
        "wall_s": 60.0,
        "cpu_hours": 60.0 / 3600,
        "inert": {"metric": "pocar_regularizer_max", "keys": list(keys), "max": inert_max},
    }


def _put(out, plan, row: dict) -> None:
    path = cell_path(out, plan, Cell(**row["cell"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(row))


# ----------------------------------------------------------------------- plan entries
@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"grid": {"beta_1": [1, 2]}, "share_inert_grid": "yes"}, "share_inert_grid: 'yes'"),
        ({"share_inert_grid": True}, "valid: false, or a method with a grid"),
    ],
)
def test_bad_share_inert_grid_is_one_line(entry, message):
    data = {**TINY_FICO, "methods": {"pocar": {"label": "P", **entry}}}
    with pytest.raises(PlanError) as err:
        parse_plan(data)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_flag_is_not_part_of_a_cells_setup():
    # adding the flag to a plan must not make its finished cells stale
    a, b = parse_plan(TINY_FICO), parse_plan(_shared())
    cell = Cell("pocar", "fico_eo", 0, "beta_1-10")
    assert a.setup(cell) == b.setup(cell)


# ------------------------------------------------------------------------- proofs
def test_only_an_exact_zero_over_the_grid_keys_proves_a_run_inert():
    plan = parse_plan(_shared())
    cell = Cell("pocar", "fico_eo", 0, "beta_1-1")
    assert proves_inert(plan, _row(plan, cell, 0.0))
    assert not proves_inert(plan, _row(plan, cell, 1e-12))
    assert not proves_inert(plan, _row(plan, cell, None))  # no value at some iteration
    assert not proves_inert(plan, _row(plan, cell, math.nan))
    assert not proves_inert(plan, _row(plan, cell, 0.0, keys=("beta_2",)))  # grid key unproven
    no_proof = _row(plan, cell, 0.0)
    del no_proof["inert"]
    assert not proves_inert(plan, no_proof)
    copy = copy_row(plan, _row(plan, cell, 0.0), Cell("pocar", "fico_eo", 0, "beta_1-10"))
    assert not proves_inert(plan, copy)  # a copy proves nothing by itself


def test_schedule_trains_one_point_first_then_copies_or_trains_the_rest(tmp_path):
    plan = parse_plan(_shared())
    cells = plan.cells()
    now, later, copies = schedule(tmp_path, plan, cells)
    # nothing finished: each group's first point now, its other point waits
    assert [c.id for c in now] == [
        "pocar+beta_1-1__fico_eo__s0",
        "pocar_oracle+beta_1-1__fico_eo__s0",
    ]
    assert [c.id for c in later] == [
        "pocar+beta_1-10__fico_eo__s0",
        "pocar_oracle+beta_1-10__fico_eo__s0",
    ]
    assert copies == []
    # the first points finish: POCAR's proves its betas inert, the oracle's does not
    for cell, value in zip(now, (0.0, 0.07), strict=True):
        _put(tmp_path, plan, _row(plan, cell, value, bias=0.3 if value == 0 else 0.1))
    now, later, copies = schedule(tmp_path, plan, later)
    assert [c.id for c in now] == ["pocar_oracle+beta_1-10__fico_eo__s0"] and later == []
    (copy,) = copies
    target = Cell("pocar", "fico_eo", 0, "beta_1-10")
    assert copy["cell"] == target.to_dict() and copy["same_as"] == "pocar+beta_1-1__fico_eo__s0"
    assert copy["setup"] == plan.setup(target) != plan.setup(Cell(**_row(plan, now[0], 0)["cell"]))
    assert copy["metrics"] == {"bias": 0.3, "reward_per_step": 0.5}
    assert copy["cpu_hours"] == 0.0 and copy["wall_s"] == 0.0
    _put(tmp_path, plan, copy)
    # the merge counts the copy as finished, not as time spent
    merged = merge(tmp_path, plan, plots=False)
    assert merged.n_cells == 3 and merged.copies == 1
    assert merged.method_hours["pocar"] == pytest.approx(60.0 / 3600)
    readme = (tmp_path / "tiny_inert" / "README.md").read_text()
    assert "1 of the finished are copies" in readme
    # the projection trains one point of the proven grid: 3 cells of a minute, not 4
    assert merged.shared == {("pocar", "fico_eo")}
    hours = merged.method_hours
    assert projected_wall_hours(plan, hours, 1) == pytest.approx(4 / 60)
    assert projected_wall_hours(plan, hours, 1, merged.shared) == pytest.approx(3 / 60)
    assert "the grids proved inert train one point: POCAR (accepted-only) on fico_eo" in readme
    # without the flag nothing waits and nothing is copied
    plain = parse_plan(TINY_FICO)
    now, later, copies = schedule(tmp_path, plain, plain.cells())
    assert len(now) == 4 and later == [] and copies == []


@pytest.mark.ray
def test_a_copied_point_is_exactly_what_training_it_gives(ray_session, tmp_path, capsys):
    from rllib_fair.cli.reproduce import run_cell, run_plan

    plan = parse_plan(_shared())
    out = tmp_path / "out"
    assert run_plan(plan, out, storage_path=str(tmp_path / "tune"), plots=False) == 0
    text = capsys.readouterr().out
    assert "2 grid points wait for their group's first run" in text
    rows = {c.id: json.loads(cell_path(out, plan, c).read_text()) for c in plan.cells()}
    first, copied = rows["pocar+beta_1-1__fico_eo__s0"], rows["pocar+beta_1-10__fico_eo__s0"]
    # the accepted-only EO disparity is 0: POCAR's terms never weighed anything
    assert first["inert"] == {
        "metric": "pocar_regularizer_max",
        "keys": ["beta_1", "beta_2"],
        "max": 0.0,
    }
    assert copied["same_as"] == "pocar+beta_1-1__fico_eo__s0" and "copied from" in text
    # the oracle's true disparity is not 0: both of its points trained
    for label in ("beta_1-1", "beta_1-10"):
        row = rows[f"pocar_oracle+{label}__fico_eo__s0"]
        assert "same_as" not in row and row["inert"]["max"] > 0
    # the copy is what training that point gives
    trained = run_cell(plan, Cell("pocar", "fico_eo", 0, "beta_1-10"))
    assert trained["metrics"] == copied["metrics"] and trained["inert"]["max"] == 0.0
