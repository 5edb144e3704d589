"""Env steps per second: Stable-Baselines3 TD3 vs this package's TD3 (fast and episode paths).

Same env, network, batch size, learning_starts (uniform random actions before it), Gaussian
exploration noise 0.1 (normalised scale), one gradient step per env step, one torch thread,
everything in one process (RLlib: ``num_env_runners=0``, ``num_learners=0``, so sampling and
learning run in the driver). Both sample ``--train-freq`` env steps, then take as many
gradient steps (SB3 ``train_freq=(F, "step"), gradient_steps=F``; RLlib
``rollout_fragment_length=F``); ``--train-freq 1`` is SB3's default schedule. Rounds
alternate between the implementations; the build time is excluded, the warm-up steps are
included. Prints env steps/s per row and the ratio ours/SB3.

Usage::

    pip install -e .[bench]
    OMP_NUM_THREADS=1 RAY_AUTH_MODE=disabled python benchmarks/td3_vs_sb3.py \\
        --env Pendulum-v1 --net 400,300 --steps 3000 --rounds 2

``fair/ReplicatorAdult-v0`` is benchmarked with ``--env fair/ReplicatorAdult-v0`` when the
id is registered (skipped with a message otherwise). ``--profile`` writes a cProfile of one
fast-path run to ``td3_fast.prof``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")


def _make_env(env_id: str):
    import gymnasium as gym

    import rllib_fair  # noqa: F401  (registers the fair/ ids)

    return gym.make(env_id)


def run_sb3(args) -> float:
    """Env steps/s of SB3's TD3 over ``args.steps`` steps."""
    import numpy as np
    from stable_baselines3 import TD3 as SB3TD3
    from stable_baselines3.common.noise import NormalActionNoise

    env = _make_env(args.env)
    n_act = env.action_space.shape[0]
    # SB3 adds the noise to the [-1, 1]-scaled action, as this package does.
    model = SB3TD3(
        "MlpPolicy",
        env,
        learning_rate=args.lr,
        buffer_size=int(1e6),
        learning_starts=args.learning_starts,
        batch_size=args.batch,
        tau=0.005,
        gamma=0.99,
        train_freq=(args.train_freq, "step"),
        gradient_steps=args.train_freq,
        action_noise=NormalActionNoise(np.zeros(n_act), 0.1 * np.ones(n_act)),
        policy_kwargs={"net_arch": args.net},
        seed=args.seed,
        device="cpu",
        verbose=0,
    )
    start = time.perf_counter()
    model.learn(total_timesteps=args.steps)
    return args.steps / (time.perf_counter() - start)


def _rllib_config(args, replay_path: str):
    from rllib_fair.algorithms.td3 import TD3Config

    return (
        TD3Config()
        .environment(args.env)
        .env_runners(num_env_runners=0, rollout_fragment_length=args.train_freq)
        .learners(num_learners=0)
        .rl_module(model_config={"fcnet_hiddens": args.net})
        .training(
            replay_path=replay_path,
            actor_lr=args.lr,
            critic_lr=args.lr,
            train_batch_size_per_learner=args.batch,
            num_steps_sampled_before_learning_starts=args.learning_starts,
            random_warmup_steps=args.learning_starts,
            exploration_noise=0.1,
        )
        .fairness(metrics=False)
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=1000)
        .debugging(seed=args.seed)
    )


def run_rllib(args, replay_path: str, steps: int, profile: str | None = None) -> float:
    """Env steps/s of this package's TD3 (``replay_path`` fast or episode)."""
    algo = _rllib_config(args, replay_path).build_algo()
    try:
        prof = None
        if profile:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        start = time.perf_counter()
        done = 0
        while done < steps:
            done = algo.train()["num_env_steps_sampled_lifetime"]
        rate = done / (time.perf_counter() - start)
        if prof is not None:
            prof.disable()
            prof.dump_stats(profile)
        return rate
    finally:
        algo.stop()


def main() -> None:
    """Parses the arguments, runs the alternating rounds and prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="Pendulum-v1")
    parser.add_argument("--steps", type=int, default=3000, help="env steps per SB3/fast run")
    parser.add_argument(
        "--episode-steps", type=int, default=1000, help="env steps per episode-path run (0: skip)"
    )
    parser.add_argument("--net", default="400,300", help="hidden sizes, e.g. 400,300 or 64,64")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--learning-starts", type=int, default=300)
    parser.add_argument("--train-freq", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    args.net = [int(h) for h in args.net.split(",") if h]

    import gymnasium as gym
    import ray
    import torch

    import rllib_fair  # noqa: F401

    torch.set_num_threads(1)
    if args.env not in gym.registry:
        print(f"skipped: env {args.env!r} is not registered")
        return
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level="ERROR",
    )
    rows: dict[str, list[float]] = {"sb3": [], "fast": [], "episode": []}
    for r in range(args.rounds):
        rows["sb3"].append(run_sb3(args))
        rows["fast"].append(run_rllib(args, "fast", args.steps))
        if args.episode_steps:
            rows["episode"].append(run_rllib(args, "episode", args.episode_steps))
        print(
            f"round {r}: "
            + ", ".join(f"{k} {v[-1]:.0f}" for k, v in rows.items() if v)
            + " env steps/s",
            flush=True,
        )
    if args.profile:
        run_rllib(args, "fast", args.steps, profile="td3_fast.prof")
        print("cProfile of one fast-path run: td3_fast.prof")
    sb3 = statistics.median(rows["sb3"])
    print(
        f"\nenv={args.env} net={args.net} batch={args.batch} learning_starts="
        f"{args.learning_starts} train_freq={args.train_freq} (1 gradient step per env step), "
        f"median of {args.rounds} rounds"
    )
    print(f"{'implementation':<34}{'env steps/s':>12}{'ours/SB3':>10}")
    names = {
        "sb3": "Stable-Baselines3 TD3",
        "fast": "rllib-fair TD3, fast path",
        "episode": "rllib-fair TD3, episode path",
    }
    for key, values in rows.items():
        if values:
            med = statistics.median(values)
            print(f"{names[key]:<34}{med:>12.1f}{med / sb3:>10.2f}")
    ray.shutdown()


if __name__ == "__main__":
    main()
