"""L-UCBFair (Yin et al. 2023, Algorithm 1) as an RLlib 2.60 ``Algorithm``.

L-UCBFair is not a gradient method: it plans with optimistic least-squares value
iteration over a fixed feature map and a primal-dual softmax policy over action regions
(:mod:`rllib_fair.algorithms.lucbfair.lsvi`; the method and our choices:
docs/methods/yin2023.md, "L-UCBFair"). The RLlib mapping:

* :class:`~.torch.lucbfair_torch_rl_module.LUCBFairRLModule` carries the plan (``w_r``,
  ``w_g``, ``Lambda^{-1}`` per step), the dual variable, ``alpha``, ``beta`` and the
  episode index as numpy arrays in ``get_state``/``set_state`` (weight sync and
  checkpoints); its exploration forward samples a region from the softmax and a uniform
  point in it, its inference forward returns the argmax region's centre. It reads ``q``
  and the time feature ``j / H`` from the observation (``include_time=True``; ``h =
  round(obs[-1] H)``, 0 at reset).
* :class:`~rllib_fair.algorithms.common.torch.no_op_torch_learner.NoOpLearner` (shared with
  the myopic baselines): no optimizer, no DDP wrap.
* :meth:`LUCBFair.training_step`: sample ``episodes_per_iteration`` complete episodes
  with the current plan (in parallel on remote env runners when there are any) -> dual
  step on the planned ``V_{g,1}(s_1)`` -> one planning pass on all stored data (the plan
  of the next episode) -> push the module state to every learner and env runner.
  ``episodes_per_iteration = 1`` is the paper's algorithm; ``N > 1`` is the batched
  extension (one plan, N episodes, the dual step on their mean ``V_{g,1}``).

The data store, the dual variable and the reference accumulators live on the driver in a
:class:`~rllib_fair.algorithms.lucbfair.core.LUCBFairCore` and travel in the
Algorithm's ``get_state``/``set_state`` (so ``save_to_path``/``from_checkpoint``
continue a run exactly); the plan also lives in every learner's module.

Learners: with ``num_learners = 2`` each learner's module receives the same state (no
gradients, nothing to all-reduce); the learners only hold the module for checkpoints.
``learners/__all_modules__/num_env_steps_trained`` counts the transitions a planning pass
regressed on (LSVI refits on all stored data each iteration).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.core import ALL_MODULES
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    NUM_ENV_STEPS_TRAINED,
    NUM_ENV_STEPS_TRAINED_LIFETIME,
    TIMERS,
)

from rllib_fair.algorithms.common.model_env import make_model_env, model_env_class
from rllib_fair.algorithms.common.setters import set_provided
from rllib_fair.algorithms.common.torch.no_op_torch_learner import NoOpLearner
from rllib_fair.algorithms.lucbfair import lsvi
from rllib_fair.algorithms.lucbfair.core import LUCBFairCore, Settings
from rllib_fair.algorithms.lucbfair.features import FEATURE_MAPS, make_feature_map, region_grid
from rllib_fair.algorithms.lucbfair.regret import DEFAULT_NUS, OptimumReference, RegretTracker
from rllib_fair.algorithms.lucbfair.torch.lucbfair_torch_rl_module import LUCBFairRLModule
from rllib_fair.envs.base import as_count
from rllib_fair.envs.declared import NO_VALUE, declared_value
from rllib_fair.rllib.config import FairnessConfigMixin
from rllib_fair.rllib.targets import SQUARED_DISPARITY, OwnMetrics
from rllib_fair.settings import Rule, Setting, bool_setting, choice, integer, number

__all__ = ["LUCBFair", "LUCBFairConfig"]

_STATE_KEY = "lucbfair_core"
#: ``env_runners/lucbfair/<key>``: means over the last ``metrics_num_episodes_for_smoothing``
#: sampled episodes of the per-step loss, the per-step squared disparity and the dual
#: variable the episodes' plan used.
SMOOTHED_KEYS = ("loss_mean_smoothed", "disparity_mean_smoothed", "Y_used_smoothed")


class LUCBFairConfig(FairnessConfigMixin, AlgorithmConfig):
    """Config of L-UCBFair; defaults and their sources ("the reference" is the supplementary code).

    Attributes:
        horizon: ``H``; None = the env's ``max_steps``.
        feature_map: ``"rbf"`` (default; per-group RBFs, each group's block summing to 1/2,
            d = 32),
            ``"tabular"``, ``"learned"`` (``feature_kwargs={"path": ".npz"}``) or a dotted
            path to ``phi(states[N, 2], actions[N, 2]) -> [N, d]``.
        feature_kwargs: keyword arguments of the feature map.
        ridge: lambda of ``Lambda = sum phi phi^T + lambda I``: 0.01 (measured choice; Jin
            et al. 2020 and the reference use 1, which with the rbf map's small norms,
            ``||phi||_2 ~ 0.2``, shrinks every regression target and compounds over H = 100
            backward steps: planned ``V_{g,1}`` stayed near 10 % of the realised value).
        bonus_beta: UCB multiplier; None = ``0.1 H`` (the reference's 0.05 gives no
            optimism on Q values of scale H, and theory's ``O(d H sqrt(iota))`` is
            far larger; 0.1 H is our choice). Set 0.05 to reproduce the reference run.
        softmax_alpha: softmax temperature; None = Thm 3.3's ``log(M) K / (2 (1 + xi + H))``.
        dual_bound_xi: ``xi`` (Ass. B.1); 20 = ``2 H / gamma`` with Slater margin
            ``gamma = 0.1 H`` (Ding et al. 2021). 0 pins ``Y = 0`` (the reference run).
        dual_step_eta: ``eta``; None = ``xi / sqrt(K H^2)`` (the reference's).
        num_episodes_hint: ``K`` in the alpha and eta formulas (500, the reference's budget).
        constraint_threshold: ``b`` on ``sum_h g_h``; None = ``H (1 - constraint_tolerance)``.
        constraint_tolerance: 0.1 (our choice; the reference used ``H - 1.5``).
        region_half_width: 0.1 (the reference's ``split_region(eps=0.1)``: 25 regions).
        q_clip: ``"remaining"`` (``[0, H - h + 1]``, the values' range) or ``"horizon"``
            (``[0, H]``, the reference).
        target_mode: ``"lsvi"`` (the paper's algorithm) or ``"reference_online"`` (the
            reference's targets, computed while acting and never recomputed).
        episodes_per_iteration: episodes per plan (1 = the paper; N > 1 collects N
            episodes in parallel on the remote env runners before the next plan).
        regret_reference: True (default) logs Eq. 3's cumulative regret against the exact
            constrained optimum of :mod:`rllib_fair.fairness.replicator_dp` (region-centre
            actions) when the env is deterministic (``population_size=None``); see
            :mod:`rllib_fair.algorithms.lucbfair.regret`.
        regret_dp_grid: state-grid points per axis of that DP (51: ~0.3 s per pass at
            H = 100; a 101-point grid costs ~1.7 s).
        regret_dp_nus: multiplier ladder of the DP; None = ``0, 2^-6 .. 2^7``.
    """

    #: Constrains the episode's fairness utility sum_h g_h, g = 1 - D (Eq. 4).
    own_metrics = OwnMetrics(
        constraints=(SQUARED_DISPARITY,),
        note="the env's reward r = 1 - L subject to sum_h (1 - D_h) >= b (Eq. 4)",
    )

    DECLARED_SETTINGS = (
        integer(
            "horizon",
            "H, the episode length planned for",
            1,
            none=True,
            none_means="the env's max_steps",
        ),
        Setting(
            "feature_map",
            "union",
            "the feature map phi(state, action)",
            options=(
                choice("", FEATURE_MAPS, ""),
                Setting(
                    "",
                    "custom",
                    predicate=lambda v: isinstance(v, str) and "." in v,
                    valid="'package.module:function'",
                ),
                Setting(
                    "",
                    "custom",
                    predicate=callable,
                    valid="a function (from Python)",
                    python_only=True,
                ),
            ),
        ),
        Setting("feature_kwargs", "dict", "keyword arguments of the feature map"),
        number("ridge", "lambda of Lambda = sum phi phi^T + lambda I", 0, low_open=True),
        number("bonus_beta", "UCB multiplier", 0, none=True, none_means="0.1 H"),
        number(
            "softmax_alpha",
            "softmax temperature",
            0,
            low_open=True,
            none=True,
            none_means="Thm 3.3's log(M) K / (2 (1 + xi + H))",
        ),
        number("dual_bound_xi", "xi, the bound of the dual variable (0 pins Y = 0)", 0),
        number("dual_step_eta", "eta, the dual step", 0, none=True, none_means="xi / sqrt(K H^2)"),
        integer("num_episodes_hint", "K in the alpha and eta formulas", 1),
        number(
            "constraint_threshold",
            "b on sum_h g_h",
            none=True,
            none_means="H (1 - constraint_tolerance)",
        ),
        number("constraint_tolerance", "share of H the constraint may fall short by", 0, 1),
        number("region_half_width", "half width of the action regions", 0, low_open=True),
        choice("q_clip", lsvi.Q_CLIPS, "clip range of the planned Q values"),
        choice("target_mode", lsvi.TARGET_MODES, "lsvi: the paper's algorithm"),
        integer("episodes_per_iteration", "episodes per plan", 1),
        bool_setting("regret_reference", "log Eq. 3's regret against the exact optimum"),
        integer("regret_dp_grid", "state-grid points per axis of the regret DP", 2),
        Setting(
            "regret_dp_nus",
            "list",
            "multiplier ladder of the regret DP",
            item=number("", "", 0),
            none=True,
            none_means="0, 2^-6 .. 2^7",
        ),
    )
    DECLARED_RULES = (
        Rule(
            "thresholds_in_env_units",
            ("normalize_actions",),
            "normalize_actions must stay false (the module emits thresholds in env units)",
            lambda v: (
                None
                if not v["normalize_actions"]
                else (
                    "normalize_actions: True is invalid for L-UCBFair (its module emits thresholds "
                    "in env units); valid: false"
                )
            ),
            {"normalize_actions": True},
        ),
        Rule(
            "one_env_per_runner",
            ("num_envs_per_env_runner",),
            "one env per env runner (more episodes: episodes_per_iteration, remote runners)",
            lambda v: (
                None
                if v["num_envs_per_env_runner"] == 1
                else (
                    f"num_envs_per_env_runner: {v['num_envs_per_env_runner']!r} is invalid for "
                    "L-UCBFair; valid: 1 (use episodes_per_iteration and remote env runners)"
                )
            ),
            {"num_envs_per_env_runner": 2},
        ),
    )
    REPORTED_KEYS = (
        "lucbfair/*",
        "env_runners/lucbfair/*",
        "learners/__all_modules__/num_env_steps_trained",
        "learners/__all_modules__/num_env_steps_trained_lifetime",
    )

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or LUCBFair)
        self.horizon: int | None = None
        self.feature_map: Any = "rbf"
        self.feature_kwargs: dict = {}
        self.ridge: float = 0.01
        self.bonus_beta: float | None = None
        self.softmax_alpha: float | None = None
        self.dual_bound_xi: float = 20.0
        self.dual_step_eta: float | None = None
        self.num_episodes_hint: int = 500
        self.constraint_threshold: float | None = None
        self.constraint_tolerance: float = 0.1
        self.region_half_width: float = 0.1
        self.q_clip: str = "remaining"
        self.target_mode: str = "lsvi"
        self.episodes_per_iteration: int = 1
        self.regret_reference: bool = True
        self.regret_dp_grid: int = 51
        self.regret_dp_nus: list[float] | None = None
        self.normalize_actions = False
        self.clip_actions = True
        self.batch_mode = "complete_episodes"
        self.min_time_s_per_iteration = 0
        self.min_sample_timesteps_per_iteration = 0
        self.fairness_columns = False

    @override(AlgorithmConfig)
    def training(
        self,
        *,
        horizon=NotProvided,
        feature_map=NotProvided,
        feature_kwargs=NotProvided,
        ridge=NotProvided,
        bonus_beta=NotProvided,
        softmax_alpha=NotProvided,
        dual_bound_xi=NotProvided,
        dual_step_eta=NotProvided,
        num_episodes_hint=NotProvided,
        constraint_threshold=NotProvided,
        constraint_tolerance=NotProvided,
        region_half_width=NotProvided,
        q_clip=NotProvided,
        target_mode=NotProvided,
        episodes_per_iteration=NotProvided,
        regret_reference=NotProvided,
        regret_dp_grid=NotProvided,
        regret_dp_nus=NotProvided,
        **kwargs,
    ):
        """RLlib's ``training()`` plus L-UCBFair's settings (see the class attributes)."""
        super().training(**kwargs)
        return set_provided(
            self,
            horizon=horizon,
            feature_map=feature_map,
            feature_kwargs=feature_kwargs,
            ridge=ridge,
            bonus_beta=bonus_beta,
            softmax_alpha=softmax_alpha,
            dual_bound_xi=dual_bound_xi,
            dual_step_eta=dual_step_eta,
            num_episodes_hint=num_episodes_hint,
            constraint_threshold=constraint_threshold,
            constraint_tolerance=constraint_tolerance,
            region_half_width=region_half_width,
            q_clip=q_clip,
            target_mode=target_mode,
            episodes_per_iteration=episodes_per_iteration,
            regret_reference=regret_reference,
            regret_dp_grid=regret_dp_grid,
            regret_dp_nus=regret_dp_nus,
        )

    @override(AlgorithmConfig)
    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """Returns the spec of :class:`LUCBFairRLModule`."""
        return RLModuleSpec(module_class=LUCBFairRLModule)

    @override(AlgorithmConfig)
    def get_default_learner_class(self):
        """Returns :class:`NoOpLearner` (no optimizer, no DDP)."""
        return NoOpLearner

    # ------------------------------------------------------------ resolved settings
    def resolved_horizon(self) -> int:
        """``H``: ``horizon`` or the env's ``max_steps``."""
        if self.horizon is not None:
            return int(self.horizon)
        return self.env_max_steps()

    def env_max_steps(self) -> int:
        """The env's ``max_steps``, read from ``env_config`` and its class (nothing is built).

        Raises:
            ValueError: one line, for an env whose class has no ``max_steps`` argument or
                a ``max_steps`` that is not an integer >= 1.
        """
        value = declared_value(self.env, self.env_config, "max_steps")
        if value is NO_VALUE:
            raise ValueError(
                f"env: {self.env!r} is invalid for L-UCBFair (no max_steps); valid "
                "choices: fair/Replicator-v0, fair/ReplicatorAdult-v0"
            )
        return as_count("max_steps", value)

    def settings(self) -> Settings:
        """The numpy core's :class:`Settings` with every None default resolved."""
        H = self.resolved_horizon()
        xi = float(self.dual_bound_xi)
        K = int(self.num_episodes_hint)
        n_regions = len(region_grid(self.region_half_width)[0])
        return Settings(
            horizon=H,
            ridge=float(self.ridge),
            beta=0.1 * H if self.bonus_beta is None else float(self.bonus_beta),
            alpha=(
                lsvi.default_alpha(n_regions, K, xi, H)
                if self.softmax_alpha is None
                else float(self.softmax_alpha)
            ),
            xi=xi,
            eta=(
                lsvi.default_eta(xi, K, H)
                if self.dual_step_eta is None
                else float(self.dual_step_eta)
            ),
            threshold=(
                H * (1.0 - self.constraint_tolerance)
                if self.constraint_threshold is None
                else float(self.constraint_threshold)
            ),
            half_width=float(self.region_half_width),
            q_clip=self.q_clip,
            target_mode=self.target_mode,
        )

    @property
    @override(AlgorithmConfig)
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return super()._model_config_auto_includes | {
            "lucb_env": self.env,
            "lucb_env_config": dict(self.env_config or {}),
            "horizon": self.resolved_horizon() if self.env is not None else 1,
            "feature_map": self.feature_map,
            "feature_kwargs": dict(self.feature_kwargs or {}),
            "region_half_width": self.region_half_width,
            "q_clip": self.q_clip,
            "target_mode": self.target_mode,
            "ridge": self.ridge,
            "seed": self.seed,
        }

    def env_config_with_time(self) -> dict:
        """``env_config`` with ``include_time=True`` added for a replicator env without it."""
        env_config = dict(self.env_config or {})
        if (
            "include_time" not in env_config
            and self.env is not None
            and hasattr(model_env_class(self.env, user="L-UCBFair"), "q_from_observation")
        ):
            env_config["include_time"] = True
        return env_config

    @override(FairnessConfigMixin)
    def resolve_derived(self) -> None:
        """The shared derived settings, then ``include_time`` (called by ``freeze()``)."""
        super().resolve_derived()
        self.env_config = self.env_config_with_time()

    @override(AlgorithmConfig)
    def validate(self) -> None:
        """RLlib's and the fairness checks, then L-UCBFair's (one-line messages).

        A replicator ``env_config`` without ``include_time`` is checked as it will run,
        with ``include_time=True`` (:meth:`resolve_derived` sets it: the module needs the
        step index); an explicit False is an error. The env is checked on its class and
        its declared arguments; nothing is built here (the algorithm and its module build
        it in their setup).
        """
        super().validate()
        if self.env is None:
            return
        if not hasattr(model_env_class(self.env, user="L-UCBFair"), "q_from_observation"):
            raise ValueError(
                f"env: {self.env!r} is invalid for L-UCBFair (no replicator state); valid "
                "choices: fair/Replicator-v0, fair/ReplicatorAdult-v0"
            )
        include_time = declared_value(self.env, self.env_config_with_time(), "include_time")
        if not (isinstance(include_time, (bool, np.bool_)) and include_time):
            raise ValueError(
                f"env_config.include_time: {include_time!r} is invalid for L-UCBFair (the "
                "module indexes its per-step weights by the time feature); valid: true"
            )
        max_steps = self.env_max_steps()
        if self.horizon is not None and int(self.horizon) != max_steps:
            raise ValueError(
                f"horizon: {self.horizon!r} is invalid; valid: the env's max_steps "
                f"({max_steps}) or None"
            )


class LUCBFair(Algorithm):
    """Plans on the driver, samples with the plan, steps the dual variable, syncs."""

    @classmethod
    @override(Algorithm)
    def get_default_config(cls) -> LUCBFairConfig:
        """Returns a fresh :class:`LUCBFairConfig`."""
        return LUCBFairConfig()

    @override(Algorithm)
    def setup(self, config) -> None:
        """RLlib's setup, then the numpy core and an initial push of its (empty) plan."""
        super().setup(config)
        cfg = self.config
        self.core = LUCBFairCore(
            cfg.settings(), make_feature_map(cfg.feature_map, **dict(cfg.feature_kwargs or {}))
        )
        self._distortion_sum = 0.0
        self._trained_lifetime = 0
        # (loss, disparity, Y used) of the last `metrics_num_episodes_for_smoothing` episodes
        self._recent = np.zeros((0, 3))
        self.regret = self._regret_tracker()
        self._push()

    def _regret_tracker(self) -> RegretTracker | None:
        """Eq. 3's regret tracker, or None when the exact optimum is not available.

        Available for a deterministic replicator env (``population_size=None``): its
        vectorised ``step_statistics`` is the DP's model; actions are the region centres.
        """
        cfg = self.config
        if not cfg.regret_reference:
            return None
        from rllib_fair.fairness.replicator_dp import step_fn_from_statistics

        env = make_model_env(cfg.env, cfg.env_config, user="L-UCBFair")
        if not hasattr(env, "step_statistics") or getattr(env, "population_size", 1) is not None:
            return None
        s = self.core.settings
        reference = OptimumReference(
            step_fn_from_statistics(env.step_statistics),
            self.core.centres,
            s.horizon,
            s.threshold,
            grid=int(cfg.regret_dp_grid),
            nus=DEFAULT_NUS if cfg.regret_dp_nus is None else tuple(cfg.regret_dp_nus),
        )
        return RegretTracker(reference)

    # ------------------------------------------------------------ helpers
    def _push(self) -> None:
        """Module state -> every learner (checkpoints) and every env runner (acting)."""
        state = self.core.module_state()
        self.learner_group.foreach_learner(
            lambda lrn: lrn.module["default_policy"].set_state(state)
        )
        self.env_runner_group.foreach_env_runner(
            lambda er: er.module.set_state(state), local_env_runner=True
        )

    def _sample(self, n: int):
        """``n`` complete episodes with exploration; split over the remote runners if any."""
        group = self.env_runner_group
        n_remote = group.num_remote_env_runners()
        if n_remote == 0:
            eps = self.env_runner.sample(num_episodes=n, explore=True)
            return eps, [self.env_runner.get_metrics()]
        per = [n // n_remote + (1 if i < n % n_remote else 0) for i in range(n_remote)]
        ids = [i + 1 for i, m in enumerate(per) if m > 0]
        counts = {i + 1: m for i, m in enumerate(per)}

        def _run(er):
            er.module.worker_index = er.worker_index
            return er.sample(num_episodes=counts[er.worker_index], explore=True), er.get_metrics()

        out = group.foreach_env_runner(_run, local_env_runner=False, remote_worker_ids=ids)
        episodes = [ep for eps, _ in out for ep in eps]
        return episodes, [m for _, m in out]

    # ------------------------------------------------------------ training
    @override(Algorithm)
    def training_step(self) -> None:
        """Episodes with the current plan -> dual step -> planning pass -> sync."""
        cfg = self.config
        core = self.core
        H = core.settings.horizon
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            episodes, runner_metrics = self._sample(cfg.episodes_per_iteration)
        self.metrics.aggregate(runner_metrics, key=ENV_RUNNER_RESULTS)
        rows = {k: [] for k in ("q", "a", "r", "g", "loss", "disparity")}
        if getattr(self, "_env", None) is None:
            self._env = make_model_env(cfg.env, cfg.env_config, user="L-UCBFair")
        env = self._env
        for ep in episodes:
            if len(ep) != H:
                continue  # only complete H-step episodes (batch_mode=complete_episodes)
            obs = np.asarray(ep.get_observations(), dtype=np.float64)
            infos = ep.get_infos()[1:]  # info of step t belongs to transition t
            rows["q"].append(env.q_from_observation(obs))
            rows["a"].append(np.asarray(ep.get_actions(), dtype=np.float64).reshape(H, -1))
            for key in ("r", "g", "loss", "disparity"):
                rows[key].append(np.array([float(i[key]) for i in infos]))
        if not rows["q"]:
            return
        arr = {k: np.stack(v) for k, v in rows.items()}
        t0 = time.perf_counter()
        info = core.observe(arr["q"], arr["a"], arr["r"], arr["g"])
        plan_s = time.perf_counter() - t0
        self._push()
        n_data = core.store["r"].size
        self._distortion_sum += float(np.sum(core.settings.threshold - arr["g"].sum(axis=1)))
        if self.regret is not None:  # Eq. 3 against the exact constrained optimum
            self.regret.update(arr["q"][:, 0], arr["r"].sum(axis=1))
            for key, value in (
                ("regret_cum", self.regret.regret_sum),
                ("regret_cum_gap", self.regret.gap_sum),
                ("regret_infeasible_episodes", self.regret.infeasible),
            ):
                self.metrics.log_value(("lucbfair", key), value, window=1)
        self.metrics.log_value(
            (LEARNER_RESULTS, ALL_MODULES, NUM_ENV_STEPS_TRAINED), n_data, window=1
        )
        self._trained_lifetime += n_data
        self.metrics.log_value(
            (LEARNER_RESULTS, ALL_MODULES, NUM_ENV_STEPS_TRAINED_LIFETIME),
            self._trained_lifetime,
            window=1,
        )
        for key, value in (
            ("Y", core.dual),
            ("Y_used", info["Y_used"]),
            ("V_r1", info["V_r1"]),
            ("V_g1", info["V_g1"]),
            ("episode_loss_mean", float(arr["loss"].mean())),
            ("episode_disparity_mean", float(arr["disparity"].mean())),
            ("episode_return_r", float(arr["r"].sum(axis=1).mean())),
            ("episode_return_g", float(arr["g"].sum(axis=1).mean())),
            ("final_q_mean", float(arr["q"][:, -1].mean())),
            ("distortion_cum", max(0.0, self._distortion_sum)),
            ("episodes", core.episodes),
            ("plan_time_s", plan_s),
        ):
            self.metrics.log_value(("lucbfair", key), value, window=1)
        # Means over the last `metrics_num_episodes_for_smoothing` sampled episodes of
        # their per-step loss and squared disparity (the paper's L and D) and of the dual
        # variable their plan used (> 0: the constraint binds), so a pass criterion bounds
        # the trend of the last episodes, not one episode (with one episode per iteration,
        # env_runners/episode_return_mean and fairness/... are that one episode's values).
        new = np.column_stack(
            [
                arr["loss"].mean(axis=1),
                arr["disparity"].mean(axis=1),
                np.full(len(arr["loss"]), info["Y_used"]),
            ]
        )
        window = max(1, int(cfg.metrics_num_episodes_for_smoothing))
        self._recent = np.concatenate([self._recent, new])[-window:]
        for key, value in zip(SMOOTHED_KEYS, self._recent.mean(axis=0)):
            self.metrics.log_value((ENV_RUNNER_RESULTS, "lucbfair", key), float(value), window=1)

    # ------------------------------------------------------------ checkpoints
    @override(Algorithm)
    def get_state(self, components=None, *, not_components=None, **kwargs):
        """RLlib's state plus the numpy core (data store, dual variable, accumulators)."""
        state = super().get_state(components, not_components=not_components, **kwargs)
        state[_STATE_KEY] = self.core.get_state()
        state[_STATE_KEY]["distortion_sum"] = self._distortion_sum
        state[_STATE_KEY]["trained_lifetime"] = self._trained_lifetime
        state[_STATE_KEY]["recent"] = self._recent.copy()
        if self.regret is not None:
            state[_STATE_KEY]["regret"] = self.regret.get_state()
        return state

    @override(Algorithm)
    def set_state(self, state) -> None:
        """Restores RLlib's state and the numpy core, then pushes the plan."""
        super().set_state(state)
        if _STATE_KEY in state:
            self.core.set_state(state[_STATE_KEY])
            self._distortion_sum = float(state[_STATE_KEY].get("distortion_sum", 0.0))
            self._trained_lifetime = int(state[_STATE_KEY].get("trained_lifetime", 0))
            self._recent = np.asarray(state[_STATE_KEY].get("recent", np.zeros((0, 3))))
            if self.regret is not None:
                self.regret.set_state(state[_STATE_KEY].get("regret", {}))
            self._push()
