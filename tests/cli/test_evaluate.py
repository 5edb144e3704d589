"""`rllib-fair evaluate CHECKPOINT`: SELLF's deployment protocol for any checkpoint."""

from __future__ import annotations

import json
import math

import pytest

from rllib_fair.algorithms import get_config_class
from rllib_fair.cli import main
from rllib_fair.envs import env_info

# the module-scoped checkpoint is trained once: keep these tests on one xdist worker
pytestmark = pytest.mark.xdist_group("evaluate")


@pytest.fixture(scope="module")
def checkpoint(ray_session, tmp_path_factory):
    cfg = (
        get_config_class("PPO")()
        .environment("fair/LendingFICO-v0", env_config={"max_steps": 300})
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .fairness(disparity_window=100)
        .debugging(seed=0)
    )
    algo = cfg.build_algo()
    path = tmp_path_factory.mktemp("ckpt") / "algo"
    try:
        algo.train()
        algo.save_to_path(str(path))
    finally:
        algo.stop()
    return path


@pytest.mark.ray
def test_evaluate_reports_mean_and_std_over_seeds(checkpoint, tmp_path, capsys):
    out = tmp_path / "eval.json"
    assert (
        main(["evaluate", str(checkpoint), "--steps", "250", "--seeds", "3", "--json", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    assert "deployment over 3 seeds (equal_opportunity, window 100)" in text
    assert "mean true disparity" in text and "+-" in text
    data = json.loads(out.read_text())
    assert [r["seed"] for r in data["runs"]] == [0, 1, 2]
    for run in data["runs"]:
        assert run["steps"] == 250  # the deployment horizon replaces the training one
        assert math.isfinite(run["mean_disparity"]) and math.isfinite(run["final_gap"])
    # greedy deployment is deterministic under the seeds
    again = tmp_path / "again.json"
    assert (
        main(["evaluate", str(checkpoint), "--steps", "250", "--seeds", "3", "--json", str(again)])
        == 0
    )
    assert json.loads(again.read_text())["runs"] == data["runs"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--steps", "0"], "--steps: 0 is invalid; valid: an integer >= 1"),
        (["--notion", "fairness"], "--notion: unknown fairness notion 'fairness'"),
    ],
)
def test_evaluate_bad_input(tmp_path, capsys, argv, message):
    assert main(["evaluate", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_evaluate_missing_checkpoint(tmp_path, capsys):
    assert main(["evaluate", str(tmp_path / "nope")]) == 2
    assert "CHECKPOINT" in capsys.readouterr().err


@pytest.mark.ray
def test_evaluate_relative_trial_and_experiment_folders(checkpoint, tmp_path, capsys, monkeypatch):
    """A relative path, a trial folder and an experiment folder all find the checkpoint."""
    import shutil

    trial = tmp_path / "exp" / "PPO_trial_0"
    shutil.copytree(checkpoint, trial / "checkpoint_000000")
    monkeypatch.chdir(tmp_path)
    for given in ("exp/PPO_trial_0/checkpoint_000000", "exp/PPO_trial_0", "exp"):
        assert main(["evaluate", given, "--steps", "50", "--seeds", "1"]) == 0
        out = capsys.readouterr().out
        assert f"checkpoint: {trial / 'checkpoint_000000'}" in out
        assert "actions: greedy" in out and "--explore" in out


@pytest.mark.ray
def test_evaluate_explore_says_so_and_is_seeded(checkpoint, tmp_path, capsys):
    runs = []
    for name in ("a.json", "b.json"):
        argv = ["evaluate", str(checkpoint), "--steps", "200", "--seeds", "2", "--explore"]
        assert main([*argv, "--json", str(tmp_path / name)]) == 0
        assert "actions: sampled from the policy" in capsys.readouterr().out
        runs.append(json.loads((tmp_path / name).read_text())["runs"])
    assert runs[0] == runs[1]


@pytest.mark.ray
def test_evaluate_refuses_a_notion_the_env_cannot_measure(checkpoint, capsys):
    argv = ["evaluate", str(checkpoint), "--steps", "50", "--seeds", "1", "--notion"]
    assert main([*argv, "benefit_rate"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "'benefit_rate' cannot be measured on 'fair/LendingFICO-v0'" in err[0]


def test_evaluate_json_folder_checked_first(checkpoint, tmp_path, capsys):
    argv = ["evaluate", str(checkpoint), "--json", str(tmp_path / "missing" / "x.json")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--json" in err[0] and "does not exist" in err[0]


def test_evaluate_folder_without_checkpoint(tmp_path, capsys):
    (tmp_path / "trial").mkdir()
    assert main(["evaluate", str(tmp_path)]) == 2
    assert "no algorithm checkpoint in or under" in capsys.readouterr().err


@pytest.mark.ray
def test_evaluate_continuous_action_checkpoint(ray_session, tmp_path, capsys):
    """Attention's Box actions go through the module's action distribution and connectors."""
    cfg = (
        get_config_class("PPO")()
        .environment("fair/Attention-v0", env_config={"max_steps": 50})
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )
    algo = cfg.build_algo()
    try:
        algo.train()
        algo.save_to_path(str(tmp_path / "ckpt"))
    finally:
        algo.stop()
    out = tmp_path / "eval.json"
    argv = ["evaluate", str(tmp_path / "ckpt"), "--steps", "30", "--seeds", "2"]
    assert main([*argv, "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["summary"]["notion"] == "benefit_rate"
    for run in data["runs"]:
        assert run["steps"] == 30
        assert math.isfinite(run["cumulative_reward"]) and math.isfinite(run["final_gap"])


def _sweep(checkpoint, root, selected: str | None):
    """An experiment folder with two trials; the second one's checkpoint is the newest."""
    import os
    import shutil

    exp = root / "sweep"
    names = ["FairPPO_fair_Lending-v0_0_lr=0.1", "FairPPO_fair_Lending-v0_1_lr=0.2"]
    for i, name in enumerate(names):
        target = exp / name / "checkpoint_000000"
        shutil.copytree(checkpoint, target)
        os.utime(target, (1_000_000 + i, 1_000_000 + i))
    chosen = None
    if selected is not None:
        chosen = {"trial": selected, "params": {"lr": 0.1}, "disparity": 0.01, "reward": 2.5}
    (exp / "selection.json").write_text(
        json.dumps(
            {
                "rule": "SELLF Alg. 2",
                "disparity_key": "fairness/equal_opportunity/bias",
                "reward_key": "env_runners/episode_return_mean",
                "last_iterations": 3,
                "selected": chosen,
            }
        )
    )
    return exp, names


@pytest.mark.ray
def test_evaluate_sweep_folder_deploys_the_selected_trial(
    checkpoint, tmp_path, capsys, monkeypatch
):
    """Not the newest trial: the one selection.json chose, named with the reason; the
    report has each group's rate; no empty folder is left in ~/ray_results."""
    import ray.train.constants
    import ray.tune.trainable.trainable

    ray_results = tmp_path / "ray_results"
    for module in (ray.train.constants, ray.tune.trainable.trainable):
        monkeypatch.setattr(module, "DEFAULT_STORAGE_PATH", str(ray_results))
    exp, names = _sweep(checkpoint, tmp_path, selected="FairPPO_fair_Lending-v0_0_lr=0.1")
    out_json = tmp_path / "eval.json"
    argv = ["evaluate", str(exp), "--steps", "200", "--seeds", "2", "--json", str(out_json)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"checkpoint: {exp / names[0] / 'checkpoint_000000'}\n" in out
    assert f"trial {names[0]} (lr=0.1), chosen in selection.json by SELLF Alg. 2" in out
    (line,) = [ln for ln in out.splitlines() if ln.startswith("  rates per group (tpr): ")]
    groups = list(env_info("fair/LendingFICO-v0")["group_names"])
    assert all(f" {g} " in line for g in groups), line
    data = json.loads(out_json.read_text())
    assert "selection.json" in data["chosen_because"]
    rates = data["summary"]["rates"]["tpr"]
    assert list(rates) == groups
    for run in data["runs"]:
        assert list(run["rates"]["tpr"]) == groups
        for value in run["rates"]["tpr"].values():
            assert math.isnan(value) or 0.0 <= value <= 1.0
    assert not ray_results.exists() or not list(ray_results.iterdir())


def test_evaluate_sweep_whose_selection_chose_nothing(checkpoint, tmp_path, capsys):
    exp, names = _sweep(checkpoint, tmp_path, selected=None)
    assert main(["evaluate", str(exp)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "selected no trial" in err[0] and names[0] in err[0]
