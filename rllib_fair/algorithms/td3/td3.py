"""TD3 (Fujimoto, van Hoof, Meger, ICML 2018) as a generic RLlib algorithm on SAC's machinery.

RLlib 2.60 has no TD3; this follows the pattern of RLlib's TQC (a variant built on SAC):
:class:`TD3Config` subclasses ``SACConfig``, :class:`TD3` subclasses ``SAC``, the learner
subclasses ``SACTorchLearner`` and a small module holds a deterministic tanh actor and twin
critics. Nothing here is fairness-specific: TD3 trains on any env with a Box action space
(Pendulum-v1 included); a fairness variant (R-TD3) is a thin subclass that changes the
env's reward through ``env_config``.

Two replay paths, chosen by ``replay_path``:

* ``"fast"`` (default): a numpy transition ring buffer owned by the Algorithm, filled from
  the sampled episodes; one ``learner_group.update(batch=MultiAgentBatch(numpy))`` call per
  training step performs ``n`` sequential gradient steps (``minibatch_size =
  train_batch_size_per_learner``) on ``n * batch`` uniformly drawn rows. A batch of numpy
  arrays bypasses the learner connector (``Learner._make_batch_if_necessary``). One-step
  transitions only (``n_step=1``).
* ``"episode"``: RLlib's uniform ``EpisodeReplayBuffer`` and learner connector, one
  ``update(episodes=...)`` call per gradient step (supports ``n_step > 1``); slow on CPU.

Schedule (both paths): each training step samples ``rollout_fragment_length`` steps per env
runner, then takes ``round(updates_per_env_step * new env steps)`` gradient steps (the
fractional part carries over), once the lifetime env steps reach
``num_steps_sampled_before_learning_starts``. The default (``rollout_fragment_length=100``,
``updates_per_env_step=1``) is one gradient step per env step; SB3's per-episode schedule of
the R-TD3 reference is ``rollout_fragment_length=H``. The count does not depend on the number
of env runners (no ``training_intensity`` "+1" pitfall).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.sac.sac import SAC, SACConfig
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.execution.rollout_ops import synchronous_parallel_sample
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    ALL_MODULES,
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    REPLAY_BUFFER_ADD_DATA_TIMER,
    REPLAY_BUFFER_SAMPLE_TIMER,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)

from rllib_fair.accel.deferred import deferred_reduce_kwargs, reduce_learner_metrics
from rllib_fair.algorithms.common.setters import set_provided
from rllib_fair.envs import env_meta
from rllib_fair.rllib.config import FairnessConfigMixin
from rllib_fair.settings import LEARNER_REPORTED_KEYS, Rule, bool_setting, choice, integer, number

REPLAY_PATHS = ("fast", "episode")
#: The banner ``SACConfig.validate`` logs on every call (four times per trial); TD3 is no
#: SAC, and RLlib's own once-per-process "running TD3 on the new API stack" remains.
SAC_BANNER = "You are running SAC on the new API stack!"


class _DropSACBanner(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(SAC_BANNER)


#: Algorithm-state key of the ring buffer (present only with ``checkpoint_replay_buffer``).
RING_BUFFER_STATE = "td3_ring_buffer"


class TD3Config(FairnessConfigMixin, SACConfig):
    """TD3 settings on top of SAC's (fields typed, set with ``training(...)``).

    Package defaults next to Stable-Baselines3 (>= 2.3) TD3's and the R-TD3 reference run's
    (the paper's supplementary code): this package uses the reference run's settings.

    ==========================================  ==========  =============  =========
    setting                                     SB3 TD3     ref. R-TD3     here
    ==========================================  ==========  =============  =========
    ``actor_lr`` / ``critic_lr``                1e-3        5e-4           5e-4
    ``train_batch_size_per_learner``            256         128            128
    ``num_steps_sampled_before_learning_starts``  100       300            300
    ``random_warmup_steps`` (uniform actions)   100         300            300
    replay capacity                             1e6         1e6            1e6
    ``tau`` / ``gamma``                         0.005/0.99  same           same
    network ``fcnet_hiddens``, relu             [400, 300]  [400, 300]     [400, 300]
    ``policy_delay``                            2           2              2
    ``target_noise`` / ``target_noise_clip``    0.2 / 0.5   same           same
    ``exploration_noise`` (normalised scale)    none        0.1            0.1
    updates per env step                        1           1 (per ep.)    1
    ==========================================  ==========  =============  =========

    Attributes:
        policy_delay: the actor and the targets are updated on every ``policy_delay``-th
            gradient step (TD3's delayed policy update).
        target_noise: sigma of the target-policy smoothing noise (normalised actions).
        target_noise_clip: the smoothing noise is clipped to +-this.
        exploration_noise: sigma of the Gaussian noise added to the actor when sampling
            (normalised action scale [-1, 1]; 0.1 there is 0.05 of a [0, 1] action range).
        random_warmup_steps: uniform random actions while the lifetime env steps are below
            this (SB3's ``learning_starts`` behaviour). Done in the module's exploration
            forward, so the stored actions are in the normalised scale.
        replay_path: ``"fast"`` (numpy ring buffer, numpy batches) or ``"episode"``
            (RLlib's ``EpisodeReplayBuffer``).
        updates_per_env_step: gradient steps per sampled env step (update-to-data ratio).
        fragments_per_training_step: in one process (no remote env runners, a local
            CPU learner, the fast path), how many fragments one ``training_step`` samples,
            each followed by its gradient steps; None: enough for
            ``min_sample_timesteps_per_iteration``. Metrics are aggregated once per
            ``training_step``; the schedule and the results do not change.
        checkpoint_replay_buffer: put the fast path's ring buffer into the algorithm's
            checkpoint state (off by default: 1e6 transitions are large; a restored run
            then refills the buffer, like RLlib's default for its replay buffers).
    """

    DECLARED_SETTINGS = (
        integer("policy_delay", "gradient steps per actor and target update", 1),
        number("target_noise", "sigma of the target-policy smoothing noise", 0),
        number("target_noise_clip", "the smoothing noise is clipped to +-this", 0),
        number("exploration_noise", "sigma of the Gaussian exploration noise", 0),
        integer("random_warmup_steps", "uniform random actions before this many env steps", 0),
        choice("replay_path", REPLAY_PATHS, "fast: numpy ring buffer; episode: RLlib's buffer"),
        number("updates_per_env_step", "gradient steps per sampled env step", 0, low_open=True),
        bool_setting("checkpoint_replay_buffer", "put the ring buffer into checkpoints"),
        integer(
            "fragments_per_training_step",
            "fragments (each followed by its updates) per local training step",
            1,
            none=True,
            none_means="enough for min_sample_timesteps_per_iteration",
        ),
        number("actor_lr", "learning rate of the actor", 0, low_open=True, schedule=True),
        number("critic_lr", "learning rate of the critics", 0, low_open=True, schedule=True),
        number("tau", "Polyak factor of the target networks", 0, 1, low_open=True),
        integer(
            "num_steps_sampled_before_learning_starts",
            "env steps sampled before the first update",
            0,
        ),
    )
    DECLARED_RULES = (
        Rule(
            "fast_path_one_step",
            ("n_step", "replay_path"),
            "n_step 1 with replay_path fast (n-step returns need the episode path)",
            lambda v: (
                None
                if v["replay_path"] != "fast" or v["n_step"] == 1
                else (
                    f"n_step: {v['n_step']!r} is invalid with replay_path 'fast'; valid: 1 "
                    "(or replay_path='episode' for n-step returns)"
                )
            ),
            {"n_step": 3},
        ),
        Rule(
            "twin_q",
            ("twin_q",),
            "twin_q stays true (TD3 always uses two critics)",
            lambda v: (
                None
                if v["twin_q"] is True
                else f"twin_q: {v['twin_q']!r} is invalid; TD3 always uses twin Q: True"
            ),
            {"twin_q": False},
        ),
    )
    REPORTED_KEYS = LEARNER_REPORTED_KEYS + (
        "learners/__all_modules__/num_actor_updates",
        "learners/__all_modules__/num_gradient_steps",
        "learners/*/policy_loss",
        "learners/*/qf_loss",
        "learners/*/qf_twin_loss",
        "learners/*/qf_mean",
    )

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or TD3)
        self.policy_delay: int = 2
        self.target_noise: float = 0.2
        self.target_noise_clip: float = 0.5
        self.exploration_noise: float = 0.1
        self.random_warmup_steps: int = 300
        self.replay_path: str = "fast"
        self.updates_per_env_step: float = 1.0
        self.checkpoint_replay_buffer: bool = False
        self.fragments_per_training_step: int | None = None
        # SAC fields with TD3 defaults.
        self.actor_lr = 5e-4
        self.critic_lr = 5e-4
        self.lr = None
        self.twin_q = True
        self.tau = 0.005
        self.gamma = 0.99
        self.n_step = 1
        self.train_batch_size_per_learner = 128
        self.num_steps_sampled_before_learning_starts = 300
        self.rollout_fragment_length = 100
        self.replay_buffer_config = {"type": "EpisodeReplayBuffer", "capacity": int(1e6)}
        # TD3 needs no fairness columns; the fast path bypasses the learner connector.
        self.fairness_columns = False
        # SAC's default 1 s minimum per iteration made an iteration's steps depend on the
        # wall clock, so a seeded run was not reproducible; iterations end on steps only.
        self.min_time_s_per_iteration = 0

    @override(SACConfig)
    def training(
        self,
        *,
        policy_delay: int = NotProvided,
        target_noise: float = NotProvided,
        target_noise_clip: float = NotProvided,
        exploration_noise: float = NotProvided,
        random_warmup_steps: int = NotProvided,
        replay_path: str = NotProvided,
        updates_per_env_step: float = NotProvided,
        checkpoint_replay_buffer: bool = NotProvided,
        fragments_per_training_step: int | None = NotProvided,
        **kwargs,
    ):
        """SAC's ``training()`` plus TD3's settings (see the class attributes).

        Returns:
            This updated config.
        """
        super().training(**kwargs)
        return set_provided(
            self,
            policy_delay=policy_delay,
            target_noise=target_noise,
            target_noise_clip=target_noise_clip,
            exploration_noise=exploration_noise,
            random_warmup_steps=random_warmup_steps,
            replay_path=replay_path,
            updates_per_env_step=updates_per_env_step,
            checkpoint_replay_buffer=checkpoint_replay_buffer,
            fragments_per_training_step=fragments_per_training_step,
        )

    @property
    @override(SACConfig)
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return super()._model_config_auto_includes | {
            "exploration_noise": self.exploration_noise,
            "random_warmup_steps": self.random_warmup_steps,
        }

    @override(SACConfig)
    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """The TD3 torch module."""
        from rllib_fair.algorithms.td3.torch.td3_torch_rl_module import TD3TorchRLModule

        return RLModuleSpec(module_class=TD3TorchRLModule)

    @override(SACConfig)
    def get_default_learner_class(self):
        """Returns :class:`TD3TorchLearner`."""
        from rllib_fair.algorithms.td3.torch.td3_torch_learner import TD3TorchLearner

        return TD3TorchLearner

    # ------------------------------------------------------------------ fairness (generic)
    def resolved_fairness_notion(self) -> str | None:
        """The configured notion, the env's default, or None for a non-fairness env."""
        if self.fairness_notion is None and env_meta(self.env) is None:
            return None
        return super().resolved_fairness_notion()

    def fairness_notions_to_log(self) -> list[str]:
        """No notions on a non-fairness env (e.g. Pendulum-v1) without a configured one."""
        if self.resolved_fairness_notion() is None:
            return []
        return super().fairness_notions_to_log()

    # ------------------------------------------------------------------ validation
    @override(SACConfig)
    def validate(self) -> None:
        """SAC's, the fairness and TD3's checks (one-line messages)."""
        sac_logger = logging.getLogger(SAC.__module__)
        banner_filter = _DropSACBanner()
        sac_logger.addFilter(banner_filter)
        try:
            super().validate()
        finally:
            sac_logger.removeFilter(banner_filter)
        if not (isinstance(self.gamma, (int, float)) and 0.0 <= self.gamma <= 1.0):
            raise ValueError(f"gamma: {self.gamma!r} is invalid; valid: 0 <= gamma <= 1")
        if self.initial_alpha != 1.0 or self.target_entropy not in (None, "auto"):
            raise ValueError(
                f"initial_alpha/target_entropy: {self.initial_alpha!r}/{self.target_entropy!r} "
                "are invalid; TD3 has no entropy term: leave SAC's defaults (1.0/'auto')"
            )
        if self.replay_buffer_config.get("type") not in ("EpisodeReplayBuffer",):
            raise ValueError(
                f"replay_buffer_config['type']: {self.replay_buffer_config.get('type')!r} is "
                "invalid; TD3 replays uniformly: 'EpisodeReplayBuffer'"
            )
        if self.action_space is not None:
            self.check_env_spaces(self.observation_space, self.action_space)

    @override(FairnessConfigMixin)
    def check_env_spaces(self, observation_space, action_space) -> None:
        """TD3 acts in a continuous ``gymnasium.spaces.Box`` (one-line ValueError otherwise)."""
        from rllib_fair.algorithms.td3.torch.td3_torch_rl_module import require_box_actions

        require_box_actions(action_space)


class TransitionRingBuffer:
    """Uniform numpy replay of one-step transitions (obs, action, reward, next obs, term).

    ``terminated`` is True only for a true terminal step; a truncated episode's last
    transition keeps ``terminated=False`` and is bootstrapped from its next observation.
    """

    COLUMNS = (
        Columns.OBS,
        Columns.ACTIONS,
        Columns.REWARDS,
        Columns.NEXT_OBS,
        Columns.TERMINATEDS,
    )

    def __init__(self, capacity: int, seed: int | None = None):
        self.capacity = int(capacity)
        self.size = 0
        self.pos = 0
        self.data: dict[str, np.ndarray] | None = None
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.size

    def _allocate(self, example: dict[str, np.ndarray]) -> None:
        self.data = {
            k: np.zeros((self.capacity,) + v.shape[1:], dtype=v.dtype) for k, v in example.items()
        }

    def add(self, columns: dict[str, np.ndarray]) -> None:
        """Appends rows (all columns the same length), overwriting the oldest."""
        n = len(columns[Columns.REWARDS])
        if n == 0:
            return
        if self.data is None:
            self._allocate(columns)
        if n > self.capacity:
            columns = {k: v[-self.capacity :] for k, v in columns.items()}
            n = self.capacity
        idx = (self.pos + np.arange(n)) % self.capacity
        for k, v in columns.items():
            self.data[k][idx] = v
        self.pos = int((self.pos + n) % self.capacity)
        self.size = int(min(self.size + n, self.capacity))

    def add_episodes(self, episodes) -> int:
        """Adds every transition of the sampled single-agent episode chunks.

        Returns:
            The number of transitions added.
        """
        parts = [c for c in (episode_transitions(e) for e in episodes) if c is not None]
        if not parts:
            return 0
        cols = {k: np.concatenate([p[k] for p in parts]) for k in self.COLUMNS}
        self.add(cols)
        return len(cols[Columns.REWARDS])

    def sample(self, n: int) -> dict[str, np.ndarray]:
        """``n`` rows drawn uniformly with replacement."""
        idx = self.rng.integers(0, self.size, size=n)
        return {k: v[idx] for k, v in self.data.items()}

    def get_state(self) -> dict[str, Any]:
        """Contents (only the filled rows), write position and RNG state."""
        data = None
        if self.data is not None:
            data = {k: v[: self.size].copy() for k, v in self.data.items()}
        return {
            "capacity": self.capacity,
            "size": self.size,
            "pos": self.pos,
            "data": data,
            "rng": self.rng.bit_generator.state,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Restores :meth:`get_state`'s output."""
        self.capacity = int(state["capacity"])
        self.size = int(state["size"])
        self.pos = int(state["pos"])
        self.data = None
        if state["data"] is not None:
            self._allocate({k: v[:1] for k, v in state["data"].items()})
            for k, v in state["data"].items():
                self.data[k][: self.size] = v
        self.rng.bit_generator.state = state["rng"]


def episode_transitions(episode) -> dict[str, np.ndarray] | None:
    """One-step transitions of a sampled ``SingleAgentEpisode`` chunk as numpy columns."""
    n = len(episode)
    if n == 0:
        return None
    obs = np.asarray(episode.get_observations(slice(0, n + 1)), dtype=np.float32)
    obs = obs.reshape(n + 1, -1)
    actions = np.asarray(episode.get_actions(slice(0, n)), dtype=np.float32).reshape(n, -1)
    rewards = np.asarray(episode.get_rewards(slice(0, n)), dtype=np.float32).reshape(n)
    terminateds = np.zeros(n, dtype=np.float32)
    if episode.is_terminated:
        terminateds[-1] = 1.0
    return {
        Columns.OBS: obs[:-1],
        Columns.ACTIONS: actions,
        Columns.REWARDS: rewards,
        Columns.NEXT_OBS: obs[1:],
        Columns.TERMINATEDS: terminateds,
    }


class TD3(SAC):
    """TD3 on RLlib's Algorithm / Learner / EnvRunner (see the module docstring)."""

    @classmethod
    @override(SAC)
    def get_default_config(cls) -> TD3Config:
        """Returns a fresh :class:`TD3Config`."""
        return TD3Config()

    @override(SAC)
    def setup(self, config) -> None:
        """SAC's setup plus the ring buffer (fast path) and the update credit."""
        super().setup(config)
        self._update_credit = 0.0
        self.ring_buffer = None
        if self.config.replay_path == "fast":
            capacity = int(self.config.replay_buffer_config.get("capacity", int(1e6)))
            seed = None if self.config.seed is None else int(self.config.seed) + 7919
            self.ring_buffer = TransitionRingBuffer(capacity, seed=seed)
        self.actor_shared = self._share_local_actor()

    def _share_local_actor(self) -> bool:
        """Lets the local env runner act with the learner's own actor network.

        With no remote env runners and a local learner on the CPU (one process, as
        Stable-Baselines3 runs), the env runner's inference-only module takes the
        learner module's ``pi`` itself instead of a copy: every optimizer step is what
        the next action sees, exactly as a weight sync after each update would give,
        without one (at one gradient step per env step the sync cost a quarter of the
        time). Any other layout keeps RLlib's ``sync_weights``.
        """
        import torch

        if (
            self.config.num_env_runners
            or self.env_runner is None
            or not self.learner_group.is_local
        ):
            return False
        found = self.learner_group.foreach_learner(
            lambda learner: learner.module[DEFAULT_MODULE_ID].unwrapped()
        )
        (learner_module,) = [r.get() for r in found]
        runner_module = self.env_runner.module
        if next(learner_module.pi.parameters()).device != torch.device("cpu"):
            return False
        runner_module.pi = learner_module.pi
        return True

    # ------------------------------------------------------------------ training
    @override(SAC)
    def training_step(self) -> None:
        """Sample a fragment per env runner, store it, take n gradient steps, sync weights."""
        if self.actor_shared and self.ring_buffer is not None:
            return self._training_step_local()
        cfg = self.config
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            episodes, env_runner_results = synchronous_parallel_sample(
                worker_set=self.env_runner_group,
                concat=True,
                sample_timeout_s=cfg.sample_timeout_s,
                _uses_new_env_runners=True,
                _return_metrics=True,
            )
        self.metrics.aggregate(env_runner_results, key=ENV_RUNNER_RESULTS)
        new_steps = sum(len(e) for e in episodes)
        with self.metrics.log_time((TIMERS, REPLAY_BUFFER_ADD_DATA_TIMER)):
            if self.ring_buffer is not None:
                self.ring_buffer.add_episodes(episodes)
            else:
                self.local_replay_buffer.add(episodes)

        lifetime = self.metrics.peek(
            (ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0
        )
        if lifetime < cfg.num_steps_sampled_before_learning_starts:
            return
        # Only the steps beyond the threshold earn gradient steps (SB3's learning_starts).
        earned = min(new_steps, lifetime - cfg.num_steps_sampled_before_learning_starts)
        self._update_credit += cfg.updates_per_env_step * earned
        n_updates = int(self._update_credit)
        self._update_credit -= n_updates
        if n_updates == 0:
            return
        timesteps = {
            NUM_ENV_STEPS_SAMPLED_LIFETIME: lifetime,
            NUM_AGENT_STEPS_SAMPLED_LIFETIME: self.metrics.peek(
                (ENV_RUNNER_RESULTS, NUM_AGENT_STEPS_SAMPLED_LIFETIME), default={}
            ),
        }
        if self.ring_buffer is not None:
            learner_results = self._update_fast(n_updates, timesteps)
            self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)
        else:
            learner_results = self._update_episode(n_updates, timesteps)

        if self.actor_shared:  # the env runner acts with the learner's own actor
            return
        with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            modules = set(learner_results[0].keys()) - {ALL_MODULES}
            self.env_runner_group.sync_weights(
                from_worker_or_learner_group=self.learner_group,
                policies=modules,
                inference_only=True,
            )

    def fragments_per_training_step(self) -> int:
        """How many (fragment, updates) rounds one local ``training_step`` runs.

        ``fragments_per_training_step`` when set, else enough fragments for the
        iteration's ``min_sample_timesteps_per_iteration`` (at least one).
        """
        cfg = self.config
        if cfg.fragments_per_training_step is not None:
            return int(cfg.fragments_per_training_step)
        fragment = max(1, int(cfg.rollout_fragment_length) * int(cfg.num_envs_per_env_runner))
        return max(1, int(cfg.min_sample_timesteps_per_iteration or 0) // fragment)

    def _training_step_local(self) -> None:
        """The fast path in one process: fragment, updates, fragment, updates, ...

        The same schedule as :meth:`training_step` (each fragment's new steps earn their
        gradient steps before the next fragment is sampled, and the env runner acts with
        the learner's own actor), run for :meth:`fragments_per_training_step` fragments
        per call, with the env runner's and the learner's metrics aggregated once per
        call instead of once per fragment: at one env step per fragment RLlib's
        per-call bookkeeping costs more than the step.
        """
        cfg = self.config
        runner = self.env_runner
        start = self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        agents = self.metrics.peek(
            (ENV_RUNNER_RESULTS, NUM_AGENT_STEPS_SAMPLED_LIFETIME), default={}
        )
        sampled = 0
        learner_results: list[dict] = []
        deferred = deferred_reduce_kwargs(cfg)
        for _ in range(self.fragments_per_training_step()):
            with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
                episodes = runner.sample()
            new_steps = sum(len(e) for e in episodes)
            self.ring_buffer.add_episodes(episodes)
            sampled += new_steps
            lifetime = start + sampled
            if lifetime < cfg.num_steps_sampled_before_learning_starts:
                continue
            earned = min(new_steps, lifetime - cfg.num_steps_sampled_before_learning_starts)
            self._update_credit += cfg.updates_per_env_step * earned
            n_updates = int(self._update_credit)
            self._update_credit -= n_updates
            if n_updates:
                timesteps = {
                    NUM_ENV_STEPS_SAMPLED_LIFETIME: lifetime,
                    NUM_AGENT_STEPS_SAMPLED_LIFETIME: agents,
                }
                learner_results += self._update_fast(n_updates, timesteps, **deferred)
        if deferred and learner_results:
            learner_results = reduce_learner_metrics(self.learner_group)
        self.metrics.aggregate([runner.get_metrics()], key=ENV_RUNNER_RESULTS)
        if learner_results:
            self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)

    def _update_fast(self, n_updates: int, timesteps: dict, **update_kwargs) -> list[dict]:
        """One update() call doing ``n_updates`` sequential minibatch steps per learner.

        With several learners each gets its own ``n_updates * batch`` rows (``batches=``;
        RLlib would otherwise split one batch's rows, giving each learner fewer steps) and
        the learner averages gradients over learners, so their weights stay equal.
        """
        cfg = self.config
        size = cfg.train_batch_size_per_learner
        num_learners = max(cfg.num_learners, 1)
        with self.metrics.log_time((TIMERS, REPLAY_BUFFER_SAMPLE_TIMER)):
            batches = [
                MultiAgentBatch(
                    {DEFAULT_MODULE_ID: SampleBatch(self.ring_buffer.sample(n_updates * size))},
                    env_steps=n_updates * size,
                )
                for _ in range(num_learners)
            ]
        with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
            kwargs = {"batch": batches[0]} if num_learners == 1 else {"batches": batches}
            results = self.learner_group.update(
                **kwargs,
                timesteps=timesteps,
                num_epochs=1,
                minibatch_size=size,
                shuffle_batch_per_epoch=False,
                **update_kwargs,
            )
        return results

    def _update_episode(self, n_updates: int, timesteps: dict) -> list[dict]:
        """RLlib's episode replay path: one sample + update() call per gradient step."""
        cfg = self.config
        results = []
        for _ in range(n_updates):
            with self.metrics.log_time((TIMERS, REPLAY_BUFFER_SAMPLE_TIMER)):
                episodes = self.local_replay_buffer.sample(
                    num_items=cfg.total_train_batch_size,
                    n_step=cfg.n_step,
                    gamma=cfg.gamma,
                    sample_episodes=True,
                )
            with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
                results = self.learner_group.update(episodes=episodes, timesteps=timesteps)
            self.metrics.aggregate(results, key=LEARNER_RESULTS)
        return results

    # ------------------------------------------------------------------ state
    @override(SAC)
    def get_state(self, *args, **kwargs) -> dict:
        """Algorithm state; plus the ring buffer when ``checkpoint_replay_buffer``."""
        state = super().get_state(*args, **kwargs)
        state["td3_update_credit"] = getattr(self, "_update_credit", 0.0)
        if self.ring_buffer is not None and self.config.checkpoint_replay_buffer:
            state[RING_BUFFER_STATE] = self.ring_buffer.get_state()
        return state

    @override(SAC)
    def set_state(self, state: dict) -> None:
        """Restores the algorithm state (and the ring buffer when it was saved)."""
        super().set_state(state)
        if "td3_update_credit" in state:
            self._update_credit = float(state["td3_update_credit"])
        if self.ring_buffer is not None and RING_BUFFER_STATE in state:
            self.ring_buffer.set_state(state[RING_BUFFER_STATE])
