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

``--lucbfair-figs`` instead runs L-UCBFair's own figures on the synthetic population
(Figs. 2 (a), 3 and the L-UCBFair panel of Fig. 1; tp loss, squared DP, H = 100,
``threshold_range (-3, 3)``) with the numpy core (no Ray): ``--episodes`` training
episodes (episode ``k`` resets with ``seed=k``, action draws from ``--seeds[0]``), then
greedy rollouts of the final plan and of Myopic-Fair from the 16 initial states. Outputs
``<name>_fig2a.png``, ``<name>_fig3.png``, ``<name>_fig1.png``, ``<name>_figs.csv``
(one row per training episode) and ``<name>_figs.md`` (numbers and the claims).

``--lucbfair-binding`` runs the setting where L-UCBFair's constraint binds
(:mod:`rllib_fair.algorithms.lucbfair.binding`; numpy core, no Ray): per seed L-UCBFair,
the same run with ``xi = 0`` and uniform random thresholds, over the last ``--last``
of ``--episodes`` training episodes. Outputs ``<name>.csv`` (one row per seed) and
``<name>.md`` (mean +- 95% CI over seeds, and the rows).

Usage::

    python scripts/reproduce_yin2023.py --steps 20000 --seeds 0 1 --out docs/results
    python scripts/reproduce_yin2023.py --lucbfair-figs --episodes 500 --seeds 0 \
        --name lucbfair --out docs/results
    python scripts/reproduce_yin2023.py --lucbfair-binding --episodes 150 --last 30 \
        --seeds 0 1 2 3 4 5 6 7 --name lucbfair_binding_k150 --out docs/results
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
            "the reconstructed dynamics cannot show it: docs/methods/yin2023.md)."
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


# ------------------------------------------------------------ L-UCBFair's own figures
#: The documented L-UCBFair setting (docs/results/lucbfair.md): the Fig. 2 (a) / Fig. 3 task.
LUCB_TASK = {"loss": "tp", "disparity": "dp", "max_steps": 100, "threshold_range": (-3.0, 3.0)}
#: Initial states drawn in Fig. 2 (a): the corners of the 16-state grid and its centre.
FIG2A_STATES = ((0.2, 0.2), (0.2, 0.8), (0.8, 0.2), (0.8, 0.8), (0.5, 0.5))
#: Fig. 3's sliding window, in episodes (the caption says "20-step"; docs/methods/yin2023.md).
WINDOW = 20
#: Myopic-Fair (Eq. 7b) as in docs/results/lucbfair.md: lambda 0.5, lattice 41, 30 steps.
MYOPIC_FAIR = {"lam": 0.5, "grid": 41, "iters": 30}


def lucbfair_settings(episodes: int):
    """``LUCBFairConfig().settings()`` of the tuned example for ``K = episodes``, without Ray.

    Package defaults (``rllib_fair/algorithms/lucbfair/README.md``): ridge 0.01,
    beta = 0.1 H, xi = 20, b = 0.9 H, alpha = log(M) K / (2 (1 + xi + H)) (Thm 3.3),
    eta = xi / sqrt(K H^2); ``tests/algorithms/test_lucbfair_rllib.py::test_theory_defaults``
    pins the same values on the RLlib config.
    """
    from rllib_fair.algorithms.lucbfair import lsvi
    from rllib_fair.algorithms.lucbfair.core import Settings
    from rllib_fair.algorithms.lucbfair.features import region_grid

    H, xi = LUCB_TASK["max_steps"], 20.0
    return Settings(
        horizon=H,
        ridge=0.01,
        beta=0.1 * H,
        alpha=lsvi.default_alpha(len(region_grid(0.1)[0]), episodes, xi, H),
        xi=xi,
        eta=lsvi.default_eta(xi, episodes, H),
        threshold=0.9 * H,
    )


def train_lucbfair(episodes: int, seed: int):
    """Algorithm 1 for ``episodes`` episodes with the numpy core; one row per episode."""
    from rllib_fair.algorithms.lucbfair.core import LUCBFairCore, run_episode
    from rllib_fair.algorithms.lucbfair.features import make_feature_map
    from rllib_fair.envs.replicator import ReplicatorEnv

    env = ReplicatorEnv(**LUCB_TASK)
    core = LUCBFairCore(lucbfair_settings(episodes), make_feature_map("rbf"))
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(episodes):
        # plan (done after the previous episode) -> act H steps -> dual step (line 145)
        metrics, ep = run_episode(env, core, rng, seed=k)
        rows.append(
            {
                "episode": k,
                "loss": float(ep["loss"].mean()),
                "disparity": float(ep["disparity"].mean()),
                "q0_first": float(ep["q"][0, 0]),
                "q1_first": float(ep["q"][0, 1]),
                "q_final_mean": float(ep["q"][-1].mean()),
                "return_r": float(ep["r"].sum()),
                "return_g": float(ep["g"].sum()),
                "Y_used": metrics["Y_used"],
                "V_g1": metrics["V_g1"],
            }
        )
    return core, rows


def eval_policies(core, seed: int):
    """The policies rolled out after training, each ``act(obs) -> thresholds``.

    ``lucbfair``: greedy (argmax region centre of the final plan, the RLlib module's
    inference); ``lucbfair_sampled``: Algorithm 1's own policy ``pi^K`` (region
    ``i ~ softmax``, ``a ~ Uniform(region i)``, line 141; seeded draws); ``myopic_fair``:
    Eq. 7b; ``uniform``: uniform random thresholds (a reference, not in the paper).
    """
    from rllib_fair.algorithms.lucbfair.core import act
    from rllib_fair.envs.replicator import ReplicatorEnv
    from rllib_fair.envs.replicator_myopic import myopic_action

    env = ReplicatorEnv(**LUCB_TASK, include_time=True)  # obs = (q_0, q_1, j / H)
    state, H = core.module_state(), core.settings.horizon
    rngs = {"greedy": np.random.default_rng(seed)}  # inference draws nothing

    def lucb(explore: bool, rng):
        def pol(obs):
            h = np.array([int(round(float(obs[-1]) * H))])  # obs[-1] = j / H: 0-based decision
            q = env.q_from_observation(obs)
            c, hw, clip = core.centres, core.half_width, core.settings.q_clip
            return act(state, core.features, c, hw, q, h, rng, explore=explore, q_clip=clip)[0]

        return pol

    def myopic(obs):
        return myopic_action(env, "myopic_fair", q=env.q_from_observation(obs), **MYOPIC_FAIR)

    uniform_rng = np.random.default_rng([seed, 1])
    return env, {
        "myopic_fair": myopic,
        "lucbfair": lucb(False, rngs["greedy"]),
        "lucbfair_sampled": lucb(True, np.random.default_rng([seed, 2])),
        "uniform": lambda obs: uniform_rng.random(2),
    }


LABELS = {
    "myopic_fair": "Myopic-Fair (Eq. 7b)",
    "lucbfair": "L-UCBFair, greedy",
    "lucbfair_sampled": "L-UCBFair, pi^K (sampled)",
    "uniform": "uniform random thresholds",
}


def plan_saturation(core, states) -> tuple[float, float]:
    """Share of ``(state, h, region)`` whose planned ``Q_r`` sits at its clip ``H - h``, and
    the mean largest region probability (1 / M = uniform) of the final plan."""
    from rllib_fair.algorithms.lucbfair import lsvi

    phi = core.features.all_regions(np.asarray(states, dtype=np.float64), core.centres)
    at_clip, pmax = [], []
    for h in range(core.settings.horizon):
        probs, q_r, *_ = lsvi.step_values(core.plan, h, phi, **core.kwargs())
        upper = lsvi.q_upper(h, core.settings.horizon, core.settings.q_clip)
        at_clip.append(float((q_r >= upper - 1e-9).mean()))
        pmax.append(float(probs.max(axis=-1).mean()))
    return float(np.mean(at_clip)), float(np.mean(pmax))


def _sliding(x, n: int = WINDOW) -> np.ndarray:
    return np.convolve(np.asarray(x, dtype=np.float64), np.ones(n) / n, mode="valid")


def plot_lucbfair(rows, evals, out: Path, name: str) -> list[str]:
    """Fig. 2 (a), Fig. 3 and Fig. 1's L-UCBFair panels (next to Myopic-Fair's)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = ("myopic_fair", "lucbfair", "lucbfair_sampled")
    files = []
    # Fig. 2 (a1-a3): q_k(t) from several initial states, and the per-step loss
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.5))
    colours = plt.cm.viridis(np.linspace(0.0, 0.9, len(FIG2A_STATES)))
    for ax, m in zip(axes[:3], shown):
        for traj, col, s0 in zip(evals[m]["fig2a"]["q"], colours, FIG2A_STATES):
            ax.plot(traj[:, 0], color=col, lw=1.2, label=f"q(0) = {s0}")
            ax.plot(traj[:, 1], color=col, lw=1.2, ls="--")
        ax.set(ylim=(-0.02, 1.02), xlabel="step t", ylabel="q_k (solid k = 0, dashed k = 1)")
        ax.set_title(LABELS[m], fontsize=9)
    axes[0].legend(fontsize=6, loc="center right")
    for m in shown:
        axes[3].plot(evals[m]["fig2a"]["loss"].mean(axis=0), label=LABELS[m])
    axes[3].set(xlabel="step t", ylabel="loss 1 - tp (mean over the states)")
    axes[3].set_title("(a3) per-step loss", fontsize=9)
    axes[3].legend(fontsize=7)
    fig.suptitle("Fig. 2 (a): synthetic population, tp loss, DP, H = 100", fontsize=10)
    fig.tight_layout()
    files.append(f"{name}_fig2a.png")
    fig.savefig(out / files[-1], dpi=110)
    plt.close(fig)
    # Fig. 3: 20-episode sliding means of the episode loss and disparity
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for ax, key, lab in zip(axes, ("loss", "disparity"), ("loss 1 - tp", "squared DP")):
        x = np.array([r[key] for r in rows])
        ax.plot(x, ".", ms=2, color="0.7", label="episode mean")
        ax.plot(np.arange(WINDOW - 1, len(x)), _sliding(x), color="tab:blue", label="20-ep mean")
        ax.set(xlabel="training episode", ylabel=f"mean per-step {lab}")
        ax.legend(fontsize=7)
    fig.suptitle("Fig. 3: L-UCBFair, 20-episode sliding means", fontsize=10)
    fig.tight_layout()
    files.append(f"{name}_fig3.png")
    fig.savefig(out / files[-1], dpi=110)
    plt.close(fig)
    # Fig. 1: phase portraits from the 16 initial states; dots coloured by the step's DP
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.8), layout="constrained")
    vmax = max(float(evals[m]["grid"]["disparity"].max()) for m in shown) or 1.0
    for ax, m in zip(axes, shown):
        ev = evals[m]["grid"]
        for traj, disp in zip(ev["q"], ev["disparity"]):
            ax.plot(traj[:, 0], traj[:, 1], lw=0.7, color="tab:blue")
            sc = ax.scatter(traj[1:, 0], traj[1:, 1], c=disp, cmap="Reds", s=5, vmin=0, vmax=vmax)
            ax.plot(traj[0, 0], traj[0, 1], "o", ms=3, color="tab:gray")
            ax.plot(traj[-1, 0], traj[-1, 1], "x", ms=5, color="k")
        ax.plot([0, 1], [0, 1], "--", color="k", lw=0.6)
        ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), xlabel="q_0")
        ax.set_title(LABELS[m], fontsize=9)
    axes[0].set_ylabel("q_1")
    fig.colorbar(sc, ax=axes, label="per-step squared DP", shrink=0.8)
    fig.suptitle("Fig. 1 (a) / (c) analogue on the synthetic population", fontsize=10)
    files.append(f"{name}_fig1.png")
    fig.savefig(out / files[-1], dpi=110)
    plt.close(fig)
    return files


def _stats(ev: dict) -> dict:
    fin = ev["q"][:, -1]
    return {
        "final_q_mean": float(fin.mean()),
        "final_q_min": float(fin.min()),
        "final_gap": float(np.abs(fin[:, 0] - fin[:, 1]).mean()),
        "loss": float(ev["loss"].mean()),
        "loss_first10": float(ev["loss"][:, :10].mean()),
        "disparity": float(ev["disparity"].mean()),
        "return_tp": float((1.0 - ev["loss"]).sum(axis=1).mean()),
    }


def lucbfair_figures(episodes: int, seed: int, out: Path, name: str, command: str) -> str:
    """Trains, evaluates, plots and writes ``<name>_figs.md``; returns the markdown."""
    from rllib_fair.algorithms.rtd3.evaluation import GRID_STATES, rollouts

    t0 = time.time()
    core, rows = train_lucbfair(episodes, seed)
    t_train = time.time() - t0
    env, pols = eval_policies(core, seed)
    last = rows[-min(50, len(rows)) :]
    last_states = [(r["q0_first"], r["q1_first"]) for r in last]
    evals = {
        m: {"grid": rollouts(env, pol, GRID_STATES), "fig2a": rollouts(env, pol, FIG2A_STATES)}
        for m, pol in pols.items()
    }
    ml = _stats(rollouts(env, pols["myopic_fair"], last_states))
    ul = _stats(rollouts(env, pols["uniform"], last_states))
    files = plot_lucbfair(rows, evals, out, name)
    write_csv(rows, out / f"{name}_figs.csv")
    sat, pmax = plan_saturation(core, GRID_STATES)
    seconds = time.time() - t0

    g = {m: _stats(evals[m]["grid"]) for m in pols}
    a = {m: _stats(evals[m]["fig2a"]) for m in pols}
    lq = float(np.mean([r["q_final_mean"] for r in last]))
    ll = float(np.mean([r["loss"] for r in last]))
    ld = float(np.mean([r["disparity"] for r in last]))
    wl, wd = _sliding([r["loss"] for r in rows]), _sliding([r["disparity"] for r in rows])
    ys = np.array([r["Y_used"] for r in rows] + [core.dual])
    vg = np.array([r["V_g1"] for r in rows])
    s = core.settings

    def verdict(ok: bool) -> str:
        return "**reproduced**" if ok else "**not reproduced**"

    def both(key: str, ok) -> str:
        return (
            f"greedy {verdict(ok(a['lucbfair'] if key == 'a' else g['lucbfair']))}, pi^K "
            f"{verdict(ok(a['lucbfair_sampled'] if key == 'a' else g['lucbfair_sampled']))}"
        )

    lg, lsm, my = g["lucbfair"], g["lucbfair_sampled"], g["myopic_fair"]
    al, asm, am = a["lucbfair"], a["lucbfair_sampled"], a["myopic_fair"]
    claims = [
        f"Fig. 2 (a1): the myopic baseline drives qualification to 0: "
        f"{verdict(am['final_q_mean'] < 0.05)} (Myopic-Fair's final mean q "
        f"{am['final_q_mean']:.4f} from the {len(FIG2A_STATES)} states of the figure, "
        f"{my['final_q_mean']:.4f} from the 16).",
        f"Fig. 2 (a2): L-UCBFair drives qualification to 1 (every final q_k > 0.9): "
        f"{both('a', lambda x: x['final_q_min'] > 0.9)} (final q_k mean / min: greedy "
        f"{al['final_q_mean']:.3f} / {al['final_q_min']:.3f}, pi^K {asm['final_q_mean']:.3f}"
        f" / {asm['final_q_min']:.3f}); to high qualification, far above Myopic-Fair "
        f"(mean > Myopic-Fair's + 0.3): "
        f"{both('a', lambda x: x['final_q_mean'] > am['final_q_mean'] + 0.3)}.",
        f"Fig. 2 (a3): L-UCBFair gives up immediate tp (higher loss over the first 10 steps "
        f"than Myopic-Fair's {am['loss_first10']:.3f}): "
        f"{both('a', lambda x: x['loss_first10'] > am['loss_first10'])} (greedy "
        f"{al['loss_first10']:.3f}, pi^K {asm['loss_first10']:.3f}); for a lower loss over "
        f"the episode (Myopic-Fair {am['loss']:.3f}): "
        f"{both('a', lambda x: x['loss'] < am['loss'])} (greedy {al['loss']:.3f}, pi^K "
        f"{asm['loss']:.3f}).",
        f"Fig. 3: the {WINDOW}-episode sliding means of the loss and of the disparity both "
        f"decrease (first vs last window): {verdict(wl[-1] < wl[0])} / "
        f"{verdict(wd[-1] < wd[0])} (loss {wl[0]:.3f} -> {wl[-1]:.3f}, min {wl.min():.3f}; "
        f"disparity {wd[0]:.4f} -> {wd[-1]:.4f}, min {wd.min():.4f}).",
        f"Fig. 1 (c): L-UCBFair drives universally high qualification rates from the 16 "
        f"initial states (every final q_k >= 0.5): "
        f"{both('g', lambda x: x['final_q_min'] >= 0.5)} (final q_k mean / min: greedy "
        f"{lg['final_q_mean']:.3f} / {lg['final_q_min']:.3f}, pi^K "
        f"{lsm['final_q_mean']:.3f} / {lsm['final_q_min']:.3f}; the paper's panel is on the "
        "Adult population).",
        f"Fig. 1 (e): RL has a lower mean episode loss than the baseline (16 states, "
        f"Myopic-Fair {my['loss']:.3f}): {both('g', lambda x: x['loss'] < my['loss'])} "
        f"(greedy {lg['loss']:.3f}, pi^K {lsm['loss']:.3f}).",
        f"Fig. 1 (a): the myopic baseline drives disparate qualification rates: "
        f"{verdict(my['final_gap'] > 0.2)} (final abs(q0 - q1) {my['final_gap']:.4f}; the "
        "reconstructed dynamics cannot show it: docs/methods/yin2023.md).",
        f"Pass criteria (last {len(last)} training episodes vs Myopic-Fair from the "
        f"same initial states): final mean q {lq:.3f} > {ml['final_q_mean']:.4f} + 0.3: "
        f"{'met' if lq > ml['final_q_mean'] + 0.3 else 'not met'}; mean episode loss "
        f"{ll:.3f} < {ml['loss']:.3f}: {'met' if ll < ml['loss'] else 'not met'}. Uniform "
        f"random thresholds from the same states: final mean q {ul['final_q_mean']:.3f}, "
        f"loss {ul['loss']:.3f}, squared DP {ul['disparity']:.4f}.",
    ]
    head = (
        "| policy (16 initial states) | final mean q | min final q_k | final abs(q0 - q1) | "
        "mean step loss | loss, first 10 steps | mean step squared DP | return (sum tp) |"
    )
    table = [head, "|---|---|---|---|---|---|---|---|"]
    for m, x in g.items():
        table.append(
            f"| {LABELS[m]} | {x['final_q_mean']:.3f} | {x['final_q_min']:.3f} | "
            f"{x['final_gap']:.4f} | {x['loss']:.3f} | {x['loss_first10']:.3f} | "
            f"{x['disparity']:.4f} | {x['return_tp']:.1f} |"
        )
    windows = ["| episodes | loss | disparity |", "|---|---|---|"]
    step = max(WINDOW, len(rows) // 10)
    for start in [*range(0, len(rows) - WINDOW + 1, step), len(rows) - WINDOW]:
        windows.append(f"| {start}-{start + WINDOW - 1} | {wl[start]:.3f} | {wd[start]:.4f} |")
    lines = [
        "# L-UCBFair (Yin et al. 2023): Figs. 2 (a), 3 and the L-UCBFair panel of Fig. 1",
        "",
        f"Command: `{command}`",
        "",
        f"Task: `fair/Replicator-v0`, loss 1 - tp, squared DP, H = {s.horizon}, "
        "`threshold_range (-3, 3)` (the setting of `lucbfair.md`). L-UCBFair with the numpy "
        "core (`rllib_fair/algorithms/lucbfair/core.py`, whose plans equal the RLlib path's), "
        f"package defaults: rbf features (d = 32), ridge {s.ridge}, beta {s.beta:g}, xi "
        f"{s.xi:g}, b {s.threshold:g}, alpha {s.alpha:.3f}, eta {s.eta:.4f}; K = {episodes} "
        f"training episodes (episode k resets with `seed=k`, action draws from seed {seed}). "
        "The final plan is then rolled out from the 16 initial states {0.2, 0.4, 0.6, 0.8}^2 "
        "greedily (argmax region centre, the RLlib module's inference) and as Algorithm 1's "
        "own stochastic policy pi^K (softmax over regions, uniform point in the region; "
        "seeded). Myopic-Fair: Eq. 7b, lambda 0.5 (`myopic_action`, lattice 41, 30 gradient "
        f"steps). Wall time {seconds:.0f} s (training {t_train:.0f} s) on one core of a "
        "shared 2-core machine.",
        "",
        f"Figures: `{files[0]}` (Fig. 2 (a1)-(a3): q_k(t) from the initial states "
        f"{list(FIG2A_STATES)} and the per-step loss), `{files[1]}` (Fig. 3), `{files[2]}` "
        "(Fig. 1's L-UCBFair panel, greedy and pi^K, next to Myopic-Fair's; dots coloured "
        f"by the step's squared DP); per-episode training curve: `{name}_figs.csv`.",
        "",
        "## The paper's claims",
        "",
        *[f"- {c}" for c in claims],
        "",
        "## What the final plan is",
        "",
        f"At the final plan {100 * sat:.0f} % of (state, step, region) triples of the 16 "
        f"initial states have the planned Q_r at its clip H - h, and the largest region "
        f"probability is {pmax:.3f} on average (uniform: {1 / len(core.centres):.3f}). "
        + (
            "The optimistic bonus (beta = 0.1 H) saturates every Q at its clip, so the "
            "softmax policy pi^K is uniform over the regions (uniform random thresholds) "
            "and the greedy argmax falls on the first region (the lowest thresholds, "
            "accept-all), which collapses qualification like the myopic baseline."
            if sat > 0.95
            else "The plan is not saturated."
        ),
        "",
        "## Evaluation from the 16 initial states",
        "",
        *table,
        "",
        f"Last {len(last)} training episodes (exploring policy): final mean q {lq:.3f}, mean "
        f"step loss {ll:.3f}, squared DP {ld:.4f}. From their initial states: Myopic-Fair "
        f"{ml['final_q_mean']:.4f}, {ml['loss']:.3f}, {ml['disparity']:.6f}; uniform random "
        f"thresholds {ul['final_q_mean']:.3f}, {ul['loss']:.3f}, {ul['disparity']:.4f}.",
        "",
        f"## Fig. 3: {WINDOW}-episode sliding means",
        "",
        *windows,
        "",
        "## The dual variable",
        "",
        f"Y over the run: max {ys.max():.4f}, final {core.dual:.4f}, nonzero in "
        f"{int((ys > 0).sum())} of {len(ys)} episodes; planned V_g1: min {vg.min():.1f}, "
        f"mean {vg.mean():.1f} (b = {s.threshold:g}).",
    ]
    text = "\n".join(lines) + "\n"
    (out / f"{name}_figs.md").write_text(text)
    return text


#: Columns of the binding table: (label, compare() keys of L-UCBFair, xi = 0, uniform).
BINDING_COLUMNS = (
    ("squared DP per step", "disparity"),
    ("loss per step", "loss"),
    ("realised sum_h g_h", "return_g"),
)


def ci95(values) -> tuple[float, float]:
    """Mean and the half-width of its 95% t-interval over seeds (0 for one seed)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return float(v.mean()), 0.0
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return float(v.mean()), float(half)


def lucbfair_binding(
    episodes: int, last: int, seeds: list[int], out: Path, name: str, command: str
) -> str:
    """The binding-constraint comparison on every seed; writes ``<name>.csv`` / ``.md``."""
    from rllib_fair.algorithms.lucbfair.binding import BINDING, HORIZON, compare

    rows = []
    for seed in seeds:
        rows.append(compare(seed, episodes, last))
        print(f"seed {seed}: {rows[-1]['seconds']:.1f} s", flush=True)
    write_csv(rows, out / f"{name}.csv")

    def cell(key: str) -> str:
        m, h = ci95([r[key] for r in rows])
        return f"{m:.3f} +- {h:.3f}"

    b = BINDING
    lines = [
        f"# L-UCBFair where the constraint binds: K = {episodes}, last {last} episodes",
        "",
        f"Command: `{command}` (numpy core, no Ray; {sum(r['seconds'] for r in rows):.0f} s).",
        "",
        f"Setting: `fair/Replicator-v0` defaults (loss 1 - tp, squared DP, threshold range "
        f"(-4, 4)), H = {HORIZON}, learned feature map `replicator_features.npz`, ridge "
        f"{b['ridge']}, beta {b['beta']}, alpha {b['alpha']}, xi {b['xi']}, eta {b['eta']}, "
        f"b = {b['threshold']:g}. Seeds {', '.join(map(str, seeds))}: episode k of seed s "
        f"resets with `seed=1000 s + k`, actions draw from `default_rng(s)`; the xi = 0 run "
        f"uses the same seeds; uniform random thresholds (`default_rng([s, 1])`) start from "
        f"the initial states of the last {last} training episodes. Every number is a mean "
        f"over the last {last} episodes; the table gives mean +- 95% CI (t) over seeds.",
        "",
        "| quantity | L-UCBFair (xi = 2) | same run, xi = 0 | uniform random thresholds |",
        "|---|---|---|---|",
    ]
    for label, key in BINDING_COLUMNS:
        lines.append(
            f"| {label} | {cell(key + '_fair')} | {cell(key + '_free')} | "
            f"{cell(key + '_uniform')} |"
        )
    lines.append(
        f"| dual variable Y (mean; min over the last {last}) | {cell('Y_mean')}; "
        f"{cell('Y_min_last')} | 0 | - |"
    )
    lines += [
        "",
        "Per seed (L-UCBFair / xi = 0 / uniform):",
        "",
        "| seed | mean Y | min Y | max Y | squared DP | loss | sum g |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        trio = [
            " / ".join(f"{r[f'{k}_{n}']:.3f}" for n in ("fair", "free", "uniform"))
            for _, k in BINDING_COLUMNS
        ]
        lines.append(
            f"| {r['seed']} | {r['Y_mean']:.2f} | {r['Y_min_last']:.2f} | {r['Y_max']:.2f} | "
            + " | ".join(trio)
            + " |"
        )
    text = "\n".join(lines) + "\n"
    (out / f"{name}.md").write_text(text)
    return text


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
    p.add_argument(
        "--lucbfair-figs",
        action="store_true",
        help="L-UCBFair's Figs. 2 (a), 3 and 1 (synthetic, numpy core, no Ray) instead",
    )
    p.add_argument(
        "--lucbfair-binding",
        action="store_true",
        help="L-UCBFair where its constraint binds vs xi = 0 and uniform thresholds (numpy)",
    )
    p.add_argument(
        "--episodes", type=int, default=500, help="K for --lucbfair-figs / --lucbfair-binding"
    )
    p.add_argument("--last", type=int, default=30, help="final episodes for --lucbfair-binding")
    args = p.parse_args()
    if args.lucbfair_binding:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        command = "python scripts/reproduce_yin2023.py " + " ".join(sys.argv[1:])
        print(lucbfair_binding(args.episodes, args.last, args.seeds, out, args.name, command))
        return
    if args.lucbfair_figs:
        import torch

        torch.set_num_threads(1)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        command = "python scripts/reproduce_yin2023.py " + " ".join(sys.argv[1:])
        print(lucbfair_figures(args.episodes, args.seeds[0], out, args.name, command))
        return
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
