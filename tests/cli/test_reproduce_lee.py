"""The lee2026 plan and its evaluator, ``quarters`` (Lee et al.'s final-quarter metrics).

The evaluator reads the last complete training episode of a lending strategy; one
episode with data seed S is ``run_quarters(seed=S)`` of the numpy core, so its outputs
must equal the core's final-quarter metrics exactly. Relabelling the groups
(``disadvantaged_group`` 0 vs 1) must negate every signed gap and keep everything else.
One cell of the plan then runs end to end at the plan's own (tiny) budget.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from rllib_fair.reproduce.evaluators import EVALUATORS
from rllib_fair.reproduce.plan import Cell, load_plan
from rllib_fair.reproduce.quarters import GAPS, OUTPUTS, Quarters, last_episode, summarize
from rllib_fair.uncertainty import QuarterlyConfig, run_quarters

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[2]
ENV = "fair/QuarterlyLending-v0"
PATHS = {name: name for name in OUTPUTS}


def _expected(records) -> dict[str, float]:
    """The outputs written out from the core's records (one per decided quarter)."""
    final, first = records[-1].metrics, records[0].metrics
    out = {g: final[g] for g in GAPS}
    out.update({f"abs_{g}": abs(final[g]) for g in GAPS})
    out["cumulative_profit"] = final["cumulative_profit"]
    out["profit"] = final["profit"]
    out["utility_q"] = final["utility_q"]
    out["cumulative_utility"] = final["cumulative_utility"]
    out["min_abs_delta_sr"] = min(abs(r.metrics["delta_sr"]) for r in records)
    out["abs_delta_sr_change"] = abs(final["delta_sr"]) - abs(first["delta_sr"])
    return out


def _trained(strategy: str, seed: int, env_config: dict, iterations: int = 1):
    """An Uncertainty algorithm configured by the evaluator, trained ``iterations`` episodes."""
    from rllib_fair.algorithms.uncertainty.uncertainty import UncertaintyConfig

    config = (
        UncertaintyConfig()
        .environment(ENV, env_config=env_config)
        .training(strategy=strategy, train_batch_size_per_learner=8)
        .env_runners(num_env_runners=0)
        .debugging(seed=seed)
    )
    config = Quarters().configure(config, {})
    assert config.fairness_label_access == "oracle"
    algo = config.build_algo()
    for _ in range(iterations):
        algo.train()
    return algo


def test_the_plan_loads_with_its_cells_and_claims():
    plan = load_plan("lee2026")
    assert plan.evaluation["evaluator"] == "quarters"
    assert EVALUATORS["quarters"] is Quarters
    assert plan.budget == plan.paper_budget == 8  # one episode: the paper's unit
    assert plan.seeds == (0, 20, 40, 60, 80)
    strategies = ("naive", "naive_exploration", "prob_weighted", "uncertainty_aware")
    assert tuple(plan.methods) == (*strategies, "counterfactual")
    assert len(plan.settings) == 18 and len(plan.cells()) == 18 * 5 * 5
    for cell in plan.cells((0,)):
        assert plan.example_path(cell, ROOT).is_file(), cell.id
    assert plan.env_config(Cell("naive", "no_bias", 0)) == {}
    assert plan.env_config(Cell("counterfactual", "l_y=2+l_m_y=2", 0)) == {
        "l_y": 2.0,
        "l_m_y": 2.0,
    }
    assert plan.env_config(Cell("naive", "l_m_y=0.5", 0)) == {"l_m_y": 0.5}
    # every metric is an output of the evaluator; every claim reads one of them
    assert set(plan.evaluation["metrics"].values()) <= set(OUTPUTS)
    claims = {c.id: c for c in plan.claims}
    assert len(claims) == 53
    parity = claims["figs6_10_cf_sr_parity_label_bias"]
    assert (parity.kind, parity.a, parity.threshold) == ("at_most", "counterfactual", 0.05)
    assert parity.settings == ("l_y=4", "l_m_y=4")
    least = claims["fig5_cf_profit_below_naive"]
    assert (least.kind, least.a, least.b, len(least.settings)) == (
        "less",
        "counterfactual",
        "naive",
        13,
    )


@pytest.mark.ray
@pytest.mark.parametrize(
    ("strategy", "env_config"),
    [
        ("prob_weighted", {"dim": 2000, "l_m": 2.0}),
        ("uncertainty_aware", {"dim": 2000, "l_y_b": 4.0}),
        ("counterfactual", {"dim": 2000, "num_partitions": 5, "l_y": 4.0}),
    ],
)
def test_outputs_equal_the_core_on_the_same_seed(ray_session, strategy, env_config):
    algo = _trained(strategy, 7, env_config)
    try:
        got = Quarters().measure(algo, {}, PATHS, {})
    finally:
        algo.stop()
    core = QuarterlyConfig(strategy=strategy).replace(**env_config)
    records = run_quarters(core, seed=7)
    assert len(records) == env_config.get("num_partitions", 8) - 1
    assert got == pytest.approx(_expected(records), rel=0, abs=1e-12)
    assert got["abs_delta_sr"] > 0.0 and got["cumulative_profit"] != 0.0


@pytest.mark.ray
def test_a_longer_run_is_judged_on_its_last_episode(ray_session):
    # two episodes: the second runs on the next data seed the env draws
    algo = _trained("naive_exploration", 3, {"dim": 2000, "l_m_y": 2.0}, iterations=2)
    try:
        got = Quarters().measure(algo, {}, {"sr": "delta_sr", "cp": "cumulative_profit"}, {})
        seeds = [row["data_seed"] for row in algo.quarter_log]
    finally:
        algo.stop()
    assert seeds[:7] == [3] * 7 and len(set(seeds[7:])) == 1 and seeds[7] != 3
    records = run_quarters(
        QuarterlyConfig(strategy="naive_exploration").replace(dim=2000, l_m_y=2.0), seed=seeds[7]
    )
    want = _expected(records)
    assert got == pytest.approx(
        {"sr": want["delta_sr"], "cp": want["cumulative_profit"]}, abs=1e-12
    )


@pytest.mark.ray
@pytest.mark.parametrize(
    ("strategy", "bias"),
    [("counterfactual", {"l_m": 2.0}), ("prob_weighted", {"l_y": 4.0}), ("naive", {"l_y_b": 4.0})],
)
def test_relabelling_the_groups_negates_the_signed_gaps(ray_session, strategy, bias):
    out = []
    for group in (0, 1):
        algo = _trained(strategy, 11, {"dim": 2000, "disadvantaged_group": group, **bias})
        try:
            out.append(Quarters().measure(algo, {}, PATHS, {}))
        finally:
            algo.stop()
    a, b = out
    for key in OUTPUTS:
        if key in GAPS:
            assert b[key] == -a[key], key  # M(0) - M(1) with the groups swapped
        else:
            assert b[key] == a[key], key  # absolute gaps, profits, |Delta SR| summaries
    assert any(abs(a[g]) > 0.01 for g in GAPS)  # a swap of non-trivial gaps


def _log(quarters, seed=0, num_partitions=8):
    metrics = {g: 0.1 for g in GAPS} | {"profit": 1.0, "utility_q": 2.0}
    return [{"data_seed": seed, "quarter": q, "metrics": dict(metrics)} for q in quarters]


def test_last_episode_skips_an_unfinished_one_and_refuses_none():
    full = _log(range(2, 9), seed=1)
    partial = _log(range(2, 5), seed=2)
    assert last_episode(full + partial, 8) == full
    assert last_episode(full, 8) == full
    # quarters 2..8 of two different data seeds are not one episode
    mixed = _log(range(2, 5), seed=1) + _log(range(5, 9), seed=2)
    with pytest.raises(ValueError) as err:
        last_episode(mixed, 8)
    assert str(err.value) == (
        "quarter_log: 7 quarters hold no complete episode of 8 quarters; valid: a budget of "
        "at least 8 env steps"
    )
    assert summarize(full)["cumulative_profit"] == pytest.approx(7.0)


def test_bad_inputs_give_one_line():
    from ray.rllib.algorithms.ppo import PPOConfig

    with pytest.raises(ValueError) as err:
        Quarters().configure(PPOConfig(), {})
    assert str(err.value).startswith("algorithm: 'PPOConfig' is invalid for quarters; valid:")
    with pytest.raises(ValueError) as err:
        Quarters().measure(None, {}, {"x": "return"}, {})
    assert str(err.value).startswith("evaluation.metrics.x: 'return' is invalid for quarters;")
    # a gap that is not a number is an error naming the path (a cell never writes a NaN)
    log = _log(range(2, 9))
    log[-1]["metrics"]["delta_fpr"] = float("nan")
    algo = SimpleNamespace(config=SimpleNamespace(env_config={}), quarter_log=log)
    assert Quarters().measure(algo, {}, {"sr": "delta_sr"}, {}) == {"sr": 0.1}
    with pytest.raises(ValueError, match=r"^metric path 'abs_delta_fpr': nan is not finite$"):
        Quarters().measure(algo, {}, {"sr": "delta_sr", "fpr": "abs_delta_fpr"}, {})
    observed = _log(range(2, 9))
    for row in observed:
        del row["metrics"]["profit"]
    with pytest.raises(ValueError, match=r"^quarter metrics: no 'profit'; valid: oracle"):
        summarize(observed)


@pytest.mark.ray
def test_one_cell_runs_end_to_end(ray_session):
    from rllib_fair.cli.reproduce import run_cell

    plan = load_plan("lee2026")
    row = run_cell(plan, Cell("counterfactual", "l_m=2", 20))
    cell = row["cell"]
    assert (cell["method"], cell["setting"], cell["seed"]) == ("counterfactual", "l_m=2", 20)
    assert row["example"] == "tuned_examples/uncertainty/quarterly_lending-counterfactual.yaml"
    assert row["env_steps"] == 8 and row["budget"] == 8
    # the cell is the core's run with the cell's seed, at the tuned example's 20,000 rows
    records = run_quarters(QuarterlyConfig(strategy="counterfactual").replace(l_m=2.0), seed=20)
    want = _expected(records)
    assert set(row["metrics"]) == set(plan.evaluation["metrics"])
    for name, path in plan.evaluation["metrics"].items():
        assert row["metrics"][name] == pytest.approx(want[path], rel=0, abs=1e-12), name
