"""TD3's RL module: a deterministic tanh actor, twin critics and their target copies.

Actions live in the normalised box [-1, 1]^d (``normalize_actions=True`` maps them to the
env's Box). Model config keys: ``fcnet_hiddens`` (default ``[400, 300]``, SB3's TD3
``MlpPolicy``), ``fcnet_activation`` (default ``"relu"``), and, passed in by
:class:`~rllib_fair.algorithms.td3.td3.TD3Config`, ``exploration_noise`` (sigma of the
Gaussian exploration noise) and ``random_warmup_steps`` (uniform random actions while the
sampler's lifetime step count ``t`` is below it).
"""

from __future__ import annotations

import contextlib
from typing import Any

import gymnasium as gym
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.utils import make_target_network
from ray.rllib.core.rl_module.apis import InferenceOnlyAPI, QNetAPI, TargetNetworkAPI
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.utils.annotations import override
from torch import nn

DEFAULT_HIDDENS = [400, 300]
_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "silu": nn.SiLU}


def mlp(n_in: int, hiddens: list[int], n_out: int, activation: str, out=None) -> nn.Sequential:
    """A plain MLP ``n_in -> hiddens -> n_out`` with an optional output activation."""
    act = _ACTIVATIONS[activation]
    layers: list[nn.Module] = []
    last = n_in
    for h in hiddens:
        layers += [nn.Linear(last, h), act()]
        last = h
    layers.append(nn.Linear(last, n_out))
    if out is not None:
        layers.append(out())
    return nn.Sequential(*layers)


def require_box_actions(action_space: Any) -> None:
    """TD3 acts in a continuous ``gymnasium.spaces.Box`` (one-line ValueError otherwise)."""
    if not isinstance(action_space, gym.spaces.Box):
        raise ValueError(
            f"action space: {type(action_space).__name__} is invalid; TD3 needs a "
            "continuous gymnasium.spaces.Box action space"
        )


class TD3TorchRLModule(TorchRLModule, TargetNetworkAPI, QNetAPI, InferenceOnlyAPI):
    """Deterministic actor ``pi`` (tanh), critics ``qf`` and ``qf_twin`` on concat(obs, act).

    The inference-only copy on the env runners holds only ``pi``.
    """

    @override(RLModule)
    def setup(self):
        """Builds the actor and, unless inference-only, the two critics."""
        require_box_actions(self.action_space)
        cfg = self.model_config or {}
        n_obs = int(self.observation_space.shape[0])
        n_act = int(self.action_space.shape[0])
        hiddens = list(cfg.get("fcnet_hiddens") or DEFAULT_HIDDENS)
        activation = cfg.get("fcnet_activation") or "relu"
        self.exploration_noise = float(cfg.get("exploration_noise", 0.1))
        self.random_warmup_steps = int(cfg.get("random_warmup_steps", 0))
        self.pi = mlp(n_obs, hiddens, n_act, activation, out=nn.Tanh)
        if not self.inference_only:
            self.qf = mlp(n_obs + n_act, hiddens, 1, activation)
            self.qf_twin = mlp(n_obs + n_act, hiddens, 1, activation)

    # ------------------------------------------------------------------ forwards
    @override(TorchRLModule)
    def _forward_inference(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        """Greedy action pi(s) in [-1, 1]."""
        return {Columns.ACTIONS: self.pi(batch[Columns.OBS])}

    @override(TorchRLModule)
    def _forward_exploration(self, batch: dict[str, Any], t: int = 0, **kwargs) -> dict[str, Any]:
        """clip(pi(s) + N(0, sigma^2), -1, 1); uniform on [-1, 1] during the warm-up.

        ``t`` is the sampler's estimate of the lifetime env steps (RLlib passes it); actions
        stay in the normalised space, so episodes store the same scale as the learner uses.
        """
        obs = batch[Columns.OBS]
        if t is not None and t < self.random_warmup_steps:
            shape = (obs.shape[0], self.action_space.shape[0])
            return {Columns.ACTIONS: torch.rand(shape, device=obs.device) * 2.0 - 1.0}
        a = self.pi(obs)
        if self.exploration_noise > 0:
            a = (a + self.exploration_noise * torch.randn_like(a)).clamp(-1.0, 1.0)
        return {Columns.ACTIONS: a}

    # TorchRLModule switches to eval mode and back around every sampling forward (two
    # recursive module walks per env step); these networks have no dropout or batch norm,
    # so the mode does not matter and only the no-grad context is kept.
    @override(TorchRLModule)
    def forward_inference(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        """Greedy forward without gradient tracking."""
        with torch.no_grad():
            return self._forward_inference(batch, **kwargs)

    @override(TorchRLModule)
    def forward_exploration(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        """Exploration forward without gradient tracking."""
        with torch.no_grad():
            return self._forward_exploration(batch, **kwargs)

    @override(TorchRLModule)
    def forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        """Like TorchRLModule's, but sets train mode only when needed (it recurses)."""
        if not self.training:
            self.train()
        return self._forward_train(batch, **kwargs)

    @override(RLModule)
    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        """Nothing: the learner calls the networks it needs in its loss."""
        return {}

    # ------------------------------------------------------------------ Q / targets
    def q_values(self, obs: torch.Tensor, actions: torch.Tensor) -> tuple:
        """(Q1, Q2) of the online critics, each of shape [B]."""
        x = torch.cat([obs, actions], -1)
        return self.qf(x).squeeze(-1), self.qf_twin(x).squeeze(-1)

    @override(QNetAPI)
    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        """QNetAPI: Q1 of (obs, actions)."""
        q, _ = self.q_values(batch[Columns.OBS], batch[Columns.ACTIONS])
        return {"qf_preds": q}

    @override(TargetNetworkAPI)
    def make_target_networks(self) -> None:
        """Target copies of actor and both critics."""
        self.target_pi = make_target_network(self.pi)
        self.target_qf = make_target_network(self.qf)
        self.target_qf_twin = make_target_network(self.qf_twin)

    @override(TargetNetworkAPI)
    def get_target_network_pairs(self) -> list[tuple[nn.Module, nn.Module]]:
        """(online, target) pairs for the Polyak update."""
        return [
            (self.pi, self.target_pi),
            (self.qf, self.target_qf),
            (self.qf_twin, self.target_qf_twin),
        ]

    @override(TargetNetworkAPI)
    def forward_target(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        """min(Q1_targ, Q2_targ)(obs, actions) under ``"q_target"``."""
        x = torch.cat([batch[Columns.OBS], batch[Columns.ACTIONS]], -1)
        q = torch.min(self.target_qf(x), self.target_qf_twin(x)).squeeze(-1)
        return {"q_target": q}

    def no_sync(self):
        """RLlib enters this with ``num_learners > 1``; the learner syncs gradients itself."""
        return contextlib.nullcontext()

    @override(InferenceOnlyAPI)
    def get_non_inference_attributes(self) -> list[str]:
        """Critics and all targets stay on the learner."""
        return ["qf", "qf_twin", "target_pi", "target_qf", "target_qf_twin"]
