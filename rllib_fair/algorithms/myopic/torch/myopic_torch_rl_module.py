"""The myopic baselines' RL module: weight-free, solves the one-step objective per observation."""

from __future__ import annotations

import numpy as np
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.utils.annotations import override

from rllib_fair.algorithms.common.model_env import make_model_env


class MyopicRLModule(TorchRLModule):
    """Weight-free module: solves the one-step objective for every observation.

    ``model_config`` keys (filled by ``MyopicConfig``): ``myopic_env``,
    ``myopic_env_config``, ``objective``, ``fair_lambda``, ``solver_grid``,
    ``solver_iters``, ``solver_step``. Actions are thresholds in env units (the config
    sets ``normalize_actions=False``).
    """

    @override(RLModule)
    def setup(self):
        """Rebuilds the env model and reads the solver settings."""
        cfg = self.model_config
        self._model_env = make_model_env(
            cfg["myopic_env"], cfg.get("myopic_env_config"), user="a myopic baseline"
        )
        self._objective = cfg["objective"]
        self._lam = float(cfg["fair_lambda"])
        self._solver = {
            "grid": int(cfg["solver_grid"]),
            "iters": int(cfg["solver_iters"]),
            "step": float(cfg["solver_step"]),
        }

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Thresholds ``[B, 2]`` (float32) for a batch of observations ``[B, obs_dim]``."""
        from rllib_fair.envs.replicator_myopic import myopic_action

        obs = np.asarray(obs, dtype=np.float64).reshape(len(obs), -1)
        out = np.empty((len(obs), 2), dtype=np.float32)
        for i, row in enumerate(obs):
            q = self._model_env.q_from_observation(row)
            out[i] = myopic_action(
                self._model_env, self._objective, lam=self._lam, q=q, **self._solver
            )
        return out

    @override(RLModule)
    def _forward(self, batch, **kwargs):
        import torch

        obs = batch[Columns.OBS]
        actions = self.act(obs.detach().cpu().numpy())
        return {Columns.ACTIONS: torch.as_tensor(actions, device=obs.device)}

    @override(RLModule)
    def _forward_train(self, batch, **kwargs):
        raise NotImplementedError("a myopic baseline never trains")

    @override(TorchRLModule)
    def get_state(self, *args, **kwargs) -> dict:
        """No weights: the state is empty (syncs and checkpoints carry nothing)."""
        return {}

    @override(TorchRLModule)
    def set_state(self, state) -> None:
        """Nothing to restore."""
