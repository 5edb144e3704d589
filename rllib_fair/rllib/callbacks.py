"""Fairness metrics in every training result (and so in TensorBoard), by declaration.

The callback runs what the env and the algorithm declare (see
:mod:`rllib_fair.fairness.blocks`) and knows neither:

* the env class's ``METRIC_BLOCKS`` (metric blocks) and ``LABEL_HIDING`` (label-hiding
  rule), found from ``config.env`` by :func:`rllib_fair.envs.metric_declarations` (an
  env it cannot resolve gets the defaults: the notions' metrics);
* the config class's ``ENV_RUNNER_ANNOTATORS``.

Env-runner side (:meth:`FairnessMetricsCallback.on_sample_end`): for every episode chunk a
sample call returns, every block that applies observes the chunk (while
``fairness_metrics`` is True), every annotator writes its values into the step infos,
and then, unless the config's label access is ``"oracle"``, the label-hiding rule removes
the labels the decision-maker did not observe. Blocks and annotators keep per-episode
state across chunks through the carry they return.

Algorithm side (:meth:`FairnessMetricsCallback.on_train_result`,
:meth:`FairnessMetricsCallback.on_evaluate_end`): each block turns its summed raw numbers
into result keys under ``result["fairness"]`` (and ``result["evaluation"]["fairness"]``);
the keys are documented in :mod:`rllib_fair.rllib.keys`.
"""

from __future__ import annotations

import logging

import numpy as np
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.utils.annotations import override

from rllib_fair.envs import MetricDeclarations, metric_declarations
from rllib_fair.fairness.blocks import FAIRNESS, Chunk, MetricBlock, MetricContext, stack_counts
from rllib_fair.rllib import keys

logger = logging.getLogger(__name__)


def episode_counts(episode) -> np.ndarray:
    """Stacks the fairness counts of an episode chunk's transitions into ``[T, F, G]``.

    Row t is the info returned by ``env.step(a_t)`` (the chunk's ``infos[t + 1]``).
    Returns an array with ``T = 0`` rows when the env emits no ``"fairness"`` info.
    """
    return stack_counts(episode.get_infos()[1:])


class _Sink:
    """:class:`rllib_fair.fairness.blocks.MetricSink` over RLlib's metrics logger."""

    def __init__(self, metrics_logger):
        self._logger = metrics_logger
        self._totals: dict[tuple[str, ...], float] = {}

    def add(self, path: tuple[str, ...], value: float) -> None:
        self._totals[path] = self._totals.get(path, 0.0) + value

    def log_sum(self, path: tuple[str, ...], value: float) -> None:
        self._logger.log_value(path, value, reduce="sum")

    def log_mean(self, path: tuple[str, ...], value: float) -> None:
        self._logger.log_value(path, value, reduce="mean", clear_on_reduce=True)

    def flush(self) -> None:
        """Logs this sample call's totals (one value per path, summed over calls)."""
        for path, value in self._totals.items():
            self._logger.log_value(path, float(value), reduce="sum")
        self._totals.clear()


class FairnessMetricsCallback(RLlibCallback):
    """Runs the env's metric blocks, the config's annotators and the env's label hiding.

    Installed automatically by :class:`rllib_fair.rllib.config.FairnessConfigMixin`
    (while ``fairness_metrics`` is True or the config declares annotators). Settings come
    from the algorithm config: ``fairness_notion`` (plus ``fairness_log_notions``),
    ``fairness_disparity_window``, ``fairness_smoothing``, ``fairness_metrics`` and
    ``fairness_label_access``; blocks and annotators document what else they read.
    """

    def __init__(self):
        super().__init__()
        # (episode id, block or annotator) -> its carry, for episodes still running.
        self._carries: dict = {}
        self._declared: dict = {}
        self._cache: dict = {}
        self._warned = False

    def _context(self, config) -> tuple[MetricDeclarations, MetricContext]:
        """The env's declarations (resolved once per env) and the blocks' context."""
        env = getattr(config, "env", None)
        key = env if isinstance(env, (str, type)) or env is None else id(env)
        if key not in self._declared:
            self._declared[key] = metric_declarations(env)
        declared = self._declared[key]
        return declared, MetricContext(config, declared.group_names, self._cache)

    # ------------------------------------------------------------------ env runners
    @override(RLlibCallback)
    def on_environment_created(self, *, env_runner=None, env=None, **kwargs):
        """Makes the env report its exceptions to the driver (see :mod:`..health`)."""
        if env_runner is not None and env is not None:
            from rllib_fair.rllib.health import guard_env

            guard_env(env_runner, env)

    @override(RLlibCallback)
    def on_sample_end(self, *, env_runner=None, metrics_logger=None, samples=None, **kwargs):
        """Runs the declared blocks, annotators and label hiding over the returned chunks."""
        if env_runner is None or metrics_logger is None or not samples:
            return
        config = env_runner.config
        declared, ctx = self._context(config)
        blocks = (
            [b for b in declared.blocks if b.applies(ctx)]
            if getattr(config, "fairness_metrics", True)
            else []
        )
        owners = [*blocks, *getattr(config, "ENV_RUNNER_ANNOTATORS", ())]
        hiding = (
            declared.label_hiding
            if hasattr(config, "resolved_label_access")
            and config.resolved_label_access() != "oracle"
            else None
        )
        sink = _Sink(metrics_logger)
        for episode in samples:
            infos = episode.get_infos()
            counts = stack_counts(infos[1:])
            if counts.shape[0] == 0:
                if not self._warned and len(episode) > 0:
                    logger.warning(
                        "FairnessMetricsCallback: env %r puts no 'fairness' counts into "
                        "info; no fairness metrics are reported",
                        config.env,
                    )
                    self._warned = True
                continue
            chunk = Chunk(episode.id_, infos, counts, episode.is_done, _predictions(episode))
            for owner in owners:
                key = (episode.id_, owner)
                carry = self._carries.pop(key, None)
                if isinstance(owner, MetricBlock):
                    carry = owner.observe(chunk, ctx, carry, sink)
                else:
                    carry = owner.annotate(chunk, ctx, carry)
                if carry is not None and not chunk.done:
                    self._carries[key] = carry
            # In place, on the env runner: the episodes that leave it (to the learners, or
            # to an algorithm that reads them in its training_step) must not carry these
            # labels at all. A learner connector could drop them from the train batch
            # only, and only on the learner path, and an env-to-module connector runs
            # before this callback, whose metrics need the true labels.
            if hiding is not None:
                hiding.hide(chunk.infos)
        sink.flush()

    # ------------------------------------------------------------------ algorithm
    @override(RLlibCallback)
    def on_train_result(self, *, algorithm=None, metrics_logger=None, result=None, **kwargs):
        """Turns the summed raw numbers into the documented fairness keys."""
        if result is None:
            return
        config = getattr(algorithm, "config", None)
        declared, ctx = self._context(config)
        _finalize(result, declared.blocks, ctx)
        if algorithm is not None:
            from rllib_fair.rllib.health import PLACEMENT, placement

            where = placement(algorithm)
            if where:
                result[PLACEMENT] = where
        evaluation = result.get("evaluation")
        if isinstance(evaluation, dict):
            _finalize(evaluation, declared.blocks, ctx)

    @override(RLlibCallback)
    def on_evaluate_end(
        self, *, algorithm=None, metrics_logger=None, evaluation_metrics=None, **kw
    ):
        """Finalises the evaluation's fairness keys (``algo.evaluate()`` called directly)."""
        if isinstance(evaluation_metrics, dict):
            declared, ctx = self._context(getattr(algorithm, "config", None))
            _finalize(evaluation_metrics, declared.blocks, ctx)


def _predictions(episode) -> np.ndarray | None:
    """The module's label predictions of a chunk (extra model output), or None."""
    if keys.LABEL_PREDICTION not in episode.extra_model_outputs:
        return None
    pred = episode.get_extra_model_outputs(keys.LABEL_PREDICTION)
    return np.asarray(pred, dtype=np.float64).reshape(-1)


def _finalize(scope: dict, blocks, ctx: MetricContext) -> None:
    """Lets every block turn its raw numbers in ``scope["env_runners"]`` into result keys."""
    runners = scope.get("env_runners")
    if not isinstance(runners, dict):
        return
    for block in blocks:
        if block.raw_key is not None and block.raw_key in runners:
            raw = runners.pop(block.raw_key)
            block.summarize(raw, scope.setdefault(FAIRNESS, {}), ctx)


def _selective_notion(config) -> str | None:
    """Kept for the command line: :meth:`FairnessConfigMixin.selective_label_notion`."""
    return config.selective_label_notion() if hasattr(config, "selective_label_notion") else None
