"""What each algorithm optimises, as result keys: its objective and its fairness target.

Every registered config class declares ``own_metrics``, an :class:`OwnMetrics`:

* ``objective``: the return the algorithm maximises. Usually the env's own reward
  (``env_runners/episode_return_mean``); R-TD3 trains on a relaxed reward the env pays
  instead, so its ``episode_return_mean`` *is* the relaxed return and the env's own
  reward is reported under another key (``env_reward``).
* ``env_reward``: the key of the env's own reward summed over an episode.
* ``constraints``: the fairness quantities the algorithm itself regularises or
  constrains, first the one it acts on (empty for an unconstrained baseline).

The final summary of ``rllib-fair train`` and ``rllib-fair compare`` show these next to
the env's default gap ``fairness/<notion>/bias``, so each method is read against its own
target as well as against the common one. Keys may hold two placeholders, filled from
the run's settings by :meth:`OwnMetrics.resolve`: ``{notion}`` (the configured notion)
and ``{disparity}`` (the per-step disparity the config regularises:
``step_disparity_mean`` for ``fairness_disparity_source: true``, else
``selective/<source>_disparity_mean``).

Importing this module imports neither Ray nor torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

RETURN_KEY = "env_runners/episode_return_mean"


@dataclass(frozen=True)
class Metric:
    """One result key with a short column name and a one-line meaning.

    Attributes:
        key: flattened result key (``a/b/c``); may hold ``{notion}`` and ``{disparity}``.
        name: short column name (may hold ``{notion}``).
        meaning: what the number measures, one line (may hold ``{notion}``).
        lower_is_better: True for gaps, disparities and losses.
    """

    key: str
    name: str
    meaning: str
    lower_is_better: bool = False

    def resolve(self, notion: str, disparity: str) -> Metric:
        """This metric with the placeholders filled."""

        def fill(text: str) -> str:
            return text.replace("{notion}", notion).replace("{disparity}", disparity)

        return replace(self, key=fill(self.key), name=fill(self.name), meaning=fill(self.meaning))


#: The env's own reward summed over an episode, as RLlib reports it.
ENV_RETURN = Metric(
    RETURN_KEY,
    "return",
    "the env's reward summed over an episode (mean over the iteration's episodes)",
)

#: The per-step disparity Delta_t an algorithm regularises (POCAR, R-PPO, SELLF).
STEP_DISPARITY = Metric(
    "fairness/{notion}/{disparity}",
    "Delta_t {notion}",
    "per-step disparity Delta_t of {notion} that the method regularises "
    "(fairness/{notion}/{disparity}), mean over the iteration's steps",
    lower_is_better=True,
)

#: The replicator envs' squared disparity D (Yin et al. 2023), mean over an episode's steps.
SQUARED_DISPARITY = Metric(
    "env_runners/replicator/disparity_mean",
    "squared disparity D",
    "the env's per-step squared disparity D (its `disparity` setting), mean over an "
    "episode's steps",
    lower_is_better=True,
)


@dataclass(frozen=True)
class OwnMetrics:
    """An algorithm's own objective and fairness targets (see the module docstring).

    Attributes:
        objective: what the algorithm maximises.
        constraints: its fairness targets, the one it acts on first; empty for an
            unconstrained method.
        env_reward: the env's own reward summed over an episode.
        note: one line on how the objective is formed, when the keys do not say it.
    """

    objective: Metric = ENV_RETURN
    constraints: tuple[Metric, ...] = field(default_factory=tuple)
    env_reward: Metric = ENV_RETURN
    note: str = ""

    def resolve(self, settings: Mapping[str, Any], notion: str) -> OwnMetrics:
        """The metrics with ``{notion}`` and ``{disparity}`` filled from a run's settings.

        Args:
            settings: the run's config values (``params.json`` or ``config.to_dict()``);
                ``fairness_disparity_source`` is read (``"true"`` when absent).
            notion: the run's fairness notion (the configured or the env's default one).
        """
        source = settings.get("fairness_disparity_source") or "true"
        disparity = (
            "step_disparity_mean" if source == "true" else f"selective/{source}_disparity_mean"
        )
        return replace(
            self,
            objective=self.objective.resolve(notion, disparity),
            constraints=tuple(m.resolve(notion, disparity) for m in self.constraints),
            env_reward=self.env_reward.resolve(notion, disparity),
            note=self.note.replace("{notion}", notion),
        )

    @property
    def shaped(self) -> bool:
        """True when the objective is not the env's own reward."""
        return self.objective.key != self.env_reward.key


def estimand(notion: str) -> str:
    """What a notion's gap compares across groups, from the notion's docstring."""
    from rllib_fair.fairness.notions import get_notion

    if notion == "equalized_odds":
        return (
            "the true positive rate P(A = 1 | Y = 1, G = g) and the false positive rate "
            "P(A = 1 | Y = 0, G = g) (the larger of the two gaps)"
        )
    try:
        doc = " ".join((type(get_notion(notion)).__doc__ or "").split())
    except ValueError:
        return notion
    if "Estimand" in doc:
        text = doc.split("Estimand", 1)[1].lstrip("s: ")
        text = text.split(";")[0].replace("``", "")
        for stop in (" (pair", ", with", ". "):
            text = text.split(stop)[0]
        return text.replace("*", "")
    return notion


def gap_meaning(notion: str) -> str:
    """One line: what ``fairness/<notion>/bias`` measures."""
    return f"max - min over groups of {estimand(notion)} (long-term, lower is fairer)"
