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


class SampleMemory:
    """SELLF's memory M: the most recent ``capacity`` accepted rows, oldest first.

    Rows live in preallocated arrays of twice the capacity. An append writes behind the
    last row; when the arrays' end is reached, the rows still kept move to the front in
    one copy of at most ``capacity`` rows, and at least ``capacity`` rows were appended
    since the previous move: appending costs amortised O(rows appended), never a copy
    of the whole memory per append. The kept rows are always one contiguous slice, in
    the order that concatenating everything appended and keeping its tail would give.
    """

    KEYS = ("obs", "group", "label")
    DTYPES = {"obs": np.float32, "group": np.int64, "label": np.float32}
    #: Distinct observations tracked at most; beyond, the memory stops tracking them.
    DISTINCT_LIMIT = 4096

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self._buf: dict[str, np.ndarray] = {}
        self._start = 0
        self._end = 0
        # the distinct observations appended so far (an env with a few feature
        # combinations, e.g. FICO lending's score bins, repeats them in every row) and,
        # per kept row, its index among them (in ``_buf["_uid"]``)
        self._distinct: dict[bytes, int] | None = {}
        self._distinct_rows: list[np.ndarray] = []

    def __len__(self) -> int:
        return self._end - self._start

    def append(self, obs: np.ndarray, group: np.ndarray, label: np.ndarray) -> None:
        """Adds rows at the end, dropping the oldest beyond the capacity."""
        new = {
            k: np.asarray(v).astype(self.DTYPES[k], copy=False)
            for k, v in zip(self.KEYS, (obs, group, label))
        }
        k, cap = len(new["obs"]), self.capacity
        if k == 0:
            return
        new["_uid"] = self._distinct_ids(new["obs"])
        if not self._buf:
            self._buf = {
                key: np.empty((2 * cap, *v.shape[1:]), dtype=v.dtype) for key, v in new.items()
            }
        if k >= cap:  # only the newest ``cap`` rows of this append survive
            for key, v in new.items():
                self._buf[key][:cap] = v[-cap:]
            self._start, self._end = 0, cap
            return
        if self._end + k > 2 * cap:  # move the rows that stay to the front
            keep = min(len(self), cap - k)
            for buf in self._buf.values():
                buf[:keep] = buf[self._end - keep : self._end]
            self._start, self._end = 0, keep
        for key, v in new.items():
            self._buf[key][self._end : self._end + k] = v
        self._end += k
        self._start = max(self._start, self._end - cap)

    def _distinct_ids(self, obs: np.ndarray) -> np.ndarray:
        """Each row's index among the distinct observations (-1 once untracked)."""
        ids = np.full(len(obs), -1, dtype=np.int64)
        table = self._distinct
        if table is None:
            return ids
        rows = self._distinct_rows
        for i, row in enumerate(obs):
            key = row.tobytes()
            j = table.get(key)
            if j is None:
                j = table[key] = len(rows)
                rows.append(row.copy())
            ids[i] = j
        if len(rows) > self.DISTINCT_LIMIT:  # not a few repeated rows: stop tracking
            self._distinct, self._distinct_rows = None, []
            ids[:] = -1
        return ids

    def distinct(self, idx: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """(the distinct observations, each kept row's index among them), or None.

        For the rows at positions ``idx`` (all kept rows when None). None when the
        memory stopped tracking them (more than :data:`DISTINCT_LIMIT` distinct rows
        were appended). The distinct rows may include some no longer kept.
        """
        if self._distinct is None or not len(self):
            return None
        ids = self._buf["_uid"][self._start : self._end]
        return np.stack(self._distinct_rows), ids if idx is None else ids[idx]

    def arrays(self) -> dict[str, np.ndarray]:
        """The kept rows, oldest first, as views (valid until the next append)."""
        return {k: self._buf[k][self._start : self._end] for k in self.KEYS if k in self._buf}

    def rows(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """Copies of the rows at positions ``idx`` (0 = oldest kept row)."""
        return {k: self._buf[k][self._start + idx] for k in self.KEYS if k in self._buf}

    def state(self) -> dict[str, np.ndarray]:
        """Copies of the kept rows (``{}`` when empty): the checkpoint form."""
        return {k: v.copy() for k, v in self.arrays().items()} if len(self) else {}

    def load(self, state: dict) -> None:
        """Replaces the rows with those of :meth:`state` (the newest ``capacity`` kept)."""
        self._buf, self._start, self._end = {}, 0, 0
        self._distinct, self._distinct_rows = {}, []
        if state:
            self.append(state["obs"], state["group"], state["label"])


class SELLFTorchLearner(FairPPOTorchLearner):
    """PPO torch learner with SELLF's losses and predictor training (Alg. 1)."""

    @override(FairPPOTorchLearner)
    def build(self) -> None:
        """Builds PPO's learner, SELLF's memory and policy store, and the batch-stats piece."""
        super().build()
        seed = self.config.seed if self.config.seed is not None else 0
        self._rng = np.random.default_rng(seed)
        self._memory = SampleMemory(self.config.memory_size)
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
        self._memory.append(obs, group, label)

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

    def _train_predictor(self, module_id, module):
        """Eq. 7 on the memory: ``predictor_steps`` Adam steps; returns the last loss.

        The IPW weights need the acceptance probability of every row a step reads
        under the current policy and the sampled snapshots. With minibatches
        (``predictor_batch_size`` below the memory size) all steps' row draws are made
        first (the same draws, in the same order, after the same policy draw) and the
        probabilities are computed for the rows they use only, so the cost of an
        update does not grow with the memory. A row's probabilities do not depend on
        the other rows of the forward pass, so the weights, losses and parameters are
        those of computing them on the whole memory and picking the rows (tested).
        ``max_ipw_weight`` is therefore the largest weight among the rows the steps
        used (every row without minibatches).
        """
        cfg = self.config
        n = len(self._memory)
        if n == 0:
            return None
        opt = self.get_optimizer(module_id, "predictor")
        for group in opt.param_groups:  # App. E: exponential decay per iteration
            group["lr"] = cfg.predictor_lr * cfg.predictor_lr_decay**self._iteration
        device = next(module.predictor.parameters()).device
        snapshots = self.sample_policies()
        steps = cfg.predictor_steps
        if cfg.predictor_batch_size and cfg.predictor_batch_size < n:
            draws = [
                self._rng.choice(n, cfg.predictor_batch_size, replace=False) for _ in range(steps)
            ]
            used = np.unique(np.concatenate(draws))  # sorted memory rows the steps read
            rows = self._memory.rows(used)
            distinct = self._memory.distinct(used)
            picks = [torch.from_numpy(np.searchsorted(used, d)).to(device) for d in draws]
        else:
            rows, picks = self._memory.arrays(), [None] * steps
            distinct = self._memory.distinct()
        obs = torch.from_numpy(rows["obs"]).to(device)
        groups = torch.from_numpy(rows["group"]).to(device)
        labels = torch.from_numpy(rows["label"]).to(device)
        with torch.no_grad():
            if distinct is not None and len(distinct[0]) < len(obs):
                # the policies' forwards on each distinct observation once (a row's
                # probability does not depend on the other rows of a forward pass),
                # then every row takes its observation's values (tested bit for bit)
                x = torch.from_numpy(distinct[0]).to(device)
                ids = torch.from_numpy(distinct[1]).to(device)
                pi_x = accept_probability(module, None, x)
                probs = [pi_x] + [accept_probability(module, s, x) for s in snapshots]
                pi_now, pi_all = pi_x[ids], acceptance_under_all(probs)[ids]
            else:
                pi_now = accept_probability(module, None, obs)
                probs = [pi_now] + [accept_probability(module, s, obs) for s in snapshots]
                pi_all = acceptance_under_all(probs)
            weights = ipw_weights(pi_now, pi_all)
        # One column per group among these rows; a group of the memory that no step
        # reads would only add a column of zeros, i.e. exactly 0 to loss and gradient.
        columns = group_columns(groups)
        loss = None
        for pick in picks:
            if pick is None:
                x, y, w, cols = obs, labels, weights, columns
            else:
                x, y, w, cols = obs[pick], labels[pick], weights[pick], columns[pick]
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
        return loss

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
            "memory": self._memory.state(),
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
        self._memory.load(sellf["memory"])
        self._iteration = int(sellf["iteration"])
        self._rng.bit_generator.state = sellf["rng"]
        module = self.module[next(iter(self.module.keys()))].unwrapped()
        self._store = []
        for enc_state, pi_state in sellf["store"]:
            enc, pi = self._snapshot(module)
            enc.load_state_dict({k: torch.as_tensor(v) for k, v in enc_state.items()})
            pi.load_state_dict({k: torch.as_tensor(v) for k, v in pi_state.items()})
            self._store.append((enc, pi))
