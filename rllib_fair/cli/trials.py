"""Finished trials found on disk and grouped into configurations (nothing is retrained).

Reads what Tune wrote (each trial folder's ``params.json`` and ``result.json``). Trials
are grouped into configurations: the same experiment and the same settings except the
seed (runs started separately, e.g. with ``--seed 1`` and ``--seed 2``, pool too), so
the spread is over seeds; a configuration is labelled by the settings that differ
between configurations.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rllib_fair.cli.results import finite_number, read_results


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


def final(t: Trial, key: str, last: int) -> float | None:
    """The mean of ``key`` over the trial's last ``last`` result rows (None if never finite)."""
    values = [v for v in (finite_number(r.get(key)) for r in t.rows[-last:]) if v is not None]
    return float(np.mean(values)) if values else None


def mean_std(values: list[float | None]) -> tuple[float | None, float | None, int]:
    """``(mean, std, n)`` of the values that are not None (``(None, None, 0)`` if none)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return None, None, 0
    return float(np.mean(vals)), float(np.std(vals)), len(vals)
