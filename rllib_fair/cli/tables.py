"""Tables of grouped trials: one row per configuration, mean +- std over its seeds.

For every configuration: the env's return, the algorithm's own objective when it trains
on another reward (R-TD3's relaxed return), the gap of every reported notion, every
algorithm's own fairness target (declared by its config class,
:mod:`rllib_fair.rllib.targets`), the per-group long-term rates of the main notion and
the training speed ("final" = mean of the last ``last`` iterations of a trial, each
trial counted once); and the reward-gap Pareto front per environment.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rllib_fair.cli.results import STEPS_KEY, finite_number
from rllib_fair.cli.trials import Configuration, final, mean_std


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
        row["return"] = mean_std([final(t, own.env_reward.key, last) for t in c.trials])
        row["return_key"] = own.env_reward.key
        row["objective"] = None
        if own.shaped:
            row["objective"] = {
                **_metric_info(own.objective),
                "value": mean_std([final(t, own.objective.key, last) for t in c.trials]),
            }
        row["own"] = {
            "note": own.note,
            "constraints": [_metric_info(m) for m in own.constraints],
        }
        row["targets"] = {k: mean_std([final(t, k, last) for t in c.trials]) for k in target_keys}
        notions = sorted(
            {
                k.split("/")[1]
                for t in c.trials
                for k in t.rows[-1]
                if k.startswith("fairness/") and k.endswith("/bias") and k.count("/") == 2
            }
        )
        row["gap"] = {
            n: mean_std([final(t, f"fairness/{n}/bias", last) for t in c.trials]) for n in notions
        }
        prefix = f"fairness/{c.notion}/rate/"
        groups = sorted(
            {k[len(prefix) :] for t in c.trials for k in t.rows[-1] if k.startswith(prefix)}
        )
        row["rates"] = {g: mean_std([final(t, prefix + g, last) for t in c.trials]) for g in groups}
        speeds = []
        for t in c.trials:
            steps = finite_number(t.rows[-1].get(STEPS_KEY))
            secs = finite_number(t.rows[-1].get("time_total_s"))
            speeds.append(steps / secs if steps and secs else None)
        row["steps_per_s"] = mean_std(speeds)
        out.append(row)
    return out


def pm(ms: tuple, spec: str = ".4f") -> str:
    """``mean +- std`` of a :func:`mean_std` triple (``-`` when missing)."""
    mean, std, n = ms
    if mean is None:
        return "-"
    return f"{mean:{spec}}" + (f" +- {std:{spec}}" if n > 1 else "")


def iterations(last: int) -> str:
    """How a trial's final value is taken, in words."""
    return "last iteration" if last == 1 else f"mean of last {last} iterations"


def iters(last: int) -> str:
    """:func:`iterations`, short (for column heads)."""
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
    head = ["configuration", "algo", "env", "seeds", "env steps", f"return ({iters(last)})"]
    head += ["objective"] if shaped else []
    head += [f"gap {n}" for n in notions] + [t["name"] for t in targets]
    head += ["own target", "rates (main notion)", "steps/s", "Pareto"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        rates = ", ".join(f"{g} {pm(ms, '.3f')}" for g, ms in r["rates"].items()) or "-"
        cells = [
            r["configuration"],
            r["algo"],
            r["env"],
            str(r["trials"]),
            str(r["env_steps"]),
            pm(r["return"], ".3f"),
        ]
        if shaped:
            obj = r["objective"]
            cells.append(f"{obj['name']} {pm(obj['value'], '.3f')}" if obj else "= return")
        cells += [
            pm(r["gap"].get(n, (None, None, 0))) + _own_mark(r, f"fairness/{n}/bias")
            for n in notions
        ]
        cells += [
            pm(r["targets"].get(t["key"], (None, None, 0))) + _own_mark(r, t["key"])
            for t in targets
        ]
        own = ", ".join(m["name"] for m in r["own"]["constraints"]) or "none"
        cells += [own, f"{r['notion']}: {rates}", pm(r["steps_per_s"], ".0f")]
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
        f"Each trial's value is the {iterations(last)} of its results (--last); cells are "
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


def point(row: dict) -> tuple[float, float] | None:
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
        idx = [i for i, r in enumerate(rows) if r["env"] == env and point(r) is not None]
        for k in pareto([point(rows[i]) for i in idx]):
            on[idx[k]] = True
    return on


def format_pareto(rows: list[dict], front: list[bool]) -> str:
    """Markdown table of the configurations, front first (by gap), then the rest."""
    notions = sorted({r["notion"] for r in rows})
    gap_head = f"gap ({notions[0]})" if len(notions) == 1 else "gap (main notion)"
    shown = iters(rows[0]["last"]) if rows else iters(1)
    head = ["front", "configuration", "seeds", f"return ({shown}; mean +- std)", gap_head]
    head += ["iterations"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def order(i: int) -> tuple:
        pt = point(rows[i])
        return (not front[i], pt is None, pt[1] if pt else 0.0, -(pt[0]) if pt else 0.0)

    for i in sorted(range(len(rows)), key=order):
        r = rows[i]
        cells = [
            "*" if front[i] else "",
            r["configuration"],
            f"{r['trials']} ({', '.join(r['seeds'])})",
            pm(r["return"], ".3f"),
            pm(r["gap"].get(r["notion"], (None, None, 0))),
            str(r["iterations"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
