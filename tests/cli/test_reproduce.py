"""The reproduction engine: plans, statistics, merging, and a tiny plan run end to end.

The end-to-end test runs ``rllib-fair reproduce`` on a four-cell plan one cell at a time,
kills it (SIGKILL, the whole process group) once the first cell's file exists, and
continues it with ``--resume``: the finished cell is not rerun, the others are, and the
merge gives a verdict per claim. A deleted cell rerun gives the same numbers (seeded).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from rllib_fair.reproduce import stats
from rllib_fair.reproduce.merge import cell_path, finished, merge, projected_wall_hours
from rllib_fair.reproduce.plan import Cell, PlanError, load_plan, parse_plan, shipped_plans

torch.set_num_threads(1)

TINY = {
    "name": "tiny",
    "title": "Tiny plan",
    "seeds": [0, 1],
    "budget": 400,
    "example": "tuned_examples/{method}/{setting}-{method}.yaml",
    "methods": {"ppo": {"label": "G-PPO"}, "pocar": {"label": "A-PPO"}},
    "settings": {
        "lending": {
            "notion": "equal_opportunity",
            "env_config": {"max_steps": 100},
            "config": {"train_batch_size_per_learner": 200, "minibatch_size": 100, "num_epochs": 1},
        }
    },
    "evaluation": {
        "evaluator": "greedy_episodes",
        "episodes": 2,
        "metrics": {"bias": "fairness.{notion}.bias", "reward_per_step": "reward_per_step"},
    },
    "paper": {"lending": {"ppo": {"bias": 0.16}, "pocar": {"bias": 0.045}}},
    "claims": [
        {"id": "fairer", "text": "A-PPO below G-PPO", "metric": "bias", "less": ["pocar", "ppo"]},
        {"id": "small", "text": "A-PPO at most 0.5", "metric": "bias", "at_most": ["pocar", 0.5]},
    ],
}


# ----------------------------------------------------------------------------- plans
def test_tiny_plan_cells_and_overrides():
    plan = parse_plan(
        {**TINY, "cells": [{"method": "ppo", "setting": "lending", "config": {"lr": 0.1}}]}
    )
    cells = plan.cells()
    assert [c.id for c in cells] == [
        "ppo__lending__s0",
        "pocar__lending__s0",
        "ppo__lending__s1",
        "pocar__lending__s1",
    ]
    over = plan.overrides(Cell("ppo", "lending", 1))
    assert over["lr"] == 0.1 and over["seed"] == 1 and over["num_env_runners"] == 0
    assert over["minibatch_size"] == 100
    assert "lr" not in plan.overrides(Cell("pocar", "lending", 1))
    assert plan.env_config(Cell("pocar", "lending", 0)) == {"max_steps": 100}
    assert plan.metric_paths("lending")["bias"] == "fairness.equal_opportunity.bias"
    assert [c.id for c in plan.cells((1,))] == ["ppo__lending__s1", "pocar__lending__s1"]
    assert plan.cells((7,)) == []  # not a seed of the plan (the command line refuses it)
    own = parse_plan({**TINY, "methods": {**TINY["methods"], "ppo": {"budget": 7}}})
    assert own.budget_for(Cell("ppo", "lending", 0)) == 7
    assert own.budget_for(Cell("pocar", "lending", 0)) == 400


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"budget": 0}, "budget: 0 is invalid; valid: an integer >= 1"),
        ({"seeds": [1, 1]}, "seeds: [1, 1] is invalid"),
        ({"colour": 1}, "colour: 1 is invalid; valid: a key among"),
        ({"methods": {}}, "methods: {} is invalid; valid: a non-empty mapping"),
        ({"evaluation": {**TINY["evaluation"], "evaluator": "x"}}, "evaluation.evaluator: 'x'"),
        (
            {"claims": [{"id": "a", "text": "t", "metric": "bias", "less": ["pocar", "sac"]}]},
            "claims[0].less[1]: 'sac' is invalid; valid: another of the plan's methods",
        ),
        (
            {"claims": [{"id": "a", "text": "t", "metric": "gap", "less": ["pocar", "ppo"]}]},
            "claims[0].metric: 'gap' is invalid; valid: one of bias, reward_per_step",
        ),
        (
            {"claims": [{"id": "a", "text": "t", "metric": "bias", "at_most": ["ppo", "x"]}]},
            "claims[0].at_most[1]: 'x' is invalid; valid: a number",
        ),
        ({"paper": {"lending": {"ppo": {"bias": "high"}}}}, "paper.lending.ppo.bias: 'high'"),
        ({"methods": {"ppo": {"budget": 0}}}, "methods.ppo.budget: 0 is invalid"),
        ({"curves": {"metrics": {}}}, "curves.metrics: {} is invalid; valid: a non-empty mapping"),
        ({"curves": {"points": 0, "metrics": {"r": "x"}}}, "curves.points: 0 is invalid"),
        ({"curves": {"metrics": {"env_steps": "x"}}}, "curves.metrics key: 'env_steps'"),
        ({"curves": {"metrics": {"r": 3}}}, "curves.metrics.r: 3 is invalid"),
        ({"curves": {"every": 3}}, "curves: {'every': 3} is invalid"),
        # an evaluator with named outputs: a path that is none of them fails at load
        (
            {"evaluation": {"evaluator": "lending_drift_sampled", "metrics": {"bias": "gap"}}},
            "evaluation.metrics.bias: 'gap' is invalid; valid: an output of "
            "lending_drift_sampled: profit, gain_gap, G0, G1, lambda, approval_rate,",
        ),
        (
            {"evaluation": {"evaluator": "deployment", "metrics": {"bias": "fairness.x.bias"}}},
            "evaluation.metrics.bias: 'fairness.x.bias' is invalid; valid: an output of "
            "deployment: disparity,",
        ),
        (
            {"evaluation": {"evaluator": "quarters", "metrics": {"bias": "profit_total"}}},
            "evaluation.metrics.bias: 'profit_total' is invalid; valid: an output of quarters:",
        ),
        (
            {"settings": {"lending": {"notion": "x", "evaluation": {"explore": True}}}},
            "settings.lending.evaluation: {'explore': True} is invalid; valid: a mapping of "
            "episodes, env_config, steps",
        ),
        (
            {"settings": {"lending": {"notion": "x", "evaluation": {"steps": 100}}}},
            "settings.lending.evaluation.steps: 100 is invalid; valid: nothing: only "
            "deployment read",
        ),
        (
            {
                "settings": {"lending": {"notion": "x", "evaluation": {"steps": 0}}},
                "evaluation": {"evaluator": "deployment", "metrics": {"bias": "disparity"}},
            },
            "settings.lending.evaluation.steps: 0 is invalid; valid: an integer >= 1",
        ),
        (
            {"settings": {"lending": {"notion": "x", "evaluation": {"env_config": {}}}}},
            "settings.lending.evaluation.env_config: {} is invalid; valid: a non-empty mapping",
        ),
        (
            {
                "settings": {"lending": {"notion": "x", "evaluation": {"env_config": {"a": 1}}}},
                "evaluation": {**TINY["evaluation"], "evaluator": "final_training"},
            },
            "settings.lending.evaluation.env_config: {'a': 1} is invalid; valid: nothing: only "
            "greedy_episodes",
        ),
        (
            {
                "settings": {"lending": {"notion": "x", "evaluation": {"episodes": 3}}},
                "evaluation": {**TINY["evaluation"], "evaluator": "final_training"},
            },
            "settings.lending.evaluation.episodes: 3 is invalid; valid: nothing: only "
            "greedy_episodes, lending_drift_sampled read",
        ),
        (
            {"settings": {"lending": {"notion": "x", "evaluation": {"episodes": 0}}}},
            "settings.lending.evaluation.episodes: 0 is invalid; valid: an integer >= 1",
        ),
    ],
)
def test_bad_plan_entries_give_one_line(change, message):
    with pytest.raises(PlanError) as err:
        parse_plan({**TINY, **change})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_settings_own_episodes_reach_its_cells_setup_and_evaluation_only():
    from rllib_fair.cli.reproduce import cell_config
    from rllib_fair.reproduce.plan import REPO_ROOT

    lending = TINY["settings"]["lending"]
    plan = parse_plan(
        {
            **TINY,
            "settings": {
                "lending": lending,
                "lending_long": {
                    **lending,
                    "example_setting": "lending",
                    "evaluation": {"episodes": 7, "env_config": {"max_steps": 150}},
                },
            },
        }
    )
    short, long = Cell("ppo", "lending", 0), Cell("ppo", "lending_long", 0)
    assert plan.evaluation_for("lending") == plan.evaluation
    own = {"episodes": 7, "env_config": {"max_steps": 150}}
    assert plan.evaluation_for("lending_long") == {**plan.evaluation, **own}
    # the setup records the setting's protocol: a changed override stales its cells only
    assert plan.setup(long)["evaluation"]["episodes"] == 7
    assert plan.setup(short)["evaluation"]["episodes"] == 2
    assert {k: v for k, v in plan.setup(long).items() if k != "evaluation"} == {
        k: v for k, v in plan.setup(short).items() if k != "evaluation"
    }
    # and the evaluation runner runs that many episodes, on its own env settings
    config = cell_config(plan, long, REPO_ROOT)[0]
    assert config.evaluation_duration == 7
    assert config.evaluation_config["env_config"] == {"max_steps": 150}
    assert config.env_config["max_steps"] == 100  # training keeps the setting's
    config = cell_config(plan, short, REPO_ROOT)[0]
    assert config.evaluation_duration == 2 and "env_config" not in config.evaluation_config
    # RLlib's evaluate() runs them: 150-step episodes where training runs 100
    config, evaluator, _ = cell_config(plan, long, REPO_ROOT)
    algo = config.build_algo()
    try:
        assert algo.eval_env_runner.config.explore is False  # the plan's (greedy)
        assert algo.env_runner.config.explore is True
        ev = algo.evaluate()
        assert ev["env_runners"]["episode_len_mean"] == 150
        assert ev["env_runners"]["num_episodes"] == 7
    finally:
        algo.stop()


def test_missing_key_and_unknown_plan():
    data = dict(TINY)
    del data["budget"]
    with pytest.raises(PlanError, match="budget: missing"):
        parse_plan(data)
    with pytest.raises(
        PlanError, match="PLAN: 'no-such-plan' is invalid; valid: a plan file or one of"
    ):
        load_plan("no-such-plan")


def test_every_named_evaluator_is_an_evaluator_and_the_base_reads_finite_paths():
    from rllib_fair.reproduce.evaluator_base import Evaluator
    from rllib_fair.reproduce.evaluators import EVALUATORS

    assert EVALUATORS and all(issubclass(c, Evaluator) for c in EVALUATORS.values())
    base = Evaluator()
    result = {"a": {"b": 2.5, "n": float("nan"), "s": "x"}}
    assert base.configure("config", {}) == "config"
    assert base.measure(None, result, {"m": "a.b"}, {}) == {"m": 2.5}
    for path, message in (
        ("a.n", "'a.n': nan is not finite"),
        ("a.s", "'a.s': 'x' is not a number"),
        ("a.c", "'a.c': no 'c' in the result"),
    ):
        with pytest.raises(ValueError, match=message):
            base.measure(None, result, {"m": path}, {})


@pytest.mark.parametrize("name", sorted(shipped_plans()))
def test_shipped_plans_load_and_name_existing_examples(name):
    plan = load_plan(name)
    root = Path(__file__).resolve().parents[2]
    for cell in plan.cells():
        assert plan.example_path(cell, root).is_file(), cell.id
    assert len(plan.seeds) >= 5, "the campaign runs at least 5 seeds per cell"


def test_extends_replaces_top_level_keys_and_refuses_cycles_and_a_shared_name(
    tmp_path, monkeypatch
):
    base, k500 = load_plan("lucbfair_binding"), load_plan("lucbfair_binding_k500")
    assert (k500.name, k500.budget, base.budget) == ("lucbfair_binding_k500", 10000, 3000)
    assert k500.methods == base.methods and k500.claims == base.claims
    assert k500.evaluation == base.evaluation and k500.seeds == base.seeds
    smoothing = "metrics_num_episodes_for_smoothing"
    assert base.settings["replicator"]["config"][smoothing] == 30
    assert k500.settings["replicator"]["config"][smoothing] == 50
    assert [c.id for c in k500.cells()] == [c.id for c in base.cells()]

    (tmp_path / "base.yaml").write_text(yaml.safe_dump({**TINY, "name": "base"}))
    (tmp_path / "child.yaml").write_text(
        yaml.safe_dump({"extends": "base.yaml", "name": "child", "budget": 7})
    )
    child = load_plan(tmp_path / "child.yaml")
    assert (child.name, child.budget, child.seeds) == (
        "child",
        7,
        load_plan(tmp_path / "base.yaml").seeds,
    )
    (tmp_path / "nameless.yaml").write_text(yaml.safe_dump({"extends": "base.yaml", "budget": 7}))
    with pytest.raises(PlanError, match="^name: missing; a plan that extends 'base.yaml'"):
        load_plan(tmp_path / "nameless.yaml")
    (tmp_path / "a.yaml").write_text(yaml.safe_dump({"extends": "b.yaml", "name": "a"}))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump({"extends": "a.yaml", "name": "b"}))
    with pytest.raises(PlanError, match="^extends: 'a.yaml' is invalid; valid: a plan that does"):
        load_plan(tmp_path / "a.yaml")
    (tmp_path / "lost.yaml").write_text(yaml.safe_dump({"extends": "nowhere", "name": "x"}))
    with pytest.raises(PlanError, match="^extends: 'nowhere' is invalid; valid: a plan file"):
        load_plan(tmp_path / "lost.yaml")
    # a name shared with any base would overwrite that base's cells
    (tmp_path / "same.yaml").write_text(yaml.safe_dump({"extends": "base.yaml", "name": "base"}))
    (tmp_path / "grand.yaml").write_text(yaml.safe_dump({"extends": "child.yaml", "name": "base"}))
    for file in ("same.yaml", "grand.yaml"):
        with pytest.raises(PlanError, match=r"^name: 'base' is invalid; valid: a name other than"):
            load_plan(tmp_path / file)
    # a base path is relative to the extending plan's folder (or absolute), never to the
    # current directory
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "orphan.yaml").write_text(
        yaml.safe_dump({"extends": "base.yaml", "name": "orphan"})
    )
    monkeypatch.chdir(tmp_path)  # base.yaml is here, not beside orphan.yaml
    with pytest.raises(PlanError, match="^extends: 'base.yaml' is invalid; valid: a plan file"):
        load_plan(elsewhere / "orphan.yaml")
    (elsewhere / "orphan.yaml").write_text(
        yaml.safe_dump({"extends": str(tmp_path / "base.yaml"), "name": "orphan"})
    )
    assert load_plan(elsewhere / "orphan.yaml").budget == load_plan(tmp_path / "base.yaml").budget


# ----------------------------------------------------------------------------- statistics
def test_mean_interval_exact():
    iv = stats.mean_interval([1.0, 2.0, 3.0])
    # t(0.975, 2) = 4.302652729749464; s = 1; n = 3
    assert iv.mean == 2.0 and iv.n == 3
    assert iv.half == pytest.approx(4.302652729749464 / math.sqrt(3), rel=1e-12)
    one = stats.mean_interval([5.0])
    assert one.mean == 5.0 and not one.defined and one.text() == "5"
    with pytest.raises(ValueError, match="NaN"):
        stats.mean_interval([1.0, float("nan")])


def test_paired_comparison_verdicts():
    a = {0: 0.10, 1: 0.11, 2: 0.12}
    b = {0: 0.20, 1: 0.22, 2: 0.21}
    v = stats.compare(a, b, "less")
    assert v.verdict == stats.HOLDS and "paired t-test over 3 shared seeds" in v.test
    # differences -0.10, -0.11, -0.09: mean -0.10, s = 0.01
    assert v.interval.mean == pytest.approx(-0.10)
    assert v.interval.half == pytest.approx(4.302652729749464 * 0.01 / math.sqrt(3))
    assert stats.compare(a, b, "greater").verdict == stats.FAILS
    noisy = {0: 0.30, 1: 0.05, 2: 0.12}
    assert stats.compare(noisy, b, "less").verdict == stats.INCONCLUSIVE
    # no shared seeds: Welch
    w = stats.compare({0: 1.0, 1: 1.1}, {5: 2.0, 6: 2.1}, "less")
    assert "Welch" in w.test
    assert stats.compare({0: 1.0}, {0: 2.0}, "less").verdict == stats.INCONCLUSIVE
    none = stats.compare({}, {0: 2.0}, "less")
    assert none.verdict == stats.INCONCLUSIVE and none.test == "no cells yet"
    assert stats.threshold({}, 0.1, "at_most").test == "no cells yet"


def test_difference_verdict_edges():
    # the one interval-to-verdict rule of stats.compare and the whole-grid bootstrap
    dv = stats.difference_verdict
    assert dv(-0.3, -0.1, "less") == stats.HOLDS
    assert dv(-0.3, -0.1, "greater") == stats.FAILS
    assert dv(0.1, 0.3, "less") == stats.FAILS
    assert dv(0.1, 0.3, "greater") == stats.HOLDS
    assert dv(-0.1, 0.1, "less") == stats.INCONCLUSIVE
    # an end on 0 is not strictly on either side; equal values (0 wide) are inconclusive
    assert dv(-0.2, 0.0, "less") == stats.INCONCLUSIVE
    assert dv(0.0, 0.0, "greater") == stats.INCONCLUSIVE
    with pytest.raises(ValueError, match=r"kind: 'below' is invalid; valid: less, greater"):
        dv(-1.0, -0.5, "below")
    # compare() gives the same verdict as the rule on its own interval
    v = stats.compare({0: 1.0, 1: 2.0, 2: 1.5}, {0: 1.2, 1: 2.21, 2: 1.69}, "less")
    assert v.verdict == dv(v.interval.low, v.interval.high, "less") == stats.HOLDS


def test_threshold_verdicts_and_overall():
    assert stats.threshold({0: 0.02, 1: 0.03, 2: 0.025}, 0.06, "at_most").verdict == stats.HOLDS
    assert stats.threshold({0: 0.10, 1: 0.11, 2: 0.12}, 0.06, "at_most").verdict == stats.FAILS
    assert stats.threshold({0: 0.0, 1: 0.12}, 0.06, "at_most").verdict == stats.INCONCLUSIVE
    assert stats.threshold({0: 0.5, 1: 0.6, 2: 0.55}, 0.1, "at_least").verdict == stats.HOLDS
    assert stats.overall([stats.HOLDS, stats.HOLDS]) == stats.HOLDS
    assert stats.overall([stats.HOLDS, stats.INCONCLUSIVE]) == stats.INCONCLUSIVE
    assert stats.overall([stats.INCONCLUSIVE, stats.FAILS]) == stats.FAILS


# ----------------------------------------------------------------------------- merging
def test_a_cells_setup_holds_what_its_tuned_example_sets(tmp_path):
    from rllib_fair.reproduce.plan import REPO_ROOT, example_spec

    plan = parse_plan(TINY)
    cell = Cell("ppo", "lending", 0)
    rel = plan.example_file(cell)
    original = (REPO_ROOT / rel).read_text()
    spec = plan.setup(cell)["example_spec"]
    assert spec == example_spec(REPO_ROOT / rel) and spec["run"] == "PPO"
    assert set(spec) <= {"run", "env", "env_config", "config"}  # stop, criteria: not
    copy = tmp_path / rel
    copy.parent.mkdir(parents=True)
    # comments, key order and the example's own budget do not change what a cell runs
    lines = original.splitlines()
    copy.write_text("# another comment\n" + "\n".join(lines) + "\n")
    assert plan.setup(cell, tmp_path) == plan.setup(cell)
    data = yaml.safe_load(original)
    ((name, body),) = data.items()
    copy.write_text(yaml.safe_dump({name: {**body, "stop": {"num_env_steps_sampled_lifetime": 7}}}))
    assert plan.setup(cell, tmp_path) == plan.setup(cell)
    # its config does: a cell run before such an edit no longer matches
    edited = {**body, "config": {**body["config"], "lr": 0.123}}
    copy.write_text(yaml.safe_dump({name: edited}))
    assert plan.setup(cell, tmp_path)["example_spec"]["config"]["lr"] == 0.123
    assert plan.setup(cell, tmp_path) != plan.setup(cell)
    # an example that is not one experiment, or no file at all, records None
    copy.write_text(yaml.safe_dump({name: edited, "other": edited}))
    assert example_spec(copy) is None
    assert example_spec(tmp_path / "nope.yaml") is None


def _write(out: Path, plan, method: str, seed: int, bias: float, budget: int | None = None):
    path = cell_path(out, plan, Cell(method, "lending", seed))
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {
        "cell": {"method": method, "setting": "lending", "seed": seed},
        "budget": plan.budget if budget is None else budget,
        "metrics": {"bias": bias, "reward_per_step": 0.1},
        "wall_s": 360.0,
        "cpu_hours": 0.1,
    }
    path.write_text(json.dumps(row))


def test_merge_tables_verdicts_and_stale_cells(tmp_path):
    plan = parse_plan({**TINY, "seeds": [0, 1, 2]})
    for seed, (p, g) in enumerate([(0.04, 0.15), (0.05, 0.17), (0.045, 0.16)]):
        _write(tmp_path, plan, "pocar", seed, p)
        _write(tmp_path, plan, "ppo", seed, g)
    _write(tmp_path, plan, "ppo", 9, 5.0, budget=123)  # another budget: left out
    merged = merge(tmp_path, plan, plots=False)
    assert merged.n_cells == 6 and merged.stale == 1
    assert merged.claims["fairer"]["verdict"] == stats.HOLDS
    assert merged.claims["small"]["verdict"] == stats.HOLDS
    assert merged.cpu_hours == pytest.approx(0.6)
    iv = merged.intervals[("lending", "pocar", "bias")]
    assert iv.mean == pytest.approx(0.045) and iv.n == 3
    text = (tmp_path / "tiny" / "README.md").read_text()
    assert "| A-PPO | 0.045 ± " in text and "| 0.045 |" in text  # ours beside the paper's
    assert "**holds**" in text and "paired t-test over 3 shared seeds" in text
    # 6 cells, 2 CPUs of 1 cell each: 3 waves of 0.1 h
    assert merged.method_hours == pytest.approx({"ppo": 0.1, "pocar": 0.1})
    assert projected_wall_hours(plan, merged.method_hours, 2) == pytest.approx(0.3)
    # cells in plan order (seed by seed, ppo then pocar) on the first free slot, ppo
    # 0.3 h and pocar 0.1 h: slots 0.3 | 0.1, 0.3 | 0.4, 0.7 | 0.4, 0.7 | 0.5 -> 0.7 h;
    # on one slot, the sum, 1.2 h
    assert projected_wall_hours(plan, {"ppo": 0.3, "pocar": 0.1}, 2) == pytest.approx(0.7)
    assert projected_wall_hours(plan, {"ppo": 0.3, "pocar": 0.1}, 1) == pytest.approx(1.2)
    # a method without cells counts at the others' mean, and the README says so
    assert projected_wall_hours(plan, {"ppo": 0.3}, 1) == pytest.approx(1.8)
    assert math.isnan(projected_wall_hours(plan, {}, 4))
    # swapping the methods' numbers flips the comparison
    for seed, (p, g) in enumerate([(0.04, 0.15), (0.05, 0.17), (0.045, 0.16)]):
        _write(tmp_path, plan, "pocar", seed, g)
        _write(tmp_path, plan, "ppo", seed, p)
    assert merge(tmp_path, plan, plots=False).claims["fairer"]["verdict"] == stats.FAILS


def test_projection_says_when_a_method_has_no_finished_cell(tmp_path):
    plan = parse_plan(TINY)
    _write(tmp_path, plan, "ppo", 0, 0.1)
    merge(tmp_path, plan, plots=False)
    text = (tmp_path / "tiny" / "README.md").read_text()
    assert "(A-PPO: no finished cell yet, counted at the other methods' mean" in text
    _write(tmp_path, plan, "pocar", 0, 0.1)
    merge(tmp_path, plan, plots=False)
    assert "no finished cell yet" not in (tmp_path / "tiny" / "README.md").read_text()


def test_merged_readme_escapes_pipes_and_states_protocol_and_durations(tmp_path):
    claims = [{"id": "p", "text": "abs |bias| small", "metric": "bias", "at_most": ["ppo", 1.0]}]
    plan = parse_plan({**TINY, "claims": claims})
    _write(tmp_path, plan, "ppo", 0, 0.1)
    merge(tmp_path, plan, plots=False)
    text = (tmp_path / "tiny" / "README.md").read_text()
    row = next(line for line in text.splitlines() if "(`p`)" in line)
    assert "abs \\|bias\\| small" in row and row.count(" | ") == 2  # three cells, not five
    assert "- Evaluation: `greedy_episodes`: 2 episodes, greedy actions." in text
    assert "mean per cell 6.0 min" in text  # 360 s
    final = parse_plan(
        {**TINY, "evaluation": {**TINY["evaluation"], "evaluator": "final_training"}}
    )
    merge(tmp_path / "f", final, plots=False)
    assert "the last training result" in (tmp_path / "f" / "tiny" / "README.md").read_text()


# ----------------------------------------------------------------------------- curves
def test_curve_recorder_bins_exactly_and_counts_missing_values_as_missing():
    from rllib_fair.reproduce.curves import CurveRecorder

    rec = CurveRecorder({"a": "x.a", "b": "x.b"}, points=2)
    for steps, a, b in [(10, 1.0, None), (20, 3.0, None), (30, float("nan"), 7.0)]:
        rec.add(steps, {"x": {"a": a, **({} if b is None else {"b": b})}})
    rec.add(40, {"x": {"a": 8.0, "b": "text"}})
    # 4 iterations in 2 bins of 2: last steps 20 and 40, means of the finite values
    assert rec.binned() == {"env_steps": [20, 40], "a": [2.0, 8.0], "b": [None, 7.0]}
    # a learner key holding a "/" is found by the dotted path
    slash = CurveRecorder({"lam": "learners.p.ppoc.lambda"}, points=1)
    slash.add(7, {"learners": {"p": {"ppoc/lambda": 0.25}}})
    assert slash.binned() == {"env_steps": [7], "lam": [0.25]}
    few = CurveRecorder({"a": "a"}, points=100)
    few.add(5, {"a": 1})
    assert few.binned() == {"env_steps": [5], "a": [1.0]}  # never more bins than iterations


def test_merge_draws_the_curves_and_counts_the_cells_that_have_them(tmp_path):
    plan = parse_plan({**TINY, "curves": {"points": 3, "metrics": {"ret": "x"}}})
    for seed, method in [(0, "ppo"), (1, "ppo"), (0, "pocar")]:
        _write(tmp_path, plan, method, seed, 0.1)
    path = cell_path(tmp_path, plan, Cell("ppo", "lending", 0))
    row = json.loads(path.read_text())
    row["curves"] = {"env_steps": [100, 200, 400], "ret": [1.0, None, 3.0]}
    path.write_text(json.dumps(row))
    merge(tmp_path, plan)
    text = (tmp_path / "tiny" / "README.md").read_text()
    assert "Training curves (ret): recorded by 1 of the 3 cells, `tiny_curves.png`" in text
    assert (tmp_path / "tiny" / "tiny_curves.png").stat().st_size > 1000
    # a plan without curves draws none
    merge(tmp_path / "other", parse_plan(TINY))
    assert not (tmp_path / "other" / "tiny" / "tiny_curves.png").exists()


# ----------------------------------------------------------------------------- end to end
def _start(plan_file: Path, out: Path, storage: Path, log: Path, *extra: str):
    env = dict(os.environ, RAY_AUTH_MODE="disabled")
    cmd = [sys.executable, "-m", "rllib_fair.cli", "reproduce", str(plan_file)]
    cmd += ["--out", str(out), "--storage-path", str(storage), "--num-cpus", "1", *extra]
    return subprocess.Popen(
        cmd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )


@pytest.mark.ray
def test_tiny_plan_killed_then_resumed(tmp_path):
    plan_file = tmp_path / "tiny.yaml"
    plan_file.write_text(yaml.safe_dump(TINY))
    plan = load_plan(plan_file)
    out, storage, log = tmp_path / "out", tmp_path / "tune", tmp_path / "log.txt"
    cells = tmp_path / "out" / "tiny" / "cells"
    proc = _start(plan_file, out, storage, log, "--max-concurrent", "1")
    deadline = time.time() + 240
    while not list(cells.glob("*.json")) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert list(cells.glob("*.json")), log.read_text()[-3000:]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = {p.name: p.read_bytes() for p in cells.glob("*.json")}
    assert 1 <= len(first) < 4
    assert not list(cells.glob("*.tmp"))
    proc = _start(plan_file, out, storage, log, "--resume")
    assert proc.wait(timeout=300) == 0, log.read_text()[-3000:]
    text = log.read_text()
    assert f"4 cells, {len(first)} finished, {4 - len(first)} to run" in text
    for name, content in first.items():
        assert (cells / name).read_bytes() == content  # not rerun
    rows = {c.id: json.loads((cells / f"{c.id}.json").read_text()) for c in plan.cells()}
    for row in rows.values():
        assert row["env_steps"] >= 400 and all(math.isfinite(v) for v in row["metrics"].values())
    readme = (out / "tiny" / "README.md").read_text()
    assert "Cells finished: 4 of 4" in readme and "## Claims" in readme
    assert (out / "tiny" / "tiny.png").is_file()
    assert "claim fairer:" in text and "claim small:" in text
    # the same seed gives the same cell: delete one and run again
    again = "pocar__lending__s1"
    (cells / f"{again}.json").unlink()
    proc = _start(plan_file, out, storage, log)
    assert proc.wait(timeout=300) == 0, log.read_text()[-3000:]
    rerun = json.loads((cells / f"{again}.json").read_text())
    assert rerun["metrics"] == rows[again]["metrics"]
    # different seeds give different runs (not one replayed episode)
    assert rows["ppo__lending__s0"]["metrics"] != rows["ppo__lending__s1"]["metrics"]
    # --methods runs only that method's pending cells; the merge still covers every cell
    for name in ("ppo__lending__s0", "pocar__lending__s0"):
        (cells / f"{name}.json").unlink()
    proc = _start(plan_file, out, storage, log, "--methods", "ppo", "--settings", "lending")
    assert proc.wait(timeout=300) == 0, log.read_text()[-3000:]
    assert "2 cells (of 4), 1 finished, 1 to run" in log.read_text()
    assert (cells / "ppo__lending__s0.json").is_file()
    assert not (cells / "pocar__lending__s0.json").exists()
    assert "Cells finished: 3 of 4" in (out / "tiny" / "README.md").read_text()
    # every cell records the setup the plan gave it; a plan edited afterwards makes the
    # cells it changes stale (left out of the merge, trained again by the next run)
    for c in plan.cells():
        if (cells / f"{c.id}.json").is_file():
            assert json.loads((cells / f"{c.id}.json").read_text())["setup"] == plan.setup(c)
    edited = {
        **TINY,
        "methods": {**TINY["methods"], "ppo": {"label": "G-PPO", "config": {"lr": 1e-3}}},
    }
    plan_file.write_text(yaml.safe_dump(edited))
    plan2 = load_plan(plan_file)
    merged = merge(out, plan2, plots=False)
    assert (merged.n_cells, merged.stale) == (1, 2)  # pocar s1 current; ppo s0, s1 stale
    assert (
        "stale cells (another budget, setup or package default) left out: 2"
        in (out / "tiny" / "README.md").read_text()
    )
    assert not finished(out, plan2, Cell("ppo", "lending", 1))
    assert finished(out, plan2, Cell("pocar", "lending", 1))
    # a cell written before cells recorded their setup is taken at its budget
    legacy = json.loads((cells / "ppo__lending__s1.json").read_text())
    del legacy["setup"]
    (cells / "ppo__lending__s1.json").write_text(json.dumps(legacy))
    assert finished(out, plan2, Cell("ppo", "lending", 1))


@pytest.mark.parametrize("flag", ["--methods", "--settings"])
def test_unknown_method_or_setting_is_one_line_before_anything_runs(tmp_path, capsys, flag):
    from rllib_fair.cli import main

    plan_file = tmp_path / "tiny.yaml"
    plan_file.write_text(yaml.safe_dump(TINY))
    out = tmp_path / "out"
    known = "ppo" if flag == "--methods" else "lending"
    assert main(["reproduce", str(plan_file), "--out", str(out), flag, known, "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{flag}: 'nope' is invalid; valid: " in err and "\n" not in err
    valid = err.split("valid: ")[1].split(", ")
    assert sorted(valid) == (["pocar", "ppo"] if flag == "--methods" else ["lending"])
    assert not out.exists()


def test_list_counts_each_shipped_plans_finished_cells_and_hours(tmp_path, capsys):
    from rllib_fair.cli import main

    plan = load_plan("yin2023")
    cell = Cell("myopic", "replicator", 3)
    row = {
        "cell": cell.to_dict(),
        "budget": plan.budget_for(cell),
        "setup": plan.setup(cell),
        "metrics": {},
        "wall_s": 36.0,
        "cpu_hours": 0.01,
    }
    path = cell_path(tmp_path, plan, cell)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(row))
    stale = cell_path(tmp_path, plan, Cell("myopic", "replicator", 4))
    stale.write_text(json.dumps({**row, "cell": {**row["cell"], "seed": 4}, "budget": 7}))
    assert main(["reproduce", "list", "--out", str(tmp_path)]) == 0
    lines = {ln.split()[0]: ln.split() for ln in capsys.readouterr().out.splitlines()[1:]}
    assert set(lines) == set(shipped_plans())
    assert lines["yin2023"][1:3] == ["1/60", "0.01"]  # the stale cell is not counted
    assert lines["lear2025"][1:3] == ["0/90", "0.00"]


@pytest.mark.ray
def test_run_cell_reports_progress_and_the_writer_prints_it(ray_session, capsys, tmp_path):
    from types import SimpleNamespace

    from rllib_fair.cli.reproduce import Progress, _writer_callback, run_cell, with_resolver

    curves = {"points": 2, "metrics": {"ret": "env_runners.episode_return_mean", "no": "n.o"}}
    plan = parse_plan({**TINY, "budget": 600, "curves": curves})
    seen = []
    row = run_cell(plan, Cell("ppo", "lending", 0), progress=lambda s, t: seen.append((s, t)))
    assert [s for s, _ in seen] == [200, 400, 600] and row["env_steps"] == 600
    # the row records what the config resolved the package's defaults to, as a merge
    # on this code resolves the cell (so the cell counts as finished)
    assert row["resolved"] == with_resolver(plan).resolver(Cell("ppo", "lending", 0))
    assert row["resolved"]["env"]["max_steps"] == 100
    # the training process records where it ran (a driver's older commit does not name it)
    head = subprocess.run(
        ["git", "-C", str(Path(__file__).parents[2]), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert row["provenance"]["commit"] == (head or None)
    assert isinstance(row["provenance"]["uncommitted"], bool) or not head
    # 3 iterations in 2 bins; a path no result has is recorded as missing, not an error
    assert row["curves"]["env_steps"] == [400, 600] and row["curves"]["no"] == [None, None]
    assert all(math.isfinite(v) for v in row["curves"]["ret"])
    assert all(t > 0 for _, t in seen)
    writer = _writer_callback(tmp_path, plan, Progress(plan, 4, 0, 0.0), [])
    trial = SimpleNamespace(config={"cell": {"method": "ppo", "setting": "lending", "seed": 0}})
    writer.on_trial_result(0, [], trial, {"env_steps": 200, "elapsed_s": 90.0})
    assert (
        "[tiny] ppo__lending__s0: 200/600 env steps (33%) after 1.5 min" in capsys.readouterr().out
    )


def test_provenance_names_the_commit_and_code_it_does_not_hold(tmp_path):
    from rllib_fair.cli.reproduce import _provenance, write_cell

    # outside a git checkout: nothing known
    assert (_provenance(tmp_path)["commit"], _provenance(tmp_path)["uncommitted"]) == (None, None)
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "rllib_fair").mkdir()
    (tmp_path / "rllib_fair" / "x.py").write_text("A = 1\n")
    (tmp_path / "notes.md").write_text("n\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "c"], check=True)
    clean = _provenance(tmp_path)
    assert clean["commit"] and clean["uncommitted"] is False
    (tmp_path / "notes.md").write_text("other\n")  # not code: still clean
    assert _provenance(tmp_path)["uncommitted"] is False
    (tmp_path / "tuned_examples").mkdir()
    (tmp_path / "tuned_examples" / "new.yaml").write_text("a: 1\n")  # untracked example
    assert _provenance(tmp_path)["uncommitted"] is True
    (tmp_path / "tuned_examples" / "new.yaml").unlink()
    (tmp_path / "rllib_fair" / "x.py").write_text("A = 2\n")
    assert _provenance(tmp_path)["uncommitted"] is True
    # a row's own record is kept; the driver's fills a row without one (a copy)
    plan = parse_plan(TINY)
    row = {"cell": {"method": "ppo", "setting": "lending", "seed": 0}, "provenance": clean}
    path = write_cell(tmp_path / "out", plan, row, {"commit": "driver"})
    assert json.loads(path.read_text())["provenance"] == clean
    del row["provenance"]
    path = write_cell(tmp_path / "out", plan, row, {"commit": "driver"})
    assert json.loads(path.read_text())["provenance"] == {"commit": "driver"}
