"""Env steps per second: Stable-Baselines3 PPO vs this package's PPO family, side by side.

The papers (SELLF, POCAR, ELBERT-PO, PPO-C) train PPO with Stable-Baselines3: one
environment, 2,048-step rollouts, minibatch 64, 10 epochs, a ``[64, 64]`` tanh network.
This benchmark runs SB3's PPO and this package's PPO, POCAR, ELBERT-PO and SELLF at those
settings on the same environment, in one process with one torch thread (RLlib:
``num_env_runners=0``, ``num_learners=0``, so sampling and learning both run in the
driver, as SB3's do), alternating round by round so that machine noise hits every row
alike. Build time is excluded; every run first trains one warm-up iteration.

It prints env steps/s of whole training iterations (sampling + learning) per row, the
ratio to SB3, and for our rows RLlib's own per-iteration breakdown (sampling, learner
update, weight sync, in seconds per 2,048 steps, from the result's ``timers``).

``--floor`` also times, in the same process after the rounds, what ELBERT-PO and SELLF
compute beyond PPO in plain torch (no RLlib: :func:`method_floor`) and prints the best
ratio to our PPO that this maths alone allows at the run's PPO speed: the ceiling of
the "fairness algorithms at 0.9x of our PPO" target.

``--envs N`` runs N copies of the env on both sides: SB3's PPO on a ``DummyVecEnv`` (or
``SubprocVecEnv`` with ``--sb3-vec subproc``) of N envs, ours with
``num_envs_per_env_runner=N`` (a native vector env where the env has one); both collect
``batch / N`` steps per env per rollout, so the rollout, minibatch and epochs are the
same. ``--envs 1 8 32`` runs each N in turn and prints one table per N.

``--ceiling`` times PPO's minibatch update in plain torch (:func:`ppo_update_floor`) and
prints, per N, the best ratio to SB3 that the update's maths allows: SB3's iteration
time over ours with our sampling as measured and the update at that floor, and with free
sampling too. From N = 8 both sides are bound by the same update, and this is the
ceiling the ">= 1.2x at N = 8 and 32" target meets.

``--rllib-default`` adds a row for stock RLlib: ``ray.rllib.algorithms.ppo.PPOConfig``
at the same settings, without any of this package's sampling or learner speed-ups
(the speed layer, :mod:`rllib_fair.accel`), i.e. where the package started.

Usage::

    pip install -e .[bench]     # stable-baselines3 (a benchmark extra only)
    OMP_NUM_THREADS=1 RAY_AUTH_MODE=disabled python benchmarks/vs_sb3.py \\
        --env fair/Lending-v0 --iters 3 --rounds 2 [--rllib-default] [--floor] [--profile NAME]
    python benchmarks/vs_sb3.py --envs 1 8 32 --rows "SB3 PPO" PPO --ceiling
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

ROWS = ["SB3 PPO", "PPO", "POCAR", "ELBERTPO", "SELLF"]
#: Optional rows: stock RLlib PPO, and our PPO with torch's fused Adam kernel
#: (``optimizer_impl: fused``, last-bit differences from the default foreach Adam).
EXTRA_ROWS = ["RLlib PPO", "PPO fused"]
BREAKDOWN = {
    "sampling": "env_runner_sampling_timer",
    "learner": "learner_update_timer",
    "sync": "synch_weights",
}


def sb3_rate(args) -> tuple[float, dict[str, float]]:
    """(env steps/s, {phase: seconds per iteration}) of SB3's PPO over ``args.iters``
    rollouts (after one warm-up); ``learner`` is its ``train()`` (the update), ``sampling``
    the rest of the iteration (rollout collection, GAE)."""
    import gymnasium as gym
    from stable_baselines3 import PPO as SB3PPO

    if args.n_envs == 1:
        env = gym.make(args.env)
    else:
        from stable_baselines3.common.env_util import make_vec_env
        from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

        vec_cls = SubprocVecEnv if args.sb3_vec == "subproc" else DummyVecEnv
        env = make_vec_env(args.env, n_envs=args.n_envs, seed=args.seed, vec_env_cls=vec_cls)
    model = SB3PPO(
        "MlpPolicy",
        env,
        learning_rate=args.lr,
        n_steps=args.batch // args.n_envs,
        batch_size=args.minibatch,
        n_epochs=args.epochs,
        gamma=0.99,
        gae_lambda=0.95,
        clip_range=0.2,
        ent_coef=0.0,
        vf_coef=0.5,
        max_grad_norm=0.5,
        policy_kwargs={"net_arch": list(args.net), "activation_fn": torch.nn.Tanh},
        seed=args.seed,
        device="cpu",
        verbose=0,
    )
    model.learn(total_timesteps=args.batch)  # warm-up
    update_s = [0.0]
    update = model.train

    def timed_update() -> None:  # the instance attribute shadows the method for learn()
        t = time.perf_counter()
        update()
        update_s[0] += time.perf_counter() - t

    model.train = timed_update
    start = time.perf_counter()
    model.learn(total_timesteps=args.iters * args.batch, reset_num_timesteps=False)
    wall = time.perf_counter() - start
    env.close()
    per_iter = wall / args.iters
    learn = update_s[0] / args.iters
    return args.iters * args.batch / wall, {"sampling": per_iter - learn, "learner": learn}


def rllib_config(name: str, args, connector_metrics: bool = False):
    """This package's ``name`` (stock RLlib PPO for ``"RLlib PPO"``), papers' settings.

    Sampling and learning both run in the driver.
    """
    from rllib_fair.algorithms import get_config_class

    if name == "RLlib PPO":
        from ray.rllib.algorithms.ppo import PPOConfig

        config = PPOConfig()
    else:
        config = get_config_class(name.removesuffix(" fused"))()
        if name.endswith(" fused"):
            config.training(optimizer_impl="fused")
    config = (
        config.environment(args.env)
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=args.n_envs,
            rollout_fragment_length=args.batch // args.n_envs,
        )
        .learners(num_learners=0)
        .training(
            lr=args.lr,
            train_batch_size_per_learner=args.batch,
            minibatch_size=args.minibatch,
            num_epochs=args.epochs,
            gamma=0.99,
            lambda_=0.95,
            clip_param=0.2,
            entropy_coeff=0.0,
            vf_loss_coeff=0.5,
            grad_clip=0.5,
            use_kl_loss=False,
        )
        .rl_module(
            model_config={
                "fcnet_hiddens": list(args.net),
                "fcnet_activation": "tanh",
                "vf_share_layers": False,  # SB3: separate policy and value networks
            }
        )
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=0)
        .debugging(seed=args.seed)
    )
    if name != "RLlib PPO":
        config.reporting(connector_metrics=connector_metrics)
    return config


def rllib_rate(name: str, args, connector_metrics: bool = False, profile: str | None = None):
    """(env steps/s, {phase: seconds per iteration}) of ``args.iters`` iterations."""
    algo = rllib_config(name, args, connector_metrics).build_algo()
    try:
        algo.train()  # warm-up
        prof = None
        if profile:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        start = time.perf_counter()
        phases = {k: 0.0 for k in BREAKDOWN}
        steps = 0
        for _ in range(args.iters):
            before = algo.metrics.peek(("env_runners", "num_env_steps_sampled_lifetime"), default=0)
            result = algo.train()
            steps += result["num_env_steps_sampled_lifetime"] - before
            for phase, key in BREAKDOWN.items():
                phases[phase] += float(result.get("timers", {}).get(key, 0.0))
            memory = result.get("learners", {}).get("default_policy", {}).get("memory_size")
            if memory is not None:  # SELLF: accepted rows its predictor trains on
                phases["memory"] = phases.get("memory", 0.0) + float(memory) / args.iters
        rate = steps / (time.perf_counter() - start)
        if prof is not None:
            prof.disable()
            prof.dump_stats(profile)
        return rate, {k: v / args.iters for k, v in phases.items()}
    finally:
        algo.stop()


def _mlp(sizes: list[int], out: int) -> torch.nn.Sequential:
    layers: list[torch.nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [torch.nn.Linear(a, b), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(sizes[-1], out))


def _median_s(fn, n: int, rounds: int = 5) -> float:
    fn()  # warm-up
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - start) / n)
    return statistics.median(times)


def method_floor(args, memory_rows: float, only_ppo: bool = False) -> dict[str, float]:
    """Seconds per iteration of each method's own extra maths, in plain torch.

    What ELBERT-PO and SELLF must compute beyond PPO at these settings, with no RLlib
    and no framework overhead at all (one torch thread, the same network sizes,
    minibatch and number of updates): a lower bound on their extra time per
    iteration, so ``T_PPO / (T_PPO + floor)`` bounds their speed against our PPO.

    * ELBERT-PO: a PPO minibatch update (actor and critic MLPs, loss, backward,
      global-norm clipping, Adam) with the supply/demand critic MLP (2 K G = 4 outputs)
      against one without it, times the updates per iteration.
    * SELLF: the logistic predictor's forward per sampled step; the Renyi term (Eq. 6:
      per-row weight, the two group means) in each minibatch update; per iteration,
      ``predictor_steps`` = 25 steps of Eq. 7, each on SELLF's default
      ``predictor_batch_size`` rows of the memory (``memory_rows``, the mean memory of
      the timed SELLF iterations; the whole memory when that is None or larger), the
      acceptance probabilities of the rows those steps read and of the batch under the
      current and 10 stored policies, and one policy snapshot.
    """
    import copy
    import math

    import gymnasium as gym

    obs_dim = int(math.prod(gym.make(args.env).observation_space.shape))
    sizes = [obs_dim] + list(args.net)
    n_actions = 2
    updates = math.ceil(args.epochs * args.batch / args.minibatch)
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.rand(args.minibatch, obs_dim, generator=gen)

    def update_fn(with_fair_critic: bool, with_renyi: bool):
        torch.manual_seed(args.seed)
        actor, critic = _mlp(sizes, n_actions), _mlp(sizes, 1)
        nets = [actor, critic] + ([_mlp(sizes, 4)] if with_fair_critic else [])
        params = [p for net in nets for p in net.parameters()]
        opt = torch.optim.Adam(params, lr=args.lr, foreach=True)
        targets = [torch.rand(args.minibatch, 1), torch.rand(args.minibatch, 4)]
        actions = torch.randint(0, n_actions, (args.minibatch, 1), generator=gen)
        old_logp = torch.log(torch.full((args.minibatch,), 0.5))
        adv = torch.randn(args.minibatch, generator=gen)
        scale = torch.rand(args.minibatch, generator=gen)
        pi_all = torch.rand(args.minibatch, generator=gen) + 0.5
        groups = torch.nn.functional.one_hot(
            torch.randint(0, 2, (args.minibatch,), generator=gen), 2
        ).float()

        def step():
            opt.zero_grad(set_to_none=True)
            logits = actor(x)
            log_p = logits - logits.logsumexp(-1, keepdim=True)
            ratio = torch.exp(log_p.gather(-1, actions).squeeze(-1) - old_logp)
            surrogate = torch.min(adv * ratio, adv * torch.clamp(ratio, 0.8, 1.2))
            vf = (critic(x) - targets[0]).pow(2).squeeze(-1)
            loss = (-surrogate + 0.5 * vf).mean()
            if with_fair_critic:
                loss = loss + 0.5 * (nets[2](x) - targets[1]).pow(2).sum(-1).mean()
            if with_renyi:
                p = torch.softmax(logits, -1)[..., 1]
                per_row = scale * (1.0 - p) ** 2 / pi_all
                loss = loss + 0.1 * (per_row @ groups / groups.sum(0).clamp_min(1.0)).sum()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 0.5, foreach=True)
            opt.step()

        return step

    ppo_s = _median_s(update_fn(False, False), 100)
    if only_ppo:
        return {"PPO update": ppo_s}
    elbert = (_median_s(update_fn(True, False), 100) - ppo_s) * updates
    renyi = (_median_s(update_fn(False, True), 100) - ppo_s) * updates

    phi = torch.nn.Linear(obs_dim, 1)
    row = torch.rand(1, obs_dim, generator=gen)

    def predict():
        with torch.no_grad():
            torch.sigmoid(phi(row))

    sampling = _median_s(predict, 2000) * args.batch

    from rllib_fair.algorithms import get_config_class

    rows = max(int(memory_rows), 1)
    per_step = get_config_class("SELLF")().predictor_batch_size or rows
    per_step = min(per_step, rows)
    used = rows if per_step == rows else min(rows, 25 * per_step)  # rows the steps read
    mem = torch.rand(used, obs_dim, generator=gen)
    labels = torch.randint(0, 2, (used,), generator=gen).float()
    weights = torch.rand(used, generator=gen) + 0.1
    columns = torch.nn.functional.one_hot(torch.randint(0, 2, (used,), generator=gen), 2).float()
    if per_step == rows:  # the whole memory in every step
        picks = [slice(None)] * 25
    else:
        picks = [torch.randperm(used, generator=gen)[:per_step] for _ in range(25)]
    opt = torch.optim.Adam(phi.parameters(), lr=1e-2, foreach=True)
    policies = [_mlp(sizes, n_actions).requires_grad_(False) for _ in range(11)]
    batch_obs = torch.rand(args.batch, obs_dim, generator=gen)

    def predictor_iteration():
        with torch.no_grad():
            for obs in (mem, batch_obs):
                for policy in policies:
                    torch.softmax(policy(obs), -1)
        for pick in picks:
            opt.zero_grad(set_to_none=True)
            w, cols = weights[pick], columns[pick]
            losses = torch.nn.functional.binary_cross_entropy_with_logits(
                phi(mem[pick]).squeeze(-1), labels[pick], reduction="none"
            )
            ((w * losses) @ cols / (w @ cols)).sum().backward()
            opt.step()
        copy.deepcopy(policies[0])

    per_iteration = _median_s(predictor_iteration, 3)
    return {
        "ELBERTPO": elbert,
        "SELLF": sampling + renyi + per_iteration,
        "SELLF sampling": sampling,
        "SELLF renyi": renyi,
        "SELLF per iteration": per_iteration,
    }


def main() -> None:
    """Parses the arguments, runs the alternating rounds and prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="fair/Lending-v0")
    parser.add_argument("--iters", type=int, default=3, help="timed iterations per run")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rows", nargs="+", default=ROWS, choices=ROWS + EXTRA_ROWS)
    parser.add_argument("--rllib-default", action="store_true")
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--minibatch", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--net", default="64,64")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--envs",
        type=int,
        nargs="+",
        default=[1],
        help="envs per side (SB3 vector env / our envs per env runner); one table per N",
    )
    parser.add_argument("--sb3-vec", choices=["dummy", "subproc"], default="dummy")
    parser.add_argument("--profile", default=None, metavar="ROW", help="cProfile one row")
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="also time the PPO update's maths in plain torch (no framework) and print the "
        "best ratio to SB3 it allows at each N (needs the SB3 PPO and PPO rows)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also time ELBERT-PO's and SELLF's own extra maths in plain torch (no RLlib) "
        "and print the best ratio to our PPO that maths allows in this run",
    )
    args = parser.parse_args()
    args.net = [int(h) for h in args.net.split(",") if h]

    import ray

    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level="ERROR",
    )
    for n_envs in args.envs:
        if n_envs < 1 or args.batch % n_envs:
            parser.error(f"--envs: {n_envs} is invalid; valid: a divisor of --batch {args.batch}")
    for n_envs in args.envs:
        args.n_envs = n_envs
        rows = list(args.rows) + (["RLlib PPO"] if args.rllib_default else [])
        rates: dict[str, list[float]] = {r: [] for r in rows}
        phases: dict[str, list[dict]] = {r: [] for r in rows}
        for rnd in range(args.rounds):
            # each round starts one row later, so that no row always runs last in a round
            # (the machine's speed drifts within a round)
            for row in rows[rnd % len(rows) :] + rows[: rnd % len(rows)]:
                if row == "SB3 PPO":
                    rate, ph = sb3_rate(args)
                else:
                    rate, ph = rllib_rate(row, args)
                rates[row].append(rate)
                phases[row].append(ph)
            print(
                f"round {rnd}: " + ", ".join(f"{r} {v[-1]:.0f}" for r, v in rates.items()),
                flush=True,
            )
        if args.profile:
            out = f"vs_sb3_{args.profile.lower().replace(' ', '_')}.prof"
            rllib_rate(args.profile, args, profile=out)
            print(f"cProfile: {out}")
        print(
            f"\nenv={args.env} batch={args.batch} minibatch={args.minibatch} epochs={args.epochs} "
            f"net={args.net} tanh, {args.n_envs} env(s) per side "
            f"({args.batch // args.n_envs} steps per env per rollout), 1 torch thread; "
            f"median of {args.rounds} rounds x "
            f"{args.iters} iterations; a ratio is the median over rounds of the two rows' "
            "rates in the same round (the machine's speed drifts between rounds)"
        )
        print(
            f"{'row':<22}{'env steps/s':>12}{'vs SB3':>8}{'vs PPO':>8}"
            f"{'sample s':>10}{'learn s':>9}{'sync s':>8}"
        )
        for row in rows:
            med = statistics.median(rates[row])
            vs_sb3 = _ratio(rates, row, "SB3 PPO")
            vs_ppo = _ratio(rates, row, "PPO") if row != "SB3 PPO" else "-"
            line = f"{row:<22}{med:>12.0f}{vs_sb3:>8}{vs_ppo:>8}"
            if phases[row]:
                for key, width in zip(BREAKDOWN, (10, 9, 8), strict=True):
                    got = [p[key] for p in phases[row] if key in p]
                    line += f"{statistics.median(got):>{width}.3f}" if got else f"{'-':>{width}}"
            print(line)
        if args.ceiling and rates.get("PPO") and rates.get("SB3 PPO"):
            print_ceiling(args, phases)
        if args.floor and rates.get("PPO"):
            memory = [p.get("memory", 0.0) for p in phases.get("SELLF", [])]
            floor = method_floor(args, statistics.median(memory) if memory else args.batch)
            t_ppo = args.batch / statistics.median(rates["PPO"])
            print(
                f"\nmethod maths alone (plain torch, no RLlib), seconds per {args.batch}-step "
                f"iteration, and the best speed against our PPO ({t_ppo:.3f} s per iteration) "
                "it allows:"
            )
            for name, extra in floor.items():
                bound = f"{t_ppo / (t_ppo + extra):.2f}" if name in ("ELBERTPO", "SELLF") else ""
                print(f"  {name:<22}{extra:>8.3f} s{bound:>8}")
    ray.shutdown()


def ppo_update_floor(args) -> float:
    """Seconds per iteration of PPO's update alone in plain torch (no framework).

    The same maths as both sides' update (:func:`method_floor`'s PPO minibatch step:
    separate actor and critic MLPs, clipped surrogate, value loss, backward, global-norm
    clipping, Adam) times the minibatch updates per iteration.
    """
    import math

    updates = math.ceil(args.epochs * args.batch / args.minibatch)
    return method_floor(args, args.batch, only_ppo=True)["PPO update"] * updates


def print_ceiling(args, phases: dict[str, list[dict]]) -> None:
    """The best ratio to SB3 that PPO's update maths allows at this N.

    Both sides run the same update on the same batch; SB3's is close to plain torch. If
    our sampling cost nothing and our update ran at the plain-torch floor, an iteration
    would take ``floor`` seconds against SB3's ``sampling + learner``: the ratio can be at
    most their quotient, whatever the package does around the update.
    """
    med = {
        row: {k: statistics.median(p[k] for p in phases[row]) for k in ("sampling", "learner")}
        for row in ("SB3 PPO", "PPO")
    }
    floor = ppo_update_floor(args)
    sb3 = med["SB3 PPO"]["sampling"] + med["SB3 PPO"]["learner"]
    ours = med["PPO"]["sampling"]
    print(
        f"\nceiling at N={args.n_envs}: PPO's update in plain torch {floor:.3f} s per "
        f"{args.batch}-step iteration (SB3's {med['SB3 PPO']['learner']:.3f} s, ours "
        f"{med['PPO']['learner']:.3f} s); SB3's iteration {sb3:.3f} s "
        f"({med['SB3 PPO']['sampling']:.3f} s sampling)"
    )
    print(
        f"  best PPO / SB3 with our sampling as measured ({ours:.3f} s) and the update at "
        f"the floor: {sb3 / (ours + floor):.2f}; with free sampling too: {sb3 / floor:.2f}"
    )


def _ratio(rates: dict, row: str, base: str) -> str:
    """Median over rounds of ``row``'s rate over ``base``'s rate in the same round."""
    if not rates.get(base):
        return "-"
    per_round = [a / b for a, b in zip(rates[row], rates[base], strict=True)]
    return f"{statistics.median(per_round):.2f}"


if __name__ == "__main__":
    main()
