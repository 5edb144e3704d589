"""Named evaluation protocols of the reproduction plans.

An evaluator has two steps: :meth:`Evaluator.configure` adds what it needs to the
algorithm's config before the algorithm is built (an evaluation section, for example),
and :meth:`Evaluator.measure` returns the plan's metrics for the trained algorithm and
the last training result. A plan names its evaluator in ``evaluation.evaluator`` and its
metrics as result paths (``fairness.{notion}.bias``; ``{notion}`` is the setting's).

Shipped:

* ``greedy_episodes``: the final policy on ``episodes`` fresh episodes on a local
  evaluation runner, greedy unless ``explore: true`` (RLlib's ``evaluate()``); the paths
  read its result, plus ``return`` (mean episode return) and ``reward_per_step``
  (mean return / mean episode length);
* ``final_training``: the paths read the last training result (for claims about the
  training run itself, such as a regret or a cumulative constraint violation);
* ``lending_drift_sampled``: Lear & Zhang's deployment on ``fair/LendingDrift-v0``: the
  final policy, actions sampled from its probabilities, on ``episodes`` fresh episodes of
  the training env's setting and length (env seeds drawn from ``10_000 + seed``); the
  paths name its outputs, means over the episodes: ``profit`` (cash gained),
  ``gain_gap`` (|G0 - G1|, the groups' total qualification gains), ``G0``, ``G1`` and
  ``lambda`` (the benefit-fairness Lambda of the episode's decisions).

A metric that is missing or not finite is an error naming the path: a cell never writes
a NaN.
"""

from __future__ import annotations

import math
from typing import Any


def read_path(result: dict, path: str) -> float:
    """The number at the dotted ``path`` of ``result`` (one-line ValueError otherwise)."""
    node: Any = result
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ValueError(f"metric path {path!r}: no {part!r} in the result")
        node = node[part]
    try:
        value = float(node)
    except (TypeError, ValueError):
        raise ValueError(f"metric path {path!r}: {node!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"metric path {path!r}: {value!r} is not finite")
    return value


class Evaluator:
    """The base evaluator: nothing to configure; metrics read from ``result``."""

    def configure(self, config, evaluation: dict):
        """The config with what this evaluator needs (here: unchanged)."""
        return config

    def measure(self, algo, last_result: dict, paths: dict[str, str], evaluation: dict) -> dict:
        """The plan's metrics: ``{name: value}``."""
        return {name: read_path(last_result, path) for name, path in paths.items()}


class FinalTraining(Evaluator):
    """Metrics of the last training result."""


class GreedyEpisodes(Evaluator):
    """The final policy on fresh episodes (RLlib's ``evaluate()`` on a local runner)."""

    def configure(self, config, evaluation: dict):
        """Adds a local evaluation runner running ``episodes`` episodes per ``evaluate()``."""
        return config.evaluation(
            evaluation_interval=None,
            evaluation_duration=int(evaluation["episodes"]),
            evaluation_duration_unit="episodes",
            evaluation_num_env_runners=0,
            evaluation_config={"explore": bool(evaluation.get("explore", False))},
        )

    def measure(self, algo, last_result: dict, paths: dict[str, str], evaluation: dict) -> dict:
        """Runs ``evaluate()`` once and reads the metrics from its result."""
        ev = algo.evaluate()
        ev = dict(ev.get("evaluation", ev))
        ret = read_path(ev, "env_runners.episode_return_mean")
        length = read_path(ev, "env_runners.episode_len_mean")
        derived = {"return": ret, "reward_per_step": ret / length if length else math.nan}
        out = {}
        for name, path in paths.items():
            out[name] = derived[path] if path in derived else read_path(ev, path)
            if not math.isfinite(out[name]):
                raise ValueError(f"metric {name!r}: {out[name]!r} is not finite")
        return out


class LendingDriftSampled(Evaluator):
    """Lear & Zhang's sampled-action deployment on the credit-drift lending env."""

    def measure(self, algo, last_result: dict, paths: dict[str, str], evaluation: dict) -> dict:
        """Runs the episodes in this process and reads the metrics from their means."""
        import numpy as np
        import torch

        from rllib_fair.envs.lending_drift import LendingDriftEnv
        from rllib_fair.fairness.qualification import benefit_fairness_lambda

        cfg = algo.config
        env = LendingDriftEnv(**dict(cfg.env_config or {}))
        module = algo.get_module()
        device = next(module.parameters()).device
        rng = np.random.default_rng(10_000 + int(cfg.seed or 0))
        out: dict[str, list] = {k: [] for k in ("profit", "gain_gap", "G0", "G1", "lambda")}
        for _ in range(int(evaluation["episodes"])):
            obs, _ = env.reset(seed=int(rng.integers(2**31)))
            gains = np.zeros(2)
            probs, groups, benefits = [], [], []
            done = False
            start_cash = env.cash
            while not done:
                with torch.no_grad():
                    batch = {"obs": torch.as_tensor(obs[None], device=device)}
                    logits = module.forward_inference(batch)["action_dist_inputs"][0]
                p1 = float(torch.softmax(logits, -1)[1])
                obs, _, term, trunc, info = env.step(int(rng.random() < p1))
                gains[info["group"]] += info["qual_gain"]
                probs.append(p1)
                groups.append(info["group"])
                benefits.append(info["benefit"])
                done = term or trunc
            p, g, b = np.array(probs), np.array(groups), np.array(benefits)
            out["profit"].append(env.cash - start_cash)
            out["gain_gap"].append(abs(gains[0] - gains[1]))
            out["G0"].append(gains[0])
            out["G1"].append(gains[1])
            out["lambda"].append(
                benefit_fairness_lambda(p[g == 0], p[g == 1], b[g == 0], b[g == 1])
            )
        env.close()
        means = {k: float(np.mean(v)) for k, v in out.items()}
        return {name: read_path(means, path) for name, path in paths.items()}


#: Evaluators by the name a plan uses.
EVALUATORS: dict[str, type[Evaluator]] = {
    "greedy_episodes": GreedyEpisodes,
    "final_training": FinalTraining,
    "lending_drift_sampled": LendingDriftSampled,
}
