"""The yin2023 plan and its evaluator, ``replicator_initial_states`` (Yin et al.'s grid).

The evaluator must give the numbers of the grid protocol: one greedy episode of the final
policy from each initial state (``rollouts`` of ``rllib_fair/algorithms/rtd3/evaluation``),
summed per episode and averaged over the states. Here it is compared, on an untrained
TD3 policy, with those rollouts computed directly on an env built by hand; one cell of the
plan then runs end to end with a tiny budget.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from rllib_fair.algorithms.rtd3.evaluation import GRID_STATES, rllib_greedy_policy, rollouts
from rllib_fair.envs.replicator import ReplicatorEnv
from rllib_fair.reproduce.evaluators import EVALUATORS, ReplicatorInitialStates
from rllib_fair.reproduce.plan import Cell, load_plan
from tests.cli._td3 import untrained_td3

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = ("cum_loss", "cum_disparity", "mean_step_loss", "final_q_mean", "final_q_gap")
PATHS = {name: name for name in OUTPUTS}
TASK = {"max_steps": 100, "loss": "zero_one", "disparity": "eop"}


def _expected(out: dict) -> dict:
    """The grid protocol's numbers from the rollouts' arrays, written out here."""
    loss, disp, q = out["loss"], out["disparity"], out["q"]
    states = loss.shape[0]
    return {
        "cum_loss": sum(loss[i].sum() for i in range(states)) / states,
        "cum_disparity": sum(disp[i].sum() for i in range(states)) / states,
        "mean_step_loss": loss.sum() / loss.size,
        "final_q_mean": sum(q[i, -1, 0] + q[i, -1, 1] for i in range(states)) / (2 * states),
        "final_q_gap": sum(abs(q[i, -1, 0] - q[i, -1, 1]) for i in range(states)) / states,
    }


@pytest.fixture(scope="module")
def td3_algo(ray_session):
    """An untrained TD3 on the synthetic replicator task (no training, local runner only)."""
    yield from untrained_td3(TASK, seed=3)


def test_the_plan_loads_with_its_cells_and_claims():
    plan = load_plan("yin2023")
    assert plan.evaluation["evaluator"] == "replicator_initial_states"
    assert plan.budget == plan.paper_budget == 200_000
    assert plan.seeds == (0, 1, 2, 3, 4)
    assert set(plan.methods) == {"td3", "rtd3", "myopic", "myopic_fair", "maxmin", "maxmin_fair"}
    assert set(plan.settings) == {"replicator_adult", "replicator"}
    assert len(plan.cells()) == 6 * 2 * 5
    runs = {}
    for cell in plan.cells((0,)):
        path = plan.example_path(cell, ROOT)
        assert path.is_file(), cell.id
        runs[cell.method, cell.setting] = path.name
    assert runs["myopic_fair", "replicator"] == "replicator-myopic_fair.yaml"
    assert runs["td3", "replicator_adult"] == "replicator_adult-td3.yaml"
    # every cell gets the reference run's task on its population
    assert plan.env_config(Cell("myopic", "replicator_adult", 0))["max_steps"] == 150
    assert plan.env_config(Cell("myopic", "replicator", 0)) == TASK
    # the plan's states are the grid of the paper's figures
    assert ReplicatorInitialStates.initial_states(plan.evaluation) == list(GRID_STATES)
    claims = {c.id: c for c in plan.claims}
    assert (claims["rtd3_disparity_below_td3"].kind, claims["rtd3_disparity_below_td3"].a) == (
        "less",
        "rtd3",
    )
    assert claims["rtd3_loss_above_td3"].kind == "greater"
    assert set(claims["rtd3_disparity_below_td3"].settings) == set(plan.settings)


@pytest.mark.ray
def test_evaluator_gives_the_grid_protocols_numbers(td3_algo):
    evaluator = EVALUATORS["replicator_initial_states"]()
    got = evaluator.measure(td3_algo, {}, PATHS, {})
    direct = rollouts(ReplicatorEnv(**TASK), rllib_greedy_policy(td3_algo), GRID_STATES)
    assert direct["loss"].shape == (16, 100)
    want = _expected(direct)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert got["cum_loss"] == pytest.approx(100 * got["mean_step_loss"])
    # the metric names are the plan's: one output under two names
    assert evaluator.measure(td3_algo, {}, {"L": "cum_loss", "D": "cum_disparity"}, {}) == (
        pytest.approx({"L": want["cum_loss"], "D": want["cum_disparity"]})
    )


@pytest.mark.ray
def test_evaluator_reads_states_and_horizon_from_the_plan(td3_algo):
    evaluator = ReplicatorInitialStates()
    states = [[0.3, 0.7], [0.9, 0.1]]
    got = evaluator.measure(td3_algo, {}, PATHS, {"initial_states": states, "horizon": 7})
    direct = rollouts(
        ReplicatorEnv(**{**TASK, "max_steps": 7}), rllib_greedy_policy(td3_algo), states
    )
    assert direct["q"].shape == (2, 8, 2)
    assert got == pytest.approx(_expected(direct), rel=1e-12, abs=1e-12)
    # fewer steps, a different number: the horizon is used
    full = evaluator.measure(td3_algo, {}, PATHS, {"initial_states": states})
    assert got["cum_loss"] < full["cum_loss"]


@pytest.mark.ray
def test_non_finite_metric_is_an_error(td3_algo, monkeypatch):
    import rllib_fair.algorithms.rtd3.evaluation as evaluation

    real = evaluation.rollouts

    def with_nan(env, act, states):
        out = real(env, act, states)
        out["disparity"][0, 0] = np.nan
        return out

    monkeypatch.setattr(evaluation, "rollouts", with_nan)
    evaluator = ReplicatorInitialStates()
    assert evaluator.measure(td3_algo, {}, {"L": "cum_loss"}, {"initial_states": [[0.5, 0.5]]})
    with pytest.raises(ValueError, match=r"^metric path 'cum_disparity': nan is not finite$"):
        evaluator.measure(td3_algo, {}, PATHS, {"initial_states": [[0.5, 0.5]]})


@pytest.mark.parametrize(
    "evaluation, message",
    [
        ({"initial_states": []}, "evaluation.initial_states: [] is invalid; valid: a non-empty"),
        ({"initial_states": [[0.2, 1.5]]}, "entry [0.2, 1.5] is invalid; valid: a non-empty"),
        ({"initial_states": [[0.2]]}, "entry [0.2] is invalid"),
        ({"horizon": 0}, "evaluation.horizon: 0 is invalid; valid: an integer >= 1"),
        ({"explore": True}, "evaluation.explore: True is invalid for replicator_initial_states"),
    ],
)
def test_bad_evaluation_settings_give_one_line(evaluation, message):
    from rllib_fair.algorithms.td3 import TD3Config

    config = TD3Config().environment("fair/Replicator-v0", env_config=dict(TASK))
    with pytest.raises(ValueError) as info:
        ReplicatorInitialStates().configure(config, evaluation)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.ray
def test_a_non_replicator_env_and_an_unknown_output_are_refused(td3_algo):
    from rllib_fair.algorithms.td3 import TD3Config

    config = TD3Config().environment("fair/LendingDrift-v0")
    with pytest.raises(ValueError, match=r"^env: 'fair/LendingDrift-v0' is invalid for "):
        ReplicatorInitialStates().configure(config, {})
    with pytest.raises(ValueError, match=r"^evaluation.metrics.x: 'bias' is invalid for "):
        ReplicatorInitialStates().measure(td3_algo, {}, {"x": "bias"}, {})


@pytest.mark.ray
@pytest.mark.parametrize(
    "method, example",
    [("rtd3", "rtd3/replicator-rtd3.yaml"), ("myopic_fair", "myopic/replicator-myopic_fair.yaml")],
)
def test_one_cell_runs_end_to_end(ray_session, method, example):
    from rllib_fair.cli.reproduce import run_cell

    plan = load_plan("yin2023")
    # a tiny budget, and two of the 16 states (the myopic solver costs ~5 ms a step)
    evaluation = {**plan.evaluation, "initial_states": [[0.2, 0.8], [0.6, 0.4]]}
    plan = plan.__class__(**{**plan.__dict__, "budget": 200, "evaluation": evaluation})
    row = run_cell(plan, Cell(method, "replicator", 1))
    assert row["cell"] == {"method": method, "setting": "replicator", "seed": 1}
    assert row["example"] == f"tuned_examples/{example}"
    assert row["env_steps"] >= 200
    m = row["metrics"]
    assert set(m) == set(OUTPUTS)
    # episodes of the synthetic horizon (100 steps): the cumulative loss is 100 steps'
    assert m["cum_loss"] == pytest.approx(100 * m["mean_step_loss"])
    assert 0.0 <= m["final_q_gap"] <= 1.0 and 0.0 <= m["final_q_mean"] <= 1.0
    assert m["cum_disparity"] >= 0.0
