"""The qualification-gain columns of the Lear & Zhang family (PPO-C, PPO-Cb, PPO-KL, F-PPO-L).

An env that declares ``QUALIFICATION_INFO = True`` (``fair/LendingDrift-v0``) reports, per
step, the individual decided on, its credit bin, its benefit and its qualification gain.
The metrics callback adds, on the env runner, the Monte Carlo gains-to-go of the same
individual (and F-PPO-L's change of the groups' histogram distance) to the step infos;
:class:`AddQualificationColumns` turns them into train-batch columns on the learner.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.utils.annotations import override

from rllib_fair.accel.shared_data import bootstrap_step_added
from rllib_fair.algorithms.common.annotators import (
    INFO_QUAL_PS,
    INFO_QUAL_Q,
    INFO_W1_DELTA,
    LongTermW1,
    QualificationReturns,
)
from rllib_fair.fairness import qualification as qual

COL_QUAL_Q = "fair_qual_q"  # float32 [B]: q_t
COL_QUAL_PS = "fair_qual_ps"  # float32 [B]: ps_t
COL_BENEFIT = "fair_benefit"  # float32 [B]: Delta(x_t, s_t)
COL_V_PI0_REF = "fair_v_pi0_ref"  # float32 [B]: h(x_t), the reference's V_pi0 heuristic
COL_CREDIT_BIN = "fair_credit_bin"  # int64 [B]: x_t (-1 on the bootstrap row)
COL_LONG_DELTA = "fair_long_delta"  # float32 [B]: F-PPO-L's W_t - W_{t-1}


class AddQualificationColumns(ConnectorV2):
    """Adds the per-step qualification columns to the train batch, aligned with actions.

    Row t reads ``infos[t + 1]`` (the info ``env.step(a_t)`` returned), like
    :class:`rllib_fair.rllib.connectors.AddFairnessColumns`; RLlib's artificial bootstrap
    row gets 0 (and -1 for the bin); it is loss-masked. ``q_t``/``ps_t`` (and F-PPO-L's
    ``dW_t``) are computed on the env runner by the metrics callback and travel in the
    step infos, so they stay with their steps when RLlib slices episodes across
    data-parallel learners.

    Args:
        config: the algorithm config (its ``ENV_RUNNER_ANNOTATORS`` say which info keys
            must be present: a QualificationReturns q_t and ps_t, a LongTermW1 dW_t).
    """

    def __init__(self, input_observation_space=None, input_action_space=None, *, config, **kw):
        super().__init__(input_observation_space, input_action_space, **kw)
        self._need_q = config.declares_annotator(QualificationReturns)
        self._need_w1 = config.declares_annotator(LongTermW1)
        self._h = qual.reference_pi0_heuristic().astype(np.float32)

    @override(ConnectorV2)
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
        """One pre-batched array per column and episode chunk."""
        phantom = bootstrap_step_added(shared_data)
        for sa_episode in self.single_agent_episode_iterator(
            episodes, agents_that_stepped_only=False
        ):
            n = len(sa_episode)
            infos = sa_episode.get_infos(slice(1, n + 1))
            num_valid = n - 1 if phantom else n
            cols = qualification_columns(
                infos, n, num_valid, self._h, need_q=self._need_q, need_w1=self._need_w1
            )
            for column, values in cols.items():
                self.add_n_batch_items(
                    batch, column, items_to_add=values, num_items=n, single_agent_episode=sa_episode
                )
        return batch


def qualification_columns(
    infos: list[dict],
    n: int,
    num_valid: int,
    h: np.ndarray,
    *,
    need_q: bool = True,
    need_w1: bool = False,
) -> dict[str, np.ndarray]:
    """The qualification columns of one chunk (``infos[t]`` = info of ``env.step(a_t)``).

    Raises:
        ValueError: if a required info key is missing (the metrics callback did not run
            on the env runners, or the env emits no qualification gains).
    """
    q = np.zeros(n, dtype=np.float32)
    ps = np.zeros(n, dtype=np.float32)
    ben = np.zeros(n, dtype=np.float32)
    v0 = np.zeros(n, dtype=np.float32)
    xb = np.full(n, -1, dtype=np.int64)
    dw = np.zeros(n, dtype=np.float32)
    for t in range(num_valid):
        info = infos[t]
        x = info.get("credit_bin", -1)
        if x is None or x < 0:
            continue
        xb[t] = x
        v0[t] = h[x]
        ben[t] = info.get("benefit", 0.0)
        if need_q:
            try:
                q[t] = info[INFO_QUAL_Q]
                ps[t] = info[INFO_QUAL_PS]
            except KeyError as err:
                raise ValueError(
                    "AddQualificationColumns: a step info lacks the Monte Carlo gains "
                    f"({err.args[0]!r}); keep the FairnessMetricsCallback in callbacks_class "
                    "and use an env that emits individual/qual_gain (fair/LendingDrift-v0)"
                ) from None
        if need_w1:
            if INFO_W1_DELTA not in info:
                raise ValueError(
                    "AddQualificationColumns: a step info lacks F-PPO-L's W1 change; keep the "
                    "FairnessMetricsCallback in callbacks_class"
                )
            dw[t] = info[INFO_W1_DELTA]
    out = {COL_BENEFIT: ben, COL_V_PI0_REF: v0, COL_CREDIT_BIN: xb}
    if need_q:
        out.update({COL_QUAL_Q: q, COL_QUAL_PS: ps})
    if need_w1:
        out[COL_LONG_DELTA] = dw
    return out


#: Info keys a qualification-gain env must emit (``fair/LendingDrift-v0`` does).
REQUIRED_INFO_KEYS = ("individual", "qual_gain", "qual_gain_ps", "benefit", "credit_bin")


def emits_qualification_info(env) -> bool:
    """True for a registered env id or an env class declaring ``QUALIFICATION_INFO``."""
    if isinstance(env, str):
        env_id = env.split(":", 1)[1] if ":" in env else env
        from rllib_fair.envs import ENV_IDS, env_class

        if env_id not in ENV_IDS:
            return False
        env = env_class(env_id)
    return bool(getattr(env, "QUALIFICATION_INFO", False))


def add_qualification_columns(config, pipeline, input_observation_space, input_action_space):
    """Inserts :class:`AddQualificationColumns` right after the fairness columns piece."""
    from rllib_fair.rllib.connectors import AddFairnessColumns

    pipeline.insert_after(
        AddFairnessColumns,
        AddQualificationColumns(input_observation_space, input_action_space, config=config),
    )
    return pipeline
