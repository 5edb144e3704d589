"""Hyper-parameter grids in tuned-example YAML and SELLF's selection rule (Alg. 2).

The rule is Valdrighi et al. (SELLF), App. E, Alg. 2.

A grid is written like Tune's, inside ``config``::

    config:
      beta_1: {grid_search: [1, 2, 5, 10]}
      beta_2: {grid_search: [0.01, 0.05, 0.1]}
    selection:                  # optional: Alg. 2 (defaults shown)
      disparity: <the method's own observable disparity, see default_disparity_key>
      reward: env_runners/episode_return_mean
      omega: 0.05               # default: the config's omega if it has one, else 0.05
      last_iterations: 3        # score = mean of the last N finite values of a trial

Every grid value is validated like a single value (one-line error naming the key and
the value) before anything runs; Tune then runs one trial per grid point.

Alg. 2 (App. E): for each configuration, ``|Delta|`` is the disparity averaged over
time; among the configurations with minimal ``max(|Delta| - omega, 0)``, the highest
reward. The rules live in :mod:`rllib_fair.fairness.selection` (the reproduction plans'
grids apply them too), with why non-minimal configurations are excluded.

Selecting on each method's *observable* disparity (the paper: PPO and POCAR on
Delta^{A=1}, POCAR (Oracle) on Delta, SELLF on Delta-tilde) avoids tuning on labels the
decision-maker never sees; :func:`default_disparity_key` picks that metric.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from rllib_fair.fairness.selection import DEFAULT_OMEGA, RULES

GRID_KEY = "grid_search"
DEFAULT_REWARD_KEY = "env_runners/episode_return_mean"
DEFAULT_LAST_ITERATIONS = 3
SELECTION_KEYS = ("rule", "disparity", "reward", "omega", "last_iterations")
MAX_GRID_POINTS = 1000
# Settings a grid may not vary: the runner reports the gap of one notion per experiment.
NOT_GRIDDABLE = {
    "fairness_notion": "the notion whose gap the runner reports; run one experiment per notion",
    "model_config": "give one model per experiment",
    "num_env_runners": "a resource setting; give it once (--num-env-runners)",
}


class SweepError(ValueError):
    """A bad grid or selection block; the message is one line."""


def split_grid(config: dict) -> tuple[dict, dict[str, list]]:
    """Separates ``{grid_search: [...]}`` entries from single values.

    Returns the config with each grid replaced by its first value, and the grids in
    file order as ``{key: values}``.
    """
    base, grid = {}, {}
    for key, value in config.items():
        if isinstance(value, dict) and GRID_KEY in value:
            if set(value) != {GRID_KEY}:
                raise SweepError(
                    f"config.{key}: {value!r} is invalid; valid: {{grid_search: [v1, v2, ...]}} "
                    "with no other keys"
                )
            values = value[GRID_KEY]
            if not isinstance(values, list) or not values:
                raise SweepError(
                    f"config.{key}.grid_search: {values!r} is invalid; valid: a non-empty list "
                    "of values"
                )
            if key in NOT_GRIDDABLE:
                raise SweepError(
                    f"config.{key}: grid_search is not supported here ({NOT_GRIDDABLE[key]})"
                )
            grid[key] = list(values)
            base[key] = values[0]
        else:
            base[key] = value
    n = math.prod(len(v) for v in grid.values())
    if n > MAX_GRID_POINTS:
        raise SweepError(
            f"config: the grid has {n} points; valid: at most {MAX_GRID_POINTS} "
            f"({' x '.join(f'{k} {len(v)}' for k, v in grid.items())})"
        )
    return base, grid


def grid_points(grid: dict[str, list]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in Tune's order (first key slowest)."""
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*grid.values())]


@dataclass
class Selection:
    """Alg. 2's settings for one experiment."""

    disparity: str
    reward: str = DEFAULT_REWARD_KEY
    omega: float = DEFAULT_OMEGA
    last_iterations: int = DEFAULT_LAST_ITERATIONS
    rule: str = "sellf"


def default_disparity_key(config) -> str:
    """The method's own observable disparity, as the paper selects on (App. E).

    With the selective-labels metrics (two-group lending and school admission): the
    disparity the algorithm regularises (``fairness_disparity_source``: imputed for
    SELLF, accepted for POCAR, true for POCAR (Oracle)); for algorithms that regularise
    none, the accepted-only disparity Delta^{A=1} unless their labels are oracle.
    Elsewhere: the notion's long-term gap ``fairness/<notion>/bias``.
    """
    from rllib_fair.rllib.callbacks import _selective_notion

    notion = config.resolved_fairness_notion()
    if _selective_notion(config) is None:
        return f"fairness/{notion}/bias"
    if getattr(config, "needs_step_disparity", False):
        source = config.fairness_disparity_source
    else:
        source = "true" if config.resolved_label_access() == "oracle" else "accepted"
    return f"fairness/{notion}/selective/{source}_disparity_mean"


def constant_disparity_note(key: str) -> str | None:
    """A note when the selection's disparity key is 0 by construction, else None.

    A selective-labels disparity ``fairness/<notion>/selective/<source>_disparity_mean``
    whose per-group utility has the same numerator and denominator is 1 for every group
    whenever defined, so its gap is identically 0 (equality of opportunity on accepted
    rows, ``Delta^{A=1}``: the event ``{Y=1, A=1}`` forces ``A = 1``). Every
    configuration then ties on disparity and each rule picks the highest reward.
    """
    from rllib_fair.fairness.selective import _COEF

    parts = key.split("/")
    if len(parts) != 4 or parts[0] != "fairness" or parts[2] != "selective":
        return None
    notion, source = parts[1], parts[3].removesuffix("_disparity_mean")
    coef = _COEF.get((notion, source))
    if coef is None or tuple(coef[0]) != tuple(coef[1]):
        return None
    return (
        f"{key} is 0 by construction under {notion} with {source} labels (each group's "
        "rate is 1 whenever defined), so every configuration ties on disparity and the "
        "selection reduces to the highest reward; select on another disparity with "
        "selection: {disparity: <result key>}"
    )


def parse_selection(block: Any, config) -> Selection:
    """Validates a ``selection:`` block (None: all defaults) against ``config``."""
    from rllib_fair.cli.result_keys import result_key

    if block is None:
        block = {}
    if not isinstance(block, dict):
        raise SweepError(
            f"selection: must be a mapping with keys {', '.join(SELECTION_KEYS)}, got {block!r}"
        )
    unknown = sorted(set(block) - set(SELECTION_KEYS))
    if unknown:
        raise SweepError(
            f"selection.{unknown[0]}: unknown key; valid keys: {', '.join(SELECTION_KEYS)}"
        )
    omega = block.get("omega", getattr(config, "omega", DEFAULT_OMEGA))
    if isinstance(omega, bool) or not isinstance(omega, (int, float)) or not omega >= 0:
        raise SweepError(f"selection.omega: {omega!r} is invalid; valid: a number >= 0")
    last = block.get("last_iterations", DEFAULT_LAST_ITERATIONS)
    if isinstance(last, bool) or not isinstance(last, int) or last < 1:
        raise SweepError(f"selection.last_iterations: {last!r} is invalid; valid: an integer >= 1")
    rule = block.get("rule", "sellf")
    if rule not in RULES:
        raise SweepError(f"selection.rule: {rule!r} is invalid; valid: {', '.join(RULES)}")
    out = Selection(
        disparity=default_disparity_key(config),
        omega=float(omega),
        last_iterations=last,
        rule=rule,
    )
    for field_name in ("disparity", "reward"):
        if field_name in block:
            value = block[field_name]
            if not isinstance(value, str):
                raise SweepError(
                    f"selection.{field_name}: {value!r} is invalid; valid: a result key"
                )
            setattr(out, field_name, result_key("selection", value))
    return out


def trailing_mean(history: list[dict], key: str, last: int) -> float | None:
    """Mean of the last ``last`` finite values of ``key`` in a trial's results."""
    values = []
    for row in reversed(history):
        try:
            v = float(row.get(key))
        except (TypeError, ValueError):
            continue
        if math.isfinite(v):
            values.append(v)
            if len(values) == last:
                break
    return sum(values) / len(values) if values else None
