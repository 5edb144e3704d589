"""Fairness metrics by declaration: metric blocks, annotators and label-hiding rules.

Environments and algorithms say what they need; one generic callback
(:class:`rllib_fair.rllib.callbacks.FairnessMetricsCallback`) runs it. Nothing here
imports Ray: an RLlib episode chunk reaches these objects as a :class:`Chunk`, the
metrics logger as a :class:`MetricSink`.

Declared by an environment class (read from the class, nothing is constructed):

* ``METRIC_BLOCKS``: a tuple of :class:`MetricBlock` objects, the blocks of metrics the
  env reports. :class:`rllib_fair.envs.base.FairEnvMixin` declares
  ``(NotionMetrics(),)``: supply, demand, long-term benefit rates and gaps of the
  configured notions from the per-group counts every env puts into ``info["fairness"]``.
  An env with more to report declares more blocks (:class:`SelectiveLabelMetrics` for
  one decision per step with selective labels, the qualification-gain and replicator
  blocks next to those envs, or its own).
* ``LABEL_HIDING``: a :class:`LabelHiding` that removes, before episodes leave the env
  runners, every label the decision-maker did not observe (applied unless the config's
  label access is ``"oracle"``). The default handles one decision per step.

Declared by an algorithm config class:

* ``ENV_RUNNER_ANNOTATORS``: a tuple of :class:`Annotator` objects, values the
  algorithm's learner needs computed on the env runners (the per-step disparity,
  per-individual returns, ...). Each one writes its values into the step infos of the
  chunk, where the algorithm's learner connector reads them.

How a block works. On the env runners, :meth:`MetricBlock.observe` sees every episode
chunk a sample call returns, with the carry it returned for the episode's previous chunk
(None at the episode start; dropped once the episode is done), and hands numbers to the
sink: :meth:`MetricSink.add` sums over the sample call (the sum is logged once per call,
so numbers from several env runners add up exactly), :meth:`MetricSink.log_sum` and
:meth:`MetricSink.log_mean` log one value now (the iteration reports the sum or the
mean). Summed raw numbers go under ``env_runners/<raw_key>/...``; on the algorithm,
:meth:`MetricBlock.summarize` receives them (removed from ``env_runners``) and writes
its keys into ``result["fairness"]``. Blocks are called in the declared order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from rllib_fair.fairness.counts import NUM_FIELDS, QUALIFIED, QUALIFIED_MASS
from rllib_fair.fairness.ledger import benefit_rates, bias, ratio
from rllib_fair.fairness.notions import get_notion
from rllib_fair.fairness.selective import SELECTIVE_NOTIONS, running_selective_disparity
from rllib_fair.fairness.sequence import running_disparity

# --- result keys of the notion blocks (documented in rllib_fair.rllib.keys) ------------
FAIRNESS = "fairness"
BIAS = "bias"
RATIO = "ratio"
RATE = "rate"
SUPPLY = "supply"
DEMAND = "demand"
STEP_DISPARITY_MEAN = "step_disparity_mean"
EPISODE_BIAS_MEAN = "episode_bias_mean"
NUM_STEPS = "num_steps"
NUM_EPISODES = "num_episodes"
SELECTIVE = "selective"

# Raw sums the env runners log (summed across runners) and the blocks turn into the keys
# above on the algorithm, removing them from ``env_runners``.
RAW = "fairness_raw"
RAW_STEP_DISPARITY_SUM = "step_disparity_sum"
RAW_EPISODE_BIAS_SUM = "episode_bias_sum"
RAW_SELECTIVE = "fairness_selective_raw"


# ----------------------------------------------------------------------------- protocol


class Chunk:
    """One episode chunk of a sample call, as blocks and annotators see it.

    Args:
        episode_id: the episode's id (chunks of one episode share it).
        infos: the chunk's infos, ``len(chunk) + 1`` of them: ``infos[0]`` came from
            ``reset()`` (or is the previous chunk's last info) and ``infos[t + 1]`` is what
            ``env.step(a_t)`` returned. The dicts are the episode's own: what an
            annotator writes into them travels with the episode.
        counts: ``float64 [T, NUM_FIELDS, G]``, the ``"fairness"`` counts of ``infos[1:]``,
            copied before any label is hidden (the true counts).
        done: True when the episode ended with this chunk.
        predicted: the module's label prediction for the individual shown in obs_t
            (``[T]``), or None when the module predicts no labels.
    """

    def __init__(
        self,
        episode_id: Any,
        infos: list[dict],
        counts: np.ndarray,
        done: bool,
        predicted: np.ndarray | None = None,
    ):
        self.episode_id = episode_id
        self.infos = infos
        self.counts = counts
        self.done = done
        self.predicted = predicted
        self._memo: dict = {}

    def memo(self, key: str, compute: Callable[[Chunk], Any]) -> Any:
        """``compute(self)``, computed once per chunk for everyone who asks by ``key``."""
        if key not in self._memo:
            self._memo[key] = compute(self)
        return self._memo[key]

    @property
    def steps(self) -> dict[str, np.ndarray | None]:
        """Per-transition ``group``, ``decision``, ``label`` and ``predicted``, once per chunk.

        ``group``, ``decision`` and ``label`` are int64 arrays (-1 where an info has none);
        ``predicted`` is :attr:`predicted` cut to the chunk's length, or None.
        """
        return self.memo("steps", _decision_steps)


def _decision_steps(chunk: Chunk) -> dict[str, np.ndarray | None]:
    infos = chunk.infos[1:]
    out: dict[str, np.ndarray | None] = {
        name: np.array([info.get(name, -1) for info in infos], dtype=np.int64)
        for name in ("group", "decision", "label")
    }
    out["predicted"] = None if chunk.predicted is None else chunk.predicted[: len(infos)]
    return out


def stack_counts(infos: list[dict]) -> np.ndarray:
    """``float64 [T, NUM_FIELDS, G]``: the ``"fairness"`` counts of ``infos`` (a copy).

    ``T = 0`` (shape ``[0, NUM_FIELDS, 0]``) when no info carries counts.
    """
    rows = [info["fairness"] for info in infos if "fairness" in info]
    if not rows:
        return np.zeros((0, NUM_FIELDS, 0))
    return np.stack(rows).astype(np.float64, copy=False)


@dataclass
class MetricContext:
    """What a block or an annotator knows besides the chunk.

    Attributes:
        config: the algorithm config (read for the ``fairness_*`` settings and, by the
            blocks and annotators that document it, further settings of their own).
        group_names: the env's ``GROUP_NAMES`` (empty when the env class is unknown).
        cache: a dict kept by the callback for its lifetime (one per env runner and one
            on the algorithm), for values a block computes once, such as a table.
    """

    config: Any
    group_names: tuple[str, ...] = ()
    cache: dict = field(default_factory=dict)

    def groups(self, n_groups: int) -> list[str]:
        """The names of ``n_groups`` groups: the env's, else ``group_0, group_1, ...``."""
        if self.group_names and n_groups in (-1, len(self.group_names)):
            return list(self.group_names)
        return [f"group_{g}" for g in range(max(n_groups, 0))]

    def notions(self) -> list[str]:
        """The notions to report: the main one, then ``fairness_log_notions``."""
        if hasattr(self.config, "fairness_notions_to_log"):
            return self.config.fairness_notions_to_log()
        return ["equal_opportunity"]

    def setting(self, name: str, default: Any = None) -> Any:
        """The config's setting ``name``, or ``default`` for a config without it."""
        return getattr(self.config, name, default)


class MetricSink(Protocol):
    """Where a block's numbers go (the callback's adapter of RLlib's metrics logger)."""

    def add(self, path: tuple[str, ...], value: float) -> None:
        """Adds ``value`` to this sample call's total of ``path`` (logged once, summed)."""

    def log_sum(self, path: tuple[str, ...], value: float) -> None:
        """Logs ``value`` now; the iteration reports the sum of the logged values."""

    def log_mean(self, path: tuple[str, ...], value: float) -> None:
        """Logs ``value`` now; the iteration reports the mean of the logged values."""


class MetricBlock:
    """A block of metrics an environment reports (see the module docstring)."""

    #: Key under ``env_runners`` of the block's summed raw numbers, which
    #: :meth:`summarize` turns into result keys; None for a block that logs its final
    #: values directly (with :meth:`MetricSink.log_mean`).
    raw_key: ClassVar[str | None] = None

    def applies(self, ctx: MetricContext) -> bool:
        """Whether the block reports anything under this config (checked per sample call)."""
        return True

    def observe(self, chunk: Chunk, ctx: MetricContext, carry: Any, sink: MetricSink) -> Any:
        """Hands the chunk's numbers to ``sink``; returns the carry for the next chunk."""
        raise NotImplementedError

    def summarize(self, raw: dict, out: dict, ctx: MetricContext) -> None:
        """Writes the block's keys into ``out`` (``result["fairness"]``) from ``raw``."""


class Annotator:
    """A value an algorithm needs computed on the env runners, written into step infos.

    The values go into the infos, not into the episode's ``custom_data``, because RLlib
    slices episode chunks when it shards a train batch over several learners, and a
    slice keeps its infos only.
    """

    def annotate(self, chunk: Chunk, ctx: MetricContext, carry: Any) -> Any:
        """Writes the values into ``chunk.infos``; returns the carry for the next chunk."""
        raise NotImplementedError


class LabelHiding:
    """Removes every label the decision-maker did not observe from a chunk's infos.

    For one decision per step: an info with ``label_observed == 0`` and a label
    (``label >= 0``: an individual was decided on and rejected) gets ``label`` -1 and the
    ``QUALIFIED`` count of its group 0 (``SELECTED_QUALIFIED`` is already 0 for a
    rejection). The population's ``QUALIFIED_MASS`` row (the true state) is zeroed in
    every info. An env whose infos carry more (a batch of labels) subclasses this and
    overrides :meth:`hide_info`.
    """

    def hide(self, infos: list[dict]) -> int:
        """Hides the unobserved labels of ``infos`` in place; returns how many were removed."""
        return sum(self.hide_info(info) for info in infos)

    def hide_info(self, info: dict) -> int:
        """Hides the unobserved labels of one info; returns how many were removed."""
        counts = info.get("fairness")
        if counts is not None:
            counts[QUALIFIED_MASS] = 0.0
        label = info.get("label", -1)
        if label is None or label < 0 or info.get("label_observed", 1):
            return 0
        info["label"] = -1
        group = info.get("group", -1)
        if counts is not None and group is not None and group >= 0:
            counts[QUALIFIED, group] = 0.0
        return 1


# ------------------------------------------------------------------------ notion block


class NotionMetrics(MetricBlock):
    """Supply, demand, long-term benefit rates, gaps and per-step disparity per notion.

    For every notion to report (the config's ``fairness_notion``, then
    ``fairness_log_notions``): the chunk's counts are mapped to supply and demand and
    summed; the per-step disparity Delta_t is computed for every step (over
    ``fairness_disparity_window`` decisions, demands plus ``fairness_smoothing``, resumed
    across chunks of one episode); a finished episode adds its own gap. On the algorithm,
    :func:`summarize_raw` gives ``result["fairness"][notion]`` (keys documented in
    :mod:`rllib_fair.rllib.keys`): rates as the ratio *after* aggregation (Xu et al. 2024,
    Def. 2.3) and their gap (Eq. 1).
    """

    raw_key = RAW

    def observe(self, chunk: Chunk, ctx: MetricContext, carry: Any, sink: MetricSink) -> Any:
        """Adds supply, demand, disparity and episode-gap sums; carries Delta_t's state."""
        window = ctx.setting("fairness_disparity_window")
        smoothing = ctx.setting("fairness_smoothing", 0.0)
        carries: dict = carry or {}
        counts = chunk.counts
        groups = ctx.groups(counts.shape[-1])
        for name in ctx.notions():
            notion = get_notion(name)
            supply, demand = notion.supply_demand(counts)
            gaps, state = running_disparity(
                notion, counts, window=window, smoothing=smoothing, carry=carries.pop(name, None)
            )
            for which, values in ((SUPPLY, supply.sum(axis=0)), (DEMAND, demand.sum(axis=0))):
                for k, pair in enumerate(notion.pair_names):
                    for g, group in enumerate(groups):
                        sink.add((RAW, name, which, pair, group), values[k, g])
            sink.add((RAW, name, RAW_STEP_DISPARITY_SUM), float(gaps.sum()))
            sink.add((RAW, name, NUM_STEPS), int(gaps.shape[0]))
            episode_bias, episodes = 0.0, 0
            if chunk.done:
                ep_supply, ep_demand = notion.supply_demand(state.total)
                rates, defined = benefit_rates(ep_supply, ep_demand, smoothing=smoothing)
                episode_bias, episodes = float(np.max(bias(rates, defined))), 1
            else:
                carries[name] = state
            sink.add((RAW, name, RAW_EPISODE_BIAS_SUM), episode_bias)
            sink.add((RAW, name, NUM_EPISODES), episodes)
        return carries

    def summarize(self, raw: dict, out: dict, ctx: MetricContext) -> None:
        """``out[notion]`` for every notion in ``raw``."""
        order = ctx.groups(-1)
        for name, data in raw.items():
            out[name] = summarize_raw(name, data, order)


def summarize_raw(notion_name: str, data: dict, group_order: list[str] | None = None) -> dict:
    """Builds one notion's result dict from the summed raw numbers.

    Args:
        notion_name: the notion's short name.
        data: ``{"supply": {pair: {group: x}}, "demand": {...}, "<raw sums>": x}``.
        group_order: the environment's group names in order (others follow sorted).

    Returns:
        The nested dict documented in :mod:`rllib_fair.rllib.keys`.
    """
    notion = get_notion(notion_name)
    pairs = list(notion.pair_names)
    present = list(data[SUPPLY][pairs[0]].keys())
    # The env's group order where known (merging across runners may reorder keys).
    groups = [g for g in (group_order or []) if g in present]
    groups += sorted(g for g in present if g not in groups)
    supply = np.array([[float(data[SUPPLY][p][g]) for g in groups] for p in pairs])
    demand = np.array([[float(data[DEMAND][p][g]) for g in groups] for p in pairs])
    rates, defined = benefit_rates(supply, demand)
    gaps = np.asarray(bias(rates, defined), dtype=np.float64).reshape(len(pairs))
    ratios = np.asarray(ratio(rates, defined), dtype=np.float64).reshape(len(pairs))
    steps = float(data.get(NUM_STEPS, 0.0))
    episodes = float(data.get(NUM_EPISODES, 0.0))

    def per_group(values: np.ndarray) -> dict:
        if len(pairs) == 1:
            return {g: float(values[0, i]) for i, g in enumerate(groups)}
        return {
            p: {g: float(values[k, i]) for i, g in enumerate(groups)} for k, p in enumerate(pairs)
        }

    out = {
        BIAS: float(gaps.max()),
        RATIO: float(ratios.min()),
        RATE: per_group(rates),
        SUPPLY: per_group(supply),
        DEMAND: per_group(demand),
        STEP_DISPARITY_MEAN: float(data.get(RAW_STEP_DISPARITY_SUM, 0.0)) / steps
        if steps > 0
        else 0.0,
        NUM_STEPS: steps,
        NUM_EPISODES: episodes,
    }
    if episodes > 0:
        out[EPISODE_BIAS_MEAN] = float(data.get(RAW_EPISODE_BIAS_SUM, 0.0)) / episodes
    return out


# ---------------------------------------------------------------- selective-label block


class SelectiveLabelMetrics(MetricBlock):
    """The selective-labels block ``result["fairness"][notion]["selective"]``.

    For envs with two groups and one decision per step (Valdrighi et al.): over
    ``fairness_disparity_window`` decisions, the per-step |disparity| from true labels,
    from accepted individuals only (Delta^{A=1}, Eq. 2) and, when the module predicts
    labels, from imputed labels (Delta-tilde); per group the decisions, rejections and
    the predictor's error on the rejected (Theorem 3.1's r^i and eps^i; true labels are
    used here for logging only, on the env runner, before any label is hidden). It
    reports on the main notion when that is one of
    :data:`rllib_fair.fairness.selective.SELECTIVE_NOTIONS`.
    """

    raw_key = RAW_SELECTIVE

    def notion(self, ctx: MetricContext) -> str | None:
        """The notion this block reports on under ``ctx``, or None."""
        try:
            notion = ctx.config.resolved_fairness_notion()
        except (AttributeError, ValueError):
            return None
        if len(ctx.group_names) != 2 or notion not in SELECTIVE_NOTIONS:
            return None
        return notion

    def applies(self, ctx: MetricContext) -> bool:
        """True when the main notion is defined on selective labels and there are 2 groups."""
        return self.notion(ctx) is not None

    def observe(self, chunk: Chunk, ctx: MetricContext, carry: Any, sink: MetricSink) -> Any:
        """Adds the three disparity sums and the per-group decision counts of the chunk."""
        steps = chunk.steps
        if not (steps["group"] >= 0).all():
            return carry
        notion = self.notion(ctx)
        window = ctx.setting("fairness_disparity_window")
        carries: dict = carry or {}
        predicted = steps["predicted"]
        sources = ["true", "accepted"] + (["imputed"] if predicted is not None else [])
        for source in sources:
            series, state = running_selective_disparity(
                notion,
                steps["group"],
                steps["decision"],
                steps["label"],
                predicted,
                window=window,
                source=source,
                signed=False,
                carry=carries.pop(source, None),
                undefined=ctx.setting("fairness_undefined_utility", "exclude"),
            )
            sink.add((RAW_SELECTIVE, notion, f"{source}_disparity_sum"), float(series.sum()))
            if not chunk.done:
                carries[source] = state
        sink.add((RAW_SELECTIVE, notion, "steps"), len(steps["group"]))
        rejected = steps["decision"] == 0
        for g in (0, 1):
            in_g = steps["group"] == g
            rej = in_g & rejected
            sink.add((RAW_SELECTIVE, notion, "decided", str(g)), int(in_g.sum()))
            sink.add((RAW_SELECTIVE, notion, "rejected", str(g)), int(rej.sum()))
            if predicted is not None:
                err = float((predicted[rej] - steps["label"][rej]).sum())
                sink.add((RAW_SELECTIVE, notion, "error_sum", str(g)), err)
        return carries

    def summarize(self, raw: dict, out: dict, ctx: MetricContext) -> None:
        """``out[notion]["selective"]`` for the notion in ``raw``."""
        for notion, data in raw.items():
            out.setdefault(notion, {})[SELECTIVE] = summarize_selective(data, ctx.groups(2))


def summarize_selective(data: dict, groups: list[str]) -> dict:
    """The selective-labels block of a notion's result from its summed raw numbers."""
    steps = float(data.get("steps", 0.0))
    out: dict = {}
    for source in ("true", "accepted", "imputed"):
        total = data.get(f"{source}_disparity_sum")
        if total is not None and steps > 0:
            out[f"{source}_disparity_mean"] = float(total) / steps
    for g, name in enumerate(groups[:2]):
        decided = float(data.get("decided", {}).get(str(g), 0.0))
        rejected = float(data.get("rejected", {}).get(str(g), 0.0))
        out.setdefault("rejection_rate", {})[name] = rejected / decided if decided else 0.0
        if "error_sum" in data:
            err = float(data["error_sum"].get(str(g), 0.0))
            out.setdefault("predictor_error", {})[name] = err / rejected if rejected else 0.0
    return out
