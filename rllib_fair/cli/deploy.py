"""Deployment evaluation of a trained checkpoint (SELLF's protocol, Sec. 5 and App. E).

The trained policy is deployed in a fresh environment for ``steps`` steps (one episode,
ended early only by the environment's own termination) on each of ``seeds`` seeds; per
seed we record the cumulative reward, the mean over time of the true per-step disparity
(|Delta_t| over the last ``window`` decisions, true labels) and the final long-term gap;
the report gives mean +- std over seeds. Actions are greedy (argmax of the policy)
unless ``explore`` is set, in which case they are sampled with a seeded generator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rllib_fair.fairness import Ledger, WindowedDisparity


@dataclass
class DeployResult:
    """One deployment run."""

    seed: int
    steps: int
    cumulative_reward: float
    mean_disparity: float
    final_gap: float


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

    algo = Algorithm.from_checkpoint(checkpoint)
    try:
        return deploy_algorithm(
            algo, steps=steps, seeds=seeds, window=window, notion=notion, explore=explore
        )
    finally:
        algo.stop()


def deploy_algorithm(
    algo,
    *,
    steps: int = 10_000,
    seeds: int = 10,
    window: int | None = None,
    notion: str | None = None,
    explore: bool = False,
) -> tuple[list[DeployResult], dict]:
    """Deploys a built (trained or restored) algorithm's policy; see :func:`deploy`."""
    import gymnasium as gym
    import torch
    from ray.rllib.core.columns import Columns

    import rllib_fair  # noqa: F401  (registers the env ids)

    cfg = algo.config
    notion = notion or cfg.resolved_fairness_notion()
    window = window if window is not None else getattr(cfg, "fairness_disparity_window", None)
    module = algo.get_module()
    env_config = dict(cfg.env_config or {})
    env_config["max_steps"] = steps
    runs = []
    for seed in range(seeds):
        env = gym.make(cfg.env, **env_config)
        obs, info = env.reset(seed=seed)
        gen = torch.Generator().manual_seed(seed)
        n_groups = info["fairness"].shape[-1]
        ledger = Ledger(notion, n_groups)
        disparity = WindowedDisparity(notion, n_groups, window=window)
        total, gaps, t, done = 0.0, [], 0, False
        while not done:
            with torch.no_grad():
                out = module.forward_inference(
                    {Columns.OBS: torch.as_tensor(obs, dtype=torch.float32)[None]}
                )
                logits = out[Columns.ACTION_DIST_INPUTS][0]
                if explore:
                    action = int(torch.multinomial(torch.softmax(logits, -1), 1, generator=gen))
                else:
                    action = int(torch.argmax(logits))
            obs, reward, terminated, truncated, info = env.step(action)
            total += float(reward)
            ledger.update(info["fairness"])
            gaps.append(disparity.update(info["fairness"]))
            t += 1
            done = terminated or truncated
        env.close()
        runs.append(DeployResult(seed, t, total, float(np.mean(gaps)), ledger.bias()))
    summary = {}
    for key in ("cumulative_reward", "mean_disparity", "final_gap", "steps"):
        values = np.array([getattr(r, key) for r in runs], dtype=np.float64)
        summary[key] = {"mean": float(values.mean()), "std": float(values.std())}
    summary["notion"] = notion
    summary["window"] = window
    summary["seeds"] = seeds
    return runs, summary


def format_summary(summary: dict) -> str:
    """The report printed by ``rllib-fair evaluate``."""

    def pm(key: str) -> str:
        m, s = summary[key]["mean"], summary[key]["std"]
        return f"{m:.4f} +- {s:.4f}" if math.isfinite(m) else "-"

    return "\n".join(
        [
            f"deployment over {summary['seeds']} seeds ({summary['notion']}, window "
            f"{summary['window']}):",
            f"  cumulative reward      {pm('cumulative_reward')}",
            f"  mean true disparity    {pm('mean_disparity')}",
            f"  final long-term gap    {pm('final_gap')}",
            f"  steps                  {pm('steps')}",
        ]
    )
