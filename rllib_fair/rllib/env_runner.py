"""RLlib's single-agent env runner with one seeded stream of episodes per env.

:class:`FairEnvRunner` is the ``env_runner_cls`` of every rllib-fair config (where none is
set); it uses only RLlib's public hooks (``make_env``, ``sample``, ``get_state`` /
``set_state``). With the speed layer's sampling part on, the config's runner is this class
behind :class:`rllib_fair.accel.env_runner.LeanSamplingMixin` (``ACCEL_MIXIN``), whose
loop returns the same episodes with less per-step bookkeeping.
"""

from __future__ import annotations

import numpy as np
from gymnasium.vector import VectorWrapper
from gymnasium.wrappers.vector import DictInfoToList
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.utils.annotations import override

from rllib_fair.envs.base import restore_envs, snapshot_envs
from rllib_fair.rllib.state import component_wanted

#: Key of the envs' state in a :class:`FairEnvRunner`'s ``get_state`` (checkpoints).
FAIR_ENV_STATE = "fair_env_state"


def recreated_env_seed(seed: int, build: int) -> int:
    """The reset seed of the ``build``-th env a runner makes (1 for its first env).

    The first env is seeded with the runner's own seed (RLlib's ``config.seed`` plus the
    worker index); an env recreated after a failure gets a seed derived from both, so it
    neither replays the first env's episodes nor depends on anything but the seed.
    """
    if build <= 1:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(build)]).generate_state(1)[0])


class SeedOnce(VectorWrapper):
    """A vector env that takes a reset seed at its first reset only.

    The first reset's seed ``s`` becomes :func:`recreated_env_seed` ``(s, build)`` (``s``
    itself for a runner's first env); every later reset gets no seed, so the env continues
    its own random stream.
    """

    def __init__(self, env, build: int) -> None:
        super().__init__(env)
        self.build = int(build)
        self.seeded = False

    @override(VectorWrapper)
    def reset(self, *, seed=None, options=None):
        """The wrapped env's reset; the seed only on the first call (see the class docs)."""
        if self.seeded:
            seed = None
        elif seed is not None:
            seed = recreated_env_seed(seed, self.build)
        out = self.env.reset(seed=seed, options=options)
        self.seeded = True
        return out


class FairEnvRunner(SingleAgentEnvRunner):
    """``SingleAgentEnvRunner`` with one seeded stream of episodes.

    RLlib 2.60 passes the runner's seed to ``env.reset`` whenever the runner resets its
    envs for a fresh start, and whole-episode sampling (``batch_mode="complete_episodes"``,
    evaluation by episodes, planners that sample episodes) starts fresh on every call.
    Every such call therefore reset the env with the same seed, and a seeded run trained
    on one episode's randomness, replayed. This runner seeds each env it builds once, at
    its first reset (:class:`SeedOnce`); every later reset continues the env's own random
    stream. The same seed still gives the same run, bit for bit, and consecutive episodes
    differ. An env recreated after a failure is seeded once with
    :func:`recreated_env_seed`. A checkpoint of a runner with envs (the local runner
    when ``num_env_runners=0``) carries the envs' state (:data:`FAIR_ENV_STATE`), so a
    restored run continues the stream with the same next episode instead of starting it
    over; remote runners' envs are not in RLlib's checkpoints and restart their stream.
    """

    #: Where the speed layer's mixin for this runner lives (``module:Class``).
    ACCEL_MIXIN = "rllib_fair.accel.env_runner:LeanSamplingMixin"
    #: Envs this runner has built (``make_env`` calls).
    fair_env_builds: int = 0
    #: True after :meth:`set_state` restored the envs: the next sample starts new episodes.
    fair_reset_due: bool = False

    @override(SingleAgentEnvRunner)
    def make_env(self) -> None:
        """RLlib's env creation; the new env gets its seed at its first reset."""
        super().make_env()
        self.fair_env_builds += 1
        if isinstance(self.env, DictInfoToList):
            self.env = DictInfoToList(SeedOnce(self.env.env, self.fair_env_builds))

    def _seed_once(self) -> SeedOnce | None:
        env = self.env
        while env is not None and not isinstance(env, SeedOnce):
            env = getattr(env, "env", None)
        return env

    def _sub_envs(self) -> list:
        """The unwrapped env copies (a native vector env is one object holding all)."""
        vector_env = self.env.unwrapped
        copies = getattr(vector_env, "envs", None)
        if copies is None:
            return [vector_env]
        return [env.unwrapped for env in copies]

    @override(SingleAgentEnvRunner)
    def sample(self, *, force_reset: bool = False, **kwargs):
        """RLlib's ``sample``; after :meth:`set_state` restored envs, from new episodes."""
        if self.fair_reset_due:
            self.fair_reset_due = False
            force_reset = True
        return super().sample(force_reset=force_reset, **kwargs)

    @override(SingleAgentEnvRunner)
    def get_state(self, components=None, *, not_components=None, **kwargs):
        """RLlib's state plus, where this runner has envs, their state (checkpoints).

        Weight and connector syncs ask for named components and do not get it.
        """
        state = super().get_state(components, not_components=not_components, **kwargs)
        wrapper = self._seed_once() if self.env is not None else None
        if wrapper is not None and component_wanted(FAIR_ENV_STATE, components, not_components):
            state[FAIR_ENV_STATE] = {
                "worker_index": int(self.worker_index or 0),
                "in_evaluation": bool(self.config.in_evaluation),
                "seeded": bool(wrapper.seeded),
                "builds": int(self.fair_env_builds),
                "envs": snapshot_envs(self._sub_envs()),
            }
        return state

    @override(SingleAgentEnvRunner)
    def set_state(self, state) -> None:
        """RLlib's ``set_state``; envs continue the saved ones' random streams.

        Applied only by a runner of the same index and role (training or evaluation);
        the next sample starts new episodes.
        """
        super().set_state(state)
        saved = state.get(FAIR_ENV_STATE)
        wrapper = self._seed_once() if self.env is not None else None
        if saved is None or wrapper is None:
            return
        if saved["worker_index"] != int(self.worker_index or 0) or saved["in_evaluation"] != bool(
            self.config.in_evaluation
        ):
            return
        restore_envs(self._sub_envs(), saved["envs"])
        wrapper.seeded = saved["seeded"]
        wrapper.build = saved["builds"]
        self.fair_env_builds = saved["builds"]
        self.fair_reset_due = True
