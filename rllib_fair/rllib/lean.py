"""Per-step overheads of RLlib's sampling path removed through its extension points.

Profiling PPO at the papers' settings (one env, 2,048-step rollouts, ``[64, 64]`` tanh
network, one torch thread; ``benchmarks/vs_sb3.py --profile``) showed that RLlib 2.60's
``SingleAgentEnvRunner`` spends ~0.7 ms per env step, of which the environment itself
takes ~3 microseconds. Two of the costs are pure bookkeeping and are removed here,
without changing a single sampled value:

* **Per-connector timers.** ``ConnectorPipelineV2.__call__`` opens a
  ``MetricsLogger.log_time`` context for every connector piece on every call (13 pieces
  for PPO, each a snake-cased key, an EMA push and a NaN check: ~15 timer records per env
  step), and ``EnvToModulePipeline`` logs two episode-length sums per call.
  :class:`LeanEnvToModulePipeline` and :class:`LeanModuleToEnvPipeline` call the same
  pieces in the same order with the same arguments, without those records. The env
  runner's own sampling timers stay. ``connector_metrics=True`` (``.reporting()`` of
  every rllib-fair config) restores RLlib's pipelines and their timers.
* **Train/eval toggles.** ``TorchRLModule.forward_exploration`` and
  ``forward_inference`` call ``self.eval()`` (and ``GetActions`` again) on every step,
  and ``forward_train`` calls ``self.train()`` on every minibatch; each walks every
  submodule and sets an attribute on each. :class:`CachedTrainModeMixin` skips the walk
  when the module is already in the requested mode.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.connectors.env_to_module.env_to_module_pipeline import EnvToModulePipeline
from ray.rllib.connectors.module_to_env.module_to_env_pipeline import ModuleToEnvPipeline


def _run_pieces(pipeline, batch: dict, kwargs: dict) -> dict:
    """Calls each connector piece on the previous one's output (RLlib's order and args)."""
    for connector in pipeline.connectors:
        batch = connector(batch=batch, data=batch, **kwargs)
        if not isinstance(batch, dict):
            raise ValueError(
                f"connector {type(connector).__name__} returned {type(batch).__name__}, "
                "not the batch dict"
            )
    return batch


class LeanEnvToModulePipeline(EnvToModulePipeline):
    """RLlib's env-to-module pipeline without the per-piece timers (see module docs)."""

    def __call__(
        self,
        *,
        rl_module,
        batch: dict | None = None,
        episodes,
        explore: bool,
        shared_data: dict | None = None,
        metrics=None,
        **kwargs: Any,
    ) -> dict:
        """Runs the pieces; ``metrics`` is passed on to them but not written here."""
        kwargs.update(
            rl_module=rl_module,
            episodes=episodes,
            explore=explore,
            shared_data=shared_data if shared_data is not None else {},
            metrics=metrics,
        )
        return _run_pieces(self, batch if batch is not None else {}, kwargs)


class LeanModuleToEnvPipeline(ModuleToEnvPipeline):
    """RLlib's module-to-env pipeline without the per-piece timers (see module docs)."""

    def __call__(
        self,
        *,
        rl_module,
        batch: dict,
        episodes,
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics=None,
        **kwargs: Any,
    ) -> dict:
        """Runs the pieces; ``metrics`` is passed on to them but not written here."""
        kwargs.update(
            rl_module=rl_module,
            episodes=episodes,
            explore=explore,
            shared_data=shared_data if shared_data is not None else {},
            metrics=metrics,
        )
        return _run_pieces(self, batch, kwargs)


def make_lean(pipeline):
    """The same pipeline object, its class switched to the lean subclass (if it has one).

    Only RLlib's exact pipeline classes are switched; a user's own pipeline subclass is
    returned unchanged.
    """
    if type(pipeline) is EnvToModulePipeline:
        pipeline.__class__ = LeanEnvToModulePipeline
    elif type(pipeline) is ModuleToEnvPipeline:
        pipeline.__class__ = LeanModuleToEnvPipeline
    return pipeline


class CachedTrainModeMixin:
    """``nn.Module.train(mode)`` that returns at once when the mode is already set.

    The mode is remembered by the module itself: calling ``train``/``eval`` on a
    submodule directly bypasses the cache (nothing in RLlib or this package does).
    """

    _cached_train_mode: bool | None = None

    def train(self, mode: bool = True):
        """Sets train/eval mode recursively unless this module is already in ``mode``."""
        mode = bool(mode)
        if self._cached_train_mode is mode:
            return self
        out = super().train(mode)
        self._cached_train_mode = mode
        return out
