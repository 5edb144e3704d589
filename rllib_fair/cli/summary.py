"""What a finished Tune run amounts to: one summary per trial and the sweep's selection.

A trial's summary holds its last iteration's return, gap and own targets, the first
iteration where every pass criterion held together, its error as one line (Ray's
wrapping removed, non-finite losses and runs that sampled nothing named), its env
runners' faults and the swept values it ran with. :func:`select_trial` applies the
experiment's ``selection`` rule over configurations (see :mod:`rllib_fair.cli.sweep`).
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from rllib_fair.cli.config_build import CONFIG_TRANSLATIONS
from rllib_fair.cli.criteria import Criterion, plain
from rllib_fair.cli.experiment import Experiment
from rllib_fair.cli.results import RETURN_KEY, STEPS_KEY, read_results
from rllib_fair.cli.results import finite_number as _num


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


def runner_faults(exp: Experiment, flat: dict) -> dict:
    """The env runners' health in a (flattened) result: healthy, restarts, failures..."""
    from rllib_fair.rllib.health import fault_summary

    cfg = exp.config
    return fault_summary(flat, int(cfg.num_env_runners or 0), int(cfg.num_envs_per_env_runner or 1))


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


def summarize_trial(exp: Experiment, res) -> dict:
    """The summary of one trial of Tune's results (``res``: a ``ray.tune.Result``).

    It keeps the trial's ``history`` (its result rows), which the caller drops once the
    experiment-wide checks (:func:`stopped_early`, :func:`short_of_budget`, the
    selection) have read it.
    """
    from rllib_fair.cli.errors import explain_trial_error

    gkey = gap_key(exp)
    own = own_metrics(exp)
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
    faults = runner_faults(exp, last)
    error = explain_trial_error(res.error, checkpoint=_checkpoint_path(res)) if res.error else None
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
    return {
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
        "params": grid_params(exp, res.config or {}),
        "history": history,
    }


def error_line(error: BaseException) -> str:
    """The last meaningful line of a trial's error (the exception, not Ray's wrapping)."""
    lines = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
    text = lines[-1] if lines else type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _checkpoint_path(res) -> str | None:
    ckpt = getattr(res, "checkpoint", None)
    return getattr(ckpt, "path", None) if ckpt is not None else None


def stopped_early(exp: Experiment, trial: dict, as_test: bool) -> bool:
    """True for a trial a scheduler stopped before its budget (not an error)."""
    if exp.tune is None or exp.tune.scheduler is None or trial["error"] or not trial["history"]:
        return False
    last = trial["history"][-1]
    if as_test and trial["passed_at"] is not None:
        return False
    return not any((_num(last.get(k)) or 0.0) >= v for k, v in exp.stop.items())


def short_of_budget(exp: Experiment, trial: dict, as_test: bool) -> str | None:
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
    budget = ", ".join(f"{k} {plain(v)}" for k, v in exp.stop.items())
    return (
        f"ended at iteration {int(last.get('training_iteration') or 0)} before its budget "
        f"({budget}) without an error; run again with --resume to continue it"
    )


def grid_params(exp: Experiment, config: dict) -> dict[str, Any]:
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

    from rllib_fair.cli.sweep import constant_disparity_note, trailing_mean
    from rllib_fair.fairness.selection import RULES, select_by_rule

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
