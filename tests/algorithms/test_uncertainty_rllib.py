"""The lending strategies of Lee et al. 2026 on RLlib (docs/methods/lee2026.md).

An episode with data seed S makes exactly the decisions of ``run_quarters(seed=S)``: the
base quarter is step 0, the streams, the design and the dtype are pinned.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.algorithms import ALGORITHMS, get_config_class
from rllib_fair.algorithms.uncertainty.uncertainty import VARIANTS, UncertaintyConfig
from rllib_fair.uncertainty import STRATEGIES, QuarterlyConfig, run_quarters

ROOT = Path(__file__).resolve().parents[2]
ENV = "fair/QuarterlyLending-v0"


def test_variants_only_change_the_default_strategy():
    assert set(VARIANTS.values()) | {"naive"} == set(STRATEGIES)
    for name, strategy in VARIANTS.items():
        assert ALGORITHMS[name].variant_of == "Uncertainty"
        cfg = get_config_class(name)()
        assert cfg.strategy == strategy and cfg.algo_class.__name__ == name
    assert UncertaintyConfig().strategy == "naive"


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"strategy": "greedy"}, "strategy: 'greedy' is invalid"),
        ({"delta": 2.0}, r"delta: 2.0 is invalid; valid: a number in \[0, 1\]"),
    ],
)
def test_validate_messages(changes, needle):
    cfg = UncertaintyConfig().training(**changes)
    with pytest.raises(ValueError, match=needle) as err:
        cfg.validate()
    assert "\n" not in str(err.value)


def test_validate_rejects_rllib_evaluation():
    # Evaluation runners would decide with an unfitted bank (theta = 0): refused.
    cfg = UncertaintyConfig().evaluation(evaluation_interval=1)
    with pytest.raises(ValueError, match=r"evaluation_interval=1: invalid; valid: None or 0"):
        cfg.validate()
    UncertaintyConfig().evaluation(evaluation_interval=0).validate()


def test_validate_rejects_other_envs_and_several_runners():
    with pytest.raises(ValueError, match="env: 'fair/Lending-v0' is invalid"):
        UncertaintyConfig().environment("fair/Lending-v0").validate()
    with pytest.raises(ValueError, match="at most 1 env runner"):
        UncertaintyConfig().env_runners(num_env_runners=2).validate()


def _agreement(strategy: str, seed: int, env_config: dict) -> None:
    cfg = (
        UncertaintyConfig()
        .environment(ENV, env_config=env_config)
        .training(strategy=strategy, train_batch_size_per_learner=8)
        .fairness(label_access="oracle")
        .env_runners(num_env_runners=0)
        .debugging(seed=seed)
    )
    algo = cfg.build_algo()
    try:
        algo.train()  # one episode: base quarter + 7 decision rounds
        log = list(algo.quarter_log)
    finally:
        algo.stop()
    core = QuarterlyConfig(strategy=strategy).replace(**env_config)
    records = run_quarters(core, seed=seed)
    assert len(log) == len(records) == env_config.get("num_partitions", 8) - 1
    cumulative = 0.0
    for rec, row in zip(records, log, strict=True):
        assert row["data_seed"] == seed and row["quarter"] == rec.quarter
        np.testing.assert_array_equal(row["granted"], rec.granted)
        assert row["metrics"]["decision_mismatch"] == 0
        for key in ("delta_sr", "delta_fpr", "delta_fnr", "delta_acc", "profit", "utility_q"):
            assert row["metrics"][key] == pytest.approx(rec.metrics[key], abs=1e-12), key
        cumulative += rec.metrics["utility_q"]
        assert row["metrics"]["cumulative_utility"] == pytest.approx(cumulative, abs=1e-9)
    assert row["metrics"]["n_explored"] == rec.metrics["n_explored"]


@pytest.mark.ray
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_rllib_path_equals_numpy_core(ray_session, strategy):
    """Same seed: the RLlib path makes the core's decisions and reports its metrics.

    ``l_y_b = 4`` is the one setting where uncertainty-aware differs from naive (core
    README), so every strategy's own rule is exercised.
    """
    _agreement(strategy, 5, {"dim": 3000, "l_y_b": 4.0})


@pytest.mark.ray
def test_observed_label_access_keeps_rejected_labels_on_the_runner(ray_session):
    cfg = (
        UncertaintyConfig()
        .environment(ENV, env_config={"dim": 2000})
        .training(train_batch_size_per_learner=8)
        .fairness(label_access="observed")
        .env_runners(num_env_runners=0)
        .debugging(seed=1)
    )
    algo = cfg.build_algo()
    try:
        result = algo.train()
        log = list(algo.quarter_log)
    finally:
        algo.stop()
    records = run_quarters(QuarterlyConfig().replace(dim=2000), seed=1)
    for rec, row in zip(records, log, strict=True):  # the bank never needed y_real
        np.testing.assert_array_equal(row["granted"], rec.granted)
        assert "profit" not in row["metrics"]  # oracle metrics stayed on the runner
        assert row["metrics"]["delta_sr"] == pytest.approx(rec.metrics["delta_sr"], abs=1e-12)
    assert math.isfinite(result["uncertainty"]["delta_sr"])


@pytest.mark.ray
@pytest.mark.parametrize("runners", [0, 1])
def test_trains_from_yaml(runners, tmp_path, ray_session, capsys):
    """The tuned example runs locally and with a remote env runner; metrics are finite."""
    from rllib_fair.cli import main

    storage = tmp_path / "results"
    rc = main(
        [
            "train",
            str(ROOT / "tuned_examples/uncertainty/quarterly_lending-prob_weighted.yaml"),
            "--num-env-runners",
            str(runners),
            "--stop",
            "training_iteration=1",
            "--config",
            "train_batch_size_per_learner=8",
            "--storage-path",
            str(storage),
        ]
    )
    out = capsys.readouterr()
    assert rc == 0, out.out + out.err
    (trial,) = [p for p in next(storage.iterdir()).iterdir() if p.is_dir()]
    assert json.loads((trial / "params.json").read_text())["num_env_runners"] == runners
    (line,) = (trial / "result.json").read_text().splitlines()
    result = json.loads(line)
    assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 8
    assert math.isfinite(result["env_runners"]["episode_return_mean"])
    assert math.isfinite(result["fairness"]["demographic_parity"]["bias"])
    assert result["uncertainty"]["decision_mismatch"] == 0
