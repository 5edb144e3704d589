"""Gymnasium environments of rllib-fair and their registration.

Every environment is registered as ``fair/<Name>-v<N>`` by :func:`register_envs`, which
``import rllib_fair`` calls, so ``gymnasium.make("fair/Lending-v0")`` works in any process
that imported the package. :mod:`rllib_fair.envs.rllib_registry` registers the same ids as
RLlib env names in Ray Tune's registry, so RLlib finds them in processes that never
imported the package themselves (remote env runners, Tune trials); it imports ray only
inside its functions. Nothing else in this package imports ray or torch.

Every environment reports, at every step, per-group counts in ``info["fairness"]`` (see
:mod:`rllib_fair.fairness.counts`) plus ``info["group"]``, ``info["label"]``,
``info["decision"]`` and ``info["label_observed"]`` for the individual decided on, and
declares on its class which metric blocks it reports and how its unobserved labels are
hidden (:func:`metric_declarations`, :mod:`rllib_fair.fairness.blocks`).
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

import gymnasium

from rllib_fair.envs.base import CLASSIFICATION_NOTIONS, FairEnvMixin
from rllib_fair.envs.lending import LendingEnv
from rllib_fair.envs.lending_fico import LendingFICOEnv
from rllib_fair.fairness.blocks import LabelHiding, MetricBlock

#: Registered id -> string entry point (``module:Class``).
ENTRY_POINTS: dict[str, str] = {
    "fair/Lending-v0": "rllib_fair.envs.lending:LendingEnv",
    "fair/LendingFICO-v0": "rllib_fair.envs.lending_fico:LendingFICOEnv",
    "fair/LendingDrift-v0": "rllib_fair.envs.lending_drift:LendingDriftEnv",
    "fair/LendingHard-v0": "rllib_fair.envs.lending_hard:LendingHardEnv",
    "fair/Attention-v0": "rllib_fair.envs.attention:AttentionEnv",
    "fair/AttentionHard-v0": "rllib_fair.envs.attention:AttentionHardEnv",
    "fair/Infectious-v0": "rllib_fair.envs.infectious:InfectiousEnv",
    "fair/InfectiousHard-v0": "rllib_fair.envs.infectious:InfectiousHardEnv",
    "fair/SchoolAdmission-v0": "rllib_fair.envs.school_admission:SchoolAdmissionEnv",
    "fair/Replicator-v0": "rllib_fair.envs.replicator:ReplicatorEnv",
    "fair/ReplicatorAdult-v0": "rllib_fair.envs.replicator:ReplicatorAdultEnv",
    "fair/QuarterlyLending-v0": "rllib_fair.envs.quarterly_lending:QuarterlyLendingEnv",
}

#: Native vector versions (gymnasium ``vector_entry_point``): N copies in one numpy step,
#: the same per-copy trajectories as ``SyncVectorEnv`` over single copies.
VECTOR_ENTRY_POINTS: dict[str, str] = {
    "fair/Lending-v0": "rllib_fair.envs.lending_vector:LendingVectorEnv",
    "fair/LendingHard-v0": "rllib_fair.envs.lending_vector:LendingHardVectorEnv",
    "fair/LendingFICO-v0": "rllib_fair.envs.lending_fico_vector:LendingFICOVectorEnv",
    "fair/Attention-v0": "rllib_fair.envs.attention_vector:AttentionVectorEnv",
    "fair/AttentionHard-v0": "rllib_fair.envs.attention_vector:AttentionHardVectorEnv",
    "fair/SchoolAdmission-v0": "rllib_fair.envs.school_admission_vector:SchoolAdmissionVectorEnv",
    "fair/Infectious-v0": "rllib_fair.envs.infectious_vector:InfectiousVectorEnv",
    "fair/InfectiousHard-v0": "rllib_fair.envs.infectious_vector:InfectiousHardVectorEnv",
    "fair/Replicator-v0": "rllib_fair.envs.replicator_vector:ReplicatorVectorEnv",
    "fair/ReplicatorAdult-v0": "rllib_fair.envs.replicator_vector:ReplicatorAdultVectorEnv",
    "fair/LendingDrift-v0": "rllib_fair.envs.lending_drift_vector:LendingDriftVectorEnv",
}

#: Every environment id this package registers.
ENV_IDS: tuple[str, ...] = tuple(ENTRY_POINTS)

__all__ = [
    "CLASSIFICATION_NOTIONS",
    "ENTRY_POINTS",
    "ENV_IDS",
    "FairEnvMixin",
    "LendingEnv",
    "LendingFICOEnv",
    "MetricDeclarations",
    "VECTOR_ENTRY_POINTS",
    "env_class",
    "env_class_of",
    "env_info",
    "metric_declarations",
    "register_envs",
]


def register_envs() -> None:
    """Registers every id of :data:`ENV_IDS` with gymnasium; ids already registered are kept.

    Safe to call any number of times (and from several processes). Episode length is
    handled by each environment's ``max_steps`` argument, so no ``TimeLimit`` is added.
    """
    for env_id, entry_point in ENTRY_POINTS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(
                id=env_id,
                entry_point=entry_point,
                vector_entry_point=VECTOR_ENTRY_POINTS.get(env_id),
            )


def env_class(env_id: str) -> type:
    """Returns the environment class of ``env_id`` (imports it; constructs nothing)."""
    if env_id not in ENTRY_POINTS:
        raise ValueError(f"env_id={env_id!r}: unknown, expected one of {list(ENV_IDS)}")
    module_name, _, class_name = ENTRY_POINTS[env_id].partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def env_info(env_id: str) -> dict[str, Any]:
    """Metadata of ``env_id`` for a CLI listing, read from class attributes.

    Returns:
        ``{"id", "class", "group_names", "n_groups", "supported_notions",
        "default_notion", "description"}``; ``class`` is the entry point string.
    """
    cls = env_class(env_id)
    description = getattr(cls, "DESCRIPTION", "") or (cls.__doc__ or "").strip().split("\n")[0]
    return {
        "id": env_id,
        "class": ENTRY_POINTS[env_id],
        "group_names": tuple(cls.GROUP_NAMES),
        "n_groups": len(cls.GROUP_NAMES),
        "supported_notions": tuple(cls.SUPPORTED_NOTIONS),
        "default_notion": cls.DEFAULT_NOTION,
        "description": description,
    }


def env_class_of(env: Any) -> type | None:
    """The environment class behind an RLlib ``config.env``, or None; constructs nothing.

    Accepted: a registered rllib-fair id (``package:id`` too), an environment class, and
    any other gymnasium id whose entry point is a class (or a ``module:Class`` string).
    The metrics callback reads the class's declarations (``GROUP_NAMES``,
    ``METRIC_BLOCKS``, ``LABEL_HIDING``) from it.
    """
    if isinstance(env, type):
        return env
    if not isinstance(env, str):
        return None
    env_id = env.split(":", 1)[1] if ":" in env else env
    if env_id in ENV_IDS:
        return env_class(env_id)
    spec = gymnasium.registry.get(env)
    if spec is None or spec.entry_point is None:
        return None
    from gymnasium.envs.registration import load_env_creator

    entry = spec.entry_point
    found = load_env_creator(entry) if isinstance(entry, str) else entry
    return found if isinstance(found, type) else None


class MetricDeclarations(NamedTuple):
    """What an environment class declares for the fairness metrics."""

    group_names: tuple[str, ...]
    blocks: tuple[MetricBlock, ...]
    label_hiding: LabelHiding


def metric_declarations(env: Any) -> MetricDeclarations:
    """The ``GROUP_NAMES``, ``METRIC_BLOCKS`` and ``LABEL_HIDING`` of ``env``'s class.

    ``env`` as in :func:`env_class_of`. A class that declares no blocks or label hiding
    (or an env that cannot be resolved) gets :class:`FairEnvMixin`'s: the notions'
    metrics and one decision per step; its group names are then unknown (empty).
    """
    cls = env_class_of(env)
    return MetricDeclarations(
        tuple(getattr(cls, "GROUP_NAMES", ())),
        tuple(getattr(cls, "METRIC_BLOCKS", FairEnvMixin.METRIC_BLOCKS)),
        getattr(cls, "LABEL_HIDING", FairEnvMixin.LABEL_HIDING),
    )


def env_meta(env: Any) -> dict[str, Any] | None:
    """:func:`env_info` of a registered rllib-fair env id (``package:id`` accepted), else None."""
    if not isinstance(env, str):
        return None
    env_id = env.split(":", 1)[1] if ":" in env else env
    if env_id not in ENV_IDS:
        return None
    return env_info(env_id)
