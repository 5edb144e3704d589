"""The files in ``cluster/`` are valid for the tools that read them."""

from __future__ import annotations

import copy
import shlex
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "cluster"


@pytest.mark.parametrize("name", ["onprem.yaml", "aws.yaml"])
def test_launcher_configs_pass_ray_up_validation(name):
    """What `ray up` checks before it contacts a provider."""
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = yaml.safe_load((CLUSTER / name).read_text())
    prepared = prepare_config(copy.deepcopy(config))
    validate_config(prepared)
    assert prepared["available_node_types"]
    setup = " ".join(config["setup_commands"])
    assert "torch==2.13.0" in setup and "rllib-fair" in setup


def test_rayjob_runs_a_tuned_example_that_validates():
    from rllib_fair.cli.experiment import load_experiments, validate_experiment

    job = yaml.safe_load((CLUSTER / "kuberay-rayjob.yaml").read_text())
    assert job["apiVersion"] == "ray.io/v1" and job["kind"] == "RayJob"
    spec = job["spec"]
    assert spec["rayClusterSpec"]["rayVersion"].startswith("2.60")
    argv = shlex.split(spec["entrypoint"])
    assert argv[:2] == ["rllib-fair", "train"] and "--address" in argv
    example = ROOT / argv[2]
    runners = int(argv[argv.index("--num-env-runners") + 1])
    for name, exp in load_experiments(example).items():
        validated = validate_experiment(name, exp, num_env_runners=runners)
        assert validated.config.num_env_runners == runners
    images = {
        c["image"]
        for group in [spec["rayClusterSpec"]["headGroupSpec"]]
        + spec["rayClusterSpec"]["workerGroupSpecs"]
        for c in group["template"]["spec"]["containers"]
    }
    dockerfile = (CLUSTER / "Dockerfile").read_text()
    assert images == {"rllib-fair:0.1.0"} and "rllib-fair:0.1.0" in dockerfile
    assert "rayproject/ray:2.60.0" in dockerfile
