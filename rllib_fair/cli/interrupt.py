"""Interrupts that checkpoint, checkpoints on a clock, and a manifest in every checkpoint.

:class:`RunGuard` is a Tune callback the runner adds to every experiment:

* **SIGINT / SIGTERM**: the first signal asks every running trial for a checkpoint at
  the end of its current iteration (Tune's ``should_checkpoint`` result flag, which
  Tune lets callbacks set), then ends the run through Tune's own stop signal
  (SIGUSR1, which saves the experiment state). A second signal ends the run at once
  from the last checkpoints. The runner then exits 130 (SIGINT) or 143 (SIGTERM)
  and prints how to resume.
* **Periodic checkpoints by the clock**: with ``checkpoint_every_minutes`` a trial is
  checkpointed at the end of the first iteration that ends that long after its last
  checkpoint (Tune's own ``checkpoint_frequency`` counts iterations).
* **Manifests**: every checkpoint Tune registers gets a manifest of its files
  (:func:`rllib_fair.cli.storage.write_manifest`), so a later ``--resume`` or
  ``evaluate`` can tell a complete checkpoint from a half-written or damaged one.

The callback is pickled into the experiment's ``tuner.pkl`` (Tune restores it on
``--resume``); what the runner reads back lives in the module-level :data:`STATE`.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ray import tune
from ray.rllib.utils.annotations import override
from ray.tune.result import SHOULD_CHECKPOINT

from rllib_fair.cli.storage import backup_experiment_state, write_manifest

SIGNAL_NAMES = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}


@dataclass
class InterruptState:
    """What happened to the run in progress (reset by :func:`begin`)."""

    #: The first stop signal received, or None.
    signum: int | None = None
    #: Trials asked for a checkpoint and not yet saved.
    waiting: set[str] = field(default_factory=set)
    #: trial id -> (checkpoint path, training iteration) saved after the signal.
    saved: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    #: Trials whose checkpoint was requested but never came (second signal, error).
    unsaved: set[str] = field(default_factory=set)
    #: Checkpoints whose manifest could not be written (path -> reason).
    manifest_errors: dict[str, str] = field(default_factory=dict)
    #: trial folder name -> the iteration its resume should continue after.
    expected: dict[str, int] = field(default_factory=dict)
    stopping: bool = False

    @property
    def exit_code(self) -> int:
        """The shell's convention: 128 + the signal number (130 SIGINT, 143 SIGTERM)."""
        return 128 + int(self.signum or 0)

    @property
    def signal_name(self) -> str:
        """SIGINT or SIGTERM."""
        return SIGNAL_NAMES.get(self.signum, f"signal {self.signum}")


#: The state of the run in progress in this process.
STATE = InterruptState()


def begin() -> InterruptState:
    """Resets :data:`STATE` for a new ``Tuner.fit`` and returns it."""
    global STATE
    STATE = InterruptState()
    return STATE


class RunGuard(tune.Callback):
    """Checkpoints on interrupt and on a clock; writes checkpoint manifests.

    Args:
        name: the experiment's name (for messages).
        every_minutes: checkpoint a trial when this many minutes passed since its last
            checkpoint (None: only Tune's own frequency and the interrupt).
    """

    def __init__(self, name: str, every_minutes: float | None = None, experiment: str = ""):
        super().__init__()
        self.name = name
        self.experiment = experiment
        self._backup_at: tuple | None = None
        self.every_s = None if every_minutes is None else 60.0 * float(every_minutes)
        self._last: dict[str, float] = {}
        self._trials: list = []
        self._previous: dict[int, object] = {}

    def __getstate__(self):
        state = self.__dict__.copy()
        state.update(_last={}, _trials=[], _previous={}, _backup_at=None)
        return state

    # -- signals ------------------------------------------------------------------------

    @override(tune.Callback)
    def setup(self, **info):
        """Installs the SIGINT/SIGTERM handlers (after Tune installed its own)."""
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.getsignal(sig)
            signal.signal(sig, self._on_signal)

    def restore_handlers(self) -> None:
        """Puts back the handlers that were there before :meth:`setup`."""
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}

    @override(tune.Callback)
    def on_experiment_end(self, trials, **info):
        """Puts back the previous handlers."""
        self.restore_handlers()

    def _on_signal(self, signum, frame) -> None:
        state = STATE
        if state.signum is not None:
            state.unsaved |= state.waiting
            state.waiting = set()
            print(
                f"[{self.name}] {SIGNAL_NAMES.get(signum, signum)} again: stopping now; "
                "trials resume from their last checkpoint",
                file=sys.stderr,
                flush=True,
            )
            self._stop_tune()
            return
        state.signum = signum
        running = [t for t in self._trials if t.status == "RUNNING"]
        state.waiting = {t.trial_id for t in running}
        print(
            f"[{self.name}] {state.signal_name} received: checkpointing {len(running)} running "
            "trial(s) at the end of their current iteration, then stopping (send it again to "
            "stop at once; the iterations in progress are then lost)",
            file=sys.stderr,
            flush=True,
        )
        if not state.waiting:
            self._stop_tune()

    def _stop_tune(self) -> None:
        if STATE.stopping:
            return
        STATE.stopping = True
        # Tune ends the run loop on SIGUSR1 (its handler is installed for every run
        # started from the main thread) and saves the experiment state on the way out.
        signal.raise_signal(signal.SIGUSR1)

    def _settled(self, trial, *, failed: bool) -> None:
        state = STATE
        if trial.trial_id in state.waiting:
            state.waiting.discard(trial.trial_id)
            if failed:
                state.unsaved.add(trial.trial_id)
        if state.signum is not None and not state.waiting:
            self._stop_tune()

    # -- results and checkpoints --------------------------------------------------------

    @override(tune.Callback)
    def on_step_begin(self, iteration, trials, **info):
        """Keeps the trial list for the signal handler."""
        self._trials = trials
        if self.experiment:
            self._backup_state()

    def _backup_state(self) -> None:
        """Copies Tune's experiment and search states aside each time Tune rewrote them."""
        try:
            found = sorted(
                (f.name, f.stat().st_mtime_ns)
                for f in Path(self.experiment).iterdir()
                if f.name.endswith((".json", ".pkl")) and f.name[0] != "."
            )
            stamp = tuple(found) if found else None
        except OSError:
            return
        if stamp is not None and stamp != self._backup_at:
            if backup_experiment_state(self.experiment):
                self._backup_at = stamp

    @override(tune.Callback)
    def on_trial_start(self, iteration, trials, trial, **info):
        """Starts the trial's checkpoint clock."""
        self._last.setdefault(trial.trial_id, time.monotonic())

    @override(tune.Callback)
    def on_trial_result(self, iteration, trials, trial, result, **info):
        """Asks for a checkpoint after an interrupt, or when the clock says so."""
        now = time.monotonic()
        self._check_restored(trial, result)
        if STATE.signum is not None:
            if trial.trial_id in STATE.waiting:
                result[SHOULD_CHECKPOINT] = True
            return
        if self.every_s is None:
            return
        if now - self._last.setdefault(trial.trial_id, now) >= self.every_s:
            result[SHOULD_CHECKPOINT] = True

    def _check_restored(self, trial, result) -> None:
        """Warns when a resumed trial started over although a checkpoint was expected."""
        name = Path(str(getattr(trial, "path", "") or "")).name
        expected = STATE.expected.pop(name, None)
        if expected is None or result.get("iterations_since_restore") != 1:
            return
        if int(result.get("training_iteration") or 0) != expected + 1:
            print(
                f"[{self.name} {trial.trial_id}] WARNING: the trial was expected to continue "
                f"after iteration {expected} but Tune restarted it at iteration "
                f"{result.get('training_iteration')} (the experiment state Tune saved last "
                "named an older checkpoint or none); its result.json holds both attempts",
                file=sys.stderr,
                flush=True,
            )

    @override(tune.Callback)
    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
        """Writes the manifest; after an interrupt, stops once every trial has saved."""
        self._last[trial.trial_id] = time.monotonic()
        it = (trial.last_result or {}).get("training_iteration")
        it = int(it) if isinstance(it, (int, float)) else None
        path = getattr(checkpoint, "path", None)
        fs = getattr(checkpoint, "filesystem", None)
        if path and (fs is None or getattr(fs, "type_name", "local") == "local"):
            try:
                write_manifest(path, it)
            except OSError as e:  # a full disk: the checkpoint stays unconfirmed
                STATE.manifest_errors[str(path)] = f"{type(e).__name__}: {e}"
        state = STATE
        if state.signum is not None and trial.trial_id in state.waiting:
            state.waiting.discard(trial.trial_id)
            state.saved[trial.trial_id] = (str(path), it)
            if not state.waiting:
                self._stop_tune()

    @override(tune.Callback)
    def on_trial_complete(self, iteration, trials, trial, **info):
        """A trial that finished needs no interrupt checkpoint."""
        self._settled(trial, failed=False)

    @override(tune.Callback)
    def on_trial_error(self, iteration, trials, trial, **info):
        """A trial that failed cannot save one."""
        self._settled(trial, failed=True)
