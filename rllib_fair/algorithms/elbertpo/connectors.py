"""ELBERT-PO's learner connector piece: per-stream GAE and the fairness-aware advantage."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.annotations import override
from ray.rllib.utils.numpy import convert_to_numpy
from ray.rllib.utils.postprocessing.value_predictions import compute_value_targets

from rllib_fair.fairness.notions import get_notion
from rllib_fair.fairness.objective import fair_advantage_weights
from rllib_fair.rllib import keys
from rllib_fair.rllib.distributed import all_reduce_sum

#: Column the connector adds: the value targets of the supply and demand streams, [B, 2 K M].
FAIR_VALUE_TARGETS = "fair_value_targets"


def _standardize(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(x - mean) / std over the masked rows (axis 0), like RLlib's GAE piece."""
    valid = x[mask]
    return (x - valid.mean(axis=0)) / np.maximum(valid.std(axis=0), 1e-4)


class ELBERTAdvantage(ConnectorV2):
    """Replaces the batch's advantages with ELBERT-PO's fairness-aware advantage.

    Runs after RLlib's GAE on the whole train batch (tensors): computes the supply and
    demand streams from the ``fair_counts`` column through the notion, their values with
    the module's ``fair_vf``, per-stream GAE (same gamma/lambda and episode boundaries as
    the reward), the batch estimates of eta^S and eta^D, and Eq. 5.
    """

    def __init__(self, input_observation_space=None, input_action_space=None, *, config, **kw):
        super().__init__(input_observation_space, input_action_space, **kw)
        self.notion = get_notion(config.resolved_fairness_notion())
        self.k, self.g = config.fairness_shape()
        self.gamma = config.gamma
        self.lambda_ = config.lambda_
        self.alpha = float(config.alpha)
        self.beta = float(config.beta) if config.use_soft_bias() else None
        self.demand_zeta = float(config.demand_zeta)
        self.demand_group = config.demand_group
        self.form = config.advantage_form
        self.standardize_combined = config.standardizes_fair_advantage()
        self.episode_length = config.resolved_episode_length()
        self.last_stats: dict[str, float] = {}

    @override(ConnectorV2)
    def __call__(self, *, rl_module: Any, batch: dict, episodes: list, metrics=None, **kwargs):
        """Computes and stores the fairness-aware advantages for every module batch."""
        for module_id, mb in batch.items():
            # DDP (num_learners >= 2) wraps the module: its methods live on the original.
            module = rl_module[module_id].unwrapped()
            if not hasattr(module, "compute_fair_values"):
                continue
            if module.is_stateful():
                raise ValueError(
                    "ELBERTPO: recurrent (stateful) modules are not supported; use a "
                    "feed-forward model_config"
                )
            with torch.no_grad():
                fair_v = convert_to_numpy(module.compute_fair_values(mb))
                values = convert_to_numpy(module.compute_values(mb))
            counts = convert_to_numpy(mb[keys.COL_COUNTS])
            terminateds = convert_to_numpy(mb[Columns.TERMINATEDS])
            truncateds = convert_to_numpy(mb[Columns.TRUNCATEDS])
            mask = (convert_to_numpy(mb[Columns.LOSS_MASK])).astype(bool)
            value_targets = convert_to_numpy(mb[Postprocessing.VALUE_TARGETS])
            supply, demand = self.notion.supply_demand(counts)  # [B, K, G]
            n = supply.shape[0]
            streams = np.concatenate(
                [supply.reshape(n, -1), demand.reshape(n, -1)], axis=1
            )  # [B, 2KG]: supply block, then demand block
            targets = np.stack(
                [
                    compute_value_targets(
                        values=fair_v[:, j],
                        rewards=streams[:, j],
                        terminateds=terminateds,
                        truncateds=truncateds,
                        gamma=self.gamma,
                        lambda_=self.lambda_,
                    )
                    for j in range(streams.shape[1])
                ],
                axis=1,
            )
            stream_adv = targets - fair_v
            adv = value_targets - values  # raw reward advantage (RLlib's is standardised)
            # eta estimate: mean per step x episode length (see the algorithm docstring),
            # over the whole train batch: summed over every learner's shard
            device = mb[Postprocessing.ADVANTAGES].device
            sums = all_reduce_sum(
                np.concatenate([streams[mask].sum(axis=0), [float(mask.sum())]]), device
            )
            steps = max(sums[-1], 1.0)
            eta = sums[:-1] / steps * self.episode_length
            kg = self.k * self.g
            eta_s = eta[:kg].reshape(self.k, self.g)
            eta_d = eta[kg:].reshape(self.k, self.g)
            w = fair_advantage_weights(
                eta_s,
                eta_d,
                beta=self.beta,
                alpha=max(self.alpha, 1e-12),
                demand_zeta=self.demand_zeta,
                demand_group=self.demand_group,
            )
            if self.form == "reference":
                adv = _standardize(adv, mask)
                stream_adv = _standardize(stream_adv, mask)
            weights = np.concatenate([w.supply.reshape(-1), w.demand.reshape(-1)])
            a_fair = adv - self.alpha * stream_adv @ weights  # Eq. 5 (Eq. 30 in weights)
            if self.standardize_combined:
                a_fair = _standardize(a_fair, mask)
            mb[Postprocessing.ADVANTAGES] = torch.as_tensor(
                a_fair, dtype=torch.float32, device=device
            )
            mb[FAIR_VALUE_TARGETS] = torch.as_tensor(targets, dtype=torch.float32, device=device)
            self.last_stats = {
                "elbert_h": w.h,
                "elbert_gap": float(w.gap.max()),
                **{f"elbert_rate_{j}": float(z) for j, z in enumerate(w.rates.reshape(-1))},
                **{f"elbert_eta_supply_{j}": float(x) for j, x in enumerate(eta_s.reshape(-1))},
                **{f"elbert_eta_demand_{j}": float(x) for j, x in enumerate(eta_d.reshape(-1))},
            }
        return batch
