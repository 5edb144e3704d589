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
  ``gain_gap`` (|G0 - G1|, the groups' total qualification gains), ``G0``, ``G1``,
  ``lambda`` (the benefit-fairness Lambda of the episode's decisions, from the policy's
  probabilities), and the sampled actions' approval rates ``approval_rate`` (all
  applicants), ``approval_rate_0`` and ``approval_rate_1`` (per group; an episode with
  no applicant of a group is left out of that group's mean, and a group with none in any
  episode is an error when a path names it);
* ``replicator_initial_states``: Yin et al.'s initial-state grid on a replicator env
  (``fair/Replicator-v0``, ``fair/ReplicatorAdult-v0``): the final policy, greedy, for one
  episode from each initial state (default: the 16 states ``{0.2, 0.4, 0.6, 0.8}^2``;
  ``initial_states: [[q0, q1], ...]`` to change them) on the training env's setting
  (``horizon: H`` replaces its ``max_steps``); the env is deterministic given the
  actions, so ``episodes`` is unused. The paths name its outputs: ``cum_loss`` and
  ``cum_disparity`` (the per-step loss and squared disparity summed over the episode,
  mean over the states), ``mean_step_loss`` (the per-step loss, mean over steps and
  states), ``final_q_mean`` (the final qualification rates' mean), ``final_q_gap``
  (the final abs(q0 - q1), mean over the states), ``final_q_min`` (the smallest final
  q_k over the states and groups) and ``loss_first10`` (the per-step loss over the first
  10 steps, mean over the states);
* ``quarters``: Lee et al.'s lending strategies on ``fair/QuarterlyLending-v0``: the final
  quarter's gaps (signed and absolute) and the profits of the last complete training
  episode (:mod:`rllib_fair.reproduce.quarters`);
* ``deployment``: SELLF's protocol: the final policy deployed for ``steps`` env steps on
  each of ``seeds`` deployment seeds (actions sampled with ``explore: true``, greedy
  otherwise); its outputs are ``disparity`` (the true disparity averaged over time),
  ``observed_disparity`` (the one the algorithm observes, same average), ``reward``,
  ``final_gap`` and ``steps``, means over the deployment seeds
  (:mod:`rllib_fair.reproduce.deployment_eval`).

A metric that is missing or not finite is an error naming the path: a cell never writes
a NaN.
"""

from __future__ import annotations

import math

from rllib_fair.reproduce.deployment_eval import Deployment
from rllib_fair.reproduce.evaluator_base import NEVER, Evaluator, check_output_paths, read_path
from rllib_fair.reproduce.quarters import Quarters

__all__ = ["EVALUATORS", "NEVER", "Evaluator", "read_path"]


class FinalTraining(Evaluator):
    """Metrics of the last training result."""

    @staticmethod
    def describe(evaluation: dict) -> str:
        """One line for the merged README: what this evaluator runs."""
        return "the last training result (no separate evaluation)"


class GreedyEpisodes(Evaluator):
    """The final policy on fresh episodes (RLlib's ``evaluate()`` on a local runner)."""

    SETTING_KEYS = ("episodes", "env_config")

    def configure(self, config, evaluation: dict):
        """Adds a local evaluation runner running ``episodes`` episodes per ``evaluate()``.

        An ``env_config`` in ``evaluation`` (a setting's own) goes over the training env's
        for the evaluation runner only. RLlib builds a separate evaluation runner (one
        that takes ``evaluation_config``: ``explore``, ``env_config``) only when an
        evaluation interval is set; without one, ``evaluate()`` samples on the training
        runner with the training settings (actions sampled whatever ``explore`` says).
        So the interval is set, to a number of iterations no run reaches: RLlib never
        evaluates on its own, ``measure`` calls ``evaluate()`` once.
        """
        eval_config = {"explore": bool(evaluation.get("explore", False))}
        if evaluation.get("env_config"):
            eval_config["env_config"] = {**config.env_config, **evaluation["env_config"]}
        return config.evaluation(
            evaluation_interval=NEVER,
            evaluation_duration=int(evaluation["episodes"]),
            evaluation_duration_unit="episodes",
            evaluation_num_env_runners=0,
            evaluation_config=eval_config,
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

    NAME = "lending_drift_sampled"
    SETTING_KEYS = ("episodes",)
    #: What the paths may name.
    OUTPUTS = (
        *("profit", "gain_gap", "G0", "G1", "lambda"),
        *("approval_rate", "approval_rate_0", "approval_rate_1"),
    )

    @staticmethod
    def describe(evaluation: dict) -> str:
        """One line for the merged README: what this evaluator runs."""
        return f"{evaluation['episodes']} fresh episodes, actions sampled from the policy"

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
        out: dict[str, list] = {k: [] for k in self.OUTPUTS}
        for _ in range(int(evaluation["episodes"])):
            obs, _ = env.reset(seed=int(rng.integers(2**31)))
            gains = np.zeros(2)
            probs, groups, benefits, actions = [], [], [], []
            done = False
            start_cash = env.cash
            while not done:
                with torch.no_grad():
                    batch = {"obs": torch.as_tensor(obs[None], device=device)}
                    logits = module.forward_inference(batch)["action_dist_inputs"][0]
                p1 = float(torch.softmax(logits, -1)[1])
                action = int(rng.random() < p1)
                obs, _, term, trunc, info = env.step(action)
                gains[info["group"]] += info["qual_gain"]
                probs.append(p1)
                groups.append(info["group"])
                benefits.append(info["benefit"])
                actions.append(action)
                done = term or trunc
            p, g, b = np.array(probs), np.array(groups), np.array(benefits)
            a = np.array(actions, dtype=float)
            out["profit"].append(env.cash - start_cash)
            out["gain_gap"].append(abs(gains[0] - gains[1]))
            out["G0"].append(gains[0])
            out["G1"].append(gains[1])
            out["lambda"].append(
                benefit_fairness_lambda(p[g == 0], p[g == 1], b[g == 0], b[g == 1])
            )
            out["approval_rate"].append(a.mean())
            for k in (0, 1):
                if (g == k).any():  # an episode without the group adds nothing to its rate
                    out[f"approval_rate_{k}"].append(a[g == k].mean())
        env.close()
        means = {k: float(np.mean(v)) for k, v in out.items() if v}
        return {name: read_path(means, path) for name, path in paths.items()}


class ReplicatorInitialStates(Evaluator):
    """Yin et al.'s initial-state grid: greedy episodes from fixed states of a replicator env.

    One episode per initial state with the final policy's greedy thresholds
    (:func:`rllib_fair.algorithms.rtd3.evaluation.rollouts`, the protocol of the paper's
    Figs. 1 and 4), on the training env's id and ``env_config`` (``horizon`` replaces
    ``max_steps``). The env is deterministic given the actions, so the result depends
    only on the policy and the states.
    """

    NAME = "replicator_initial_states"

    @classmethod
    def describe(cls, evaluation: dict) -> str:
        """One line for the merged README: what this evaluator runs."""
        n = len(cls.initial_states(evaluation))
        return f"greedy actions, one episode from each of {n} initial states"

    #: What the paths may name.
    OUTPUTS = (
        *("cum_loss", "cum_disparity", "mean_step_loss", "final_q_mean", "final_q_gap"),
        *("final_q_min", "loss_first10"),
    )

    @classmethod
    def initial_states(cls, evaluation: dict) -> list[tuple[float, float]]:
        """The plan's ``initial_states`` (default: the 16-state grid), checked."""
        from rllib_fair.algorithms.rtd3.evaluation import GRID_STATES

        raw = evaluation.get("initial_states", GRID_STATES)
        valid = "a non-empty list of [q0, q1] pairs with entries in [0, 1]"
        if not isinstance(raw, (list, tuple)) or not raw:
            raise ValueError(f"evaluation.initial_states: {raw!r} is invalid; valid: {valid}")
        states = []
        for pair in raw:
            ok = isinstance(pair, (list, tuple)) and len(pair) == 2
            ok = ok and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0
                for v in pair
            )
            if not ok:
                raise ValueError(
                    f"evaluation.initial_states: entry {pair!r} is invalid; valid: {valid}"
                )
            states.append((float(pair[0]), float(pair[1])))
        return states

    @classmethod
    def env_config(cls, config, evaluation: dict) -> dict:
        """The training ``env_config`` with ``max_steps`` set to ``horizon`` when given."""
        env_config = dict(config.env_config or {})
        horizon = evaluation.get("horizon")
        if horizon is not None:
            if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
                raise ValueError(
                    f"evaluation.horizon: {horizon!r} is invalid; valid: an integer >= 1"
                )
            env_config["max_steps"] = horizon
        return env_config

    def configure(self, config, evaluation: dict):
        """Checks the plan's settings and the env (a replicator env) before anything is built."""
        from rllib_fair.algorithms.common.model_env import model_env_class
        from rllib_fair.envs.replicator import ReplicatorEnv

        if evaluation.get("explore", False):
            raise ValueError(
                f"evaluation.explore: {evaluation['explore']!r} is invalid for {self.NAME}; "
                "valid: false (the rollouts are greedy)"
            )
        self.initial_states(evaluation)
        self.env_config(config, evaluation)
        cls = model_env_class(config.env, user=f"the {self.NAME} evaluator")
        if cls is None or not issubclass(cls, ReplicatorEnv):
            raise ValueError(
                f"env: {config.env!r} is invalid for {self.NAME}; valid: fair/Replicator-v0, "
                "fair/ReplicatorAdult-v0"
            )
        return config

    @staticmethod
    def summary(out: dict) -> dict[str, float]:
        """The outputs from :func:`~rllib_fair.algorithms.rtd3.evaluation.rollouts`'s arrays."""
        import numpy as np

        q_final = out["q"][:, -1]
        return {
            "cum_loss": float(out["loss"].sum(axis=1).mean()),
            "cum_disparity": float(out["disparity"].sum(axis=1).mean()),
            "mean_step_loss": float(out["loss"].mean()),
            "final_q_mean": float(q_final.mean()),
            "final_q_gap": float(np.abs(q_final[:, 0] - q_final[:, 1]).mean()),
            "final_q_min": float(q_final.min()),
            "loss_first10": float(out["loss"][:, :10].mean()),
        }

    def measure(self, algo, last_result: dict, paths: dict[str, str], evaluation: dict) -> dict:
        """Rolls the greedy policy out from every initial state and reads the outputs."""
        from rllib_fair.algorithms.common.model_env import make_model_env
        from rllib_fair.algorithms.rtd3.evaluation import rllib_greedy_policy, rollouts

        check_output_paths(self.NAME, paths, self.OUTPUTS)
        cfg = algo.config
        env = make_model_env(
            cfg.env, self.env_config(cfg, evaluation), user=f"the {self.NAME} evaluator"
        )
        try:
            out = rollouts(env, rllib_greedy_policy(algo), self.initial_states(evaluation))
        finally:
            env.close()
        summary = self.summary(out)
        return {name: read_path(summary, path) for name, path in paths.items()}


#: Evaluators by the name a plan uses.
EVALUATORS: dict[str, type[Evaluator]] = {
    "greedy_episodes": GreedyEpisodes,
    "final_training": FinalTraining,
    "lending_drift_sampled": LendingDriftSampled,
    "replicator_initial_states": ReplicatorInitialStates,
    "deployment": Deployment,
    "quarters": Quarters,
}
