"""Annotators an algorithm config can declare in ``ENV_RUNNER_ANNOTATORS``.

An annotator (:class:`rllib_fair.fairness.blocks.Annotator`) computes, on the env
runners, a per-step value the algorithm's learner needs and writes it into the step
infos of the episode chunk; the metrics callback runs every declared annotator on every
chunk a sample call returns. Annotators specific to one method live next to it.
"""

from __future__ import annotations

from typing import Any

from rllib_fair.fairness.blocks import Annotator, Chunk, MetricContext
from rllib_fair.fairness.sequence import get_disparity_source
from rllib_fair.rllib import keys


class StepDisparity(Annotator):
    """Writes the per-step disparity Delta_t into every step info of the chunk.

    Uses the config's notion, ``fairness_disparity_window``, ``fairness_smoothing``,
    ``fairness_disparity_source`` and ``fairness_undefined_utility``, resumed across the
    chunks of one episode. The value after transition t goes into ``infos[t + 1]`` and
    the value before the chunk's first transition into ``infos[0]`` (key
    :data:`rllib_fair.rllib.keys.INFO_DISPARITY`);
    :class:`rllib_fair.rllib.connectors.AddFairnessColumns` turns them into the
    ``fair_disparity`` / ``fair_disparity_prev`` columns. Declared by the algorithms that
    regularise with the per-step disparity (POCAR, R-PPO, SELLF, F-PPO-L).
    """

    def annotate(self, chunk: Chunk, ctx: MetricContext, carry: Any) -> Any:
        """Writes Delta_t into ``chunk.infos``; the carry is ``(disparity state, last Delta)``."""
        config = ctx.config
        source = get_disparity_source(ctx.setting("fairness_disparity_source", "true"))
        state, start = carry if carry is not None else (None, 0.0)
        gaps, state = source(
            config.resolved_fairness_notion(),
            chunk.counts,
            window=ctx.setting("fairness_disparity_window"),
            smoothing=ctx.setting("fairness_smoothing", 0.0),
            carry=state,
            steps=chunk.steps,
            undefined=ctx.setting("fairness_undefined_utility", "exclude"),
        )
        infos = chunk.infos
        infos[0][keys.INFO_DISPARITY] = float(start)
        for info, gap in zip(infos[1:], gaps.tolist(), strict=False):
            info[keys.INFO_DISPARITY] = gap
        return state, float(gaps[-1]) if len(gaps) else start
