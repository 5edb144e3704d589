"""Reproduce Yin et al. 2023, Figs. 1, 2 (b) and 4: the myopic baselines, TD3 (lambda = 0),
R-TD3 and L-UCBFair on the replicator populations (Adult-fitted or ``--env synthetic``).

Every method is evaluated greedily from the 16 initial states ``{0.2, 0.4, 0.6, 0.8}^2``
over one episode (H = 150): cumulative loss and disparity per episode (Fig. 4), the mean
per-step loss (Fig. 1 (e)), and the final qualification rates (the phase portraits of
Fig. 1). TD3 and R-TD3 train with the tuned examples' settings
(``tuned_examples/{td3,rtd3}/replicator_adult-*-fast.yaml``) for ``--steps`` env steps
per seed as one-CPU Ray tasks; the myopic baselines are deterministic and need no
training. The task is the reference R-TD3 run's (loss 1 - accuracy, squared
equal-opportunity disparity) unless ``--loss`` / ``--disparity`` say otherwise.

Outputs under ``--out``: ``yin2023.csv`` (one row per method and seed), ``yin2023.md``
(mean +- std over seeds and the paper's claims, each stated as reproduced or not) and
``yin2023.png`` (trajectories of (q_0, q_1) from the 16 states per method).

Usage::

    python scripts/reproduce_yin2023.py --steps 20000 --seeds 0 1 --out docs/results
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from _tasks import run_as_tasks, write_csv

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

ROOT = Path(__file__).resolve().parents[1]
#: method -> (label, tuned example or None, config overrides)
METHODS = {
    "myopic": ("Myopic (Eq. 7a)", None, {}),
    "myopic_fair": ("Myopic-Fair (Eq. 7b)", None, {}),
    "maxmin": ("Maxmin (Eq. 7c)", None, {}),
    "maxmin_fair": ("Maxmin-Fair (Eq. 7d)", None, {}),
    "td3": ("TD3 (lambda = 0)", "td3/replicator_adult-td3-fast.yaml", {}),
    "rtd3": ("R-TD3 (Eq. 6, kappa 1)", "rtd3/replicator_adult-rtd3-fast.yaml", {}),
    "rtd3_ref": (
        "R-TD3 (reference form, kappa 20)",
        "rtd3/replicator_adult-rtd3-fast.yaml",
        {"relaxation_sharpness": 20.0},
    ),
    "lucbfair": ("L-UCBFair (Algorithm 1)", "lucbfair/replicator-lucbfair.yaml", {}),
}
LEARNED = ("td3", "rtd3", "rtd3_ref", "lucbfair")
#: --env choices: (registered id, env class name in rllib_fair.envs.replicator, horizon)
ENVS = {
    "adult": ("fair/ReplicatorAdult-v0", "ReplicatorAdultEnv", 150),
    "synthetic": ("fair/Replicator-v0", "ReplicatorEnv", 100),
}


def summarise(out: dict) -> dict:
    q_final = out["q"][:, -1]
    return {
        "cum_loss": float(out["loss"].sum(axis=1).mean()),
        "cum_disparity": float(out["disparity"].sum(axis=1).mean()),
        "mean_step_loss": float(out["loss"].mean()),
        "final_q_mean": float(q_final.mean()),
        "final_q_gap": float(np.abs(q_final[:, 0] - q_final[:, 1]).mean()),
    }


def run_one(method: str, seed: int, steps: int, task: dict, env_key: str = "adult") -> dict:
    import torch

    torch.set_num_threads(1)
    import rllib_fair  # noqa: F401
    from rllib_fair.algorithms.rtd3.evaluation import GRID_STATES, rllib_greedy_policy, rollouts
    from rllib_fair.envs import replicator

    env_id, class_name, _ = ENVS[env_key]
    env_cls = getattr(replicator, class_name)
    if method == "lucbfair":  # its policy is indexed by the step (Algorithm 1)
        task = {**task, "include_time": True}
    env = env_cls(**task)
    t0 = time.time()
    _, example, overrides = METHODS[method]
    if example is None:
        from rllib_fair.envs.replicator_myopic import myopic_action

        def act(obs):
            return myopic_action(env, method, lam=0.5, q=env.q_from_observation(obs))

        out = rollouts(env, act, GRID_STATES)
        done = 0
    else:
        from rllib_fair.cli.experiment import load_experiments, validate_experiment

        ((name, spec),) = load_experiments(ROOT / "tuned_examples" / example).items()
        spec = {k: v for k, v in spec.items() if k != "pass_criteria"}
        spec["env_config"] = dict(task)
        spec["env"] = env_id
        if method == "lucbfair":
            overrides = {**overrides, "num_episodes_hint": max(1, steps // task["max_steps"])}
        exp = validate_experiment(
            name, spec, seed=seed, config_overrides={**overrides, "num_env_runners": 0}
        )
        algo = exp.config.build_algo()
        try:
            done = 0
            while done < steps:
                done = algo.train()["num_env_steps_sampled_lifetime"]
            out = rollouts(env_cls(**task), rllib_greedy_policy(algo), GRID_STATES)
        finally:
            algo.stop()
    row = {"method": method, "seed": seed, "train_env_steps": int(done)}
    row |= summarise(out)
    row["seconds"] = round(time.time() - t0, 1)
    row["trajectories"] = out["q"].tolist()
    return row


def avg(rows: list[dict], method: str, key: str) -> float:
    return mean_std(rows, method, key)[0]


def mean_std(rows: list[dict], method: str, key: str) -> tuple[float, float]:
    v = np.array([r[key] for r in rows if r["method"] == method], dtype=float)
    return float(v.mean()), float(v.std())


def write_table(
    rows: list[dict], out: Path, command: str, task: dict, name: str, env_id: str
) -> str:
    methods = [m for m in METHODS if any(r["method"] == m for r in rows)]
    lines = [
        f"# Yin et al. 2023 (Figs. 1, 2 (b) and 4): reproduction on {env_id}",
        "",
        f"Command: `{command}`",
        "",
        f"Task: loss `{task['loss']}`, disparity `{task['disparity']}` (squared), H = "
        f"{task['max_steps']}; greedy evaluation from the 16 initial states "
        "{0.2, 0.4, 0.6, 0.8}^2; mean +- std over training seeds (the myopic baselines are "
        "deterministic). The replicator utilities are the package's reconstruction "
        "(the paper's App. A.1 is not available), so only the qualitative claims can be "
        "compared.",
        "",
        "| method | seeds | train steps | cumulative loss | cumulative disparity | "
        "mean step loss | final mean q | final abs(q0 - q1) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        cells = []
        for key in ("cum_loss", "cum_disparity", "mean_step_loss", "final_q_mean", "final_q_gap"):
            mu, sd = mean_std(rows, m, key)
            cells.append(f"{mu:.3f} +- {sd:.3f}" if len(mine) > 1 else f"{mu:.3f}")
        lines.append(
            f"| {METHODS[m][0]} | {len(mine)} | {mine[0]['train_env_steps']} | "
            + " | ".join(cells)
            + " |"
        )
    lines += ["", "## The paper's claims", ""]
    claims = []
    if {"td3", "rtd3"} <= set(methods):
        d_t, d_r = avg(rows, "td3", "cum_disparity"), avg(rows, "rtd3", "cum_disparity")
        l_t, l_r = avg(rows, "td3", "cum_loss"), avg(rows, "rtd3", "cum_loss")
        claims.append(
            f"Fig. 4, R-TD3 has lower cumulative disparity than TD3: "
            f"{'reproduced' if d_r < d_t else 'not reproduced'} ({d_r:.3f} vs {d_t:.3f})."
        )
        claims.append(
            f"Fig. 4, at the cost of higher cumulative loss: "
            f"{'reproduced' if l_r > l_t else 'not reproduced'} ({l_r:.2f} vs {l_t:.2f})."
        )
    if {"rtd3", "myopic_fair"} <= set(methods):
        a, b = avg(rows, "rtd3", "mean_step_loss"), avg(rows, "myopic_fair", "mean_step_loss")
        claims.append(
            f"Fig. 1 (e), RL has a lower mean episode loss than the baselines (R-TD3 vs "
            f"Myopic-Fair): {'reproduced' if a < b else 'not reproduced'} ({a:.3f} vs {b:.3f})."
        )
        qa = mean_std(rows, "rtd3", "final_q_mean")[0]
        qb = mean_std(rows, "myopic_fair", "final_q_mean")[0]
        claims.append(
            f"Fig. 1 (d), RL drives universally high qualification rates (final mean q, "
            f"R-TD3 vs Myopic-Fair): {'reproduced' if qa > 0.8 and qa > qb else 'not reproduced'}"
            f" ({qa:.3f} vs {qb:.3f})."
        )
        gb = mean_std(rows, "myopic_fair", "final_q_gap")[0]
        claims.append(
            f"Fig. 1 (a), the myopic baselines drive disparate qualification rates: "
            f"{'reproduced' if gb > 0.2 else 'not reproduced'} (final abs(q0 - q1) {gb:.3f}; "
            "spec 003 erratum E5 explains why the reconstructed dynamics cannot show it)."
        )
    if {"rtd3", "lucbfair"} <= set(methods):
        a, b = avg(rows, "rtd3", "mean_step_loss"), avg(rows, "lucbfair", "mean_step_loss")
        ga, gb = avg(rows, "rtd3", "final_q_gap"), avg(rows, "lucbfair", "final_q_gap")
        qa, qb = avg(rows, "rtd3", "final_q_mean"), avg(rows, "lucbfair", "final_q_mean")
        both = ga < 0.1 and gb < 0.1 and qa > 0.5 and qb > 0.5
        claims.append(
            "Fig. 2 (b), L-UCBFair and R-TD3 both drive the state to equal, high "
            f"qualification rates: {'reproduced' if both else 'not reproduced'} (final mean "
            f"q {qb:.3f} / {qa:.3f}, final abs(q0 - q1) {gb:.3f} / {ga:.3f})."
        )
        claims.append(
            "Fig. 2 (b), R-TD3 attains a lower mean episodic loss than L-UCBFair: "
            f"{'reproduced' if a < b else 'not reproduced'} ({a:.3f} vs {b:.3f})."
        )
    lines += [f"- {c}" for c in claims]
    lines += ["", f"Trajectories of (q_0, q_1): `{name}.png`; one row per run: `{name}.csv`."]
    text = "\n".join(lines) + "\n"
    (out / f"{name}.md").write_text(text)
    return text


def plot(rows: list[dict], out: Path, name: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = [m for m in METHODS if any(r["method"] == m for r in rows)]
    fig, axes = plt.subplots(1, len(methods), figsize=(3 * len(methods), 3.2), squeeze=False)
    for ax, m in zip(axes[0], methods):
        row = next(r for r in rows if r["method"] == m)  # first seed
        for traj in np.asarray(row["trajectories"]):
            ax.plot(traj[:, 0], traj[:, 1], lw=0.8, color="tab:blue")
            ax.plot(traj[0, 0], traj[0, 1], "o", ms=3, color="tab:gray")
            ax.plot(traj[-1, 0], traj[-1, 1], "x", ms=4, color="tab:red")
        ax.plot([0, 1], [0, 1], "--", color="k", lw=0.6)
        ax.set(xlim=(0, 1), ylim=(0, 1), title=METHODS[m][0], xlabel="q_0 (Male)")
        ax.title.set_fontsize(8)
    axes[0][0].set_ylabel("q_1 (Female)")
    fig.tight_layout()
    fig.savefig(out / f"{name}.png", dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20000, help="training env steps per run")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    p.add_argument("--env", default="adult", choices=list(ENVS))
    p.add_argument("--loss", default="zero_one")
    p.add_argument("--disparity", default="eop")
    p.add_argument(
        "--threshold-range",
        type=float,
        nargs=2,
        default=None,
        help="Gaussian feature range of the thresholds (synthetic env; default (-4, 4))",
    )
    p.add_argument("--num-cpus", type=int, default=2)
    p.add_argument("--out", default="docs/results")
    p.add_argument("--name", default="yin2023", help="basename of the .csv, .md and .png")
    args = p.parse_args()
    task = {"loss": args.loss, "disparity": args.disparity, "max_steps": ENVS[args.env][2]}
    if args.threshold_range is not None:
        task["threshold_range"] = list(args.threshold_range)
    calls = [
        (m, s if m in LEARNED else 0, args.steps, task, args.env)
        for m in args.methods
        for s in (args.seeds if m in LEARNED else [0])
    ]
    rows = run_as_tasks(run_one, calls, args.num_cpus)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plot(rows, out, args.name)
    flat = [{k: v for k, v in r.items() if k != "trajectories"} for r in rows]
    write_csv(flat, out / f"{args.name}.csv")
    command = "python scripts/reproduce_yin2023.py " + " ".join(sys.argv[1:])
    print(write_table(rows, out, command, task, args.name, ENVS[args.env][0]))


if __name__ == "__main__":
    main()
