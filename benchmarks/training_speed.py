"""Training speed of every algorithm next to plain RLlib PPO, side by side in one run.

The variants train on the same environment with the same PPO hyper-parameters, in one
process, interleaved round by round so machine noise hits all of them alike:

* ``rllib PPO``      ray.rllib's own ``PPOConfig`` (no fairness anything);
* ``fair PPO, off``  rllib-fair's G-PPO with ``fairness(metrics=False, columns=False)``;
* ``fair PPO, on``   G-PPO as shipped: metrics callback + fairness columns;
* ``RPPO``, ``POCAR``, ``ELBERTPO``, ``SELLF``: the fairness-aware algorithms with their
  defaults.

It prints env steps per second of whole training iterations (sampling + learning) and
the ratio of each variant to ``rllib PPO`` (the fairness overhead). Settings follow the
papers' PPO (batch 2048, minibatch 64, 10 epochs) unless overridden.

Usage::

    python benchmarks/training_speed.py [--env fair/Lending-v0] [--iters 4] [--rounds 2]
        [--variants "rllib PPO" "fair PPO, on" POCAR ELBERTPO]
"""

from __future__ import annotations

import argparse
import os
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


VARIANTS = ["rllib PPO", "fair PPO, off", "fair PPO, on", "RPPO", "POCAR", "ELBERTPO", "SELLF"]


def make_config(variant: str, env_id: str, batch: int, minibatch: int, epochs: int):
    from ray.rllib.algorithms.ppo import PPOConfig

    from rllib_fair.algorithms import get_config_class

    if variant == "rllib PPO":
        cfg = PPOConfig().environment(f"rllib_fair:{env_id}")
    elif variant.startswith("fair PPO"):
        cfg = get_config_class("PPO")().environment(env_id)
        if variant.endswith("off"):
            cfg.fairness(metrics=False, columns=False)
    else:
        cfg = get_config_class(variant)().environment(env_id)
    return (
        cfg.env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=batch, minibatch_size=minibatch, num_epochs=epochs)
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .debugging(seed=0)
    )


def main() -> None:
    import ray

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="fair/Lending-v0")
    p.add_argument("--iters", type=int, default=4, help="timed iterations per round")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--batch", type=int, default=2048)
    p.add_argument("--minibatch", type=int, default=64)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--variants", nargs="+", default=VARIANTS)
    args = p.parse_args()
    if "rllib PPO" not in args.variants:
        args.variants.insert(0, "rllib PPO")

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    variants = args.variants
    algos = {
        v: make_config(v, args.env, args.batch, args.minibatch, args.epochs).build_algo()
        for v in variants
    }
    for algo in algos.values():  # warm-up iteration, not timed
        algo.train()
    steps = dict.fromkeys(variants, 0)
    seconds = dict.fromkeys(variants, 0.0)
    for _ in range(args.rounds):
        for v, algo in algos.items():
            t0 = time.perf_counter()
            for _ in range(args.iters):
                result = algo.train()
                steps[v] += result["env_runners"]["num_env_steps_sampled"]
            seconds[v] += time.perf_counter() - t0
    for algo in algos.values():
        algo.stop()
    base = steps["rllib PPO"] / seconds["rllib PPO"]
    print(
        f"\nTraining speed on {args.env} (batch {args.batch}, minibatch "
        f"{args.minibatch}, {args.epochs} epochs, 0 remote env runners, 1 torch thread)"
    )
    print(f"{'variant':<16} {'env steps/s':>12} {'vs rllib PPO':>13}")
    for v in variants:
        sps = steps[v] / seconds[v]
        print(f"{v:<16} {sps:>12.0f} {sps / base:>12.3f}x")
    ray.shutdown()


if __name__ == "__main__":
    main()
