"""The base of every named evaluator of the reproduction plans, and its shared checks.

:class:`Evaluator` has the two steps a plan's protocol runs (``configure`` before the
algorithm is built, ``measure`` after training); :func:`read_path` reads a finite number
from a result; :func:`check_output_paths` checks a plan's metric paths against an
evaluator's fixed outputs. This module imports no other module of the package, so every
evaluator's own module (``deployment_eval``, ``quarters``, ``evaluators``) subclasses
:class:`Evaluator` and the registry in :mod:`rllib_fair.reproduce.evaluators` still
imports them all at its top.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

#: An evaluation interval no run reaches (iterations): it makes RLlib build the
#: evaluation runner without ever evaluating on its own.
NEVER = 2**62


def read_path(result: dict, path: str) -> float:
    """The number at the dotted ``path`` of ``result`` (one-line ValueError otherwise)."""
    node: Any = result
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ValueError(f"metric path {path!r}: no {part!r} in the result")
        node = node[part]
    try:
        value = float(node)
    except (TypeError, ValueError):
        raise ValueError(f"metric path {path!r}: {node!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"metric path {path!r}: {value!r} is not finite")
    return value


def check_output_paths(evaluator: str, paths: Mapping[str, str], outputs: Iterable[str]) -> None:
    """Raises if a metric's path is not one of the evaluator's outputs.

    Args:
        evaluator: the evaluator's plan name (for the message).
        paths: metric name -> the output it reads.
        outputs: what the evaluator measures.

    Raises:
        ValueError: one line naming the metric, the bad path and the valid outputs.
    """
    valid = tuple(outputs)
    for name, path in paths.items():
        if path not in valid:
            raise ValueError(
                f"evaluation.metrics.{name}: {path!r} is invalid for {evaluator}; valid: "
                + ", ".join(valid)
            )


class Evaluator:
    """The base evaluator: nothing to configure; metrics read from ``result``.

    A subclass with a fixed set of outputs lists them in ``OUTPUTS`` and checks the
    plan's paths with :func:`check_output_paths` in ``measure``.
    """

    #: What a plan setting's own ``evaluation`` may set for this evaluator (it reads them).
    SETTING_KEYS: tuple[str, ...] = ()

    def configure(self, config, evaluation: dict):
        """The config with what this evaluator needs (here: unchanged)."""
        return config

    def measure(self, algo, last_result: dict, paths: dict[str, str], evaluation: dict) -> dict:
        """The plan's metrics: ``{name: value}``."""
        return {name: read_path(last_result, path) for name, path in paths.items()}
