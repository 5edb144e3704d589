"""Helpers shared by the environment tests: check_env, determinism traces, tolerances."""

from __future__ import annotations

import math
import re
import warnings

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env


def run_check_env(env: gym.Env, allowed: tuple[re.Pattern, ...] = ()) -> None:
    """gymnasium's check_env; any warning not matching ``allowed`` fails the test."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    unexpected = [
        str(w.message) for w in caught if not any(p.search(str(w.message)) for p in allowed)
    ]
    assert not unexpected, f"unexpected check_env warnings: {unexpected}"


def sd_tol(p: float, n: float, k: float = 5.0) -> float:
    """k binomial standard deviations of a frequency estimated from n draws."""
    return k * math.sqrt(max(p * (1.0 - p), 1e-12) / max(n, 1)) + 1e-9


def rollout(env_id: str, seed: int, actions, **kwargs) -> list[tuple]:
    """Every step's output of a seeded run; episode ends reset without a seed."""
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    trace = [(obs, 0.0, False, False, info)]
    for a in actions:
        out = env.step(a)
        trace.append(out)
        if out[2] or out[3]:
            trace.append(env.reset() + (None,) * 3)
    return trace


def same(a, b) -> bool:
    """Exact equality of nested step outputs (dtypes and types included)."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    return type(a) is type(b) and a == b
