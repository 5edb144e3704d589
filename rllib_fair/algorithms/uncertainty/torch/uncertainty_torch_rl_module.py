"""The lending strategies' RL module: decides one quarter per observation from numpy state."""

from __future__ import annotations

import numpy as np
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.utils.annotations import override

from rllib_fair.uncertainty import (
    DesignTransform,
    LogisticModel,
    decide,
    delta_method_halfwidth,
    eligible_mask,
)


def design_for(
    feature_names, use_group_feature: bool, q_encoding: str, group_encoding: str
) -> DesignTransform:
    """The bank's design on the env's already standardised features (mean 0, scale 1).

    The env's ``A`` column is the raw group label 0/1; ``group_encoding`` codes it as the
    core does, so the design equals :func:`~rllib_fair.uncertainty.run_quarters`'.
    """
    k = len(feature_names)
    return DesignTransform(
        tuple(feature_names),
        (0.0,) * k,
        (1.0,) * k,
        use_group_feature=use_group_feature,
        q_encoding=q_encoding,
        intercept=True,
        group_encoding=group_encoding,
    )


class UncertaintyRLModule(TorchRLModule):
    """Weight-free module deciding one quarter per observation with numpy state.

    ``model_config`` keys (filled by ``UncertaintyConfig``): ``strategy``,
    ``proportion_certain``, ``delta``, ``rejection_threshold``, ``ci_z``, ``fill_budget``,
    ``exploration_sizing``, ``use_group_feature``, ``q_encoding``, ``group_encoding``,
    ``feature_names``.
    """

    @override(RLModule)
    def setup(self):
        """Reads the strategy settings; the model starts at ``theta = 0`` (unfitted)."""
        cfg = self.model_config
        self._cfg = dict(cfg)
        self._design = design_for(
            cfg["feature_names"], cfg["use_group_feature"], cfg["q_encoding"], cfg["group_encoding"]
        )
        self._theta = np.zeros(self._design.n_columns)
        self._fisher: np.ndarray | None = None
        self._rng = np.random.default_rng(0)
        self._fitted = False

    # ---------------------------------------------------------------- decisions
    def decide_quarter(self, obs: dict[str, np.ndarray], explore: bool) -> np.ndarray:
        """Grants ``[N_max]`` (int8) for one observation (zeros on the base quarter)."""
        mask = np.asarray(obs["mask"]).reshape(-1)
        out = np.zeros(mask.shape[0], dtype=np.int8)
        n = int(mask.sum())
        labels = np.asarray(obs["labels"]).reshape(-1)
        if n == 0 or labels[0] >= 0:  # base quarter (or terminal obs): nothing to decide
            return out
        cfg = self._cfg
        x = self._design(np.asarray(obs["features"], dtype=np.float64)[:n])
        p = LogisticModel(x.shape[1], theta=self._theta).predict_proba(x)
        budget = int(round(float(np.asarray(obs["budget"]).reshape(-1)[0])))
        strategy = cfg["strategy"] if explore else "naive"
        halfwidth = None
        if strategy == "uncertainty_aware" and self._fisher is not None:
            halfwidth = delta_method_halfwidth(self._theta, x, z=cfg["ci_z"], fisher=self._fisher)
        dec = decide(
            strategy,
            p,
            budget,
            eligible_mask(p, cfg["rejection_threshold"]),
            self._rng,
            halfwidth=halfwidth,
            proportion_certain=cfg["proportion_certain"],
            delta=cfg["delta"],
            fill_budget=cfg["fill_budget"],
            exploration_sizing=cfg["exploration_sizing"],
        )
        out[:n] = dec.granted
        return out

    def _act(self, batch, explore: bool):
        import torch

        obs = batch[Columns.OBS]
        np_obs = {k: v.detach().cpu().numpy() for k, v in obs.items()}
        rows = np_obs["mask"].shape[0]
        actions = np.stack(
            [
                self.decide_quarter({k: v[b] for k, v in np_obs.items()}, explore)
                for b in range(rows)
            ]
        )
        return {Columns.ACTIONS: torch.as_tensor(actions, device=obs["mask"].device)}

    @override(RLModule)
    def _forward_exploration(self, batch, **kwargs):
        return self._act(batch, explore=True)

    @override(RLModule)
    def _forward_inference(self, batch, **kwargs):
        return self._act(batch, explore=False)

    @override(RLModule)
    def _forward(self, batch, **kwargs):
        return self._act(batch, explore=True)

    @override(RLModule)
    def _forward_train(self, batch, **kwargs):
        raise NotImplementedError("the lending strategies never train a torch module")

    # ---------------------------------------------------------------- state
    @override(TorchRLModule)
    def get_state(self, *args, **kwargs) -> dict:
        """The bank's numpy state: ``theta``, ``fisher``, ``rng_state``, ``fitted``."""
        return {
            "theta": self._theta.copy(),
            "fisher": None if self._fisher is None else self._fisher.copy(),
            "rng_state": self._rng.bit_generator.state,
            "fitted": self._fitted,
        }

    @override(TorchRLModule)
    def set_state(self, state) -> None:
        """Restores :meth:`get_state`'s dict (missing keys are left unchanged)."""
        if not state:
            return
        if "theta" in state:
            self._theta = np.asarray(state["theta"], dtype=np.float64).copy()
        if "fisher" in state:
            f = state["fisher"]
            self._fisher = None if f is None else np.asarray(f, dtype=np.float64).copy()
        if state.get("rng_state") is not None:
            self._rng = np.random.default_rng()
            self._rng.bit_generator.state = state["rng_state"]
        if "fitted" in state:
            self._fitted = bool(state["fitted"])
