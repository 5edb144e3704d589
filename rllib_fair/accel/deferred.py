"""Learner updates whose metrics are reduced once per training step, not once per call.

``Learner.update()`` ends by reducing its metrics logger (every logged stat collapsed
into a result dict). TD3's local fast path calls it once per env step at Stable-
Baselines3's default schedule, and that reduce cost an eighth of the time. RLlib's
``update()`` takes a keyword that skips the reduce; the caller then reduces the
learner's metrics once (:func:`reduce_learner_metrics`). Only the logged diagnostics
see the difference (their stats are reduced over every update of the step at once);
the updates are the same.
"""

from __future__ import annotations

from rllib_fair.accel.gate import accel_active

#: The keyword of RLlib's ``Learner.update()`` that skips its final metrics reduce.
_SKIP_REDUCE = "_no_metrics_reduce"


def deferred_reduce_kwargs(config) -> dict:
    """``update()`` keywords that skip the per-call reduce where the speed layer runs."""
    if accel_active(config) and getattr(config, "lean_learner", True):
        return {_SKIP_REDUCE: True}
    return {}


def reduce_learner_metrics(learner_group) -> list[dict]:
    """Each learner's metrics reduced once (what ``update()`` returns when it reduces)."""
    results = learner_group.foreach_learner(lambda learner: learner.metrics.reduce())
    return [r.get() for r in results]
