"""SELLF learner: regularised advantages, Renyi loss, IPW-trained predictor, policy store."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.core.models.base import ENCODER_OUT
from ray.rllib.evaluation.postprocessing import Postprocessing

from rllib_fair.algorithms.ppo.learner import FairPPOTorchLearner
from rllib_fair.rllib import keys
from rllib_fair.rllib.distributed import all_gather_rows, all_reduce_sum, broadcast_parameters

PI_ALL = "sellf_pi_all"  # acceptance probability under all (sampled) policies, [B]
RENYI_SCALE = "sellf_renyi_scale"  # c^i a^i / (r^i)^2 of the row's group, [B]
PENALTY_DISPARITY = "sellf_disparity"  # |Delta-tilde| the advantage penalty uses, [B]
RENYI_GROUPS = "sellf_renyi_groups"  # 1.0 where the row is in the loss and in group g, [B, 2]
ACCEPT = 1  # action index of "accept" in the selective-label environments


def accept_probability(module, snapshot, obs: torch.Tensor) -> torch.Tensor:
    """P(accept | x) under the module's current policy or a stored actor snapshot."""
    batch = {Columns.OBS: obs}
    if snapshot is None:
        logits = module.pi(module.encoder(batch)[ENCODER_OUT]["actor"])
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


def ipw_weights(pi_now: torch.Tensor, pi_all: torch.Tensor) -> torch.Tensor:
    """w(x, i) up to the per-group constant a^i / r^i (Eq. 3): (1 - pi_K) / pi_all."""
    return (1.0 - pi_now) / pi_all


def disparity_penalty(disparity: torch.Tensor, omega: float) -> torch.Tensor:
    """max(|Delta-tilde| - omega / 2, 0) of Sec. 4 (``disparity`` is already |Delta-tilde|)."""
    return torch.clamp(disparity - omega / 2.0, min=0.0)


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


def _minmax(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    v = x[mask]
    return (x - v.min()) / (v.max() - v.min() + 1e-8)


class SELLFTorchLearner(FairPPOTorchLearner):
    """PPO torch learner with SELLF's losses and predictor training (Alg. 1)."""

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
    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        """Policy/value optimizer without phi, and phi's own Adam (lr ``predictor_lr``)."""
        module = self._module[module_id]
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
    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        """PPO's loss on the regularised advantages plus beta_2 L^Renyi (Eq. 6).

        ``paper`` advantages arrive regularised from :class:`SELLFBatchStats`; the
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
            combined = _minmax(adv, mask) + config.beta_1 * _minmax(-penalty, mask)
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
    def get_state(self, components=None, *, not_components=None, **kwargs):
        """Learner state plus SELLF's memory, policy store and iteration counter.

        The ``"sellf"`` part (tens of MB once the memory and store fill) is only
        included when the caller asks for the whole learner state (checkpoints) or
        names it; weight syncs ask for ``rl_module`` only and so stay small.
        """
        state = super().get_state(components, not_components=not_components, **kwargs)
        if not self._check_component("sellf", components, not_components):
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
