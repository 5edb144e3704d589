"""TD3's loss on SAC's learner machinery (Fujimoto et al. 2018, Alg. 1).

Per gradient step (one minibatch):

* target policy smoothing: a' = clip(pi_targ(s') + clip(N(0, sigma_t^2), -c, c), -1, 1);
* clipped double-Q target: y = r + gamma^n (1 - terminated) min(Q1_targ, Q2_targ)(s', a');
* critic loss: MSE(Q1(s, a), y) + MSE(Q2(s, a), y);
* critic step (Adam); then, every ``policy_delay``-th step: actor loss -Q1(s, pi(s)).mean()
  with the *updated* critic (paper Alg. 1, SB3), built with the critic's ``requires_grad``
  off (no actor gradient reaches it), actor step, and the Polyak update
  theta_targ <- tau theta + (1 - tau) theta_targ of all three targets.

Actor step and Polyak update run inside :meth:`apply_gradients`, right after the critic
step, so they are correct when one ``update()`` call performs several gradient steps.
With ``num_learners >= 2`` the gradients are averaged over the learners explicitly
(all-reduce), so every learner takes the same step and the weights stay equal.

The optimizer steps go through RLlib's ``apply_gradients``; with the speed layer on, the
config's ``learner_class`` is this class behind
:class:`~rllib_fair.accel.td3_learner.FastTD3LearnerMixin` (``ACCEL_MIXIN``: consecutive
tensor minibatches, optimizer steps without per-parameter checks; the same updates).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import POLICY_LOSS_KEY, Learner
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import ALL_MODULES
from ray.rllib.utils.typing import ModuleID, ParamDict, TensorType

QF_LOSS_KEY = "qf_loss"
QF_TWIN_LOSS_KEY = "qf_twin_loss"
QF_MEAN_KEY = "qf_mean"
NUM_ACTOR_UPDATES = "num_actor_updates"
NUM_GRADIENT_STEPS = "num_gradient_steps"


def _adam(params) -> torch.optim.Optimizer:
    """Adam (torch defaults, as SB3); the fused kernel where the device supports it."""
    try:
        return torch.optim.Adam(params, fused=True)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.Adam(params)


class TD3TorchLearner(SACTorchLearner):
    """Clipped double-Q, target policy smoothing, delayed actor and delayed targets."""

    #: Where the speed layer's mixin for this learner lives (``module:Class``).
    ACCEL_MIXIN: ClassVar[str] = "rllib_fair.accel.td3_learner:FastTD3LearnerMixin"

    @override(SACTorchLearner)
    def build(self) -> None:
        """SAC's build (target networks, NEXT_OBS connector piece) plus step counters."""
        super().build()
        self._num_gradient_steps = 0
        self._logged_gradient_steps = 0
        self._actor_obs: dict[ModuleID, torch.Tensor] = {}
        # Losses of the last minibatch, logged once per update() call (window=1).
        self._last_logs: dict[ModuleID, dict] = {}
        self._actor_steps_since_log = 0
        self._polyak_lists: dict[ModuleID, tuple] = {}

    @override(SACTorchLearner)
    def configure_optimizers_for_module(self, module_id: ModuleID, config=None) -> None:
        """Adam for ``qf``, ``qf_twin`` (critic_lr) and ``policy`` (actor_lr); no alpha."""
        module = self.module[module_id].unwrapped()
        for name, net, lr in (
            ("qf", module.qf, config.critic_lr),
            ("qf_twin", module.qf_twin, config.critic_lr),
            ("policy", module.pi, config.actor_lr),
        ):
            params = self.get_parameters(net)
            self.register_optimizer(
                module_id=module_id,
                optimizer_name=name,
                optimizer=_adam(params),
                params=params,
                lr_or_lr_schedule=lr,
            )

    # ------------------------------------------------------------------ loss
    def is_actor_step(self, config) -> bool:
        """True when the current gradient step updates the actor (and the targets)."""
        return self._num_gradient_steps % config.policy_delay == config.policy_delay - 1

    def smoothing_noise(self, like: torch.Tensor, config) -> torch.Tensor:
        """clip(N(0, target_noise^2), -target_noise_clip, target_noise_clip), like ``like``."""
        noise = torch.randn(like.shape, device=like.device, dtype=like.dtype)
        clip = config.target_noise_clip
        return (noise * config.target_noise).clamp(-clip, clip)

    @override(SACTorchLearner)
    def compute_loss_for_module(
        self, *, module_id: ModuleID, config, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> TensorType:
        """Critic losses (their sum), and the actor loss on every ``policy_delay``-th step."""
        module = self.module[module_id].unwrapped()
        obs, act = batch[Columns.OBS], batch[Columns.ACTIONS]
        next_obs = batch[Columns.NEXT_OBS]
        rewards = batch[Columns.REWARDS].to(obs.dtype)
        not_done = 1.0 - batch[Columns.TERMINATEDS].to(obs.dtype)
        n_step = batch.get("n_step")
        discount = config.gamma if n_step is None else config.gamma ** n_step.to(obs.dtype)
        with torch.no_grad():
            next_act = module.target_pi(next_obs)
            next_act = (next_act + self.smoothing_noise(next_act, config)).clamp(-1.0, 1.0)
            q_next = module.forward_target({Columns.OBS: next_obs, Columns.ACTIONS: next_act})
            target = rewards + discount * not_done * q_next["q_target"]
        q1, q2 = module.q_values(obs, act)
        qf_loss = torch.mean((q1 - target) ** 2)
        qf_twin_loss = torch.mean((q2 - target) ** 2)
        total = qf_loss + qf_twin_loss
        logs = {QF_LOSS_KEY: qf_loss.detach(), QF_TWIN_LOSS_KEY: qf_twin_loss.detach()}
        if self.is_actor_step(config):
            # The actor loss is built after the critic step (apply_gradients), as in
            # Alg. 1 of the paper and SB3: it uses the updated Q1.
            self._actor_obs[module_id] = obs
            logs[QF_MEAN_KEY] = q1.detach().mean()
        self._last_logs.setdefault(module_id, {}).update(logs)
        return total

    def optimizer_params(self, optim) -> ParamDict:
        """``{param ref: param}`` of one registered optimizer, in registration order."""
        return {self.get_param_ref(p): p for group in optim.param_groups for p in group["params"]}

    @override(SACTorchLearner)
    def compute_gradients(self, loss_per_module: dict[ModuleID, TensorType], **kw) -> ParamDict:
        """One backward pass per module; optimizers without a loss get no gradients.

        The module's loss is the sum of its two critic losses; the three losses touch
        disjoint parameters (targets are computed without grad, the actor loss with the
        critic frozen), so one backward of the sum gives each loss's own gradients.
        Gradients are averaged over learners when there are several.
        """
        for module_id in self.module.keys():
            for _, optim in self.get_optimizers_for_module(module_id):
                optim.zero_grad(set_to_none=True)
        grads: dict = {}
        for module_id, loss in loss_per_module.items():
            if module_id == ALL_MODULES:
                continue
            loss.backward()
            for _, optim in self.get_optimizers_for_module(module_id):
                for pid, p in self.optimizer_params(optim).items():
                    if p.grad is not None:
                        grads[pid] = p.grad
        self._all_reduce_mean(grads)
        return grads

    @override(TorchLearner)
    def _make_modules_ddp_if_necessary(self) -> None:
        """No DDP wrapper: the learner averages gradients itself (see :meth:`_all_reduce_mean`).

        DDP expects every parameter in one backward per forward; TD3's critic and delayed
        actor steps are separate backward passes. Instead, rank 0's initial weights are
        broadcast once here and every gradient is all-reduced, so all learners hold equal
        weights (RLlib still calls ``module.no_sync()``, which the module provides).
        """
        dist = torch.distributed
        if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
            return
        for module_id in self.module.keys():
            module = self.module[module_id]
            if isinstance(module, torch.nn.Module):
                with torch.no_grad():
                    for tensor in module.state_dict().values():
                        dist.broadcast(tensor, src=0)

    @staticmethod
    def _all_reduce_mean(grads: ParamDict) -> None:
        """Averages the gradients over all learners (a no-op with one learner)."""
        dist = torch.distributed
        if not grads or not (dist.is_available() and dist.is_initialized()):
            return
        world = dist.get_world_size()
        if world < 2:
            return
        keys = sorted(grads, key=str)
        flat = torch.cat([grads[k].reshape(-1) for k in keys])
        dist.all_reduce(flat)
        flat /= world
        offset = 0
        for k in keys:
            g = grads[k]
            g.copy_(flat[offset : offset + g.numel()].view_as(g))
            offset += g.numel()

    @override(TorchLearner)
    def apply_gradients(self, gradients_dict: ParamDict) -> None:
        """Critic step; on actor steps then the actor step and the Polyak update.

        The actor loss -Q1(s, pi(s)).mean() uses the just-updated critic, whose
        ``requires_grad`` is off while the graph is built, so only the actor gets gradients.
        """
        self.step_optimizers(gradients_dict, critic=True)
        for module_id, obs in self._actor_obs.items():
            module = self.module[module_id].unwrapped()
            module.qf.requires_grad_(False)
            try:
                actor_loss = -module.qf(torch.cat([obs, module.pi(obs)], -1)).mean()
            finally:
                module.qf.requires_grad_(True)
            optim = self.get_optimizer(module_id, "policy")
            optim.zero_grad(set_to_none=True)
            actor_loss.backward()
            params = self.optimizer_params(optim)
            grads = {pid: p.grad for pid, p in params.items() if p.grad is not None}
            self._all_reduce_mean(grads)
            self.step_optimizers(self.postprocess_gradients(grads), critic=False)
            self._polyak(module_id, module)
            self._last_logs.setdefault(module_id, {})[POLICY_LOSS_KEY] = actor_loss.detach()
            self._actor_steps_since_log += 1
        self._actor_obs.clear()
        self._num_gradient_steps += 1

    def step_optimizers(self, gradients_dict: ParamDict, *, critic: bool) -> None:
        """Steps the critics' optimizers (``critic``) or the actor's with these gradients.

        Through RLlib's ``apply_gradients``, which steps every optimizer of the module:
        those of the other side hold no gradients then (the actor's were cleared by
        :meth:`compute_gradients`, the critics' are cleared here), so their steps change
        nothing.
        """
        if not critic:
            for module_id in self.module.keys():
                for name, optim in self.get_optimizers_for_module(module_id):
                    if name != "policy":
                        optim.zero_grad(set_to_none=True)
        super().apply_gradients(gradients_dict)

    def _polyak(self, module_id: ModuleID, module) -> None:
        """theta_targ <- tau theta + (1 - tau) theta_targ for all three target networks."""
        lists = self._polyak_lists.get(module_id)
        if lists is None:
            mains, targets = [], []
            for main, target in module.get_target_network_pairs():
                mains += list(main.parameters()) + list(main.buffers())
                targets += list(target.parameters()) + list(target.buffers())
            lists = self._polyak_lists[module_id] = (mains, targets)
        tau = self.config.get_config_for_module(module_id).tau
        with torch.no_grad():
            torch._foreach_lerp_(lists[1], lists[0], tau)

    @override(SACTorchLearner)
    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        """Learner's hook (lr schedules) without DQN's per-call target update."""
        Learner.after_gradient_based_update(self, timesteps=timesteps)
        for module_id, logs in self._last_logs.items():
            self.metrics.log_dict(logs, key=module_id, window=1)
        self._last_logs.clear()
        if self._actor_steps_since_log:
            self.metrics.log_value(
                (ALL_MODULES, NUM_ACTOR_UPDATES), self._actor_steps_since_log, reduce="lifetime_sum"
            )
            self._actor_steps_since_log = 0
        done = self._num_gradient_steps - self._logged_gradient_steps
        self._logged_gradient_steps = self._num_gradient_steps
        self.metrics.log_value((ALL_MODULES, NUM_GRADIENT_STEPS), done, reduce="lifetime_sum")

    # ------------------------------------------------------------------ state
    @override(SACTorchLearner)
    def get_state(self, *args, **kwargs) -> dict:
        """Learner state plus the gradient-step counter (the actor-delay phase)."""
        state = super().get_state(*args, **kwargs)
        state["td3_num_gradient_steps"] = self._num_gradient_steps
        return state

    @override(SACTorchLearner)
    def set_state(self, state: dict) -> None:
        """Restores the learner state and the gradient-step counter."""
        super().set_state(state)
        if "td3_num_gradient_steps" in state:
            self._num_gradient_steps = int(state["td3_num_gradient_steps"])
            self._logged_gradient_steps = self._num_gradient_steps
