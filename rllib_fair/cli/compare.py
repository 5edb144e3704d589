"""``rllib-fair compare RESULTS...``: side-by-side table and plots of finished runs.

Reads what Tune wrote (each trial folder's ``params.json`` and ``result.json``); nothing
is retrained. The trials are found and grouped into configurations by
:mod:`rllib_fair.cli.trials` (the spread is over seeds), summarised into rows by
:mod:`rllib_fair.cli.tables` and drawn by :mod:`rllib_fair.cli.plots` (the reward-vs-gap
frontier per environment and the gap and return curves over training). A reproduction
script's per-run CSV file is summarised the same way (:func:`compare_run_tables`).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from rllib_fair.cli.plots import plot, plot_pareto, plot_run_table
from rllib_fair.cli.results import finite_number
from rllib_fair.cli.tables import (
    describe_columns,
    format_pareto,
    format_table,
    iterations,
    pareto_front,
    pm,
    summarize,
)
from rllib_fair.cli.trials import CompareError, Trial, find_trials, group, mean_std


def write_pareto(folder: str | Path, last: int = 1, plots: bool = True) -> dict:
    """The reward-gap Pareto front of one experiment folder, written into it.

    Configurations are the trials grouped by their settings apart from the seed
    (:func:`group`); each is placed at its mean return and mean gap over seeds (the
    final value of a trial is the mean of its last ``last`` iterations). Writes
    ``pareto.md``, ``pareto.json`` and (with ``plots``) ``pareto.png``: every trial as a
    small dot, each configuration's mean +- std, the front highlighted and joined.

    Returns:
        ``{"rows", "front", "table", "files"}``.
    """
    folder = Path(folder).expanduser().resolve()
    configs = group(find_trials([str(folder)]))
    rows = summarize(configs, last=last)
    front = pareto_front(rows)
    table = format_pareto(rows, front)
    (folder / "pareto.md").write_text(table + "\n")
    payload = [
        {**r, "pareto": on, "trial_names": [t.path.name for t in c.trials]}
        for r, on, c in zip(rows, front, configs, strict=True)
    ]
    (folder / "pareto.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
    files = [folder / "pareto.md", folder / "pareto.json"]
    if plots:
        files.append(plot_pareto(configs, rows, front, folder / "pareto.png", last))
    return {"rows": rows, "front": front, "table": table, "files": [str(f) for f in files]}


#: The columns read as the return and the gap of a row, in order of preference (those of
#: the CSVs the former Fig. 4 and SELLF table scripts wrote).
RETURN_COLUMNS = ("reward_per_step", "episode_return", "reward_mean", "return")
GAP_COLUMNS = ("bias", "disparity_mean", "gap")


def _cell(v: str) -> float | str | None:
    if v is None or v == "":
        return None  # an empty cell: a metric a run did not report
    try:
        return float(v)
    except ValueError:
        return v


def compare_run_tables(paths: list[str], out: Path, plots: bool = True) -> dict:
    """Side-by-side summary of per-run CSV files (one row per run and seed).

    Rows with equal non-numeric columns form a configuration; every numeric column
    except ``seed`` is summarised as mean +- std over the configuration's rows.
    """
    rows: list[dict] = []
    for given in paths:
        with Path(given).open(newline="") as f:
            rows += [{k: _cell(v) for k, v in r.items()} for r in csv.DictReader(f)]
    if not rows:
        raise CompareError(f"RESULTS: no rows in {', '.join(paths)}")
    columns = [k for k in rows[0] if k != "seed"]
    keys = [k for k in columns if any(isinstance(r.get(k), str) for r in rows)]
    metrics = [k for k in columns if k not in keys]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    ret = next((c for c in RETURN_COLUMNS if c in metrics), None)
    gap = next((c for c in GAP_COLUMNS if c in metrics), None)
    shown = [c for c in (ret, gap, "train_seconds") if c in metrics]
    head = [*keys, "runs", *shown]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    summary = []
    for key, members in groups.items():
        stats = {m: mean_std([finite_number(r.get(m)) for r in members]) for m in metrics}
        summary.append({"key": dict(zip(keys, key, strict=True)), "runs": len(members), **stats})
        cells = [str(v) for v in key] + [str(len(members))]
        cells += [pm(stats[c], ".4f" if c != "train_seconds" else ".0f") for c in shown]
        lines.append("| " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.md").write_text(table + "\n")
    (out / "compare.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    with (out / "compare.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*keys, "metric", "mean", "std", "n"])
        for s in summary:
            for m in metrics:
                w.writerow([*s["key"].values(), m, *s[m]])
    files = [str(out / name) for name in ("compare.md", "compare.csv", "compare.json")]
    figures = plot_run_table(summary, keys, ret, gap, out) if plots and ret and gap else []

    return {"rows": summary, "table": table, "out": str(out), "files": files, "figures": figures}


def _pareto_note(trials: list[Trial], last: int) -> list[str]:
    """Lines naming sweep folders whose ``pareto.md`` averages other iterations than ``last``."""
    out = []
    for folder in sorted({t.path.parent for t in trials}):
        sel = folder / "selection.json"
        if not (folder / "pareto.md").exists() or not sel.exists():
            continue
        try:
            theirs = int(json.loads(sel.read_text()).get("last_iterations", 1))
        except (ValueError, TypeError, AttributeError):
            continue
        if theirs != last:
            out.append(
                f"note: {folder / 'pareto.md'} and the sweep's selection use each trial's "
                f"{iterations(theirs)}, this table the {iterations(last)}: pass --last "
                f"{theirs} for the same numbers"
            )
    return out


def compare(paths: list[str], out: str | Path, last: int = 1, plots: bool = True) -> dict:
    """Finds, groups and summarises the trials; writes table, CSV, JSON and plots to ``out``.

    ``paths`` are Tune experiment folders (or folders holding them), or per-run CSV
    files such as the reproduction scripts write (:func:`compare_run_tables`).

    Returns:
        ``{"rows", "table", "legend", "notes", "out", "files", "figures"}``; ``files``
        are the table files written (Markdown with the legend, CSV, JSON).
    """
    csvs = [p for p in paths if str(p).endswith(".csv")]
    if csvs:
        if len(csvs) != len(paths):
            raise CompareError("RESULTS: give either experiment folders or CSV files, not both")
        missing = [p for p in csvs if not Path(p).is_file()]
        if missing:
            raise CompareError(f"RESULTS: {missing[0]!r} is not a file")
        result = compare_run_tables(csvs, Path(out).expanduser().resolve(), plots=plots)
        return {"legend": "", "notes": [], **result}
    trials = find_trials(paths)
    configs = group(trials)
    rows = summarize(configs, last=last)
    for row, on in zip(rows, pareto_front(rows), strict=True):
        row["pareto"] = on  # on the env's reward-gap front (mean over seeds)
    out = Path(out).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    table = format_table(rows)
    legend = describe_columns(rows)
    notes = _pareto_note(trials, last)
    (out / "compare.md").write_text("\n\n".join([table, legend, *notes]) + "\n")
    (out / "compare.json").write_text(json.dumps(rows, indent=2, default=str) + "\n")
    with (out / "compare.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["configuration", "algo", "env", "metric", "key", "mean", "std", "n"])
        for r in rows:
            items = [("return", r["return_key"], r["return"])]
            if r["objective"]:
                items.append(
                    (
                        f"objective/{r['objective']['name']}",
                        r["objective"]["key"],
                        r["objective"]["value"],
                    )
                )
            items += [("steps_per_s", "", r["steps_per_s"])]
            items += [(f"gap/{n}", f"fairness/{n}/bias", ms) for n, ms in r["gap"].items()]
            items += [(f"target/{k}", k, ms) for k, ms in r["targets"].items()]
            items += [
                (f"rate/{r['notion']}/{g}", f"fairness/{r['notion']}/rate/{g}", ms)
                for g, ms in r["rates"].items()
            ]
            for name, key, (mean, std, n) in items:
                w.writerow([r["configuration"], r["algo"], r["env"], name, key, mean, std, n])
    files = [str(out / name) for name in ("compare.md", "compare.csv", "compare.json")]
    figures = plot(configs, rows, out) if plots else []
    return {
        "rows": rows,
        "table": table,
        "legend": legend,
        "notes": notes,
        "out": str(out),
        "files": files,
        "figures": [str(p) for p in figures],
    }
