"""L-UCBFair speed: planning cost versus K, and episodes/s of batched sampling.

1. ``plan``: wall time of one planning pass (numpy core, synthetic data) for growing
   numbers of stored episodes K (the full LSVI recomputation is O(K) per pass).
2. ``batched``: RLlib episodes/s with ``episodes_per_iteration = 1`` and 0 remote env
   runners (the paper's loop) against ``episodes_per_iteration = N`` on N remote runners
   (one plan, N episodes in parallel).

    python benchmarks/lucbfair_speed.py plan --horizon 100
    python benchmarks/lucbfair_speed.py batched --horizon 20 --iters 10 --runners 2
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def bench_plan(horizon: int, ks: list[int], dim: int) -> None:
    """Prints the time of one planning pass for each K in ``ks``."""
    from rllib_fair.algorithms.lucbfair.core import LUCBFairCore, Settings
    from rllib_fair.algorithms.lucbfair.features import FeatureMap, make_feature_map

    rbf = make_feature_map("rbf")
    fm = rbf if dim == 32 else FeatureMap(lambda s, a: rbf(s, a)[:, :dim], dim, f"rbf{dim}")
    rng = np.random.default_rng(0)
    print("| K | H | d | one planning pass (s) |\n|---|---|---|---|")
    for k in ks:
        core = LUCBFairCore(Settings(horizon=horizon, beta=1.0, alpha=5.0, eta=0.1), fm)
        core.observe(
            rng.random((k, horizon + 1, 2)),
            rng.random((k, horizon, 2)),
            rng.random((k, horizon)),
            rng.random((k, horizon)),
        )
        t0 = time.perf_counter()
        core.replan()
        print(f"| {k} | {horizon} | {fm.dim} | {time.perf_counter() - t0:.3f} |", flush=True)


def bench_batched(horizon: int, iters: int, runners: int) -> None:
    """Prints episodes/s for N = 1 (local) and N = ``runners`` (remote runners)."""
    import ray
    import torch

    from rllib_fair.algorithms import get_config_class

    torch.set_num_threads(1)
    ray.init(address="local", num_cpus=max(2, runners), include_dashboard=False,
             log_to_driver=False)  # fmt: skip
    print("| episodes_per_iteration | remote runners | episodes/s |\n|---|---|---|")
    for n, r in ((1, 0), (runners, runners)):
        cfg = (
            get_config_class("LUCBFair")()
            .environment("fair/Replicator-v0", env_config={"max_steps": horizon})
            .env_runners(num_env_runners=r)
            .training(episodes_per_iteration=n, num_episodes_hint=iters * n)
            .debugging(seed=0)
        )
        algo = cfg.build_algo()
        algo.train()  # warm-up
        t0 = time.perf_counter()
        for _ in range(iters):
            algo.train()
        dt = time.perf_counter() - t0
        print(f"| {n} | {r} | {iters * n / dt:.2f} |", flush=True)
        algo.stop()
    ray.shutdown()


def main() -> None:
    """Command line entry point."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", choices=("plan", "batched"))
    p.add_argument("--horizon", type=int, default=100)
    p.add_argument("--ks", default="50,100,200,400")
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--runners", type=int, default=2)
    a = p.parse_args()
    if a.what == "plan":
        bench_plan(a.horizon, [int(k) for k in a.ks.split(",")], a.dim)
    else:
        bench_batched(a.horizon, a.iters, a.runners)


if __name__ == "__main__":
    main()
