"""Env-runner faults are survived and reported, never silent.

An environment that raises once, mid-episode, on a remote env runner: the run must
finish its budget, print a warning when it happens, report the restart in the final
table, and keep every metric finite.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import pytest
import yaml

from rllib_fair.cli import main
from rllib_fair.cli.results import flatten
from rllib_fair.envs.lending import LendingEnv

# the module-scoped fixture is computed once: keep these tests on one xdist worker
pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("fault_tolerance")]

FLAKY_ID = "rllib-fair-test/FlakyLending-v0"


class FlakyLending(LendingEnv):
    """The lending env, but step ``fail_at`` of the first env to reach it raises once.

    "Once" across processes: the first env that raises leaves ``marker`` on disk, so
    the env rebuilt in the restarted runner steps normally.
    """

    def __init__(self, marker: str, fail_at: int = 150, **kwargs):
        super().__init__(**kwargs)
        self._marker = marker
        self._fail_at = fail_at
        self._steps = 0

    def step(self, action):
        self._steps += 1
        if self._steps == self._fail_at and not os.path.exists(self._marker):
            Path(self._marker).write_text("failed once\n")
            raise RuntimeError("FlakyLending: simulated crash of the environment")
        return super().step(action)


@pytest.fixture(scope="module")
def flaky_env_registered(ray_session):
    import gymnasium as gym
    import ray.cloudpickle
    from ray import tune

    # Remote env runners cannot import this test module: ship its classes by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    if FLAKY_ID not in gym.registry:
        gym.register(id=FLAKY_ID, entry_point=FlakyLending)
    tune.register_env(FLAKY_ID, lambda cfg: FlakyLending(**cfg))
    return FLAKY_ID


def test_env_crash_on_remote_runner_is_survived_and_reported(
    tmp_path, flaky_env_registered, capsys
):
    marker = tmp_path / "crashed"
    spec = {
        "flaky": {
            "run": "PPO",
            "env": flaky_env_registered,
            "env_config": {"marker": str(marker), "fail_at": 150, "max_steps": 200},
            "stop": {"num_env_steps_sampled_lifetime": 1600},
            "config": {
                "fairness_notion": "equal_opportunity",
                "num_env_runners": 1,
                "train_batch_size_per_learner": 400,
                "minibatch_size": 100,
                "num_epochs": 1,
                "model_config": {"fcnet_hiddens": [16]},
                "delay_between_env_runner_restarts_s": 0.5,
            },
        }
    }
    path = tmp_path / "flaky.yaml"
    path.write_text(yaml.safe_dump(spec))
    code = main(["train", str(path), "--storage-path", str(tmp_path / "results")])
    out, err = capsys.readouterr()
    assert marker.exists(), "the env never raised: the test did not test anything"
    assert code == 0, out + err
    assert "env runner(s) failed (env rllib-fair-test/FlakyLending-v0)" in err
    # the env's own error, once, with the runner, the env and the step
    errors = [line for line in err.splitlines() if "ENV ERROR" in line]
    assert len(errors) == 1, err
    assert (
        "env runner 1 (rllib-fair-test/FlakyLending-v0): RuntimeError: FlakyLending: "
        "simulated crash of the environment (in env.step, after 149 env steps on this runner)"
    ) in errors[0]
    table = out[out.index("== flaky") :]
    assert "1 restarted" in table and "0/1 healthy" not in table
    results = sorted((tmp_path / "results" / "flaky").glob("*/result.json"))
    assert len(results) == 1
    rows = [json.loads(line) for line in results[0].read_text().splitlines()]
    assert rows[-1]["num_env_steps_sampled_lifetime"] >= 1600
    assert rows[-1]["fault_tolerance"]["num_remote_worker_restarts"] == 1
    for row in rows:
        for key, value in flatten(row.get("fairness", {})).items():
            assert math.isfinite(value), key


class NaNRewardLending(LendingEnv):
    """The lending env whose reward turns NaN after ``nan_at`` steps."""

    def __init__(self, nan_at: int = 50, **kwargs):
        super().__init__(**kwargs)
        self._nan_at = nan_at
        self._steps = 0

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        self._steps += 1
        return (
            obs,
            float("nan") if self._steps >= self._nan_at else reward,
            terminated,
            truncated,
            info,
        )


NAN_ID = "rllib-fair-test/NaNRewardLending-v0"


def test_non_finite_losses_fail_the_run_with_a_clear_message(tmp_path, ray_session, capsys):
    import gymnasium as gym
    import ray.cloudpickle
    from ray import tune

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    if NAN_ID not in gym.registry:
        gym.register(id=NAN_ID, entry_point=NaNRewardLending)
    tune.register_env(NAN_ID, lambda cfg: NaNRewardLending(**cfg))
    spec = {
        "nan": {
            "run": "PPO",
            "env": NAN_ID,
            "env_config": {"max_steps": 200},
            "stop": {"training_iteration": 5},
            "config": {
                "fairness_notion": "equal_opportunity",
                "train_batch_size_per_learner": 200,
                "minibatch_size": 100,
                "num_epochs": 1,
                "model_config": {"fcnet_hiddens": [8]},
            },
        }
    }
    path = tmp_path / "nan.yaml"
    path.write_text(yaml.safe_dump(spec))
    code = main(["train", str(path), "--storage-path", str(tmp_path / "results")])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert "error: losses became non-finite at iteration 1 (learners/default_policy/" in out
    rows = (tmp_path / "results" / "nan").glob("*/result.json")
    (result,) = list(rows)
    assert len(result.read_text().splitlines()) == 1  # stopped at once, not 5 iterations
