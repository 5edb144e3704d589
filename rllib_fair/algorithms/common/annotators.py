"""Env-runner annotators of the Lear & Zhang family (PPO-C, PPO-Cb, PPO-KL, F-PPO-L).

Declared in the configs' ``ENV_RUNNER_ANNOTATORS`` (see
:class:`rllib_fair.fairness.blocks.Annotator`): on the env runners they write, into the
step infos of an env that reports qualification gains (``QUALIFICATION_INFO = True``),
the values :class:`rllib_fair.algorithms.common.connectors.AddQualificationColumns` turns
into train-batch columns. In the infos the values stay with their steps when RLlib slices
episodes across data-parallel learners. A chunk whose last info carries no ``qual_gain``
is left as it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rllib_fair.fairness import qualification as qual
from rllib_fair.fairness.blocks import Annotator, Chunk, MetricContext
from rllib_fair.fairness.qualification_metrics import qualification_steps

#: Info keys the annotators write on the env runner: q_t and ps_t, the Monte Carlo
#: gain-to-go of the same individual over the rest of the episode under pi and under the
#: reference policy pi^PS, and F-PPO-L's dW_t.
INFO_QUAL_Q = "fair_qual_q"
INFO_QUAL_PS = "fair_qual_ps"
INFO_W1_DELTA = "fair_w1_delta"


class QualificationReturns(Annotator):
    """PPO-C's q_t and ps_t: the Monte Carlo gain-to-go of the same individual.

    Writes ``fair_qual_q`` (the gains under pi) and ``fair_qual_ps`` (under pi^PS) into
    every decided step's info: the sum of that individual's qualification gains from
    step t to the end of the chunk. A chunk end counts as the episode end (PPO-C validates
    ``complete_episodes`` unless ``allow_partial_episodes``).
    """

    def annotate(self, chunk: Chunk, ctx: MetricContext, carry: Any) -> Any:
        """Writes q_t and ps_t; keeps no state across chunks."""
        steps = qualification_steps(chunk)
        if steps is None:
            return carry
        q = qual.returns_to_go_by_individual(steps.ids, steps.g)
        ps = qual.returns_to_go_by_individual(steps.ids, steps.g_ps)
        for info, a, b in zip(steps.infos, q.tolist(), ps.tolist(), strict=True):
            info[INFO_QUAL_Q] = a
            info[INFO_QUAL_PS] = b
        return None


class LongTermW1(Annotator):
    """F-PPO-L's dW_t = W_t - W_{t-1} (W_0 = 0 at the episode start).

    W is the distance between the two groups' credit-bin histograms over the last
    ``w1_window`` decided applicants (:func:`rllib_fair.fairness.qualification.windowed_count_w1`
    with the config's ``w1_form``, ``w1_p``, ``w1_blur`` and ``w1_scaling``), resumed
    across the chunks of one episode; dW_t goes into ``fair_w1_delta`` of every decided
    step's info.
    """

    def annotate(self, chunk: Chunk, ctx: MetricContext, carry: Any) -> Any:
        """Writes dW_t; the carry is the histograms' window state."""
        steps = qualification_steps(chunk)
        if steps is None:
            return carry
        config = ctx.config
        last = 0.0 if carry is None else carry["last"]
        w, carry = qual.windowed_count_w1(
            steps.groups,
            steps.x,
            window=config.w1_window,
            form=config.w1_form,
            carry=carry,
            p=config.w1_p,
            blur=config.w1_blur,
            scaling=config.w1_scaling,
        )
        dw = np.diff(np.r_[last, w])
        for info, d in zip(steps.infos, dw.tolist(), strict=True):
            info[INFO_W1_DELTA] = d
        return carry
