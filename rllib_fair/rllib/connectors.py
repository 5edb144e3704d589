"""Learner connector that turns per-step fairness infos into numeric train-batch columns.

RLlib stores, for an episode chunk with ``n`` transitions, ``n + 1`` infos: ``infos[0]``
comes from ``reset()`` (or is the last info of the previous chunk) and ``infos[t + 1]``
is what ``env.step(a_t)`` returned. The built-in ``AddInfosFromEpisodesToTrainBatch``
pairs ``infos[t]`` with ``obs[t]``, which is the *previous* transition's info. This
piece pairs row ``t`` with ``infos[t + 1]``, so the counts in row ``t`` are the
consequences of action ``a_t`` (what supply/demand GAE and the fairness-aware losses
need).

Insert it right after ``AddOneTsToEpisodesAndTruncate`` (the config mixin does that):
the artificial bootstrap step RLlib appends then gets zero counts and ``-1`` labels,
and ``fair_valid`` False, so per-stream GAE sees a zero "reward" there, exactly like
the main reward stream.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.connectors.connector_v2 import ConnectorV2

from rllib_fair.accel.shared_data import bootstrap_step_added
from rllib_fair.fairness.counts import NUM_FIELDS
from rllib_fair.rllib import keys

_SCALAR_KEYS = (
    (keys.COL_GROUP, "group"),
    (keys.COL_DECISION, "decision"),
    (keys.COL_LABEL, "label"),
    (keys.COL_LABEL_OBSERVED, "label_observed"),
)


def fairness_columns_from_infos(
    infos: list[dict], n_groups: int, num_valid: int | None = None
) -> dict[str, np.ndarray]:
    """Builds the fairness columns for one episode chunk from its step infos.

    Args:
        infos: the infos of the chunk's transitions, ``infos[t]`` returned by
            ``env.step(a_t)`` (i.e. the episode's ``infos[1:]``).
        n_groups: number of groups (used when an info carries no counts).
        num_valid: number of leading rows that are real transitions; later rows
            (RLlib's artificial bootstrap step) get zeros / ``-1``. Defaults to all.

    Returns:
        ``{column name: array}`` with arrays of length ``len(infos)``.
    """
    n = len(infos)
    num_valid = n if num_valid is None else num_valid
    counts = np.zeros((n, NUM_FIELDS, n_groups), dtype=np.float32)
    scalars = {col: np.full(n, -1, dtype=np.int64) for col, _ in _SCALAR_KEYS}
    for t in range(num_valid):
        info = infos[t]
        c = info.get("fairness")
        if c is not None:
            counts[t] = c
        for col, key in _SCALAR_KEYS:
            v = info.get(key)
            if v is not None:
                scalars[col][t] = v
    valid = np.zeros(n, dtype=bool)
    valid[:num_valid] = True
    out = {keys.COL_COUNTS: counts, keys.COL_VALID: valid}
    out.update(scalars)
    return out


class AddFairnessColumns(ConnectorV2):
    """Adds :data:`rllib_fair.rllib.keys.COLUMNS` to the train batch, aligned with actions.

    Args:
        n_groups: number of groups; if None it is read from the first info that
            carries ``"fairness"`` counts.
        require_disparity: raise if an episode lacks the per-step disparity that the
            StepDisparity annotator attaches for algorithms that declare it.
    """

    def __init__(
        self,
        input_observation_space=None,
        input_action_space=None,
        *,
        n_groups=None,
        require_disparity: bool = False,
        **kw,
    ):
        super().__init__(input_observation_space, input_action_space, **kw)
        self._n_groups = n_groups
        self._require_disparity = require_disparity

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict[str, Any],
        episodes: list,
        explore: bool | None = None,
        shared_data: dict | None = None,
        **kwargs,
    ) -> Any:
        """Adds one pre-batched array per column and episode chunk (the fast path)."""
        # True when AddOneTsToEpisodesAndTruncate ran before us: the last step of every
        # chunk is then RLlib's artificial bootstrap step.
        phantom = bootstrap_step_added(shared_data)
        for sa_episode in self.single_agent_episode_iterator(
            episodes, agents_that_stepped_only=False
        ):
            n = len(sa_episode)
            all_infos = sa_episode.get_infos(slice(0, n + 1))
            infos = all_infos[1:]
            n_groups = self._n_groups or _infer_n_groups(infos)
            num_valid = n - 1 if phantom else n
            cols = fairness_columns_from_infos(infos, n_groups, num_valid=num_valid)
            # Only algorithms that regularise with it get the disparity in their infos.
            step_gaps = (
                [info.get(keys.INFO_DISPARITY) for info in all_infos[: num_valid + 1]]
                if keys.INFO_DISPARITY in all_infos[0]
                else [None]
            )
            if all(g is not None for g in step_gaps):
                cols.update(disparity_columns(step_gaps[1:], step_gaps[0], n))
            elif self._require_disparity:
                raise ValueError(
                    "AddFairnessColumns: the algorithm needs the per-step disparity but the "
                    "episode carries none; the FairnessMetricsCallback must run on the env "
                    "runners (keep it in callbacks_class)"
                )
            for column, values in cols.items():
                self.add_n_batch_items(
                    batch, column, items_to_add=values, num_items=n, single_agent_episode=sa_episode
                )
        return batch


def disparity_columns(gaps, start: float, n: int) -> dict[str, np.ndarray]:
    """The ``fair_disparity`` / ``fair_disparity_prev`` columns of one chunk.

    Args:
        gaps: Delta after each transition of the chunk (length ``len(infos) - 1``).
        start: Delta before the chunk's first transition.
        n: rows to produce; rows past ``len(gaps)`` (RLlib's bootstrap step) repeat the
            last value (they are loss-masked).

    Returns:
        ``{COL_DISPARITY: [n], COL_DISPARITY_PREV: [n]}`` as float32.
    """
    gaps = np.asarray(gaps, dtype=np.float32)
    cur = np.empty(n, dtype=np.float32)
    m = min(n, gaps.shape[0])
    cur[:m] = gaps[:m]
    cur[m:] = gaps[m - 1] if m else start
    prev = np.empty(n, dtype=np.float32)
    prev[0] = start
    prev[1:] = cur[:-1]
    return {keys.COL_DISPARITY: cur, keys.COL_DISPARITY_PREV: prev}


def _infer_n_groups(infos: list[dict]) -> int:
    for info in infos:
        c = info.get("fairness")
        if c is not None:
            return int(np.shape(c)[-1])
    raise ValueError(
        "AddFairnessColumns: no info of this episode carries 'fairness' counts; the "
        "environment must put a [NUM_FIELDS, n_groups] array into info['fairness'] "
        "(see rllib_fair.fairness.counts)"
    )
