"""Search spaces, seeds, schedulers, search algorithms and the Pareto front of a sweep.

The validation tests start no Ray; the end-to-end ones share the session's Ray and run
tiny trials (one 8-unit layer, 200-step batches and episodes, 1-2 iterations).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from rllib_fair.cli import main
from rllib_fair.cli.experiment import ExperimentError, param_space, validate_experiment
from rllib_fair.cli.tables import format_pareto, pareto, pareto_front, summarize
from rllib_fair.cli.trials import Trial, group
from rllib_fair.fairness.selection import select_by_rule

ROOT = Path(__file__).resolve().parents[2]
RETURN_KEY = "env_runners/episode_return_mean"
GAP_KEY = "fairness/equal_opportunity/bias"


def spec(**extra) -> dict:
    config = {
        "fairness_notion": "equal_opportunity",
        "train_batch_size_per_learner": 200,
        "minibatch_size": 100,
        "num_epochs": 1,
        "model_config": {"fcnet_hiddens": [8]},
    }
    config.update(extra.pop("config", {}))
    out = {
        "run": "POCAR",
        "env": "fair/Lending-v0",
        "env_config": {"max_steps": 200},
        "stop": {"training_iteration": 2},
        "config": config,
    }
    out.update(extra)
    return out


def rejected(s: dict, match: str, **kw) -> str:
    with pytest.raises(ExperimentError, match=match) as err:
        validate_experiment("exp", s, **kw)
    assert "\n" not in str(err.value)
    return str(err.value)


# --------------------------------------------------------------------------- spaces


@pytest.mark.parametrize(
    ("key", "space", "cls", "check"),
    [
        ("lr", {"uniform": [0.001, 0.01]}, "Float", lambda d: (d.lower, d.upper) == (0.001, 0.01)),
        (
            "lr",
            {"loguniform": [0.0001, 0.01]},
            "Float",
            lambda d: (d.lower, d.upper) == (0.0001, 0.01) and "LogUniform" in repr(d.sampler),
        ),
        (
            "advantage_normalization",
            {"choice": ["minmax", "none"]},
            "Categorical",
            lambda d: d.categories == ["minmax", "none"],
        ),
        ("num_epochs", {"randint": [1, 4]}, "Integer", lambda d: (d.lower, d.upper) == (1, 4)),
        (
            "clip_param",
            {"quniform": [0.1, 0.3, 0.05]},
            "Float",
            lambda d: (d.lower, d.upper, d.sampler.q) == (0.1, 0.3, 0.05),
        ),
    ],
)
def test_every_space_type_becomes_its_tune_domain(key, space, cls, check):
    exp = validate_experiment("exp", spec(config={key: space}))
    assert exp.spaces[key].kind == next(iter(space))
    assert exp.selection is not None  # a sweep: a selection rule applies
    domain = param_space(exp).to_dict()[key]
    assert type(domain).__name__ == cls and check(domain)
    for _ in range(20):  # what Tune samples is a valid plain value of the key
        validate_experiment("exp", spec(config={key: domain.sample()}))


@pytest.mark.parametrize(
    ("key", "space", "match"),
    [
        ("lr", {"uniform": [0.01, 0.001]}, r"config.lr.uniform: .* low < high"),
        ("lr", {"uniform": [0.1]}, r"config.lr.uniform: \[0.1\] is invalid; valid: \[low, high\]"),
        ("lr", {"uniform": [0.1, "x"]}, r"config.lr.uniform: .* finite numbers"),
        ("lr", {"uniform": [0.1, float("inf")]}, r"config.lr.uniform: .* finite numbers"),
        ("lr", {"loguniform": [0.0, 0.1]}, r"config.lr.loguniform: .* 0 < low < high"),
        ("lr", {"uniform": [-0.1, 0.1]}, r"config.lr.uniform: -0.1 rejected: .*lr"),
        ("gamma", {"uniform": [0.9, 1.1]}, r"config.gamma.uniform: 1.1 rejected: .*\[0, 1\]"),
        ("num_epochs", {"randint": [1.5, 4]}, r"config.num_epochs.randint: .* integers"),
        ("num_epochs", {"randint": [0, 4]}, r"config.num_epochs.randint: 0 rejected"),
        ("num_epochs", {"uniform": [1, 4]}, r"config.num_epochs.uniform: 1.0 rejected"),
        ("clip_param", {"quniform": [0.1, 0.3, 0]}, r"config.clip_param.quniform: .* q > 0"),
        ("clip_param", {"quniform": [0.1, 0.3]}, r"config.clip_param.quniform: .*\[low, high, q\]"),
        ("advantage_normalization", {"choice": []}, r"choice: \[\] is invalid; valid: a non-empty"),
        (
            "advantage_normalization",
            {"choice": ["minmax", "bogus"]},
            r"config.advantage_normalization.choice: 'bogus' rejected",
        ),
        ("lr", {"uniform": [0.1, 0.2], "choice": [1]}, r"config.lr: .* one key"),
        ("fairness_notion", {"choice": ["equal_opportunity"]}, r"config.fairness_notion: a search"),
    ],
)
def test_bad_spaces_are_one_line_errors(key, space, match):
    rejected(spec(config={key: space}), match)


def test_a_config_override_replaces_a_space():
    exp = validate_experiment(
        "exp", spec(config={"lr": {"uniform": [0.001, 0.01]}}), config_overrides={"lr": 0.002}
    )
    assert exp.spaces == {} and exp.config.lr == 0.002


# --------------------------------------------------------------------------- seeds


def test_seeds_are_a_grid_over_seed_combined_with_the_spaces():
    exp = validate_experiment(
        "exp", spec(seeds=[3, 1, 4], num_samples=2, config={"lr": {"uniform": [0.001, 0.01]}})
    )
    assert exp.seeds == [3, 1, 4]
    space = param_space(exp).to_dict()
    assert space["seed"] == {"grid_search": [3, 1, 4]}
    assert validate_experiment("exp", spec(seeds=2)).seeds == [0, 1]  # a count


def test_a_command_line_seed_replaces_the_seeds_axis():
    exp = validate_experiment("exp", spec(seeds=[0, 1]), seed=7)
    assert exp.seeds is None and exp.config.seed == 7


@pytest.mark.parametrize("seeds", [0, -1, [], [0, 0], [0, -2], [0.5], "3", [True], 10_000])
def test_bad_seeds(seeds):
    rejected(spec(seeds=seeds), r"^seeds: .* is invalid; valid: a list of distinct integers")


def test_seeds_and_a_seed_grid_exclude_each_other():
    rejected(spec(seeds=2, config={"seed": {"grid_search": [0, 1]}}), r"^seeds: cannot be")


# --------------------------------------------------------------------------- tune block

ASHA = {"type": "asha", "metric": RETURN_KEY, "mode": "max", "max_t": 4}
OPTUNA = {"type": "optuna", "metric": [RETURN_KEY, GAP_KEY], "mode": ["max", "min"]}
SPACE = {"lr": {"loguniform": [0.0001, 0.01]}}


def test_tune_block_parses_schedulers_and_search_algorithms():
    exp = validate_experiment("exp", spec(tune={"scheduler": ASHA, "max_concurrent_trials": 2}))
    sched = exp.tune.scheduler
    assert (sched.type, sched.metric, sched.mode) == ("asha", RETURN_KEY, "max")
    assert sched.options == {
        "time_attr": "training_iteration",
        "grace_period": 1,
        "reduction_factor": 2,
        "max_t": 4,
    }
    assert exp.tune.max_concurrent_trials == 2 and exp.is_sweep
    median = {"type": "median_stopping", "metric": GAP_KEY, "mode": "min"}
    exp = validate_experiment("exp", spec(tune={"scheduler": median}))
    assert exp.tune.scheduler.type == "median_stopping"
    pbt = {
        "type": "pbt",
        "metric": "episode_reward_mean",  # legacy names are translated
        "mode": "max",
        "hyperparam_mutations": {"lr": [0.001, 0.003], "lambda": {"choice": [0.9, 0.95]}},
    }
    exp = validate_experiment("exp", spec(tune={"scheduler": pbt}))
    assert exp.tune.scheduler.metric == RETURN_KEY
    assert exp.tune.scheduler.mutations == {"lr": [0.001, 0.003], "lambda": [0.9, 0.95]}
    exp = validate_experiment("exp", spec(tune={"search_alg": OPTUNA}, config=SPACE))
    assert exp.tune.search_alg.metrics == [RETURN_KEY, GAP_KEY]
    assert exp.tune.search_alg.modes == ["max", "min"]


def test_tune_objects_are_built_with_metric_and_mode_in_one_place():
    from ray.tune.schedulers import (
        AsyncHyperBandScheduler,
        MedianStoppingRule,
        PopulationBasedTraining,
    )
    from ray.tune.search.optuna import OptunaSearch

    from rllib_fair.cli.runner import tune_config
    from rllib_fair.cli.tuning import SeedRepeater

    exp = validate_experiment("exp", spec(tune={"scheduler": ASHA}))
    tc = tune_config(exp)
    assert isinstance(tc.scheduler, AsyncHyperBandScheduler)
    assert tc.metric is None and tc.mode is None  # given to the scheduler only
    median = {"type": "median_stopping", "metric": GAP_KEY, "mode": "min", "grace_period": 2}
    tc = tune_config(validate_experiment("exp", spec(tune={"scheduler": median})))
    assert isinstance(tc.scheduler, MedianStoppingRule)
    assert tc.scheduler._metric == GAP_KEY and tc.scheduler._grace_period == 2
    exp = validate_experiment(
        "exp", spec(seeds=[0, 1], num_samples=3, tune={"search_alg": OPTUNA}, config=SPACE)
    )
    tc = tune_config(exp)
    assert isinstance(tc.search_alg, SeedRepeater) and tc.num_samples == 6
    assert isinstance(tc.search_alg.searcher, OptunaSearch)
    assert "seed" not in param_space(exp).to_dict() or not isinstance(
        param_space(exp).to_dict()["seed"], dict
    )  # the repeater sets the seed, not a grid (Optuna cannot take grids)
    pbt = {
        "type": "pbt",
        "metric": RETURN_KEY,
        "mode": "max",
        "hyperparam_mutations": {"lambda": [0.9, 0.95], "train_batch_size_per_learner": [200]},
    }
    tc = tune_config(validate_experiment("exp", spec(tune={"scheduler": pbt})))
    assert isinstance(tc.scheduler, PopulationBasedTraining)
    # mutations are keyed like the trial's config dict
    assert set(tc.scheduler._hyperparam_mutations) == {"lambda", "_train_batch_size_per_learner"}


@pytest.mark.parametrize(
    ("tune", "config", "match"),
    [
        ({"bogus": 1}, {}, r"^tune.bogus: unknown key"),
        ({"scheduler": {"type": "hyperband"}}, {}, r"^tune.scheduler.type: 'hyperband'"),
        ({"scheduler": {"type": "asha", "mode": "max"}}, {}, r"metric and mode are required"),
        ({"scheduler": {**ASHA, "mode": "up"}}, {}, r"^tune.scheduler.mode: 'up'"),
        ({"scheduler": {**ASHA, "metric": "reward"}}, {}, r"unknown result key 'reward'"),
        (
            {"scheduler": {**ASHA, "metric": "fairness/demographic_parity/bias"}},
            {},
            r"notion 'demographic_parity' is not reported",
        ),
        ({"scheduler": {**ASHA, "metric": [RETURN_KEY]}}, {}, r"tune.scheduler.metric: \["),
        ({"scheduler": {**ASHA, "grace_period": 9}}, {}, r"grace_period: 9 .* <= max_t"),
        ({"scheduler": {**ASHA, "reduction_factor": 1}}, {}, r"reduction_factor: 1 .* > 1"),
        ({"scheduler": {**ASHA, "time_attr": "steps"}}, {}, r"time_attr: 'steps'"),
        ({"scheduler": {**ASHA, "perturbation_interval": 2}}, {}, r"perturbation_interval: unk"),
        (
            {"scheduler": {"type": "pbt", "metric": RETURN_KEY, "mode": "max"}},
            {},
            r"hyperparam_mutations: required",
        ),
        (
            {
                "scheduler": {
                    "type": "pbt",
                    "metric": RETURN_KEY,
                    "mode": "max",
                    "hyperparam_mutations": {"gamma": [0.9, 1.5]},
                }
            },
            {},
            r"hyperparam_mutations.gamma: 1.5 rejected: config.gamma",
        ),
        (
            {
                "scheduler": {
                    "type": "pbt",
                    "metric": RETURN_KEY,
                    "mode": "max",
                    "hyperparam_mutations": {"lr": {"uniform": [0.001, 0.01]}},
                }
            },
            {},
            r"hyperparam_mutations.lr: .* continuous spaces",
        ),
        (
            {
                "scheduler": {
                    "type": "pbt",
                    "metric": RETURN_KEY,
                    "mode": "max",
                    "hyperparam_mutations": {"num_sgd_iter": [1, 2]},
                }
            },
            {},
            r"hyperparam_mutations.num_sgd_iter: 1 rejected: .*num_epochs",
        ),
        ({"search_alg": {**OPTUNA, "mode": ["max"]}}, SPACE, r"one of min/max per metric"),
        (
            {"search_alg": {**OPTUNA, "metric": [RETURN_KEY, "fairness/equal_opportunity/x"]}},
            SPACE,
            r"not a metric of notion 'equal_opportunity'",
        ),
        ({"search_alg": {**OPTUNA, "type": "bayesopt"}}, SPACE, r"search_alg.type: 'bayesopt'"),
        ({"search_alg": OPTUNA}, {}, r"^tune.search_alg: needs at least one sampled space"),
        (
            {"search_alg": OPTUNA},
            {"lr": {"grid_search": [0.001, 0.01]}},
            r"grid_search cannot be combined with tune.search_alg",
        ),
        ({"max_concurrent_trials": 0}, {}, r"^tune.max_concurrent_trials: 0"),
        ("asha", {}, r"^tune: must be a mapping"),
    ],
)
def test_bad_tune_blocks_are_one_line_errors(tune, config, match):
    rejected(spec(tune=tune, config=config), match)


@pytest.mark.parametrize("kind", ["optuna", "hyperopt"])
def test_search_algorithms_suggest_inside_the_space(kind):
    from rllib_fair.cli.runner import tune_config

    block = {"type": kind, "metric": RETURN_KEY, "mode": "max", "seed": 0}
    exp = validate_experiment("exp", spec(tune={"search_alg": block}, config=SPACE))
    searcher = tune_config(exp).search_alg
    assert searcher.set_search_properties(None, None, param_space(exp).to_dict())
    for i in range(3):
        assert 0.0001 <= searcher.suggest(f"t{i}")["lr"] <= 0.01


def test_hyperopt_is_single_objective():
    block = {**OPTUNA, "type": "hyperopt"}
    match = r"search_alg.metric: \[.* a result key$"
    rejected(spec(tune={"search_alg": block}, config=SPACE), match)


def test_optuna_missing_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "optuna" else real(n, *a)
    )
    rejected(spec(tune={"search_alg": OPTUNA}, config=SPACE), r"rllib-fair\[tune\]")


def test_seed_repeater_runs_each_suggestion_on_every_seed_and_reports_means():
    from ray.tune.search import Searcher

    from rllib_fair.cli.tuning import SeedRepeater

    class Fake(Searcher):
        def __init__(self):
            super().__init__(metric=[RETURN_KEY, GAP_KEY], mode=["max", "min"])
            self.n, self.done = 0, []

        def suggest(self, trial_id):
            self.n += 1
            return {"lr": 0.001 * self.n}

        def on_trial_complete(self, trial_id, result=None, error=False):
            self.done.append((trial_id, result))

    fake = Fake()
    rep = SeedRepeater(fake, [5, 6])
    configs = [rep.suggest(f"t{i}") for i in range(4)]
    assert configs == [
        {"lr": 0.001, "seed": 5},
        {"lr": 0.001, "seed": 6},
        {"lr": 0.002, "seed": 5},
        {"lr": 0.002, "seed": 6},
    ]
    rep.on_trial_complete("t0", {RETURN_KEY: 10.0, GAP_KEY: 0.1})
    assert fake.done == []  # waits for every seed
    rep.on_trial_complete("t1", {RETURN_KEY: 20.0, GAP_KEY: 0.3})
    ((tid, result),) = fake.done
    assert tid == "t0" and result[RETURN_KEY] == 15.0 and result[GAP_KEY] == pytest.approx(0.2)


def test_seed_repeater_checkpoint_keeps_its_groups_and_the_searcher(tmp_path):
    from ray import tune
    from ray.tune.search.optuna import OptunaSearch

    from rllib_fair.cli.tuning import SeedRepeater

    def make():
        searcher = OptunaSearch(
            space={"lr": tune.loguniform(1e-4, 1e-2)},
            metric=[RETURN_KEY, GAP_KEY],
            mode=["max", "min"],
            seed=0,
        )
        return SeedRepeater(searcher, [0, 1])

    rep = make()
    first = rep.suggest("t0")
    rep.on_trial_complete("t0", {RETURN_KEY: 1.0, GAP_KEY: 0.1})
    rep.save_to_dir(str(tmp_path))
    again = make()
    again.restore_from_dir(str(tmp_path))
    second = again.suggest("t1")  # the same proposal on the next seed
    assert second == {**first, "seed": 1}
    again.on_trial_complete("t1", {RETURN_KEY: 3.0, GAP_KEY: 0.3})
    assert again.searcher._ot_study.trials[0].values == pytest.approx([2.0, 0.2])


# --------------------------------------------------------------------------- Pareto


def test_pareto_dominance_and_ties():
    # (return, gap): higher return and lower gap are better
    pts = [
        (10.0, 0.5),  # 0: front (highest return)
        (5.0, 0.1),  # 1: front (lowest gap)
        (5.0, 0.3),  # 2: dominated by 1 (same return, higher gap)
        (4.0, 0.5),  # 3: dominated by 0, 1 and 2
        (7.0, 0.2),  # 4: front
        (7.0, 0.2),  # 5: an exact tie with 4: both stay on the front
        (10.0, 0.6),  # 6: dominated by 0 (same return, higher gap)
    ]
    assert pareto(pts) == [0, 1, 4, 5]
    assert pareto([]) == [] and pareto([(1.0, 1.0)]) == [0]


def _trial(name: str, lr: float, seed: int, ret: float, gap: float) -> Trial:
    rows = [
        {"training_iteration": 1, RETURN_KEY: -100.0, GAP_KEY: 9.0},  # not the final value
        {
            "training_iteration": 2,
            RETURN_KEY: ret,
            GAP_KEY: gap,
            "num_env_steps_sampled_lifetime": 400,
        },
    ]
    return Trial(
        path=Path(f"/x/{name}"),
        experiment="exp",
        algo="POCAR",
        env="fair/Lending-v0",
        notion="equal_opportunity",
        seed=seed,
        params={"lr": lr, "seed": seed, "env": "fair/Lending-v0"},
        rows=rows,
    )


def test_pareto_front_over_configurations_uses_the_means_over_seeds():
    trials = [
        # lr 0.1: one lucky seed (30, 0.0) but a poor mean (15, 0.25)
        _trial("a0", 0.1, 0, 30.0, 0.0),
        _trial("a1", 0.1, 1, 0.0, 0.5),
        # lr 0.2: mean (20, 0.2): dominates lr 0.1's mean although no seed beats (30, 0.0)
        _trial("b0", 0.2, 0, 22.0, 0.1),
        _trial("b1", 0.2, 1, 18.0, 0.3),
        # lr 0.3: mean (10, 0.1): fairer, poorer: also on the front
        _trial("c0", 0.3, 0, 10.0, 0.1),
        _trial("c1", 0.3, 1, 10.0, 0.1),
    ]
    configs = group(trials)
    assert [len(c.trials) for c in configs] == [2, 2, 2]  # the seed does not split them
    rows = summarize(configs)
    by_lr = {c.label: r for c, r in zip(configs, rows, strict=True)}
    a = by_lr["exp [lr=0.1]"]
    assert a["return"] == (15.0, 15.0, 2) and a["gap"]["equal_opportunity"] == (0.25, 0.25, 2)
    front = pareto_front(rows)
    assert {c.label for c, on in zip(configs, front, strict=True) if on} == {
        "exp [lr=0.2]",
        "exp [lr=0.3]",
    }
    table = format_pareto(rows, front)
    lines = table.splitlines()
    assert lines[2].startswith(
        "| * | exp [lr=0.3] | 2 (0, 1) | 10.000 +- 0.000 | 0.1000"
    )  # front, by gap
    assert lines[3].startswith("| * | exp [lr=0.2] | 2 (0, 1) | 20.000 +- 2.000 | 0.2000")
    assert lines[4].startswith("|  | exp [lr=0.1] | 2 (0, 1) | 15.000 +- 15.000 | 0.2500")


def test_selection_rules():
    scores = [
        {"disparity": 0.3, "reward": 50.0},
        {"disparity": 0.01, "reward": 5.0},
        {"disparity": -0.01, "reward": 7.0},
        {"disparity": None, "reward": 99.0},
    ]
    assert select_by_rule(scores, "sellf", 0.05) == 2
    assert select_by_rule(scores, "max_reward", 0.05) == 0
    assert select_by_rule(scores, "min_disparity", 0.05) == 2  # |-0.01| ties: more reward
    rejected(spec(selection={"rule": "best"}), r"^selection.rule: 'best' is invalid")


def test_selection_averages_each_configuration_over_its_seeds():
    from rllib_fair.cli.summary import select_trial

    exp = validate_experiment(
        "exp",
        spec(
            seeds=[0, 1],
            config={"lr": {"choice": [0.1, 0.2]}},
            selection={"disparity": GAP_KEY, "rule": "max_reward", "last_iterations": 1},
        ),
    )

    def t(name, lr, seed, ret, gap):
        hist = [{RETURN_KEY: ret, GAP_KEY: gap}]
        return {"trial": name, "params": {"lr": lr, "seed": seed}, "history": hist}

    trials = [t("a0", 0.1, 0, 100.0, 0.1), t("a1", 0.1, 1, 0.0, 0.1)]
    trials += [t("b0", 0.2, 0, 60.0, 0.2), t("b1", 0.2, 1, 60.0, 0.4)]
    sel = select_trial(exp, trials)
    assert len(sel["scores"]) == 2  # one score per configuration, not per trial
    chosen = sel["selected"]
    assert chosen["params"] == {"lr": 0.2} and chosen["seeds"] == [0, 1]
    assert chosen["reward"] == 60.0 and chosen["disparity"] == pytest.approx(0.3)
    assert chosen["disparity_std"] == pytest.approx(0.1) and chosen["trials"] == ["b0", "b1"]


# --------------------------------------------------------------------------- end to end


def _train(argv: list[str], capsys) -> tuple[int, str, str]:
    rc = main(["train", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _trials(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and (p / "params.json").exists())


def _results(trial: Path) -> list[dict]:
    return [json.loads(x) for x in (trial / "result.json").read_text().splitlines() if x]


@pytest.mark.ray
def test_asha_stops_the_worse_trial_early(tmp_path, ray_session, capsys):
    """Two trials in turn; the second samples fewer steps per iteration and ASHA stops it."""
    s = spec(
        stop={"training_iteration": 2},
        config={"train_batch_size_per_learner": {"grid_search": [400, 200]}},
        tune={
            "scheduler": {
                "type": "asha",
                "metric": "num_env_steps_sampled_lifetime",
                "mode": "max",
                "grace_period": 1,
                "max_t": 2,
            },
            "max_concurrent_trials": 1,
        },
    )
    path = tmp_path / "asha.yaml"
    path.write_text(yaml.safe_dump({"asha": s}))
    rc, out, err = _train([str(path), "--storage-path", str(tmp_path / "r")], capsys)
    assert rc == 0, out + err
    iters = {}
    for trial in _trials(tmp_path / "r" / "asha"):
        batch = json.loads((trial / "params.json").read_text())["_train_batch_size_per_learner"]
        iters[batch] = len(_results(trial))
    assert iters == {400: 2, 200: 1}
    assert out.count("stopped early by the asha scheduler (not an error)") == 1
    assert "error:" not in out


@pytest.mark.ray
def test_asha_example_fast_variant_runs_every_sample_on_every_seed(tmp_path, ray_session, capsys):
    example = ROOT / "tuned_examples/pocar/lending-pocar-asha-fast.yaml"
    storage = tmp_path / "r"
    rc, out, err = _train([str(example), "--storage-path", str(storage)], capsys)
    assert rc == 0, out + err
    folder = storage / "lending-pocar-asha-fast"
    trials = _trials(folder)
    assert len(trials) == 4  # 2 samples x 2 seeds
    by_config: dict[tuple, list[int]] = {}
    for trial in trials:
        params = json.loads((trial / "params.json").read_text())
        key = (params["beta_1"], params["beta_2"], params["lr"])
        assert 0.05 <= params["beta_1"] <= 1.0 and 0.0003 <= params["lr"] <= 0.003
        by_config.setdefault(key, []).append(params["seed"])
    # each sampled configuration runs on both seeds, with the seed in its config
    assert sorted(sorted(s) for s in by_config.values()) == [[0, 1], [0, 1]]
    pareto_rows = json.loads((folder / "pareto.json").read_text())
    assert len(pareto_rows) == 2 and any(r["pareto"] for r in pareto_rows)
    for row in pareto_rows:  # mean over the seeds of each trial's last 2 iterations
        finals = []
        for name in row["trial_names"]:
            rows = _results(folder / name)[-2:]
            finals.append(np.mean([r["env_runners"]["episode_return_mean"] for r in rows]))
        mean, std, n = row["return"]
        assert n == 2 and mean == pytest.approx(np.mean(finals))
        assert std == pytest.approx(np.std(finals))
    assert (folder / "pareto.png").read_bytes()[:4] == b"\x89PNG"
    assert (folder / "pareto.md").read_text().startswith("| front | configuration |")
    assert "reward-gap Pareto front over configurations" in out
    selection = json.loads((folder / "selection.json").read_text())
    assert len(selection["scores"]) == 2 and selection["selected"]["seeds"] in ([0, 1], [1, 0])
    # compare reads the sweep's folder: two configurations over two seeds
    assert main(["compare", str(folder), "--no-plots"]) == 0
    compared = json.loads((folder / "compare" / "compare.json").read_text())
    assert sorted(r["seeds"] for r in compared) == [["0", "1"], ["0", "1"]]


@pytest.mark.ray
def test_optuna_example_fast_variant_is_multi_objective_over_seeds(tmp_path, ray_session, capsys):
    example = ROOT / "tuned_examples/elbertpo/lending-elbertpo-optuna-fast.yaml"
    storage = tmp_path / "r"
    rc, out, err = _train([str(example), "--storage-path", str(storage)], capsys)
    assert rc == 0, out + err
    folder = storage / "lending-elbertpo-optuna-fast"
    params = [json.loads((t / "params.json").read_text()) for t in _trials(folder)]
    assert sorted(p["seed"] for p in params) == [0, 1]
    assert len({(p["alpha"], p["lr"]) for p in params}) == 1  # one proposal, two seeds
    assert 100.0 <= params[0]["alpha"] <= 20000.0
    assert all(len(t.name) < 60 for t in _trials(folder))  # short trial folder names
    (row,) = json.loads((folder / "pareto.json").read_text())
    assert row["pareto"] and row["trials"] == 2


@pytest.mark.ray
def test_pbt_example_fast_variant_runs(tmp_path, ray_session, capsys):
    example = ROOT / "tuned_examples/ppo/lending-ppo-pbt-fast.yaml"
    storage = tmp_path / "r"
    rc, out, err = _train([str(example), "--storage-path", str(storage)], capsys)
    assert rc == 0, out + err
    folder = storage / "lending-ppo-pbt-fast"
    trials = _trials(folder)
    assert len(trials) == 2
    for trial in trials:
        rows = _results(trial)
        assert rows[-1]["num_env_steps_sampled_lifetime"] >= 400
        assert math.isfinite(rows[-1]["fairness"]["equal_opportunity"]["bias"])
    assert (folder / "pareto.json").exists() and "error:" not in out
