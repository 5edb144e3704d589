"""The plans of Yin et al.'s other figures and of L-UCBFair's binding constraint.

``yin2023_tp_dp`` (Fig. 1 on its own task), ``yin2023_fig2b`` (Fig. 2 (b)),
``lucbfair_figs`` (L-UCBFair's Figs. 2 (a), 3, 1 (c)) and ``lucbfair_binding`` (the
setting where L-UCBFair's DP constraint binds), and the two outputs these plans added to
``replicator_initial_states`` (``final_q_min``, ``loss_first10``). Each plan loads with its
cells, examples and claims; the new outputs are computed here from the rollouts directly;
one tiny cell of each new method runs end to end; the binding plan's L-UCBFair cell at its
full budget gives the numbers its tuned example states.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from rllib_fair.algorithms.rtd3.evaluation import GRID_STATES, rllib_greedy_policy, rollouts
from rllib_fair.envs.replicator import ReplicatorEnv
from rllib_fair.reproduce.evaluators import EVALUATORS
from rllib_fair.reproduce.plan import Cell, load_plan
from tests.cli._td3 import untrained_td3

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[2]
TASK = {"max_steps": 100, "loss": "tp", "disparity": "qr", "threshold_range": [-3.0, 3.0]}
GRID = ("cum_loss", "cum_disparity", "mean_step_loss", "final_q_mean", "final_q_gap")
OUTPUTS = GRID + ("final_q_min", "loss_first10")


def _small(plan, budget: int, states=((0.2, 0.8), (0.6, 0.4))):
    """The plan with ``budget`` env steps per cell (methods' own budgets kept) and two states."""
    evaluation = {**plan.evaluation}
    if evaluation["evaluator"] == "replicator_initial_states":
        evaluation["initial_states"] = [list(s) for s in states]
    methods = {
        k: {**v, "budget": min(int(v["budget"]), budget)} if "budget" in v else v
        for k, v in plan.methods.items()
    }
    return plan.__class__(
        **{**plan.__dict__, "budget": budget, "evaluation": evaluation, "methods": methods}
    )


@pytest.mark.parametrize(
    "name, methods, settings, cells, evaluator",
    [
        (
            "yin2023_tp_dp",
            {"td3", "rtd3", "rtd3_ref", "lucbfair", "myopic", "myopic_fair", "maxmin"}
            | {"maxmin_fair"},
            {"replicator_adult"},
            8 * 5,
            "replicator_initial_states",
        ),
        (
            "yin2023_fig2b",
            {"rtd3", "lucbfair", "myopic_fair"},
            {"replicator"},
            3 * 5,
            "replicator_initial_states",
        ),
        ("lucbfair_figs", {"lucbfair", "myopic_fair"}, {"synthetic_tp_dp"}, 2 * 5, None),
        (
            "lucbfair_binding",
            {"lucbfair", "lucbfair_xi0", "uniform"},
            {"replicator"},
            3 * 8,
            "final_training",
        ),
    ],
)
def test_each_plan_loads_with_its_cells_examples_and_claims(
    name, methods, settings, cells, evaluator
):
    plan = load_plan(name)
    assert set(plan.methods) == methods and set(plan.settings) == settings
    assert len(plan.cells()) == cells
    if evaluator is not None:
        assert plan.evaluation["evaluator"] == evaluator
    for cell in plan.cells(plan.seeds[:1]):
        assert plan.example_path(cell, ROOT).is_file(), cell.id
    metrics = set(plan.evaluation["metrics"])
    assert plan.claims and all(c.metric in metrics for c in plan.claims)
    assert plan.budget_note


def test_the_plans_give_each_cell_its_task_and_budget():
    tp_dp = load_plan("yin2023_tp_dp")
    cell = Cell("lucbfair", "replicator_adult", 0)
    assert tp_dp.env_config(cell) == {"max_steps": 150, "loss": "tp", "disparity": "dp"}
    assert tp_dp.budget_for(cell) == 45_000 and tp_dp.budget_for(Cell("td3", cell.setting, 0))
    assert tp_dp.overrides(Cell("rtd3_ref", cell.setting, 0))["relaxation_sharpness"] == 20.0
    assert tp_dp.example_path(Cell("rtd3_ref", cell.setting, 0), ROOT).name == (
        "replicator_adult-rtd3.yaml"
    )
    fig2b = load_plan("yin2023_fig2b")
    assert fig2b.env_config(Cell("rtd3", "replicator", 0)) == TASK
    assert fig2b.budget_for(Cell("lucbfair", "replicator", 0)) == 50_000
    figs = load_plan("lucbfair_figs")
    cell = Cell("lucbfair", "synthetic_tp_dp", 0)
    assert figs.example_path(cell, ROOT).name == "replicator-lucbfair.yaml"
    assert figs.env_config(cell)["disparity"] == "dp" and figs.budget_for(cell) == 50_000
    assert set(figs.curves["metrics"]) == {"loss", "disparity", "Y", "final_q"}
    binding = load_plan("lucbfair_binding")
    assert binding.budget == 3000  # K = 150 episodes of H = 20
    over = {m: binding.overrides(Cell(m, "replicator", 0)) for m in binding.methods}
    assert over["lucbfair_xi0"]["dual_bound_xi"] == 0.0
    assert all(o["metrics_num_episodes_for_smoothing"] == 30 for o in over.values())
    assert "dual_bound_xi" not in over["lucbfair"] and "softmax_alpha" not in over["lucbfair"]


def test_the_uniform_method_draws_every_region_alike():
    """softmax_alpha 1e-12: the region probabilities are uniform for any planned values."""
    from rllib_fair.algorithms.lucbfair import lsvi

    binding = load_plan("lucbfair_binding")
    alpha = binding.overrides(Cell("uniform", "replicator", 0))["softmax_alpha"]
    rng = np.random.default_rng(0)
    H, xi = 20.0, 2.0  # Q values lie in [0, H]; the dual variable in [0, xi]
    q_r, q_g = rng.uniform(0, H, (50, 25)), rng.uniform(0, H, (50, 25))
    probs = lsvi.softmax_policy(q_r, q_g, xi, alpha)
    np.testing.assert_allclose(probs, 1.0 / 25, rtol=1e-9)
    # the tuned example's own alpha (5) does not
    assert lsvi.softmax_policy(q_r, q_g, xi, 5.0).max() > 0.5


@pytest.fixture(scope="module")
def td3_algo(ray_session):
    """An untrained TD3 on the Fig. 2 (b) task (no training, local runner only)."""
    yield from untrained_td3(TASK, seed=5)


@pytest.mark.ray
def test_final_q_min_and_loss_first10_from_the_rollouts(td3_algo):
    evaluator = EVALUATORS["replicator_initial_states"]()
    paths = {name: name for name in OUTPUTS}
    got = evaluator.measure(td3_algo, {}, paths, {})
    direct = rollouts(ReplicatorEnv(**TASK), rllib_greedy_policy(td3_algo), GRID_STATES)
    q_final, loss = direct["q"][:, -1], direct["loss"]
    assert got["final_q_min"] == pytest.approx(
        min(q_final[i, k] for i in range(16) for k in (0, 1))
    )
    assert got["loss_first10"] == pytest.approx(
        sum(loss[i, t] for i in range(16) for t in range(10)) / 160, rel=1e-12
    )
    assert got["final_q_min"] <= got["final_q_mean"]
    assert got["cum_loss"] == pytest.approx(100 * got["mean_step_loss"])
    # the plan's states and horizon are used
    few = evaluator.measure(td3_algo, {}, paths, {"initial_states": [[0.9, 0.1]], "horizon": 5})
    one = rollouts(
        ReplicatorEnv(**{**TASK, "max_steps": 5}), rllib_greedy_policy(td3_algo), [(0.9, 0.1)]
    )
    assert few["final_q_min"] == pytest.approx(one["q"][0, -1].min())
    assert few["loss_first10"] == pytest.approx(one["loss"][0].mean())  # 5 steps < 10


@pytest.mark.ray
@pytest.mark.parametrize(
    "plan_name, method, setting, example, horizon",
    [
        ("yin2023_tp_dp", "rtd3_ref", "replicator_adult", "rtd3/replicator_adult-rtd3", 150),
        (
            "yin2023_tp_dp",
            "lucbfair",
            "replicator_adult",
            "lucbfair/replicator_adult-lucbfair",
            150,
        ),
        ("lucbfair_figs", "lucbfair", "synthetic_tp_dp", "lucbfair/replicator-lucbfair", 100),
        ("yin2023_fig2b", "lucbfair", "replicator", "lucbfair/replicator-lucbfair", 100),
    ],
)
def test_one_cell_of_each_grid_method_runs_end_to_end(
    ray_session, plan_name, method, setting, example, horizon
):
    from rllib_fair.cli.reproduce import run_cell

    plan = _small(load_plan(plan_name), 2 * horizon)
    row = run_cell(plan, Cell(method, setting, 1))
    assert row["example"] == f"tuned_examples/{example}.yaml"
    assert row["env_steps"] >= 2 * horizon
    m = row["metrics"]
    assert set(m) == set(plan.evaluation["metrics"])
    assert 0.0 <= m["final_q_min"] <= m["final_q_mean"] <= 1.0
    if "cum_loss" in m:
        assert m["cum_loss"] == pytest.approx(horizon * m["mean_step_loss"])
    if plan.curves:  # lucbfair_figs follows Fig. 3 over the two training episodes
        assert len(row["curves"]["loss"]) == 2


@pytest.mark.ray
def test_binding_cells_run_end_to_end(ray_session):
    from rllib_fair.cli.reproduce import run_cell

    plan = _small(load_plan("lucbfair_binding"), 200)  # 10 episodes of H = 20
    rows = {m: run_cell(plan, Cell(m, "replicator", 0)) for m in ("lucbfair_xi0", "uniform")}
    for row in rows.values():
        assert row["env_steps"] == 200 and set(row["metrics"]) == {"disparity", "loss", "Y"}
        assert row["example"] == "tuned_examples/lucbfair/replicator-lucbfair-binding.yaml"
    assert rows["lucbfair_xi0"]["metrics"]["Y"] == 0.0  # xi = 0 pins the dual variable
    # the same env seeds, another policy: other episodes
    assert rows["uniform"]["metrics"]["loss"] != rows["lucbfair_xi0"]["metrics"]["loss"]


@pytest.mark.ray
def test_binding_lucbfair_cell_gives_the_tuned_examples_numbers(ray_session):
    """The full cell (150 episodes, seed 0): the example's stated last-30 means."""
    from rllib_fair.cli.reproduce import run_cell

    row = run_cell(load_plan("lucbfair_binding"), Cell("lucbfair", "replicator", 0))
    m = row["metrics"]
    assert row["env_steps"] == 3000
    # tuned_examples/lucbfair/replicator-lucbfair-binding.yaml: loss 0.548, squared DP
    # 0.103, mean Y 0.44 over the last 30 episodes of seed 0
    assert m["loss"] == pytest.approx(0.548, abs=5e-4)
    assert m["disparity"] == pytest.approx(0.103, abs=5e-4)
    assert m["Y"] == pytest.approx(0.44, abs=5e-3)
    assert len(row["curves"]["Y"]) == 50


@pytest.mark.ray
def test_fig2b_myopic_fair_cell_gives_the_former_scripts_numbers(ray_session):
    """docs/results/yin2023_fig2b.md (the former script, seed 0): Myopic-Fair from the 16
    states, cumulative loss 92.873 and squared QR disparity 0.156; it learns nothing, so
    the plan's one iteration gives them. (The plan's L-UCBFair cells at 50,000 steps also
    equal that table's 93.043 / 1.279: its saturated plan's argmax is accept-all; too long
    for a test.)"""
    from rllib_fair.cli.reproduce import run_cell

    m = run_cell(load_plan("yin2023_fig2b"), Cell("myopic_fair", "replicator", 0))["metrics"]
    assert m["cum_loss"] == pytest.approx(92.873, abs=5e-4)
    assert m["cum_disparity"] == pytest.approx(0.156, abs=5e-4)
    assert m["final_q_mean"] < 1e-4 and m["mean_step_loss"] == pytest.approx(0.929, abs=5e-4)
