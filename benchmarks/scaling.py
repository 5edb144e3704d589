"""Env steps/s against the number of env runners and learners, measured in one run.

Every setting trains the same algorithm on the same env with the same total train
batch per iteration; the first iteration of each setting is a warm-up. Printed per
setting: env steps/s (steps sampled over wall time of the timed iterations), speed-up
relative to the first runner count of the same learner count, and efficiency
(speed-up / runner ratio). Ray gets as many CPUs as the largest setting asks for
(``--num-cpus`` to override), so on a machine with fewer cores than that the
settings share cores, which is what the efficiency column then shows.

    python benchmarks/scaling.py                          # 1, 2 runners; 1 and 2 learners
    python benchmarks/scaling.py --runners 1 4 8 14 --learners 0 --batch 8000
    python benchmarks/scaling.py --algo POCAR --gpus-per-learner 1 --learners 0 1
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")


def _settings(args) -> list[tuple[int, int]]:
    return [(lrn, run) for lrn in args.learners for run in args.runners]


def _measure(args, learners: int, runners: int) -> float:
    from rllib_fair.algorithms import ALGORITHMS, get_config_class

    env = args.env or ALGORITHMS[args.algo].smoke_env
    per_learner = args.batch // max(learners, 1)
    cfg = (
        get_config_class(args.algo)()
        .environment(env)
        .env_runners(num_env_runners=runners, num_envs_per_env_runner=args.envs_per_runner)
        .learners(num_learners=learners, num_gpus_per_learner=args.gpus_per_learner)
        .training(
            train_batch_size_per_learner=per_learner,
            minibatch_size=min(args.minibatch, per_learner),
            num_epochs=args.epochs,
        )
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .debugging(seed=0)
    )
    algo = cfg.build_algo()
    try:
        algo.train()  # warm-up: actor start, first weight sync
        t0 = time.perf_counter()
        steps = 0
        for _ in range(args.iterations):
            result = algo.train()
            steps += int(result["env_runners"]["num_env_steps_sampled"])
        return steps / (time.perf_counter() - t0)
    finally:
        algo.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algo", default="PPO")
    p.add_argument("--env", default=None, help="env id (default: the algorithm's smoke env)")
    p.add_argument("--runners", type=int, nargs="+", default=[1, 2])
    p.add_argument("--learners", type=int, nargs="+", default=[0, 2])
    p.add_argument("--gpus-per-learner", type=float, default=0)
    p.add_argument("--envs-per-runner", type=int, default=1)
    p.add_argument("--batch", type=int, default=4000, help="total train batch per iteration")
    p.add_argument("--minibatch", type=int, default=128)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--iterations", type=int, default=3, help="timed iterations per setting")
    p.add_argument("--num-cpus", type=int, default=None)
    args = p.parse_args()

    import ray
    import torch

    torch.set_num_threads(1)
    need = max(max(lrn, 1) + run for lrn, run in _settings(args))
    ray.init(
        address="local",
        num_cpus=args.num_cpus or max(need, os.cpu_count() or 1),
        include_dashboard=False,
        log_to_driver=False,
        logging_level="ERROR",
    )
    print(
        f"{args.algo} on {args.env or 'its smoke env'}: batch {args.batch}/iteration, "
        f"{args.iterations} timed iterations, {os.cpu_count()} cores, "
        f"{args.gpus_per_learner:g} GPU/learner"
    )
    print(f"{'learners':>8} {'runners':>7} {'steps/s':>9} {'speed-up':>9} {'efficiency':>10}")
    for learners in args.learners:
        base = None
        for runners in args.runners:
            sps = _measure(args, learners, runners)
            if base is None:
                base = (sps, runners)
            speedup = sps / base[0]
            eff = speedup / (runners / base[1]) if base[1] else float("nan")
            print(
                f"{learners:>8} {runners:>7} {sps:>9.0f} {speedup:>8.2f}x {eff:>9.0%}", flush=True
            )
    ray.shutdown()


if __name__ == "__main__":
    main()
