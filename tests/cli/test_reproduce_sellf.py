"""The plan valdrighi2026_tables (SELLF, Tables 1 and 2): method grids, Alg. 2 in the
merge, and the ``deployment`` evaluator.

Grid points are cells of their own; the merge picks one point per (method, setting) by
the plan's selection rule on the points' deployment means over seeds, and the tables and
claims use that point. Checked on hand-made cell files (exact), and one SELLF cell runs
end to end at a tiny budget with a short deployment.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from rllib_fair.reproduce import stats
from rllib_fair.reproduce.merge import cell_path, merge
from rllib_fair.reproduce.plan import Cell, PlanError, load_plan, parse_plan

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[2]

GRID = {
    "name": "gridded",
    "title": "A plan with a grid",
    "seeds": [0, 1, 2],
    "budget": 400,
    "example": "tuned_examples/{method}/{setting}-{method}.yaml",
    "methods": {
        "ppo": {"label": "PPO"},
        "sellf": {"label": "SELLF", "grid": {"beta_1": [1, 5], "beta_2": [0.01, 1e6]}},
    },
    "settings": {"fico": {"notion": "equal_opportunity", "example_setting": "lending_fico"}},
    "evaluation": {
        "evaluator": "deployment",
        "metrics": {"disparity": "disparity", "reward": "reward"},
    },
    "selection": {"disparity": "disparity", "reward": "reward", "omega": 0.05},
    "claims": [
        {
            "id": "fairer",
            "text": "SELLF below PPO",
            "metric": "disparity",
            "less": ["sellf", "ppo"],
        },
        {"id": "richer", "text": "SELLF above 100", "metric": "reward", "at_least": ["sellf", 100]},
    ],
}


# ----------------------------------------------------------------------------- the plan
def test_the_plan_validates_with_its_grids_cells_and_claims():
    plan = load_plan("valdrighi2026_tables")
    assert plan.budget == plan.paper_budget == 500_000 and plan.seeds == (1, 2, 3, 4, 5)
    # App. E: each configuration trained once (seed 0) for the choice, then five seeds
    assert plan.selection_seeds == (0,)
    assert list(plan.settings) == [
        "fico_eo",
        "school_qp",
        "fico_ap",
        "fico_qp",
        "school_eo",
        "school_ap",
    ]
    assert [len(plan.points(m)) for m in plan.methods] == [1, 12, 12, 12]
    cells = plan.full_cells()
    # per setting: PPO x 5 seeds, and per grid 12 points on seed 0 + the chosen x 5
    assert len(cells) == 6 * (5 + 3 * (12 + 5)) and len({c.id for c in cells}) == len(cells)
    assert len(plan.cells()) == 6 * (5 + 3 * 12)  # before any choice
    cell = Cell("sellf", "school_eo", 3, "beta_1-5+beta_2-0.1")
    assert cell in plan.cells(chosen={("sellf", "school_eo"): "beta_1-5+beta_2-0.1"})
    assert cell.id == "sellf+beta_1-5+beta_2-0.1__school_eo__s3"
    over = plan.overrides(cell)
    assert (over["beta_1"], over["beta_2"], over["seed"]) == (5, 0.1, 3)
    assert over["fairness_notion"] == "equal_opportunity" and over["lr"] == 1e-5
    assert over["advantage_normalization"] == "minmax" and over["weight_init"] == "orthogonal"
    assert "advantage_normalization" not in plan.overrides(Cell("ppo", "fico_eo", 0))
    assert (
        plan.example_path(cell, ROOT) == ROOT / "tuned_examples/sellf/school_admission-sellf.yaml"
    )
    oracle = Cell("pocar_oracle", "fico_ap", 0, "beta_1-10+beta_2-5")
    assert plan.example_path(oracle, ROOT).name == "lending_fico-pocar_oracle.yaml"
    assert plan.evaluation["explore"] is True and plan.evaluation["steps"] == 10_000
    # the authors' school env ends every episode at 2,048 steps and charges 0.4 an admission
    for setting in plan.settings:
        school = setting.startswith("school")
        assert plan.evaluation_for(setting)["steps"] == (2048 if school else 10_000)
        assert plan.env_config(Cell("ppo", setting, 1)).get("cost") == (0.4 if school else None)
    assert plan.selection == {
        "disparity": "observed_disparity",
        "reward": "reward",
        "rule": "sellf",
        "omega": 0.05,
        "decimals": 2,
        "seeds": (0,),
    }
    assert plan.paper["fico_eo"]["sellf"] == {"disparity": 0.04, "reward": 263.96}
    assert {c.id for c in plan.claims} >= {"sellf_within_omega_eo", "sellf_fairer_than_ppo"}


def test_grid_expansion_gives_stable_safe_cell_ids():
    plan = parse_plan(GRID)
    assert [c.id for c in plan.cells((2,))] == [
        "ppo__fico__s2",
        "sellf+beta_1-1+beta_2-0.01__fico__s2",
        "sellf+beta_1-1+beta_2-1e06__fico__s2",
        "sellf+beta_1-5+beta_2-0.01__fico__s2",
        "sellf+beta_1-5+beta_2-1e06__fico__s2",
    ]
    assert plan.overrides(Cell("sellf", "fico", 4, "beta_1-5+beta_2-1e06"))["beta_2"] == 1e6
    # a cell without a grid point keeps its former file name and stored form
    assert Cell("ppo", "fico", 4).to_dict() == {"method": "ppo", "setting": "fico", "seed": 4}
    assert Cell("sellf", "fico", 4, "beta_1-1").to_dict()["point"] == "beta_1-1"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"grid": [1, 2]}, "methods.sellf.grid: [1, 2] is invalid; valid: a non-empty mapping"),
        ({"grid": {"seed": [1, 2]}}, "methods.sellf.grid key: 'seed' is invalid"),
        ({"grid": {"beta_1": []}}, "methods.sellf.grid.beta_1: [] is invalid"),
        ({"grid": {"beta_1": ["a/b"]}}, "methods.sellf.grid.beta_1: 'a/b' is invalid"),
        (
            {"grid": {"beta_1": [1, 1.0]}},
            "methods.sellf.grid.beta_1: [1, 1.0] is invalid; valid: distinct",
        ),
        ({"grid": {"beta_1": [{"x": 1}]}}, "methods.sellf.grid.beta_1: {'x': 1} is invalid"),
    ],
)
def test_bad_grids_give_one_line(change, message):
    methods = {**GRID["methods"], "sellf": {"label": "SELLF", **change}}
    with pytest.raises(PlanError) as err:
        parse_plan({**GRID, "methods": methods})
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "selection, message",
    [
        (None, "selection: missing; a plan whose methods have a grid needs"),
        ({"disparity": "gap", "reward": "reward"}, "selection.disparity: 'gap' is invalid"),
        ({"disparity": "disparity", "reward": "reward", "rule": "x"}, "selection.rule: 'x'"),
        ({"disparity": "disparity", "reward": "reward", "omega": -1}, "selection.omega: -1"),
        ({"disparity": "disparity", "reward": "reward", "decimals": 1.5}, "selection.decimals"),
        ({"disparity": "disparity", "reward": "reward", "by": 1}, "selection: {"),
    ],
)
def test_bad_selections_give_one_line(selection, message):
    data = {k: v for k, v in GRID.items() if k != "selection"}
    if selection is not None:
        data["selection"] = selection
    with pytest.raises(PlanError) as err:
        parse_plan(data)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_selection_without_a_grid_is_refused():
    with pytest.raises(PlanError, match="selection: .* only with a method that has a grid"):
        parse_plan({**GRID, "methods": {"ppo": {}}, "claims": []})


# ----------------------------------------------------------------------------- Alg. 2
def _write(out: Path, plan, method: str, point: str, seed: int, disparity: float, reward: float):
    cell = Cell(method, "fico", seed, point)
    path = cell_path(out, plan, cell)
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {
        "cell": cell.to_dict(),
        "budget": plan.budget,
        "metrics": {"disparity": disparity, "reward": reward},
        "wall_s": 60.0,
        "cpu_hours": 0.01,
    }
    path.write_text(json.dumps(row))


# per point: (disparity, reward) by seed 0, 1, 2. Means: A 0.04/120 (within omega),
# B 0.03/110 (within omega, less reward), C 0.20/500 (outside omega), D 0.049/130 (within).
POINTS = {
    "beta_1-1+beta_2-0.01": [(0.03, 100.0), (0.04, 120.0), (0.05, 140.0)],
    "beta_1-1+beta_2-1e06": [(0.02, 100.0), (0.03, 110.0), (0.04, 120.0)],
    "beta_1-5+beta_2-0.01": [(0.19, 490.0), (0.20, 500.0), (0.21, 510.0)],
    "beta_1-5+beta_2-1e06": [(0.048, 129.0), (0.049, 130.0), (0.05, 131.0)],
}


def _write_all(out: Path, plan, points: dict) -> None:
    for point, values in points.items():
        for seed, (d, w) in enumerate(values):
            _write(out, plan, "sellf", point, seed, d, w)
    for seed, d in enumerate([0.30, 0.32, 0.31]):
        _write(out, plan, "ppo", "", seed, d, 600.0)


def test_merge_selects_by_alg_2_and_the_claims_use_the_chosen_point(tmp_path):
    plan = parse_plan(GRID)
    _write_all(tmp_path, plan, POINTS)
    merged = merge(tmp_path, plan, plots=False)
    assert merged.n_cells == 15
    choice = merged.selected[("fico", "sellf")]
    # within omega: A, B, D; the richest of them is D (130), not C (500, outside omega)
    assert choice.point == "beta_1-5+beta_2-1e06" and choice.params == {"beta_1": 5, "beta_2": 1e6}
    assert choice.disparity == pytest.approx(0.049) and choice.reward == pytest.approx(130.0)
    assert (choice.n_seeds, choice.n_points) == (3, 4)
    iv = merged.intervals[("fico", "sellf", "reward")]
    assert iv.mean == pytest.approx(130.0) and iv.n == 3  # the chosen point's cells only
    assert merged.claims["fairer"]["verdict"] == stats.HOLDS
    assert merged.claims["richer"]["verdict"] == stats.HOLDS
    text = (tmp_path / "gridded" / "README.md").read_text()
    assert "| fico | SELLF | beta_1=5, beta_2=1000000.0 | 0.049 | 130 | 3 | 4 of 4 |" in text
    assert "Rule `sellf` (omega 0.05)" in text
    assert "`deployment`: 10,000 steps on each of 10 deployment seeds, greedy actions" in text


def test_swapping_two_points_numbers_changes_the_selection_and_the_claims(tmp_path):
    plan = parse_plan(GRID)
    swapped = dict(POINTS)
    # C's numbers (0.20, 500: outside omega) go to D, D's to C: C is now chosen
    swapped["beta_1-5+beta_2-0.01"], swapped["beta_1-5+beta_2-1e06"] = (
        POINTS["beta_1-5+beta_2-1e06"],
        POINTS["beta_1-5+beta_2-0.01"],
    )
    _write_all(tmp_path, plan, swapped)
    merged = merge(tmp_path, plan, plots=False)
    assert merged.selected[("fico", "sellf")].point == "beta_1-5+beta_2-0.01"
    # every point outside omega: the least unfair one is chosen whatever its reward
    far = {p: [(d + 0.5, w) for d, w in v] for p, v in POINTS.items()}
    _write_all(tmp_path, plan, far)
    merged = merge(tmp_path, plan, plots=False)
    assert merged.selected[("fico", "sellf")].point == "beta_1-1+beta_2-1e06"
    assert merged.claims["fairer"]["verdict"] == stats.FAILS  # 0.53 vs PPO's 0.31
    # rounded to 1 decimal, A, B and D tie at 0.5: the richest of them, D, is chosen
    rounded = parse_plan({**GRID, "selection": {**GRID["selection"], "decimals": 1}})
    choice = merge(tmp_path, rounded, plots=False).selected[("fico", "sellf")]
    assert choice.point == "beta_1-5+beta_2-1e06" and choice.disparity == 0.5


def test_cells_of_points_the_grid_no_longer_has_are_left_out(tmp_path):
    plan = parse_plan(GRID)
    _write_all(tmp_path, plan, POINTS)
    _write(tmp_path, plan, "sellf", "beta_1-99", 0, 0.0, 9999.0)
    merged = merge(tmp_path, plan, plots=False)
    assert merged.n_cells == 15 and merged.selected[("fico", "sellf")].reward == pytest.approx(130)


# ----------------------------------------------------------------------------- evaluator
def test_deployment_evaluator_refuses_bad_settings_in_one_line():
    from rllib_fair.reproduce.deployment_eval import Deployment

    for evaluation, message in [
        ({"steps": 0}, "evaluation.steps: 0 is invalid; valid: an integer >= 1"),
        ({"seeds": True}, "evaluation.seeds: True is invalid"),
    ]:
        with pytest.raises(ValueError) as err:
            Deployment.size(evaluation)
        assert message in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ValueError, match="evaluation.metrics.x: 'bias' is invalid for deployment"):
        Deployment().measure(None, {}, {"x": "bias"}, {})


@pytest.mark.ray
def test_one_sellf_cell_deploys_end_to_end(ray_session, tmp_path):
    from rllib_fair.cli.reproduce import run_cell, write_cell

    plan = load_plan("valdrighi2026_tables")
    small = {"train_batch_size_per_learner": 200, "minibatch_size": 100, "num_epochs": 1}
    plan = plan.__class__(
        **{
            **plan.__dict__,
            "budget": 200,
            "cell_overrides": ({"method": "sellf", "setting": "fico_eo", "config": small},),
            "evaluation": {**plan.evaluation, "steps": 50, "seeds": 2},
            # unstaged, so that one cell's point is a choice (staged: test_reproduce_staged)
            "selection": {**plan.selection, "seeds": ()},
        }
    )
    cell = Cell("sellf", "fico_eo", 1, "beta_1-2+beta_2-0.05")
    row = run_cell(plan, cell)
    assert row["cell"]["point"] == "beta_1-2+beta_2-0.05"
    assert row["example"] == "tuned_examples/sellf/lending_fico-sellf.yaml"
    assert row["env_steps"] >= 200
    m = row["metrics"]
    assert set(m) == {"disparity", "reward", "final_gap", "observed_disparity"}
    assert 0.0 <= m["disparity"] <= 1.0 and 0.0 <= m["final_gap"] <= 1.0
    assert 0.0 <= m["observed_disparity"] <= 1.0
    assert -50.0 <= m["reward"] <= 50.0  # 50 steps of a reward in [-0.8, 0.2] per applicant
    write_cell(tmp_path, plan, row, {})
    merged = merge(tmp_path, plan, plots=False)
    assert merged.selected[("fico_eo", "sellf")].point == cell.point
    text = (tmp_path / plan.name / "README.md").read_text()
    assert "| fico_eo | SELLF | beta_1=2, beta_2=0.05 |" in text


@pytest.mark.parametrize(
    ("algo", "source", "undefined"),
    [
        ("PPO", "true", "exclude"),
        ("POCAR", "accepted", "exclude"),
        ("POCAR", "accepted", "zero"),
        ("SELLF", "imputed", "exclude"),
    ],
)
def test_deployment_reports_the_disparity_each_method_observes(
    ray_session, algo, source, undefined
):
    # PPO observes the true disparity; POCAR's accepted-only one is 0 for equal
    # opportunity (only accepted applicants' labels, all of them granted: Prop. 3.1),
    # unless a group without an accepted qualified applicant counts as utility 0 (the
    # authors' rule: then the first steps, before both groups have one, observe 1);
    # SELLF's imputes the rejected applicants' labels with its predictor
    from rllib_fair.algorithms import get_config_class
    from rllib_fair.reproduce.deployment_eval import Deployment

    config = (
        get_config_class(algo)()
        .environment("fair/LendingFICO-v0")
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
        .fairness(notion="equal_opportunity")
        .debugging(seed=0)
    )
    if algo == "POCAR":
        config = config.fairness(disparity_source="accepted", undefined_utility=undefined)
    a = config.build_algo()
    try:
        paths = {"true": "disparity", "seen": "observed_disparity", "sd": "observed_disparity_std"}
        m = Deployment().measure(a, {}, paths, {"steps": 300, "seeds": 2, "explore": True})
    finally:
        a.stop()
    assert a.config.fairness_disparity_source == source
    assert 0.0 < m["true"] < 1.0
    if source == "true":
        assert m["seen"] == m["true"]
    elif source == "accepted" and undefined == "exclude":
        assert m["seen"] == 0.0 and m["sd"] == 0.0
    elif source == "accepted":
        assert 0.0 < m["seen"] < 1.0
    else:
        assert 0.0 < m["seen"] < 1.0 and m["seen"] != m["true"]


def test_cells_recorded_before_observed_disparity_count_where_their_record_gives_it():
    from rllib_fair.reproduce.merge import current, with_added_metrics

    plan = load_plan("valdrighi2026_tables")
    assert plan.selection["disparity"] == "observed_disparity"

    def old_row(method, setting, source):
        point = next(iter(plan.points(method)), "")
        cell = Cell(method, setting, 1, point)
        setup = plan.setup(cell)
        del setup["evaluation"]["metrics"]["observed_disparity"]
        row = {
            "cell": cell.to_dict(),
            "budget": plan.budget_for(cell),
            "setup": setup,
            "metrics": {"disparity": 0.3, "reward": 5.0, "final_gap": 0.2},
            "resolved": {"config": {"fairness_disparity_source": source}},
        }
        return cell, row

    cell, row = old_row("ppo", "fico_eo", "true")  # observes the true disparity
    assert current(row, plan, cell)
    new = with_added_metrics(row, plan, cell)
    assert new["metrics"]["observed_disparity"] == 0.3 and new["derived"] == ["observed_disparity"]
    assert "observed_disparity" not in row["metrics"]  # the file's row is left as it is
    assert current(new, plan, cell) and with_added_metrics(new, plan, cell) is new
    cell, row = old_row("pocar", "fico_eo", "accepted")  # Prop. 3.1: 0 for equal opportunity
    assert current(row, plan, cell)
    assert with_added_metrics(row, plan, cell)["metrics"]["observed_disparity"] == 0.0
    for method, setting, source in (
        ("pocar", "fico_qp", "accepted"),
        ("sellf", "fico_eo", "imputed"),
    ):
        cell, row = old_row(method, setting, source)
        assert with_added_metrics(row, plan, cell) is row and not current(row, plan, cell)
