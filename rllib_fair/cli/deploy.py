"""Deployment evaluation of a trained checkpoint (SELLF's protocol, Sec. 5 and App. E).

The trained policy is deployed in a fresh environment for ``steps`` steps (one episode,
ended early only by the environment's own termination) on each of ``seeds`` seeds; per
seed we record the cumulative reward, the mean over time of the true per-step disparity
(|Delta_t| over the last ``window`` decisions, true labels) and the final long-term gap;
the report gives mean +- std over seeds.

Each deployment runs through an RLlib ``SingleAgentEnvRunner`` built from the
checkpoint's config, so observations and actions pass the module's own connectors
(observation preprocessing, action unsquashing and clipping for continuous actions)
exactly as in training. Actions are greedy (the mode of the policy's action
distribution) unless ``explore`` is set, in which case they are sampled as in training,
with randomness seeded by the deployment seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rllib_fair.fairness import Ledger, WindowedDisparity

GREEDY_NOTE = (
    "greedy (the most likely action); training metrics come from sampled actions, so a "
    "policy whose fairness lives in its action probabilities can look less fair here: "
    "pass --explore to deploy it as it was trained"
)
EXPLORE_NOTE = "sampled from the policy as in training (--explore), seeded per deployment"


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


def find_checkpoint(path: str | Path) -> Path:
    """The algorithm checkpoint a path names: itself, or the newest one under it.

    Accepts a checkpoint folder, a trial folder (``checkpoint_*`` inside) or an
    experiment folder (trial folders inside); relative paths are resolved against the
    current directory.

    Raises:
        DeployError: one line naming the path and what was expected.
    """
    p = Path(path).expanduser().resolve()
    if not p.is_dir():
        raise DeployError(f"CHECKPOINT: {str(path)!r} is not a folder")
    if (p / "algorithm_state.pkl").exists() or (p / "rllib_checkpoint.json").exists():
        return p
    found = [
        c
        for c in list(p.glob("checkpoint_*")) + list(p.glob("*/checkpoint_*"))
        if c.is_dir() and (c / "algorithm_state.pkl").exists()
    ]
    if not found:
        raise DeployError(
            f"CHECKPOINT: no algorithm checkpoint in or under {str(path)!r}; valid: a "
            "checkpoint folder, a trial folder with checkpoint_* folders, or an experiment "
            "folder (run with checkpoint_config: {checkpoint_at_end: true})"
        )
    return max(found, key=lambda c: (c.stat().st_mtime, c.name))


def deploy(
    checkpoint: str,
    *,
    steps: int = 10_000,
    seeds: int = 10,
    window: int | None = None,
    notion: str | None = None,
    explore: bool = False,
) -> tuple[list[DeployResult], dict]:
    """Deploys the checkpoint's policy; returns the runs and a mean +- std summary."""
    from ray.rllib.algorithms.algorithm import Algorithm

    algo = Algorithm.from_checkpoint(str(find_checkpoint(checkpoint)))
    try:
        return deploy_algorithm(
            algo, steps=steps, seeds=seeds, window=window, notion=notion, explore=explore
        )
    finally:
        algo.stop()


def check_notion(env_id: str, notion: str) -> None:
    """Raises DeployError if the env cannot measure ``notion``."""
    from rllib_fair.rllib.config import _env_meta

    meta = _env_meta(env_id)
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
        ledger = Ledger(notion, n_groups)
        disparity = WindowedDisparity(notion, n_groups, window=window)
        gaps = []
        for info in infos:
            ledger.update(info["fairness"])
            gaps.append(disparity.update(info["fairness"]))
        total = float(np.sum(episode.get_rewards()))
        runs.append(
            DeployResult(
                seed,
                len(episode),
                total,
                float(np.mean(gaps)),
                ledger.bias(),
                np.asarray(gaps, dtype=np.float64) if series else None,
            )
        )
    summary = {}
    for key in ("cumulative_reward", "mean_disparity", "final_gap", "steps"):
        values = np.array([getattr(r, key) for r in runs], dtype=np.float64)
        summary[key] = {"mean": float(values.mean()), "std": float(values.std())}
    summary["notion"] = notion
    summary["window"] = window
    summary["seeds"] = seeds
    summary["actions"] = "sampled" if explore else "greedy"
    return runs, summary


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


def format_summary(summary: dict) -> str:
    """The report printed by ``rllib-fair evaluate``."""

    def pm(key: str) -> str:
        m, s = summary[key]["mean"], summary[key]["std"]
        return f"{m:.4f} +- {s:.4f}" if math.isfinite(m) else "-"

    note = EXPLORE_NOTE if summary.get("actions") == "sampled" else GREEDY_NOTE
    return "\n".join(
        [
            f"deployment over {summary['seeds']} seeds ({summary['notion']}, window "
            f"{summary['window']}):",
            f"  actions: {note}",
            f"  cumulative reward      {pm('cumulative_reward')}",
            f"  mean true disparity    {pm('mean_disparity')}",
            f"  final long-term gap    {pm('final_gap')}",
            f"  steps                  {pm('steps')}",
        ]
    )
