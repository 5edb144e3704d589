"""PPO-C and PPO-Cb training speed relative to plain PPO on ``fair/LendingDrift-v0``.

Side by side in one process, interleaved iteration by iteration so machine noise hits
every variant alike:

* ``PPO``     rllib-fair's G-PPO (RLlib PPO + fairness metrics/columns), whole episodes;
* ``PPO-KL``  the paper's PPO (clip + fixed KL 1.5; the PPO-C classes with both weights 0);
* ``PPO-C``   Eq. 2 (beta_C = 0.65);
* ``PPO-Cb``  Eq. 5 (beta_C = 0.65, beta_Lambda = 1);
* ``F-PPO-L`` the baseline with the reference's distance (the debiased Sinkhorn
  divergence, computed per step on the env runner), and ``F-PPO-L/s`` the same with the
  sorted-count W1 (``w1_form: sorted_counts``), which costs next to nothing: their ratio
  is the Sinkhorn divergence's share of the run.

All with the paper's schedule (one 500-step episode per iteration, 10 epochs x 10
minibatches of 50; network ``--hidden``). Prints env steps per second of whole training
iterations (sampling + learning) and each variant's ratio to ``PPO`` (target >= 0.85).

Usage::

    python benchmarks/ppoc_speed.py [--iters 6] [--hidden 64 64] [--setting 1]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

import torch  # noqa: E402

torch.set_num_threads(1)

VARIANTS = {
    "PPO": ("PPO", {}),
    "PPO-KL": ("PPOKL", {}),
    "PPO-C": ("PPOC", {"beta_c": 0.65}),
    "PPO-Cb": ("PPOCb", {"beta_c": 0.65, "beta_lambda": 1.0}),
    "F-PPO-L": ("FPPOL", {}),
    "F-PPO-L/s": ("FPPOL", {"w1_form": "sorted_counts"}),
}


def build(name: str, extra: dict, args):
    from rllib_fair.algorithms import get_config_class

    return (
        get_config_class(name)()
        .environment(
            "fair/LendingDrift-v0",
            env_config={"setting": args.setting, "max_steps": 500, "time_limit_terminates": True},
        )
        .env_runners(num_env_runners=0, batch_mode="complete_episodes")
        .training(
            lr=3e-4, train_batch_size_per_learner=500, minibatch_size=50, num_epochs=10, **extra
        )
        .rl_module(model_config={"fcnet_hiddens": list(args.hidden)})
        .debugging(seed=0, log_level="ERROR")
        .build_algo()
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=6, help="timed iterations per variant")
    p.add_argument("--hidden", type=int, nargs="+", default=[64, 64])
    p.add_argument("--setting", type=int, default=1)
    args = p.parse_args(argv)

    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    algos = {label: build(name, extra, args) for label, (name, extra) in VARIANTS.items()}
    for algo in algos.values():  # warm-up iteration, not timed
        algo.train()
    secs = dict.fromkeys(algos, 0.0)
    steps = dict.fromkeys(algos, 0)
    for _ in range(args.iters):
        for label, algo in algos.items():
            t = time.perf_counter()
            result = algo.train()
            secs[label] += time.perf_counter() - t
            steps[label] += int(result["env_runners"]["num_env_steps_sampled"])
    base = steps["PPO"] / secs["PPO"]
    print(f"fair/LendingDrift-v0 setting {args.setting}, hidden {args.hidden}, {args.iters} iters")
    print(f"{'variant':<10} {'env steps/s':>12} {'ratio to PPO':>13}")
    for label in algos:
        rate = steps[label] / secs[label]
        print(f"{label:<10} {rate:12.1f} {rate / base:12.2f}x")
    for algo in algos.values():
        algo.stop()
    ray.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
