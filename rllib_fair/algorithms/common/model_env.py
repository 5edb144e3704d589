"""The env model a planning baseline rebuilds from its env id and ``env_config``.

The myopic baselines and L-UCBFair do not learn the dynamics: their modules solve or plan
against the environment's own model (its one-step objective, its replicator state map),
built on every process that needs it from the same registered id and ``env_config`` the
env runners use. A config checks the env without building it (:func:`model_env_class`,
:func:`rllib_fair.envs.declared.declared_value`); the algorithm and its module build it.
"""

from __future__ import annotations

from typing import Any


def model_env_id(env: Any, *, user: str) -> str:
    """The gymnasium id of a config's ``env`` (``"module:id"`` forms reduced to the id).

    Args:
        env: the config's ``env``.
        user: the algorithm, for the error message (``"a myopic baseline"``).

    Raises:
        ValueError: one line, for an ``env`` that is not a registered id string.
    """
    if not isinstance(env, str):
        raise ValueError(
            f"env: {env!r} is invalid for {user}; valid: a registered replicator env id "
            "(fair/Replicator-v0, fair/ReplicatorAdult-v0)"
        )
    return env.split(":", 1)[1] if ":" in env else env


def model_env_class(env: Any, *, user: str) -> type | None:
    """The class of the env ``user`` would build (constructs nothing), or None if unknown.

    Raises:
        ValueError: one line, for an ``env`` that is not a registered id string.
    """
    from rllib_fair.envs import env_class_of

    model_env_id(env, user=user)
    return env_class_of(env)


def make_model_env(env: Any, env_config: dict | None, *, user: str):
    """Builds the (unwrapped) environment whose model ``user`` optimises or plans against."""
    import gymnasium

    import rllib_fair  # noqa: F401  (registers the fair/* ids)

    return gymnasium.make(model_env_id(env, user=user), **dict(env_config or {})).unwrapped
