"""Metric keys and train-batch column names, documented once.

Training results
----------------
Every training result of an rllib-fair algorithm carries, for the configured notion
``N`` (and for each extra notion in ``fairness_log_notions``), a nested dict under
``result["fairness"][N]``; Tune flattens it to the keys below and its default loggers
write them to ``progress.csv``, ``result.json`` and TensorBoard (tag prefix
``ray/tune/``). ``<pair>`` is the notion's supply/demand pair (``tpr``/``fpr`` for
equalized odds, the notion's only pair otherwise, where the pair level is omitted) and
``<group>`` a group name of the environment.

================================================  =========================================
``fairness/<N>/bias``                             gap b = max_g - min_g of the long-term
                                                  benefit rate over groups (Xu et al. 2024,
                                                  Eq. 1), max over pairs; the ratio is taken
                                                  *after* aggregating all steps sampled in the
                                                  iteration (undiscounted Monte-Carlo
                                                  estimate of eta^S_g / eta^D_g)
``fairness/<N>/ratio``                            min_g / max_g of the same rates
``fairness/<N>/rate/[<pair>/]<group>``            long-term benefit rate S_g / D_g
``fairness/<N>/supply/[<pair>/]<group>``          summed supply of the iteration's steps
``fairness/<N>/demand/[<pair>/]<group>``          summed demand of the iteration's steps
``fairness/<N>/step_disparity_mean``              mean over the iteration's steps of the
                                                  per-step disparity Delta_t (running gap
                                                  since the episode start, or over the last
                                                  ``fairness_disparity_window`` decisions;
                                                  demands plus ``fairness_smoothing``)
``fairness/<N>/episode_bias_mean``                mean over episodes finished in the
                                                  iteration of the episode's own gap
``fairness/<N>/num_steps``                        steps the numbers above are computed from
``fairness/<N>/num_episodes``                     episodes finished in the iteration
================================================  =========================================

Replicator population (``fair/Replicator-v0``, ``fair/ReplicatorAdult-v0``; Yin et al.
2023): from envs whose step infos carry ``loss``, ``disparity`` and ``q_next``, each
finished episode contributes to the means over the iteration's episodes of
``env_runners/replicator/<key>``: ``loss_mean`` and ``disparity_mean`` (episode means of
the per-step loss L and the configured squared disparity D, paper Figs. 1 e, 3),
``cumulative_loss`` and ``cumulative_disparity`` (episode sums, Fig. 4), ``q_mean`` (mean
of ``(q'_0 + q'_1) / 2``), ``q_gap`` (mean of ``|q'_0 - q'_1|``) and ``reward_return``
(episode sum of the env's own reward ``r = 1 - L``, whatever ``reward_mode`` pays: under
R-TD3's relaxed reward RLlib's episode return is the relaxed one). The per-step D is the
paper's disparity, not the ledger gap of ``fairness/<N>/bias``.

Zero demand follows :mod:`rllib_fair.fairness.ledger`: a group with no demand has an
undefined rate, reported as 0 and left out of the gap; no NaN or inf is ever logged.
The same keys appear under ``evaluation/`` for evaluation runs.

Train-batch columns
-------------------
Added by :class:`rllib_fair.rllib.connectors.AddFairnessColumns`; row ``t`` belongs to
the transition (obs_t, a_t), i.e. to the info returned by ``env.step(a_t)``. The
artificial bootstrap step RLlib appends to every episode chunk gets zeros.
"""

from __future__ import annotations

# --- result keys -----------------------------------------------------------------------
# Defined next to the metric blocks that report them (rllib_fair.fairness.blocks, the
# replicator envs' block) and re-exported here, where they are documented.
from rllib_fair.envs.replicator_metrics import (
    INFO_REPLICATOR_DISPARITY,
    INFO_REPLICATOR_LOSS,
    INFO_REPLICATOR_Q_NEXT,
    INFO_REPLICATOR_REWARD,
    REPLICATOR,
    REPLICATOR_CUMULATIVE_DISPARITY,
    REPLICATOR_CUMULATIVE_LOSS,
    REPLICATOR_DISPARITY_MEAN,
    REPLICATOR_LOSS_MEAN,
    REPLICATOR_Q_GAP,
    REPLICATOR_Q_MEAN,
    REPLICATOR_REWARD_RETURN,
)
from rllib_fair.fairness.blocks import (
    BIAS,
    DEMAND,
    EPISODE_BIAS_MEAN,
    FAIRNESS,
    NUM_EPISODES,
    NUM_STEPS,
    RATE,
    RATIO,
    RAW,
    RAW_EPISODE_BIAS_SUM,
    RAW_SELECTIVE,
    RAW_STEP_DISPARITY_SUM,
    SELECTIVE,
    STEP_DISPARITY_MEAN,
    SUPPLY,
)

# --- train-batch columns (numeric) -----------------------------------------------------
COL_COUNTS = "fair_counts"  # float32 [B, NUM_FIELDS, G]
COL_GROUP = "fair_group"  # int64 [B]; -1 where the step decided about nobody
COL_DECISION = "fair_decision"  # int64 [B]; -1 where not applicable
COL_LABEL = "fair_label"  # int64 [B]; -1 where not applicable
COL_LABEL_OBSERVED = "fair_label_observed"  # int64 [B]; 1 iff the label was revealed
COL_VALID = "fair_valid"  # bool [B]; False on the artificial bootstrap step
# Per-step disparity of the configured notion and source, only for algorithms that ask
# for it (a StepDisparity in the config's ``ENV_RUNNER_ANNOTATORS``): Delta after the
# decision at t and Delta before it (the running gap since the episode start, or over
# the window).
COL_DISPARITY = "fair_disparity"  # float32 [B]
COL_DISPARITY_PREV = "fair_disparity_prev"  # float32 [B]

# Extra model output of modules that predict labels (SELLF's phi): P(Y = 1 | x, z) of the
# individual shown in obs_t, stored by RLlib per step in the episode's extra_model_outputs.
LABEL_PREDICTION = "fair_label_prob"

# Key in the step infos written on the env runner (rllib_fair.rllib.annotators.StepDisparity,
# run by the metrics callback) and read by the connector on the learner: Delta after the
# step's transition (``infos[t + 1]``), and Delta before the chunk's first transition in
# ``infos[0]``. Kept in the infos (not in
# ``custom_data``) because RLlib slices episodes across learners and slices keep infos.
INFO_DISPARITY = "fair_step_disparity"

# POCAR's learner metric (``learners/<module>/pocar_regularizer_max``): per iteration, the
# largest absolute value either regularising term took as it entered the advantages
# (after min-max normalisation in the reference form), over the iteration's minibatches
# and learners; 0 at every iteration shows the run did not depend on beta_1 and beta_2.
POCAR_REGULARIZER_MAX = "pocar_regularizer_max"

COLUMNS = (COL_COUNTS, COL_GROUP, COL_DECISION, COL_LABEL, COL_LABEL_OBSERVED, COL_VALID)


def metric_key(notion: str, *parts: str) -> str:
    """Returns the flattened result key ``fairness/<notion>/<parts...>``."""
    return "/".join((FAIRNESS, notion, *parts))


__all__ = [
    "BIAS",
    "COLUMNS",
    "COL_COUNTS",
    "COL_DECISION",
    "COL_DISPARITY",
    "COL_DISPARITY_PREV",
    "COL_GROUP",
    "COL_LABEL",
    "COL_LABEL_OBSERVED",
    "COL_VALID",
    "DEMAND",
    "EPISODE_BIAS_MEAN",
    "FAIRNESS",
    "INFO_DISPARITY",
    "INFO_REPLICATOR_DISPARITY",
    "INFO_REPLICATOR_LOSS",
    "INFO_REPLICATOR_Q_NEXT",
    "INFO_REPLICATOR_REWARD",
    "LABEL_PREDICTION",
    "NUM_EPISODES",
    "NUM_STEPS",
    "RATE",
    "RATIO",
    "RAW",
    "RAW_EPISODE_BIAS_SUM",
    "RAW_SELECTIVE",
    "RAW_STEP_DISPARITY_SUM",
    "REPLICATOR",
    "REPLICATOR_CUMULATIVE_DISPARITY",
    "REPLICATOR_CUMULATIVE_LOSS",
    "REPLICATOR_DISPARITY_MEAN",
    "REPLICATOR_LOSS_MEAN",
    "REPLICATOR_Q_GAP",
    "REPLICATOR_Q_MEAN",
    "REPLICATOR_REWARD_RETURN",
    "SELECTIVE",
    "STEP_DISPARITY_MEAN",
    "SUPPLY",
    "metric_key",
]
