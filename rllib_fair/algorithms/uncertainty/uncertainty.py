"""The five lending strategies of Lee et al. (FAccT 2026) as RLlib algorithms.

The methods are batch decisions under a budget with a logistic model retrained on
selective feedback, not gradient RL (docs/methods/lee2026.md). On RLlib they are an
Algorithm with its own training step, a weight-free module and a no-op learner:

* :class:`~.torch.uncertainty_torch_rl_module.UncertaintyRLModule` is weight-free for
  torch; it carries the bank's numpy state (``theta``, the Fisher matrix ``X^T W X`` of
  the labelled rows for the delta-method CI, the strategy generator's state) through
  ``get_state``/``set_state`` and decides a whole quarter in its forward pass with
  :func:`rllib_fair.uncertainty.decide` (``_forward_exploration``: the configured
  strategy; ``_forward_inference``: naive top-B).
* :class:`Uncertainty` owns the bank (:class:`rllib_fair.uncertainty.QuarterlyAgent`).
  Its ``training_step`` samples **one env step = one quarter** of
  ``fair/QuarterlyLending-v0``: on the base step (the episode's first, whose observation
  carries the base quarter's labels: an env runner decides the reset observation in the same
  ``sample()`` call, so the model cannot come from an info) it fits the base model; on a decision
  step it replays the decision with its own copy of the strategy generator (so the
  generator advances exactly as in :func:`~rllib_fair.uncertainty.run_quarters`; a
  mismatch with the runner's decision is counted in ``uncertainty/decision_mismatch``),
  updates the model on the granted rows' labels ``info["y_obs"]`` only, then pushes the new
  state to the env runners. It logs the quarter's metrics under ``uncertainty/``.
* :class:`~rllib_fair.algorithms.common.torch.no_op_torch_learner.NoOpLearner`: no optimizer,
  no DDP.

Each episode is one configuration run of the core: data seed = the env's reset seed
(``info["data_seed"]``), the SGD and strategy streams ``make_streams(data_seed)``; so with
``seed: S`` and no remote env runner the first episode reproduces ``run_quarters(seed=S)``
(tests/algorithms/test_uncertainty_rllib.py). Registered names: ``Uncertainty`` (strategy
``naive`` by default, any strategy via ``strategy:``) and one variant per other strategy
(:data:`VARIANTS`).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
from ray.rllib.algorithms.algorithm import Algorithm
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.execution.rollout_ops import synchronous_parallel_sample
from ray.rllib.utils.annotations import override
from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, ENV_RUNNER_SAMPLING_TIMER, TIMERS

from rllib_fair.algorithms.common.setters import set_provided
from rllib_fair.algorithms.common.torch.no_op_torch_learner import NoOpLearner
from rllib_fair.algorithms.uncertainty.torch.uncertainty_torch_rl_module import (
    UncertaintyRLModule,
    design_for,
)
from rllib_fair.rllib.config import FairnessConfigMixin
from rllib_fair.settings import Rule, bool_setting, choice, integer, number
from rllib_fair.uncertainty import (
    GROUP_ENCODINGS,
    STRATEGIES,
    QuarterlyAgent,
    QuarterlyConfig,
    fisher_information,
    make_streams,
)
from rllib_fair.uncertainty.strategies import EXPLORATION_SIZINGS

ENV_ID = "fair/QuarterlyLending-v0"
#: Per-quarter metrics logged under ``uncertainty/`` (oracle metrics need label access
#: ``oracle``; the others are computed from decisions and groups only).
LOGGED_METRICS: tuple[str, ...] = (
    "delta_sr",
    "delta_fpr",
    "delta_fnr",
    "delta_acc",
    "profit",
    "utility_q",
    "n_granted",
)


class UncertaintyConfig(FairnessConfigMixin, AlgorithmConfig):
    """Config of the lending strategies (defaults: Table 2 and the core's).

    Attributes:
        strategy: one of :data:`~rllib_fair.uncertainty.STRATEGIES`; each registered name
            only changes its default.
        proportion_certain, delta, rejection_threshold, ci_z, fill_budget,
        exploration_sizing, n_epochs, lr, batch_size, use_group_feature, q_encoding,
        group_encoding, train_on, optimizer, cf_alpha, cf_rows, cf_bce_weight: as in
        :class:`rllib_fair.uncertainty.QuarterlyConfig`.
        train_batch_size_per_learner: quarters (env steps) per training iteration (1), each
            sampled, decided and learned from before the next.
    """

    DEFAULT_STRATEGY = "naive"
    KEYS: tuple[str, ...] = (
        "strategy",
        "proportion_certain",
        "delta",
        "rejection_threshold",
        "ci_z",
        "fill_budget",
        "exploration_sizing",
        "n_epochs",
        "lr",
        "batch_size",
        "use_group_feature",
        "q_encoding",
        "group_encoding",
        "train_on",
        "optimizer",
        "cf_alpha",
        "cf_rows",
        "cf_bce_weight",
    )

    DECLARED_SETTINGS = (
        choice("strategy", STRATEGIES, "lending strategy of the bank"),
        number("proportion_certain", "certain share of the budget", 0, 1),
        number("delta", "exploration fraction of the quarter", 0, 1),
        number("rejection_threshold", "least repayment probability to grant", 0, 1),
        number("ci_z", "normal quantile of the confidence interval", 0, low_open=True),
        bool_setting("fill_budget", "spend the whole budget"),
        choice(
            "exploration_sizing",
            EXPLORATION_SIZINGS,
            "the paper's two descriptions of the exploration size",
        ),
        integer("n_epochs", "passes over the data per fit", 0),
        number("lr", "step size of the logistic model's fit", 0, low_open=True),
        integer("batch_size", "minibatch rows", 1, none=True, none_means="full batch"),
        bool_setting("use_group_feature", "the group is a model input"),
        choice("q_encoding", ("int", "onehot"), "encoding of the Q feature"),
        choice("group_encoding", GROUP_ENCODINGS, "how the group enters the model"),
        choice(
            "train_on",
            ("quarter", "cumulative"),
            "quarter: this quarter's loans (warm start); cumulative: every labelled row",
        ),
        choice("optimizer", ("sgd", "newton"), "sgd (the paper) or newton (MLE)"),
        number("cf_alpha", "sharpness of the counterfactual soft decision", 0, low_open=True),
        choice(
            "cf_rows",
            ("all", "labelled"),
            "rows of the counterfactual objective",
        ),
        number("cf_bce_weight", "weight of a log-likelihood term in that objective", 0),
    )
    DECLARED_RULES = (
        Rule(
            "one_runner_one_env",
            ("num_env_runners", "num_envs_per_env_runner"),
            "at most one env runner with one env (the bank follows one episode)",
            lambda v: (
                None
                if v["num_env_runners"] <= 1 and v["num_envs_per_env_runner"] == 1
                else (
                    f"num_env_runners={v['num_env_runners']}, num_envs_per_env_runner="
                    f"{v['num_envs_per_env_runner']}: invalid; valid: at most 1 env runner with "
                    "1 env (the bank follows one episode quarter by quarter)"
                )
            ),
            {"num_env_runners": 2},
        ),
        Rule(
            "no_evaluation",
            ("evaluation_interval",),
            "no evaluation runs (the bank is judged on the quarters it decides)",
            lambda v: (
                None
                if not v["evaluation_interval"]
                else (
                    f"evaluation_interval={v['evaluation_interval']}: invalid; valid: None or 0 "
                    "(the strategies are judged on the quarters they decide while learning: an "
                    "evaluation episode is a data set the bank never fitted, and evaluation "
                    "runners never receive its model)"
                )
            ),
            {"evaluation_interval": 1},
        ),
        Rule(
            "newton_not_counterfactual",
            ("optimizer", "strategy"),
            "optimizer newton fits the likelihood, which the counterfactual strategy does not",
            lambda v: (
                None
                if not (v["optimizer"] == "newton" and v["strategy"] == "counterfactual")
                else (
                    "optimizer: 'newton' is invalid with strategy 'counterfactual' (it fits the "
                    "likelihood); valid: sgd"
                )
            ),
            {"optimizer": "newton", "strategy": "counterfactual"},
        ),
    )
    REPORTED_KEYS = ("uncertainty/*",)

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or Uncertainty)
        base = QuarterlyConfig()
        for key in self.KEYS:
            setattr(self, key, getattr(base, key))
        self.strategy = self.DEFAULT_STRATEGY
        self.env = ENV_ID
        # Quarters (env steps) per training iteration, sampled one at a time.
        self.rollout_fragment_length = 1
        self.train_batch_size_per_learner = 1
        self.normalize_actions = False
        self.clip_actions = False
        self.fairness_columns = False

    @override(AlgorithmConfig)
    def training(
        self,
        *,
        strategy=NotProvided,
        proportion_certain=NotProvided,
        delta=NotProvided,
        rejection_threshold=NotProvided,
        ci_z=NotProvided,
        fill_budget=NotProvided,
        exploration_sizing=NotProvided,
        n_epochs=NotProvided,
        lr=NotProvided,
        batch_size=NotProvided,
        use_group_feature=NotProvided,
        q_encoding=NotProvided,
        group_encoding=NotProvided,
        train_on=NotProvided,
        optimizer=NotProvided,
        cf_alpha=NotProvided,
        cf_rows=NotProvided,
        cf_bce_weight=NotProvided,
        **kwargs,
    ):
        """RLlib's ``training()`` plus the strategy settings (see the class attributes)."""
        super().training(**kwargs)
        return set_provided(
            self,
            strategy=strategy,
            proportion_certain=proportion_certain,
            delta=delta,
            rejection_threshold=rejection_threshold,
            ci_z=ci_z,
            fill_budget=fill_budget,
            exploration_sizing=exploration_sizing,
            n_epochs=n_epochs,
            lr=lr,
            batch_size=batch_size,
            use_group_feature=use_group_feature,
            q_encoding=q_encoding,
            group_encoding=group_encoding,
            train_on=train_on,
            optimizer=optimizer,
            cf_alpha=cf_alpha,
            cf_rows=cf_rows,
            cf_bce_weight=cf_bce_weight,
        )

    def quarterly_config(self) -> QuarterlyConfig:
        """The core's :class:`~rllib_fair.uncertainty.QuarterlyConfig` of the bank side."""
        env_cfg = dict(self.env_config or {})
        world = {
            k: env_cfg[k]
            for k in ("num_partitions", "budget_prop", "gain", "loss", "budget_label")
            if k in env_cfg
        }
        return QuarterlyConfig(**{k: getattr(self, k) for k in self.KEYS}, **world)

    def feature_names(self) -> tuple[str, ...]:
        """The env's raw feature names (``("R" or "P", "Q", "A")``), from its bias knobs.

        Read from ``env_config`` by the env class; no env is built.
        """
        from rllib_fair.envs.quarterly_lending import QuarterlyLendingEnv

        return QuarterlyLendingEnv.feature_names_for(self.env_config)

    @override(AlgorithmConfig)
    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """Returns the spec of :class:`UncertaintyRLModule`."""
        return RLModuleSpec(module_class=UncertaintyRLModule)

    @override(AlgorithmConfig)
    def get_default_learner_class(self):
        """Returns :class:`~rllib_fair.algorithms.common.torch.no_op_torch_learner.NoOpLearner`."""
        return NoOpLearner

    @property
    @override(AlgorithmConfig)
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return super()._model_config_auto_includes | {
            **{k: getattr(self, k) for k in self.KEYS},
            "feature_names": self.feature_names(),
        }

    @override(AlgorithmConfig)
    def validate(self) -> None:
        """RLlib's and the fairness checks, then the strategy's (one-line messages)."""
        super().validate()
        env = self.env.split(":", 1)[-1] if isinstance(self.env, str) else self.env
        if env != ENV_ID:
            raise ValueError(f"env: {self.env!r} is invalid; valid: {ENV_ID}")
        try:
            self.quarterly_config()
        except (TypeError, ValueError) as err:
            raise ValueError(" ".join(str(err).split())) from None


class Uncertainty(Algorithm):
    """One quarter per iteration: sample, replay the decision, update the bank, push state."""

    @classmethod
    @override(Algorithm)
    def get_default_config(cls) -> UncertaintyConfig:
        """Returns a fresh :class:`UncertaintyConfig`."""
        return UncertaintyConfig()

    @override(Algorithm)
    def setup(self, config) -> None:
        """RLlib's setup plus the bank's bookkeeping."""
        super().setup(config)
        self._qcfg = self.config.quarterly_config()
        self._design = design_for(
            self.config.feature_names(),
            self.config.use_group_feature,
            self.config.q_encoding,
            self.config.group_encoding,
        )
        self._agent: QuarterlyAgent | None = None
        self._cumulative = 0.0  # cumulative utility_q of the episode
        #: One dict per decided quarter (data seed, quarter, decisions, env metrics); the
        #: last 4096 quarters.
        self.quarter_log: deque[dict[str, Any]] = deque(maxlen=4096)

    # ---------------------------------------------------------------- bank
    def _start_episode(self, data_seed: int, obs0: dict[str, np.ndarray]) -> None:
        streams = make_streams(int(data_seed))
        agent = QuarterlyAgent(self._qcfg, self._design, streams["sgd"], streams["strategy"])
        n = int(np.asarray(obs0["mask"]).sum())
        raw = np.asarray(obs0["features"], dtype=np.float64)[:n]
        group = raw[:, self._design.feature_names.index("A")].astype(np.int64)
        agent.fit_base(raw, np.asarray(obs0["labels"])[:n].astype(np.int64), group)
        self._agent = agent
        self._cumulative = 0.0

    def _decision_step(self, obs, action, info, reward: float) -> dict[str, float]:
        agent = self._agent
        n = int(np.asarray(obs["mask"]).sum())
        raw = np.asarray(obs["features"], dtype=np.float64)[:n]
        granted = np.asarray(action).reshape(-1)[:n].astype(bool)
        budget = int(info["budget"])
        p, halfwidth = agent.score(raw)
        replay = agent.decide(p, budget, halfwidth)  # advances the strategy stream
        mismatch = int(np.sum(replay.granted != granted))
        groups = np.asarray(info["groups"], dtype=np.int64)
        agent.update(raw, granted, np.asarray(info["y_obs"]), groups, budget)
        metrics = dict(info.get("metrics") or {})
        if not metrics:  # observed label access: what decisions and groups alone give
            sr = [granted[groups == g].mean() if np.any(groups == g) else 0.0 for g in (0, 1)]
            metrics = {
                "delta_sr": float(sr[0] - sr[1]),
                "n_granted": float(granted.sum()),
                "utility_q": float(reward),
            }
        self._cumulative += float(metrics["utility_q"])
        metrics["cumulative_utility"] = self._cumulative
        metrics["decision_mismatch"] = float(mismatch)
        metrics["n_explored"] = float(replay.explored.sum())
        self.quarter_log.append(
            {
                "data_seed": int(info.get("data_seed", -1)),
                "quarter": int(info["quarter"]),
                "granted": granted.copy(),
                "metrics": metrics,
            }
        )
        return metrics

    def _module_state(self) -> dict[str, Any]:
        agent = self._agent
        fisher = None
        if self._qcfg.strategy == "uncertainty_aware" or self._qcfg.compute_halfwidth:
            fisher = fisher_information(agent.model.theta, agent.labelled_x)
        return {
            "theta": agent.model.theta.copy(),
            "fisher": fisher,
            "rng_state": agent.strategy_rng.bit_generator.state,
            "fitted": True,
        }

    @override(Algorithm)
    def training_step(self) -> None:
        """Samples ``train_batch_size_per_learner`` quarters, one at a time.

        After each quarter: update the bank, push its state to the env runners, log metrics.
        """
        for _ in range(max(1, int(self.config.train_batch_size_per_learner or 1))):
            self._one_quarter()

    def _one_quarter(self) -> None:
        cfg = self.config
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            episodes, runner_metrics = synchronous_parallel_sample(
                worker_set=self.env_runner_group,
                max_env_steps=1,
                sample_timeout_s=cfg.sample_timeout_s,
                _uses_new_env_runners=True,
                _return_metrics=True,
            )
        self.metrics.aggregate(runner_metrics, key=ENV_RUNNER_RESULTS)
        for episode in episodes:
            if len(episode) == 0:
                continue
            infos = episode.get_infos()
            for t in range(len(episode)):
                obs_t = episode.get_observations(t)  # a dict (Dict observation space)
                if episode.t_started + t == 0:  # base quarter: fit the base model
                    self._start_episode(infos[0]["data_seed"], obs_t)
                elif self._agent is not None:
                    m = self._decision_step(
                        obs_t, episode.get_actions(t), infos[t + 1], episode.get_rewards(t)
                    )
                    for key in (*LOGGED_METRICS, "cumulative_utility", "decision_mismatch"):
                        if key in m:
                            self.metrics.log_value(("uncertainty", key), m[key], window=1)
        if self._agent is not None:
            state = self._module_state()
            self.env_runner_group.foreach_env_runner(
                lambda runner: runner.module.set_state(state),
                local_env_runner=True,
            )


def _variant(strategy: str, name: str):
    config_cls = type(
        f"{name}Config",
        (UncertaintyConfig,),
        {
            "DEFAULT_STRATEGY": strategy,
            "__doc__": f"{name}: :class:`UncertaintyConfig` with strategy={strategy!r}.",
            "__module__": __name__,
        },
    )

    def __init__(self, algo_class=None):
        UncertaintyConfig.__init__(self, algo_class=algo_class or globals()[name])

    config_cls.__init__ = __init__
    algo_cls = type(
        name,
        (Uncertainty,),
        {
            "__doc__": f"{name}: the {strategy!r} lending strategy (Lee et al. 2026, Sec. 4).",
            "__module__": __name__,
            "get_default_config": classmethod(lambda cls: config_cls()),
        },
    )
    return config_cls, algo_cls


#: Registered name -> strategy (``Uncertainty`` is the base, strategy ``naive``).
VARIANTS: dict[str, str] = {
    "UncertaintyNaiveExploration": "naive_exploration",
    "UncertaintyProbWeighted": "prob_weighted",
    "UncertaintyAware": "uncertainty_aware",
    "UncertaintyCounterfactual": "counterfactual",
}
UncertaintyNaiveExplorationConfig, UncertaintyNaiveExploration = _variant(
    "naive_exploration", "UncertaintyNaiveExploration"
)
UncertaintyProbWeightedConfig, UncertaintyProbWeighted = _variant(
    "prob_weighted", "UncertaintyProbWeighted"
)
UncertaintyAwareConfig, UncertaintyAware = _variant("uncertainty_aware", "UncertaintyAware")
UncertaintyCounterfactualConfig, UncertaintyCounterfactual = _variant(
    "counterfactual", "UncertaintyCounterfactual"
)
