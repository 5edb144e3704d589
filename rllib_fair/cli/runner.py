"""Runs validated experiments through Ray Tune and reports them.

One progress line per iteration (iteration, env steps, return, fairness gap, steps/s),
a final table per experiment, and for ``--as-test`` a check that all pass criteria held
on one and the same iteration.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from rllib_fair.cli.experiment import CONFIG_TRANSLATIONS, Criterion, Experiment, param_space

RETURN_KEY = "env_runners/episode_return_mean"
STEPS_KEY = "num_env_steps_sampled_lifetime"


def flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    """Flattens a nested result dict into ``a/b/c`` keys (like Tune does)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "/"))
        else:
            out[key] = v
    return out


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def gap_key(exp: Experiment) -> str:
    """The result key of the main notion's gap."""
    return f"fairness/{exp.config.resolved_fairness_notion()}/bias"


def criteria_met(criteria: list[Criterion], flat: dict[str, Any]) -> bool:
    """True if every criterion holds on this one (flattened) result."""
    return bool(criteria) and all(c.holds(_num(flat.get(c.metric))) for c in criteria)


def _fmt(v: float | None, spec: str = ".4g") -> str:
    return "-" if v is None else format(v, spec)


def _make_tune_callback(exp: Experiment):
    from ray import tune

    gkey = gap_key(exp)

    class ProgressPrinter(tune.Callback):
        """Prints one line per training iteration."""

        def on_trial_result(self, iteration, trials, trial, result, **info):
            flat = flatten(result)
            steps_iter = _num(flat.get("env_runners/num_env_steps_sampled")) or 0.0
            dt = _num(flat.get("time_this_iter_s")) or 0.0
            sps = steps_iter / dt if dt > 0 else None
            print(
                f"[{exp.name} {trial.trial_id}] iter {int(flat.get('training_iteration', 0)):4d}"
                f" | env steps {int(_num(flat.get(STEPS_KEY)) or 0):9d}"
                f" | return {_fmt(_num(flat.get(RETURN_KEY)), '10.3f')}"
                f" | gap {_fmt(_num(flat.get(gkey)), '.4f')}"
                f" | {_fmt(sps, '.0f')} steps/s",
                flush=True,
            )

    return ProgressPrinter()


def _make_stopper(exp: Experiment, as_test: bool):
    from ray import tune

    budget = dict(exp.stop)
    criteria = exp.pass_criteria if as_test else []

    class Stopper(tune.Stopper):
        """Stops at the budget, or (with --as-test) as soon as all criteria hold."""

        def __call__(self, trial_id, result):
            flat = flatten(result)
            for key, limit in budget.items():
                v = _num(flat.get(key))
                if v is not None and v >= limit:
                    return True
            return criteria_met(criteria, flat)

        def stop_all(self):
            return False

    return Stopper()


def run_experiment(exp: Experiment, *, as_test: bool, storage_path: str | None) -> dict:
    """Runs one experiment with Tune; returns a summary per trial."""
    from ray import tune

    from rllib_fair.algorithms import get_algorithm_class

    storage = Path(storage_path or exp.storage_path or "results").expanduser().resolve()
    algo_cls = get_algorithm_class(exp.run)
    ckpt = dict(exp.checkpoint_config)
    run_config = tune.RunConfig(
        name=exp.name,
        storage_path=str(storage),
        stop=_make_stopper(exp, as_test),
        checkpoint_config=tune.CheckpointConfig(**ckpt) if ckpt else None,
        callbacks=[_make_tune_callback(exp)],
        verbose=0,
    )
    tuner = tune.Tuner(
        algo_cls,
        param_space=param_space(exp),
        run_config=run_config,
        tune_config=tune.TuneConfig(num_samples=exp.num_samples),
    )
    t0 = time.time()
    grid = tuner.fit()
    wall = time.time() - t0
    gkey = gap_key(exp)
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
        trials.append(
            {
                "trial": os.path.basename(res.path) if res.path else "?",
                "path": res.path,
                "error": repr(res.error).splitlines()[0] if res.error else None,
                "iterations": int(last.get("training_iteration", 0) or 0),
                "env_steps": int(steps),
                "return": _num(last.get(RETURN_KEY)),
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
    if exp.selection is not None:
        summary["selection"] = select_trial(exp, trials)
        out = storage / exp.name / "selection.json"
        out.write_text(json.dumps(summary["selection"], indent=2, default=str) + "\n")
    for t in trials:
        del t["history"]
    return summary


def _grid_params(exp: Experiment, config: dict) -> dict[str, Any]:
    """The grid values a trial ran with, under the YAML's key names."""
    out = {}
    for key in exp.grid:
        attr = CONFIG_TRANSLATIONS.get(key, key)
        for name in (key, attr, f"_{attr}"):  # properties are stored as _<name>
            if name in config:
                out[key] = config[name]
                break
        else:
            out[key] = None
    return out


def select_trial(exp: Experiment, trials: list[dict]) -> dict:
    """Alg. 2 of the SELLF paper over the trials (see :mod:`rllib_fair.cli.sweep`)."""
    from rllib_fair.cli.sweep import select, trailing_mean

    sel = exp.selection
    scores = [
        {
            "trial": t["trial"],
            "params": t["params"],
            "disparity": trailing_mean(t["history"], sel.disparity, sel.last_iterations),
            "reward": trailing_mean(t["history"], sel.reward, sel.last_iterations),
        }
        for t in trials
    ]
    chosen = select(scores, sel.omega)
    return {
        "rule": "SELLF Alg. 2: highest reward among the minimal max(|Delta| - omega, 0)",
        "disparity_key": sel.disparity,
        "reward_key": sel.reward,
        "omega": sel.omega,
        "last_iterations": sel.last_iterations,
        "scores": scores,
        "selected": None if chosen is None else scores[chosen],
    }


def print_table(exp: Experiment, summary: dict, *, file=None) -> None:
    """Prints the final results table of one experiment (to ``sys.stdout`` by default)."""
    file = sys.stdout if file is None else file
    notion = exp.config.resolved_fairness_notion()
    head = (
        f"{'trial':<40} {'iters':>5} {'env steps':>10} {'return':>11} "
        f"{'gap (' + notion + ')':>28} {'steps/s':>8}"
    )
    print(f"\n== {exp.name}: {exp.run} on {exp.env} ({summary['wall_s']:.0f} s) ==", file=file)
    print(head, file=file)
    print("-" * len(head), file=file)
    for t in summary["trials"]:
        print(
            f"{t['trial'][:40]:<40} {t['iterations']:>5} {t['env_steps']:>10} "
            f"{_fmt(t['return'], '11.3f'):>11} {_fmt(t['gap'], '.4f'):>28} "
            f"{_fmt(t['steps_per_s'], '.0f'):>8}",
            file=file,
        )
        if t["error"]:
            print(f"  error: {t['error']}", file=file)
    for t in summary["trials"]:
        if t.get("params"):
            params = ", ".join(f"{k}={v}" for k, v in t["params"].items())
            print(f"  {t['trial'][:40]}: {params}", file=file)
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
            print(
                f"selected (Alg. 2, omega {sel['omega']:g}, {sel['disparity_key']} "
                f"{chosen['disparity']:.4f}, {sel['reward_key']} {chosen['reward']:.3f}, "
                f"mean of last {sel['last_iterations']}): {chosen['trial']} {params}",
                file=file,
            )
        print(f"selection: {summary['storage']}/{exp.name}/selection.json", file=file)
    print(f"results: {summary['storage']}/{exp.name}", file=file)


def check_pass(exp: Experiment, summary: dict) -> tuple[bool, str]:
    """Checks --as-test: every trial must meet all criteria on one iteration."""
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
