"""What a run leaves on disk, checked before anything trusts it.

Three guarantees of the runner rest on this module (see ``docs/reliability.md``):

* **Checkpoints are complete or not used.** When Tune registers a checkpoint, the
  runner writes a manifest into it (:data:`MANIFEST`: every file's size and SHA-256,
  written atomically). A checkpoint with a manifest is *complete*; a file that no
  longer matches it is *corrupted* and named in a one-line error. A checkpoint
  without a manifest (written before the runner confirmed it: a driver killed during
  the write, or an older run) is checked structurally: the files RLlib needs exist,
  JSON parses and every pickle runs to its STOP opcode. A half-written one is moved
  aside on ``--resume`` and skipped by ``evaluate``, never restored.
* **One run per experiment folder.** :class:`ExperimentLock` holds an exclusive
  ``flock`` on ``<experiment>/.rllib-fair.lock`` for the length of a run; a second
  run into the same folder stops before Ray starts and names the holder.
* **Resume says what it continues from.** :func:`resume_plan` reads each trial
  folder: finished or not, the checkpoint it continues from and at which iteration,
  or that it has none and starts over.

Nothing here imports Ray or torch, and nothing unpickles a file (the checks read
opcodes, not objects), so it runs before Ray starts.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import io
import json
import os
import pickletools
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

#: The manifest the runner writes into every checkpoint Tune registers.
MANIFEST = ".rllib-fair-manifest.json"
#: The lock file of a running experiment.
LOCK_NAME = ".rllib-fair.lock"
#: Where ``--resume`` moves checkpoints that were never completed.
INCOMPLETE_DIR = ".incomplete"

_CHECKPOINT_RE = re.compile(r"^checkpoint_(\d+)$")


class StorageError(ValueError):
    """One line naming the path and what is wrong with it."""


# -- checkpoint manifests and integrity -------------------------------------------------


def _files(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST and ".tmp" not in p.name
    )


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_manifest(checkpoint: str | Path, training_iteration: int | None = None) -> Path:
    """Records every file of a complete checkpoint (size and SHA-256), atomically."""
    folder = Path(checkpoint)
    entries = {
        str(p.relative_to(folder)): {"size": p.stat().st_size, "sha256": _sha256(p)}
        for p in _files(folder)
    }
    payload = {
        "written": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "training_iteration": training_iteration,
        "files": entries,
    }
    tmp = folder / f"{MANIFEST}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(payload, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, folder / MANIFEST)
    return folder / MANIFEST


def _pickle_stream_problem(stream) -> str | None:
    """Why a pickle stream is not a whole pickle (read as opcodes up to STOP), or None."""
    try:
        for _ in pickletools.genops(stream):
            pass
    except Exception as e:  # noqa: BLE001 - any parse failure means a damaged file
        return f"not a complete pickle ({type(e).__name__}: {str(e).splitlines()[0][:80]})"
    return None


def _pickle_problem(path: Path) -> str | None:
    """Why a pickle file is not a whole pickle (truncated or garbled), or None."""
    with open(path, "rb") as f:
        return _pickle_stream_problem(f)


def file_problem(path: Path) -> str | None:
    """Why one checkpoint file cannot be whole (empty, a cut pickle, bad JSON), or None.

    Pickles are read opcode by opcode up to their STOP opcode (nothing is unpickled).
    """
    try:
        if path.stat().st_size == 0:
            return "empty"
        if path.suffix == ".pkl":
            return _pickle_problem(path)
        if path.suffix == ".json":
            json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return f"unreadable ({type(e).__name__})"
    return None


def damaged_file(folder: Path) -> Path | None:
    """The first file of a checkpoint folder that :func:`file_problem` rejects, or None."""
    if not folder.is_dir():
        return None
    return next((p for p in _files(folder) if file_problem(p)), None)


def _structural_problem(folder: Path) -> str | None:
    """Why a checkpoint without a manifest cannot be a whole RLlib checkpoint, or None."""
    meta = folder / "rllib_checkpoint.json"
    if not meta.is_file():
        return f"{meta}: missing (not an RLlib checkpoint, or its write never finished)"
    try:
        info = json.loads(meta.read_text())
    except (OSError, ValueError) as e:
        return f"{meta}: unreadable ({type(e).__name__})"
    state = str(info.get("state_file") or "algorithm_state")
    ctor = folder / str(info.get("class_and_ctor_args_file") or "class_and_ctor_args.pkl")
    candidates = [folder / f"{state}.pkl", folder / f"{state}.msgpack", folder / state]
    if not any(c.is_file() for c in candidates):
        return f"{folder / (state + '.pkl')}: missing (the write never finished)"
    if not ctor.is_file():
        return f"{ctor}: missing (the write never finished)"
    for p in _files(folder):
        why = file_problem(p)
        if why:
            return f"{p}: {why}"
    return None


@dataclass
class CheckpointStatus:
    """One checkpoint folder as found on disk."""

    path: Path
    #: "complete" (manifest matches), "unconfirmed" (no manifest, structurally whole),
    #: "incomplete" (no manifest, structurally broken) or "corrupted" (manifest mismatch).
    state: str
    problem: str | None = None

    @property
    def usable(self) -> bool:
        """True for a checkpoint that may be restored or deployed."""
        return self.state in ("complete", "unconfirmed")


def check_checkpoint(checkpoint: str | Path) -> CheckpointStatus:
    """Classifies a checkpoint folder (see :class:`CheckpointStatus`)."""
    folder = Path(checkpoint)
    manifest = folder / MANIFEST
    if not manifest.is_file():
        problem = _structural_problem(folder)
        return CheckpointStatus(folder, "incomplete" if problem else "unconfirmed", problem)
    try:
        entries = json.loads(manifest.read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return CheckpointStatus(folder, "corrupted", f"{manifest}: unreadable ({type(e).__name__})")
    for rel, want in sorted(entries.items()):
        p = folder / rel
        if not p.is_file():
            return CheckpointStatus(folder, "corrupted", f"{p}: missing")
        size = p.stat().st_size
        if size != want.get("size"):
            return CheckpointStatus(
                folder,
                "corrupted",
                f"{p}: {size} bytes, the checkpoint wrote {want.get('size')} (truncated or "
                "overwritten)",
            )
        if _sha256(p) != want.get("sha256"):
            return CheckpointStatus(
                folder, "corrupted", f"{p}: content differs from what the checkpoint wrote"
            )
    return CheckpointStatus(folder, "complete")


def checkpoint_index(path: Path) -> int | None:
    """The number of a ``checkpoint_<n>`` folder, or None for another name."""
    m = _CHECKPOINT_RE.match(path.name)
    return int(m.group(1)) if m else None


def trial_checkpoints(trial: Path) -> list[Path]:
    """The ``checkpoint_<n>`` folders of a trial, oldest first."""
    found = [
        p for p in trial.glob("checkpoint_*") if p.is_dir() and checkpoint_index(p) is not None
    ]
    return sorted(found, key=checkpoint_index)


def checkpoint_iteration(checkpoint: Path) -> int | None:
    """The training iteration a checkpoint was taken at (from its manifest), or None."""
    try:
        value = json.loads((Path(checkpoint) / MANIFEST).read_text()).get("training_iteration")
    except (OSError, ValueError, AttributeError):
        return None
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _results(trial: Path) -> list[dict]:
    path = trial / "result.json"
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue  # a line cut by a kill: the ones before it still count
    return rows


# -- a full disk ------------------------------------------------------------------------

#: Free space below which a storage path counts as full.
FULL_BELOW_BYTES = 1 << 20


def disk_full_message(storage: str | Path) -> str | None:
    """One line when the filesystem under an experiment folder is (nearly) full, else None.

    It names the free space, the newest complete checkpoint of each trial (those are
    intact: a checkpoint that could not be finished is never confirmed) and what to do.
    """
    import shutil

    path = Path(storage)
    while not path.exists() and path.parent != path:
        path = path.parent
    try:
        free = shutil.disk_usage(path).free
    except OSError:
        return None
    if free >= FULL_BELOW_BYTES:
        return None
    complete = []
    for ckpt in sorted(Path(storage).glob("*/checkpoint_*")):
        if check_checkpoint(ckpt).state == "complete":
            complete.append(ckpt)
    kept = (
        f"{len(complete)} complete checkpoint(s) are intact (newest: {complete[-1]})"
        if complete
        else "no complete checkpoint was written"
    )
    return (
        f"storage: no space left under {str(storage)!r} ({free // 1024} KiB free); {kept}; "
        "free space (or pass another --storage-path) and run again with --resume"
    )


# -- Tune's experiment state ----------------------------------------------------------

#: The runner's paired copy of Tune's newest experiment state and search-algorithm
#: states, taken together whenever every one of them was whole.
STATE_BACKUP = ".rllib-fair-state.json"

#: Tune's experiment state in an experiment folder.
_EXPERIMENT_PATTERN = "experiment_state-*.json"
#: Tune's search-algorithm states: pickles whatever their suffix (Ray 2.60 names: the
#: basic variant generator, the search generator and the searcher it wraps; an Optuna
#: or HyperOpt sweep writes the last two side by side).
_SEARCH_PATTERNS = ("basic-variant-state-*.json", "search_gen_state-*.json", "searcher-state-*.pkl")


def _newest(experiment: Path, pattern: str) -> Path | None:
    found = sorted(experiment.glob(pattern))
    return found[-1] if found else None


def _newest_state(experiment: Path) -> Path | None:
    return _newest(experiment, _EXPERIMENT_PATTERN)


def _bytes_problem(data: bytes, fmt: str) -> str | None:
    """Why the bytes of a Tune state file are not whole (a cut write), or None."""
    if not data:
        return "empty"
    if fmt == "json":
        try:
            json.loads(data)
        except ValueError as e:
            return type(e).__name__
        return None
    return _pickle_stream_problem(io.BytesIO(data))


@dataclass
class _StateFile:
    """One of Tune's state files as read now: its pattern, path, bytes and problem."""

    pattern: str
    path: Path
    data: bytes
    problem: str | None

    @property
    def what(self) -> str:
        return (
            "experiment state"
            if self.pattern == _EXPERIMENT_PATTERN
            else ("search-algorithm state")
        )


def _read_states(experiment: Path) -> list[_StateFile]:
    """The newest experiment state and the newest file of each search pattern, read once."""
    found = []
    for pattern in (_EXPERIMENT_PATTERN, *_SEARCH_PATTERNS):
        path = _newest(experiment, pattern)
        if path is None:
            continue
        fmt = "json" if pattern == _EXPERIMENT_PATTERN else "pickle"
        try:
            data = path.read_bytes()
        except OSError as e:
            found.append(_StateFile(pattern, path, b"", f"unreadable ({type(e).__name__})"))
            continue
        found.append(_StateFile(pattern, path, data, _bytes_problem(data, fmt)))
    return found


def _trial_logdirs(experiment_state: bytes) -> set[str] | None:
    """The trial folders an experiment state names (Tune's ``relative_logdir``), or None.

    None when the format is not the one Ray Tune 2.60 writes (then nothing is compared).
    """
    try:
        rows = json.loads(experiment_state)["trial_data"]
        return {str(json.loads(row[0])["relative_logdir"]) for row in rows}
    except (ValueError, KeyError, TypeError, IndexError):
        return None


def backup_experiment_state(experiment: str | Path) -> bool:
    """Copies Tune's newest experiment state and search-algorithm states aside, as a pair.

    Tune rewrites ``experiment_state-<time>.json`` and its search algorithm's state
    (``basic-variant-state-<time>.json``, or ``search_gen_state-*``/``searcher-state-*``
    for a searcher; pickles) in the storage path. A write cut by a full disk or a kill
    leaves one truncated: Tune then restarts every trial from iteration 1 (experiment
    state) or gives up its restore and starts a second trial from iteration 1 (search
    state). The copy holds the bytes that were read and checked here, all files in one
    atomically written file, and only when every one of them was whole: the two kinds
    put back by :func:`repair_experiment_state` always come from the same moment.

    Returns:
        True if a copy was written (False keeps the previous copy).
    """
    experiment = Path(experiment)
    states = _read_states(experiment)
    if not states or states[0].pattern != _EXPERIMENT_PATTERN:
        return False
    if any(s.problem for s in states):
        return False  # keep the previous whole pair
    payload = {
        "files": [
            {
                "pattern": s.pattern,
                "file": s.path.name,
                "sha256": hashlib.sha256(s.data).hexdigest(),
                "base64": base64.b64encode(s.data).decode("ascii"),
            }
            for s in states
        ]
    }
    tmp = experiment / f"{STATE_BACKUP}.{os.getpid()}.tmp"
    try:
        tmp.write_text(json.dumps(payload))
        os.replace(tmp, experiment / STATE_BACKUP)
    except OSError:
        tmp.unlink(missing_ok=True)
        return False
    return True


def _saved_pair(experiment: Path) -> dict[str, tuple[str, bytes]] | None:
    """The runner's paired copy: pattern -> (file name, bytes), or None if not whole."""
    try:
        saved = json.loads((experiment / STATE_BACKUP).read_text())
        pair = {}
        for entry in saved["files"]:
            data = base64.b64decode(entry["base64"])
            if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                return None
            pattern = str(entry["pattern"])
            fmt = "json" if pattern == _EXPERIMENT_PATTERN else "pickle"
            if pattern not in (_EXPERIMENT_PATTERN, *_SEARCH_PATTERNS) or _bytes_problem(data, fmt):
                return None
            pair[pattern] = (Path(entry["file"]).name, data)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pair if _EXPERIMENT_PATTERN in pair else None


def _put_back(path: Path, data: bytes, keep_as: str) -> None:
    """Replaces a state file with the copy's bytes; the old bytes are kept beside it.

    The copy is written to a temporary file first and swapped in with one rename, so a
    kill at any point leaves either the old file or the copy in place, never neither.
    """
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    try:
        old = path.read_bytes()
    except OSError:
        old = b""
    path.with_name(path.name + keep_as).write_bytes(old)
    os.replace(tmp, path)


def repair_experiment_state(experiment: str | Path) -> str | None:
    """Puts back the runner's paired copy when one of Tune's state files is damaged.

    * Only search-algorithm states damaged, and the experiment state names the same
      trials as the copy's: the damaged search states are put back (the copy's search
      state generated exactly these trials), and the newer experiment state stays.
    * The experiment state damaged: the pair is put back, the search states too where
      they differ from the copy's (an experiment state and a search state from
      different moments could generate a trial twice or never run one).

    Nothing is changed, and :class:`StorageError` is raised, when the copy predates a
    trial: putting it back would make Tune generate that trial a second time.

    Returns:
        One line saying what was done, or None when every newest state is whole.

    Raises:
        StorageError: a state is damaged and no whole copy matches the trials on disk.
    """
    experiment = Path(experiment)
    states = _read_states(experiment)
    damaged = [s for s in states if s.problem]
    if not damaged:
        return None
    first = damaged[0]
    pair = _saved_pair(experiment)
    if pair is None:
        consequence = (
            "Tune would restart every trial from iteration 1"
            if first.pattern == _EXPERIMENT_PATTERN
            else "Tune would give up its restore and start a second trial from iteration 1"
        )
        raise StorageError(
            f"--resume: Tune's {first.what} {str(first.path)!r} is damaged ({first.problem}: "
            f"its write was cut) and no whole copy exists, so {consequence}; the trials' "
            "checkpoints are intact and `rllib-fair evaluate` deploys them"
        )
    current = {s.pattern: s for s in states}
    saved_logdirs = _trial_logdirs(pair[_EXPERIMENT_PATTERN][1])
    experiment_state = current.get(_EXPERIMENT_PATTERN)
    if experiment_state is not None and experiment_state.problem is None:
        # only search states are damaged: the copy's search states fit this experiment
        # state if both name the same trials
        now = _trial_logdirs(experiment_state.data)
        same = (
            now == saved_logdirs
            if now is not None and saved_logdirs is not None
            else experiment_state.data == pair[_EXPERIMENT_PATTERN][1]
        )
        if not same:
            newer = sorted((now or set()) - (saved_logdirs or set()))
            raise StorageError(
                f"--resume: Tune's {first.what} {str(first.path)!r} is damaged "
                f"({first.problem}: its write was cut) and the runner's last whole copy "
                f"predates trial(s) {', '.join(newer) or '(unknown)'}, so Tune would "
                "generate them a second time; start the sweep again without --resume "
                "(finished trials keep their folders and checkpoints)"
            )
        todo = [(s, "damaged") for s in damaged]
    else:
        if saved_logdirs is not None:
            on_disk = {p.name for p in trial_folders(experiment)}
            newer = sorted(on_disk - saved_logdirs)
            if newer:
                raise StorageError(
                    f"--resume: Tune's {first.what} {str(first.path)!r} is damaged "
                    f"({first.problem}: its write was cut) and the runner's last whole "
                    f"copy predates trial folder(s) {', '.join(newer)}, so Tune would run "
                    "them a second time; start the sweep again without --resume (finished "
                    "trials keep their folders and checkpoints)"
                )
        todo = []
        for pattern, (_name, data) in pair.items():
            s = current.get(pattern)
            if s is not None and s.problem:
                todo.append((s, "damaged"))
            elif s is not None and s.data != data:
                todo.append((s, "rolled back"))
        todo += [(s, "damaged") for s in damaged if s.pattern not in pair]  # refused below
    for s, _why in todo:
        if s.pattern not in pair:
            raise StorageError(
                f"--resume: Tune's {s.what} {str(s.path)!r} is damaged ({s.problem}: its "
                "write was cut) and the runner's last whole copy holds none of its kind; "
                "start the sweep again without --resume"
            )
    notes = []
    for s, why in todo:
        name, data = pair[s.pattern]
        if why == "damaged":
            _put_back(s.path, data, ".damaged")
            notes.append(
                f"Tune's {s.what} {s.path.name} was damaged ({s.problem}: its write was "
                f"cut); put back the last whole copy ({name}); the damaged file is kept as "
                f"{s.path.name}.damaged"
            )
        else:
            _put_back(s.path, data, ".replaced")
            notes.append(
                f"Tune's {s.what} {s.path.name} is rolled back to the copy taken with that "
                f"experiment state ({name}), so the two agree; the newer file is kept as "
                f"{s.path.name}.replaced"
            )
    return "; ".join(notes)


def drop_stale_decisions(experiment: str | Path) -> list[str]:
    """Clears the trial decisions Tune saved with its state; returns the trial ids.

    Ray Tune 2.60 keeps a decision (STOP, CONTINUE) for a trial whose checkpoint is
    being saved, and writes that dict into the experiment state. A trial that failed
    while saving (a full disk) leaves a STOP there; on resume Tune applies it after
    the first checkpoint of the restored trial, which then ends one iteration later,
    below its budget. Nothing is being saved when a run resumes, so every saved
    decision is stale. This is the one place that edits Tune's private state format
    (the ``runner_data`` keys below); when they are absent it does nothing.
    """
    experiment = Path(experiment)
    state = _newest_state(experiment)
    if state is None:
        return []
    try:
        data = json.loads(state.read_text())
        runner = data["runner_data"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    stale = []
    for key in ("_cached_trial_decisions", "_queued_trial_decisions"):
        decisions = runner.get(key) if isinstance(runner, dict) else None
        if isinstance(decisions, dict) and decisions:
            stale += [f"{tid} ({d})" for tid, d in decisions.items()]
            runner[key] = {}
    if stale:
        tmp = experiment / f"{state.name}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(data))
        os.replace(tmp, state)
    return stale


# -- resume ---------------------------------------------------------------------------


@dataclass
class TrialResume:
    """What ``--resume`` will do with one trial folder."""

    trial: Path
    finished: bool
    iterations: int
    checkpoint: Path | None = None
    checkpoint_iteration: int | None = None
    moved_aside: list[Path] = field(default_factory=list)

    def describe(self) -> str:
        """One line for the user."""
        name = self.trial.name
        if self.finished:
            return f"trial {name}: finished ({self.iterations} iterations), not rerun"
        if self.checkpoint is None:
            return (
                f"WARNING: trial {name} has no checkpoint: it restarts from iteration 1 and "
                f"its {self.iterations} iteration(s) so far are trained again (its result.json "
                "and TensorBoard curve then hold both attempts)"
            )
        at = (
            f"iteration {self.checkpoint_iteration}"
            if self.checkpoint_iteration is not None
            else "an unknown iteration"
        )
        lost = ""
        if self.checkpoint_iteration is not None and self.iterations > self.checkpoint_iteration:
            lost = (
                f"; iterations {self.checkpoint_iteration + 1}-{self.iterations} came after it "
                "and are trained again"
            )
        return f"trial {name}: continues from {self.checkpoint.name} ({at}){lost}"


def trial_folders(experiment: Path) -> list[Path]:
    """The trial folders of an experiment folder (those with a ``params.json``)."""
    return sorted(p for p in experiment.iterdir() if p.is_dir() and (p / "params.json").is_file())


def resume_plan(experiment: Path, *, move_incomplete: bool) -> list[TrialResume]:
    """Inspects every trial of an experiment folder before ``--resume``.

    Args:
        experiment: the experiment folder.
        move_incomplete: move half-written checkpoints (no manifest, structurally
            broken) into ``<trial>/.incomplete/`` so nothing can restore them.

    Raises:
        StorageError: one line naming the file, when the newest checkpoint an
            unfinished trial would continue from is corrupted.
    """
    plans = []
    for trial in trial_folders(experiment):
        rows = _results(trial)
        iterations = int(max((r.get("training_iteration") or 0 for r in rows), default=0))
        finished = bool(rows) and bool(rows[-1].get("done"))
        plan = TrialResume(trial, finished, iterations)
        if not finished:
            for ckpt in reversed(trial_checkpoints(trial)):
                status = check_checkpoint(ckpt)
                if status.state == "incomplete":
                    if move_incomplete:
                        plan.moved_aside.append(_move_aside(ckpt))
                    continue
                if status.state == "corrupted":
                    raise StorageError(
                        f"--resume: checkpoint {ckpt.name} of trial {trial.name} is corrupted: "
                        f"{status.problem}; restore the file, or move {str(ckpt)!r} away to "
                        "resume from an earlier checkpoint"
                    )
                plan.checkpoint = ckpt
                plan.checkpoint_iteration = checkpoint_iteration(ckpt)
                break
        plans.append(plan)
    return plans


def _move_aside(ckpt: Path) -> Path:
    target_dir = ckpt.parent / INCOMPLETE_DIR
    target_dir.mkdir(exist_ok=True)
    target = target_dir / f"{ckpt.name}.{time.strftime('%Y%m%d-%H%M%S')}"
    os.replace(ckpt, target)
    return target


# -- one run per experiment folder ---------------------------------------------------


class ExperimentLock:
    """An exclusive lock on an experiment folder for the length of a run.

    ``flock`` locks are released by the kernel when the process dies, so a killed run
    never leaves a stale lock. They hold between processes of one machine and on most
    network filesystems that support POSIX locks; runs on different machines that share
    a folder over a filesystem without lock support are not protected.
    """

    def __init__(self, experiment: Path):
        self.experiment = Path(experiment)
        self._fd: int | None = None
        self._created: Path | None = None

    def acquire(self) -> None:
        """Takes the lock or raises :class:`StorageError` naming the holder."""
        top = self.experiment
        while not top.parent.exists() and top.parent != top:
            top = top.parent
        self._created = None if self.experiment.exists() else top
        self.experiment.mkdir(parents=True, exist_ok=True)
        path = self.experiment / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 200).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise StorageError(
                f"storage: experiment folder {str(self.experiment)!r} is in use by another "
                f"run ({holder}); wait for it, or give this run another --storage-path or "
                "experiment name"
            ) from None
        os.ftruncate(fd, 0)
        os.write(
            fd,
            f"pid {os.getpid()} on {os.uname().nodename}, since "
            f"{time.strftime('%Y-%m-%d %H:%M:%S')}".encode(),
        )
        self._fd = fd

    def release(self) -> None:
        """Releases the lock; removes the folder if this run created it and wrote nothing."""
        if self._fd is None:
            return
        path = self.experiment / LOCK_NAME
        try:
            os.ftruncate(self._fd, 0)
            if self._created and [p.name for p in self.experiment.iterdir()] == [LOCK_NAME]:
                # nothing was written: leave no folder behind (up to the first one that
                # existed before this run)
                path.unlink()
                folder = self.experiment
                while True:
                    folder.rmdir()
                    if folder == self._created:
                        break
                    folder = folder.parent
                    if any(folder.iterdir()):
                        break
        except OSError:
            pass
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ExperimentLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> bool:
        self.release()
        return False
