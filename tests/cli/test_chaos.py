"""Chaos on env runners and learners: what a run keeps when their processes are killed.

Processes are killed with SIGKILL by pid, from a thread of the test, while
``rllib_fair.cli.main(["train", ...])`` runs in this process (the Ray instance of the
``ray_session`` fixture, started by this process, so its workers are this process's
descendants; nothing of another Ray instance on the machine is touched). Ray names a
worker process after its actor and, while it runs a call, the call: ``ray::FairEnvRunner``
idle, ``ray::FairEnvRunner.apply`` sampling; RLlib's remote learners run inside Ray
Train workers, ``ray::_WrappedExecutable``. The driver, the trainable and anything else
are never killed. Linux only (``/proc``).
"""

from __future__ import annotations

import json
import math
import os
import pickle
import re
import signal
import threading
import time
from pathlib import Path

import pytest
import yaml

from rllib_fair.cli import main
from rllib_fair.cli.results import flatten

pytestmark = [
    pytest.mark.ray,
    pytest.mark.xdist_group("chaos"),
    pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc (Linux)"),
]

RUNNER = "ray::FairEnvRunner"
LEARNER = "ray::_WrappedExecutable"
WAIT_S = 180.0


# -- processes -------------------------------------------------------------------------


def descendants(root: int) -> list[int]:
    """Pids of every process below ``root`` (from /proc/<pid>/stat)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            out.append(pid)
            todo.append(pid)
    return out


def title(pid: int) -> str:
    """The process title Ray sets: ``ray::<actor class>[.<method running>]``."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def actor_processes(prefix: str) -> dict[int, str]:
    """``{pid: title}`` of this session's worker processes of one actor class."""
    out = {}
    for pid in descendants(os.getpid()):
        t = title(pid)
        if t == prefix or t.startswith(prefix + "."):
            out[pid] = t
    return out


def in_call(t: str) -> bool:
    """True while the actor runs a method other than its constructor."""
    return "." in t.split("::", 1)[-1] and not t.endswith("__init__")


def wait_for(condition, stop: threading.Event, timeout: float = WAIT_S, period: float = 0.01):
    """``condition()`` once it is truthy; None if ``stop`` is set or time runs out."""
    deadline = time.time() + timeout
    while not stop.is_set() and time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(period)
    return None


def checkpoints(exp_dir: Path) -> list[Path]:
    """The trial's checkpoint folders that hold a learner state (iteration order)."""
    found = exp_dir.glob("*/checkpoint_*/learner_group/learner/state.pkl")
    return sorted(p.parents[2] for p in found if not p.parents[3].name.startswith("."))


def rows(exp_dir: Path) -> list[dict]:
    (result,) = exp_dir.glob("*/result.json")
    return [json.loads(line) for line in result.read_text().splitlines()]


def numbers(row: dict) -> dict[str, float]:
    """Every numeric leaf of one result row (flattened keys)."""
    return {
        k: float(v)
        for k, v in flatten(row).items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }


# -- env runners killed repeatedly -----------------------------------------------------

RUNNERS_NAME = "chaos-runners"
KILLS = 3
BATCH = 2000


def kill_env_runners(exp_dir: Path, kills: int, log: list, stop: threading.Event) -> None:
    """SIGKILLs one env runner ``kills`` times, each kill seen by RLlib before the next.

    A runner is killed while it runs a call (sampling or a weight sync), so the call
    fails and RLlib marks the runner unhealthy; a runner killed between calls could be
    restarted by Ray before RLlib's next call and never counted. After each kill the
    thread waits until Ray restarted the process (a new pid) and RLlib uses it again
    (it runs a call, which RLlib sends only to runners it restored).
    """
    for j in range(kills):
        # kills 3 iterations apart, the first after two iterations
        if wait_for(lambda j=j: len(checkpoints(exp_dir)) >= 2 + 3 * j, stop) is None:
            return
        known = set(actor_processes(RUNNER))
        target = wait_for(
            lambda: next((p for p, t in actor_processes(RUNNER).items() if in_call(t)), None),
            stop,
            period=0.002,
        )
        if target is None:
            return
        os.kill(target, signal.SIGKILL)
        killed_at = time.time()
        log.append({"pid": target, "iteration": len(checkpoints(exp_dir))})
        back = wait_for(
            lambda known=known: any(
                p not in known and in_call(t) for p, t in actor_processes(RUNNER).items()
            ),
            stop,
        )
        if back is None:
            return
        log[-1]["back_after_s"] = round(time.time() - killed_at, 1)
        log[-1]["back_at_iteration"] = len(checkpoints(exp_dir))


# 70-85 s on the 2-core machine (each restart takes Ray 9-11 s there): not in the default suite
@pytest.mark.slow
def test_env_runners_killed_repeatedly_are_restarted_and_nothing_is_lost(
    tmp_path, ray_session, capsys
):
    """Three SIGKILLs of the two env runners' processes during a 24-iteration PPO run.

    Asserted: exit 0 after all 24 iterations; RLlib's restart count equals the number
    of kills exactly (each kill lands during a call, so RLlib sees each one, and the
    next kill waits until the runner is back), with both runners healthy at the end;
    one progress warning per kill and the final table's line with the same counts;
    every metric finite; every iteration sampled its full batch and the lifetime step
    count is the running sum of the per-iteration counts.
    """
    spec = {
        RUNNERS_NAME: {
            "run": "PPO",
            "env": "fair/Lending-v0",
            "env_config": {"max_steps": 200},
            "stop": {"training_iteration": 24},
            "checkpoint_config": {"checkpoint_frequency": 1},
            "config": {
                "seed": 0,
                "fairness_notion": "equal_opportunity",
                "num_env_runners": 2,
                "num_cpus_per_env_runner": 0.5,
                "train_batch_size_per_learner": BATCH,
                "minibatch_size": 500,
                "num_epochs": 1,
                "model_config": {"fcnet_hiddens": [16]},
            },
        }
    }
    path = tmp_path / "runners.yaml"
    path.write_text(yaml.safe_dump(spec))
    storage = tmp_path / "results"
    exp_dir = storage / RUNNERS_NAME
    log: list[dict] = []
    stop = threading.Event()
    chaos = threading.Thread(target=kill_env_runners, args=(exp_dir, KILLS, log, stop))
    chaos.start()
    try:
        code = main(["train", str(path), "--storage-path", str(storage)])
    finally:
        stop.set()
        chaos.join(timeout=30)
    out, err = capsys.readouterr()
    assert len(log) == KILLS, f"only {len(log)} of {KILLS} kills before the run ended: {log}"
    assert len({k["pid"] for k in log}) == KILLS  # a new process each time
    # the run completed its budget
    assert code == 0, out + err
    data = rows(exp_dir)
    assert [r["training_iteration"] for r in data] == list(range(1, 25))
    # every kill was a failure RLlib saw and a restart it made, and all runners are back
    last = data[-1]["fault_tolerance"]
    assert last["num_remote_worker_restarts"] == KILLS
    assert last["num_healthy_workers"] == 2
    # ... and reported as it happened (one warning per failed runner) and at the end
    warned = [int(m.group(1)) for m in re.finditer(r"WARNING: (\d+) env runner\(s\) failed", err)]
    assert sum(warned) == KILLS, err
    table = out[out.index(f"== {RUNNERS_NAME}") :]
    assert (
        f"env runners: 2/2 healthy at the end, {KILLS} restarted, {KILLS} failed, "
        f"{KILLS} episode(s) lost in progress, 0 env-step failure(s)"
    ) in table
    assert "error:" not in table
    # every reported metric is finite (but RLlib's parameter counts: it logs them once,
    # at the first update, and reports NaN after, in undisturbed runs too)
    for row in data:
        bad = {
            k: v
            for k, v in numbers(row).items()
            if not math.isfinite(v) and not k.endswith("trainable_parameters")
        }
        assert not bad, (row["training_iteration"], bad)
    # the step counts add up: the lifetime count is the sum of what each iteration
    # sampled, and every iteration sampled its batch although runners died mid-sample
    per_iteration = [r["env_runners"]["num_env_steps_sampled"] for r in data]
    assert all(n >= BATCH for n in per_iteration), per_iteration
    total = 0
    for row, n in zip(data, per_iteration, strict=True):
        total += n
        assert row["num_env_steps_sampled_lifetime"] == total
        assert row["env_runners"]["num_env_steps_sampled_lifetime"] == total


# -- a learner killed under num_learners=2 ---------------------------------------------

LEARNER_NAME = "chaos-learner"
ITERATIONS = 12
# per learner: 200 samples in minibatches of 100, one epoch: two Adam steps an iteration
UPDATES_PER_ITERATION = 2


def kill_a_learner(exp_dir: Path, after: int, log: list, stop: threading.Event) -> None:
    """SIGKILLs one learner process once the checkpoint of iteration ``after`` exists."""
    if wait_for(lambda: len(checkpoints(exp_dir)) >= after, stop, period=0.005) is None:
        return
    learners = sorted(actor_processes(LEARNER))
    if len(learners) != 2:
        log.append({"error": f"expected 2 learner processes, found {learners}"})
        return
    os.kill(learners[0], signal.SIGKILL)
    log.append({"pid": learners[0], "checkpoints": len(checkpoints(exp_dir))})


def adam_step(checkpoint: Path) -> tuple[float, int]:
    """The learner's Adam step count (first parameter) and its weights' sequence number."""
    with open(checkpoint / "learner_group" / "learner" / "state.pkl", "rb") as f:
        state = pickle.load(f)
    (optimizer,) = state["optimizer"].values()
    steps = {float(s["step"]) for s in optimizer["state"]["state"].values()}
    assert len(steps) == 1, steps  # every parameter took the same steps
    return steps.pop(), int(state["weights_seq_no"])


def test_learner_killed_fails_loudly_and_resume_continues_its_state(tmp_path, ray_session, capsys):
    """One of two learner processes SIGKILLed after the third checkpoint.

    Asserted: exit 1 and one table line naming a dead learner (the run stops: RLlib
    does not restart learners); ``--resume`` then exits 0 at the budget; its first
    iteration is k+1, k being the iteration of the checkpoint it restored; the
    lifetime sampled and trained step counts continue exactly from iteration k; and
    the learner state continues: Adam's step count and the weights' sequence number
    of the first new checkpoint are the restored checkpoint's plus one iteration.
    """
    spec = {
        LEARNER_NAME: {
            "run": "PPO",
            "env": "fair/Lending-v0",
            "env_config": {"max_steps": 200},
            "stop": {"training_iteration": ITERATIONS},
            "checkpoint_config": {"checkpoint_frequency": 1},
            "config": {
                "seed": 0,
                "fairness_notion": "equal_opportunity",
                "num_env_runners": 0,
                "num_learners": 2,
                "num_cpus_per_learner": 0.5,
                "train_batch_size_per_learner": 200,
                "minibatch_size": 100,
                "num_epochs": 1,
                "lr": 1e-4,
                "model_config": {"fcnet_hiddens": [16]},
            },
        }
    }
    path = tmp_path / "learner.yaml"
    path.write_text(yaml.safe_dump(spec))
    storage = tmp_path / "results"
    exp_dir = storage / LEARNER_NAME
    log: list[dict] = []
    stop = threading.Event()
    chaos = threading.Thread(target=kill_a_learner, args=(exp_dir, 3, log, stop))
    chaos.start()
    try:
        code = main(["train", str(path), "--storage-path", str(storage)])
    finally:
        stop.set()
        chaos.join(timeout=30)
    out, err = capsys.readouterr()
    assert len(log) == 1 and "pid" in log[0], log
    # loud failure: exit 1, and one line that names what died
    assert code == 1, out + err
    table = out[out.index(f"== {LEARNER_NAME}") :]
    (cause,) = [line for line in table.splitlines() if line.startswith("  error: ")]
    assert cause.startswith("  error: a learner process died"), cause
    assert cause.endswith("continue from its last checkpoint with --resume"), cause
    before = rows(exp_dir)
    done = before[-1]["training_iteration"]
    assert 3 <= done < ITERATIONS, "the learner died after the run ended"

    capsys.readouterr()
    assert main(["train", str(path), "--storage-path", str(storage), "--resume"]) == 0
    after = rows(exp_dir)
    assert after[-1]["training_iteration"] == ITERATIONS
    # the resumed trial continues from its last checkpoint: iteration k+1 comes next
    first = next(r for r in after[len(before) :] if r["iterations_since_restore"] == 1)
    k = first["training_iteration"] - 1
    assert 3 <= k <= done, (k, done)
    (prev,) = [r for r in before if r["training_iteration"] == k][-1:]
    # the lifetime counters continue exactly from the checkpoint's values
    assert first["num_env_steps_sampled_lifetime"] == (
        prev["num_env_steps_sampled_lifetime"] + first["env_runners"]["num_env_steps_sampled"]
    )
    trained = "num_env_steps_trained_lifetime"
    assert first["learners"]["__all_modules__"][trained] == (
        prev["learners"]["__all_modules__"][trained]
        + first["learners"]["__all_modules__"]["num_env_steps_trained"]
    )
    # the learner state continues: the optimizer's step count and the weights'
    # sequence number of the first checkpoint after the resume are those of the
    # checkpoint it resumed from plus one iteration (a fresh learner would restart
    # both at one iteration's worth)
    trial = checkpoints(exp_dir)[0].parent
    assert adam_step(trial / "checkpoint_000000") == (UPDATES_PER_ITERATION, 1)
    resumed_from = adam_step(trial / f"checkpoint_{k - 1:06d}")
    assert resumed_from == (UPDATES_PER_ITERATION * k, k)
    assert adam_step(trial / f"checkpoint_{k:06d}") == (UPDATES_PER_ITERATION * (k + 1), k + 1)
