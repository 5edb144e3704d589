"""Deployment of a trained policy: SELLF's evaluation protocol (Sec. 5 and App. E).

The policy of a built (trained or restored) algorithm is deployed in a fresh
environment for ``steps`` steps (one episode, ended early only by the environment's own
termination) on each of ``seeds`` seeds; per seed we record the cumulative reward, the
mean over time of the true per-step disparity (|Delta_t| over the last ``window``
decisions, true labels) and the final long-term gap, and each group's long-term rate of
the notion at the end. The summary gives mean and std over the seeds.

Next to the true disparity, each run records the disparity the policy's own algorithm
observes (``fairness_disparity_source``): on the accepted applicants' labels only
(``accepted``, POCAR), on those labels with the rest imputed by the module's label
predictor (``imputed``, SELLF), or the true one (``true``: the oracle, PPO). It is the
disparity SELLF's Alg. 2 selects on (Valdrighi et al.: each method on what it observes),
computed over the same window of decisions as the true one.

Each deployment runs through an RLlib ``SingleAgentEnvRunner`` built from the
algorithm's config, so observations and actions pass the module's own connectors
(observation preprocessing, action unsquashing and clipping for continuous actions)
exactly as in training. Actions are greedy (the mode of the policy's action
distribution) unless ``explore`` is set, in which case they are sampled as in training,
with randomness seeded by the deployment seed.

``rllib-fair evaluate`` (:mod:`rllib_fair.cli.deploy`, which finds the checkpoint) and the
reproduction plans' ``deployment`` evaluator both run :func:`deploy_algorithm`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rllib_fair.fairness import Ledger, WindowedDisparity


class DeployError(ValueError):
    """A checkpoint, notion or path that cannot be deployed; the message is one line."""


@dataclass
class DeployResult:
    """One deployment run."""

    seed: int
    steps: int
    cumulative_reward: float
    mean_disparity: float
    final_gap: float
    #: |Delta_t| per step (only with ``deploy_algorithm(..., series=True)``)
    disparity_series: np.ndarray | None = None
    #: long-term rate per pair and group at the end (``{pair: {group: rate}}``; NaN
    #: where undefined, e.g. no qualified applicant of that group was seen)
    rates: dict | None = None
    #: the mean over time of the disparity the algorithm observes (its
    #: ``fairness_disparity_source``); equal to ``mean_disparity`` for ``true``
    mean_observed_disparity: float = math.nan


def check_notion(env_id: str, notion: str) -> None:
    """Raises DeployError if the env cannot measure ``notion``."""
    from rllib_fair.envs import env_meta

    meta = env_meta(env_id)
    if meta is not None and notion not in meta["supported_notions"]:
        raise DeployError(
            f"--notion: {notion!r} cannot be measured on {env_id!r}; valid choices: "
            f"{', '.join(meta['supported_notions'])}"
        )


def deploy_algorithm(
    algo,
    *,
    steps: int = 10_000,
    seeds: int = 10,
    window: int | None = None,
    notion: str | None = None,
    explore: bool = False,
    series: bool = False,
) -> tuple[list[DeployResult], dict]:
    """Deploys a built (trained or restored) algorithm's policy; see :func:`deploy`.

    With ``series`` every :class:`DeployResult` also carries the per-step disparity
    (the curve the SELLF paper plots over deployment time).
    """
    cfg = algo.config
    notion = notion or cfg.resolved_fairness_notion()
    check_notion(cfg.env, notion)
    window = window if window is not None else getattr(cfg, "fairness_disparity_window", None)
    weights = algo.learner_group.get_state(components=["learner/rl_module"], inference_only=True)[
        "learner"
    ]["rl_module"]
    from rllib_fair.envs import env_meta

    meta = env_meta(cfg.env)
    group_names = list(meta["group_names"]) if meta is not None else None
    runs = []
    for seed in range(seeds):
        runner = _deployment_runner(cfg, seed=seed, steps=steps)
        try:
            runner.set_state({"rl_module": weights})
            (episode,) = runner.sample(num_episodes=1, explore=explore, force_reset=True)[:1]
        finally:
            runner.stop()
        infos = episode.get_infos()[1:]
        if not infos or "fairness" not in infos[0]:
            raise DeployError(
                f"CHECKPOINT: env {cfg.env!r} puts no 'fairness' counts into info; nothing "
                "to measure"
            )
        n_groups = infos[0]["fairness"].shape[-1]
        if group_names is not None and len(group_names) != n_groups:
            group_names = None
        ledger = Ledger(notion, n_groups)
        disparity = WindowedDisparity(notion, n_groups, window=window)
        gaps = []
        for info in infos:
            ledger.update(info["fairness"])
            gaps.append(disparity.update(info["fairness"]))
        total = float(np.sum(episode.get_rewards()))
        observed = _observed_disparity(cfg, notion, window, infos, episode, gaps)
        rates = {
            pair: {g: (v["rate"] if v["defined"] else math.nan) for g, v in groups.items()}
            for pair, groups in ledger.by_group(group_names).items()
        }
        runs.append(
            DeployResult(
                seed,
                len(episode),
                total,
                float(np.mean(gaps)),
                ledger.bias(),
                np.asarray(gaps, dtype=np.float64) if series else None,
                rates,
                observed,
            )
        )
    summary = {}
    fields = ("cumulative_reward", "mean_disparity", "mean_observed_disparity", "final_gap")
    for key in (*fields, "steps"):
        values = np.array([getattr(r, key) for r in runs], dtype=np.float64)
        summary[key] = {"mean": float(values.mean()), "std": float(values.std())}
    summary["rates"] = {
        pair: {g: _mean_std([r.rates[pair][g] for r in runs]) for g in runs[0].rates[pair]}
        for pair in (runs[0].rates if runs else {})
    }
    summary["notion"] = notion
    summary["observed_source"] = _source(cfg)
    summary["window"] = window
    summary["seeds"] = seeds
    summary["actions"] = "sampled" if explore else "greedy"
    return runs, summary


def _source(cfg) -> str:
    """The config's ``fairness_disparity_source`` (``"true"`` when it has none)."""
    return str(getattr(cfg, "fairness_disparity_source", None) or "true")


def _observed_disparity(cfg, notion: str, window, infos: list, episode, gaps: list) -> float:
    """The mean over the deployment of the disparity the algorithm observes.

    ``true``: the true per-step disparity (``gaps``) itself. ``accepted`` and
    ``imputed``: the selective-labels disparity over the same window of decisions, from
    the decisions' groups, decisions and true labels (only accepted ones are read) and,
    for ``imputed``, the module's label predictions stored with the episode.
    """
    source = _source(cfg)
    if source == "true":
        return float(np.mean(gaps))
    from rllib_fair.fairness.sequence import get_disparity_source
    from rllib_fair.rllib import keys

    steps = {
        name: np.array([info.get(name, -1) for info in infos], dtype=np.int64)
        for name in ("group", "decision", "label")
    }
    if (steps["group"] < 0).any() or (steps["decision"] < 0).any():
        raise DeployError(
            f"fairness_disparity_source: {source!r} needs every step's group and decision "
            f"in info; env {cfg.env!r} leaves some out"
        )
    if source == "imputed":
        if keys.LABEL_PREDICTION not in episode.extra_model_outputs:
            raise DeployError(
                "fairness_disparity_source: 'imputed' needs the module's label predictions; "
                "the deployed module stored none"
            )
        raw = episode.get_extra_model_outputs(keys.LABEL_PREDICTION)
        steps["predicted"] = np.asarray(raw, dtype=np.float64).reshape(-1)[: len(infos)]
    counts = np.stack([info["fairness"] for info in infos]).astype(np.float64)
    # the source the algorithm trains with reads only the accepted rows' labels
    series, _ = get_disparity_source(source)(
        notion,
        counts,
        window=window,
        smoothing=0.0,
        carry=None,
        steps=steps,
        undefined=getattr(cfg, "fairness_undefined_utility", "exclude"),
    )
    return float(np.mean(series))


def _mean_std(values: list[float]) -> dict:
    """Mean and std over the seeds where the value is defined (``n``: how many)."""
    v = np.array([x for x in values if math.isfinite(x)], dtype=np.float64)
    if not len(v):
        return {"mean": math.nan, "std": math.nan, "n": 0}
    return {"mean": float(v.mean()), "std": float(v.std()), "n": int(len(v))}


def _deployment_runner(cfg, *, seed: int, steps: int):
    """A local env runner of the checkpoint's config: one env, ``steps`` long, seeded."""
    from ray.rllib.callbacks.callbacks import RLlibCallback
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    c = cfg.copy(copy_frozen=False)
    env_config = dict(c.env_config or {})
    env_config["max_steps"] = steps
    c.environment(env_config=env_config)
    c.env_runners(num_env_runners=0, num_envs_per_env_runner=1)
    c.debugging(seed=seed)
    # Deployment measures with true labels and needs no training-time callbacks (they
    # would remove the labels of rejected applicants from the infos).
    c.callbacks_class = RLlibCallback
    return SingleAgentEnvRunner(config=c)
