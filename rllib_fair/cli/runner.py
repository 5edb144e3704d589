"""Runs validated experiments through Ray Tune and reports them.

One progress line per iteration (iteration, env steps, return, fairness gap, steps/s),
a final table per experiment, and for ``--as-test`` a check that all pass criteria held
on one and the same iteration.

``--as-test`` semantics: the pass criteria always contain the budget entry
(:func:`rllib_fair.cli.experiment.budget_criterion`: env steps or iterations of at least
80% of the stop budget), so no iteration before that point can pass. A trial stops at
its budget, or at the first iteration where every criterion holds together (which is
then at 80-100% of the budget); the verdict is PASSED exactly when such an iteration
exists, and it names that iteration, which is also the trial's last one (its final row
and end checkpoint are the passing iteration).
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from rllib_fair.cli.compare import finite_number as _num
from rllib_fair.cli.compare import flatten, read_results
from rllib_fair.cli.experiment import (
    CONFIG_TRANSLATIONS,
    Criterion,
    Experiment,
    budget_criterion,
    param_space,
)

RETURN_KEY = "env_runners/episode_return_mean"
STEPS_KEY = "num_env_steps_sampled_lifetime"


def gap_key(exp: Experiment) -> str:
    """The result key of the main notion's gap."""
    return f"fairness/{exp.config.resolved_fairness_notion()}/bias"


def own_metrics(exp: Experiment):
    """The algorithm's declared objective and targets, resolved for this experiment."""
    from rllib_fair.rllib.targets import OwnMetrics

    cfg = exp.config
    declared = getattr(type(cfg), "own_metrics", OwnMetrics())
    settings = {"fairness_disparity_source": getattr(cfg, "fairness_disparity_source", None)}
    return declared.resolve(settings, cfg.resolved_fairness_notion())


def criteria_met(criteria: list[Criterion], flat: dict[str, Any]) -> bool:
    """True if every criterion holds on this one (flattened) result."""
    return bool(criteria) and all(c.holds(_num(flat.get(c.metric))) for c in criteria)


def _fmt(v: float | None, spec: str = ".4g") -> str:
    return "-" if v is None else format(v, spec)


def _budget(exp: Experiment) -> tuple[str, float] | None:
    """The env-step or iteration budget of the stop block, for progress and ETA."""
    for key in (STEPS_KEY, "training_iteration"):
        if key in exp.stop:
            return key, exp.stop[key]
    return None


def _eta(done: float, target: float, elapsed: float) -> str:
    if done <= 0 or elapsed <= 0 or done >= target:
        return "-"
    left = elapsed * (target - done) / done
    return f"{int(left // 60)}m{int(left % 60):02d}s"


def _faults(exp: Experiment, flat: dict) -> dict:
    from rllib_fair.rllib.health import fault_summary

    cfg = exp.config
    return fault_summary(flat, int(cfg.num_env_runners or 0), int(cfg.num_envs_per_env_runner or 1))


def _make_tune_callback(exp: Experiment):
    from ray import tune

    gkey = gap_key(exp)
    budget = _budget(exp)

    class ProgressPrinter(tune.Callback):
        """Prints one line per training iteration (and the runners' faults as they happen)."""

        def __init__(self):
            super().__init__()
            self._seen_failures: dict[str, tuple[int, int]] = {}

        def _print_env_errors(self, trial) -> None:
            from rllib_fair.rllib.health import drain_env_errors

            for line in drain_env_errors(trial.trial_id):
                print(
                    f"[{exp.name} {trial.trial_id}] ENV ERROR: {line}", file=sys.stderr, flush=True
                )

        def on_trial_complete(self, iteration, trials, trial, **info):
            self._print_env_errors(trial)

        def on_trial_error(self, iteration, trials, trial, **info):
            self._print_env_errors(trial)

        def on_trial_result(self, iteration, trials, trial, result, **info):
            self._print_env_errors(trial)
            flat = flatten(result)
            steps_iter = _num(flat.get("env_runners/num_env_steps_sampled")) or 0.0
            dt = _num(flat.get("time_this_iter_s")) or 0.0
            sps = steps_iter / dt if dt > 0 else None
            steps = int(_num(flat.get(STEPS_KEY)) or 0)
            progress = f"env steps {steps:9d}"
            if budget is not None:
                key, target = budget
                done = _num(flat.get(key)) or 0.0
                elapsed = _num(flat.get("time_total_s")) or 0.0
                if key == STEPS_KEY:
                    progress += f"/{int(target)}"
                else:
                    progress += f" | iter target {int(target)}"
                progress += (
                    f" ({100 * min(done / target, 1):3.0f}%, ETA {_eta(done, target, elapsed)})"
                )
            faults = _faults(exp, flat)
            health = ""
            if faults["total"]:
                health = f" | runners {faults['healthy']}/{faults['total']}"
            if faults["restarts"] or faults["step_failures"]:
                health += (
                    f" | restarts {faults['restarts']}, env-step failures {faults['step_failures']}"
                )
            print(
                f"[{exp.name} {trial.trial_id}] iter {int(flat.get('training_iteration', 0)):4d}"
                f" | {progress}"
                f" | return {_fmt(_num(flat.get(RETURN_KEY)), '10.3f')}"
                f" | gap {_fmt(_num(flat.get(gkey)), '.4f')}"
                f" | {_fmt(sps, '.0f')} steps/s{health}",
                flush=True,
            )
            seen = self._seen_failures.get(trial.trial_id, (0, 0))
            now = (faults["failures"], faults["step_failures"])
            if now[0] > seen[0]:
                print(
                    f"[{exp.name} {trial.trial_id}] WARNING: {now[0] - seen[0]} env runner(s) "
                    f"failed (env {exp.env}) before iteration "
                    f"{int(flat.get('training_iteration', 0))}; RLlib restarts failed runners "
                    f"(restart_failed_env_runners={exp.config.restart_failed_env_runners}); "
                    "their episodes in progress are lost",
                    file=sys.stderr,
                    flush=True,
                )
            if now[1] > seen[1]:
                print(
                    f"[{exp.name} {trial.trial_id}] WARNING: {now[1] - seen[1]} env step(s) "
                    f"raised in env {exp.env}; the env was rebuilt "
                    "(restart_failed_sub_environments)",
                    file=sys.stderr,
                    flush=True,
                )
            self._seen_failures[trial.trial_id] = now

    return ProgressPrinter()


def nonfinite_loss(flat: dict) -> str | None:
    """The first learner loss of a (flattened) result that is NaN or infinite, or None."""
    for key, value in flat.items():
        if key.startswith("learners/") and key.endswith("loss"):
            try:
                f = float(value)
            except (TypeError, ValueError):
                continue
            if not math.isfinite(f):
                return f"{key} = {f}"
    return None


def _make_stopper(exp: Experiment, as_test: bool):
    from ray import tune

    budget = dict(exp.stop)
    criteria = exp.pass_criteria if as_test else []

    class Stopper(tune.Stopper):
        """Stops at the budget, or (with --as-test) as soon as all criteria hold.

        The criteria include the budget entry (checked by ``run_experiment``), so they
        cannot all hold before 80% of the budget.
        """

        def __call__(self, trial_id, result):
            flat = flatten(result)
            if nonfinite_loss(flat) is not None:
                return True  # reported as the trial's error in the summary
            for key, limit in budget.items():
                v = _num(flat.get(key))
                if v is not None and v >= limit:
                    return True
            return criteria_met(criteria, flat)

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
                _make_tune_callback(exp),
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
        with _plain_tune_output():
            grid = tuner.fit()
    except Exception as e:  # Tune itself failed (not a trial): one line, not its traceback
        from rllib_fair.cli.storage import disk_full_message

        why = disk_full_message(exp_dir) or (
            f"Ray Tune stopped the run: {type(e).__name__}: {_error_line(e)}"
        )
        raise RunError(f"{exp.name}: {why}") from e
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    wall = time.time() - t0
    gkey = gap_key(exp)
    own = own_metrics(exp)
    trials = []
    for res in grid:
        df = res.metrics_dataframe
        history = [] if df is None else df.to_dict("records")
        last = history[-1] if history else {}
        passed_at = next(
            (
                int(r.get("training_iteration", 0))
                for r in history
                if criteria_met(exp.pass_criteria, r)
            ),
            None,
        )
        best = {}
        for c in exp.pass_criteria:
            b = None
            for r in history:
                b = c.better(b, _num(r.get(c.metric)))
            best[c.metric] = b
        steps = _num(last.get(STEPS_KEY)) or 0.0
        ttot = _num(last.get("time_total_s")) or 0.0
        faults = _faults(exp, last)
        from rllib_fair.cli.errors import explain_trial_error

        error = (
            explain_trial_error(res.error, checkpoint=_checkpoint_path(res)) if res.error else None
        )
        if error is None:
            # the raw results: the dataframe fills keys an iteration lacked with NaN
            bad = next(
                (
                    (int(r.get("training_iteration", 0) or 0), msg)
                    for r in read_results(res.path)
                    if (msg := nonfinite_loss(r)) is not None
                ),
                None,
            )
            if bad is not None:
                error = (
                    f"losses became non-finite at iteration {bad[0]} ({bad[1]}); lower lr, "
                    "the fairness weights or the reward scale"
                )
        if error is None and history and steps <= 0:
            error = (
                f"sampled no env steps in {len(history)} iteration(s): every env runner "
                "failed (see the warnings above)"
            )
        trials.append(
            {
                "trial": os.path.basename(res.path) if res.path else "?",
                "path": res.path,
                "error": error,
                "error_full": str(res.error) if res.error else None,
                "rates": {
                    str(k).split("/rate/", 1)[1]: _num(v)
                    for k, v in last.items()
                    if str(k).startswith(f"{gkey.rsplit('/', 1)[0]}/rate/")
                },
                "faults": faults,
                "checkpoint": _checkpoint_path(res),
                "iterations": int(last.get("training_iteration", 0) or 0),
                "env_steps": int(steps),
                "return": _num(last.get(RETURN_KEY)),
                "env_return": _num(last.get(own.env_reward.key)),
                "objective": _num(last.get(own.objective.key)) if own.shaped else None,
                "targets": {m.key: _num(last.get(m.key)) for m in own.constraints},
                "gap": _num(last.get(gkey)),
                "steps_per_s": steps / ttot if ttot > 0 else None,
                "passed_at": passed_at,
                "best": best,
                "has_fairness": any(str(k).startswith("fairness/") for k in last),
                "params": _grid_params(exp, res.config or {}),
                "history": history,
            }
        )
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
        t["stopped_early"] = _stopped_early(exp, t, as_test)
        if state.signum is None and not t["stopped_early"] and t["error"] is None:
            t["error"] = _short_of_budget(exp, t, as_test)
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
            summary["pareto"] = {"error": f"{type(e).__name__}: {_error_line(e)}"}
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


class _plain_tune_output:
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


def _error_line(error: BaseException) -> str:
    """The last meaningful line of a trial's error (the exception, not Ray's wrapping)."""
    lines = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
    text = lines[-1] if lines else type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _checkpoint_path(res) -> str | None:
    ckpt = getattr(res, "checkpoint", None)
    return getattr(ckpt, "path", None) if ckpt is not None else None


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


def _stopped_early(exp: Experiment, trial: dict, as_test: bool) -> bool:
    """True for a trial a scheduler stopped before its budget (not an error)."""
    if exp.tune is None or exp.tune.scheduler is None or trial["error"] or not trial["history"]:
        return False
    last = trial["history"][-1]
    if as_test and trial["passed_at"] is not None:
        return False
    return not any((_num(last.get(k)) or 0.0) >= v for k, v in exp.stop.items())


def _short_of_budget(exp: Experiment, trial: dict, as_test: bool) -> str | None:
    """Why a trial that ended without error is not done (one line), or None.

    A trial ends at its budget, when ``--as-test`` criteria held, or by a scheduler;
    ending anywhere else (seen once after a restore from a full disk) must not pass
    for a finished run.
    """
    if not trial["history"] or (as_test and trial["passed_at"] is not None):
        return None
    last = trial["history"][-1]
    if any((_num(last.get(k)) or 0.0) >= v for k, v in exp.stop.items()):
        return None
    budget = ", ".join(f"{k} {_plain_number(v)}" for k, v in exp.stop.items())
    return (
        f"ended at iteration {int(last.get('training_iteration') or 0)} before its budget "
        f"({budget}) without an error; run again with --resume to continue it"
    )


def _plain_number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _grid_params(exp: Experiment, config: dict) -> dict[str, Any]:
    """The swept values a trial ran with (grids, spaces, seed), under the YAML's names."""
    out = {}
    keys = [*exp.grid, *exp.spaces]
    if exp.tune is not None and exp.tune.scheduler is not None:
        keys += [k for k in exp.tune.scheduler.mutations if k not in keys]
    if exp.seeds:
        keys.append("seed")
    for key in keys:
        attr = CONFIG_TRANSLATIONS.get(key, key)
        for name in (key, attr, f"_{attr}"):  # properties are stored as _<name>
            if name in config:
                out[key] = config[name]
                break
        else:
            out[key] = None
    return out


def select_trial(exp: Experiment, trials: list[dict]) -> dict:
    """The ``selection`` rule over configurations (see :mod:`rllib_fair.cli.sweep`).

    Trials with equal swept values apart from the seed form one configuration; its
    disparity and reward are the means over its seeds (``*_std``: the spread).
    """
    from statistics import mean, pstdev

    from rllib_fair.cli.sweep import (
        RULES,
        constant_disparity_note,
        select_by_rule,
        trailing_mean,
    )

    sel = exp.selection
    by_config: dict[str, list[dict]] = {}
    for t in trials:
        params = {k: v for k, v in t["params"].items() if k != "seed"}
        by_config.setdefault(json.dumps(params, sort_keys=True, default=str), []).append(t)
    scores = []
    for members in by_config.values():
        score: dict[str, Any] = {
            "trial": members[0]["trial"],
            "trials": [t["trial"] for t in members],
            "seeds": [t["params"].get("seed") for t in members] if exp.seeds else None,
            "params": {k: v for k, v in members[0]["params"].items() if k != "seed"},
        }
        for what, key in (("disparity", sel.disparity), ("reward", sel.reward)):
            vals = [trailing_mean(t["history"], key, sel.last_iterations) for t in members]
            vals = [v for v in vals if v is not None]
            score[what] = mean(vals) if vals else None
            score[f"{what}_std"] = pstdev(vals) if len(vals) > 1 else None
        scores.append(score)
    chosen = select_by_rule(scores, sel.rule, sel.omega)
    return {
        "note": constant_disparity_note(sel.disparity),
        "rule": RULES[sel.rule],
        "disparity_key": sel.disparity,
        "reward_key": sel.reward,
        "omega": sel.omega,
        "last_iterations": sel.last_iterations,
        "scores": scores,
        "selected": None if chosen is None else scores[chosen],
    }


def print_table(exp: Experiment, summary: dict, *, file=None) -> None:
    """Prints the final results table of one experiment (to ``sys.stdout`` by default).

    Columns: the env's return, the algorithm's own objective when it trains on another
    reward (R-TD3's relaxed return), the main notion's gap and each of the algorithm's
    own fairness targets (:mod:`rllib_fair.rllib.targets`); a legend below names the
    key and meaning of every column.
    """
    from rllib_fair.rllib.targets import gap_meaning

    file = sys.stdout if file is None else file
    notion = exp.config.resolved_fairness_notion()
    own = own_metrics(exp)
    gkey = gap_key(exp)
    extra = [m for m in own.constraints if m.key != gkey]
    ret_name = own.env_reward.name if own.shaped else "return"
    cols = [(ret_name, "env_return", ".3f")]
    if own.shaped:
        cols.append((own.objective.name, "objective", ".3f"))
    cols.append((f"gap ({notion})", "gap", ".4f"))
    cols += [(m.name, m.key, ".4f") for m in extra]
    widths = [max(11, len(name)) for name, _, _ in cols]
    # trial folder names are printed whole: cut, they lose the trial id and the values
    tw = max([len("trial"), *(len(t["trial"]) for t in summary["trials"])])
    head = f"{'trial':<{tw}} {'iters':>5} {'env steps':>10} " + " ".join(
        f"{name:>{w}}" for (name, _, _), w in zip(cols, widths, strict=True)
    )
    head += f" {'steps/s':>8}"
    print(f"\n== {exp.name}: {exp.run} on {exp.env} ({summary['wall_s']:.0f} s) ==", file=file)
    print(head, file=file)
    print("-" * len(head), file=file)
    for t in summary["trials"]:
        values = []
        for _, what, spec in cols:
            if what == "env_return":
                v = t.get("env_return", t["return"])
            elif what in ("objective", "gap"):
                v = t.get(what)
            else:
                v = (t.get("targets") or {}).get(what)
            values.append(_fmt(v, spec))
        print(
            f"{t['trial']:<{tw}} {t['iterations']:>5} {t['env_steps']:>10} "
            + " ".join(f"{v:>{w}}" for v, w in zip(values, widths, strict=True))
            + f" {_fmt(t['steps_per_s'], '.0f'):>8}",
            file=file,
        )
        if t["error"]:
            print(f"  error: {t['error']}", file=file)
        elif t.get("stopped_early"):
            print(
                f"  stopped early by the {exp.tune.scheduler.type} scheduler (not an error)",
                file=file,
            )
        f = t.get("faults") or {}
        if f.get("total") or f.get("step_failures"):
            print(
                f"  env runners: {f['healthy']}/{f['total']} healthy at the end, "
                f"{f['restarts']} restarted, {f['failures']} failed, "
                f"{f['episodes_lost']} episode(s) lost in progress, "
                f"{f['step_failures']} env-step failure(s)",
                file=file,
            )
        if t.get("rates"):
            rates = ", ".join(f"{g} {_fmt(v, '.4f')}" for g, v in t["rates"].items())
            print(f"  rates per group: {rates}", file=file)
        if t.get("checkpoint"):
            print(f"  checkpoint: {t['checkpoint']}", file=file)
    print("values of each trial's last iteration:", file=file)
    print(f"  {ret_name}: {own.env_reward.meaning} ({own.env_reward.key})", file=file)
    if own.shaped:
        print(
            f"  {own.objective.name} ({exp.run}'s objective): {own.objective.meaning} "
            f"({own.objective.key})",
            file=file,
        )
    print(
        f"  gap ({notion}) = {gap_meaning(notion)}, over the last iteration's steps ({gkey}); "
        "rates per group: that estimand",
        file=file,
    )
    for m in own.constraints:
        where = f"in the gap ({notion}) column" if m.key == gkey else f"the {m.name} column"
        print(f"  {exp.run}'s own target, {where}: {m.meaning} ({m.key})", file=file)
    if not own.constraints:
        print(f"  {exp.run}'s own target: none ({own.note})", file=file)
    elif own.note:
        print(f"  {exp.run} optimises {own.note}", file=file)
    for t in summary["trials"]:
        if t.get("params"):
            params = ", ".join(f"{k}={v}" for k, v in t["params"].items())
            print(f"  {t['trial']}: {params}", file=file)
    sel = summary.get("selection")
    if sel is not None:
        chosen = sel["selected"]
        if chosen is None:
            print(
                f"selection (Alg. 2): no trial reported both {sel['disparity_key']} and "
                f"{sel['reward_key']}",
                file=file,
            )
        else:
            params = ", ".join(f"{k}={v}" for k, v in chosen["params"].items()) or "-"
            rule = (
                f"Alg. 2, omega {sel['omega']:g}"
                if exp.selection.rule == "sellf"
                else exp.selection.rule
            )
            spread = ""
            if chosen.get("seeds"):
                spread = (
                    f", mean over seeds {chosen['seeds']} (std {_fmt(chosen['disparity_std'])}"
                    f", {_fmt(chosen['reward_std'], '.3f')})"
                )
            print(
                f"selected ({rule}, {sel['disparity_key']} "
                f"{chosen['disparity']:.4f}, {sel['reward_key']} {chosen['reward']:.3f}, "
                f"mean of last {sel['last_iterations']}{spread}): {chosen['trial']} {params}",
                file=file,
            )
        if sel.get("note"):
            print(f"  note: {sel['note']}", file=file)
        print(f"selection: {summary['storage']}/{exp.name}/selection.json", file=file)
    pareto = summary.get("pareto")
    if pareto is not None:
        if "error" in pareto:
            print(f"pareto front: not written ({pareto['error']})", file=file)
        else:
            print(
                "\nreward-gap Pareto front over configurations (* = on the front; mean +- std "
                "over seeds):",
                file=file,
            )
            print(pareto["table"], file=file)
            print(f"pareto: {', '.join(pareto['files'])}", file=file)
    print(f"results: {summary['storage']}/{exp.name}", file=file)


def print_side_by_side(done: list[tuple[Experiment, dict]], *, file=None) -> None:
    """One line per trial of every experiment of the file, for a direct comparison."""
    file = sys.stdout if file is None else file
    head = f"{'experiment':<28} {'algo':<9} {'env':<24} {'return':>11} {'gap':>8}  rates"
    print("\n== side by side ==", file=file)
    print(head, file=file)
    print("-" * len(head), file=file)
    for exp, summary in done:
        notion = exp.config.resolved_fairness_notion()
        for t in summary["trials"]:
            rates = ", ".join(f"{g} {_fmt(v, '.3f')}" for g, v in (t.get("rates") or {}).items())
            print(
                f"{exp.name[:28]:<28} {exp.run:<9} {exp.env[:24]:<24} "
                f"{_fmt(t['return'], '11.3f'):>11} {_fmt(t['gap'], '.4f'):>8}  "
                f"{notion}: {rates or '-'}",
                file=file,
            )
    print("(rllib-fair compare RESULTS for seeds, spread and plots)", file=file)


def check_pass(exp: Experiment, summary: dict) -> tuple[bool, str]:
    """Checks --as-test: every trial must meet all criteria on one iteration.

    The criteria include the budget entry, so that iteration lies at 80-100% of the
    budget; with ``--as-test`` the trial stopped there.
    """
    if not exp.pass_criteria:
        return False, f"{exp.name}: --as-test needs a pass_criteria block in the YAML file"
    failures = []
    for t in summary["trials"]:
        if t["error"]:
            failures.append(f"trial {t['trial']} failed: {t['error']}")
        elif t["passed_at"] is None:
            best = ", ".join(
                f"{c.metric} best {_fmt(t['best'].get(c.metric))} (needs {c.describe()})"
                for c in exp.pass_criteria
            )
            failures.append(f"trial {t['trial']} never met all criteria on one iteration: {best}")
    if failures:
        return False, f"{exp.name}: FAILED: " + "; ".join(failures)
    its = ", ".join(str(t["passed_at"]) for t in summary["trials"])
    crit = " AND ".join(f"{c.metric} {c.describe()}" for c in exp.pass_criteria)
    return True, f"{exp.name}: PASSED ({crit}) at iteration(s) {its}"
