"""RLlib's PPO loss for Categorical actions without distribution objects (same tensors).

:func:`lean_ppo_loss` is what the PPO family's learner computes with the speed layer on
(:class:`~rllib_fair.accel.learner.LeanLearnerMixin` sets ``accel_loss``); every value
comes from the same torch ops in the same order as RLlib 2.60's
``PPOTorchLearner.compute_loss_for_module``. :func:`minibatch_masked_mean` is RLlib's
masked mean with the valid rows found once per minibatch (ELBERT-PO's extra value loss
shares it).
"""

from __future__ import annotations

import torch
from ray.rllib.algorithms.ppo.ppo import (
    LEARNER_RESULTS_KL_KEY,
    LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY,
    LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY,
)
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical
from ray.rllib.core.learner.learner import ENTROPY_KEY, POLICY_LOSS_KEY, VF_LOSS_KEY
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.numpy import SMALL_NUMBER


def lean_loss_applies(module) -> bool:
    """Whether :func:`lean_ppo_loss` computes ``module``'s loss.

    It does where RLlib's Categorical is both the train and the exploration
    distribution (Discrete actions).
    """
    return (
        module.get_train_action_dist_cls() is TorchCategorical
        and module.get_exploration_action_dist_cls() is TorchCategorical
    )


def lean_ppo_loss(learner, *, module_id, config, batch, fwd_out, module) -> torch.Tensor:
    """RLlib 2.60's ``PPOTorchLearner.compute_loss_for_module`` without distribution objects.

    For Categorical actions (:func:`lean_loss_applies`).
    The same tensors come out bit for bit (loss, gradients, logged metrics;
    ``tests/rllib/test_lean_learner.py``), because each value is made by the same torch
    ops in the same order as RLlib's path:

    * ``Categorical(logits=l)`` normalises ``l - l.logsumexp(-1)``; ``log_prob`` gathers
      the taken action's entry; ``entropy`` is ``-(clamp(l, finfo.min) * softmax(l))``
      summed; the KL is torch's ``_kl_categorical_categorical`` (its two in-place masked
      assignments written as ``torch.where``: same values, same zero gradient there).
    * RLlib's masked mean ``sum(x[mask]) / sum(mask)`` keeps that form; the row indices
      are found once per minibatch instead of once per term, and where every row is
      valid (most minibatches) ``x[mask]`` is ``x`` itself.
    * The old policy's distribution is only built when the KL term is used (RLlib builds
      it on every minibatch); the statistics that are only logged (policy loss, value
      loss, explained variance, entropy) are computed outside autograd, and inside the
      lean minibatch loop on its last minibatch only (the one whose ``window=1`` records
      reach the result; :meth:`~rllib_fair.accel.learner.LeanLearnerMixin.last_value_log_due`).

    What RLlib's path would differ in is only its errors: it raises in the distribution
    constructor for logits of fewer than one dimension, this path raises in ``gather``.
    """
    masked_mean = minibatch_masked_mean(learner, batch.get(Columns.LOSS_MASK))

    # The autograd graph is built in RLlib's order (gather, KL, softmax, clamp): a tensor
    # used several times sums its gradients in the order its uses were created.
    logits = fwd_out[Columns.ACTION_DIST_INPUTS]
    log_p = logits - logits.logsumexp(dim=-1, keepdim=True)
    actions = batch[Columns.ACTIONS].long().unsqueeze(-1)
    logp_ratio = torch.exp(log_p.gather(-1, actions).squeeze(-1) - batch[Columns.ACTION_LOGP])

    softmax = torch.nn.functional.softmax
    if config.use_kl_loss:
        old = batch[Columns.ACTION_DIST_INPUTS]
        p_log = old - old.logsumexp(dim=-1, keepdim=True)
        p_probs = softmax(p_log, dim=-1)
        t = p_probs * (p_log - log_p)  # KL(old || new), torch's Categorical KL
        probs = softmax(log_p, dim=-1)
        t = torch.where(probs == 0, torch.inf, t)
        t = torch.where(p_probs == 0, 0.0, t)
        mean_kl_loss = masked_mean(t.sum(-1))
        clamped = torch.clamp(log_p, min=torch.finfo(log_p.dtype).min)
    else:
        mean_kl_loss = torch.tensor(0.0, device=logp_ratio.device)
        clamped = torch.clamp(log_p, min=torch.finfo(log_p.dtype).min)
        probs = softmax(log_p, dim=-1)
    curr_entropy = -(clamped * probs).sum(-1)

    advantages = batch[Postprocessing.ADVANTAGES]
    surrogate_loss = torch.min(
        advantages * logp_ratio,
        advantages * torch.clamp(logp_ratio, 1 - config.clip_param, 1 + config.clip_param),
    )

    value_targets = batch[Postprocessing.VALUE_TARGETS]
    if config.use_critic:
        value_fn_out = module.compute_values(batch, embeddings=fwd_out.get(Columns.EMBEDDINGS))
        vf_loss = torch.pow(value_fn_out - value_targets, 2.0)
        vf_loss_clipped = torch.clamp(vf_loss, 0, config.vf_clip_param)
    else:
        z = torch.tensor(0.0, device=surrogate_loss.device)
        value_fn_out = vf_loss = vf_loss_clipped = z

    entropy_coeff = learner.entropy_coeff_schedulers_per_module[module_id].get_current_value()
    total_loss = masked_mean(
        -surrogate_loss + config.vf_loss_coeff * vf_loss_clipped - (entropy_coeff * curr_entropy)
    )
    if config.use_kl_loss:
        total_loss = total_loss + learner.curr_kl_coeffs_per_module[module_id] * mean_kl_loss

    if not learner.last_value_log_due():
        return total_loss  # only-logged statistics: see LeanLearnerMixin.last_value_log_due
    with torch.no_grad():
        if config.use_critic:
            mean_vf_loss = masked_mean(vf_loss_clipped)
            mean_vf_unclipped_loss = masked_mean(vf_loss)
        else:
            mean_vf_loss = mean_vf_unclipped_loss = value_fn_out
        learner.metrics.log_dict(
            {
                POLICY_LOSS_KEY: -masked_mean(surrogate_loss),
                VF_LOSS_KEY: mean_vf_loss,
                LEARNER_RESULTS_VF_LOSS_UNCLIPPED_KEY: mean_vf_unclipped_loss,
                LEARNER_RESULTS_VF_EXPLAINED_VAR_KEY: _explained_variance(
                    value_targets, value_fn_out
                ),
                ENTROPY_KEY: masked_mean(curr_entropy),
                LEARNER_RESULTS_KL_KEY: mean_kl_loss.detach(),
            },
            key=module_id,
            window=1,
        )
    return total_loss


def minibatch_masked_mean(learner, mask):
    """RLlib's masked mean ``sum(x[mask]) / sum(mask)`` for this minibatch's loss mask.

    The valid rows are found once per minibatch (the function is kept on ``learner``
    for the mask it was made for, so the PPO loss and a subclass's extra terms share
    it); where every row is valid (most minibatches) ``x[mask]`` is ``x`` itself, and
    ``x.index_select(0, rows)`` otherwise (the same rows in the same order). No mask:
    ``torch.mean``.
    """
    cached = getattr(learner, "_masked_mean_cache", None)
    if cached is not None and cached[0] is mask:
        return cached[1]
    if mask is None:

        def masked_mean(x):
            return torch.mean(x)
    else:
        num_valid = torch.sum(mask)
        if mask.dim() != 1 or mask.dtype != torch.bool:

            def masked_mean(x):
                return torch.sum(x[mask]) / num_valid
        elif bool(num_valid == mask.shape[0]):

            def masked_mean(x):
                return torch.sum(x) / num_valid
        else:
            rows = torch.nonzero(mask).squeeze(-1)

            def masked_mean(x):  # x[mask] == x.index_select(0, rows), in the same order
                return torch.sum(x.index_select(0, rows)) / num_valid

    learner._masked_mean_cache = (mask, masked_mean)
    return masked_mean


def _explained_variance(y: torch.Tensor, pred: torch.Tensor) -> torch.Tensor:
    """RLlib's ``explained_variance`` (the same ops): max(-1, 1 - Var[y - pred] / Var[y])."""
    squeezed_y = y.squeeze()
    y_var = torch.var(squeezed_y, dim=0)
    diff_var = torch.var(squeezed_y - pred.squeeze(), dim=0)
    min_ = torch.tensor([-1.0], device=pred.device)
    return torch.max(min_, 1 - (diff_var / (y_var + SMALL_NUMBER)))[0]
