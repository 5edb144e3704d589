"""The replicator-population metric block (Yin et al. 2023), declared by the replicator envs.

Each finished episode contributes to the means over the iteration's episodes of
``env_runners/replicator/<key>``: ``loss_mean`` and ``disparity_mean`` (episode means of
the per-step loss L and the configured squared disparity D, paper Figs. 1 e, 3),
``cumulative_loss`` and ``cumulative_disparity`` (episode sums, Fig. 4), ``q_mean``
(mean of ``(q'_0 + q'_1) / 2``), ``q_gap`` (mean of ``|q'_0 - q'_1|``) and
``reward_return`` (episode sum of the env's own reward ``r = 1 - L``, whatever
``reward_mode`` pays). Sums of a running episode are carried to its next chunk.
"""

from __future__ import annotations

from typing import Any

from rllib_fair.fairness.blocks import Chunk, MetricBlock, MetricContext, MetricSink

# Result keys under ``env_runners/replicator/`` and the step-info keys they are read from.
REPLICATOR = "replicator"
REPLICATOR_LOSS_MEAN = "loss_mean"
REPLICATOR_DISPARITY_MEAN = "disparity_mean"
REPLICATOR_CUMULATIVE_LOSS = "cumulative_loss"
REPLICATOR_CUMULATIVE_DISPARITY = "cumulative_disparity"
REPLICATOR_Q_MEAN = "q_mean"
REPLICATOR_Q_GAP = "q_gap"
REPLICATOR_REWARD_RETURN = "reward_return"
INFO_REPLICATOR_LOSS = "loss"
INFO_REPLICATOR_DISPARITY = "disparity"
INFO_REPLICATOR_Q_NEXT = "q_next"
INFO_REPLICATOR_REWARD = "r"


class ReplicatorMetrics(MetricBlock):
    """Episode means and sums of the per-step loss, disparity and population state.

    Reads the step-info keys ``loss``, ``disparity``, ``q_next`` and ``r`` (a chunk whose
    last info lacks ``q_next`` is skipped); logs one value per key and finished episode.
    """

    def observe(self, chunk: Chunk, ctx: MetricContext, carry: Any, sink: MetricSink) -> Any:
        """Adds the chunk's steps to the episode's sums; a finished episode logs its means."""
        infos = chunk.infos[1:]
        if not infos or INFO_REPLICATOR_Q_NEXT not in infos[-1]:
            return carry
        acc = carry or [0.0, 0.0, 0.0, 0.0, 0, 0.0]
        for info in infos:
            q0, q1 = info[INFO_REPLICATOR_Q_NEXT]
            acc[0] += info[INFO_REPLICATOR_LOSS]
            acc[1] += info[INFO_REPLICATOR_DISPARITY]
            acc[2] += 0.5 * (q0 + q1)
            acc[3] += abs(q0 - q1)
            acc[4] += 1
            acc[5] += info.get(INFO_REPLICATOR_REWARD, 1.0 - info[INFO_REPLICATOR_LOSS])
        if not chunk.done:
            return acc
        n = acc[4]
        for name, value in (
            (REPLICATOR_LOSS_MEAN, acc[0] / n),
            (REPLICATOR_DISPARITY_MEAN, acc[1] / n),
            (REPLICATOR_CUMULATIVE_LOSS, acc[0]),
            (REPLICATOR_CUMULATIVE_DISPARITY, acc[1]),
            (REPLICATOR_Q_MEAN, acc[2] / n),
            (REPLICATOR_Q_GAP, acc[3] / n),
            (REPLICATOR_REWARD_RETURN, acc[5]),
        ):
            sink.log_mean((REPLICATOR, name), float(value))
        return None
