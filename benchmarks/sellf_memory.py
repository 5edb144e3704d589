"""SELLF's learner time per iteration against the size of its memory M.

Each iteration a SELLF learner appends one train batch of accepted rows to its memory
and trains the label predictor on it (Alg. 1, Eq. 7: ``predictor_steps`` Adam steps
on minibatches of ``predictor_batch_size`` memory rows, IPW weights from the current
policy and ``policy_samples`` stored snapshots). Two ways of doing that, side by side
in this one process, on the same learner settings (the config's default networks):

* ``full recompute``: the memory grows by concatenation and every iteration computes
  the acceptance probabilities of all M rows under the current policy and each
  sampled snapshot, then picks the minibatches' rows (the learner before the change);
* ``memory-flat``: the learner as shipped (``SELLFTorchLearner.remember`` and
  ``_train_predictor``): preallocated memory arrays, row draws first, probabilities
  only for the rows the steps read.

Both draw the same rows and give the same predictor (``tests/algorithms/test_sellf.py``
checks that bit for bit). The memory is filled with random rows to 10,000 and 200,000
rows; the script prints ms per iteration for each path and size, and the ratio
200k / 10k of each path (1.0 means flat in M). One thread (``torch.set_num_threads(1)``).

The memory-flat path evaluates at most ``predictor_steps x predictor_batch_size``
distinct rows per iteration, whatever M is; its time stops growing once M is well above
that (the default ``--batch 64`` is the authors' code's minibatch: at most 1,600 rows).
With ``predictor_batch_size: null`` (``--batch 0``: the whole memory per step, the
default until 2026-11-29; Alg. 1 samples a minibatch from M for each step, and 64 is
now the default) Eq. 7 itself runs over all M rows,
so no path can be flat there. Its larger part, though, is the acceptance probabilities
of the memory under 11 policies; ``--distinct N`` fills the memory with rows that repeat
N observations (FICO lending's rows repeat a few score-bin features: 20 distinct ones
in 5,000 steps), where the shipped learner runs the policies on each distinct
observation once.

Usage::

    python benchmarks/sellf_memory.py [--iterations 3] [--batch 64] [--append 400]
    python benchmarks/sellf_memory.py --batch 0 --distinct 20
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

SIZES = (10_000, 200_000)


def build_learner(batch: int, capacity: int):
    """A SELLF learner (default networks) with a full store of distinct snapshots."""
    import gymnasium as gym

    from rllib_fair.algorithms import get_config_class

    torch.manual_seed(0)
    cfg = (
        get_config_class("SELLF")()
        .environment("fair/LendingFICO-v0")
        .training(
            memory_size=capacity,
            policy_store_size=10,
            policy_samples=10,
            predictor_steps=25,
            predictor_batch_size=batch,
        )
        .debugging(seed=0)
    )
    learner = cfg.build_learner(env=gym.make("fair/LendingFICO-v0"))
    learner.build()
    module = learner.module["default_policy"].unwrapped()
    with torch.no_grad():
        for _ in range(learner.config.policy_store_size):
            for p in [*module.encoder.actor_encoder.parameters(), *module.pi.parameters()]:
                p.add_(0.1 * torch.randn_like(p))
            learner._store.append(learner._snapshot(module))
    return learner, module


def rows(rng, k: int, dim: int, pool=None):
    obs = (
        rng.random((k, dim)).astype(np.float32)
        if pool is None
        else pool[rng.integers(0, len(pool), k)]
    )
    return (
        obs,
        (rng.random(k) < 0.5).astype(np.int64),
        (rng.random(k) < 0.6).astype(np.float32),
    )


def full_recompute_iteration(learner, module, memory: dict, new) -> None:
    """Append by concatenation, then the update on the whole memory's probabilities."""
    from rllib_fair.algorithms.sellf.connectors import accept_probability, acceptance_under_all
    from rllib_fair.algorithms.sellf.torch.sellf_torch_learner import (
        group_columns,
        ipw_weights,
        self_normalized_bce,
    )

    cfg = learner.config
    for key, value in zip(("obs", "group", "label"), new):
        memory[key] = np.concatenate([memory[key], value])[-cfg.memory_size :]
    opt = learner.get_optimizer("default_policy", "predictor")
    obs, groups, labels = (torch.from_numpy(memory[k]) for k in ("obs", "group", "label"))
    with torch.no_grad():
        pi_now = accept_probability(module, None, obs)
        probs = [pi_now] + [accept_probability(module, s, obs) for s in learner.sample_policies()]
        weights = ipw_weights(pi_now, acceptance_under_all(probs))
    n, columns = len(obs), group_columns(groups)
    for _ in range(cfg.predictor_steps):
        if cfg.predictor_batch_size:
            idx = torch.from_numpy(learner._rng.choice(n, cfg.predictor_batch_size, replace=False))
        else:
            idx = torch.arange(n)
        opt.zero_grad(set_to_none=True)
        loss = self_normalized_bce(
            module.predict_logits(obs[idx]), labels[idx], weights[idx], columns=columns[idx]
        )
        loss.backward()
        opt.step()
    float(weights.max())


def memory_flat_iteration(learner, module, new) -> None:
    learner.remember(*new)
    learner._train_predictor("default_policy", module)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=3, help="timed iterations per cell")
    parser.add_argument("--batch", type=int, default=64, help="predictor_batch_size")
    parser.add_argument("--append", type=int, default=400, help="rows appended per iteration")
    parser.add_argument(
        "--distinct",
        type=int,
        default=0,
        help="rows repeat this many observations (0: every row its own)",
    )
    args = parser.parse_args()
    batch = args.batch or None
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    ms: dict[tuple[str, int], float] = {}
    for size in SIZES:
        learner, module = build_learner(batch, size)
        dim = int(np.prod(module.observation_space.shape))
        pool = rng.random((args.distinct, dim)).astype(np.float32) if args.distinct else None
        fill = rows(rng, size, dim, pool)
        learner.remember(*fill)
        memory = dict(zip(("obs", "group", "label"), (a.copy() for a in fill)))
        batches = [rows(rng, args.append, dim, pool) for _ in range(args.iterations + 1)]
        for path in ("full recompute", "memory-flat"):
            times = []
            for new in batches:  # the first iteration warms up and is not counted
                start = time.perf_counter()
                if path == "full recompute":
                    full_recompute_iteration(learner, module, memory, new)
                else:
                    memory_flat_iteration(learner, module, new)
                times.append(time.perf_counter() - start)
            ms[(path, size)] = 1000.0 * float(np.mean(times[1:]))
            print(f"  {path:>14} at {size:>7,} rows: {ms[(path, size)]:9.1f} ms/iteration")
    small, large = SIZES
    print(
        f"\nSELLF learner time per iteration (append {args.append} rows + predictor update; "
        f"predictor_steps 25, predictor_batch_size {batch}, policy_samples 10; "
        f"{args.distinct or 'all'} distinct observations; 1 thread, mean of {args.iterations})"
    )
    ratio = f"ratio {large // 1000}k/{small // 1000}k"
    print(f"{'path':>14} | {small:>10,} rows | {large:>10,} rows | {ratio}")
    for path in ("full recompute", "memory-flat"):
        a, b = ms[(path, small)], ms[(path, large)]
        print(f"{path:>14} | {a:>10.1f} ms | {b:>10.1f} ms | {b / a:6.2f}")
    print(
        f"speed-up of memory-flat at {large:,} rows: "
        f"{ms[('full recompute', large)] / ms[('memory-flat', large)]:.1f}x"
    )


if __name__ == "__main__":
    main()
