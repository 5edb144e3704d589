"""The myopic baselines (Yin et al. 2023, Eq. 7a-d) as RLlib algorithms."""

from __future__ import annotations

import json
import math
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.algorithms import get_config_class
from rllib_fair.algorithms.myopic.myopic import OBJECTIVES
from rllib_fair.algorithms.myopic.torch.myopic_torch_rl_module import MyopicRLModule
from rllib_fair.envs.replicator_myopic import myopic_action

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = {"Myopic": "myopic", "MyopicFair": "myopic_fair", "Maxmin": "maxmin"}


def _module(objective, env_id="fair/Replicator-v0", env_config=None, lam=0.5):
    env = gymnasium.make(env_id, **(env_config or {}))
    cfg = {
        "myopic_env": env_id,
        "myopic_env_config": env_config or {},
        "objective": objective,
        "fair_lambda": lam,
        "solver_grid": 41,
        "solver_iters": 30,
        "solver_step": 0.05,
    }
    module = MyopicRLModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config=cfg,
    )
    return module, env


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_module_acts_like_the_solver(objective):
    """Module output == myopic_action on the env model, for every observation mode."""
    env_config = {"loss": "zero_one", "disparity": "eop", "observation_mode": "distribution"}
    module, env = _module(objective, "fair/ReplicatorAdult-v0", env_config, lam=0.7)
    model = env.unwrapped
    obs = np.stack([env.reset(seed=s)[0] for s in range(3)])
    got = module.act(obs)
    for row, action in zip(obs, got):
        want = myopic_action(
            model, objective, lam=0.7, q=model.q_from_observation(row), grid=41, iters=30
        )
        np.testing.assert_allclose(action, want, atol=1e-6)
    assert module.get_state() == {}


def test_variants_only_change_the_default_objective():
    for name, objective in VARIANTS.items():
        cfg = get_config_class(name)()
        assert cfg.objective == objective
        assert cfg.algo_class.__name__ == name
        assert cfg.normalize_actions is False


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("objective", "greedy", "objective: 'greedy' is invalid; valid choices: myopic"),
        ("fair_lambda", 1.5, "fair_lambda: 1.5 is invalid"),
        ("fair_lambda", float("nan"), "fair_lambda: nan is invalid"),
        ("solver_grid", 1, "solver_grid: 1 is invalid"),
        ("solver_step", 0.0, "solver_step: 0.0 is invalid"),
    ],
)
def test_validate_messages(key, value, needle):
    cfg = get_config_class("Myopic")().environment("fair/Replicator-v0")
    setattr(cfg, key, value)
    with pytest.raises(ValueError) as err:
        cfg.validate()
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_validate_rejects_an_env_without_a_one_step_model():
    cfg = get_config_class("Myopic")().environment("fair/Lending-v0")
    with pytest.raises(ValueError, match="env: 'fair/Lending-v0' is invalid for a myopic"):
        cfg.validate()


@pytest.mark.ray
@pytest.mark.parametrize("runners", [0, 1])
def test_trains_from_yaml(runners, tmp_path, ray_session, capsys):
    """The tuned example runs locally and with a remote env runner; metrics are finite."""
    from rllib_fair.cli import main

    storage = tmp_path / "results"
    rc = main(
        [
            "train",
            str(ROOT / "tuned_examples/myopic/replicator_adult-myopic_fair.yaml"),
            "--num-env-runners",
            str(runners),
            "--stop",
            "training_iteration=1",
            "--config",
            "train_batch_size_per_learner=150",
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
    assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 150
    rep = result["env_runners"]["replicator"]
    # accept-all collapse of the qualification rates under the reconstructed utilities
    assert rep["q_mean"] < 0.5 and math.isfinite(rep["loss_mean"])
    assert result["fairness"]["demographic_parity"]["bias"] < 0.01
