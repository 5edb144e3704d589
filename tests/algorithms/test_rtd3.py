"""R-TD3 (Yin et al. 2023, Eq. 6): config, training from YAML, and its learning claim."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.algorithms.rtd3.evaluation import GRID_STATES, rllib_greedy_policy, rollouts
from rllib_fair.algorithms.rtd3.rtd3 import RTD3Config
from rllib_fair.envs.replicator import ReplicatorAdultEnv

ROOT = Path(__file__).resolve().parents[2]
TASK = {"loss": "zero_one", "disparity": "eop", "max_steps": 150}


def test_config_writes_the_relaxation_into_env_config():
    cfg = RTD3Config().environment("fair/ReplicatorAdult-v0", env_config=dict(TASK))
    cfg.relaxation(lambda_final=0.5, sharpness=20.0)
    cfg.validate()
    assert cfg.env_config == TASK  # validate() only checks
    cfg.freeze()  # what RLlib's Algorithm does next: the relaxation is written
    assert cfg.env_config == {
        **TASK,
        "reward_mode": "relaxed",
        "relaxation_lambda_final": 0.5,
        "relaxation_sharpness": 20.0,
    }
    # defaults are Eq. 6 exactly: lambda_H = 1, kappa = 1
    assert (RTD3Config().relaxation_lambda_final, RTD3Config().relaxation_sharpness) == (1.0, 1.0)


def test_env_reward_is_eq6_under_the_written_config():
    """The env built from the validated env_config pays 1 - ((1 - t/H) L + (t/H) D)."""
    cfg = RTD3Config().environment("fair/ReplicatorAdult-v0", env_config=dict(TASK))
    cfg.validate()
    cfg.freeze()
    env = ReplicatorAdultEnv(**cfg.env_config)
    env.reset(options={"q": [0.3, 0.7]})
    rng = np.random.default_rng(0)
    for t in range(1, 151):
        _, reward, *_, info = env.step(rng.random(2).astype(np.float32))
        lam = t / 150
        assert reward == pytest.approx(1 - ((1 - lam) * info["loss"] + lam * info["disparity"]))


@pytest.mark.parametrize(
    ("env", "env_config", "setting", "needle"),
    [
        ("Pendulum-v1", {}, {}, "env: 'Pendulum-v1' is invalid for RTD3"),
        (
            "fair/ReplicatorAdult-v0",
            {"reward_mode": "reward"},
            {},
            "env_config.reward_mode: 'reward' conflicts with RTD3",
        ),
        (
            "fair/ReplicatorAdult-v0",
            {"relaxation_sharpness": 20.0},
            {},
            "env_config.relaxation_sharpness: 20.0 conflicts with RTD3",
        ),
        ("fair/ReplicatorAdult-v0", {}, {"sharpness": 0.0}, "relaxation_sharpness: 0.0 is invalid"),
        (
            "fair/ReplicatorAdult-v0",
            {},
            {"lambda_final": float("nan")},
            "relaxation_lambda_final: nan is invalid",
        ),
    ],
)
def test_validate_messages(env, env_config, setting, needle):
    cfg = RTD3Config().environment(env, env_config=env_config).relaxation(**setting)
    with pytest.raises(ValueError) as err:
        cfg.validate()
    assert needle in str(err.value) and "\n" not in str(err.value)


@pytest.mark.ray
@pytest.mark.parametrize(
    ("example", "runners"),
    [("rtd3/replicator_adult-rtd3-fast.yaml", 0), ("rtd3/replicator_adult-rtd3-fast.yaml", 1)]
    + [("td3/replicator_adult-td3-fast.yaml", 0), ("td3/replicator_adult-td3-fast.yaml", 1)],
)
def test_trains_from_yaml(example, runners, tmp_path, ray_session, capsys):
    from rllib_fair.cli import main

    storage = tmp_path / "results"
    argv = [
        "train",
        str(ROOT / "tuned_examples" / example),
        "--num-env-runners",
        str(runners),
        "--stop",
        "num_env_steps_sampled_lifetime=400",
        "--config",
        "num_steps_sampled_before_learning_starts=100",
        "--config",
        "random_warmup_steps=100",
        "--storage-path",
        str(storage),
    ]
    rc = main(argv)
    out = capsys.readouterr()
    assert rc == 0, out.out + out.err
    (trial,) = [p for p in next(storage.iterdir()).iterdir() if p.is_dir()]
    assert json.loads((trial / "params.json").read_text())["num_env_runners"] == runners
    result = json.loads((trial / "result.json").read_text().splitlines()[-1])
    assert result["num_env_steps_sampled_lifetime"] >= 400
    learner = result["learners"]["default_policy"]
    assert math.isfinite(learner["qf_loss"]) and learner["num_module_steps_trained_lifetime"] > 0
    assert math.isfinite(result["fairness"]["equal_opportunity"]["bias"])


def _train_and_evaluate(lambda_final: float, steps: int) -> dict:
    cfg = (
        RTD3Config()
        .environment("fair/ReplicatorAdult-v0", env_config=dict(TASK))
        .env_runners(num_env_runners=0)
        .relaxation(lambda_final=lambda_final)
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        # One training step (100 env steps) per train(): RLlib's default 1 s minimum
        # iteration time made the stopping point, hence the result, timing-dependent.
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=0)
        .debugging(seed=0)
    )
    algo = cfg.build_algo()
    try:
        while algo.train()["num_env_steps_sampled_lifetime"] < steps:
            pass
        return rollouts(ReplicatorAdultEnv(**TASK), rllib_greedy_policy(algo), GRID_STATES)
    finally:
        algo.stop()


@pytest.mark.ray
def test_rtd3_cumulative_disparity_below_td3(ray_session):
    """Fig. 4's claim at a short budget: same seed and budget, greedy from 16 states.

    lambda_final = 0 is the paper's TD3 baseline (reward 1 - L). Both runs stop at
    exactly 4,000 steps and repeat bit for bit. Measured: R-TD3 cumulative
    equal-opportunity disparity 0.34 against TD3's 32.8 (seed 0); seeds 1-3 give
    0.95/61.3, 0.30/35.3, 0.51/28.5, so the 0.25 ratio has a wide margin.
    """
    torch.set_num_threads(1)
    td3 = _train_and_evaluate(0.0, 4000)
    rtd3 = _train_and_evaluate(1.0, 4000)
    td3_disp = td3["disparity"].sum(axis=1).mean()
    rtd3_disp = rtd3["disparity"].sum(axis=1).mean()
    assert rtd3_disp < 0.25 * td3_disp, (rtd3_disp, td3_disp)
    # Fig. 4's "at a higher loss" is not asserted: at this budget the order of the two
    # losses varies with the seed (R-TD3 22.4 vs TD3 11.3 for seed 0, 10.5 vs 7.0 for
    # seed 1, 9.9 vs 13.9 for seed 2); docs/results/yin2023.md reports it over seeds.


def test_validate_does_not_log_sacs_banner():
    """SACConfig.validate logs "You are running SAC on the new API stack!" on every call
    (four times per R-TD3 trial); R-TD3 is not SAC, so its validate() drops that line."""
    import logging

    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    sac_logger = logging.getLogger("ray.rllib.algorithms.sac.sac")  # Ray's loggers don't propagate
    handler = Collect(level=logging.WARNING)
    sac_logger.addHandler(handler)
    try:
        cfg = RTD3Config().environment("fair/ReplicatorAdult-v0", env_config=dict(TASK))
        for _ in range(3):
            cfg.validate()
        # the filter is scoped: SAC's own config still logs its banner
        from ray.rllib.algorithms.sac import SACConfig

        SACConfig().environment("Pendulum-v1").validate()
    finally:
        sac_logger.removeHandler(handler)
    banners = [m for m in seen if "running SAC on the new API stack" in m]
    assert len(banners) == 1
