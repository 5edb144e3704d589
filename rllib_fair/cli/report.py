"""What the runner prints when an experiment ends: its table, the side-by-side view, the verdict.

:func:`print_table`: one row per trial (the env's return, the algorithm's own objective
where it trains on another reward, the main notion's gap, each own fairness target), a
legend naming every column's key and meaning, the swept values, the selection and the
Pareto front of a sweep. :func:`check_pass`: the ``--as-test`` verdict (every criterion
held on one and the same iteration of every trial).
"""

from __future__ import annotations

import sys

from rllib_fair.cli.experiment import Experiment
from rllib_fair.cli.results import fmt
from rllib_fair.cli.summary import gap_key, own_metrics


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
            values.append(fmt(v, spec))
        print(
            f"{t['trial']:<{tw}} {t['iterations']:>5} {t['env_steps']:>10} "
            + " ".join(f"{v:>{w}}" for v, w in zip(values, widths, strict=True))
            + f" {fmt(t['steps_per_s'], '.0f'):>8}",
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
            rates = ", ".join(f"{g} {fmt(v, '.4f')}" for g, v in t["rates"].items())
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
                    f", mean over seeds {chosen['seeds']} (std {fmt(chosen['disparity_std'])}"
                    f", {fmt(chosen['reward_std'], '.3f')})"
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
            rates = ", ".join(f"{g} {fmt(v, '.3f')}" for g, v in (t.get("rates") or {}).items())
            print(
                f"{exp.name[:28]:<28} {exp.run:<9} {exp.env[:24]:<24} "
                f"{fmt(t['return'], '11.3f'):>11} {fmt(t['gap'], '.4f'):>8}  "
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
                f"{c.metric} best {fmt(t['best'].get(c.metric))} (needs {c.describe()})"
                for c in exp.pass_criteria
            )
            failures.append(f"trial {t['trial']} never met all criteria on one iteration: {best}")
    if failures:
        return False, f"{exp.name}: FAILED: " + "; ".join(failures)
    its = ", ".join(str(t["passed_at"]) for t in summary["trials"])
    crit = " AND ".join(f"{c.metric} {c.describe()}" for c in exp.pass_criteria)
    return True, f"{exp.name}: PASSED ({crit}) at iteration(s) {its}"
