"""The ``stop`` and ``pass_criteria`` sections of an experiment file.

A ``pass_criteria`` block must contain its budget entry: a ``{min: v}`` on the stop's env
steps or iterations (the same key as in ``stop:``) with v between 80% and 100% of the
stop value, so that an iteration can only pass once at least 80% of the budget was
trained (see :func:`budget_criterion`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rllib_fair.cli.result_keys import (
    BUDGET_KEYS,
    LEGACY_RESULT_KEYS,
    ExperimentError,
    result_key,
)


@dataclass
class Criterion:
    """One pass criterion: ``metric`` must be >= ``minimum`` and/or <= ``maximum``."""

    metric: str
    minimum: float | None = None
    maximum: float | None = None

    def holds(self, value: float | None) -> bool:
        """True if ``value`` is finite and within the bounds."""
        if value is None or not math.isfinite(value):
            return False
        if self.minimum is not None and value < self.minimum:
            return False
        return not (self.maximum is not None and value > self.maximum)

    def better(self, a: float | None, b: float | None) -> float | None:
        """The better of two values under this criterion (for reporting the best reached)."""
        vals = [v for v in (a, b) if v is not None and math.isfinite(v)]
        if not vals:
            return None
        return min(vals) if self.maximum is not None and self.minimum is None else max(vals)

    def describe(self) -> str:
        """Human-readable bound, e.g. ``>= 100`` or ``<= 0.5``."""
        parts = []
        if self.minimum is not None:
            parts.append(f">= {self.minimum:g}")
        if self.maximum is not None:
            parts.append(f"<= {self.maximum:g}")
        return " and ".join(parts)


def is_number(value: Any) -> bool:
    """An int or float (bools are not numbers here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_int(value: Any) -> bool:
    """An int (bools are not integers here)."""
    return isinstance(value, int) and not isinstance(value, bool)


def finite(value: int | float) -> bool:
    """``math.isfinite`` that is also False (not OverflowError) for ints beyond float range."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _number(key: str, value: Any) -> float:
    if not is_number(value) or not finite(value):
        raise ExperimentError(f"{key}: {value!r} is not a finite number")
    return float(value)


def parse_stop(stop: Any) -> dict[str, float]:
    """The ``stop`` block as result key -> limit; it must hold a budget (env steps, ...)."""
    if stop is None:
        stop = {}
    if not isinstance(stop, dict):
        raise ExperimentError(f"stop: must be a mapping of result key to value, got {stop!r}")
    out = {}
    for key, value in stop.items():
        rkey = result_key("stop", key)
        num = _number(f"stop.{key}", value)
        if rkey in BUDGET_KEYS and num <= 0:
            raise ExperimentError(
                f"stop.{key}: {value!r} is not a valid budget; valid: a number > 0"
            )
        out[rkey] = num
    if not any(k in out for k in BUDGET_KEYS):
        raise ExperimentError(
            f"stop: no budget given; valid: at least one of {', '.join(BUDGET_KEYS)} "
            "(or --stop key=value)"
        )
    return out


#: The least share of the stop budget an iteration must have trained to pass (the
#: ``pass_criteria`` budget entry's lowest allowed ``min``).
PASS_BUDGET_FRACTION = 0.8
#: Stop keys a budget entry can name (a time budget depends on the machine).
PASS_BUDGET_KEYS = ("num_env_steps_sampled_lifetime", "training_iteration")


def plain(value: float) -> str:
    """``150000`` for 150000.0, ``2.4`` for 2.4 (no exponent for budgets)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def budget_criterion(stop: dict[str, float], criteria: list[Criterion], where: str) -> Criterion:
    """The pass criterion that proves the budget was trained.

    It is a ``{min: v}`` on a key of ``stop`` among :data:`PASS_BUDGET_KEYS` (env steps
    or iterations) with ``PASS_BUDGET_FRACTION * stop[key] <= v <= stop[key]``. Since all
    criteria must hold on one and the same iteration, no iteration before 80% of the
    budget can pass, and so ``--as-test`` cannot stop a trial there either.

    Args:
        stop: the parsed stop block (result key -> limit).
        criteria: the parsed pass criteria.
        where: what the criteria belong to, for the error (a file and experiment name).

    Raises:
        ExperimentError: one line naming the key, the value found and the range required.
    """
    keys = [k for k in PASS_BUDGET_KEYS if k in stop]
    if not keys:
        raise ExperimentError(
            f"stop: {stop!r} in {where} has no env-step or iteration budget for "
            "pass_criteria to prove; valid: add num_env_steps_sampled_lifetime or "
            "training_iteration to stop"
        )
    by_metric = {c.metric: c for c in criteria}
    for key in keys:
        c = by_metric.get(key)
        low = PASS_BUDGET_FRACTION * stop[key]  # 0.8 * 3 is 2.4000000000000004 in floats
        if (
            c is not None
            and c.maximum is None
            and c.minimum is not None
            and low - 1e-9 * abs(low) <= c.minimum <= stop[key]
        ):
            return c
    key = next((k for k in keys if k in by_metric), keys[0])
    found = by_metric.get(key)
    if found is None:
        value = "missing"
    else:
        bound = {"min": found.minimum, "max": found.maximum}
        value = repr({k: v for k, v in bound.items() if v is not None})
    required = " or ".join(
        f"{k}: {{min: v}} with {plain(PASS_BUDGET_FRACTION * stop[k])} <= v <= "
        f"{plain(stop[k])} ({PASS_BUDGET_FRACTION:.0%} to 100% of stop.{k}: {plain(stop[k])})"
        for k in keys
    )
    raise ExperimentError(
        f"pass_criteria.{key}: {value} in {where}; required: the budget entry "
        f"{required}, so that a pass proves the budget was trained"
    )


def has_budget(stop: Any) -> bool:
    """True if a raw stop block names one of :data:`BUDGET_KEYS` (legacy names too)."""
    if not isinstance(stop, dict):
        return False
    return any(LEGACY_RESULT_KEYS.get(k, k) in BUDGET_KEYS for k in stop if isinstance(k, str))


def parse_criteria(block: Any) -> list[Criterion]:
    """The ``pass_criteria`` block as criteria (a bare number ``v`` means ``{min: v}``)."""
    if block is None:
        return []
    if not isinstance(block, dict):
        raise ExperimentError(
            f"pass_criteria: must map result keys to {{min: x}} / {{max: x}}, got {block!r}"
        )
    out = []
    for key, bound in block.items():
        rkey = result_key("pass_criteria", key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            bound = {"min": bound}
        if not isinstance(bound, dict) or not bound or set(bound) - {"min", "max"}:
            raise ExperimentError(
                f"pass_criteria.{key}: {bound!r} is invalid; valid: {{min: x}}, {{max: x}} or both"
            )
        crit = Criterion(
            rkey,
            _number(f"pass_criteria.{key}.min", bound["min"]) if "min" in bound else None,
            _number(f"pass_criteria.{key}.max", bound["max"]) if "max" in bound else None,
        )
        if crit.minimum is not None and crit.maximum is not None and crit.minimum > crit.maximum:
            raise ExperimentError(
                f"pass_criteria.{key}: {bound!r} can never hold (min > max); valid: min <= max"
            )
        out.append(crit)
    return out
