"""The runner's console output while Tune trains: one progress line per iteration.

Each line: iteration, env steps against the budget (share and ETA), return, the main
notion's gap, steps per second and the env runners' health; a warning when env runners
failed or env steps raised, and the env errors the runners reported.
"""

from __future__ import annotations

import sys

from rllib_fair.cli.experiment import Experiment
from rllib_fair.cli.results import RETURN_KEY, STEPS_KEY, flatten, fmt
from rllib_fair.cli.results import finite_number as _num
from rllib_fair.cli.summary import gap_key, runner_faults


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


def make_progress_callback(exp: Experiment):
    """A Tune callback printing one line per training iteration of ``exp``'s trials."""
    from ray import tune
    from ray.rllib.utils.annotations import override

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

        @override(tune.Callback)
        def on_trial_complete(self, iteration, trials, trial, **info):
            self._print_env_errors(trial)

        @override(tune.Callback)
        def on_trial_error(self, iteration, trials, trial, **info):
            self._print_env_errors(trial)

        @override(tune.Callback)
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
            faults = runner_faults(exp, flat)
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
                f" | return {fmt(_num(flat.get(RETURN_KEY)), '10.3f')}"
                f" | gap {fmt(_num(flat.get(gkey)), '.4f')}"
                f" | {fmt(sps, '.0f')} steps/s{health}",
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
