"""An untrained TD3 on a replicator task, shared by the Yin et al. plan tests."""

from __future__ import annotations

from collections.abc import Iterator


def untrained_td3(task: dict, seed: int) -> Iterator:
    """Builds TD3 on ``fair/Replicator-v0`` with ``task`` (local runner only, no
    training), yields it and stops it; a module fixture's body is ``yield from``."""
    from rllib_fair.algorithms.td3 import TD3Config

    config = (
        TD3Config()
        .environment("fair/Replicator-v0", env_config=dict(task))
        .env_runners(num_env_runners=0)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=seed)
    )
    algo = config.build_algo()
    try:
        yield algo
    finally:
        algo.stop()
