"""SELLF's learner connector piece and the columns it adds to the train batch."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.core.models.base import ENCODER_OUT
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.annotations import override

from rllib_fair.rllib import keys
from rllib_fair.rllib.distributed import all_gather_rows, all_reduce_sum

PI_ALL = "sellf_pi_all"  # acceptance probability under all (sampled) policies, [B]
RENYI_SCALE = "sellf_renyi_scale"  # c^i a^i / (r^i)^2 of the row's group, [B]
PENALTY_DISPARITY = "sellf_disparity"  # |Delta-tilde| the advantage penalty uses, [B]
RENYI_GROUPS = "sellf_renyi_groups"  # 1.0 where the row is in the loss and in group g, [B, 2]
ACCEPT = 1  # action index of "accept" in the selective-label environments


def accept_probability(module, snapshot, obs: torch.Tensor) -> torch.Tensor:
    """P(accept | x) under the module's current policy or a stored actor snapshot."""
    batch = {Columns.OBS: obs}
    if snapshot is None:
        actor = getattr(module.encoder, "actor_encoder", None)  # the critic's is not needed
        if actor is None:  # one encoder shared by actor and critic
            logits = module.pi(module.encoder(batch)[ENCODER_OUT]["actor"])
        else:
            logits = module.pi(actor(batch)[ENCODER_OUT])
    else:
        encoder, pi = snapshot
        logits = pi(encoder(batch)[ENCODER_OUT])
    return torch.softmax(logits, dim=-1)[..., ACCEPT]


def acceptance_under_all(probs: list[torch.Tensor]) -> torch.Tensor:
    """1 - prod_k (1 - pi_k(accept | x)): accepted by at least one policy (Eq. 3)."""
    none = torch.ones_like(probs[0])
    for p in probs:
        none = none * (1.0 - p)
    return (1.0 - none).clamp_min(1e-6)


def disparity_penalty(disparity: torch.Tensor, omega: float) -> torch.Tensor:
    """max(|Delta-tilde| - omega / 2, 0) of Sec. 4 (``disparity`` is already |Delta-tilde|)."""
    return torch.clamp(disparity - omega / 2.0, min=0.0)


class SELLFBatchStats(ConnectorV2):
    """Adds SELLF's per-row columns to the train batch and feeds the sample memory.

    After GAE, on the whole train batch: the acceptance probability under the current
    policy and the sampled stored policies (``sellf_pi_all``), the per-group Renyi
    scale ``c^i a^i / (r^i)^2`` (``sellf_renyi_scale``), the rows of each group that
    enter the loss (``sellf_renyi_groups``, for the per-group means of Eq. 6), the
    disparity the advantage penalty uses (``sellf_disparity``: Delta-tilde after the
    decision, or one step later for qualification parity), and appends the accepted
    rows (observed labels only) to the learner's memory.

    With ``advantage_normalization: paper`` it also regularises the advantages here,
    A - beta_1 max(|Delta-tilde| - omega / 2, 0) (Sec. 4): a per-row expression of
    columns that do not change during the update, so computing it once for the train
    batch gives every minibatch the values it would compute itself, bit for bit.
    (The reference's ``minmax`` form normalises per minibatch and stays in the loss.)
    """

    def __init__(self, input_observation_space=None, input_action_space=None, *, learner, **kw):
        super().__init__(input_observation_space, input_action_space, **kw)
        self.learner = learner

    @override(ConnectorV2)
    def __call__(self, *, rl_module: Any, batch: dict, episodes: list, **kwargs):
        """Computes the columns for every module batch (no gradients)."""
        lrn = self.learner
        cfg = lrn.config
        notion = cfg.resolved_fairness_notion()
        for module_id, mb in batch.items():
            # DDP (num_learners >= 2) wraps the module: its methods live on the original.
            module = rl_module[module_id].unwrapped()
            obs = mb[Columns.OBS].float()
            valid = mb[keys.COL_VALID].bool()
            group = mb[keys.COL_GROUP]
            decision = mb[keys.COL_DECISION]
            label = mb[keys.COL_LABEL]
            with torch.no_grad():
                pi_now = accept_probability(module, None, obs)
                probs = [pi_now] + [
                    accept_probability(module, s, obs) for s in lrn.sample_policies()
                ]
                pi_all = acceptance_under_all(probs)
                phi = torch.sigmoid(module.predict_logits(obs))
            scale = torch.zeros_like(pi_now)
            # Per-group sums over the whole train batch (every learner's shard): rows,
            # sum of pi_all, of 1 - pi_now and of Y-tilde.
            sums = []
            for g in (0, 1):
                m = valid & (group == g)
                acc = decision[m] == 1
                y_tilde = torch.where(acc, label[m].clamp_min(0).float(), phi[m])
                sums += [
                    float(m.sum()),
                    float(pi_all[m].sum()),
                    float((1.0 - pi_now[m]).sum()),
                    float(y_tilde.sum()),
                ]
            sums = all_reduce_sum(np.array(sums), obs.device).reshape(2, 4)
            per_group = {}
            for g in (0, 1):
                n_g, pi_all_sum, reject_sum, y_sum = sums[g]
                if n_g == 0:
                    continue
                m = valid & (group == g)
                a_g = pi_all_sum / n_g  # a[1:K]^i: accepted by some policy so far
                r_g = max(reject_sum / n_g, 1e-6)  # r^i: rejection rate
                phi_tilde = 1.0
                if notion == "equal_opportunity":
                    phi_tilde = max(y_sum / n_g, 1e-6)
                per_group[g] = (m, a_g, r_g, phi_tilde)
            if cfg.renyi_form == "paper":
                for m, a_g, r_g, phi_tilde in per_group.values():
                    c_g = r_g / phi_tilde  # Eq. 6: c^i = r^i (r^i / phi-tilde^i for EO)
                    # E_{D_A}[w^2] = (a / r^2) E_pop[(1 - pi)^2 / pi_all] with w of Eq. 3
                    scale[m] = c_g * a_g / r_g**2
            else:  # reference: (c0 E0 + c1 E1) / (c0 + c1) with c = a / r (/ phi-tilde)
                cs = {
                    g: a_g / (r_g * phi_tilde) for g, (_, a_g, r_g, phi_tilde) in per_group.items()
                }
                norm = sum(cs.values())
                for g, (m, *_rest) in per_group.items():
                    scale[m] = cs[g] / norm
            disparity = mb[keys.COL_DISPARITY].abs()
            if notion == "qualification_parity":
                # Sec. 4: |Delta-tilde_{t+1}|; the last row of a chunk keeps its own.
                nxt = torch.roll(disparity, -1)
                same = torch.roll(valid, -1) & valid
                disparity = torch.where(same, nxt, disparity)
            mb[PI_ALL] = pi_all
            mb[RENYI_SCALE] = scale
            mb[PENALTY_DISPARITY] = disparity
            loss_mask = mb.get(Columns.LOSS_MASK)
            in_loss = torch.ones_like(valid) if loss_mask is None else loss_mask.bool()
            mb[RENYI_GROUPS] = torch.stack([in_loss & (group == g) for g in (0, 1)], dim=-1).to(
                pi_now.dtype
            )
            if cfg.advantage_normalization == "paper":
                # Sec. 4: A - beta_1 max(|Delta-tilde| - omega/2, 0), on RLlib's
                # standardised advantages (see the class docstring)
                penalty = disparity_penalty(disparity, cfg.omega)
                mb[Postprocessing.ADVANTAGES] = mb[Postprocessing.ADVANTAGES] - cfg.beta_1 * penalty
            accepted = (valid & (decision == 1) & (label >= 0)).cpu().numpy()
            # Every learner stores the accepted rows of every shard (same order), so the
            # predictor copies train on the same memory and stay equal.
            rows = all_gather_rows(
                {
                    "obs": obs.cpu().numpy()[accepted],
                    "group": group.cpu().numpy()[accepted],
                    "label": label.cpu().numpy()[accepted],
                },
                obs.device,
            )
            lrn.remember(rows["obs"], rows["group"], rows["label"])
        return batch
