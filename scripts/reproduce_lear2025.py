"""Reproduces the comparison of Lear & Zhang (ICLR 2025), Figs. 3-6, at a chosen budget.

Five methods (PPO-KL = the paper's "PPO", A-PPO, F-PPO-L, PPO-C, PPO-Cb; optionally PPO-Cb
with a larger beta_Lambda) on ``fair/LendingDrift-v0`` Settings 1-3. Each run trains with
the fast tuned-example settings (one 500-step episode per iteration, 10 epochs x 10
minibatches of 50; lr and network from the command line), logs the per-iteration
episode decomposition (reference estimator, what Fig. 5 plots) and the learner's Lambda
and DPE_step (Fig. 6), then evaluates the final policy on ``--eval-episodes`` fresh
500-step episodes with sampled actions (the authors' evaluation samples too): profit(500)
(Fig. 3), |G0 - G1|(500)
(Fig. 4) and Lambda over the evaluation steps. Writes ``lear2025.md``, ``lear2025.csv``
and ``lear2025_fig{3_4,5,6}.png`` under ``--out``.

    python scripts/reproduce_lear2025.py --seeds 1 --steps 30000
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

ROOT = Path(__file__).resolve().parents[1]
BETA_C = {1: 0.65, 2: 0.75, 3: 0.75}
PPO_SETTINGS = {  # what PPOCConfig sets itself (the authors' settings), for A-PPO, F-PPO-L
    "vf_loss_coeff": 0.5,
    "vf_clip_param": 1e9,
    "grad_clip": 0.5,
    "grad_clip_by": "global_norm",
    "entropy_coeff": 0.0,
}
METHODS = {
    "PPO-KL": ("PPOKL", lambda s: {}),
    "A-PPO": (
        "POCAR",
        lambda s: (
            {"beta_1": 0.25, "beta_2": 0.25, "omega": 0.005, "use_kl_loss": False} | PPO_SETTINGS
        ),
    ),
    "F-PPO-L": ("FPPOL", lambda s: dict(PPO_SETTINGS)),
    "PPO-C": ("PPOC", lambda s: {"beta_c": BETA_C[s]}),
    "PPO-Cb": ("PPOCb", lambda s: {"beta_c": BETA_C[s], "beta_lambda": 1.0}),
    "PPO-Cb (bL=10)": ("PPOCb", lambda s: {"beta_c": BETA_C[s], "beta_lambda": 10.0}),
}


def build(method: str, setting: int, seed: int, args):
    """The algorithm of one cell, built (0 remote env runners)."""
    from rllib_fair.algorithms import get_config_class

    name, extra = METHODS[method]
    cfg = (
        get_config_class(name)()
        .environment(
            "fair/LendingDrift-v0",
            env_config={"setting": setting, "max_steps": 500, "time_limit_terminates": True},
        )
        .env_runners(num_env_runners=0, batch_mode="complete_episodes")
        .fairness(notion="equal_opportunity", disparity_window=301)
        .training(
            lr=args.lr,
            gamma=0.99,
            lambda_=0.95,
            clip_param=0.2,
            train_batch_size_per_learner=500,
            minibatch_size=50,
            num_epochs=10,
            **extra(setting),
        )
        .rl_module(
            model_config={
                "fcnet_hiddens": list(args.hidden),
                "fcnet_activation": "relu",
                "fcnet_kernel_initializer": "orthogonal_",
                "fcnet_kernel_initializer_kwargs": {"gain": 2**0.5},
                "head_fcnet_kernel_initializer": "orthogonal_",
                "head_fcnet_kernel_initializer_kwargs": {"gain": 0.01},
            }
        )
        .debugging(seed=seed, log_level="ERROR")
    )
    return cfg.build_algo()


def evaluate(algo, setting: int, seed: int, episodes: int) -> dict:
    """Sampled-action evaluation of the final policy on fresh 500-step episodes."""
    import torch

    from rllib_fair.envs.lending_drift import LendingDriftEnv
    from rllib_fair.fairness.qualification import benefit_fairness_lambda

    module = algo.get_module("default_policy")
    env = LendingDriftEnv(setting=setting, max_steps=500)
    rng = np.random.default_rng(10_000 + seed)
    profit, gap, lam, g0s, g1s = [], [], [], [], []
    for _ in range(episodes):
        obs, _ = env.reset(seed=int(rng.integers(2**31)))
        G = np.zeros(2)
        ps, groups, bens = [], [], []
        done = False
        while not done:
            with torch.no_grad():
                logits = module.forward_inference({"obs": torch.as_tensor(obs[None])})[
                    "action_dist_inputs"
                ][0]
            p1 = float(torch.softmax(logits, -1)[1])
            a = int(rng.random() < p1)
            obs, _, term, trunc, info = env.step(a)
            G[info["group"]] += info["qual_gain"]
            ps.append(p1)
            groups.append(info["group"])
            bens.append(info["benefit"])
            done = term or trunc
        profit.append(env.cash - env.starting_cash)
        gap.append(abs(G[0] - G[1]))
        g0s.append(G[0])
        g1s.append(G[1])
        ps, groups, bens = np.array(ps), np.array(groups), np.array(bens)
        lam.append(
            benefit_fairness_lambda(
                ps[groups == 0], ps[groups == 1], bens[groups == 0], bens[groups == 1]
            )
        )
    return {
        "profit500": profit,
        "gap500": gap,
        "G0": g0s,
        "G1": g1s,
        "lambda_eval": lam,
    }


def run_cell(method, setting, seed, args) -> dict:
    """Trains one cell; returns its training curves and evaluation."""
    from rllib_fair.cli.runner import flatten

    algo = build(method, setting, seed, args)
    curves: dict[str, list] = {
        k: [] for k in ("c_pi", "dpe", "ipe", "spe", "lambda", "dpe_step", "ret", "gap")
    }
    t0 = time.time()
    try:
        while True:
            flat = flatten(algo.train())
            qg = "fairness/qualification_gain/reference/"
            for k in ("c_pi", "dpe", "ipe", "spe"):
                curves[k].append(flat.get(qg + k, np.nan))
            curves["gap"].append(flat.get("fairness/qualification_gain/gain_gap_abs", np.nan))
            curves["ret"].append(flat.get("env_runners/episode_return_mean", np.nan))
            curves["lambda"].append(flat.get("learners/default_policy/ppoc/lambda", np.nan))
            curves["dpe_step"].append(flat.get("learners/default_policy/ppoc/dpe_step", np.nan))
            if flat["num_env_steps_sampled_lifetime"] >= args.steps:
                break
        ev = evaluate(algo, setting, seed, args.eval_episodes)
    finally:
        algo.stop()
    return {"curves": curves, "eval": ev, "wall_s": time.time() - t0}


def rolling(x, n=20):
    x = np.asarray(x, dtype=float)
    return np.array([np.nanmean(x[max(0, i - n + 1) : i + 1]) for i in range(len(x))])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--settings", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--large-lambda-settings", type=int, nargs="*", default=[1, 2])
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--steps", type=int, default=30_000)
    p.add_argument("--eval-episodes", type=int, default=5)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--hidden", type=int, nargs="+", default=[64, 64])
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    p.add_argument("--raw", type=Path, default=None, help="json of all runs (default: --out)")
    args = p.parse_args(argv)

    import ray
    import torch

    torch.set_num_threads(1)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    args.out.mkdir(parents=True, exist_ok=True)
    raw_path = args.raw or args.out / "lear2025_runs.json"
    runs = json.loads(raw_path.read_text()) if raw_path.exists() else {}
    for setting in args.settings:
        for method in args.methods:
            if method == "PPO-Cb (bL=10)" and setting not in args.large_lambda_settings:
                continue
            for seed in range(args.seeds):
                key = f"{setting}|{method}|{seed}"
                if key in runs:
                    continue
                res = run_cell(method, setting, seed, args)
                runs[key] = res
                raw_path.write_text(json.dumps(runs))
                ev = res["eval"]
                print(
                    f"S{setting} {method:<15} seed {seed}: profit(500) "
                    f"{np.mean(ev['profit500']):7.2f} |G0-G1|(500) {np.mean(ev['gap500']):6.2f} "
                    f"Lambda {np.mean(ev['lambda_eval']):.5f} ({res['wall_s']:.0f} s)",
                    flush=True,
                )
    write_outputs(runs, args)
    ray.shutdown()
    return 0


def write_outputs(runs: dict, args) -> None:
    """Markdown table, csv and the figures from the runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells: dict = {}
    for key, res in runs.items():
        setting, method, _ = key.split("|")
        cells.setdefault((int(setting), method), []).append(res)
    rows = []
    for (setting, method), rs in sorted(cells.items(), key=lambda kv: (kv[0][0], _order(kv[0][1]))):
        ev = {k: np.concatenate([r["eval"][k] for r in rs]) for k in rs[0]["eval"]}
        last = {
            k: np.array([rolling(r["curves"][k])[-1] for r in rs])
            for k in ("c_pi", "dpe", "ipe", "spe", "lambda", "gap", "ret")
        }
        rows.append(
            {
                "setting": setting,
                "method": method,
                "seeds": len(rs),
                "profit500": _ms(ev["profit500"]),
                "gap500": _ms(ev["gap500"]),
                "G0": _ms(ev["G0"]),
                "G1": _ms(ev["G1"]),
                "lambda_eval": _ms(ev["lambda_eval"], 5),
                "train_gap_roll20": _ms(last["gap"]),
                "C_roll20": _ms(last["c_pi"], 3),
                "DPE_roll20": _ms(last["dpe"], 3),
                "IPE_roll20": _ms(last["ipe"], 3),
                "SPE_roll20": _ms(last["spe"], 3),
                "lambda_train_roll20": _ms(last["lambda"], 5),
            }
        )
    with open(args.out / "lear2025.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    cols = list(rows[0])
    md = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    md += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    (args.out / "lear2025_table.md").write_text("\n".join(md) + "\n")

    settings = sorted({s for s, _ in cells})
    fig, axes = plt.subplots(2, len(settings), figsize=(4.5 * len(settings), 6), squeeze=False)
    for j, s in enumerate(settings):
        methods = sorted([m for ss, m in cells if ss == s], key=_order)
        for i, (k, label) in enumerate((("profit500", "profit(500)"), ("gap500", "|G0-G1|(500)"))):
            vals = [np.concatenate([r["eval"][k] for r in cells[(s, m)]]) for m in methods]
            axes[i, j].bar(range(len(methods)), [v.mean() for v in vals],
                           yerr=[v.std() for v in vals], capsize=3)  # fmt: skip
            axes[i, j].set_xticks(range(len(methods)), methods, rotation=45, ha="right", fontsize=7)
            axes[i, j].set_title(f"Setting {s}: {label}", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.out / "lear2025_fig3_4.png", dpi=110)
    plt.close(fig)

    fig5 = (("dpe", "|DPE|"), ("ipe", "IPE"), ("spe", "SPE"), ("c_pi", "C"))
    fig6 = (("lambda", "Lambda"), ("dpe_step", "|DPE_step|"))
    for fig_name, keys_, methods_ in (
        ("fig5", fig5, ("PPO-C", "PPO-Cb")),
        ("fig6", fig6, ("PPO-C", "PPO-Cb", "PPO-Cb (bL=10)")),
    ):
        fig, axes = plt.subplots(
            len(methods_), len(settings), figsize=(4.5 * len(settings), 3 * len(methods_)),
            squeeze=False,
        )  # fmt: skip
        for j, s in enumerate(settings):
            for i, m in enumerate(methods_):
                ax = axes[i, j]
                if (s, m) not in cells:
                    ax.axis("off")
                    continue
                for k, label in keys_:
                    curves = np.array(
                        [
                            rolling(
                                np.abs(r["curves"][k])
                                if k in ("dpe", "dpe_step")
                                else r["curves"][k]
                            )
                            for r in cells[(s, m)]
                        ]
                    )  # noqa: E501
                    ax.plot(curves.mean(axis=0), label=label)
                ax.set_title(f"Setting {s}: {m}", fontsize=9)
                ax.set_xlabel("training iteration (episode)", fontsize=8)
                ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.out / f"lear2025_{fig_name}.png", dpi=110)
        plt.close(fig)


def _order(method: str) -> int:
    return list(METHODS).index(method) if method in METHODS else 99


def _ms(x, d=2) -> str:
    """Mean ± std over the finite values; "-" where a method does not log the quantity."""
    x = np.asarray(x, dtype=float)
    if not np.isfinite(x).any():
        return "-"
    if x.size > 1:
        return f"{np.nanmean(x):.{d}f} ± {np.nanstd(x):.{d}f}"
    return f"{np.nanmean(x):.{d}f}"


if __name__ == "__main__":
    raise SystemExit(main())
