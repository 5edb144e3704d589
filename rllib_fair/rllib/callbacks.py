"""Fairness metrics in every training result (and so in TensorBoard).

Env-runner side (:meth:`FairnessMetricsCallback.on_sample_end`): for every episode
chunk a sample call returns, the per-step counts in the infos (``infos[1:]``, see
:mod:`rllib_fair.rllib.connectors`) are mapped to supply and demand by each logged
notion and summed; the per-step disparity Delta_t is computed for every step
(resuming across chunks of the same episode); finished episodes add their own gap.
Only *sums* are logged (``reduce="sum"``), so numbers from several env runners combine
exactly.

Algorithm side (:meth:`FairnessMetricsCallback.on_train_result`): the sums become the
keys documented in :mod:`rllib_fair.rllib.keys` under ``result["fairness"][notion]``
(and ``result["evaluation"]["fairness"]``): long-term benefit rate per group as the
ratio *after* aggregation (Xu et al. 2024, Def. 2.3), the gap (Eq. 1), supply and
demand per group, mean per-step disparity and mean episode gap.
"""

from __future__ import annotations

import logging

import numpy as np
from ray.rllib.callbacks.callbacks import RLlibCallback

from rllib_fair.fairness.counts import (
    NUM_FIELDS,
    QUALIFIED,
    QUALIFIED_MASS,
    SELECTED_QUALIFIED,
)
from rllib_fair.fairness.ledger import benefit_rates, bias, ratio
from rllib_fair.fairness.notions import get_notion
from rllib_fair.fairness.selective import running_selective_disparity
from rllib_fair.fairness.sequence import get_disparity_source, running_disparity
from rllib_fair.rllib import keys

logger = logging.getLogger(__name__)

# Qualification gain (Lear & Zhang 2025; envs whose step infos carry ``qual_gain``):
# result block ``fairness/qualification_gain/...`` (see ``summarize_qualification``), the
# raw per-episode sums the env runners log for it, and the step-info keys the PPO-C
# family's learner connector reads (rllib_fair.algorithms.ppoc.ppoc_learner).
QUALIFICATION = "qualification_gain"
QUAL_RAW = "qualification_gain_raw"
QUAL_INFO_Q = "fair_qual_q"
QUAL_INFO_PS = "fair_qual_ps"
QUAL_INFO_W1_DELTA = "fair_w1_delta"


def episode_counts(episode) -> np.ndarray:
    """Stacks the fairness counts of an episode chunk's transitions into ``[T, F, G]``.

    Row t is the info returned by ``env.step(a_t)`` (the chunk's ``infos[t + 1]``).
    Returns an array with ``T = 0`` rows when the env emits no ``"fairness"`` info.
    """
    infos = episode.get_infos()
    rows = [info["fairness"] for info in infos[1:] if "fairness" in info]
    if not rows:
        return np.zeros((0, NUM_FIELDS, 0))
    return np.stack(rows).astype(np.float64, copy=False)


def episode_steps(episode) -> dict[str, np.ndarray | None]:
    """Per-transition ``group``, ``decision``, ``label`` and ``predicted`` of a chunk.

    ``predicted`` is the module's label prediction for the individual shown in obs_t
    (extra model output :data:`rllib_fair.rllib.keys.LABEL_PREDICTION`) or None.
    """
    infos = episode.get_infos()[1:]
    out: dict[str, np.ndarray | None] = {
        name: np.array([info.get(name, -1) for info in infos], dtype=np.int64)
        for name in ("group", "decision", "label")
    }
    out["predicted"] = None
    if keys.LABEL_PREDICTION in episode.extra_model_outputs:
        pred = episode.get_extra_model_outputs(keys.LABEL_PREDICTION)
        out["predicted"] = np.asarray(pred, dtype=np.float64).reshape(-1)[: len(infos)]
    return out


def hide_unobserved_labels(episode) -> int:
    """Removes every label the decision-maker did not observe from an episode chunk's infos.

    For each info with ``label_observed == 0`` and a label (``label >= 0``, i.e. an
    individual was decided on and rejected): ``label`` becomes -1 and the ``QUALIFIED``
    count of its group 0 (``SELECTED_QUALIFIED`` is already 0 for a rejection). The
    population's ``QUALIFIED_MASS`` row (the true state) is zeroed in every info. Infos
    are changed in place, so the episode that travels to the learners no longer carries
    them. Returns the number of labels removed.

    Batch envs (``fair/QuarterlyLending-v0``, one step = a quarter of applicants): an info
    with an array ``y_real`` (every applicant's true label) loses it and its oracle
    ``metrics``; its ``QUALIFIED`` row becomes ``SELECTED_QUALIFIED`` (observed positives),
    and every rejected applicant counts as a removed label.
    """
    removed = 0
    for info in episode.get_infos():
        counts = info.get("fairness")
        if counts is not None:
            counts[QUALIFIED_MASS] = 0.0
        if "y_real" in info:
            y_real = np.asarray(info.pop("y_real"))
            info.pop("metrics", None)
            granted = np.asarray(info.get("granted", np.zeros(0)))
            if counts is not None:
                counts[QUALIFIED] = counts[SELECTED_QUALIFIED]
            removed += int(y_real.size - np.count_nonzero(granted))
            continue
        label = info.get("label", -1)
        if label is None or label < 0 or info.get("label_observed", 1):
            continue
        info["label"] = -1
        group = info.get("group", -1)
        if counts is not None and group is not None and group >= 0:
            counts[QUALIFIED, group] = 0.0
        removed += 1
    return removed


def _group_names(config, n_groups: int) -> list[str]:
    from rllib_fair.envs import env_meta as _env_meta

    meta = _env_meta(getattr(config, "env", None))
    if meta is not None and n_groups in (-1, len(meta["group_names"])):
        return list(meta["group_names"])
    return [f"group_{g}" for g in range(max(n_groups, 0))]


def _notions_of(config) -> list[str]:
    if hasattr(config, "fairness_notions_to_log"):
        return config.fairness_notions_to_log()
    return ["equal_opportunity"]


class FairnessMetricsCallback(RLlibCallback):
    """Logs supply, demand, long-term benefit rates, gaps and per-step disparity.

    Installed automatically by :class:`rllib_fair.rllib.config.FairnessConfigMixin`.
    Settings come from the algorithm config: ``fairness_notion`` (plus
    ``fairness_log_notions``), ``fairness_disparity_window``, ``fairness_smoothing``.
    """

    def __init__(self):
        super().__init__()
        # (episode id, notion) -> DisparityCarry for episodes still running.
        self._carries: dict = {}
        self._warned = False

    # ------------------------------------------------------------------ env runners
    def on_environment_created(self, *, env_runner=None, env=None, **kwargs):
        """Makes the env report its exceptions to the driver (see :mod:`..health`)."""
        if env_runner is not None and env is not None:
            from rllib_fair.rllib.health import guard_env

            guard_env(env_runner, env)

    def on_sample_end(self, *, env_runner=None, metrics_logger=None, samples=None, **kwargs):
        """Sums supply/demand and per-step disparity over the returned chunks."""
        if env_runner is None or metrics_logger is None or not samples:
            return
        config = env_runner.config
        window = getattr(config, "fairness_disparity_window", None)
        smoothing = getattr(config, "fairness_smoothing", 0.0)
        notions = _notions_of(config) if getattr(config, "fairness_metrics", True) else []
        attach = bool(getattr(config, "needs_step_disparity", False))
        hide = (
            hasattr(config, "resolved_label_access") and config.resolved_label_access() != "oracle"
        )
        totals: dict = {}
        selective = bool(notions) and _selective_notion(config) is not None
        selective_totals: dict = {}
        for episode in samples:
            counts = episode_counts(episode)
            if counts.shape[0] == 0:
                if not self._warned and len(episode) > 0:
                    logger.warning(
                        "FairnessMetricsCallback: env %r puts no 'fairness' counts into "
                        "info; no fairness metrics are reported",
                        config.env,
                    )
                    self._warned = True
                continue
            done = episode.is_done
            self._replicator_metrics(episode, done, metrics_logger)
            self._qualification(config, episode, done, metrics_logger)
            # One pass over the infos for both users of the per-decision arrays.
            steps = episode_steps(episode) if (attach or selective) else None
            if attach:
                self._attach_step_disparity(config, episode, counts, done, steps)
            if selective:
                self._selective_metrics(config, episode, done, selective_totals, steps)
            if hide:
                hide_unobserved_labels(episode)
            for name in notions:
                notion = get_notion(name)
                supply, demand = notion.supply_demand(counts)
                key = (episode.id_, name)
                gaps, carry = running_disparity(
                    notion,
                    counts,
                    window=window,
                    smoothing=smoothing,
                    carry=self._carries.pop(key, None),
                )
                acc = totals.setdefault(
                    name,
                    {
                        "supply": np.zeros(supply.shape[1:]),
                        "demand": np.zeros(demand.shape[1:]),
                        "gap_sum": 0.0,
                        "steps": 0,
                        "ep_bias_sum": 0.0,
                        "episodes": 0,
                    },
                )
                acc["supply"] += supply.sum(axis=0)
                acc["demand"] += demand.sum(axis=0)
                acc["gap_sum"] += float(gaps.sum())
                acc["steps"] += int(gaps.shape[0])
                if done:
                    ep_supply, ep_demand = notion.supply_demand(carry.total)
                    rates, defined = benefit_rates(ep_supply, ep_demand, smoothing=smoothing)
                    acc["ep_bias_sum"] += float(np.max(bias(rates, defined)))
                    acc["episodes"] += 1
                else:
                    self._carries[key] = carry
        for name, acc in totals.items():
            groups = _group_names(config, acc["supply"].shape[-1])
            pairs = get_notion(name).pair_names
            for which in ("supply", "demand"):
                for k, pair in enumerate(pairs):
                    for g, group in enumerate(groups):
                        metrics_logger.log_value(
                            (keys.RAW, name, which, pair, group),
                            float(acc[which][k, g]),
                            reduce="sum",
                        )
            if name == _selective_notion(config) and selective_totals:
                for raw_key, value in selective_totals.items():
                    metrics_logger.log_value(
                        (keys.RAW, name, keys.SELECTIVE, *raw_key.split("/")),
                        float(value),
                        reduce="sum",
                    )
            for raw_key, value in (
                (keys.RAW_STEP_DISPARITY_SUM, acc["gap_sum"]),
                (keys.NUM_STEPS, acc["steps"]),
                (keys.RAW_EPISODE_BIAS_SUM, acc["ep_bias_sum"]),
                (keys.NUM_EPISODES, acc["episodes"]),
            ):
                metrics_logger.log_value((keys.RAW, name, raw_key), float(value), reduce="sum")

    def _replicator_metrics(self, episode, done, metrics_logger) -> None:
        """Episode means and sums of the replicator env's per-step loss, disparity and state.

        Only for envs whose step infos carry the replicator keys (checked on the chunk's
        last info); see :mod:`..keys` for the logged names. Sums of a running episode are
        carried to the next sample call; a finished episode logs one value per key.
        """
        infos = episode.get_infos()[1:]
        if not infos or keys.INFO_REPLICATOR_Q_NEXT not in infos[-1]:
            return
        key = (episode.id_, "__replicator__")
        acc = self._carries.pop(key, None) or [0.0, 0.0, 0.0, 0.0, 0, 0.0]
        for info in infos:
            q0, q1 = info[keys.INFO_REPLICATOR_Q_NEXT]
            acc[0] += info[keys.INFO_REPLICATOR_LOSS]
            acc[1] += info[keys.INFO_REPLICATOR_DISPARITY]
            acc[2] += 0.5 * (q0 + q1)
            acc[3] += abs(q0 - q1)
            acc[4] += 1
            acc[5] += info.get(keys.INFO_REPLICATOR_REWARD, 1.0 - info[keys.INFO_REPLICATOR_LOSS])
        if not done:
            self._carries[key] = acc
            return
        n = acc[4]
        for name, value in (
            (keys.REPLICATOR_LOSS_MEAN, acc[0] / n),
            (keys.REPLICATOR_DISPARITY_MEAN, acc[1] / n),
            (keys.REPLICATOR_CUMULATIVE_LOSS, acc[0]),
            (keys.REPLICATOR_CUMULATIVE_DISPARITY, acc[1]),
            (keys.REPLICATOR_Q_MEAN, acc[2] / n),
            (keys.REPLICATOR_Q_GAP, acc[3] / n),
            (keys.REPLICATOR_REWARD_RETURN, acc[5]),
        ):
            metrics_logger.log_value(
                (keys.REPLICATOR, name), float(value), reduce="mean", clear_on_reduce=True
            )

    def _qualification(self, config, episode, done, metrics_logger) -> None:
        """Qualification-gain signals of envs whose step infos carry ``qual_gain``.

        Lear & Zhang 2025 (Sec. 3, the qualification gain and its decomposition). Three jobs,
        each only where it applies:

        * for configs with ``needs_qualification_returns`` (PPO-C family): writes the
          Monte Carlo gain-to-go of the same individual, ``fair_qual_q`` (under pi) and
          ``fair_qual_ps`` (under pi^PS), into every step info of the chunk (a chunk end
          counts as the episode end; PPO-C validates ``complete_episodes``);
        * for configs with ``needs_long_term_w1`` (F-PPO-L): writes ``fair_w1_delta``
          (W_t - W_{t-1} of the windowed bin histograms, W_0 = 0, resumed across chunks;
          window, form and Sinkhorn settings from the config's ``w1_*`` keys);
        * metrics: each finished episode adds its C, DPE, IPE, SPE (``reference``,
          ``shadow`` and, for ``fair/LendingDrift-v0``, ``exact`` V_pi0), each group's
          total gain and |G0 - G1|, summed under ``QUAL_RAW`` and turned into
          ``fairness/qualification_gain/...`` by ``on_train_result``.
        """
        infos = episode.get_infos()[1:]
        if not infos or "qual_gain" not in infos[-1]:
            return
        from rllib_fair.fairness import qualification as qual

        steps = [
            i for i in infos if i.get("individual", -1) is not None and i.get("individual", -1) >= 0
        ]
        ids = np.array([i["individual"] for i in steps], dtype=np.int64)
        g = np.array([i["qual_gain"] for i in steps], dtype=np.float64)
        g_ps = np.array([i["qual_gain_ps"] for i in steps], dtype=np.float64)
        if getattr(config, "needs_qualification_returns", False):
            q = qual.returns_to_go_by_individual(ids, g)
            ps = qual.returns_to_go_by_individual(ids, g_ps)
            for info, a, b in zip(steps, q.tolist(), ps.tolist(), strict=True):
                info[QUAL_INFO_Q] = a
                info[QUAL_INFO_PS] = b
        groups = np.array([i["group"] for i in steps], dtype=np.int64)
        x = np.array([i["credit_bin"] for i in steps], dtype=np.int64)
        if getattr(config, "needs_long_term_w1", False):
            key = (episode.id_, "__w1__")
            carry = self._carries.pop(key, None)
            last = 0.0 if carry is None else carry["last"]
            w, carry = qual.windowed_count_w1(
                groups,
                x,
                window=config.w1_window,
                form=config.w1_form,
                carry=carry,
                p=config.w1_p,
                blur=config.w1_blur,
                scaling=config.w1_scaling,
            )
            dw = np.diff(np.r_[last, w])
            for info, d in zip(steps, dw.tolist(), strict=True):
                info[QUAL_INFO_W1_DELTA] = d
            if not done:
                self._carries[key] = carry
        if not getattr(config, "fairness_metrics", True):
            return
        key = (episode.id_, "__qualification__")
        g_pi0 = np.array([i.get("qual_gain_pi0", 0.0) for i in steps], dtype=np.float64)
        parts = self._carries.pop(key, []) + [(ids, groups, x, g, g_ps, g_pi0)]
        if not done:
            self._carries[key] = parts
            return
        ids, groups, x, g, g_ps, g_pi0 = (np.concatenate(c) for c in zip(*parts, strict=True))
        average = getattr(config, "decomposition_average", "visited")
        n_per = None
        variants: dict = {"reference": "reference", "shadow": "shadow"}
        table = self._exact_pi0_table(config, average)
        if table is not None:
            variants["exact"] = table[0]
            n_per = table[1]
        if average == "population" and n_per is None:
            average = "visited"
        sums: dict = {}
        for name, v_pi0 in variants.items():
            dec = qual.episode_decomposition(
                ids, groups, x, g, g_ps, v_pi0=v_pi0, g_pi0=g_pi0, average=average,
                n_per_group=n_per,
            )  # fmt: skip
            for part in ("C", "DPE", "IPE", "SPE"):
                sums[f"{name}/{part.lower()}"] = float(dec[part])
        sums["gain/0"], sums["gain/1"] = (float(v) for v in dec["G"])
        sums["gain_gap_abs"] = abs(float(dec["G_gap"]))
        sums["episodes"] = 1.0
        for raw_key, value in sums.items():
            metrics_logger.log_value((QUAL_RAW, *raw_key.split("/")), value, reduce="sum")

    def _exact_pi0_table(self, config, average):
        """``(V_pi0 [2, n_bins], n_per_group)`` of ``fair/LendingDrift-v0`` (cached) or None."""
        cache = getattr(self, "_pi0_tables", None)
        if cache is None:
            cache = self._pi0_tables = {}
        if average not in cache:
            env_id = str(getattr(config, "env", ""))
            if "LendingDrift" not in env_id:
                cache[average] = None
            else:
                from rllib_fair.envs.lending_drift import LendingDriftEnv

                env = LendingDriftEnv(**dict(getattr(config, "env_config", None) or {}))
                n = env.individuals_per_group
                table = env.pi0_value_table(visited=average == "visited")
                cache[average] = (table, np.array([n, n], dtype=np.float64))
        return cache[average]

    def _selective_metrics(self, config, episode, done, totals: dict, steps: dict) -> None:
        """Sums for the selective-labels metrics: three disparities, r^i and eps^i.

        Over the configured window: the per-step |disparity| from true labels, from
        accepted individuals only (Delta^{A=1}, Eq. 2) and, when the module predicts
        labels, from imputed labels (Delta-tilde); per group the decisions, rejections
        and the predictor's error on the rejected (Theorem 3.1's r^i and eps^i; true
        labels are used here for logging only, on the env runner).
        """
        decided = steps["group"] >= 0
        if not decided.all():
            return
        notion = _selective_notion(config)
        window = getattr(config, "fairness_disparity_window", None)
        sources = ["true", "accepted"] + (["imputed"] if steps["predicted"] is not None else [])
        for source in sources:
            key = (episode.id_, "__selective__", source)
            series, carry = running_selective_disparity(
                notion,
                steps["group"],
                steps["decision"],
                steps["label"],
                steps["predicted"],
                window=window,
                source=source,
                signed=False,
                carry=self._carries.pop(key, None),
            )
            totals[f"{source}_disparity_sum"] = totals.get(f"{source}_disparity_sum", 0.0) + float(
                series.sum()
            )
            if not done:
                self._carries[key] = carry
        totals["steps"] = totals.get("steps", 0) + len(steps["group"])
        rejected = steps["decision"] == 0
        for g in (0, 1):
            in_g = steps["group"] == g
            rej = in_g & rejected
            totals[f"decided/{g}"] = totals.get(f"decided/{g}", 0) + int(in_g.sum())
            totals[f"rejected/{g}"] = totals.get(f"rejected/{g}", 0) + int(rej.sum())
            if steps["predicted"] is not None:
                err = float((steps["predicted"][rej] - steps["label"][rej]).sum())
                totals[f"error_sum/{g}"] = totals.get(f"error_sum/{g}", 0.0) + err

    def _attach_step_disparity(self, config, episode, counts, done, steps: dict) -> None:
        """Writes Delta_t of every transition of the chunk into the step infos.

        Uses the configured notion, window, smoothing and disparity source. The value
        after transition t goes into ``infos[t + 1]`` and the value before the chunk's
        first transition into ``infos[0]`` (key :data:`keys.INFO_DISPARITY`), so the
        numbers travel *with their steps*: RLlib slices episode chunks when it shards
        a train batch over several learners (``num_learners >= 2``), and a slice keeps
        its infos (its ``infos[0]`` is the step before it) but not ``custom_data``.
        The learner connector turns them into the ``fair_disparity`` /
        ``fair_disparity_prev`` columns.
        """
        source = get_disparity_source(getattr(config, "fairness_disparity_source", "true"))
        key = (episode.id_, "__step_disparity__")
        carry, start = self._carries.pop(key, (None, 0.0))
        gaps, carry = source(
            config.resolved_fairness_notion(),
            counts,
            window=getattr(config, "fairness_disparity_window", None),
            smoothing=getattr(config, "fairness_smoothing", 0.0),
            carry=carry,
            steps=steps,
        )
        infos = episode.get_infos()
        infos[0][keys.INFO_DISPARITY] = float(start)
        for info, gap in zip(infos[1:], gaps.tolist(), strict=False):
            info[keys.INFO_DISPARITY] = gap
        if not done:
            self._carries[key] = (carry, float(gaps[-1]) if len(gaps) else start)

    # ------------------------------------------------------------------ algorithm
    def on_train_result(self, *, algorithm=None, metrics_logger=None, result=None, **kwargs):
        """Turns the summed raw numbers into the documented fairness keys."""
        if result is None:
            return
        config = getattr(algorithm, "config", None)
        order = _group_names(config, -1) if config is not None else []
        headline = getattr(config, "decomposition_v_pi0", "reference")
        _finalize(result, order, headline)
        if algorithm is not None:
            from rllib_fair.rllib.health import PLACEMENT, placement

            where = placement(algorithm)
            if where:
                result[PLACEMENT] = where
        evaluation = result.get("evaluation")
        if isinstance(evaluation, dict):
            _finalize(evaluation, order)

    def on_evaluate_end(
        self, *, algorithm=None, metrics_logger=None, evaluation_metrics=None, **kw
    ):
        """Finalises the evaluation's fairness keys (``algo.evaluate()`` called directly)."""
        if isinstance(evaluation_metrics, dict):
            config = getattr(algorithm, "config", None)
            order = _group_names(config, -1) if config is not None else []
            _finalize(evaluation_metrics, order)


def summarize_qualification(data: dict, group_order: list[str], headline: str) -> dict:
    """``fairness/qualification_gain`` block: per-episode means of the summed raw numbers.

    Keys: ``c_pi``, ``dpe``, ``ipe``, ``spe`` (the ``headline`` V_pi0 variant),
    ``<variant>/{c_pi,dpe,ipe,spe}`` for ``reference``, ``shadow`` (and ``exact``),
    ``gain/<group>`` (each group's total realised gain G_s of an episode),
    ``gain_gap_abs`` (|G0 - G1|) and ``num_episodes``.
    """
    n = float(data.get("episodes", 0.0))
    if n <= 0:
        return {"num_episodes": 0.0}
    out: dict = {"num_episodes": n}
    for variant in ("reference", "shadow", "exact"):
        if variant not in data:
            continue
        block = {("c_pi" if k == "c" else k): float(v) / n for k, v in data[variant].items()}
        out[variant] = block
        if variant == headline:
            out.update(block)
    if "c_pi" not in out and "reference" in out:
        out.update(out["reference"])
    names = list(group_order[:2]) if len(group_order) >= 2 else ["0", "1"]
    out["gain"] = {names[g]: float(data.get("gain", {}).get(str(g), 0.0)) / n for g in (0, 1)}
    out["gain_gap_abs"] = float(data.get("gain_gap_abs", 0.0)) / n
    return out


def _finalize(scope: dict, group_order: list[str], headline: str = "reference") -> None:
    runners = scope.get("env_runners")
    if isinstance(runners, dict) and QUAL_RAW in runners:
        scope.setdefault(keys.FAIRNESS, {})[QUALIFICATION] = summarize_qualification(
            runners.pop(QUAL_RAW), group_order, headline
        )
    if not isinstance(runners, dict) or keys.RAW not in runners:
        return
    raw = runners.pop(keys.RAW)
    out = scope.setdefault(keys.FAIRNESS, {})
    for name, data in raw.items():
        out[name] = summarize_raw(name, data, group_order)


def _selective_notion(config) -> str | None:
    """The main notion if the selective-labels metrics apply to it (two-group decisions)."""
    from rllib_fair.envs import env_meta as _env_meta
    from rllib_fair.fairness.selective import SELECTIVE_NOTIONS

    try:
        notion = config.resolved_fairness_notion()
    except (AttributeError, ValueError):
        return None
    meta = _env_meta(getattr(config, "env", None))
    if meta is None or meta["n_groups"] != 2 or notion not in SELECTIVE_NOTIONS:
        return None
    if not meta["id"].startswith("fair/Lending") and "School" not in meta["id"]:
        return None
    return notion


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
    present = list(data["supply"][pairs[0]].keys())
    # The env's group order where known (merging across runners may reorder keys).
    groups = [g for g in (group_order or []) if g in present]
    groups += sorted(g for g in present if g not in groups)
    supply = np.array([[float(data["supply"][p][g]) for g in groups] for p in pairs])
    demand = np.array([[float(data["demand"][p][g]) for g in groups] for p in pairs])
    rates, defined = benefit_rates(supply, demand)
    gaps = np.asarray(bias(rates, defined), dtype=np.float64).reshape(len(pairs))
    ratios = np.asarray(ratio(rates, defined), dtype=np.float64).reshape(len(pairs))
    steps = float(data.get(keys.NUM_STEPS, 0.0))
    episodes = float(data.get(keys.NUM_EPISODES, 0.0))

    def per_group(values: np.ndarray) -> dict:
        if len(pairs) == 1:
            return {g: float(values[0, i]) for i, g in enumerate(groups)}
        return {
            p: {g: float(values[k, i]) for i, g in enumerate(groups)} for k, p in enumerate(pairs)
        }

    out = {
        keys.BIAS: float(gaps.max()),
        keys.RATIO: float(ratios.min()),
        keys.RATE: per_group(rates),
        keys.SUPPLY: per_group(supply),
        keys.DEMAND: per_group(demand),
        keys.STEP_DISPARITY_MEAN: float(data.get(keys.RAW_STEP_DISPARITY_SUM, 0.0)) / steps
        if steps > 0
        else 0.0,
        keys.NUM_STEPS: steps,
        keys.NUM_EPISODES: episodes,
    }
    if episodes > 0:
        out[keys.EPISODE_BIAS_MEAN] = float(data.get(keys.RAW_EPISODE_BIAS_SUM, 0.0)) / episodes
    if keys.SELECTIVE in data:
        out[keys.SELECTIVE] = summarize_selective(data[keys.SELECTIVE], groups)
    return out
