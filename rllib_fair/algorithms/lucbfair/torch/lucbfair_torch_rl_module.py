"""L-UCBFair's RL module: acts from the numpy plan (no torch parameters)."""

from __future__ import annotations

import numpy as np
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.utils.annotations import override

from rllib_fair.algorithms.common.model_env import make_model_env
from rllib_fair.algorithms.lucbfair import lsvi
from rllib_fair.algorithms.lucbfair.core import act
from rllib_fair.algorithms.lucbfair.features import make_feature_map, region_grid


class LUCBFairRLModule(TorchRLModule):
    """Acts from L-UCBFair's numpy plan (no torch parameters).

    ``model_config`` keys (filled by ``LUCBFairConfig``): ``lucb_env``,
    ``lucb_env_config``, ``horizon``, ``feature_map``, ``feature_kwargs``,
    ``region_half_width``, ``q_clip``, ``target_mode``, ``seed``.
    """

    @override(RLModule)
    def setup(self):
        """Builds the feature map, the regions and an initial (empty) plan."""
        cfg = self.model_config
        self._model_env = make_model_env(
            cfg["lucb_env"], cfg.get("lucb_env_config"), user="L-UCBFair"
        )
        self.horizon = int(cfg["horizon"])
        self.features = make_feature_map(cfg["feature_map"], **dict(cfg.get("feature_kwargs", {})))
        self.centres, self.half_width = region_grid(float(cfg["region_half_width"]))
        self.q_clip = cfg["q_clip"]
        self.reference = cfg["target_mode"] == "reference_online"
        self.seed = int(cfg.get("seed") or 0)
        self.worker_index = 0
        plan = lsvi.Plan.empty(self.horizon, self.features.dim, float(cfg.get("ridge", 1.0)))
        self._state = {
            "w_r": plan.w_r,
            "w_g": plan.w_g,
            "lambda_inv": plan.lambda_inv,
            "dual": np.float64(0.0),
            "alpha": np.float64(1.0),
            "beta": np.float64(0.0),
            "episode": np.int64(0),
        }
        self._calls = 0

    def _rng(self) -> np.random.Generator:
        """Generator of one forward call: (seed, worker, episode index, call counter).

        The counter restarts at every ``set_state`` (once per plan), so a restored run
        draws exactly what the original drew. The reference mode reuses one draw for
        every step of an episode (its ``torch.manual_seed(k)``; docs/methods/yin2023.md, quirk 1).
        """
        ep = int(self._state["episode"])
        if self.reference:
            return np.random.default_rng([self.seed, self.worker_index, ep])
        self._calls += 1
        return np.random.default_rng([self.seed, self.worker_index, ep, self._calls])

    def act(self, obs: np.ndarray, explore: bool) -> np.ndarray:
        """Thresholds ``[B, 2]`` for observations ``[B, obs_dim]`` (time feature last)."""
        obs = np.asarray(obs, dtype=np.float64).reshape(len(obs), -1)
        q = self._model_env.q_from_observation(obs)
        h = np.rint(obs[:, -1] * self.horizon).astype(np.int64)
        return act(
            self._state,
            self.features,
            self.centres,
            self.half_width,
            q,
            h,
            self._rng(),
            explore=explore,
            q_clip=self.q_clip,
            reference_draws=self.reference,
        ).astype(np.float32)

    def _run(self, batch, explore: bool):
        import torch

        obs = batch[Columns.OBS]
        actions = self.act(obs.detach().cpu().numpy(), explore)
        return {Columns.ACTIONS: torch.as_tensor(actions, device=obs.device)}

    @override(RLModule)
    def _forward_exploration(self, batch, **kwargs):
        return self._run(batch, True)

    @override(RLModule)
    def _forward_inference(self, batch, **kwargs):
        return self._run(batch, False)

    @override(RLModule)
    def _forward(self, batch, **kwargs):
        return self._run(batch, False)

    @override(RLModule)
    def _forward_train(self, batch, **kwargs):
        raise NotImplementedError("L-UCBFair plans on the driver; its module never trains")

    @override(TorchRLModule)
    def get_state(self, *args, **kwargs) -> dict:
        """The plan, dual variable, alpha, beta and episode index (numpy arrays)."""
        return {k: np.array(v, copy=True) for k, v in self._state.items()}

    @override(TorchRLModule)
    def set_state(self, state) -> None:
        """Loads a plan (weight sync or checkpoint); restarts the draw counter."""
        if state:
            self._state = {k: np.asarray(v) for k, v in state.items()}
            self._calls = 0
