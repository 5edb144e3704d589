"""PPO-C / PPO-Cb learner: the per-individual gain columns and the two new loss terms."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing

from rllib_fair.algorithms.ppo.learner import FairPPOTorchLearner
from rllib_fair.fairness import qualification as qual
from rllib_fair.rllib import keys

#: Info keys written by the metrics callback on the env runner (see its
#: ``_qualification`` method): q_t and ps_t, the Monte Carlo gain-to-go of the same
#: individual under pi and under pi^PS (spec §2.3 items 2-3), and F-PPO-L's dW_t.
INFO_QUAL_Q = "fair_qual_q"
INFO_QUAL_PS = "fair_qual_ps"
INFO_W1_DELTA = "fair_w1_delta"

COL_QUAL_Q = "fair_qual_q"  # float32 [B]: q_t (spec §5.4)
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
        config: the algorithm config (``needs_qualification_returns`` /
            ``needs_long_term_w1`` say which info keys must be present).
    """

    def __init__(self, input_observation_space=None, input_action_space=None, *, config, **kw):
        super().__init__(input_observation_space, input_action_space, **kw)
        self._need_q = bool(getattr(config, "needs_qualification_returns", False))
        self._need_w1 = bool(getattr(config, "needs_long_term_w1", False))
        self._h = qual.reference_pi0_heuristic().astype(np.float32)

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
        phantom = bool((shared_data or {}).get("_added_loss_mask_for_valid_episode_ts"))
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
    """The constraint estimator C_hat of paper L178 for one minibatch.

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
    c = (qr * w0).sum() - (qr * w1).sum()  # paper L178
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
    """The benefit-fairness measure Lambda of paper L253 on a minibatch.

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
    return (num * (k * w0[:, None] * w1[None, :])).sum()  # paper L253 / Eq. 5's Lambda


def _standardize_masked(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    valid = x[mask]
    if valid.numel() < 2:
        return x - valid.mean() if valid.numel() else x
    return (x - valid.mean()) / (valid.std() + 1e-8)


# ----------------------------------------------------------------------------- learner


class UpdateMeanMetrics:
    """Learner mixin: statistics averaged over every minibatch of one update, logged once.

    :meth:`add_update_means` adds one minibatch's values (0-dim tensors on the module's
    device) to running sums kept on that device; after the update's minibatch loop
    (RLlib's or the lean one, :meth:`after_gradient_based_update`) the means are moved to
    the host in one transfer and logged with ``window=1``, so a result reports the mean
    over all of the update's minibatches (the reference logs the mean over the
    iteration's minibatches).
    """

    def add_update_means(self, module_id, values: dict[str, torch.Tensor]) -> None:
        """Adds one minibatch's ``{name: 0-dim tensor}`` to ``module_id``'s running sums."""
        sums = self.__dict__.setdefault("_update_means", {})
        names = tuple(values)
        stacked = torch.stack([v.detach().to(torch.float32) for v in values.values()])
        entry = sums.get(module_id)
        if entry is None or entry[0] != names:
            sums[module_id] = [names, stacked, 1]
        else:
            entry[1] = entry[1] + stacked
            entry[2] += 1

    def before_gradient_based_update(self, *, timesteps) -> None:
        """Drops sums left by loss evaluations outside an update, then the parent's hook."""
        self.__dict__["_update_means"] = {}
        super().before_gradient_based_update(timesteps=timesteps)

    def after_gradient_based_update(self, *, timesteps) -> None:
        """The parent's hook, then logs each module's means (one host transfer each)."""
        super().after_gradient_based_update(timesteps=timesteps)
        sums, self.__dict__["_update_means"] = self.__dict__.get("_update_means", {}), {}
        for module_id, (names, total, count) in sums.items():
            means = (total / count).tolist()
            self.metrics.log_dict(dict(zip(names, means, strict=True)), key=module_id, window=1)


class PPOCTorchLearner(UpdateMeanMetrics, FairPPOTorchLearner):
    """PPO torch learner with PPO-C's ``beta_c C_hat^2`` and PPO-Cb's ``beta_lambda Lambda_hat``.

    Everything is computed per minibatch from the batch columns on the module's device,
    with no state kept between updates except the diagnostics' running sums: under
    data-parallel learners (DDP) each learner evaluates the terms on its own minibatch
    shard, like PPO's own per-minibatch terms, and DDP averages the gradients, so the
    learners stay identical.
    """

    def build(self) -> None:
        """PPO's build plus the population weights of Lambda (``lambda_weighting``)."""
        super().build()
        self._pop_bin_probs = None
        if getattr(self.config, "lambda_weighting", "minibatch") == "population":
            from rllib_fair.envs.lending_drift import LendingDriftEnv

            env = LendingDriftEnv(**dict(self.config.env_config or {}))
            self._pop_bin_probs = np.asarray(env.initial_cluster_probs, dtype=np.float64)

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

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        """PPO-KL's loss (clip + fixed KL + vf) plus Eq. 2's and Eq. 5's terms."""
        mask = batch.get(Columns.LOSS_MASK)
        if mask is None:
            mask = torch.ones_like(batch[Postprocessing.ADVANTAGES], dtype=torch.bool)
        mask = mask.bool()
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
