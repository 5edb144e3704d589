"""The ``quarters`` evaluator: Lee et al.'s final-quarter metrics of a lending cell.

A cell of the plan ``lee2026`` trains one of the five lending strategies
(:mod:`rllib_fair.algorithms.uncertainty`) on ``fair/QuarterlyLending-v0``. Those
strategies are not policies improved across episodes: each episode is a fresh bank (base
model fitted on the episode's first quarter, then seven quarters decided and learned from),
and the paper judges a strategy on the quarters it decides while it learns. So the
evaluator reads the **last complete training episode** from the algorithm's
``quarter_log`` rather than deploying the policy on new data: an episode the bank did not
decide itself would have a model fitted on another data set (the algorithm refuses
evaluation runners for that reason).

With the plan's budget of one episode (``num_partitions`` env steps) and no remote env
runner, that episode's data seed is the cell's seed, so a cell's numbers are those of
:func:`rllib_fair.uncertainty.run_quarters` with ``seed`` = the cell's seed: one unit of
the paper's sweep. Everything is seeded by that seed (data, partition, SGD and the
exploration draws); nothing here draws random numbers.

Outputs (what the plan's metric paths may name), ``Delta M = M(0) - M(1)`` with group 0
the biased group:

* ``delta_sr``, ``delta_fpr``, ``delta_fnr``, ``delta_acc``: the final quarter's signed
  gaps; ``abs_delta_sr`` ... ``abs_delta_acc``: their absolute values;
* ``cumulative_profit``: the raw profit summed over the decided quarters;
  ``profit``: the final quarter's; ``utility_q``: the final quarter's profit per 100
  applicants; ``cumulative_utility``: ``utility_q`` summed over the decided quarters;
* ``min_abs_delta_sr``: the smallest ``|Delta SR|`` over the decided quarters;
  ``abs_delta_sr_change``: the final quarter's ``|Delta SR|`` minus the first decided
  quarter's (> 0: the gap grew).

The oracle metrics need the true labels on the algorithm side, so :meth:`configure` sets
``fairness_label_access`` to ``"oracle"``; the bank's decisions never read them
(``tests/algorithms/test_uncertainty_rllib.py`` checks that the observed setting makes the
same decisions).
"""

from __future__ import annotations

import math

from rllib_fair.reproduce.evaluator_base import Evaluator, check_output_paths

#: The four signed gaps of the paper's App. B (and App. C's accuracy).
GAPS = ("delta_sr", "delta_fpr", "delta_fnr", "delta_acc")
#: What the plan's metric paths may name.
OUTPUTS = (
    *GAPS,
    *(f"abs_{g}" for g in GAPS),
    "cumulative_profit",
    "profit",
    "utility_q",
    "cumulative_utility",
    "min_abs_delta_sr",
    "abs_delta_sr_change",
)


def last_episode(quarter_log, num_partitions: int) -> list[dict]:
    """The quarters of the last training episode that decided all its quarters.

    ``quarter_log`` holds one dict per decided quarter (``data_seed``, ``quarter`` 2 ..
    ``num_partitions``, ``metrics``), in order.

    Raises:
        ValueError: when no episode in the log reached its final quarter.
    """
    log = list(quarter_log)
    for end in range(len(log) - 1, -1, -1):
        if log[end]["quarter"] != num_partitions:
            continue
        start = end - (num_partitions - 2)
        episode = log[start : end + 1] if start >= 0 else []
        quarters = [row["quarter"] for row in episode]
        seeds = {row["data_seed"] for row in episode}
        if quarters == list(range(2, num_partitions + 1)) and len(seeds) == 1:
            return episode
    raise ValueError(
        f"quarter_log: {len(log)} quarters hold no complete episode of {num_partitions} "
        f"quarters; valid: a budget of at least {num_partitions} env steps"
    )


def summarize(episode: list[dict]) -> dict[str, float]:
    """Every output of :data:`OUTPUTS` from one episode's quarter metrics."""
    first, final = episode[0]["metrics"], episode[-1]["metrics"]
    for key in (*GAPS, "profit", "utility_q"):
        if key not in final:
            raise ValueError(
                f"quarter metrics: no {key!r}; valid: oracle label access "
                "(fairness_label_access: oracle)"
            )
    out: dict[str, float] = {g: float(final[g]) for g in GAPS}
    out.update({f"abs_{g}": abs(out[g]) for g in GAPS})
    out["cumulative_profit"] = float(sum(row["metrics"]["profit"] for row in episode))
    out["profit"] = float(final["profit"])
    out["utility_q"] = float(final["utility_q"])
    out["cumulative_utility"] = float(sum(row["metrics"]["utility_q"] for row in episode))
    out["min_abs_delta_sr"] = min(abs(float(row["metrics"]["delta_sr"])) for row in episode)
    out["abs_delta_sr_change"] = abs(float(final["delta_sr"])) - abs(float(first["delta_sr"]))
    return out


class Quarters(Evaluator):
    """Lee et al.'s final-quarter gaps and profits of the last training episode."""

    NAME = "quarters"
    #: What the paths may name.
    OUTPUTS = OUTPUTS

    @staticmethod
    def describe(evaluation: dict) -> str:
        """One line for the merged README: what this evaluator runs."""
        return (
            "the last complete training episode (the quarters each strategy decides while "
            "it learns, its own exploration included)"
        )

    def configure(self, config, evaluation: dict):
        """Checks the algorithm (a lending strategy) and sets oracle label access."""
        from rllib_fair.algorithms.uncertainty.uncertainty import UncertaintyConfig

        if not isinstance(config, UncertaintyConfig):
            raise ValueError(
                f"algorithm: {type(config).__name__!r} is invalid for {self.NAME}; valid: "
                "Uncertainty and its variants (the lending strategies)"
            )
        return config.fairness(label_access="oracle")

    def measure(self, algo, last_result: dict, paths: dict[str, str], evaluation: dict) -> dict:
        """Reads the outputs from the last complete episode of ``algo.quarter_log``."""
        check_output_paths(self.NAME, paths, OUTPUTS)
        num_partitions = int(dict(algo.config.env_config or {}).get("num_partitions", 8))
        summary = summarize(last_episode(algo.quarter_log, num_partitions))
        for path in paths.values():
            if not math.isfinite(summary[path]):
                raise ValueError(f"metric path {path!r}: {summary[path]!r} is not finite")
        return {name: summary[path] for name, path in paths.items()}
