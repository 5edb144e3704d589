"""Why a trial failed, in one line that says what died and what to do next.

Tune hands the runner a trial's error as Ray wrapped it: the trainable's remote
traceback, with the traceback of the actor that actually failed nested inside. The
last line of that text is often the symptom, not the cause: when one of two learners
is killed, the surviving learner's collective call fails with a socket error, and
the dead one is never named. :func:`explain_trial_error` recognises the failures a
user can act on and names them:

* **the storage is full** (``ENOSPC``): free space on the storage path and continue
  with ``--resume``; checkpoints completed before the failure are intact;
* **a learner process died** (its actor died, or a peer learner lost its
  connection to it): RLlib does not restart learners, so the trial stops; continue
  from the last checkpoint with ``--resume``;
* **an env runner died and was not restarted** (``restart_failed_env_runners`` off,
  or its restarts used up): which runner, how it died;
* **a checkpoint could not be read on restore** (truncated or corrupted file): the
  file, found in the traceback or by checking the checkpoint's files;
* **another process of the trial died** (the trainable itself, which also holds the
  learner when ``num_learners=0``): its class and pid;

and otherwise gives the last meaningful line of the error. The classification reads
exception types (through Ray's ``cause`` and Python's ``__cause__`` chains) and the
text of remote tracebacks; it never imports Ray.
"""

from __future__ import annotations

import errno
import re
import traceback
from pathlib import Path

#: Longest line :func:`explain_trial_error` returns (longer ones end in "...").
MAX_CHARS = 400
#: Longest quoted detail (an exception's message) inside that line.
DETAIL_CHARS = 200

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# the header Ray writes for a failed remote call: "ray::Class.method() (pid=123, ..."
_HEADER = re.compile(r"ray::(?P<cls>[A-Za-z_][\w]*)\.(?P<method>[\w]+)\(\)\s*\(pid=(?P<pid>\d+)")
_CLASS_NAME = re.compile(r"class_name:\s*(?P<cls>\S+)")
_PID = re.compile(r"\bpid:\s*(?P<pid>\d+)")
_EXIT_DETAIL = re.compile(r"Worker exit detail:\s*(?P<detail>[^.]*)")

# Ray Train's worker wrapper: RLlib runs every remote learner inside one.
_LEARNER_CLASSES = re.compile(r"^_WrappedExecutable$|Learner", re.IGNORECASE)
_ENV_RUNNER_CLASSES = re.compile(r"EnvRunner|RolloutWorker")
# what the surviving learners see when a peer's process is gone (torch.distributed)
_PEER_LOST = re.compile(
    r"Connection closed by peer|Connection reset by peer|remote worker crash"
    r"|NCCL (?:error|communicator was aborted)|ProcessGroup\w* .*(?:abort|timed out)",
    re.IGNORECASE,
)
_ACTOR_DIED = re.compile(r"ActorDiedError|The actor died|actor is dead|RayActorError")
_NO_SPACE = re.compile(r"No space left on device|\[errno 28\]", re.IGNORECASE)
_NO_SPACE_PATH = re.compile(
    r"(?:No space left on device|\[errno 28\][^:'\n]*):\s*'(?P<path>[^']+)'", re.IGNORECASE
)
# decoding errors of the files RLlib and Tune write (pickle, JSON, msgpack)
_DECODE_TYPES = (
    "UnpicklingError",
    "EOFError",
    "JSONDecodeError",
    "ExtraData",
    "UnpackValueError",
    "FormatError",
    "StackError",
    "BadZipFile",
)
_DECODE_TEXT = re.compile(
    r"pickle data was truncated|invalid load key|Ran out of input|"
    r"(?:UnpicklingError|JSONDecodeError|EOFError|UnpackValueError|ExtraData)\b"
)
_RESTORE_TEXT = re.compile(
    r"restore_from_path|from_checkpoint|load_checkpoint|\.restore\(\)|restore_from_object"
)
_CHECKPOINT_DIR = re.compile(r"(?P<dir>/[^\s'\"]*?/checkpoint_\d+)")


def explain_trial_error(error: BaseException, *, checkpoint: str | None = None) -> str:
    """One line saying why a trial failed: what died or broke, and what to do next.

    Args:
        error: the trial's error as Tune reports it (``Result.error``), or any
            exception raised while restoring or running an algorithm.
        checkpoint: the trial's latest checkpoint folder, if known: where a restore
            error's unreadable file is looked for when the traceback does not name it.

    Returns:
        One line (no newlines, at most :data:`MAX_CHARS` characters).
    """
    chain = _chain(error)
    text = _clean(_full_text(error))
    rules = (_no_space, _learner_died, _env_runner_died, _unreadable_checkpoint, _actor_died)
    for rule in rules:
        line = rule(error, chain, text, checkpoint)
        if line:
            return _one_line(line, MAX_CHARS)
    return last_line(error)


def last_line(error: BaseException) -> str:
    """The last non-empty line of an error's text (the exception, not Ray's wrapping)."""
    lines = [ln.strip() for ln in _clean(str(error)).splitlines() if ln.strip()]
    text = lines[-1] if lines else type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


# -- the rules -------------------------------------------------------------------------


def _no_space(error, chain, text, checkpoint) -> str | None:
    full = next(
        (e for e in chain if isinstance(e, OSError) and e.errno == errno.ENOSPC),
        None,
    )
    if full is None and not _NO_SPACE.search(text):
        return None
    path = getattr(full, "filename", None) if full is not None else None
    if not path:
        m = _NO_SPACE_PATH.search(text)
        path = m.group("path") if m else None
    what = "writing a checkpoint" if _failed_in(text, "save") else "writing the run's files"
    where = f" ({path})" if path else ""
    return (
        f"storage full: no space left on the device while {what}{where}; free space on "
        "the storage path and continue with --resume (the checkpoints completed before "
        "this are intact)"
    )


def _learner_died(error, chain, text, checkpoint) -> str | None:
    died = _died_actor(chain, text)
    if died is not None and _LEARNER_CLASSES.search(died[0]):
        cls, pid, how = died
        detail = f"{_learner_name(cls)}, pid {pid}" if pid else _learner_name(cls)
        if how:
            detail += f": {how}"
        return f"a learner process died ({detail}); " + _LEARNER_ADVICE
    peer = _PEER_LOST.search(text)
    learners = [m for m in _HEADER.finditer(text) if _LEARNER_CLASSES.search(m.group("cls"))]
    if peer and learners:
        survivor = learners[-1]
        return (
            "a learner process died: learner pid "
            f"{survivor.group('pid')} lost its connection to a peer learner "
            f"({_short(peer.group(0))}); " + _LEARNER_ADVICE
        )
    return None


_LEARNER_ADVICE = (
    "RLlib does not restart learners, so the trial stopped; continue from its last "
    "checkpoint with --resume"
)


def _env_runner_died(error, chain, text, checkpoint) -> str | None:
    died = _died_actor(chain, text)
    if died is not None and _ENV_RUNNER_CLASSES.search(died[0]):
        cls, pid, how = died
        who = f"{cls}, pid {pid}" if pid else cls
        return (
            f"an env runner process died ({who}{': ' + how if how else ''}) and RLlib "
            f"did not restart it; {_RUNNER_ADVICE}"
        )
    runners = [m for m in _HEADER.finditer(text) if _ENV_RUNNER_CLASSES.search(m.group("cls"))]
    if runners and died is None:
        m = runners[-1]
        return (
            f"an env runner failed ({m.group('cls')}, pid {m.group('pid')}: "
            f"{_short(last_line(error))}) and RLlib did not restart it; {_RUNNER_ADVICE}"
        )
    return None


_RUNNER_ADVICE = (
    "failed runners are restarted only with restart_failed_env_runners: true (the "
    "default) and until max_num_env_runner_restarts is used up; continue from the last "
    "checkpoint with --resume"
)


def _unreadable_checkpoint(error, chain, text, checkpoint) -> str | None:
    decode = next((e for e in chain if type(e).__name__ in _DECODE_TYPES), None)
    if decode is None and not _DECODE_TEXT.search(text):
        return None
    if not _RESTORE_TEXT.search(text):
        return None
    what = _short(last_line(decode if decode is not None else error))
    if decode is not None and type(decode).__name__ not in what:
        what = f"{type(decode).__name__}: {what}"
    bad = _file_from_traceback(chain)
    folder = None
    if bad is None:
        m = _CHECKPOINT_DIR.search(text)
        folder = checkpoint or (m.group("dir") if m else None)
        if folder:
            bad = find_unreadable_file(Path(folder))
    advice = "restore the file, or move its checkpoint folder away to use an earlier one"
    if bad is not None:
        return f"checkpoint file {bad} is corrupted or truncated ({what}); {advice}"
    where = f" {folder}" if folder else ""
    return f"checkpoint{where} could not be read on restore ({what}); {advice}"


def _actor_died(error, chain, text, checkpoint) -> str | None:
    died = _died_actor(chain, text)
    if died is None:
        return None
    cls, pid, how = died
    who = f"{cls}, pid {pid}" if pid else cls
    return (
        f"a process of the trial died ({who}{': ' + how if how else ''}); continue from "
        "the last checkpoint with --resume"
    )


# -- helpers ---------------------------------------------------------------------------


def find_unreadable_file(folder: Path) -> Path | None:
    """The first file of a checkpoint folder that is empty or does not decode, or None.

    The check of :func:`rllib_fair.cli.storage.file_problem` (nothing is unpickled).
    """
    from rllib_fair.cli.storage import damaged_file

    return damaged_file(folder)


def _chain(error: BaseException) -> list[BaseException]:
    """``error`` and what caused it: Ray's ``cause``, ``__cause__``, ``__context__``."""
    out: list[BaseException] = []
    todo = [error]
    while todo and len(out) < 20:
        e = todo.pop(0)
        if e is None or any(e is seen for seen in out):
            continue
        out.append(e)
        cause = getattr(e, "cause", None)
        todo += [c for c in (cause, e.__cause__, e.__context__) if isinstance(c, BaseException)]
    return out


def _full_text(error: BaseException) -> str:
    """The error's text with its local traceback (where the restore frames are)."""
    try:
        return "".join(traceback.format_exception(type(error), error, error.__traceback__))
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide the error
        return f"{type(error).__name__}"


def _clean(text: str) -> str:
    return _ANSI.sub("", text)


def _short(text: str) -> str:
    return _one_line(text, DETAIL_CHARS)


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _failed_in(text: str, method: str) -> bool:
    return any(m.group("method") == method for m in _HEADER.finditer(text))


def _died_actor(chain, text) -> tuple[str, str | None, str | None] | None:
    """``(class name, pid, how)`` of an actor that died, from the error, or None."""
    died = [e for e in chain if type(e).__name__ in ("ActorDiedError", "RayActorError")]
    sources = [_clean(str(e)) for e in died]
    if not sources and _ACTOR_DIED.search(text):
        sources = [text]
    for src in sources:
        cls = _CLASS_NAME.search(src)
        if cls is None:
            continue
        pid = _PID.search(src)
        how = _EXIT_DETAIL.search(src)
        return (
            # a class defined in a function: "make_class.<locals>.Name" -> "Name"
            cls.group("cls").rsplit(".", 1)[-1],
            pid.group("pid") if pid else None,
            _short(how.group("detail")) if how else None,
        )
    return None


def _learner_name(cls: str) -> str:
    return "a Ray Train worker hosting a learner" if cls == "_WrappedExecutable" else cls


def _file_from_traceback(chain) -> Path | None:
    """The checkpoint file a local restore was reading, from its traceback's frames.

    RLlib's restore keeps the state file's name in ``filename`` (without suffix) and
    the folder in ``path``; the innermost frame that names an existing file wins.
    """
    for e in chain:
        tb = e.__traceback__
        frames = []
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        for frame in reversed(frames):
            local = frame.f_locals
            name = local.get("filename")
            if isinstance(name, Path):
                for candidate in (name.with_suffix(".msgpack"), name.with_suffix(".pkl"), name):
                    if candidate.is_file():
                        return candidate
            folder = local.get("path")
            if isinstance(folder, Path) and folder.is_dir():
                bad = find_unreadable_file(folder)
                if bad is not None:
                    return bad
    return None
