"""Native vector envs against gymnasium's SyncVectorEnv, alone and inside RLlib sampling.

Two tables, every row measured in alternating rounds in one process (one torch thread):

1. The environment alone: env steps per second per copy of ``N`` copies, stepped with
   random actions through ``SyncVectorEnv`` over single copies and through the native
   vector env (``rllib_fair.envs.VECTOR_ENTRY_POINTS``).
2. RLlib sampling (PPO's env runner in the driver, ``[64, 64]`` tanh network, exploring):
   milliseconds per env step of ``runner.sample(num_timesteps=...)`` with
   ``num_envs_per_env_runner = N``: stock RLlib (``SingleAgentEnvRunner``, RLlib's
   connector pipelines with their timers, ``SyncVectorEnv``), and this package's
   ``FairEnvRunner`` with the fused pipelines over ``SyncVectorEnv`` and over the native
   vector env.

Usage::

    OMP_NUM_THREADS=1 RAY_AUTH_MODE=disabled python benchmarks/vector_env.py \\
        [--env fair/Lending-v0] [--copies 1 8] [--steps 4096] [--rounds 3] [--env-only]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

import torch  # noqa: E402

torch.set_num_threads(1)

try:
    import rllib_fair  # noqa: F401, E402
except ModuleNotFoundError:  # a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import rllib_fair  # noqa: F401, E402


def env_rate(env_id: str, n: int, native: bool, steps: int) -> float:
    """Env steps/s per copy (steps x n copies / seconds) with random actions."""
    import gymnasium as gym

    mode = "vector_entry_point" if native else "sync"
    env = gym.make_vec(env_id, num_envs=n, vectorization_mode=mode)
    env.reset(seed=0)
    env.action_space.seed(0)  # the same pre-drawn actions for both modes
    actions = [env.action_space.sample() for _ in range(steps)]
    start = time.perf_counter()
    for t in range(steps):
        env.step(actions[t])
    rate = steps * n / (time.perf_counter() - start)
    env.close()
    return rate


def sample_ms(env_id: str, n: int, mode: str, steps: int) -> float:
    """Milliseconds per env step of RLlib sampling (PPO's env runner, exploring).

    ``mode``: ``"stock"`` (RLlib's runner, pipelines and ``SyncVectorEnv``), ``"sync"``
    (this package's runner and pipelines, ``SyncVectorEnv``) or ``"native"``.
    """
    from rllib_fair.algorithms import get_config_class

    stock = mode == "stock"
    algo = (
        get_config_class("PPO")()
        .environment(env_id)
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=n,
            native_vector_env=mode == "native",
        )
        .accel(enabled=not stock)  # the whole speed layer (rllib_fair.accel) on or off
        .reporting(connector_metrics=stock)
        .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})
        .debugging(seed=0)
        .build_algo()
    )
    try:
        runner = algo.env_runner
        runner.sample(num_timesteps=steps // 4, explore=True)  # warm-up
        start = time.perf_counter()
        runner.sample(num_timesteps=steps, explore=True)
        return (time.perf_counter() - start) / steps * 1e3
    finally:
        algo.stop()


MODES = ("stock", "sync", "native")


def main() -> None:
    """Runs the alternating rounds and prints both tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="fair/Lending-v0")
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--steps", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--env-only", action="store_true", help="only the first table (no RLlib sampling)"
    )
    args = parser.parse_args()

    import ray

    if not args.env_only:  # the env table needs no Ray
        ray.init(
            address="local",
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
        )
    envs: dict = {}
    sampling: dict = {}
    for _ in range(args.rounds):
        for n in args.copies:
            for native in (False, True):
                envs.setdefault((n, native), []).append(env_rate(args.env, n, native, 2000))
            for mode in () if args.env_only else MODES:
                sampling.setdefault((n, mode), []).append(sample_ms(args.env, n, mode, args.steps))
    print(f"\nenv={args.env}; median of {args.rounds} rounds")
    print(f"{'copies':>7}{'sync steps/s/copy':>19}{'native':>12}{'ratio':>8}")
    for n in args.copies:
        s, v = (statistics.median(envs[(n, k)]) for k in (False, True))
        print(f"{n:>7}{s:>19,.0f}{v:>12,.0f}{v / s:>8.2f}")
    if args.env_only:
        return
    print("\nRLlib sampling, ms per env step (in brackets: speed-up over stock RLlib)")
    print(f"{'copies':>7}{'stock RLlib':>13}{'ours, sync':>18}{'ours, native':>18}")
    for n in args.copies:
        stock, sync, native = (statistics.median(sampling[(n, m)]) for m in MODES)
        print(
            f"{n:>7}{stock:>13.4f}{sync:>10.4f} ({stock / sync:4.2f}x)"
            f"{native:>10.4f} ({stock / native:4.2f}x)"
        )
    ray.shutdown()


if __name__ == "__main__":
    main()
