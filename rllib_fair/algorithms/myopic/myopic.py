"""The myopic baselines of Yin et al. 2023 (Sec. 3.3, Eq. 7a-d) as RLlib algorithms.

A myopic baseline observes the current state of a replicator-dynamics population and
chooses the two per-group thresholds that minimise a *one-step* objective (repeated risk
minimisation). It ignores the dynamics and learns nothing across steps:

* ``Myopic`` (Eq. 7a): ``f(a) = L(s, a)``;
* ``MyopicFair`` (Eq. 7b): ``f(a) = (1 - lambda) L(s, a) + lambda D(s, a)``;
* ``Maxmin`` (Eq. 7c): ``f(a) = max_g L_g(s, a)``;
* ``MaxminFair`` (Eq. 7d): ``f(a) = (1 - lambda) max_g L_g(s, a) + lambda D(s, a)``;

with ``L`` and ``D`` the loss and squared disparity the environment is configured with.
The paper optimises a parameterised stochastic policy by "simple gradient descent"; here
the thresholds are deterministic and found by
:func:`rllib_fair.envs.replicator_myopic.myopic_action` (a grid over ``[0, 1]^2`` then
projected gradient descent from the best grid point: deterministic, so a baseline's
trajectory depends only on the initial state).

RLlib mapping: :class:`~.torch.myopic_torch_rl_module.MyopicRLModule` carries no weights; it
rebuilds the environment's model from the same env id and ``env_config`` and solves the
objective per observation in its forward passes. :class:`Myopic` is an ``Algorithm``
whose ``training_step`` only samples and reports (fairness metrics included); its learner
registers no optimizer. ``lambda`` is ``fair_lambda`` (default 0.5, the value the paper's
first version states; the reference's greedy script used 1.0).
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.execution.rollout_ops import synchronous_parallel_sample
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    TIMERS,
)

from rllib_fair.algorithms.common.model_env import model_env_class
from rllib_fair.algorithms.common.setters import set_provided
from rllib_fair.algorithms.common.torch.no_op_torch_learner import NoOpLearner
from rllib_fair.algorithms.myopic.torch.myopic_torch_rl_module import MyopicRLModule
from rllib_fair.rllib.config import FairnessConfigMixin
from rllib_fair.rllib.targets import SQUARED_DISPARITY, OwnMetrics
from rllib_fair.settings import Rule, choice, integer, number

#: Rule of the baselines whose module emits thresholds in env units.
ENV_UNIT_ACTIONS = Rule(
    "thresholds_in_env_units",
    ("normalize_actions",),
    "normalize_actions must stay false (the module emits thresholds in env units)",
    lambda v: (
        None
        if not v["normalize_actions"]
        else (
            "normalize_actions: True is invalid for a myopic baseline (its thresholds are in env "
            "units); valid: false"
        )
    ),
    {"normalize_actions": True},
)

#: Objectives of Eq. 7a-d, by name.
OBJECTIVES: tuple[str, ...] = ("myopic", "myopic_fair", "maxmin", "maxmin_fair")


class MyopicConfig(FairnessConfigMixin, AlgorithmConfig):
    """Config of the myopic baselines (Eq. 7a-d of Yin et al. 2023).

    Attributes:
        objective: one of :data:`OBJECTIVES`; the registered names ``Myopic``,
            ``MyopicFair``, ``Maxmin`` and ``MaxminFair`` differ only in its default.
        fair_lambda: lambda of the "-Fair" objectives, in [0, 1] (default 0.5, the paper's
            first version; the reference's greedy script used 1.0). Unused otherwise.
        solver_grid: points per axis of the threshold grid (>= 2).
        solver_iters: projected gradient steps after the grid (>= 0).
        solver_step: gradient step size (> 0).
        train_batch_size_per_learner: env steps sampled per training iteration.
    """

    own_metrics = OwnMetrics(
        note="each step's loss L minimised greedily (Eq. 7a); no fairness term"
    )

    DEFAULT_OBJECTIVE = "myopic"

    DECLARED_SETTINGS = (
        choice("objective", OBJECTIVES, "the per-step objective minimised (Eq. 7a-d)"),
        number("fair_lambda", "lambda of the -Fair objectives", 0, 1),
        integer("solver_grid", "points per axis of the threshold grid", 2),
        integer("solver_iters", "projected gradient steps after the grid", 0),
        number("solver_step", "gradient step size", 0, low_open=True),
    )
    DECLARED_RULES = (ENV_UNIT_ACTIONS,)

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or Myopic)
        self.objective: str = self.DEFAULT_OBJECTIVE
        self.fair_lambda: float = 0.5
        self.solver_grid: int = 101
        self.solver_iters: int = 100
        self.solver_step: float = 0.05
        # The module emits thresholds in env units, never squashed actions.
        self.normalize_actions = False
        self.clip_actions = True
        self.train_batch_size_per_learner = 1000
        # Nothing is learned, so no fairness columns are needed by a learner.
        self.fairness_columns = False

    @override(AlgorithmConfig)
    def training(
        self,
        *,
        objective=NotProvided,
        fair_lambda=NotProvided,
        solver_grid=NotProvided,
        solver_iters=NotProvided,
        solver_step=NotProvided,
        **kwargs,
    ):
        """RLlib's ``training()`` plus the baseline's settings (see the class attributes)."""
        super().training(**kwargs)
        return set_provided(
            self,
            objective=objective,
            fair_lambda=fair_lambda,
            solver_grid=solver_grid,
            solver_iters=solver_iters,
            solver_step=solver_step,
        )

    @override(AlgorithmConfig)
    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """Returns the spec of :class:`MyopicRLModule`."""
        return RLModuleSpec(module_class=MyopicRLModule)

    @override(AlgorithmConfig)
    def get_default_learner_class(self):
        """Returns :class:`~rllib_fair.algorithms.common.torch.no_op_torch_learner.NoOpLearner`."""
        return NoOpLearner

    @property
    @override(AlgorithmConfig)
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return super()._model_config_auto_includes | {
            "myopic_env": self.env,
            "myopic_env_config": dict(self.env_config or {}),
            "objective": self.objective,
            "fair_lambda": self.fair_lambda,
            "solver_grid": self.solver_grid,
            "solver_iters": self.solver_iters,
            "solver_step": self.solver_step,
        }

    @override(AlgorithmConfig)
    def validate(self) -> None:
        """RLlib's and the fairness checks, then the baseline's (one-line messages).

        The env is checked on its class (it must have the one-step objective model the
        module solves); nothing is built here.
        """
        super().validate()
        if self.env is not None:
            cls = model_env_class(self.env, user="a myopic baseline")
            if not (hasattr(cls, "objective_values") and hasattr(cls, "q_from_observation")):
                raise ValueError(
                    f"env: {self.env!r} is invalid for a myopic baseline (it has no one-step "
                    "objective model); valid choices: fair/Replicator-v0, fair/ReplicatorAdult-v0"
                )


class Myopic(Algorithm):
    """Samples with the per-step optimiser and reports; never updates a learner."""

    @classmethod
    @override(Algorithm)
    def get_default_config(cls) -> MyopicConfig:
        """Returns a fresh :class:`MyopicConfig`."""
        return MyopicConfig()

    @override(Algorithm)
    def training_step(self) -> None:
        """One iteration: sample ``train_batch_size_per_learner`` env steps, log metrics."""
        cfg = self.config
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            _, runner_metrics = synchronous_parallel_sample(
                worker_set=self.env_runner_group,
                max_env_steps=cfg.train_batch_size_per_learner,
                sample_timeout_s=cfg.sample_timeout_s,
                _uses_new_env_runners=True,
                _return_metrics=True,
            )
        # RLlib derives the lifetime step counters (Tune's stop keys) from these.
        self.metrics.aggregate(runner_metrics, key=ENV_RUNNER_RESULTS)


class MyopicFairConfig(MyopicConfig):
    """Myopic-Fair (Eq. 7b): :class:`MyopicConfig` with ``objective="myopic_fair"``."""

    own_metrics = OwnMetrics(
        constraints=(SQUARED_DISPARITY,),
        note="each step's (1 - lambda) L + lambda D, minimised greedily (Eq. 7b)",
    )
    DEFAULT_OBJECTIVE = "myopic_fair"

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or MyopicFair)


class MyopicFair(Myopic):
    """Myopic-Fair (Eq. 7b): minimises (1 - lambda) L + lambda D at every step."""

    @classmethod
    @override(Algorithm)
    def get_default_config(cls) -> MyopicFairConfig:
        """Returns a fresh :class:`MyopicFairConfig`."""
        return MyopicFairConfig()


class MaxminConfig(MyopicConfig):
    """Maxmin (Eq. 7c): :class:`MyopicConfig` with ``objective="maxmin"``."""

    own_metrics = OwnMetrics(
        note="each step's worst group loss max_g L_g minimised greedily (Eq. 7c); no fairness term"
    )
    DEFAULT_OBJECTIVE = "maxmin"

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or Maxmin)


class Maxmin(Myopic):
    """Maxmin (Eq. 7c): minimises the worse group's loss at every step."""

    @classmethod
    @override(Algorithm)
    def get_default_config(cls) -> MaxminConfig:
        """Returns a fresh :class:`MaxminConfig`."""
        return MaxminConfig()


class MaxminFairConfig(MyopicConfig):
    """Maxmin-Fair (Eq. 7d): :class:`MyopicConfig` with ``objective="maxmin_fair"``."""

    own_metrics = OwnMetrics(
        constraints=(SQUARED_DISPARITY,),
        note="each step's (1 - lambda) max_g L_g + lambda D, minimised greedily (Eq. 7d)",
    )
    DEFAULT_OBJECTIVE = "maxmin_fair"

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or MaxminFair)


class MaxminFair(Myopic):
    """Maxmin-Fair (Eq. 7d): minimises (1 - lambda) max_g L_g + lambda D at every step."""

    @classmethod
    @override(Algorithm)
    def get_default_config(cls) -> MaxminFairConfig:
        """Returns a fresh :class:`MaxminFairConfig`."""
        return MaxminFairConfig()
