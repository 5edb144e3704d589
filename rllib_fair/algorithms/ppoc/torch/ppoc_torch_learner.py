"""PPO-C / PPO-Cb torch learner: the two new loss terms on the qualification-gain columns."""

from __future__ import annotations

import numpy as np
import torch
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.annotations import override

from rllib_fair.algorithms.common.connectors import (
    COL_BENEFIT,
    COL_CREDIT_BIN,
    COL_QUAL_PS,
    COL_QUAL_Q,
    COL_V_PI0_REF,
)
from rllib_fair.algorithms.common.torch.update_means import UpdateMeanMetrics
from rllib_fair.algorithms.ppo.torch.ppo_torch_learner import FairPPOTorchLearner
from rllib_fair.rllib import keys

# ----------------------------------------------------------------------------- loss terms


def _group_weights(in_group: torch.Tensor, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """``(w, n)``: ``w = in_group / n`` (all zeros for an empty group) and ``n = |group|``.

    Sums against ``w`` are group means without indexing, so no value has to travel from
    the module's device to the host.
    """
    w = in_group.to(dtype)
    n = w.sum()
    return w / n.clamp(min=1.0), n


def _group_mean(x: torch.Tensor, in_group: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` over ``in_group``; 0 for an empty group."""
    w, _ = _group_weights(in_group, x.dtype)
    return (x * w).sum()


def c_hat(
    logp: torch.Tensor,
    logp_old: torch.Tensor,
    q: torch.Tensor,
    groups: torch.Tensor,
    mask: torch.Tensor,
    *,
    normalization: str = "minibatch",
) -> tuple[torch.Tensor, torch.Tensor]:
    """The constraint estimator C_hat of Sec. 3.3 (Lear & Zhang 2025) for one minibatch.

    ``C_hat = mean_{t in B0}(q~_t r_t) - mean_{t in B1}(q~_t r_t)`` with
    ``r_t = exp(logp_t - logp_old_t)`` (unclipped, carries the gradient) and
    ``q~ = (q - mean_B q) / (std_B q + 1e-8)`` over the masked minibatch, both groups
    pooled, unbiased std (``normalization="minibatch"``, the reference), or raw q
    (``"none"``). ``q`` is data: no gradient flows through it. Computed with masked sums
    on the inputs' device (no host synchronisation).

    Returns:
        ``(C_hat, empty)``: ``empty`` is a boolean tensor, True (and ``C_hat`` a zero that
        keeps the graph) when the masked minibatch lacks a step of one group, where the
        reference gives NaN.
    """
    valid = mask & (groups >= 0)
    r = torch.exp(logp - logp_old)
    w0, n0 = _group_weights(valid & (groups == 0), r.dtype)
    w1, n1 = _group_weights(valid & (groups == 1), r.dtype)
    q = q.detach().to(r.dtype)
    if normalization == "minibatch":
        wv, nv = _group_weights(valid, r.dtype)
        centred = q - (q * wv).sum()
        var = ((centred * valid.to(r.dtype)) ** 2).sum() / (nv - 1.0).clamp(min=1.0)
        q = centred / (var.sqrt() + 1e-8)
    qr = q * r
    empty = (n0 == 0) | (n1 == 0)
    c = (qr * w0).sum() - (qr * w1).sum()  # the estimator of Sec. 3.3
    return torch.where(empty, (r * 0.0).sum(), c), empty


def lambda_hat(
    p: torch.Tensor,
    benefit: torch.Tensor,
    groups: torch.Tensor,
    mask: torch.Tensor,
    *,
    eps: float = 1e-6,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """The benefit-fairness measure Lambda of Sec. 3.5 (Lear & Zhang 2025) on a minibatch.

    ``Lambda_hat = sum_{t in B0} sum_{u in B1} w_t w_u eps |p_t - p_u| / (eps + |Delta_t -
    Delta_u|)`` with ``p = pi(d1 | o)`` (carries the gradient) and ``Delta`` data. With
    ``weights=None``, ``w = 1/|B0|`` and ``1/|B1|`` (the reference: the sum over all
    cross-group pairs divided by their number); otherwise each group's weights are
    renormalised to sum to 1. An empty group gives 0. Evaluated over all pairs of the
    minibatch with zero weight outside ``B0 x B1`` (no indexing, no host
    synchronisation).
    """
    valid = mask & (groups >= 0)
    in0, in1 = valid & (groups == 0), valid & (groups == 1)
    if weights is None:  # the reference: sum over all cross-group pairs / their number
        w0, _ = _group_weights(in0, p.dtype)
        w1, _ = _group_weights(in1, p.dtype)
    else:  # population weights, renormalised within each group
        w = weights.detach().to(p.dtype)
        w0, w1 = w * in0.to(p.dtype), w * in1.to(p.dtype)
        s0, s1 = w0.sum(), w1.sum()
        w0 = w0 / torch.where(s0 > 0, s0, torch.ones_like(s0))
        w1 = w1 / torch.where(s1 > 0, s1, torch.ones_like(s1))
    d = benefit.detach().to(p.dtype)
    num = torch.abs(p[:, None] - p[None, :])
    k = eps / (eps + torch.abs(d[:, None] - d[None, :]))  # data: no gradient
    return (num * (k * w0[:, None] * w1[None, :])).sum()  # Eq. 5's Lambda


def _standardize_masked(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    valid = x[mask]
    if valid.numel() < 2:
        return x - valid.mean() if valid.numel() else x
    return (x - valid.mean()) / (valid.std() + 1e-8)


# ----------------------------------------------------------------------------- learner


class PPOCTorchLearner(UpdateMeanMetrics, FairPPOTorchLearner):
    """PPO torch learner with PPO-C's ``beta_c C_hat^2`` and PPO-Cb's ``beta_lambda Lambda_hat``.

    Everything is computed per minibatch from the batch columns on the module's device,
    with no state kept between updates except the diagnostics' running sums: under
    data-parallel learners (DDP) each learner evaluates the terms on its own minibatch
    shard, like PPO's own per-minibatch terms, and DDP averages the gradients, so the
    learners stay identical.
    """

    @override(FairPPOTorchLearner)
    def build(self) -> None:
        """PPO's build plus the population weights of Lambda (``lambda_weighting``)."""
        super().build()
        self._pop_bin_probs = None
        if getattr(self.config, "lambda_weighting", "minibatch") == "population":
            from rllib_fair.envs.lending_drift import LendingDriftEnv

            env = LendingDriftEnv(**dict(self.config.env_config or {}))
            self._pop_bin_probs = np.asarray(env.initial_cluster_probs, dtype=np.float64)

    @override(PPOTorchLearner)
    def _update_module_kl_coeff(self, *, module_id, config, kl_loss) -> None:
        """Keeps ``kl_coeff`` fixed (the paper's 1.5) unless ``kl_coeff_adaptive``."""
        if getattr(config, "kl_coeff_adaptive", True):
            super()._update_module_kl_coeff(module_id=module_id, config=config, kl_loss=kl_loss)

    def _population_weights(self, batch, groups) -> torch.Tensor | None:
        """Per-step weight ``P(x_t | s_t) / n_B(s_t, x_t)`` so pairs weigh P(x|s+) P(x'|s-)."""
        if self._pop_bin_probs is None:
            return None
        x = batch[COL_CREDIT_BIN].long()
        n_bins = self._pop_bin_probs.shape[1]
        probs = torch.as_tensor(self._pop_bin_probs, dtype=torch.float32, device=x.device)
        ok = (x >= 0) & (groups >= 0)
        code = torch.where(ok, groups.long() * n_bins + x, torch.zeros_like(x))
        counts = torch.zeros(2 * n_bins, dtype=torch.float32, device=x.device)
        counts = counts.scatter_add(0, code, ok.to(torch.float32))
        w = probs.reshape(-1)[code] / counts[code].clamp(min=1.0)
        return torch.where(ok, w, torch.zeros_like(w))

    @override(FairPPOTorchLearner)
    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        """PPO-KL's loss (clip + fixed KL + vf) plus Eq. 2's and Eq. 5's terms."""
        mask = self.valid_mask(batch)
        if config.advantage_standardization == "minibatch":
            batch = dict(batch)
            batch[Postprocessing.ADVANTAGES] = _standardize_masked(
                batch[Postprocessing.ADVANTAGES], mask
            )
        total = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        extra = self._fairness_terms(module_id, config, batch, fwd_out, mask)
        # Both weights 0 (PPO-KL): PPO's loss tensor itself, bit for bit.
        return total if isinstance(extra, float) else total + extra

    def _fairness_terms(self, module_id, config, batch, fwd_out, mask) -> torch.Tensor | float:
        """Eq. 2's and Eq. 5's terms, and the ``ppoc/*`` diagnostics of every minibatch.

        A term whose weight is 0 is still evaluated (outside autograd) for the
        diagnostics: C_hat, C_hat^2, Lambda, DPE_step, IPE_step and whether a group was
        missing are added to the update's means on every minibatch, in RLlib's loop and in
        the lean one alike (:class:`UpdateMeanMetrics`).
        """
        module = self.module[module_id].unwrapped()
        logits = fwd_out[Columns.ACTION_DIST_INPUTS]
        groups = batch[keys.COL_GROUP]
        extra = 0.0
        with torch.set_grad_enabled(torch.is_grad_enabled() and bool(config.beta_c)):
            dist = module.get_train_action_dist_cls().from_logits(logits)
            c, empty = c_hat(
                dist.logp(batch[Columns.ACTIONS]),
                batch[Columns.ACTION_LOGP],
                batch[COL_QUAL_Q],
                groups,
                mask,
                normalization=config.q_normalization,
            )
        if config.beta_c:
            extra = extra + config.beta_c * c * c  # Eq. 2: + beta_C C_hat^2
        with torch.set_grad_enabled(torch.is_grad_enabled() and bool(config.beta_lambda)):
            p = torch.softmax(logits, dim=-1)[..., 1]  # pi(d1 | o_t)
            lam = lambda_hat(
                p,
                batch[COL_BENEFIT],
                groups,
                mask,
                eps=config.lambda_epsilon,
                weights=self._population_weights(batch, groups),
            )
        if config.beta_lambda:
            extra = extra + config.beta_lambda * lam  # Eq. 5: + beta_Lambda Lambda
        self._add_diagnostics(module_id, batch, mask, groups, p, c, lam, empty)
        return extra

    def _add_diagnostics(self, module_id, batch, mask, groups, p, c, lam, empty) -> None:
        with torch.no_grad():
            valid = mask & (groups >= 0)
            g0, g1 = valid & (groups == 0), valid & (groups == 1)
            p = p.detach()
            ben = batch[COL_BENEFIT].to(p.dtype)
            ips = batch[COL_QUAL_PS].to(p.dtype) - batch[COL_V_PI0_REF].to(p.dtype)
            zero = torch.zeros((), dtype=p.dtype, device=p.device)
            dpe = _group_mean(p * ben, g0) - _group_mean(p * ben, g1)  # DPE_step
            ipe = _group_mean(ips, g0) - _group_mean(ips, g1)  # IPE_step
            c = c.detach()
            self.add_update_means(
                module_id,
                {
                    "ppoc/c_hat": c,
                    "ppoc/constraint": c * c,
                    "ppoc/lambda": lam.detach(),
                    "ppoc/dpe_step": torch.where(empty, zero, dpe),
                    "ppoc/ipe_step": torch.where(empty, zero, ipe),
                    "ppoc/empty_group_minibatch": empty.to(p.dtype),
                },
            )
