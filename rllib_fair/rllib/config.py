"""The shared ``fairness(...)`` settings every rllib-fair AlgorithmConfig knows.

:class:`FairnessConfigMixin` is mixed into each registered config class (the G-PPO
baseline's included), in front of the RLlib base config::

    class FairPPOConfig(FairnessConfigMixin, PPOConfig): ...

It contributes typed fields with a keyword-only setter, checks in ``validate()`` whose
messages say what to change, and two pieces of wiring:

* the :class:`~rllib_fair.rllib.callbacks.FairnessMetricsCallback` is always part of
  ``callbacks_class`` (user callbacks are appended, never replace it) while
  ``fairness_metrics`` is True or the config declares ``ENV_RUNNER_ANNOTATORS``;
* the :class:`~rllib_fair.rllib.connectors.AddFairnessColumns` learner connector is
  placed first among the custom learner pieces (so right after RLlib's
  ``AddOneTsToEpisodesAndTruncate``) while ``fairness_columns`` is True.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.utils.annotations import override

from rllib_fair.accel.classes import accelerated_class
from rllib_fair.accel.gate import accel_active
from rllib_fair.fairness.blocks import Annotator
from rllib_fair.fairness.notions import get_notion, list_notions
from rllib_fair.rllib.targets import OwnMetrics
from rllib_fair.settings import (
    RLLIB_REPORTED_KEYS,
    Setting,
    bool_setting,
    check_object,
    choice,
    integer,
    number,
)


def _disparity_sources() -> list[str]:
    """The registered per-step disparity sources (read when a value is checked)."""
    from rllib_fair.fairness.sequence import DISPARITY_SOURCES

    return sorted(DISPARITY_SOURCES)


def _undefined_rules() -> list[str]:
    """What an undefined selective-labels utility may do (read when a value is checked)."""
    from rllib_fair.fairness.selective import UNDEFINED_UTILITY_RULES

    return list(UNDEFINED_UTILITY_RULES)


class FairnessConfigMixin:
    """Adds the shared fairness settings to an RLlib ``AlgorithmConfig`` subclass.

    Attributes:
        fairness_notion: short name of the fairness notion whose gap the algorithm
            reports (and, for fairness-aware algorithms, optimises). None means the
            environment's documented default notion (``DEFAULT_NOTION`` of its class).
        fairness_log_notions: further notions to report next to the main one.
        fairness_disparity_window: per-step disparity Delta_t over the last ``n``
            decisions (SELLF's sliding window) when an int, or the running gap since
            the episode start (POCAR) when None.
        fairness_disparity_source: where the per-step disparity that an algorithm
            regularises comes from: ``"true"`` (every individual's true label); the
            selective-label sources register further names in
            :data:`rllib_fair.fairness.sequence.DISPARITY_SOURCES`. Metrics always use
            the true counts.
        fairness_undefined_utility: what a group utility with an empty denominator does
            to a selective-labels disparity (the ``accepted`` and ``imputed`` sources and
            the selective metrics): ``"exclude"``, the disparity is 0; ``"zero"``, the
            utility counts as 0, so the disparity is the other group's utility (the
            SELLF authors' environments). See :mod:`rllib_fair.fairness.selective`.
        fairness_label_access: ``"observed"``: before episodes leave the env runners,
            the label of every individual whose label was not observed (a rejected
            applicant: ``info["label_observed"] == 0``) is removed from its info (label
            -1, its ``QUALIFIED`` count 0) together with the population's qualified
            mass, so no learner can read it; ``"oracle"``: learners see true labels.
            None: the algorithm's default (``oracle_by_default``, or the disparity
            source's where ``label_access_follows_disparity_source``). Metrics are always
            computed from the true labels, before the removal.
        fairness_smoothing: constant added to every demand before taking a rate
            (POCAR's reference adds 1); 0 means exact rates with the zero-demand
            convention of :mod:`rllib_fair.fairness.ledger`.
        fairness_metrics: report fairness metrics in every training result.
        fairness_columns: add the per-step fairness columns to the train batch.
    """

    @override(AlgorithmConfig)
    def build_algo(self, *args, **kwargs):
        """RLlib's ``build_algo``; stopping the algorithm removes its empty log folder.

        That is the folder Ray makes for it in ``~/ray_results``
        (:mod:`rllib_fair.rllib.logdir`).
        """
        from rllib_fair.rllib.logdir import tidy_logdir_on_stop

        algo = super().build_algo(*args, **kwargs)
        tidy_logdir_on_stop(algo)
        return algo

    #: What the algorithm needs computed on the env runners, as
    #: :class:`rllib_fair.fairness.blocks.Annotator` objects: the metrics callback runs
    #: each on every episode chunk and it writes its values into the step infos, where the
    #: algorithm's learner connector reads them. Algorithms that regularise with the
    #: per-step disparity declare :class:`rllib_fair.rllib.annotators.StepDisparity` (the
    #: learner connector then adds the ``fair_disparity`` columns).
    ENV_RUNNER_ANNOTATORS: ClassVar[tuple[Annotator, ...]] = ()

    #: Label access of the algorithm when ``fairness_label_access`` is None: False means
    #: the learner only sees the labels the decision-maker observes (selective labels).
    oracle_by_default: ClassVar[bool] = False

    #: True where the default label access follows ``fairness_disparity_source`` instead:
    #: oracle when the regularised disparity uses true labels ("true"), else observed
    #: (POCAR and R-PPO: their per-step disparity is the only label use).
    label_access_follows_disparity_source: ClassVar[bool] = False

    #: True for algorithms whose module outputs label predictions (SELLF's phi), which
    #: the ``"imputed"`` disparity source needs.
    provides_label_predictions: ClassVar[bool] = False

    #: What the algorithm optimises, as result keys (:mod:`rllib_fair.rllib.targets`):
    #: its objective, the env's own reward and its fairness targets. The default is an
    #: unconstrained method on the env's reward; fairness-aware algorithms override it.
    own_metrics: ClassVar[OwnMetrics] = OwnMetrics(
        note="unconstrained: maximises the env's reward only"
    )

    #: Settings added since the first release: for a run recorded before one existed, the
    #: value that reproduces it (``rllib_fair.reproduce.resolved.upgraded``).
    ADDED_SETTINGS: ClassVar[dict] = {
        "fairness_undefined_utility": lambda former: "exclude",
    }

    #: The shared settings, declared once for every algorithm (:mod:`rllib_fair.settings`);
    #: each config class adds its own in ``DECLARED_SETTINGS``.
    DECLARED_SETTINGS: ClassVar[tuple[Setting, ...]] = (
        choice(
            "fairness_notion",
            list_notions,
            "fairness notion whose gap is reported (and optimised by fairness-aware methods)",
            none=True,
            none_means="the env's default notion",
        ),
        Setting(
            "fairness_log_notions",
            "list",
            "further notions reported next to the main one",
            item=choice("", list_notions, ""),
        ),
        integer(
            "fairness_disparity_window",
            "per-step disparity over the last n decisions",
            1,
            none=True,
            none_means="the running gap since the episode start",
        ),
        choice(
            "fairness_disparity_source",
            _disparity_sources,
            "labels the regularised per-step disparity is computed from",
        ),
        choice(
            "fairness_undefined_utility",
            _undefined_rules,
            "a selective-labels group utility with an empty denominator: exclude "
            "(the disparity is 0) or zero (it counts as 0)",
        ),
        choice(
            "fairness_label_access",
            ("observed", "oracle"),
            "whether learners see the labels of rejected individuals",
            none=True,
            none_means="the algorithm's default",
        ),
        number(
            "fairness_smoothing",
            "constant added to every demand before a rate is taken (0: exact rates)",
            0,
        ),
        bool_setting("fairness_metrics", "report fairness metrics in every result"),
        bool_setting("fairness_columns", "add the per-step fairness columns to the train batch"),
        bool_setting("connector_metrics", "keep RLlib's per-connector timers on the sampling path"),
        Setting(
            "native_vector_env",
            "bool",
            "sample through the env's native vector version (auto: from 8 copies per runner)",
            also=("auto",),
        ),
        bool_setting("use_accel", "the speed layer (rllib_fair.accel) on tested Ray versions"),
        bool_setting("lean_sampling", "the speed layer's sampling loop (with use_accel)"),
        bool_setting(
            "lean_learner",
            "the speed layer's learner update loop (PPO family, TD3; with use_accel)",
        ),
    )

    #: Result keys every algorithm reports (the fairness/ keys are checked on their own).
    REPORTED_KEYS: ClassVar[tuple[str, ...]] = RLLIB_REPORTED_KEYS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fairness_label_access: str | None = None
        self.fairness_notion: str | None = None
        self.fairness_disparity_source: str = "true"
        self.fairness_undefined_utility: str = "exclude"
        self.fairness_log_notions: list[str] = []
        self.fairness_disparity_window: int | None = None
        self.fairness_smoothing: float = 0.0
        self.fairness_metrics: bool = True
        self.fairness_columns: bool = True
        # RLlib's per-connector timers on the sampling path (rllib_fair.accel.pipelines)
        self.connector_metrics: bool = False
        # the env's native vector version (VECTOR_ENTRY_POINTS) instead of SyncVectorEnv
        self.native_vector_env: bool | str = "auto"
        # the speed layer (rllib_fair.accel), its sampling loop and its learner loop
        self.use_accel: bool = True
        self.lean_sampling: bool = True
        self.lean_learner: bool = True
        self._user_callbacks: list = []
        self._sync_callbacks()

    # ----------------------------------------------------------------------- setters
    def fairness(
        self,
        *,
        notion: str | None = NotProvided,
        log_notions: list[str] | None = NotProvided,
        disparity_window: int | None = NotProvided,
        disparity_source: str = NotProvided,
        undefined_utility: str = NotProvided,
        label_access: str | None = NotProvided,
        smoothing: float = NotProvided,
        metrics: bool = NotProvided,
        columns: bool = NotProvided,
    ):
        """Sets the shared fairness settings (see the class attributes).

        Returns:
            This updated config.
        """
        if notion is not NotProvided:
            self.fairness_notion = notion
        if log_notions is not NotProvided:
            self.fairness_log_notions = list(log_notions or [])
        if disparity_window is not NotProvided:
            self.fairness_disparity_window = disparity_window
        if label_access is not NotProvided:
            self.fairness_label_access = label_access
        if disparity_source is not NotProvided:
            self.fairness_disparity_source = disparity_source
        if undefined_utility is not NotProvided:
            self.fairness_undefined_utility = undefined_utility
        if smoothing is not NotProvided:
            self.fairness_smoothing = smoothing
        if metrics is not NotProvided:
            self.fairness_metrics = metrics
            self._sync_callbacks()
        if columns is not NotProvided:
            self.fairness_columns = columns
        return self

    @override(AlgorithmConfig)
    def reporting(self, *, connector_metrics: bool = NotProvided, **kwargs):
        """RLlib's ``reporting()`` plus ``connector_metrics``.

        ``connector_metrics=True`` keeps RLlib's per-connector-piece timers on the
        env runners' sampling path (about 15 timer records per env step); the default
        False runs the same pieces without them where the speed layer is on
        (:mod:`rllib_fair.accel.pipelines`).

        Returns:
            This updated config.
        """
        super().reporting(**kwargs)
        if connector_metrics is not NotProvided:
            self.connector_metrics = connector_metrics
        return self

    def accel(
        self,
        *,
        enabled: bool = NotProvided,
        sampling: bool = NotProvided,
        learner: bool = NotProvided,
    ):
        """The speed layer (:mod:`rllib_fair.accel`): one switch, and its two parts.

        Args:
            enabled: ``use_accel`` (default True): the whole layer (lean sampling
                pipelines and loop, the PPO module's layer-by-layer forward, the lean
                learner loop and PPO loss, TD3's minibatch loop); each part returns what
                RLlib's own code returns. It runs only on the Ray versions it is tested
                on (:data:`rllib_fair.accel.gate.TESTED_RAY_VERSIONS`); on any other,
                RLlib's own path runs and one line is logged. False: RLlib's own path.
            sampling: ``lean_sampling`` (default True): the env runners' sampling loop
                (:class:`rllib_fair.accel.env_runner.LeanSamplingMixin`); False keeps
                RLlib's loop on :class:`rllib_fair.rllib.env_runner.FairEnvRunner`.
            learner: ``lean_learner`` (default True): the learners' update loop (PPO
                family, TD3); False keeps RLlib's.

        Returns:
            This updated config.
        """
        if enabled is not NotProvided:
            self.use_accel = enabled
        if sampling is not NotProvided:
            self.lean_sampling = sampling
        if learner is not NotProvided:
            self.lean_learner = learner
        return self

    @override(AlgorithmConfig)
    def env_runners(
        self,
        *,
        native_vector_env: bool | str = NotProvided,
        **kwargs,
    ):
        """RLlib's ``env_runners()`` plus ``native_vector_env``.

        Where no ``env_runner_cls`` is set, single-agent sampling runs on
        :class:`rllib_fair.rllib.env_runner.FairEnvRunner`, which seeds each env once (one
        seeded stream of episodes; RLlib's own runner reseeds every whole-episode sample),
        with the speed layer on (:meth:`accel`) behind
        :class:`rllib_fair.accel.env_runner.LeanSamplingMixin`, whose loop returns the
        same episodes with less per-step bookkeeping.

        An environment with a native vector version
        (:data:`rllib_fair.envs.VECTOR_ENTRY_POINTS`: N copies in one numpy step, the
        same per-copy trajectories as gymnasium's ``SyncVectorEnv``) is sampled through
        it when ``native_vector_env`` is True, or when it is ``"auto"`` (default) and
        ``num_envs_per_env_runner`` is at least :data:`NATIVE_VECTOR_MIN_ENVS` (below
        that the numpy step's fixed cost loses to the scalar envs: see
        ``benchmarks/vector_env.py``), by setting RLlib's ``gym_env_vectorize_mode`` to
        ``vector_entry_point`` where it is left at its default ``sync``. False keeps
        ``SyncVectorEnv`` over single copies.

        Returns:
            This updated config.
        """
        if "lean_sampling" in kwargs:
            raise ValueError(
                f"lean_sampling: {kwargs['lean_sampling']!r} is no env_runners() setting "
                "any more; set it with config.accel(sampling=...) (YAML key: lean_sampling)"
            )
        super().env_runners(**kwargs)
        if native_vector_env is not NotProvided:
            self.native_vector_env = native_vector_env
        return self

    @property
    @override(AlgorithmConfig)
    def learner_class(self):
        """RLlib's learner class; with the speed layer's learner part on, its subclass.

        That subclass puts the mixin the class names in ``ACCEL_MIXIN`` in front
        (:func:`rllib_fair.accel.classes.accelerated_class`).
        """
        cls = super().learner_class
        if self.lean_learner and getattr(cls, "ACCEL_MIXIN", None) and accel_active(self):
            return accelerated_class(cls)
        return cls

    @override(AlgorithmConfig)
    def callbacks(self, callbacks_class=NotProvided, **kwargs):
        """Like RLlib's, but keeps the fairness metrics callback in the list."""
        if callbacks_class is not NotProvided:
            from ray.rllib.callbacks.callbacks import RLlibCallback
            from ray.rllib.utils import force_list

            from rllib_fair.rllib.callbacks import FairnessMetricsCallback

            user = [
                c
                for c in force_list(callbacks_class)
                if c is not None and c is not RLlibCallback and c is not FairnessMetricsCallback
            ]
            self._user_callbacks = user
        super().callbacks(**kwargs)
        self._sync_callbacks()
        return self

    def _sync_callbacks(self) -> None:
        from ray.rllib.callbacks.callbacks import RLlibCallback

        from rllib_fair.rllib.callbacks import FairnessMetricsCallback

        wanted = self.fairness_metrics or bool(self.ENV_RUNNER_ANNOTATORS)
        classes = ([FairnessMetricsCallback] if wanted else []) + list(self._user_callbacks)
        self.callbacks_class = classes or RLlibCallback

    # ------------------------------------------------------------------ resolution
    def resolved_fairness_notion(self) -> str:
        """Returns the notion in force: the configured one or the env's default."""
        if self.fairness_notion is not None:
            return self.fairness_notion
        meta = _env_meta(self.env)
        if meta is None:
            raise ValueError(
                f"fairness_notion: None and env {self.env!r} is not a registered rllib-fair "
                f"environment, so it has no default notion; set one of: {', '.join(list_notions())}"
            )
        return meta["default_notion"]

    def resolved_label_access(self) -> str:
        """``fairness_label_access`` or the algorithm's default."""
        if self.fairness_label_access is not None:
            return self.fairness_label_access
        if self.label_access_follows_disparity_source:
            return "oracle" if self.fairness_disparity_source == "true" else "observed"
        return "oracle" if self.oracle_by_default else "observed"

    def declares_annotator(self, kind: type) -> bool:
        """Whether ``ENV_RUNNER_ANNOTATORS`` holds an annotator of class ``kind``."""
        return any(isinstance(a, kind) for a in self.ENV_RUNNER_ANNOTATORS)

    @property
    def needs_step_disparity(self) -> bool:
        """Whether the algorithm regularises with the per-step disparity.

        True when ``ENV_RUNNER_ANNOTATORS`` declares a
        :class:`rllib_fair.rllib.annotators.StepDisparity`.
        """
        from rllib_fair.rllib.annotators import StepDisparity

        return self.declares_annotator(StepDisparity)

    def selective_label_notion(self) -> str | None:
        """The notion the env's selective-label metrics report on, or None.

        That is the main notion when the env declares
        :class:`rllib_fair.fairness.blocks.SelectiveLabelMetrics` and the block applies
        (two groups, a notion defined on selective labels).
        """
        from rllib_fair.envs import metric_declarations
        from rllib_fair.fairness.blocks import MetricContext, SelectiveLabelMetrics

        declared = metric_declarations(self.env)
        ctx = MetricContext(self, declared.group_names)
        for block in declared.blocks:
            if isinstance(block, SelectiveLabelMetrics):
                return block.notion(ctx)
        return None

    def fairness_notions_to_log(self) -> list[str]:
        """Returns the main notion followed by the extra notions, without duplicates."""
        out = [self.resolved_fairness_notion()]
        for name in self.fairness_log_notions:
            if name not in out:
                out.append(name)
        return out

    # ------------------------------------------------------------------ validation
    @override(AlgorithmConfig)
    def validate(self) -> None:
        """Checks the declared settings and rules, then RLlib's and the env-dependent ones.

        The declared ones (:mod:`rllib_fair.settings`) come first, then the RLlib settings
        this config changes from its defaults (:mod:`rllib_fair.rllib.rllib_settings`);
        then RLlib's own checks and the fairness checks the declarations cannot express
        (they need the env).
        Nothing is set here: what this config derives for RLlib is set by :meth:`freeze`.
        """
        from rllib_fair.rllib.rllib_settings import check_rllib_settings

        check_object(self)
        check_rllib_settings(self)
        super().validate()
        self.validate_fairness()

    @override(AlgorithmConfig)
    def freeze(self) -> None:
        """Sets the derived settings (:meth:`resolve_derived`), then RLlib's ``freeze``.

        RLlib's ``Algorithm`` validates its config and freezes it before anything reads
        it, so this is where a config settles what it derives from its other settings.
        """
        self.resolve_derived()  # sets nothing when called again (frozen configs refuse)
        super().freeze()

    def resolve_derived(self) -> None:
        """Sets what RLlib reads and this config derives (called by :meth:`freeze`).

        * ``env_runner_cls``: :class:`~rllib_fair.rllib.env_runner.FairEnvRunner` where
          none is set (single-agent sampling on the new API stack, no offline output),
          behind :class:`~rllib_fair.accel.env_runner.LeanSamplingMixin` where the
          speed layer's sampling part is on (:meth:`accel`);
        * ``gym_env_vectorize_mode``: ``vector_entry_point`` where it is left at ``sync``
          and the env's native vector version applies (``native_vector_env``).
        """
        native = self.native_vector_env
        if native == "auto":
            native = (self.num_envs_per_env_runner or 1) >= NATIVE_VECTOR_MIN_ENVS
        if native and _has_native_vector(self.env):
            mode = getattr(self.gym_env_vectorize_mode, "value", self.gym_env_vectorize_mode)
            if mode == "sync":
                self.gym_env_vectorize_mode = "vector_entry_point"
        if (
            self.env_runner_cls is None
            and self.enable_env_runner_and_connector_v2
            and not self.is_multi_agent
            and not self.output
        ):
            from rllib_fair.rllib.env_runner import FairEnvRunner

            lean = self.lean_sampling and accel_active(self)
            self.env_runner_cls = accelerated_class(FairEnvRunner) if lean else FairEnvRunner

    def check_env_spaces(self, observation_space, action_space) -> None:
        """Checks a built env's spaces against what the algorithm needs (one-line ValueError).

        :meth:`validate` builds no env, so it cannot see the spaces of an env named by id;
        the command line calls this with the env it builds once while checking
        ``env_config``, and the algorithm's module checks the same spaces when it is built.
        Here: any spaces; an algorithm that needs a kind of space overrides it.
        """

    def validate_fairness(self) -> None:
        """The fairness checks that need the env (raises ValueError, one line).

        The values themselves (types, bounds, choices) are declared in
        ``DECLARED_SETTINGS`` and checked first, by :meth:`validate`.
        """
        meta = _env_meta(self.env)
        for key, name in [("fairness_notion", self.fairness_notion)] + [
            ("fairness_log_notions", n) for n in self.fairness_log_notions
        ]:
            if name is None:
                continue
            get_notion(name)
            if meta is not None and name not in meta["supported_notions"]:
                raise ValueError(
                    f"{key}: notion {name!r} is not supported by env {self.env!r}; valid "
                    f"choices: {', '.join(meta['supported_notions'])}"
                )
        self.resolved_fairness_notion()
        self._validate_selective_source(meta)
        if self.needs_step_disparity and not self.fairness_columns:
            raise ValueError(
                f"fairness_columns: False is invalid for {type(self).__name__}, which "
                "regularises with the per-step disparity; valid: true"
            )

    def _validate_selective_source(self, meta) -> None:
        from rllib_fair.fairness.selective import SELECTIVE_NOTIONS
        from rllib_fair.fairness.sequence import SELECTIVE_SOURCES

        source = self.fairness_disparity_source
        if source not in SELECTIVE_SOURCES:
            return
        notion = self.resolved_fairness_notion()
        if notion not in SELECTIVE_NOTIONS:
            raise ValueError(
                f"fairness_notion: {notion!r} is not defined on selective labels (source "
                f"{source!r}); valid choices: {', '.join(SELECTIVE_NOTIONS)}"
            )
        if meta is not None and len(meta["group_names"]) != 2:
            raise ValueError(
                f"fairness_disparity_source: {source!r} needs an environment with two groups "
                f"and one decision per step; {self.env!r} has {len(meta['group_names'])} groups"
            )
        if source == "imputed" and not self.provides_label_predictions:
            raise ValueError(
                f"fairness_disparity_source: 'imputed' needs a label predictor, which "
                f"{type(self).__name__} does not have; valid choices: true, accepted "
                "(or use SELLF)"
            )

    # ------------------------------------------------------------------ connectors
    @override(AlgorithmConfig)
    def build_env_to_module_connector(self, *args, **kwargs):
        """RLlib's env-to-module pipeline; with the speed layer, its lean version.

        Without per-piece timers unless ``connector_metrics``, and fused into one pass
        for a flat Box observation and a Discrete action (:mod:`rllib_fair.accel.pipelines`).
        """
        return self._accelerated(super().build_env_to_module_connector(*args, **kwargs))

    @override(AlgorithmConfig)
    def build_module_to_env_connector(self, *args, **kwargs):
        """RLlib's module-to-env pipeline; with the speed layer, its lean version.

        Without per-piece timers unless ``connector_metrics``, and fused into one pass
        for a flat Box observation and a Discrete action (:mod:`rllib_fair.accel.pipelines`).
        """
        return self._accelerated(super().build_module_to_env_connector(*args, **kwargs))

    def _accelerated(self, pipeline):
        if self.connector_metrics or not accel_active(self):
            return pipeline
        from rllib_fair.accel.pipelines import accelerated_pipeline

        return accelerated_pipeline(pipeline, self)

    def build_learner_connector(self, input_observation_space, input_action_space, device=None):
        """RLlib's learner pipeline with :class:`AddFairnessColumns` as first custom piece."""
        pipeline = super().build_learner_connector(
            input_observation_space, input_action_space, device=device
        )
        if self.fairness_columns:
            from rllib_fair.rllib.connectors import AddFairnessColumns

            meta = _env_meta(self.env)
            pipeline.prepend(
                AddFairnessColumns(
                    input_observation_space,
                    input_action_space,
                    n_groups=len(meta["group_names"]) if meta else None,
                    require_disparity=self.needs_step_disparity,
                )
            )
        return pipeline

    # ------------------------------------------------------------------ (de)serialise
    def to_dict(self) -> dict[str, Any]:
        """Like RLlib's; the fairness callback is re-added on load, so drop it here."""
        d = super().to_dict()
        d.pop("_user_callbacks", None)
        return d


def _env_meta(env) -> dict | None:
    """Metadata of a registered rllib-fair env id (or None): :func:`rllib_fair.envs.env_meta`."""
    from rllib_fair.envs import env_meta

    return env_meta(env)


#: ``native_vector_env="auto"`` uses a native vector env from this many copies per runner
#: (``benchmarks/vector_env.py`` on fair/Lending-v0, 2 CPUs, 2026-11-25, env alone:
#: native 0.55x of SyncVectorEnv at 1-2 copies, 0.8x at 4, 1.3x at 8, 1.7x at 16).
NATIVE_VECTOR_MIN_ENVS = 8


def _has_native_vector(env) -> bool:
    """Whether ``env`` (an id) has a native vector version in this package."""
    from rllib_fair.envs import VECTOR_ENTRY_POINTS

    return isinstance(env, str) and env in VECTOR_ENTRY_POINTS
