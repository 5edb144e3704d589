"""Checkpoint manifests, integrity checks, resume plans and the experiment lock.

These build checkpoint-shaped folders by hand (no Ray): the end-to-end paths through
``rllib-fair train`` are in ``test_interrupt.py``.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import pickle

import pytest

from rllib_fair.cli import storage
from rllib_fair.cli.storage import (
    MANIFEST,
    ExperimentLock,
    StorageError,
    check_checkpoint,
    resume_plan,
    write_manifest,
)


def make_checkpoint(folder, payload=b"x" * 5000):
    """A folder with the files an RLlib checkpoint has (tiny stand-ins)."""
    folder.mkdir(parents=True)
    (folder / "rllib_checkpoint.json").write_text(
        json.dumps({"state_file": "algorithm_state", "checkpoint_version": "2.1"})
    )
    (folder / "algorithm_state.pkl").write_bytes(pickle.dumps({"training_iteration": 3}))
    (folder / "class_and_ctor_args.pkl").write_bytes(pickle.dumps(("PPO", {})))
    learner = folder / "learner_group" / "learner"
    learner.mkdir(parents=True)
    (learner / "state.pkl").write_bytes(pickle.dumps({"weights": payload}))
    (learner / "metadata.json").write_text("{}")
    return folder


def make_trial(experiment, name, rows, checkpoints=()):
    trial = experiment / name
    trial.mkdir(parents=True)
    (trial / "params.json").write_text("{}")
    (trial / "result.json").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8"
    )
    for index, iteration in checkpoints:
        write_manifest(make_checkpoint(trial / f"checkpoint_{index:06d}"), iteration)
    return trial


def test_manifest_marks_a_complete_checkpoint(tmp_path):
    ckpt = make_checkpoint(tmp_path / "checkpoint_000000")
    assert check_checkpoint(ckpt).state == "unconfirmed"  # whole, but never confirmed
    write_manifest(ckpt, 7)
    status = check_checkpoint(ckpt)
    assert (status.state, status.problem, status.usable) == ("complete", None, True)
    assert storage.checkpoint_iteration(ckpt) == 7
    files = json.loads((ckpt / MANIFEST).read_text())["files"]
    assert set(files) == {
        "rllib_checkpoint.json",
        "algorithm_state.pkl",
        "class_and_ctor_args.pkl",
        "learner_group/learner/state.pkl",
        "learner_group/learner/metadata.json",
    }


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete"])
def test_damaged_file_is_named(tmp_path, damage):
    ckpt = make_checkpoint(tmp_path / "checkpoint_000004")
    write_manifest(ckpt, 5)
    target = ckpt / "learner_group" / "learner" / "state.pkl"
    data = target.read_bytes()
    if damage == "truncate":
        target.write_bytes(data[: len(data) // 2])
    elif damage == "flip":  # same size, one byte changed inside the payload
        target.write_bytes(data[:100] + bytes([data[100] ^ 0xFF]) + data[101:])
    else:
        target.unlink()
    status = check_checkpoint(ckpt)
    assert status.state == "corrupted" and not status.usable
    assert str(target) in status.problem and "\n" not in status.problem
    expected = {"truncate": "bytes", "flip": "content differs", "delete": "missing"}[damage]
    assert expected in status.problem


def test_half_written_checkpoint_without_manifest_is_incomplete(tmp_path):
    # the state a kill during the write leaves: some files, one cut short, no manifest
    ckpt = make_checkpoint(tmp_path / "checkpoint_000001")
    state = ckpt / "learner_group" / "learner" / "state.pkl"
    state.write_bytes(state.read_bytes()[:-40])
    status = check_checkpoint(ckpt)
    assert status.state == "incomplete" and str(state) in status.problem
    assert "STOP" in status.problem or "pickle" in status.problem
    (ckpt / "rllib_checkpoint.json").unlink()
    assert check_checkpoint(ckpt).state == "incomplete"


def test_resume_plan_uses_the_newest_complete_checkpoint_and_moves_the_cut_one(tmp_path):
    exp = tmp_path / "exp"
    rows = [{"training_iteration": i, "done": False} for i in range(1, 8)]
    trial = make_trial(exp, "PPO_a", rows, checkpoints=[(0, 2), (1, 5)])
    cut = make_checkpoint(trial / "checkpoint_000002")
    (cut / "algorithm_state.pkl").write_bytes(b"\x80\x05\x95")  # cut mid-pickle
    done = make_trial(
        exp,
        "PPO_b",
        [{"training_iteration": 1, "done": False}, {"training_iteration": 2, "done": True}],
    )
    plans = {p.trial.name: p for p in resume_plan(exp, move_incomplete=True)}
    a, b = plans["PPO_a"], plans["PPO_b"]
    assert (a.finished, a.checkpoint.name, a.checkpoint_iteration) == (
        False,
        "checkpoint_000001",
        5,
    )
    assert not cut.exists() and len(a.moved_aside) == 1
    assert a.moved_aside[0].parent == trial / storage.INCOMPLETE_DIR
    assert "continues from checkpoint_000001 (iteration 5); iterations 6-7" in a.describe()
    assert b.finished and "not rerun" in b.describe()
    assert done.exists()


def test_resume_plan_warns_without_checkpoint_and_stops_on_a_corrupted_one(tmp_path):
    exp = tmp_path / "exp"
    rows = [{"training_iteration": i} for i in (1, 2, 3)]
    make_trial(exp, "PPO_a", rows)
    (plan,) = resume_plan(exp, move_incomplete=False)
    text = plan.describe()
    assert text.startswith("WARNING") and "restarts from iteration 1" in text
    assert "its 3 iteration(s)" in text

    exp2 = tmp_path / "exp2"
    trial = make_trial(exp2, "PPO_a", rows, checkpoints=[(0, 1), (1, 2)])
    bad = trial / "checkpoint_000001" / "algorithm_state.pkl"
    bad.write_bytes(bad.read_bytes()[:5])
    with pytest.raises(StorageError) as err:
        resume_plan(exp2, move_incomplete=True)
    msg = str(err.value)
    assert "\n" not in msg and str(bad) in msg and "checkpoint_000001" in msg
    assert (trial / "checkpoint_000001").exists()  # a corrupted one is never moved


def _hold_lock(path, ready, release):
    with ExperimentLock(path):
        ready.set()
        release.wait(30)


def test_lock_refuses_a_second_run_and_a_dead_holder_leaves_none(tmp_path):
    exp = tmp_path / "results" / "exp"
    ctx = mp.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(exp, ready, release))
    holder.start()
    try:
        assert ready.wait(30)
        with pytest.raises(StorageError) as err:
            ExperimentLock(exp).acquire()
        assert f"pid {holder.pid}" in str(err.value) and "in use by another run" in str(err.value)
    finally:
        holder.kill()  # a killed holder: the kernel releases its lock
        holder.join(30)
    with ExperimentLock(exp):
        pass


def test_lock_leaves_no_folder_when_nothing_was_written(tmp_path):
    exp = tmp_path / "new" / "deeper" / "exp"
    lock = ExperimentLock(exp)
    lock.acquire()
    assert exp.is_dir()
    lock.release()
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept" / "exp"
    with ExperimentLock(kept):
        (kept / "trial").mkdir()
    assert (kept / "trial").is_dir()


def test_stale_decisions_in_tune_state_are_cleared(tmp_path):
    exp = tmp_path / "exp"
    exp.mkdir()
    state = {
        "trial_data": [],
        "runner_data": {
            "_cached_trial_decisions": {"a_00000": "STOP"},
            "_queued_trial_decisions": {},
            "_iteration": 7,
        },
    }
    (exp / "experiment_state-2026-01-01_00-00-00.json").write_text(json.dumps(state))
    assert storage.drop_stale_decisions(exp) == ["a_00000 (STOP)"]
    saved = json.loads((exp / "experiment_state-2026-01-01_00-00-00.json").read_text())
    assert saved["runner_data"] == {
        "_cached_trial_decisions": {},
        "_queued_trial_decisions": {},
        "_iteration": 7,
    }
    assert storage.drop_stale_decisions(exp) == []


def _experiment_state(*logdirs: str) -> str:
    """An experiment state in Ray Tune 2.60's layout naming these trial folders."""
    rows = [[json.dumps({"trial_id": d[-5:], "relative_logdir": d}), "{}"] for d in logdirs]
    return json.dumps({"trial_data": rows, "runner_data": {}, "stats": {}})


STATE = "experiment_state-2026-01-01_00-00-00.json"
VARIANTS = "basic-variant-state-2026-01-01_00-00-00.json"


def _sweep(tmp_path, *logdirs: str):
    """An experiment folder with an experiment state, a search state and trial folders."""
    exp = tmp_path / "exp"
    exp.mkdir()
    for d in logdirs:
        (exp / d).mkdir()
        (exp / d / "params.json").write_text("{}")
    (exp / STATE).write_text(_experiment_state(*logdirs))
    search = pickle.dumps({"_total_samples": len(logdirs), "_uuid_prefix": "ab12_"})
    (exp / VARIANTS).write_bytes(search)
    return exp, search


def test_cut_experiment_state_is_put_back_from_the_copy(tmp_path):
    exp, _ = _sweep(tmp_path, "t_00000")
    whole = (exp / STATE).read_text()
    assert storage.backup_experiment_state(exp)
    (exp / STATE).write_text(whole[:20])  # the write a full disk cut
    assert not storage.backup_experiment_state(exp)  # the copy keeps the whole pair
    note = storage.repair_experiment_state(exp)
    assert f"experiment state {STATE} was damaged" in note
    assert "put back the last whole copy" in note
    assert "search-algorithm" not in note  # the search state equals the copy's
    assert (exp / STATE).read_text() == whole
    assert (exp / f"{STATE}.damaged").read_text() == whole[:20]
    assert storage.repair_experiment_state(exp) is None
    (exp / storage.STATE_BACKUP).unlink()
    (exp / STATE).write_text(whole[:20])
    with pytest.raises(
        StorageError,
        match=r"experiment state .* no whole copy exists, so Tune would restart every trial",
    ):
        storage.repair_experiment_state(exp)


def test_cut_search_state_is_put_back_from_the_copy(tmp_path):
    """A kill during Tune's copy of its search-algorithm state (a pickle named .json)
    left it empty; Tune then failed to restore and started a second trial from zero."""
    exp, whole = _sweep(tmp_path, "t_00000")
    state = (exp / STATE).read_text()
    assert storage.backup_experiment_state(exp)
    for cut in (b"", whole[: len(whole) // 2]):
        (exp / VARIANTS).write_bytes(cut)
        assert not storage.backup_experiment_state(exp)  # a pair with a cut file is not kept
        note = storage.repair_experiment_state(exp)
        assert f"search-algorithm state {VARIANTS} was damaged" in note
        assert "experiment state" not in note.replace("search-algorithm state", "")
        assert (exp / VARIANTS).read_bytes() == whole
        assert (exp / f"{VARIANTS}.damaged").read_bytes() == cut
        assert pickle.loads((exp / VARIANTS).read_bytes())["_total_samples"] == 1
    assert (exp / STATE).read_text() == state
    assert storage.repair_experiment_state(exp) is None
    (exp / storage.STATE_BACKUP).unlink()
    (exp / VARIANTS).write_bytes(b"")
    with pytest.raises(
        StorageError,
        match="search-algorithm state .* no whole copy exists, so Tune would give up its "
        "restore and start a second trial from iteration 1",
    ):
        storage.repair_experiment_state(exp)


def test_a_newer_experiment_state_with_the_same_trials_keeps_its_progress(tmp_path):
    """The experiment state changes every step (results, checkpoint paths); the copy's
    search state still fits it while the trials are the same."""
    exp, whole = _sweep(tmp_path, "t_00000")
    assert storage.backup_experiment_state(exp)
    newer = json.loads((exp / STATE).read_text())
    newer["runner_data"] = {"_iteration": 99}
    (exp / STATE).write_text(json.dumps(newer))
    (exp / VARIANTS).write_bytes(b"")
    note = storage.repair_experiment_state(exp)
    assert "search-algorithm state" in note and "rolled back" not in note
    assert json.loads((exp / STATE).read_text())["runner_data"] == {"_iteration": 99}
    assert (exp / VARIANTS).read_bytes() == whole


def test_a_copy_that_predates_a_trial_is_refused(tmp_path):
    """A sweep added a trial after the last copy: putting the copy's search state back
    would generate that trial again, so nothing is changed and the user is told."""
    exp, _ = _sweep(tmp_path, "t_00000")
    assert storage.backup_experiment_state(exp)
    (exp / "t_00001").mkdir()
    (exp / "t_00001" / "params.json").write_text("{}")
    (exp / STATE).write_text(_experiment_state("t_00000", "t_00001"))
    (exp / VARIANTS).write_bytes(b"")
    with pytest.raises(StorageError, match=r"predates trial\(s\) t_00001, so Tune would generate"):
        storage.repair_experiment_state(exp)
    assert (exp / VARIANTS).read_bytes() == b""  # nothing changed
    # the experiment state cut instead: its trials are unknown, the folders on disk tell
    (exp / VARIANTS).write_bytes(pickle.dumps({"_total_samples": 2}))
    (exp / STATE).write_text("{")
    with pytest.raises(StorageError, match=r"predates trial folder\(s\) t_00001"):
        storage.repair_experiment_state(exp)
    assert (exp / STATE).read_text() == "{"


def test_a_cut_experiment_state_rolls_the_search_state_back_with_it(tmp_path):
    """The experiment state is put back from the copy: a search state that moved on
    since (same trials) is rolled back too, so the two agree."""
    exp, whole = _sweep(tmp_path, "t_00000")
    assert storage.backup_experiment_state(exp)
    moved_on = pickle.dumps({"_total_samples": 1, "_finished": True})
    (exp / VARIANTS).write_bytes(moved_on)
    (exp / STATE).write_text("")
    note = storage.repair_experiment_state(exp)
    assert f"experiment state {STATE} was damaged" in note
    assert f"search-algorithm state {VARIANTS} is rolled back" in note
    assert (exp / VARIANTS).read_bytes() == whole
    assert (exp / f"{VARIANTS}.replaced").read_bytes() == moved_on


def test_every_search_state_of_a_searcher_is_kept(tmp_path):
    """An Optuna or HyperOpt sweep writes the search generator's and the searcher's
    states side by side: each gets its copy and each is put back."""
    exp, _ = _sweep(tmp_path, "t_00000")
    (exp / VARIANTS).unlink()
    gen = "search_gen_state-2026-01-01_00-00-00.json"
    searcher = "searcher-state-2026-01-01_00-00-00.pkl"
    files = {gen: pickle.dumps({"gen": 1}), searcher: pickle.dumps({"optuna": [1, 2]})}
    for name, data in files.items():
        (exp / name).write_bytes(data)
    assert storage.backup_experiment_state(exp)
    for name in files:
        (exp / name).write_bytes(b"\x80")
    note = storage.repair_experiment_state(exp)
    for name, data in files.items():
        assert f"search-algorithm state {name} was damaged" in note
        assert (exp / name).read_bytes() == data


def test_the_copy_checks_the_bytes_it_saves(tmp_path, monkeypatch):
    """Tune may rewrite a file between two reads: the copy validates what it read."""
    exp, whole = _sweep(tmp_path, "t_00000")
    assert storage.backup_experiment_state(exp)
    read = storage.Path.read_bytes

    def cut_while_read(self):
        data = read(self)
        return data[: len(data) // 2] if self.name == VARIANTS else data

    monkeypatch.setattr(storage.Path, "read_bytes", cut_while_read)
    assert not storage.backup_experiment_state(exp)  # the whole file on disk is not enough
    monkeypatch.undo()
    (exp / VARIANTS).write_bytes(b"")
    storage.repair_experiment_state(exp)
    assert (exp / VARIANTS).read_bytes() == whole


def test_a_kill_during_the_repair_leaves_a_state_file(tmp_path, monkeypatch):
    """The copy is written beside the damaged file and swapped in with one rename: a
    kill before the rename leaves the damaged file where Tune looks for it."""
    exp, whole = _sweep(tmp_path, "t_00000")
    assert storage.backup_experiment_state(exp)
    (exp / VARIANTS).write_bytes(b"")

    def killed(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(storage.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        storage.repair_experiment_state(exp)
    assert (exp / VARIANTS).exists()
    monkeypatch.undo()
    storage.repair_experiment_state(exp)
    assert (exp / VARIANTS).read_bytes() == whole


def test_a_damaged_state_the_copy_holds_none_of_is_refused(tmp_path):
    """A searcher state that appeared after the copy and is cut: nothing to put back."""
    exp, _ = _sweep(tmp_path, "t_00000")
    assert storage.backup_experiment_state(exp)
    searcher = "searcher-state-2026-01-01_00-00-00.pkl"
    (exp / searcher).write_bytes(b"\x80")
    (exp / STATE).write_text("")
    with pytest.raises(StorageError, match=f"{searcher}.* holds none of its kind"):
        storage.repair_experiment_state(exp)
    assert (exp / STATE).read_text() == ""  # nothing changed
