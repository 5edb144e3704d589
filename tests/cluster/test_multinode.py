"""A real two-node Ray cluster on this machine runs a tuned example through the CLI.

The head node (1 CPU) and a worker node (1 CPU and a custom ``rollout`` resource) are
started with ``ray start`` in their own temp dir, so they never touch another Ray
instance of the machine, and are torn down by process id (``ray stop`` would kill every
Ray process of the user). The CLI connects with ``--address``, asks for one env runner
that needs the ``rollout`` resource, and the run's ``placement`` results must show the
runner on the worker node.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.ray, pytest.mark.cluster]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "tuned_examples" / "ppo" / "lending-ppo.yaml"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray_bin() -> str:
    return str(Path(sys.executable).with_name("ray"))


def _env() -> dict:
    return dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")


def _kill_session_processes(temp_dir: str) -> None:
    """SIGKILLs every process whose command line names this cluster's temp dir."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if temp_dir in cmd:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def two_node_cluster():
    temp_dir = tempfile.mkdtemp(prefix="rfc", dir="/tmp")  # short: unix socket paths
    port = _free_port()
    address = f"127.0.0.1:{port}"
    common = ["--disable-usage-stats", "--include-dashboard=false"]
    try:
        subprocess.run(
            [_ray_bin(), "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1"]
            + ["--num-cpus=1", "--num-gpus=0", f"--temp-dir={temp_dir}"]
            + common,
            env=_env(),
            check=True,
            capture_output=True,
            timeout=120,
        )
        subprocess.run(
            [_ray_bin(), "start", f"--address={address}", "--node-ip-address=127.0.0.1"]
            + ["--num-cpus=1", "--num-gpus=0", '--resources={"rollout": 1}']
            + ["--disable-usage-stats"],
            env=_env(),
            check=True,
            capture_output=True,
            timeout=120,
        )
        yield address, temp_dir
    finally:
        _kill_session_processes(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _nodes(address: str) -> list[dict]:
    code = (
        f"import json, ray; ray.init(address={address!r}, logging_level='ERROR'); "
        "print(json.dumps([{'id': n['NodeID'], 'resources': n['Resources']} "
        "for n in ray.nodes() if n['Alive']]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_cli_runs_env_runners_on_the_worker_node(two_node_cluster, tmp_path):
    address, _ = two_node_cluster
    nodes = _nodes(address)
    assert len(nodes) == 2
    worker = [n["id"] for n in nodes if "rollout" in n["resources"]]
    head = [n["id"] for n in nodes if "rollout" not in n["resources"]]
    assert len(worker) == 1 and len(head) == 1

    storage = tmp_path / "results"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "rllib_fair.cli",
            "train",
            str(EXAMPLE),
            "--address",
            address,
            "--stop",
            "training_iteration=1",
            "--num-env-runners",
            "1",
            "--config",
            "custom_resources_per_env_runner={rollout: 1}",
            "--config",
            "train_batch_size_per_learner=500",
            "--storage-path",
            str(storage),
        ],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "== lending-ppo" in run.stdout
    results = list(storage.glob("lending-ppo/*/result.json"))
    assert len(results) == 1
    last = json.loads(results[0].read_text().splitlines()[-1])
    assert last["training_iteration"] == 1
    assert last["placement"]["env_runner_nodes"] == {worker[0]: 1}
    assert last["fault_tolerance"]["num_healthy_workers"] == 1


def test_a_request_the_cluster_cannot_meet_fails_at_once(two_node_cluster, tmp_path):
    """Two learners on a 2-CPU cluster whose driver also needs a CPU: refused with numbers."""
    address, _ = two_node_cluster
    start = time.time()
    run = subprocess.run(
        [sys.executable, "-m", "rllib_fair.cli", "train", str(EXAMPLE), "--address", address]
        + ["--config", "num_learners=2", "--storage-path", str(tmp_path / "r")],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    line = run.stderr.strip().splitlines()[-1]
    assert "asks for 3 CPU" in line and "cluster has 2" in line, line
    assert not (tmp_path / "r").exists()
    assert time.time() - start < 120
