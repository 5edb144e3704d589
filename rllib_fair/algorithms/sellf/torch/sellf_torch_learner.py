"""SELLF torch learner: regularised advantages, Renyi loss, IPW-trained predictor, policy store."""

from __future__ import annotations

import copy

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.annotations import override

from rllib_fair.algorithms.common.advantages import minmax
from rllib_fair.algorithms.ppo.torch.ppo_torch_learner import FairPPOTorchLearner
from rllib_fair.algorithms.sellf.connectors import (
    ACCEPT,
    PENALTY_DISPARITY,
    PI_ALL,
    RENYI_GROUPS,
    RENYI_SCALE,
    SELLFBatchStats,
    accept_probability,
    acceptance_under_all,
    disparity_penalty,
)
from rllib_fair.rllib.distributed import broadcast_parameters
from rllib_fair.rllib.state import component_wanted


def ipw_weights(pi_now: torch.Tensor, pi_all: torch.Tensor) -> torch.Tensor:
    """w(x, i) up to the per-group constant a^i / r^i (Eq. 3): (1 - pi_K) / pi_all."""
    return (1.0 - pi_now) / pi_all


def group_columns(groups: torch.Tensor) -> torch.Tensor:
    """``[N, n]`` float: column j is 1.0 on the rows of the j-th distinct group (sorted)."""
    return (groups.unsqueeze(-1) == torch.unique(groups)).float()


def self_normalized_bce(logits, labels, weights, groups=None, *, columns=None) -> torch.Tensor:
    """Eq. 7: sum_i E_{D_A^i}[w l(y, phi)] / w(i), self-normalised per group.

    Each group's weighted sum and weight total are sums against its column of
    :func:`group_columns` (``columns``, computed from ``groups`` when not given): one
    product for all groups, no host sync per group.
    """
    losses = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels, reduction="none")
    if columns is None:
        columns = group_columns(groups)
    return ((weights * losses) @ columns / (weights @ columns).clamp_min(1e-12)).sum()


class SELLFTorchLearner(FairPPOTorchLearner):
    """PPO torch learner with SELLF's losses and predictor training (Alg. 1)."""

    @override(FairPPOTorchLearner)
    def build(self) -> None:
        """Builds PPO's learner, SELLF's memory and policy store, and the batch-stats piece."""
        super().build()
        seed = self.config.seed if self.config.seed is not None else 0
        self._rng = np.random.default_rng(seed)
        self._memory: dict[str, np.ndarray] = {}
        self._store: list = []
        self._iteration = 0
        if self._learner_connector is not None:
            self._learner_connector.append(SELLFBatchStats(learner=self))
        for module_id in self.module.keys():  # DDP ignores phi: start from rank 0's copy
            broadcast_parameters(self.module[module_id].unwrapped().predictor)

    # ------------------------------------------------------------------ optimizers
    @override(FairPPOTorchLearner)
    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        """Policy/value optimizer without phi, and phi's own Adam (lr ``predictor_lr``)."""
        module = self.module[module_id]
        pred = list(module.predictor.parameters())
        pred_ids = {id(p) for p in pred}
        rest = [p for p in self.get_parameters(module) if id(p) not in pred_ids]
        self.register_optimizer(
            module_id=module_id,
            optimizer=self.make_adam(rest),
            params=rest,
            lr_or_lr_schedule=config.lr,
        )
        self.register_optimizer(
            module_id=module_id,
            optimizer_name="predictor",
            optimizer=self.make_adam(pred, lr=config.predictor_lr),
            params=pred,
        )

    # ------------------------------------------------------------------ memory/store
    def remember(self, obs: np.ndarray, group: np.ndarray, label: np.ndarray) -> None:
        """Appends accepted samples (features, group, observed label) to the memory M."""
        if len(obs) == 0:
            return
        new = {
            "obs": obs.astype(np.float32),
            "group": group.astype(np.int64),
            "label": label.astype(np.float32),
        }
        for k, v in new.items():
            old = self._memory.get(k)
            self._memory[k] = v if old is None else np.concatenate([old, v])
        cap = self.config.memory_size
        if len(self._memory["obs"]) > cap:
            self._memory = {k: v[-cap:] for k, v in self._memory.items()}

    def sample_policies(self) -> list:
        """Up to ``policy_samples`` stored policy snapshots, drawn without replacement."""
        n = min(self.config.policy_samples, len(self._store))
        if n == 0:
            return []
        idx = self._rng.choice(len(self._store), size=n, replace=False)
        return [self._store[i] for i in idx]

    def _snapshot(self, module) -> tuple:
        encoder = copy.deepcopy(module.encoder.actor_encoder).requires_grad_(False)
        return encoder, copy.deepcopy(module.pi).requires_grad_(False)

    # ------------------------------------------------------------------ losses
    @override(FairPPOTorchLearner)
    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        """PPO's loss on the regularised advantages plus beta_2 L^Renyi (Eq. 6).

        ``paper`` advantages arrive regularised from
        :class:`~rllib_fair.algorithms.sellf.connectors.SELLFBatchStats`; the
        ``minmax`` form is computed here, per minibatch. The per-group means of Eq. 6
        are sums against the ``sellf_renyi_groups`` columns divided by the group's row
        count (a group without rows adds nothing), so no minibatch waits on a host sync.
        The statistics that are only logged are computed where they reach the result
        (``last_value_log_due``).
        """
        mask = batch[Columns.LOSS_MASK].bool()
        if config.advantage_normalization == "minmax":  # the reference code
            adv = batch[Postprocessing.ADVANTAGES]
            penalty = disparity_penalty(batch[PENALTY_DISPARITY], config.omega)
            combined = minmax(adv, mask) + config.beta_1 * minmax(-penalty, mask)
            v = combined[mask]
            batch = dict(batch)
            batch[Postprocessing.ADVANTAGES] = (combined - v.mean()) / (v.std() + 1e-8)
        total = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        logits = fwd_out[Columns.ACTION_DIST_INPUTS]
        pi = torch.softmax(logits, dim=-1)[..., ACCEPT]
        per_row = batch[RENYI_SCALE] * (1.0 - pi) ** 2 / batch[PI_ALL]
        groups = batch[RENYI_GROUPS]  # [B, 2]: in the loss and in group 0 / group 1
        # Eq. 6: c^1 E[w^2 | Z=1] + c^0 E[w^2 | Z=0], each mean over the group's rows
        renyi = (per_row @ groups / groups.sum(dim=0).clamp_min(1.0)).sum()
        if self.last_value_log_due():
            self.metrics.log_value((module_id, "renyi_loss"), renyi.detach(), window=1)
            with torch.no_grad():
                penalty = disparity_penalty(batch[PENALTY_DISPARITY], config.omega)
                self.metrics.log_value(
                    (module_id, "disparity_penalty_mean"), penalty[mask].mean(), window=1
                )
        return total + config.beta_2 * renyi

    # ------------------------------------------------------------------ after update
    @override(FairPPOTorchLearner)
    def after_gradient_based_update(self, *, timesteps) -> None:
        """Trains phi on the memory (Eq. 7), then stores a snapshot of the policy."""
        super().after_gradient_based_update(timesteps=timesteps)
        for module_id in self.module.keys():
            module = self.module[module_id].unwrapped()
            self._train_predictor(module_id, module)
            self._store.append(self._snapshot(module))
            if len(self._store) > self.config.policy_store_size:
                self._store.pop(0)
        self._iteration += 1

    def _train_predictor(self, module_id, module) -> None:
        cfg = self.config
        if not self._memory:
            return
        opt = self.get_optimizer(module_id, "predictor")
        for group in opt.param_groups:  # App. E: exponential decay per iteration
            group["lr"] = cfg.predictor_lr * cfg.predictor_lr_decay**self._iteration
        device = next(module.predictor.parameters()).device
        obs = torch.from_numpy(self._memory["obs"]).to(device)
        groups = torch.from_numpy(self._memory["group"]).to(device)
        labels = torch.from_numpy(self._memory["label"]).to(device)
        with torch.no_grad():
            pi_now = accept_probability(module, None, obs)
            probs = [pi_now] + [accept_probability(module, s, obs) for s in self.sample_policies()]
            weights = ipw_weights(pi_now, acceptance_under_all(probs))
        n = len(obs)
        columns = group_columns(groups)  # the memory's groups, fixed during the steps
        loss = None
        for _ in range(cfg.predictor_steps):
            if cfg.predictor_batch_size and cfg.predictor_batch_size < n:
                idx = torch.from_numpy(
                    self._rng.choice(n, cfg.predictor_batch_size, replace=False)
                ).to(device)
                x, y, w, cols = obs[idx], labels[idx], weights[idx], columns[idx]
            else:
                x, y, w, cols = obs, labels, weights, columns
            opt.zero_grad(set_to_none=True)
            loss = self_normalized_bce(module.predict_logits(x), y, w, columns=cols)
            loss.backward()
            opt.step()
        # Same memory and seeded minibatches give equal copies on every learner; the
        # broadcast makes that exact even where kernels are not bit-reproducible (GPU).
        broadcast_parameters(module.predictor)
        if loss is not None:
            self.metrics.log_value((module_id, "predictor_loss"), loss.detach(), window=1)
        self.metrics.log_value((module_id, "memory_size"), float(n), window=1)
        self.metrics.log_value((module_id, "max_ipw_weight"), float(weights.max()), window=1)

    # ------------------------------------------------------------------ state
    @override(FairPPOTorchLearner)
    def get_state(self, components=None, *, not_components=None, **kwargs):
        """Learner state plus SELLF's memory, policy store and iteration counter.

        The ``"sellf"`` part (tens of MB once the memory and store fill) is only
        included when the caller asks for the whole learner state (checkpoints) or
        names it; weight syncs ask for ``rl_module`` only and so stay small.
        """
        state = super().get_state(components, not_components=not_components, **kwargs)
        if not component_wanted("sellf", components, not_components):
            return state
        state["sellf"] = {
            "memory": dict(self._memory),
            "store": [
                (
                    {k: v.cpu().numpy() for k, v in enc.state_dict().items()},
                    {k: v.cpu().numpy() for k, v in pi.state_dict().items()},
                )
                for enc, pi in self._store
            ],
            "iteration": self._iteration,
            "rng": self._rng.bit_generator.state,
        }
        return state

    @override(FairPPOTorchLearner)
    def set_state(self, state) -> None:
        """Restores the learner and SELLF's memory, policy store and counters."""
        super().set_state(state)
        sellf = state.get("sellf")
        if not sellf:
            return
        self._memory = dict(sellf["memory"])
        self._iteration = int(sellf["iteration"])
        self._rng.bit_generator.state = sellf["rng"]
        module = self.module[next(iter(self.module.keys()))].unwrapped()
        self._store = []
        for enc_state, pi_state in sellf["store"]:
            enc, pi = self._snapshot(module)
            enc.load_state_dict({k: torch.as_tensor(v) for k, v in enc_state.items()})
            pi.load_state_dict({k: torch.as_tensor(v) for k, v in pi_state.items()})
            self._store.append((enc, pi))
