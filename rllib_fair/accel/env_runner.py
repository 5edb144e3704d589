"""RLlib's single-agent sampling loop without its per-step bookkeeping (same episodes).

Profiling RLlib 2.60's ``SingleAgentEnvRunner._sample`` with 8 vectorised copies of
``fair/Lending-v0`` (``benchmarks/vector_env.py``; 0.14-0.17 ms per env step before this
runner) showed most of a vector step outside the environment and the network: per step,
the connector pipelines move every column through per-episode lists and back; per
copy, ``on_episode_step`` is dispatched through ``make_callback`` (three list and dict
builds each) even when no callback defines it; two ``MetricsLogger.log_time`` records
and one Prometheus counter update are written per step; the observations are unbatched
into per-copy rows and stacked again for the next forward.

:meth:`LeanSamplingMixin._sample` runs the same steps in the same order where the
env runner's pipelines are the fused ones of :mod:`rllib_fair.accel.pipelines` (one agent,
no state, flat Box observation, Discrete action, RLlib's default connector pieces) and
``num_timesteps`` is given:

* the module's forward, then the action sampling of ``FusedDiscreteActionsToEnv``
  (the same torch ops on the same generator: the same actions and log-probabilities);
* the env step through the same wrappers, its results added to each copy's episode
  with ``add_env_reset`` / ``add_env_step`` exactly as RLlib does (the same values,
  types and extra model outputs) on steps where a copy starts or ends an episode or a
  callback defines ``on_episode_step``; on the other steps (almost all of them) every
  copy steps on, and the step's arrays are held and added to the episodes together
  (:meth:`LeanSamplingMixin._add_pending`: the same items in the same order, the vector
  infos converted as gymnasium's ``DictInfoToList`` does) before any callback or cut
  sees the episodes. At 8 copies of ``fair/Lending-v0`` this took 0.080-0.100 ms per
  env step to 0.069-0.078 (same-session runs);
* the next forward's input is the step's observation batch itself, which is what the
  fused env-to-module pipeline stacks from the episodes' last observations;
* ``on_episode_created`` / ``_start`` / ``_end`` are called where RLlib calls them;
  ``on_episode_step`` only where a callback object defines it (``RLlibCallback``'s own
  method does nothing) or ``callbacks_on_episode_step`` is set;
* the inference and env-step timers get one record per ``sample()`` call (the mean per
  step, same keys, same EMA reduction) and the Prometheus step counter one increment of
  the call's step count (the same total).

Everything else (episode cutting, numpy conversion, metrics, env-step failures) is
RLlib's code. ``tests/rllib/test_env_runner.py`` checks that this loop and RLlib's
return equal episodes (every observation, action, reward, info, extra model output,
flag and length) for the same seed, with one and with eight copies, across sample
calls and episode ends. :class:`LeanSamplingMixin` goes in front of
:class:`~rllib_fair.rllib.env_runner.FairEnvRunner` (one seeded stream of episodes) in the
config's ``env_runner_cls`` where the speed layer's sampling part is on
(``config.accel(sampling=...)``); elsewhere that runner samples with RLlib's loop.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import torch
from gymnasium.wrappers.vector import DictInfoToList
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.columns import Columns
from ray.rllib.env.env_errors import StepFailedRecreateEnvError
from ray.rllib.env.env_runner import ENV_STEP_FAILURE, NUM_ENV_STEP_FAILURES_LIFETIME
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    ENV_STEP_TIMER,
    RLMODULE_INFERENCE_TIMER,
    WEIGHTS_SEQ_NO,
)
from ray.rllib.utils.torch_utils import convert_to_torch_tensor

from rllib_fair.accel.pipelines import (
    FusedDiscreteActionsToEnv,
    FusedFlatObsToModule,
    copies_actions_for_env,
    tensor_settings,
)

logger = logging.getLogger(__name__)


def _infos_to_list(wrapper, infos: dict, n: int) -> list[dict]:
    """Gymnasium's ``DictInfoToList`` conversion of a vector info dict, for flat infos.

    Each copy's dict gets, key by key in the vector dict's order, ``value[i]`` where the
    ``_key`` mask is true (every copy where there is no mask), exactly as
    ``DictInfoToList._convert_info_to_list`` does; nested dicts and anything it would
    assert on go to that method itself.
    """
    if not isinstance(infos, dict):
        raise TypeError(
            "vector env infos: expected a dict (gymnasium's vector API), got "
            f"{type(infos).__name__}"
        )
    out = [{} for _ in range(n)]
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get("_" + key)
        if (
            not isinstance(value, np.ndarray)
            or len(value) != n
            or (mask is not None and len(mask) != n)
        ):
            return wrapper._convert_info_to_list(infos)
        if mask is None:
            for info, item in zip(out, value, strict=True):
                info[key] = item
        else:
            for info, item, has in zip(out, value, mask, strict=True):
                if has:
                    info[key] = item
    return out


def _check_vector_infos(infos) -> None:
    """Raises inside the env step (RLlib's failure handling) where infos are no dict."""
    if not isinstance(infos, dict):
        raise TypeError(
            "vector env infos: expected a dict (gymnasium's vector API), got "
            f"{type(infos).__name__}"
        )


def _pending_infos(step_infos: list, wrapper, vector_env, n: int) -> list[list[dict]]:
    """Per copy, its info dict of every held step, as :func:`_infos_to_list` gives them.

    Where every step's vector dict has the same keys, each value an array with one row
    per copy and each mask all true, key by key the steps' arrays are stacked and row
    ``i`` of each gives copy ``i``'s items (``value[i]``: the same values and types);
    otherwise each step goes through :func:`_infos_to_list` (or, without
    ``DictInfoToList``, is already a list).
    """
    if vector_env is not None:
        first = step_infos[0]
        keys = list(first)
        simple = all(list(infos) == keys for infos in step_infos) and all(
            isinstance(infos[key], np.ndarray) and len(infos[key]) == n
            for infos in step_infos
            for key in keys
        )
        if simple:
            masks_true = all(
                np.stack([infos[key] for infos in step_infos]).all()
                for key in keys
                if key.startswith("_") and key[1:] in first
            )
            if masks_true:
                names = [key for key in keys if not key.startswith("_")]
                if not names:
                    return [[{} for _ in step_infos] for _ in range(n)]
                columns = [np.stack([infos[key] for infos in step_infos], axis=1) for key in names]
                return [
                    [dict(zip(names, row, strict=True)) for row in zip(*rows, strict=True)]
                    for rows in zip(*columns, strict=True)
                ]
        step_infos = [_infos_to_list(wrapper, infos, n) for infos in step_infos]
    return [[infos[i] for infos in step_infos] for i in range(n)]


def _extend(buffer, items: list) -> None:
    """``InfiniteLookbackBuffer.append`` of each item (a list extend while not finalized)."""
    if buffer.finalized:
        for item in items:
            buffer.append(item)
    else:
        buffer.data.extend(items)


def _extend_or_create(buffers: dict, key: str, items: list) -> None:
    """``add_env_step``'s extra-model-output update for ``items`` (creates the buffer)."""
    buffer = buffers.get(key)
    if buffer is None:
        buffers[key] = InfiniteLookbackBuffer(items)
    else:
        _extend(buffer, items)


def _defines(callback, name: str) -> bool:
    """Whether ``callback`` overrides ``RLlibCallback.<name>`` (the base does nothing)."""
    return getattr(type(callback), name, None) is not getattr(RLlibCallback, name)


class LeanSamplingMixin:
    """Put in front of a ``SingleAgentEnvRunner`` subclass: ``_sample`` runs the lean loop.

    Only ever part of a class made by :func:`rllib_fair.accel.classes.accelerated_class`
    (``FairEnvRunner.ACCEL_MIXIN``), i.e. when the config's speed layer and its sampling
    part are on. Where the loop does not apply (episode sampling, random actions,
    pipelines other than the fused ones) RLlib's ``_sample`` runs.
    """

    def _lean_loop_applies(self, num_timesteps, random_actions) -> bool:
        """Whether :meth:`_sample` runs the lean loop (else RLlib's) for this call."""
        return (
            num_timesteps is not None
            and not random_actions
            and self.module is not None
            and type(self._env_to_module) is FusedFlatObsToModule
            and type(self._module_to_env) is FusedDiscreteActionsToEnv
        )

    @override(SingleAgentEnvRunner)
    def _sample(
        self,
        *,
        num_timesteps=None,
        num_episodes=None,
        explore: bool,
        random_actions: bool = False,
        force_reset: bool = False,
    ):
        """RLlib's ``_sample``; the lean loop for ``num_timesteps`` with fused pipelines."""
        if not self._lean_loop_applies(num_timesteps, random_actions):
            return super()._sample(
                num_timesteps=num_timesteps,
                num_episodes=num_episodes,
                explore=explore,
                random_actions=random_actions,
                force_reset=force_reset,
            )
        return self._lean_sample(num_timesteps, explore, force_reset)

    def _per_step_callbacks(self) -> bool:
        return bool(self.config.callbacks_on_episode_step) or any(
            _defines(cb, "on_episode_step") for cb in self._callbacks
        )

    def _lean_sample(self, num_timesteps: int, explore: bool, force_reset: bool):
        """The loop of RLlib 2.60's ``SingleAgentEnvRunner._sample`` (see module docs)."""
        if force_reset or self._needs_initial_reset:
            self._reset_envs_and_episodes(explore)
        n = self.num_envs
        module = self.module
        m2e = self._module_to_env
        copy_for_env = copies_actions_for_env(m2e)
        pin_memory, device = tensor_settings(self._env_to_module)
        # convert_to_torch_tensor of a float32 array on the CPU is torch.from_numpy
        direct_obs = device is None or torch.device(device).type == "cpu"

        step_callbacks = self._per_step_callbacks()
        # what RLlib's make_env builds: the vector env in gymnasium's DictInfoToList
        vector_env = self.env.env if type(self.env) is DictInfoToList else None
        runners = self.config.num_env_runners or 1
        lifetime = self.num_env_steps_sampled_lifetime // runners
        seq_no = self._weights_seq_no
        ts = 0
        env_steps = 0
        done_episodes = []
        inference_s = 0.0
        env_s = 0.0
        forward = module.forward_exploration if explore else module.forward_inference
        perf = time.perf_counter
        # Steps where every copy steps on (none starts or ends): their arrays, added to
        # the episodes together by _add_pending (per step where callbacks need it).
        pending = None if step_callbacks else []
        fresh = not all(episode.is_reset for episode in self._ongoing_episodes)
        while ts < num_timesteps:
            to_module = self._cached_to_module
            self._cached_to_module = None
            t0 = perf()
            if explore:
                batch = forward(to_module, t=(lifetime + ts) * runners)
            else:
                batch = forward(to_module)
            inference_s += perf() - t0
            actions, columns = m2e.actions_and_rows(
                rl_module=module,
                batch=batch,
                episodes=self._ongoing_episodes,
                explore=explore,
                shared_data=self._shared_data,
            )
            actions_for_env = actions.copy() if copy_for_env else actions
            t0 = perf()
            try:
                if vector_env is None:
                    results = self.env.step(actions_for_env)
                else:  # DictInfoToList.step; its conversion where the step is added
                    results = vector_env.step(actions_for_env)
                    _check_vector_infos(results[4])
            except Exception as error:  # RLlib's handling (recreate or raise)
                env_s += perf() - t0
                results = self._env_step_failed(error)
            else:
                env_s += perf() - t0
                env_steps += 1
            if results is ENV_STEP_FAILURE:  # the episodes are dropped, as RLlib does
                ts = 0
                if pending:
                    pending.clear()
                self._reset_envs_and_episodes(explore)
                fresh = not all(episode.is_reset for episode in self._ongoing_episodes)
                continue
            observations, rewards, terminateds, truncateds, infos = results
            if (
                pending is not None
                and not fresh
                and isinstance(observations, np.ndarray)
                and isinstance(terminateds, np.ndarray)
                and isinstance(truncateds, np.ndarray)
                and not (terminateds.any() or truncateds.any())
            ):
                # every copy steps on: kept as arrays, added to the episodes in one go
                pending.append((observations, actions, rewards, infos, columns))
                ts += n
            else:
                if pending:
                    self._add_pending(pending, vector_env, n, seq_no)
                if vector_env is not None:
                    infos = _infos_to_list(self.env, infos, n)
                ts += self._add_step_each_copy(
                    results[:4], infos, actions, columns, seq_no, step_callbacks, done_episodes
                )
                fresh = not all(episode.is_reset for episode in self._ongoing_episodes)
            # FusedFlatObsToModule: the copies' latest observations, batched.
            if direct_obs and isinstance(observations, np.ndarray) and observations.flags.writeable:
                obs = torch.from_numpy(observations)
                obs = obs if observations.dtype == np.float32 else obs.float()
            else:
                obs = convert_to_torch_tensor(observations, pin_memory=pin_memory, device=device)
            self._cached_to_module = {Columns.OBS: obs}
        if pending:
            self._add_pending(pending, vector_env, n, seq_no)
        self._log_lean_timers(inference_s, env_s, env_steps)
        return self._finish_sample(done_episodes, ts)

    # ------------------------------------------------------------------ helpers
    def _add_step_each_copy(
        self, results, infos, actions, columns, seq_no, step_callbacks, done_episodes
    ) -> int:
        """One vector step added copy by copy, as RLlib's loop adds it; the steps taken.

        A copy whose episode is not reset yet gets ``add_env_reset`` (the vector env's
        autoreset step) and ``on_episode_start``; the others ``add_env_step`` with the
        action's extra model outputs and the weights' sequence number. Then, per copy,
        ``on_episode_step`` where defined, and ``on_episode_end`` plus a new episode
        where the episode is done.
        """
        observations, rewards, terminateds, truncateds = results
        episodes = self._ongoing_episodes
        n = len(episodes)
        started = [False] * n
        ts = 0
        for i in range(n):
            episode = episodes[i]
            if not episode.is_reset:
                episode.add_env_reset(observation=observations[i], infos=infos[i])
                started[i] = True
                continue
            ts += 1
            extra = {k: v[i] for k, v in columns.items()}
            extra[WEIGHTS_SEQ_NO] = seq_no
            episode.add_env_step(
                observation=observations[i],
                action=actions[i],
                reward=rewards[i],
                infos=infos[i],
                terminated=terminateds[i],
                truncated=truncateds[i],
                extra_model_outputs=extra,
            )
        for i in range(n):
            episode = episodes[i]
            if started[i]:
                self._make_on_episode_callback("on_episode_start", i, episodes)
            elif step_callbacks:
                self._make_on_episode_callback("on_episode_step", i, episodes)
            if episode.is_done:
                self._make_on_episode_callback("on_episode_end", i, episodes)
                done_episodes.append(episode.to_numpy() if self.episodes_to_numpy else episode)
                self._new_episode(i, episodes)
        return ts

    def _add_pending(self, pending: list, vector_env, n: int, seq_no) -> None:
        """Adds the held steps (every copy stepping on, none done) to the episodes.

        What ``add_env_step`` would do for each copy and step, in order: the same items
        (row ``i`` of each step's arrays: the same values and numpy types), the vector
        infos converted as :func:`_infos_to_list` does, the extra model outputs (buffers
        created where missing, as ``add_env_step`` creates them), ``t`` advanced and the
        last observation and infos kept. Every held step comes from arrays the vector env
        and the module made for that step (gymnasium's vector envs return fresh ones).
        """
        obs = np.stack([step[0] for step in pending], axis=1)
        acts = np.stack([step[1] for step in pending], axis=1)
        rews = np.stack([step[2] for step in pending], axis=1)
        infos = _pending_infos([step[3] for step in pending], self.env, vector_env, n)
        extras = {
            key: np.stack([step[4][key] for step in pending], axis=1) for key in pending[0][4]
        }
        k = len(pending)
        now = time.perf_counter()
        for i, episode in enumerate(self._ongoing_episodes):
            ep_infos = infos[i]
            last_obs = obs[i][-1]
            _extend(episode.observations, list(obs[i]))
            _extend(episode.actions, list(acts[i]))
            _extend(episode.rewards, list(rews[i]))
            _extend(episode.infos, ep_infos)
            buffers = episode.extra_model_outputs
            for key, column in extras.items():
                _extend_or_create(buffers, key, list(column[i]))
            _extend_or_create(buffers, WEIGHTS_SEQ_NO, [seq_no] * k)
            episode.t += k
            episode.is_terminated = False
            episode.is_truncated = False
            episode._last_added_observation = last_obs
            episode._last_added_infos = ep_infos[-1]
            episode._last_step_time = now
            if episode._start_time is None:
                episode._start_time = now
        pending.clear()

    def _env_step_failed(self, error: Exception):
        """RLlib's ``EnvRunner._try_env_step`` failure branch: recreate the env or raise."""
        self.metrics.log_value(NUM_ENV_STEP_FAILURES_LIFETIME, 1, reduce="lifetime_sum")
        if self.config.restart_failed_sub_environments:
            if not isinstance(error, StepFailedRecreateEnvError):
                logger.exception(
                    "%s: environment step failed; recreating and force-resetting the env(s). "
                    "The original error is: %s",
                    type(self).__name__,
                    error,
                )
            self.make_env()
            return ENV_STEP_FAILURE
        logger.exception(
            "%s: environment step failed and restart_failed_sub_environments is False; "
            "the env is not recreated. The original error (%s): %s",
            type(self).__name__,
            type(error).__name__,
            error,
        )
        raise RuntimeError from error

    def _log_lean_timers(self, inference_s: float, env_s: float, env_steps: int) -> None:
        """One record per call: the mean seconds per forward / env step, RLlib's keys."""
        if env_steps > 0:
            self.metrics.log_value(RLMODULE_INFERENCE_TIMER, inference_s / env_steps, reduce="ema")
            self.metrics.log_value(ENV_STEP_TIMER, env_s / env_steps, reduce="ema")
            self._log_env_steps(metric=self._metrics_num_try_env_step, num_steps=env_steps)

    def _finish_sample(self, done_episodes: list, ts: int) -> list:
        """The end of RLlib 2.60's ``_sample`` for ``num_timesteps``, unchanged."""
        self._done_episodes_for_metrics.extend(done_episodes)
        ongoing = []
        continuations = [
            ep.cut(len_lookback_buffer=self.config.episode_lookback_horizon)
            for ep in self._ongoing_episodes
        ]
        for ep in self._ongoing_episodes:
            if ep.t == 0:  # just started: no data in it
                continue
            ep.validate()
            self._ongoing_episodes_for_metrics[ep.id_].append(ep)
            ongoing.append(ep.to_numpy() if self.episodes_to_numpy else ep)
        self._ongoing_episodes = continuations
        self._log_env_steps(metric=self._metrics_num_env_steps_sampled, num_steps=ts)
        self._increase_sampled_metrics(ts, len(done_episodes))
        return done_episodes + ongoing
