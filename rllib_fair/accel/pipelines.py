"""Per-step overheads of RLlib's sampling pipelines removed through its extension points.

Profiling PPO at the papers' settings (one env, 2,048-step rollouts, ``[64, 64]`` tanh
network, one torch thread; ``benchmarks/vs_sb3.py --profile``) showed that RLlib 2.60's
``SingleAgentEnvRunner`` spends ~0.7 ms per env step, of which the environment itself
takes ~3 microseconds. The pipelines here remove two of the costs without changing a
single sampled value:

* **Per-connector timers.** ``ConnectorPipelineV2.__call__`` opens a
  ``MetricsLogger.log_time`` context for every connector piece on every call (13 pieces
  for PPO, each a snake-cased key, an EMA push and a NaN check: ~15 timer records per env
  step), and ``EnvToModulePipeline`` logs two episode-length sums per call.
  :class:`LeanEnvToModulePipeline` and :class:`LeanModuleToEnvPipeline` call the same
  pieces in the same order with the same arguments, without those records. The env
  runner's own sampling timers stay. ``connector_metrics=True`` (``.reporting()`` of
  every rllib-fair config) keeps RLlib's pipelines and their timers.
* **Per-episode data movement.** For one agent, a module without state, a flat Box
  observation and a Discrete action (every PPO-family env but Attention), RLlib's default
  env-to-module pipeline (five pieces) and module-to-env pipeline (six pieces) move each
  step's data through per-episode dicts keyed by episode id, nested
  ``tree.map_structure`` calls and per-item batching. :class:`FusedFlatObsToModule` and
  :class:`FusedDiscreteActionsToEnv` compute the same outputs directly, with RLlib's own
  helpers for every conversion (``batch``/``unbatch``, tensor/numpy conversion), so the
  module sees the same tensors and the env runner gets the same dict (keys, types,
  dtypes, values; ``tests/rllib/test_lean.py``).

:func:`accelerated_pipeline` builds the right subclass from the pieces RLlib's config put
together (new objects; the pieces themselves are RLlib's), and finds the pieces it reads
by their type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.connectors.common import (
    AddObservationsFromEpisodesToBatch,
    AddStatesFromEpisodesToBatch,
    AddTimeDimToBatchAndZeroPad,
    BatchIndividualItems,
    NumpyToTensor,
    TensorToNumpy,
)
from ray.rllib.connectors.env_to_module.env_to_module_pipeline import EnvToModulePipeline
from ray.rllib.connectors.module_to_env import (
    GetActions,
    ListifyDataForVectorEnv,
    NormalizeAndClipActions,
    RemoveSingleTsTimeRankFromBatch,
    UnBatchToIndividualItems,
)
from ray.rllib.connectors.module_to_env.module_to_env_pipeline import ModuleToEnvPipeline
from ray.rllib.core.columns import Columns
from ray.rllib.utils.annotations import override

#: RLlib's default env-to-module pieces, in order (``build_env_to_module_connector``).
DEFAULT_ENV_TO_MODULE = (
    AddObservationsFromEpisodesToBatch,
    AddTimeDimToBatchAndZeroPad,
    AddStatesFromEpisodesToBatch,
    BatchIndividualItems,
    NumpyToTensor,
)
#: RLlib's default module-to-env pieces, in order (``build_module_to_env_connector``).
DEFAULT_MODULE_TO_ENV = (
    GetActions,
    TensorToNumpy,
    UnBatchToIndividualItems,
    RemoveSingleTsTimeRankFromBatch,
    NormalizeAndClipActions,
    ListifyDataForVectorEnv,
)


def find_piece(pipeline, kind: type):
    """The first connector piece of ``pipeline`` that is a ``kind`` (a ValueError if none)."""
    for piece in pipeline.connectors:
        if isinstance(piece, kind):
            return piece
    raise ValueError(f"pipeline {type(pipeline).__name__} has no {kind.__name__} piece")


def tensor_settings(pipeline) -> tuple[bool, Any]:
    """``(pin_memory, device)`` of the pipeline's ``NumpyToTensor`` piece."""
    to_tensor = find_piece(pipeline, NumpyToTensor)
    return to_tensor._pin_memory, to_tensor._device


def copies_actions_for_env(pipeline) -> bool:
    """Whether the ``NormalizeAndClipActions`` piece writes ``actions_for_env``."""
    clip = find_piece(pipeline, NormalizeAndClipActions)
    return bool(clip.normalize_actions or clip.clip_actions)


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

    @override(EnvToModulePipeline)
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

    @override(ModuleToEnvPipeline)
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


def fusable(config, observation_space, action_space) -> bool:
    """Whether the fused pieces reproduce RLlib's default pipelines for these spaces."""
    import gymnasium as gym

    model_config = config.model_config or {}
    return (
        not config.is_multi_agent
        and not model_config.get("use_lstm")
        and not model_config.get("use_attention")
        and isinstance(observation_space, gym.spaces.Box)
        and isinstance(action_space, gym.spaces.Discrete)
    )


def _has_pieces(pipeline, kinds: tuple) -> bool:
    """Whether the pipeline is exactly these pieces, in this order (exact types)."""
    return [type(p) for p in pipeline.connectors] == list(kinds)


class FusedFlatObsToModule(LeanEnvToModulePipeline):
    """RLlib's default env-to-module pipeline for a flat Box observation, in one pass.

    Output: ``{"obs": tensor[n_episodes, ...]}`` on the module's device, the episodes'
    latest observations batched with RLlib's ``batch`` and converted with its
    ``convert_to_torch_tensor`` (pin-memory and device of the pipeline's
    ``NumpyToTensor``); ``shared_data["memorized_map_structure"]`` is the list of
    episode ids, as ``BatchIndividualItems`` leaves it for the module-to-env side.
    """

    @override(LeanEnvToModulePipeline)
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
        """The batch ``{"obs": tensor}`` for the module (see the class docs)."""
        from ray.rllib.utils.spaces.space_utils import batch as batch_fn
        from ray.rllib.utils.torch_utils import convert_to_torch_tensor

        if batch:  # something upstream already filled the batch: RLlib's pieces
            return super().__call__(
                rl_module=rl_module,
                batch=batch,
                episodes=episodes,
                explore=explore,
                shared_data=shared_data,
                metrics=metrics,
                **kwargs,
            )
        if shared_data is not None:
            shared_data["memorized_map_structure"] = [
                ep.multi_agent_episode_id or ep.id_ for ep in episodes
            ]
        obs = batch_fn(
            [ep.get_observations(-1) for ep in episodes],
            individual_items_already_have_batch_dim="auto",
        )
        pin_memory, device = tensor_settings(self)
        return {Columns.OBS: convert_to_torch_tensor(obs, pin_memory=pin_memory, device=device)}


class FusedDiscreteActionsToEnv(LeanModuleToEnvPipeline):
    """RLlib's default module-to-env pipeline for a Discrete action, in one pass.

    Samples the action from the module's action distribution inputs with RLlib's
    distribution classes (``GetActions``), converts every column to numpy and splits it
    into one item per episode (``TensorToNumpy``, ``UnBatchToIndividualItems``,
    ``ListifyDataForVectorEnv``: lists, the action columns batched again), and copies
    the actions to ``actions_for_env`` (``NormalizeAndClipActions``; unsquashing and
    clipping leave a Discrete action unchanged).
    """

    @override(LeanModuleToEnvPipeline)
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
        """The env runner's dict: actions, actions for the env, per-episode outputs."""
        actions, columns = self.actions_and_rows(
            rl_module=rl_module,
            batch=batch,
            episodes=episodes,
            explore=explore,
            shared_data=shared_data,
        )
        out = {c: list(r) if isinstance(r, np.ndarray) else r for c, r in columns.items()}
        out[Columns.ACTIONS] = actions
        if copies_actions_for_env(self):
            out[Columns.ACTIONS_FOR_ENV] = actions.copy()
        return out

    def actions_and_rows(
        self, *, rl_module, batch: dict, episodes, explore, shared_data
    ) -> tuple[np.ndarray, dict]:
        """The sampled actions (one array) and every other column as per-copy rows.

        Samples like ``GetActions`` (:func:`sample_categorical` where it applies);
        a batched tensor column becomes one numpy array whose rows are the copies'
        items (:func:`_reduced_numpy`), anything else RLlib's ``unbatch`` list. The
        env runner's lean loop (:mod:`rllib_fair.accel.env_runner`) calls this directly.
        """
        from ray.rllib.utils.spaces.space_utils import batch as batch_fn

        sampled = sample_categorical(rl_module, batch, explore)
        if not sampled:
            find_piece(self, GetActions)(
                rl_module=rl_module,
                batch=batch,
                episodes=episodes,
                explore=explore,
                shared_data=shared_data,
            )
        columns = {column: _rows(data) for column, data in batch.items()}
        actions = columns.pop(Columns.ACTIONS)
        if not isinstance(actions, np.ndarray):
            actions = batch_fn(actions)
        if sampled:
            check_sampled(columns[Columns.ACTION_LOGP])
        return actions, columns


def accelerated_pipeline(pipeline, config):
    """A lean (or, where it applies, fused) pipeline made of ``pipeline``'s pieces.

    Only RLlib's own pipeline classes are replaced; a user's pipeline subclass is
    returned unchanged. The fused classes are used where the pieces are exactly RLlib's
    default ones and :func:`fusable` holds for the pipeline's input spaces.
    """
    kind = type(pipeline)
    obs_space, act_space = pipeline.input_observation_space, pipeline.input_action_space
    fuse = fusable(config, obs_space, act_space)
    if kind is EnvToModulePipeline:
        fused = fuse and _has_pieces(pipeline, DEFAULT_ENV_TO_MODULE)
        cls = FusedFlatObsToModule if fused else LeanEnvToModulePipeline
    elif kind is ModuleToEnvPipeline:
        fused = fuse and _has_pieces(pipeline, DEFAULT_MODULE_TO_ENV)
        cls = FusedDiscreteActionsToEnv if fused else LeanModuleToEnvPipeline
    else:
        return pipeline
    return cls(
        input_observation_space=obs_space,
        input_action_space=act_space,
        connectors=list(pipeline.connectors),
    )


def _rows(data):
    """One module output column as per-copy items: RLlib's ``TensorToNumpy`` + unbatch.

    A batched tensor becomes one numpy array (float32 / int32, RLlib's
    ``convert_to_numpy``) whose rows are the items; anything else RLlib's ``unbatch``
    list.
    """
    import torch
    from ray.rllib.utils.numpy import convert_to_numpy
    from ray.rllib.utils.spaces.space_utils import unbatch as unbatch_fn

    if isinstance(data, torch.Tensor) and data.dim() > 0:
        return _reduced_numpy(data)
    return unbatch_fn(convert_to_numpy(data))


def _reduced_numpy(tensor):
    """RLlib's ``convert_to_numpy`` of one tensor of rank >= 1, without the walk.

    Float becomes float32 and ``int`` (int64) int32, as its ``reduce_type`` does; an
    array already of that type is the tensor's own memory (the module's outputs are
    fresh tensors on every call) instead of a copy with the same values.
    """
    arr = tensor.detach().cpu().numpy()
    kind = arr.dtype.kind
    if kind == "f":
        return arr.astype(np.float32, copy=False)
    if kind == "i" and np.issubdtype(arr.dtype, int):
        return arr.astype(np.int32)
    return arr


def sample_categorical(rl_module, batch: dict, explore) -> bool:
    """``GetActions`` for RLlib's ``TorchCategorical`` when exploring, without the objects.

    ``torch.distributions.Categorical(logits=x)`` normalises ``x - logsumexp(x)`` and
    takes ``softmax`` of that; its ``sample()`` is ``multinomial(probs, 1, True)``, which
    for one sample per row draws ``q ~ Exp(1)`` (``exponential_`` on the default
    generator) and returns ``argmax(probs / q)``; the log-probability is a ``gather``.
    The same ops here give the same actions (the same generator draws, the generator
    left in the same state) and the same log-probabilities; what is skipped is the
    distribution objects and ``multinomial``'s argument checks (``tests/rllib/test_env_runner.py``
    compares with ``torch.multinomial`` over many seeds and shapes). Its check that the
    probabilities are finite and non-negative is :func:`check_sampled` on the returned
    log-probabilities. Returns False (nothing done) in any other case.
    """
    import torch
    from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical

    if (
        not explore
        or Columns.ACTIONS in batch
        or Columns.ACTION_LOGP in batch
        or Columns.ACTION_DIST_INPUTS not in batch
        or rl_module.get_exploration_action_dist_cls() is not TorchCategorical
    ):
        return False
    logits = batch[Columns.ACTION_DIST_INPUTS]
    norm = logits - logits.logsumexp(dim=-1, keepdim=True)
    probs = torch.softmax(norm, dim=-1).reshape(-1, norm.shape[-1])
    draws = torch.empty_like(probs).exponential_(1)  # multinomial's one-sample path
    actions = (probs / draws).argmax(dim=-1).reshape(norm.shape[:-1])
    batch[Columns.ACTIONS] = actions
    batch[Columns.ACTION_LOGP] = norm.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    return True


def check_sampled(logp) -> None:
    """``torch.multinomial``'s check, on the sampled actions' log-probabilities.

    A row of logits with a NaN or ``+inf`` gives NaN probabilities (multinomial raises)
    and a non-finite log-probability; a valid row never samples a zero-probability
    action, so its log-probability is finite.
    """
    if not np.isfinite(logp).all():
        raise RuntimeError(
            "probability tensor contains either `inf`, `nan` or element < 0 "
            "(the module's action logits are not finite)"
        )
