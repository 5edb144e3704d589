"""The ``deployment`` evaluator: the trained policy deployed as in SELLF's Tables 1 and 2.

The final policy runs :func:`rllib_fair.rllib.deployment.deploy_algorithm` (the code
behind ``rllib-fair evaluate``): one episode of ``steps`` env steps (ended early only by
the env's own termination) on each of the deployment seeds ``0 .. seeds - 1``, on the
training env and its ``env_config``, with true labels; actions sampled from the policy
when the plan's ``explore`` is true, else greedy. Plan keys under ``evaluation``:
``steps`` (default 10,000), ``seeds`` (default 10), ``window`` (decisions in the true
disparity's window; default the config's ``fairness_disparity_window``). A setting may
set its own ``steps`` (``settings.<s>.evaluation.steps``): the authors deploy FICO
lending for 10,000 steps and school admission for its 2,048-step episode.

The paths name its outputs, means over the deployment seeds:

* ``disparity``: the true disparity |Delta_t| of the setting's notion averaged over the
  deployment's steps (the tables' disparity); ``disparity_std`` its std over the seeds;
* ``observed_disparity``: the same average of the disparity the algorithm itself
  observes (its ``fairness_disparity_source``: accepted-only labels for POCAR, labels
  imputed by the predictor for SELLF, the true one for the oracle and PPO), what the
  paper's Alg. 2 selects on; ``observed_disparity_std`` its std over the seeds;
* ``reward``: the deployment's cumulative reward; ``reward_std`` its std over the seeds;
* ``final_gap``: the notion's long-term gap at the end of the deployment;
* ``steps``: the deployed episode's length (below ``steps`` when the env terminated).
"""

from __future__ import annotations

import math

from rllib_fair.reproduce.evaluator_base import Evaluator, check_output_paths

#: What the paths may name.
OUTPUTS = (
    *("disparity", "disparity_std", "observed_disparity", "observed_disparity_std"),
    *("reward", "reward_std", "final_gap", "steps"),
)

#: The paper's deployment: 10,000 steps on 10 seeds.
DEFAULT_STEPS = 10_000
DEFAULT_SEEDS = 10


def _positive(evaluation: dict, key: str, default: int | None) -> int | None:
    value = evaluation.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"evaluation.{key}: {value!r} is invalid; valid: an integer >= 1")
    return value


class Deployment(Evaluator):
    """SELLF's deployment protocol: ``steps`` env steps on each of ``seeds`` seeds."""

    NAME = "deployment"
    #: What the paths may name.
    OUTPUTS = OUTPUTS
    #: What a plan setting's own ``evaluation`` may set (it reads them).
    SETTING_KEYS = ("steps",)

    @classmethod
    def describe(cls, evaluation: dict) -> str:
        """One line for the merged README: what this evaluator runs."""
        steps, seeds = cls.size(evaluation)
        actions = "sampled" if evaluation.get("explore") else "greedy"
        return f"{steps:,} steps on each of {seeds} deployment seeds, {actions} actions"

    @staticmethod
    def size(evaluation: dict) -> tuple[int, int]:
        """The plan's deployment ``(steps, seeds)``, checked (defaults: the paper's)."""
        return (
            _positive(evaluation, "steps", DEFAULT_STEPS),
            _positive(evaluation, "seeds", DEFAULT_SEEDS),
        )

    def configure(self, config, evaluation: dict):
        """Checks the plan's settings and that the env measures the notion."""
        from rllib_fair.rllib.deployment import check_notion

        self.size(evaluation)
        _positive(evaluation, "window", None)
        check_notion(config.env, config.resolved_fairness_notion())
        return config

    def measure(self, algo, last_result: dict, paths: dict[str, str], evaluation: dict) -> dict:
        """Deploys the final policy and reads the outputs' means over the seeds."""
        from rllib_fair.rllib.deployment import deploy_algorithm

        check_output_paths(self.NAME, paths, OUTPUTS)
        steps, seeds = self.size(evaluation)
        _, summary = deploy_algorithm(
            algo,
            steps=steps,
            seeds=seeds,
            window=_positive(evaluation, "window", None),
            explore=bool(evaluation.get("explore", False)),
        )
        outputs = {
            "disparity": summary["mean_disparity"]["mean"],
            "disparity_std": summary["mean_disparity"]["std"],
            "observed_disparity": summary["mean_observed_disparity"]["mean"],
            "observed_disparity_std": summary["mean_observed_disparity"]["std"],
            "reward": summary["cumulative_reward"]["mean"],
            "reward_std": summary["cumulative_reward"]["std"],
            "final_gap": summary["final_gap"]["mean"],
            "steps": summary["steps"]["mean"],
        }
        out = {}
        for name, path in paths.items():
            if not math.isfinite(outputs[path]):
                raise ValueError(f"metric path {path!r}: {outputs[path]!r} is not finite")
            out[name] = float(outputs[path])
        return out
