"""Ctrl-C and SIGTERM checkpoint the running trial, exit 130 / 143, and ``--resume`` goes on.

The run is a real ``rllib-fair train`` process. SIGINT goes to its whole process
group, as a terminal's Ctrl-C does (Ray's processes included); SIGTERM goes to the
driver alone, as ``kill`` or a batch scheduler sends it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from rllib_fair.cli import main
from rllib_fair.cli.storage import MANIFEST, check_checkpoint

pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("interrupt")]

NAME = "interrupt-ppo"
ITERATIONS = 40


def spec(**checkpoint) -> dict:
    return {
        NAME: {
            "run": "PPO",
            "env": "fair/Lending-v0",
            "env_config": {"max_steps": 200},
            "stop": {"training_iteration": ITERATIONS},
            **({"checkpoint_config": checkpoint} if checkpoint else {}),
            "config": {
                "seed": 0,
                "num_env_runners": 0,
                "train_batch_size_per_learner": 200,
                "minibatch_size": 100,
                "num_epochs": 1,
                "model_config": {"fcnet_hiddens": [8]},
            },
        }
    }


def trial_dir(storage: Path) -> Path:
    (trial,) = [p for p in (storage / NAME).iterdir() if (p / "params.json").is_file()]
    return trial


def iterations(trial: Path) -> list[int]:
    lines = (trial / "result.json").read_text().splitlines()
    return [json.loads(line)["training_iteration"] for line in lines]


def start(path: Path, storage: Path, log: Path) -> subprocess.Popen:
    env = dict(os.environ, RAY_AUTH_MODE="disabled", TUNE_GLOBAL_CHECKPOINT_S="0")
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rllib_fair.cli",
            "train",
            str(path),
            "--storage-path",
            str(storage),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
        start_new_session=True,  # its own process group, as a shell job has
    )


def wait_for_iterations(storage: Path, proc, n: int, log: Path, timeout=240.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, "ended before the signal: " + log.read_text()[-2000:]
        trials = list((storage / NAME).glob("*/result.json")) if (storage / NAME).is_dir() else []
        if trials and len(trials[0].read_text().splitlines()) >= n:
            return
        time.sleep(0.2)
    raise AssertionError("the run did not reach the iteration to interrupt")


@pytest.mark.parametrize(
    ("signum", "code"),
    [(signal.SIGINT, 130), pytest.param(signal.SIGTERM, 143, marks=pytest.mark.slow)],
    ids=["sigint", "sigterm"],
)
def test_signal_checkpoints_the_trial_and_resume_continues(
    tmp_path, ray_session, capsys, signum, code
):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(spec()))  # no checkpoint settings: as the README example
    storage, log = tmp_path / "res", tmp_path / "run.log"
    proc = start(path, storage, log)
    try:
        wait_for_iterations(storage, proc, 3, log)
        if signum == signal.SIGINT:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGTERM)
        rc = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    err = log.read_text()
    assert rc == code, err[-3000:]
    name = "SIGINT" if signum == signal.SIGINT else "SIGTERM"
    assert f"{name} received: checkpointing 1 running trial(s)" in err
    assert f"interrupted by {name}" in err
    assert f"resume with: rllib-fair train {path} --resume --storage-path {storage}" in err

    trial = trial_dir(storage)
    done = iterations(trial)
    assert done == list(range(1, len(done) + 1)) and len(done) < ITERATIONS
    (ckpt,) = sorted(trial.glob("checkpoint_*"))
    assert check_checkpoint(ckpt).state == "complete"
    saved_at = json.loads((ckpt / MANIFEST).read_text())["training_iteration"]
    assert saved_at == done[-1]  # the iteration in progress at the signal, kept
    assert f"checkpointed at iteration {saved_at}: {ckpt}" in err
    if signum == signal.SIGTERM:
        return

    capsys.readouterr()
    assert main(["train", str(path), "--storage-path", str(storage), "--resume"]) == 0
    out = capsys.readouterr().out
    assert f"continues from {ckpt.name} (iteration {saved_at})" in out
    assert trial_dir(storage) == trial
    rows = [json.loads(line) for line in (trial / "result.json").read_text().splitlines()]
    # one curve: every iteration once, the resumed ones restored from that checkpoint
    assert [r["training_iteration"] for r in rows] == list(range(1, ITERATIONS + 1))
    first = rows[saved_at]
    assert first["iterations_since_restore"] == 1
    steps = [r["num_env_steps_sampled_lifetime"] for r in rows]
    assert steps == [200 * i for i in range(1, ITERATIONS + 1)]


@pytest.mark.slow  # 25 s; the warning's text is also checked in test_storage.py
def test_resume_without_a_checkpoint_says_so(tmp_path, ray_session, capsys):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(spec(checkpoint_every_minutes=0)))
    storage, log = tmp_path / "res", tmp_path / "run.log"
    proc = start(path, storage, log)
    try:
        wait_for_iterations(storage, proc, 3, log)
        time.sleep(0.5)  # Tune saves its experiment state after each result (period 0)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # no chance to checkpoint
        proc.wait(30)
    trial = trial_dir(storage)
    assert not list(trial.glob("checkpoint_*"))
    before = len(iterations(trial))
    capsys.readouterr()
    assert main(["train", str(path), "--storage-path", str(storage), "--resume"]) == 0
    err = capsys.readouterr().err
    assert f"WARNING: trial {trial.name} has no checkpoint: it restarts from iteration 1" in err
    assert f"its {before} iteration(s) so far are trained again" in err


def test_second_run_into_a_running_experiment_is_refused(tmp_path, capsys):
    from rllib_fair.cli.storage import ExperimentLock

    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(spec()))
    storage = tmp_path / "res"
    (storage / NAME / "PPO_other_trial").mkdir(parents=True)
    (storage / NAME / "PPO_other_trial" / "result.json").write_text("{}\n")
    with ExperimentLock(storage / NAME):
        code = main(["train", str(path), "--storage-path", str(storage)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert f"pid {os.getpid()}" in err and "in use by another run" in err
    assert [p.name for p in (storage / NAME).iterdir() if not p.name.startswith(".")] == [
        "PPO_other_trial"
    ]


def test_killed_during_a_checkpoint_write_resumes_from_the_last_complete_one(
    tmp_path, ray_session, capsys
):
    """SIGKILL, then the files a kill during a write leaves; damaged ones are named."""
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(spec(checkpoint_frequency=1)))
    storage, log = tmp_path / "res", tmp_path / "run.log"
    proc = start(path, storage, log)
    try:
        deadline = time.time() + 240
        while not list(storage.glob(f"{NAME}/*/checkpoint_000002/{MANIFEST}")):
            assert proc.poll() is None and time.time() < deadline, log.read_text()[-2000:]
            time.sleep(0.1)
        time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    trial = trial_dir(storage)
    confirmed = [c for c in sorted(trial.glob("checkpoint_*")) if (c / MANIFEST).is_file()]
    last = confirmed[-1]
    for c in sorted(trial.glob("checkpoint_*")):
        if c > last:
            shutil.rmtree(c)  # a real cut write may be there: replaced by a known one
    cut = trial / f"checkpoint_{int(last.name.split('_')[1]) + 1:06d}"
    shutil.copytree(last, cut)
    (cut / MANIFEST).unlink()
    state = cut / "learner_group" / "learner" / "state.pkl"
    state.write_bytes(state.read_bytes()[:100])
    saved_at = json.loads((last / MANIFEST).read_text())["training_iteration"]

    # a damaged file in the checkpoint the run would continue from: one line, no run
    victim = last / "learner_group" / "learner" / "state.pkl"
    good = victim.read_bytes()
    victim.write_bytes(good[: len(good) // 2])
    capsys.readouterr()
    assert main(["train", str(path), "--storage-path", str(storage), "--resume"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(victim) in err and "corrupted" in err
    assert main(["evaluate", str(trial), "--steps", "50", "--seeds", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(victim) in err
    victim.write_bytes(good)

    # the cut one is moved aside and never restored
    assert main(["train", str(path), "--storage-path", str(storage), "--resume"]) == 0
    captured = capsys.readouterr()
    assert f"{cut.name} was never completed" in captured.err
    assert f"continues from {last.name} (iteration {saved_at})" in captured.out
    rows = [json.loads(line) for line in (trial / "result.json").read_text().splitlines()]
    restored = [
        r for r in rows if r.get("iterations_since_restore") == 1 and r["training_iteration"] > 1
    ]
    assert restored
    # Tune restores the checkpoint its saved state names: the newest complete one, or an
    # older complete one when its state (synced every 10 s) lagged, which is then said
    complete_at = {
        json.loads((c / MANIFEST).read_text())["training_iteration"]
        for c in trial.glob("checkpoint_*")
    }
    assert restored[-1]["training_iteration"] - 1 in complete_at
    if restored[-1]["training_iteration"] != saved_at + 1:
        assert "WARNING: the trial was expected to continue after iteration" in captured.err
    assert rows[-1]["training_iteration"] == ITERATIONS
    assert all(check_checkpoint(c).state == "complete" for c in trial.glob("checkpoint_*"))
    assert [p.name.split(".")[0] for p in (trial / ".incomplete").iterdir()] == [cut.name]
