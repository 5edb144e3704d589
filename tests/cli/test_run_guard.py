"""The runner's Tune callback: clock checkpoints, interrupt bookkeeping, checkpoint policy.

Driven directly with stand-in trials (no Ray): the end-to-end paths are in
``test_interrupt.py``.
"""

from __future__ import annotations

import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from rllib_fair.cli import interrupt
from rllib_fair.cli.interrupt import RunGuard
from rllib_fair.cli.runner import DEFAULT_CHECKPOINT_MINUTES, checkpoint_policy

SHOULD = "should_checkpoint"
ROOT = Path(__file__).resolve().parents[2]


def trial(tid="t_00000", status="RUNNING", it=1):
    return SimpleNamespace(
        trial_id=tid, status=status, last_result={"training_iteration": it}, path=f"/x/PPO_{tid}"
    )


@pytest.fixture
def clock(monkeypatch):
    now = {"t": 1000.0}
    monkeypatch.setattr(interrupt.time, "monotonic", lambda: now["t"])
    return now


def test_clock_asks_for_a_checkpoint_every_n_minutes(clock):
    interrupt.begin()
    guard = RunGuard("exp", every_minutes=2)
    t = trial()
    guard.on_trial_start(0, [t], t)
    asked = []
    for minute in range(1, 8):
        clock["t"] = 1000.0 + 60.0 * minute
        result = {"training_iteration": minute}
        guard.on_trial_result(0, [t], t, result)
        if result.get(SHOULD):
            asked.append(minute)
            guard.on_checkpoint(0, [t], t, SimpleNamespace(path=None, filesystem=None))
    assert asked == [2, 4, 6]


def test_no_clock_without_minutes(clock):
    interrupt.begin()
    guard = RunGuard("exp", every_minutes=None)
    t = trial()
    guard.on_trial_start(0, [t], t)
    clock["t"] += 1e6
    result = {}
    guard.on_trial_result(0, [t], t, result)
    assert SHOULD not in result


def test_signal_asks_running_trials_and_stops_when_all_saved(monkeypatch, clock):
    raised = []
    monkeypatch.setattr(interrupt.signal, "raise_signal", raised.append)
    state = interrupt.begin()
    guard = RunGuard("exp")
    a, b, c = trial("a"), trial("b"), trial("c", status="PENDING")
    guard.on_step_begin(0, [a, b, c])
    guard._on_signal(signal.SIGTERM, None)
    assert state.signum == signal.SIGTERM and state.waiting == {"a", "b"}
    assert state.exit_code == 143 and state.signal_name == "SIGTERM"
    ra, rc = {}, {}
    guard.on_trial_result(0, [a, b, c], a, ra)
    guard.on_trial_result(0, [a, b, c], c, rc)
    assert ra.get(SHOULD) is True and SHOULD not in rc
    guard.on_checkpoint(0, [a, b, c], a, SimpleNamespace(path="/x/a/checkpoint_000003"))
    assert raised == [] and state.saved == {"a": ("/x/a/checkpoint_000003", 1)}
    guard.on_trial_error(0, [a, b, c], b)  # b cannot save any more
    assert raised == [signal.SIGUSR1] and state.unsaved == {"b"}


def test_second_signal_stops_at_once(monkeypatch):
    raised = []
    monkeypatch.setattr(interrupt.signal, "raise_signal", raised.append)
    state = interrupt.begin()
    guard = RunGuard("exp")
    guard.on_step_begin(0, [trial("a")])
    guard._on_signal(signal.SIGINT, None)
    assert raised == [] and state.exit_code == 130
    guard._on_signal(signal.SIGINT, None)
    assert raised == [signal.SIGUSR1] and state.unsaved == {"a"} and not state.waiting


def test_checkpoint_policy_defaults_to_the_clock():
    def exp(ckpt):
        return SimpleNamespace(checkpoint_config=ckpt)

    assert checkpoint_policy(exp({})) == ({}, DEFAULT_CHECKPOINT_MINUTES)
    assert checkpoint_policy(exp({"checkpoint_frequency": 5})) == (
        {"checkpoint_frequency": 5},
        None,
    )
    assert checkpoint_policy(exp({"checkpoint_every_minutes": 0})) == ({}, None)
    assert checkpoint_policy(exp({"checkpoint_every_minutes": 1.5, "num_to_keep": 3})) == (
        {"num_to_keep": 3},
        1.5,
    )


def test_every_tuned_example_checkpoints_periodically():
    from rllib_fair.cli.experiment import load_experiments

    files = sorted((ROOT / "tuned_examples").glob("*/*.yaml"))
    assert len(files) > 50
    for path in files:
        for name, spec in load_experiments(path).items():
            ckpt = dict(spec.get("checkpoint_config") or {})
            frequency = ckpt.get("checkpoint_frequency") or 0
            _, minutes = checkpoint_policy(SimpleNamespace(checkpoint_config=ckpt))
            assert frequency > 0 or (minutes or 0) > 0, f"{path.name}: {name}"
