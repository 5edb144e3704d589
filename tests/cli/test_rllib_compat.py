"""The classic ``rllib`` command line maps onto ``rllib-fair`` and runs the same code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rllib_fair.cli import rllib_compat
from rllib_fair.cli.rllib_compat import _parser, translate_evaluate, translate_train

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "tuned_examples" / "ppo" / "lending-ppo.yaml")


def train_argv(argv, tmp_path):
    return translate_train(_parser().parse_args(["train", *argv]), tmp_path)


def test_train_file_with_json_overrides(tmp_path):
    argv = train_argv(
        ["file", EXAMPLE, "--stop", '{"training_iteration": 2}', "--config", '{"lr": 0.001}']
        + ["--local-dir", "out", "--ray-num-cpus", "2"],
        tmp_path,
    )
    assert argv == [
        "train",
        EXAMPLE,
        "--stop",
        "training_iteration=2",
        "--config",
        "lr=0.001",
        "--storage-path",
        "out",
        "--num-cpus",
        "2",
    ]
    assert train_argv(["-f", EXAMPLE], tmp_path) == ["train", EXAMPLE]
    assert train_argv([EXAMPLE, "--ray-address", "auto"], tmp_path)[-2:] == ["--address", "auto"]


def test_train_algo_env_builds_an_experiment_file(tmp_path):
    argv = train_argv(
        ["--algo", "POCAR", "--env", "fair/Lending-v0", "--stop", '{"training_iteration": 1}']
        + ["--config", '{"lr": 0.001, "env_config": {"max_steps": 300}}', "--checkpoint-at-end"],
        tmp_path,
    )
    assert argv[:2] == ["train", str(tmp_path / "experiment.yaml")]
    spec = yaml.safe_load((tmp_path / "experiment.yaml").read_text())
    assert spec == {
        "POCAR-fair_Lending-v0": {
            "run": "POCAR",
            "env": "fair/Lending-v0",
            "env_config": {"max_steps": 300},
            "config": {"lr": 0.001},
            "checkpoint_config": {"checkpoint_at_end": True},
        }
    }
    assert argv[2:] == ["--stop", "training_iteration=1"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--algo", "PPO"], "both --algo NAME and --env ID"),
        (["file", EXAMPLE, "--algo", "PPO"], "either a file or --algo/--env"),
        (["file", EXAMPLE, "--framework", "tf2"], "--framework: 'tf2' is invalid"),
        (["file", EXAMPLE, "--stop", "[1, 2]"], "--stop: '[1, 2]' is not a JSON object"),
    ],
)
def test_train_bad_classic_arguments(argv, message, capsys):
    assert rllib_compat.main(["train", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_evaluate_maps_episodes_to_seeds():
    args = _parser().parse_args(["evaluate", "ckpt", "--episodes", "3", "--steps", "50"])
    assert translate_evaluate(args) == ["evaluate", "ckpt", "--steps", "50", "--seeds", "3"]


def test_refuses_when_another_package_provides_rllib(monkeypatch, capsys):
    monkeypatch.setattr(rllib_compat, "other_rllib_provider", lambda: "ray")
    assert rllib_compat.main(["train", "file", EXAMPLE]) == 2
    err = capsys.readouterr().err
    assert "another installed package (ray) also provides an `rllib` command" in err


def test_no_other_rllib_command_is_installed():
    assert rllib_compat.other_rllib_provider() is None


@pytest.mark.ray
def test_classic_train_runs_the_same_code_path(ray_session, tmp_path, capsys):
    code = rllib_compat.main(
        ["train", "--algo", "PPO", "--env", "fair/Lending-v0"]
        + ["--stop", '{"training_iteration": 1}', "--local-dir", str(tmp_path / "r")]
        + [
            "--config",
            json.dumps({"train_batch_size_per_learner": 300, "env_config": {"max_steps": 300}}),
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "== PPO-fair_Lending-v0: PPO on fair/Lending-v0" in out
    assert list((tmp_path / "r" / "PPO-fair_Lending-v0").glob("*/result.json"))
