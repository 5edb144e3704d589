"""Runs validated experiments through Ray Tune and reports them.

One progress line per iteration (iteration, env steps, return, fairness gap, steps/s),
a final table per experiment, and for ``--as-test`` a check that all pass criteria held
on one and the same iteration.

``--as-test`` semantics: the pass criteria always contain the budget entry
(:func:`rllib_fair.cli.criteria.budget_criterion`: env steps or iterations of at least
80% of the stop budget), so no iteration before that point can pass. A trial stops at
its budget, or at the first iteration where every criterion holds together (which is
then at 80-100% of the budget); the verdict is PASSED exactly when such an iteration
exists, and it names that iteration, which is also the trial's last one (its final row
and end checkpoint are the passing iteration).

The progress lines are :mod:`rllib_fair.cli.progress`, the per-trial summaries
:mod:`rllib_fair.cli.summary` and the printed tables :mod:`rllib_fair.cli.report`; this
module wires Tune: stopper, callbacks, checkpoints, resume, schedulers and searchers.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from rllib_fair.cli.config_build import CONFIG_TRANSLATIONS
from rllib_fair.cli.criteria import budget_criterion
from rllib_fair.cli.experiment import Experiment, param_space
from rllib_fair.cli.progress import make_progress_callback
from rllib_fair.cli.results import finite_number as _num
from rllib_fair.cli.results import flatten
from rllib_fair.cli.summary import (
    criteria_met,
    error_line,
    nonfinite_loss,
    select_trial,
    short_of_budget,
    stopped_early,
    summarize_trial,
)


def _make_stopper(exp: Experiment, as_test: bool):
    from ray import tune
    from ray.rllib.utils.annotations import override

    budget = dict(exp.stop)
    criteria = exp.pass_criteria if as_test else []

    class Stopper(tune.Stopper):
        """Stops at the budget, or (with --as-test) as soon as all criteria hold.

        The criteria include the budget entry (checked by ``run_experiment``), so they
        cannot all hold before 80% of the budget.
        """

        @override(tune.Stopper)
        def __call__(self, trial_id, result):
            flat = flatten(result)
            if nonfinite_loss(flat) is not None:
                return True  # reported as the trial's error in the summary
            for key, limit in budget.items():
                v = _num(flat.get(key))
                if v is not None and v >= limit:
                    return True
            return criteria_met(criteria, flat)

        @override(tune.Stopper)
        def stop_all(self):
            return False

    return Stopper()


#: Seconds RLlib waits before restarting a failed env runner when the YAML does not say
#: (RLlib's own default, 60 s, leaves a one-runner experiment sampling nothing for a
#: minute per failure).
RESTART_DELAY_S = 2.0


def apply_runtime_defaults(exp: Experiment) -> None:
    """Fault-tolerance defaults for runs with remote env runners (see the README).

    Failed env runners are restarted (``restart_failed_env_runners``, RLlib's default,
    kept) after ``delay_between_env_runner_restarts_s`` = :data:`RESTART_DELAY_S` unless
    the YAML sets another delay.
    """
    cfg = exp.config
    if (cfg.num_env_runners or 0) > 0 and cfg.delay_between_env_runner_restarts_s == 60.0:
        cfg.fault_tolerance(delay_between_env_runner_restarts_s=RESTART_DELAY_S)


class RunError(RuntimeError):
    """A run that ended without results Tune could report (one line)."""


#: Seconds between copies of Tune's experiment state to the storage path.
STATE_SYNC_S = 10.0

#: Minutes between checkpoints of a trial when the YAML sets no checkpoint frequency.
DEFAULT_CHECKPOINT_MINUTES = 5.0


def checkpoint_policy(exp: Experiment) -> tuple[dict[str, Any], float | None]:
    """Tune's ``CheckpointConfig`` settings and the minutes between clock checkpoints.

    ``checkpoint_every_minutes`` (ours) checkpoints a trial once that many minutes
    passed since its last checkpoint; Tune's ``checkpoint_frequency`` counts
    iterations. Without either, trials checkpoint every
    :data:`DEFAULT_CHECKPOINT_MINUTES` minutes; ``checkpoint_every_minutes: 0`` turns
    the clock off. Every trial also checkpoints on SIGINT/SIGTERM (see
    :mod:`rllib_fair.cli.interrupt`).
    """
    ckpt = dict(exp.checkpoint_config)
    minutes = ckpt.pop("checkpoint_every_minutes", None)
    if minutes is None and not ckpt.get("checkpoint_frequency"):
        minutes = DEFAULT_CHECKPOINT_MINUTES
    return ckpt, (float(minutes) if minutes else None)


def experiment_dir(exp: Experiment, storage_path: str | None) -> Path:
    """The folder Tune writes the experiment to."""
    storage = Path(storage_path or exp.storage_path or "results").expanduser().resolve()
    return storage / exp.name


def can_resume(exp: Experiment, storage_path: str | None) -> bool:
    """True if an interrupted run of this experiment left a state Tune can restore."""
    from ray import tune

    path = experiment_dir(exp, storage_path)
    return path.is_dir() and tune.Tuner.can_restore(str(path))


def resource_request(exp: Experiment) -> list[dict[str, float]]:
    """The resource bundles one trial asks Ray for (driver/learner, learners, runners)."""
    from rllib_fair.algorithms import get_algorithm_class

    pgf = get_algorithm_class(exp.run).default_resource_request(exp.config)
    return [{k: float(v) for k, v in b.items() if v} for b in pgf.bundles]


def check_resources(exp: Experiment, cluster: dict, nodes: list[dict]) -> str | None:
    """Why one trial can never be scheduled on this cluster, or None if it can.

    Args:
        exp: the experiment.
        cluster: total resources (``ray.cluster_resources()``).
        nodes: the resources of each alive node.

    Returns:
        A one-line message with what is asked and what exists, or None.
    """
    bundles = resource_request(exp)
    cfg = exp.config
    asked: dict[str, float] = {}
    for b in bundles:
        for k, v in b.items():
            asked[k] = asked.get(k, 0.0) + v
    parts = (
        f"num_learners={cfg.num_learners}, num_gpus_per_learner={cfg.num_gpus_per_learner}, "
        f"num_env_runners={cfg.num_env_runners}, "
        f"num_cpus_per_env_runner={cfg.num_cpus_per_env_runner}"
    )
    for key, value in sorted(asked.items()):
        have = float(cluster.get(key, 0.0))
        if value > have + 1e-9:
            return (
                f"resources: one trial asks for {value:g} {key} ({parts}) but the cluster has "
                f"{have:g}; lower those settings, or give Ray more (--num-cpus N, or "
                "--address of a bigger cluster)"
            )
    for b in bundles:
        if not any(all(n.get(k, 0.0) + 1e-9 >= v for k, v in b.items()) for n in nodes):
            biggest = max((n.get("CPU", 0.0) for n in nodes), default=0.0)
            return (
                f"resources: one actor of the trial asks for {b} but no single node has that "
                f"much (largest node: {biggest:g} CPU); {parts}"
            )
    return None


def run_experiment(
    exp: Experiment, *, as_test: bool, storage_path: str | None, resume: bool = False
) -> dict:
    """Runs one experiment with Tune (or resumes it); returns a summary per trial.

    Raises:
        ExperimentError: with ``as_test``, if the pass criteria lack the budget entry
            (an ``Experiment`` built in Python without ``validate_experiment``).
    """
    from ray import tune

    from rllib_fair.algorithms import get_algorithm_class

    if as_test and exp.pass_criteria:
        budget_criterion(exp.stop, exp.pass_criteria, f"experiment {exp.name!r}")
    apply_runtime_defaults(exp)
    exp_dir = experiment_dir(exp, storage_path)
    storage = exp_dir.parent
    algo_cls = get_algorithm_class(exp.run)
    from rllib_fair.cli import interrupt

    if resume and can_resume(exp, storage_path):
        # Finished trials stay finished; unfinished and errored ones continue from their
        # last checkpoint (from scratch if they had none; the CLI says so before).
        tuner = tune.Tuner.restore(
            str(exp_dir),
            trainable=algo_cls,
            resume_unfinished=True,
            resume_errored=True,
            param_space=param_space(exp),
        )
    else:
        ckpt, every_minutes = checkpoint_policy(exp)
        run_config = tune.RunConfig(
            name=exp.name,
            storage_path=str(storage),
            stop=_make_stopper(exp, as_test),
            checkpoint_config=tune.CheckpointConfig(**ckpt) if ckpt else None,
            callbacks=[
                make_progress_callback(exp),
                interrupt.RunGuard(exp.name, every_minutes, str(exp_dir)),
            ],
            # Tune copies its experiment state to the storage path at most this often
            # (its default, 5 minutes, is what a killed run would lose on resume)
            sync_config=tune.SyncConfig(sync_period=STATE_SYNC_S),
            verbose=0,
        )
        tuner = tune.Tuner(
            algo_cls,
            param_space=param_space(exp),
            run_config=run_config,
            tune_config=tune_config(exp),
        )
    print(
        f"[{exp.name}] results: {exp_dir} | TensorBoard: tensorboard --logdir "
        f"{_shown_path(storage)}",
        flush=True,
    )
    t0 = time.time()
    state = interrupt.begin()
    if resume:
        from rllib_fair.cli.storage import resume_plan

        state.expected = {
            p.trial.name: p.checkpoint_iteration
            for p in resume_plan(exp_dir, move_incomplete=False)
            if not p.finished and p.checkpoint_iteration is not None
        }
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with plain_tune_output():
            grid = tuner.fit()
    except Exception as e:  # Tune itself failed (not a trial): one line, not its traceback
        from rllib_fair.cli.storage import disk_full_message

        why = disk_full_message(exp_dir) or (
            f"Ray Tune stopped the run: {type(e).__name__}: {error_line(e)}"
        )
        raise RunError(f"{exp.name}: {why}") from e
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    wall = time.time() - t0
    trials = [summarize_trial(exp, res) for res in grid]
    summary = {"experiment": exp.name, "storage": str(storage), "wall_s": wall, "trials": trials}
    if state.manifest_errors:
        summary["manifest_errors"] = dict(state.manifest_errors)
    if state.signum is not None:
        summary["interrupted"] = {
            "signal": state.signal_name,
            "exit_code": state.exit_code,
            "saved": {tid: list(v) for tid, v in state.saved.items()},
            "unsaved": sorted(state.unsaved | state.waiting),
        }
    for t in trials:
        t["stopped_early"] = stopped_early(exp, t, as_test)
        if state.signum is None and not t["stopped_early"] and t["error"] is None:
            t["error"] = short_of_budget(exp, t, as_test)
    if exp.selection is not None:
        summary["selection"] = select_trial(exp, trials)
        out = storage / exp.name / "selection.json"
        out.write_text(json.dumps(summary["selection"], indent=2, default=str) + "\n")
    if exp.is_sweep:
        from rllib_fair.cli.compare import write_pareto

        try:
            last = exp.selection.last_iterations if exp.selection is not None else 1
            summary["pareto"] = write_pareto(storage / exp.name, last=last)
        except Exception as e:  # noqa: BLE001 - the table must not cost the results
            summary["pareto"] = {"error": f"{type(e).__name__}: {error_line(e)}"}
    for t in trials:
        del t["history"]
    return summary


def _shown_path(path: Path) -> str:
    """``path`` relative to the current folder when it lies inside it, else absolute."""
    try:
        rel = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return str(path)
    return str(rel) if str(rel) != "." else "."


class plain_tune_output:
    """Runs Tune with its older console output (``RAY_AIR_NEW_OUTPUT=0``).

    Unless the user set that variable.
    At ``verbose=0`` the older output prints nothing, while the newer one prints a
    configuration box, the results folder and a TensorBoard hint pointing at a staging
    copy inside Ray's temporary session folder, which Ray deletes later. The runner prints
    the results folder and ``tensorboard --logdir <storage path>`` itself.
    """

    VAR = "RAY_AIR_NEW_OUTPUT"

    def __enter__(self):
        self._set = self.VAR not in os.environ
        if self._set:
            os.environ[self.VAR] = "0"
        return self

    def __exit__(self, *exc):
        if self._set:
            os.environ.pop(self.VAR, None)
        return False


def tune_config(exp: Experiment):
    """Tune's ``TuneConfig``: samples, scheduler, search algorithm, concurrency.

    Metric and mode go to the scheduler and the search algorithm (never to the
    TuneConfig, which Tune forbids when a scheduler has its own).
    """
    from ray import tune

    from rllib_fair.cli.tuning import build_scheduler, build_search_alg

    settings = exp.tune
    search = settings.search_alg if settings is not None else None
    num_samples = exp.num_samples
    if search is not None and exp.seeds:
        num_samples *= len(exp.seeds)  # each suggestion runs on every seed
    names = exp.config.to_dict()

    def key_of(key: str) -> str:
        attr = CONFIG_TRANSLATIONS.get(key, key)
        return next((n for n in (key, attr, f"_{attr}") if n in names), key)

    return tune.TuneConfig(
        num_samples=num_samples,
        scheduler=build_scheduler(settings.scheduler if settings else None, key_of),
        search_alg=build_search_alg(
            search, exp.seeds, constant_sampling=bool(exp.seeds and exp.spaces)
        ),
        max_concurrent_trials=settings.max_concurrent_trials if settings else None,
        # A searcher's trials are otherwise named after every setting of the config.
        trial_dirname_creator=_short_trial_name if search is not None else None,
    )


def _short_trial_name(trial) -> str:
    """``<trainable>_<trial id>``: the folder name of a search algorithm's trial."""
    return f"{trial.trainable_name}_{trial.trial_id}"
