"""The one check every named evaluator makes on a plan's metric paths.

An evaluator with a fixed set of outputs (``deployment``, ``quarters``,
``replicator_initial_states``) accepts a plan's ``evaluation.metrics`` only when each
path names one of them. This module imports nothing, so the evaluators' own modules
and their registry can all use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


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
