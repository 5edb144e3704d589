"""Single-environment stepping speed of every rllib-fair env next to CartPole-v1.

Each environment is built with ``gymnasium.make`` (so the default wrappers are included),
reset with a fixed seed, and stepped a fixed number of times with actions pre-drawn
from its action space (drawing is not timed); it is reset whenever an episode ends.
Every id in ``rllib_fair.envs.ENV_IDS`` is measured, so a newly registered environment
shows up here without editing this script.

Usage::

    python benchmarks/env_speed.py [--steps 200000] [--ids fair/Lending-v0 ...] [--repeats 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

try:
    import rllib_fair  # noqa: F401  (registers the fair/* ids)
except ModuleNotFoundError:  # a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import rllib_fair  # noqa: F401

from rllib_fair.envs import ENV_IDS

BASELINE_ID = "CartPole-v1"


def predraw_actions(env: gym.Env, steps: int, seed: int) -> list:
    """Draws ``steps`` random actions from ``env.action_space`` before timing."""
    space = env.action_space
    if isinstance(space, gym.spaces.Discrete):
        rng = np.random.default_rng(seed)
        return (space.start + rng.integers(0, space.n, size=steps)).tolist()
    space.seed(seed)
    return [space.sample() for _ in range(steps)]


def measure(env_id: str, steps: int, seed: int = 0) -> float:
    """Returns env steps per second of ``gymnasium.make(env_id)`` over ``steps`` steps."""
    env = gym.make(env_id)
    actions = predraw_actions(env, steps, seed)
    env.reset(seed=seed)
    step = env.step
    reset = env.reset
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = step(action)
        if terminated or truncated:
            reset()
    elapsed = time.perf_counter() - start
    env.close()
    return steps / elapsed


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description="env steps/s vs CartPole-v1")
    parser.add_argument("--steps", type=int, default=200_000, help="steps per env")
    parser.add_argument(
        "--ids", nargs="+", default=list(ENV_IDS), help="env ids (default: all rllib-fair ids)"
    )
    parser.add_argument("--repeats", type=int, default=1, help="runs per env; the best is reported")
    args = parser.parse_args(argv)

    def best(env_id: str) -> float:
        return max(measure(env_id, args.steps) for _ in range(args.repeats))

    baseline = best(BASELINE_ID)
    rows = [{"id": BASELINE_ID, "steps_per_s": baseline, "ratio": 1.0}]
    for env_id in args.ids:
        rate = best(env_id)
        rows.append({"id": env_id, "steps_per_s": rate, "ratio": rate / baseline})

    width = max(len(r["id"]) for r in rows)
    print(f"single env via gymnasium.make, {args.steps} steps, random actions")
    print(f"{'env id':<{width}}  {'steps/s':>10}  {'vs CartPole':>11}")
    for r in rows:
        print(f"{r['id']:<{width}}  {r['steps_per_s']:>10,.0f}  {r['ratio']:>10.2f}x")
    return rows


if __name__ == "__main__":
    main()
