"""``rllib-fair compare RESULTS...``: side-by-side table and plots of finished runs.

Reads what Tune wrote (each trial folder's ``params.json`` and ``result.json``); nothing
is retrained. Trials are grouped into configurations: the same experiment and the same
settings except the seed (runs started separately, e.g. with ``--seed 1`` and ``--seed
2``, pool too), so the spread is over seeds; a row is labelled by the settings that
differ between configurations. For every configuration: the env's return, the
algorithm's own objective when it trains on another reward (R-TD3's relaxed return),
the gap of every reported notion, every algorithm's own fairness target (declared by
its config class, :mod:`rllib_fair.rllib.targets`), the per-group long-term rates of the
main notion and the training speed, each as mean and standard deviation over its trials
("final" = mean of the last ``last`` iterations of a trial, each trial counted once).
Plots (matplotlib, part of the install): the reward-vs-gap frontier per environment
(mean +- std per configuration, the Pareto-optimal ones joined) and the gap and return
curves over training (mean over seeds).
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

RETURN_KEY = "env_runners/episode_return_mean"
STEPS_KEY = "num_env_steps_sampled_lifetime"


class CompareError(ValueError):
    """Nothing to compare at a path; the message is one line."""


@dataclass
class Trial:
    """One finished (or stopped) trial as Tune recorded it."""

    path: Path
    experiment: str
    algo: str
    env: str
    notion: str
    seed: Any
    params: dict
    rows: list[dict]
    own: Any = None  # the algorithm's resolved OwnMetrics (rllib_fair.rllib.targets)


@dataclass
class Configuration:
    """Trials of one experiment that differ only in their seed."""

    experiment: str
    algo: str
    env: str
    notion: str
    label: str
    trials: list[Trial] = field(default_factory=list)


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


def finite_number(v: Any) -> float | None:
    """``float(v)`` if that is a finite number, else None."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def read_results(folder: str | Path | None) -> list[dict]:
    """A trial's results as Tune wrote them to ``result.json``, flattened (NaN kept)."""
    path = Path(folder) / "result.json" if folder else None
    if path is None or not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(flatten(json.loads(line)))
        except ValueError:
            continue
    return rows


def _algo_name(trainable: str) -> str:
    """Registry name of a Tune trainable name (``FairPPO`` -> ``PPO``)."""
    from rllib_fair.algorithms import ALGORITHMS

    for name, spec in ALGORITHMS.items():
        if spec.algo_class == trainable:
            return name
    return trainable


def find_trials(paths: list[str]) -> list[Trial]:
    """Every trial folder (``params.json`` + ``result.json``) at or under the paths.

    Raises:
        CompareError: a path does not exist or holds no trial.
    """
    from rllib_fair.envs import ENV_IDS, env_info

    trials = []
    for given in paths:
        root = Path(given).expanduser().resolve()
        if not root.is_dir():
            raise CompareError(f"RESULTS: {given!r} is not a folder")
        found = [
            p.parent for p in root.glob("**/result.json") if (p.parent / "params.json").exists()
        ]
        if not found:
            raise CompareError(
                f"RESULTS: no finished trial (params.json + result.json) in or under {given!r}"
            )
        for folder in sorted(found):
            params = json.loads((folder / "params.json").read_text())
            rows = read_results(folder)
            if not rows:
                continue
            env = str(params.get("env"))
            notion = params.get("fairness_notion")
            if notion is None:
                notion = env_info(env)["default_notion"] if env in ENV_IDS else None
            if notion is None:  # the first notion the results report
                keys = [k for k in rows[-1] if k.startswith("fairness/") and k.endswith("/bias")]
                notion = keys[0].split("/")[1] if keys else "?"
            algo = _algo_name(folder.name.split("_", 1)[0])
            trials.append(
                Trial(
                    path=folder,
                    experiment=folder.parent.name,
                    algo=algo,
                    env=env,
                    notion=notion,
                    seed=params.get("seed"),
                    params=params,
                    rows=rows,
                    own=_own_metrics(algo, params, notion),
                )
            )
    return trials


def _own_metrics(algo: str, params: dict, notion: str):
    """The algorithm's declared objective and targets, resolved for this trial."""
    from rllib_fair.algorithms import get_config_class
    from rllib_fair.rllib.targets import OwnMetrics

    try:
        declared = getattr(get_config_class(algo), "own_metrics", OwnMetrics())
    except ValueError:  # not a registered algorithm: the env's reward, no own target
        declared = OwnMetrics(note="not a registered rllib-fair algorithm")
    return declared.resolve(params, notion)


#: The memory address in a Python object's repr (``<function f at 0x7f...>``): differs
#: between two runs of the same settings.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _leaves(params: dict, prefix: str = "") -> dict[str, Any]:
    """Nested settings as ``{"a.b": value}`` (lists and scalars are leaves)."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_leaves(v, key + "."))
        else:
            out[key] = v
    return out


def _canonical(value: Any) -> str:
    """A setting as text that is equal for equal settings of two separate runs."""
    return _ADDRESS.sub("", json.dumps(value, sort_keys=True, default=str))


def group(trials: list[Trial]) -> list[Configuration]:
    """Trials of the same experiment with equal settings apart from the seed.

    Settings are compared leaf by leaf (``env_config.max_steps``), and object reprs
    without their memory address, so separately started runs of one file pool. Each
    configuration is labelled by its experiment and the leaves that differ.
    """
    by_exp: dict[str, list[Trial]] = {}
    for t in trials:
        by_exp.setdefault(f"{t.experiment}|{t.algo}|{t.env}", []).append(t)
    configs = []
    for members in by_exp.values():
        leaves = [_leaves(t.params) for t in members]
        keys = sorted({k for lv in leaves for k in lv})
        varying = [
            k for k in keys if k != "seed" and len({_canonical(lv.get(k)) for lv in leaves}) > 1
        ]
        buckets: dict[str, Configuration] = {}
        for t, lv in zip(members, leaves, strict=True):
            key = json.dumps([_canonical(lv.get(k)) for k in varying])
            cfg = buckets.setdefault(key, Configuration(t.experiment, t.algo, t.env, t.notion, ""))
            cfg.trials.append(t)
        # sampled floats are shown with 4 significant digits unless that merges two labels
        for short in (True, False):
            for cfg in buckets.values():
                lv = _leaves(cfg.trials[0].params)
                parts = [f"{k}={_label_value(lv.get(k), short)}" for k in varying]
                cfg.label = cfg.experiment + (f" [{', '.join(parts)}]" if parts else "")
            if len({cfg.label for cfg in buckets.values()}) == len(buckets):
                break
        configs.extend(buckets.values())
    return configs


def _label_value(value: Any, short: bool) -> str:
    if short and isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, str):
        return _ADDRESS.sub("", value)
    return json.dumps(value, default=str) if isinstance(value, (list, dict)) else str(value)


def _final(t: Trial, key: str, last: int) -> float | None:
    values = [v for v in (finite_number(r.get(key)) for r in t.rows[-last:]) if v is not None]
    return float(np.mean(values)) if values else None


def _mean_std(values: list[float | None]) -> tuple[float | None, float | None, int]:
    vals = [v for v in values if v is not None]
    if not vals:
        return None, None, 0
    return float(np.mean(vals)), float(np.std(vals)), len(vals)


def _metric_info(metric) -> dict:
    return {
        "key": metric.key,
        "name": metric.name,
        "meaning": metric.meaning,
        "lower_is_better": metric.lower_is_better,
    }


def summarize(configs: list[Configuration], last: int = 1) -> list[dict]:
    """One row per configuration: mean and std over its trials of the final metrics.

    ``return`` is the env's own reward (the key the algorithm declares as its
    ``env_reward``); ``objective`` the algorithm's own return when that differs (else
    None); ``own`` its declared targets; ``targets`` the value of every target any
    configuration declares (so a baseline shows the fair method's target too).
    """
    from rllib_fair.rllib.targets import OwnMetrics

    target_keys: dict[str, None] = {}
    for c in configs:
        for m in (c.trials[0].own or OwnMetrics()).constraints:
            target_keys.setdefault(m.key)
    out = []
    for c in configs:
        own = c.trials[0].own or OwnMetrics()
        row: dict[str, Any] = {
            "configuration": c.label,
            "algo": c.algo,
            "env": c.env,
            "notion": c.notion,
            "trials": len(c.trials),
            "seeds": sorted({str(t.seed) for t in c.trials}),
            "iterations": int(np.mean([t.rows[-1].get("training_iteration", 0) for t in c.trials])),
            "env_steps": int(
                np.mean([finite_number(t.rows[-1].get(STEPS_KEY)) or 0 for t in c.trials])
            ),
            "last": last,
        }
        row["return"] = _mean_std([_final(t, own.env_reward.key, last) for t in c.trials])
        row["return_key"] = own.env_reward.key
        row["objective"] = None
        if own.shaped:
            row["objective"] = {
                **_metric_info(own.objective),
                "value": _mean_std([_final(t, own.objective.key, last) for t in c.trials]),
            }
        row["own"] = {
            "note": own.note,
            "constraints": [_metric_info(m) for m in own.constraints],
        }
        row["targets"] = {k: _mean_std([_final(t, k, last) for t in c.trials]) for k in target_keys}
        notions = sorted(
            {
                k.split("/")[1]
                for t in c.trials
                for k in t.rows[-1]
                if k.startswith("fairness/") and k.endswith("/bias") and k.count("/") == 2
            }
        )
        row["gap"] = {
            n: _mean_std([_final(t, f"fairness/{n}/bias", last) for t in c.trials]) for n in notions
        }
        prefix = f"fairness/{c.notion}/rate/"
        groups = sorted(
            {k[len(prefix) :] for t in c.trials for k in t.rows[-1] if k.startswith(prefix)}
        )
        row["rates"] = {
            g: _mean_std([_final(t, prefix + g, last) for t in c.trials]) for g in groups
        }
        speeds = []
        for t in c.trials:
            steps = finite_number(t.rows[-1].get(STEPS_KEY))
            secs = finite_number(t.rows[-1].get("time_total_s"))
            speeds.append(steps / secs if steps and secs else None)
        row["steps_per_s"] = _mean_std(speeds)
        out.append(row)
    return out


def _pm(ms: tuple, spec: str = ".4f") -> str:
    mean, std, n = ms
    if mean is None:
        return "-"
    return f"{mean:{spec}}" + (f" +- {std:{spec}}" if n > 1 else "")


def _iterations(last: int) -> str:
    return "last iteration" if last == 1 else f"mean of last {last} iterations"


def _iters(last: int) -> str:
    return "last iter" if last == 1 else f"last {last} iters"


def _target_columns(rows: list[dict]) -> list[dict]:
    """Every declared target that is not already a gap column, once, in row order."""
    gap_keys = {f"fairness/{n}/bias" for r in rows for n in r["gap"]}
    seen: dict[str, dict] = {}
    for r in rows:
        for m in r["own"]["constraints"]:
            if m["key"] not in gap_keys:
                seen.setdefault(m["key"], m)
    return list(seen.values())


def _own_mark(row: dict, key: str) -> str:
    return " (own)" if any(m["key"] == key for m in row["own"]["constraints"]) else ""


def format_table(rows: list[dict]) -> str:
    """Markdown table: one line per configuration (``*``: on its env's Pareto front).

    Columns: the env's return; the algorithm's own objective where it trains on another
    reward; the gap of every notion; every declared own target (``(own)`` marks a
    configuration's own one, in a gap column too); the main notion's per-group rates.
    """
    last = rows[0]["last"] if rows else 1
    notions = sorted({n for r in rows for n in r["gap"]})
    targets = _target_columns(rows)
    shaped = any(r["objective"] for r in rows)
    head = ["configuration", "algo", "env", "seeds", "env steps", f"return ({_iters(last)})"]
    head += ["objective"] if shaped else []
    head += [f"gap {n}" for n in notions] + [t["name"] for t in targets]
    head += ["own target", "rates (main notion)", "steps/s", "Pareto"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        rates = ", ".join(f"{g} {_pm(ms, '.3f')}" for g, ms in r["rates"].items()) or "-"
        cells = [
            r["configuration"],
            r["algo"],
            r["env"],
            str(r["trials"]),
            str(r["env_steps"]),
            _pm(r["return"], ".3f"),
        ]
        if shaped:
            obj = r["objective"]
            cells.append(f"{obj['name']} {_pm(obj['value'], '.3f')}" if obj else "= return")
        cells += [
            _pm(r["gap"].get(n, (None, None, 0))) + _own_mark(r, f"fairness/{n}/bias")
            for n in notions
        ]
        cells += [
            _pm(r["targets"].get(t["key"], (None, None, 0))) + _own_mark(r, t["key"])
            for t in targets
        ]
        own = ", ".join(m["name"] for m in r["own"]["constraints"]) or "none"
        cells += [own, f"{r['notion']}: {rates}", _pm(r["steps_per_s"], ".0f")]
        cells.append("*" if r.get("pareto") else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def describe_columns(rows: list[dict]) -> str:
    """What each column of :func:`format_table` holds: keys, meanings, iterations."""
    from rllib_fair.rllib.targets import gap_meaning

    if not rows:
        return ""
    last = rows[0]["last"]
    out = [
        f"Each trial's value is the {_iterations(last)} of its results (--last); cells are "
        "mean +- std over a configuration's seeds.",
    ]
    by_key: dict[str, list[str]] = {}
    for r in rows:
        by_key.setdefault(r["return_key"], []).append(r["algo"])
    if list(by_key) == ["env_runners/episode_return_mean"]:
        out.append(
            "- return: the env's reward summed over an episode (env_runners/episode_return_mean)"
        )
    else:
        keys = "; ".join(f"{', '.join(sorted(set(a)))}: {k}" for k, a in by_key.items())
        out.append(f"- return: the env's own reward summed over an episode ({keys})")
    objectives: dict[str, dict] = {}
    for r in rows:
        if r["objective"]:
            objectives.setdefault(r["algo"], r["objective"])
    for algo, obj in objectives.items():
        out.append(f"- objective of {algo}: {obj['name']}, {obj['meaning']} ({obj['key']})")
    for n in sorted({n for r in rows for n in r["gap"]}):
        out.append(f"- gap {n}: {gap_meaning(n)} (fairness/{n}/bias)")
    owners: dict[str, set] = {}
    for r in rows:
        for m in r["own"]["constraints"]:
            owners.setdefault(m["key"], set()).add(r["algo"])
    for t in _target_columns(rows):
        out.append(
            f"- {t['name']}: {t['meaning']} ({t['key']}; own target of "
            f"{', '.join(sorted(owners[t['key']]))})"
        )
    notes: dict[str, str] = {}
    for r in rows:
        notes.setdefault(r["algo"], r["own"]["note"])
    out.append(
        "- own target: what each algorithm itself regularises, marked (own) in its column; "
        + "; ".join(f"{a}: {n}" for a, n in notes.items() if n)
    )
    return "\n".join(out)


def pareto(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats (higher return AND lower gap)."""
    keep = []
    for i, (ret, gap) in enumerate(points):
        dominated = any(
            (r2 >= ret and g2 <= gap) and (r2 > ret or g2 < gap)
            for j, (r2, g2) in enumerate(points)
            if j != i
        )
        if not dominated:
            keep.append(i)
    return keep


def _point(row: dict) -> tuple[float, float] | None:
    """``(mean return, mean gap of the main notion)`` of a summary row, or None."""
    ret = row["return"][0]
    gap = row["gap"].get(row["notion"], (None, None, 0))[0]
    return None if ret is None or gap is None else (ret, gap)


def pareto_front(rows: list[dict]) -> list[bool]:
    """Which summary rows are Pareto-optimal in (mean return up, mean gap down).

    Rows of different environments are compared only with each other; a row missing
    its return or gap is never on the front. Equal points are all kept.
    """
    on = [False] * len(rows)
    for env in {r["env"] for r in rows}:
        idx = [i for i, r in enumerate(rows) if r["env"] == env and _point(r) is not None]
        for k in pareto([_point(rows[i]) for i in idx]):
            on[idx[k]] = True
    return on


def format_pareto(rows: list[dict], front: list[bool]) -> str:
    """Markdown table of the configurations, front first (by gap), then the rest."""
    notions = sorted({r["notion"] for r in rows})
    gap_head = f"gap ({notions[0]})" if len(notions) == 1 else "gap (main notion)"
    iters = _iters(rows[0]["last"]) if rows else _iters(1)
    head = ["front", "configuration", "seeds", f"return ({iters}; mean +- std)", gap_head]
    head += ["iterations"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def order(i: int) -> tuple:
        pt = _point(rows[i])
        return (not front[i], pt is None, pt[1] if pt else 0.0, -(pt[0]) if pt else 0.0)

    for i in sorted(range(len(rows)), key=order):
        r = rows[i]
        cells = [
            "*" if front[i] else "",
            r["configuration"],
            f"{r['trials']} ({', '.join(r['seeds'])})",
            _pm(r["return"], ".3f"),
            _pm(r["gap"].get(r["notion"], (None, None, 0))),
            str(r["iterations"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
        files.append(_plot_pareto(configs, rows, front, folder / "pareto.png", last))
    return {"rows": rows, "front": front, "table": table, "files": [str(f) for f in files]}


#: Marker shapes of the configurations in the frontier plots, in turn.
_MARKERS = "osD^vPXh<>p*"


def _config_point(ax, i: int, x, y, xerr, yerr, **kwargs) -> None:
    """One configuration's mean +- std as a hollow marker.

    Shapes change and sizes grow with ``i``, so configurations at the same point (and a
    trial's dot under its configuration) all stay visible.
    """
    ax.errorbar(
        x,
        y,
        xerr=xerr,
        yerr=yerr,
        fmt=_MARKERS[i % len(_MARKERS)],
        markersize=5 + 2 * (i % 5),
        markerfacecolor="none",
        markeredgewidth=1.5,
        capsize=3,
        **kwargs,
    )


def _finish(fig, ax, env: str, what: str, path: Path, legend: bool = True) -> None:
    """Two-line title (env, then what is plotted), legend beside the axes, saved uncut."""
    ax.set_title(f"{env}\n{what}", fontsize=10)
    if legend:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    fig.savefig(path, dpi=100, bbox_inches="tight")


def _plot_pareto(
    configs: list[Configuration], rows: list[dict], front: list[bool], path: Path, last: int
) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    for c in configs:  # every trial
        xs = [_final(t, f"fairness/{c.notion}/bias", last) for t in c.trials]
        ys = [_final(t, t.own.env_reward.key if t.own else RETURN_KEY, last) for t in c.trials]
        pts = [(x, y) for x, y in zip(xs, ys, strict=True) if x is not None and y is not None]
        if pts:
            ax.scatter(*zip(*pts, strict=True), s=10, color="0.6", zorder=1)
    ax.scatter([], [], s=10, color="0.6", label="trials (one seed each)")
    done = {"front": False, "other": False}
    for i, (r, on) in enumerate(zip(rows, front, strict=True)):
        pt = _point(r)
        if pt is None:
            continue
        kind = "front" if on else "other"
        _config_point(
            ax,
            i,
            pt[1],
            pt[0],
            r["gap"][r["notion"]][1],
            r["return"][1],
            color="tab:red" if on else "tab:blue",
            zorder=3 if on else 2,
            label=None if done[kind] else ("Pareto front" if on else "other configurations"),
        )
        done[kind] = True
    line = sorted((_point(r) for r, on in zip(rows, front, strict=True) if on), key=lambda p: p[1])
    if len(line) > 1:
        ax.plot([p[1] for p in line], [p[0] for p in line], "--", color="tab:red", lw=1)
    notion = rows[0]["notion"] if rows else "?"
    ax.set_xlabel(f"gap ({notion}), lower is fairer")
    ax.set_ylabel(f"episode return ({_iters(last)})")
    env = rows[0]["env"] if rows else "?"
    _finish(fig, ax, env, "reward vs gap per configuration (mean +- std over seeds)", path)
    plt.close(fig)
    return path


def plot(configs: list[Configuration], rows: list[dict], out: Path) -> list[Path]:
    """Writes ``frontier_<env>.png`` and ``curves_<env>.png``; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    envs = sorted({r["env"] for r in rows})
    for env in envs:
        sel = [(c, r) for c, r in zip(configs, rows, strict=True) if r["env"] == env]
        safe = env.replace("/", "_")
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        pts, labels = [], []
        for i, (c, r) in enumerate(sel):
            gap = r["gap"].get(c.notion, (None, None, 0))
            ret = r["return"]
            if gap[0] is None or ret[0] is None:
                continue
            _config_point(ax, i, gap[0], ret[0], gap[1], ret[1], label=c.label)
            pts.append((ret[0], gap[0]))
            labels.append(c.label)
        front = sorted((pts[i] for i in pareto(pts)), key=lambda p: p[1])
        if len(front) > 1:
            ax.plot([p[1] for p in front], [p[0] for p in front], "k--", lw=1, label="Pareto front")
        notion = sel[0][0].notion if sel else "?"
        ax.set_xlabel(f"gap ({notion}), lower is fairer")
        ax.set_ylabel(f"episode return ({_iters(sel[0][1]['last'])})")
        path = out / f"frontier_{safe}.png"
        _finish(
            fig, ax, env, "reward vs fairness gap (mean +- std over seeds)", path, legend=bool(pts)
        )
        plt.close(fig)
        written.append(path)

        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for c, r in sel:
            for ax, key, name in (
                (axes[0], f"fairness/{c.notion}/bias", f"gap ({c.notion})"),
                (axes[1], r["return_key"], "episode return"),
            ):
                curves = []
                for t in c.trials:
                    xs = [finite_number(row.get(STEPS_KEY)) or 0.0 for row in t.rows]
                    ys = [finite_number(row.get(key)) for row in t.rows]
                    curves.append((xs, ys))
                n = min(len(xs) for xs, _ in curves)
                x = np.array(curves[0][0][:n])
                ys = np.array([[np.nan if v is None else v for v in ys[:n]] for _, ys in curves])
                if np.all(np.isnan(ys)):
                    continue
                with np.errstate(all="ignore"):
                    ax.plot(x, np.nanmean(ys, axis=0), label=c.label)
                ax.set_xlabel("env steps")
                ax.set_ylabel(name)
        axes[0].set_title(f"{env}: gap over training", fontsize=10)
        axes[1].set_title(f"{env}: return over training", fontsize=10)
        axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
        path = out / f"curves_{safe}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


# ------------------------------------------------------------------ run tables (CSV)
#: Columns a reproduction script's CSV may use for the return and the gap, in order of
#: preference (scripts/reproduce_elbert_fig4.py, scripts/reproduce_sellf_table1.py).
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
        stats = {m: _mean_std([finite_number(r.get(m)) for r in members]) for m in metrics}
        summary.append({"key": dict(zip(keys, key, strict=True)), "runs": len(members), **stats})
        cells = [str(v) for v in key] + [str(len(members))]
        cells += [_pm(stats[c], ".4f" if c != "train_seconds" else ".0f") for c in shown]
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
    figures = []
    if plots and ret and gap:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        env_key = next((k for k in ("env", "cell") if k in keys), None)
        for env in sorted({s["key"].get(env_key) for s in summary}):
            sel = [s for s in summary if s["key"].get(env_key) == env]
            fig, ax = plt.subplots(figsize=(6.4, 4.8))
            pts = []
            for i, s in enumerate(sel):
                (g, gs, _), (r, rs, _) = s[gap], s[ret]
                if g is None or r is None:
                    continue
                label = ", ".join(str(v) for k, v in s["key"].items() if k != env_key)
                _config_point(ax, i, g, r, gs, rs, label=label)
                pts.append((r, g))
            front = sorted((pts[i] for i in pareto(pts)), key=lambda p: p[1])
            if len(front) > 1:
                ax.plot(
                    [p[1] for p in front], [p[0] for p in front], "k--", lw=1, label="Pareto front"
                )
            ax.set_xlabel(f"{gap} (lower is fairer)")
            ax.set_ylabel(ret)
            path = out / f"frontier_{str(env).replace('/', '_')}.png"
            _finish(
                fig,
                ax,
                str(env),
                f"{ret} vs {gap} (mean +- std over seeds)",
                path,
                legend=bool(pts),
            )
            plt.close(fig)
            figures.append(str(path))
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
                f"{_iterations(theirs)}, this table the {_iterations(last)}: pass --last "
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
