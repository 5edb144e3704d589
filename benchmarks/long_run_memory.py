"""Long runs with bounded memory: SELLF and ELBERT-PO for 100+ iterations each.

Each algorithm trains through the Algorithm API (``config.build_algo()``, then
``algo.train()`` in a loop) with one remote env runner; the learner runs in the
driver (``num_learners=0``). After every iteration the script records the resident
set size (RSS, ``/proc/<pid>/status``) of the driver and of every env-runner process
(pids from ``foreach_env_runner``), and what the run's bounded buffers hold:

* SELLF: the learner's memory of accepted samples (``memory_size`` rows at most; set
  smaller than the default 200,000 so it fills within the run) and its policy store
  (``policy_store_size`` snapshots, one per iteration);
* both: RLlib's episode windows (``metrics_num_episodes_for_smoothing`` episodes, on
  the runner and in the driver), full once every runner finished that many episodes;
  SELLF's disparity window (its last 4,000 decisions) fills within 4 iterations.

"Buffers full" is the first iteration at which all of them are full. From there on
memory should stay flat: the script fits a line to each process's RSS over the
iterations after that point and reports its slope in MB per 100 iterations, next to the
RSS at "buffers full" and at the end. The verdict is "flat" when every process's slope
is at most ``--threshold`` MB per 100 iterations (default 10: a leak of one
1,000-step train batch per iteration, about 0.1 MB, would cross it).

Writes the per-iteration series to ``benchmarks/results/long_run_memory.csv`` and a
summary to ``benchmarks/results/long_run_memory.md``. Linux only (reads ``/proc``).

Usage::

    python benchmarks/long_run_memory.py [--iterations 300] [--algos SELLF ELBERTPO]
        [--threshold 10] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import platform
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

HERE = Path(__file__).resolve().parent

#: Training settings shared by both algorithms (small batches: many iterations).
COMMON = {
    "train_batch_size_per_learner": 1000,
    "minibatch_size": 250,
    "num_epochs": 2,
}
#: Per algorithm: env, env settings and the algorithm's own settings.
SETTINGS = {
    "SELLF": {
        "env": "fair/LendingFICO-v0",
        "env_config": {"max_steps": 250},
        "training": {
            "memory_size": 10_000,  # default 200,000: fills here within ~20 iterations
            "policy_store_size": 20,  # default 500: one snapshot per iteration
            "policy_samples": 10,
            "predictor_steps": 25,
        },
    },
    "ELBERTPO": {
        "env": "fair/Lending-v0",
        "env_config": {"max_steps": 200},
        "training": {"alpha": 2000.0},
    },
}


def rss_mb(pid: int) -> float:
    """Resident set size of a process in MB (NaN once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return math.nan


def _pid(_runner=None) -> int:
    return os.getpid()


def build(algo: str, seed: int):
    from rllib_fair.algorithms import get_config_class

    s = SETTINGS[algo]
    cfg = (
        get_config_class(algo)()
        .environment(s["env"], env_config=dict(s["env_config"]))
        .env_runners(num_env_runners=1, num_cpus_per_env_runner=1)
        .training(**COMMON, **s["training"])
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .debugging(seed=seed)
    )
    return cfg, cfg.build_algo()


def buffers(algo_name: str, algo, cfg, result: dict) -> dict:
    """What the bounded buffers hold after this iteration, and whether all are full."""
    window = int(cfg.metrics_num_episodes_for_smoothing)
    runners = max(int(cfg.num_env_runners), 1)
    episodes = int(result.get("env_runners", {}).get("num_episodes_lifetime", 0) or 0)
    out = {"episodes": episodes}
    full = episodes >= window * runners
    if algo_name == "SELLF":
        sizes = [
            r.get() if hasattr(r, "get") else r
            for r in algo.learner_group.foreach_learner(
                lambda learner: (len(learner._memory.get("obs", ())), len(learner._store))
            )
        ]
        memory, store = sizes[0]
        out.update(memory=memory, store=store)
        full = full and memory >= cfg.memory_size and store >= cfg.policy_store_size
    out["full"] = full
    return out


def slope_per_100(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs, times 100 (NaN with fewer than 2 points)."""
    pts = [(x, y) for x, y in zip(xs, ys) if not math.isnan(y)]
    if len(pts) < 2:
        return math.nan
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    sxy = sum((x - mx) * (y - my) for x, y in pts)
    return 100.0 * sxy / sxx if sxx > 0 else math.nan


def run(algo_name: str, iterations: int, seed: int) -> tuple[list[dict], dict]:
    cfg, algo = build(algo_name, seed)
    driver = os.getpid()
    rows: list[dict] = []
    t0 = time.time()
    try:
        for it in range(1, iterations + 1):
            result = algo.train()
            pids = algo.env_runner_group.foreach_env_runner(_pid, local_env_runner=False)
            row = {
                "algo": algo_name,
                "iteration": it,
                "time_s": round(time.time() - t0, 2),
                "env_steps": int(result.get("num_env_steps_sampled_lifetime", 0)),
                "driver_rss_mb": round(rss_mb(driver), 2),
            }
            for i, pid in enumerate(pids, start=1):
                row[f"runner{i}_pid"] = pid
                row[f"runner{i}_rss_mb"] = round(rss_mb(pid), 2)
            row.update(buffers(algo_name, algo, cfg, result))
            rows.append(row)
            if it == 1 or it % 10 == 0 or it == iterations:
                runners = " ".join(
                    f"runner{i} {row[f'runner{i}_rss_mb']:.1f}" for i in range(1, len(pids) + 1)
                )
                print(
                    f"[{algo_name}] iter {it:4d} {row['time_s']:7.1f}s driver "
                    f"{row['driver_rss_mb']:.1f} MB, {runners} MB, buffers "
                    f"{'full' if row['full'] else 'filling'}"
                    + (
                        f" (memory {row['memory']}, store {row['store']})"
                        if "memory" in row
                        else ""
                    ),
                    flush=True,
                )
    finally:
        algo.stop()
    settings = {
        "env": SETTINGS[algo_name]["env"],
        "env_config": SETTINGS[algo_name]["env_config"],
        **COMMON,
        **SETTINGS[algo_name]["training"],
        "num_env_runners": 1,
        "num_learners": 0,
        "metrics_num_episodes_for_smoothing": int(cfg.metrics_num_episodes_for_smoothing),
        "seed": seed,
    }
    return rows, settings


def summarize(rows: list[dict], threshold: float) -> dict:
    """RSS at "buffers full", at the end, and the slope after full, per process."""
    full_at = next((r["iteration"] for r in rows if r["full"]), None)
    procs = ["driver"] + sorted(
        {
            k[: -len("_rss_mb")]
            for r in rows
            for k in r
            if k.startswith("runner") and k.endswith("_rss_mb")
        }
    )
    out = {"full_at": full_at, "iterations": rows[-1]["iteration"], "processes": {}}
    after = [r for r in rows if full_at is not None and r["iteration"] >= full_at]
    for p in procs:
        key = f"{p}_rss_mb"
        at_full = next((r[key] for r in rows if r["iteration"] == full_at), math.nan)
        slope = slope_per_100(
            [r["iteration"] for r in after], [r.get(key, math.nan) for r in after]
        )
        out["processes"][p] = {
            "start": rows[0].get(key, math.nan),
            "at_full": at_full,
            "end": rows[-1].get(key, math.nan),
            "max_after_full": max((r.get(key, math.nan) for r in after), default=math.nan),
            "slope": slope,
            "flat": (not math.isnan(slope)) and slope <= threshold,
        }
    out["flat"] = full_at is not None and all(v["flat"] for v in out["processes"].values())
    return out


def machine() -> str:
    mem_gb = math.nan
    try:
        with open("/proc/meminfo") as f:
            mem_gb = int(f.readline().split()[1]) / 1024**2
    except OSError:
        pass
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu
            )
    except OSError:
        pass
    system = f"{platform.system()} {platform.release()}"
    return f"{cpu}, {os.cpu_count()} cores, {mem_gb:.0f} GB RAM, {system}"


def write_csv(path: Path, rows: list[dict]) -> None:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def write_md(path: Path, runs: dict, threshold: float, wall: float, argv: list[str]) -> None:
    import ray

    lines = [
        "# Long runs: memory of SELLF and ELBERT-PO",
        "",
        f"Date: {datetime.date.today().isoformat()}. Machine: {machine()}. "
        f"Python {platform.python_version()}, ray {ray.__version__}, torch {torch.__version__}. "
        f"Wall time {wall / 60:.1f} min (machine shared with other jobs).",
        "",
        "Command: `" + " ".join(["python benchmarks/long_run_memory.py", *argv]) + "`",
        "",
        "Protocol: each algorithm trains through the Algorithm API (`build_algo()`, `train()` "
        "in a loop), one remote env runner, the learner in the driver (`num_learners=0`), one "
        "torch thread. After every iteration: the resident set size (RSS, `/proc/<pid>/status`) "
        "of the driver (which also holds the learner) and of the env-runner process. "
        '"Buffers full" is the first iteration at which RLlib\'s episode windows hold '
        "`metrics_num_episodes_for_smoothing` episodes and, for SELLF, the memory of accepted "
        "samples holds `memory_size` rows and the policy store `policy_store_size` snapshots. "
        'Slope: least-squares fit of RSS over the iterations from "buffers full" to the end, '
        f"in MB per 100 iterations; verdict flat when every slope is <= {threshold:g} MB per "
        "100 iterations. Series: `long_run_memory.csv`.",
        "",
    ]
    for name, (rows, settings, summary) in runs.items():
        lines += [
            f"## {name}",
            "",
            "Settings: " + ", ".join(f"`{k}`: {v}" for k, v in settings.items()) + ".",
            "",
            f"{summary['iterations']} iterations, {rows[-1]['env_steps']:,} env steps, "
            f"{rows[-1]['time_s'] / 60:.1f} min; buffers full at iteration "
            f"{summary['full_at']}"
            + (
                f" (memory {rows[-1]['memory']:,} rows, store {rows[-1]['store']} snapshots)"
                if "memory" in rows[-1]
                else ""
            )
            + ".",
            "",
            "| process | RSS after iteration 1 (MB) | at buffers full (MB) | at the end (MB) | "
            "max after full (MB) | slope after full (MB / 100 iterations) | verdict |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for p, v in summary["processes"].items():
            lines.append(
                f"| {p} | {v['start']:.1f} | {v['at_full']:.1f} | {v['end']:.1f} | "
                f"{v['max_after_full']:.1f} | {v['slope']:+.2f} | "
                f"{'flat' if v['flat'] else 'GROWS'} |"
            )
        lines.append("")
    path.write_text("\n".join(lines))


def main() -> int:
    import ray

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=300)
    p.add_argument("--algos", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    p.add_argument("--threshold", type=float, default=10.0, help="MB per 100 iterations")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args()
    if args.iterations < 2:
        p.error(f"--iterations: {args.iterations} is invalid; valid: an integer >= 2")
    args.out.mkdir(parents=True, exist_ok=True)
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level="ERROR",
    )
    t0 = time.time()
    runs = {}
    all_rows: list[dict] = []
    try:
        for name in args.algos:
            rows, settings = run(name, args.iterations, args.seed)
            summary = summarize(rows, args.threshold)
            runs[name] = (rows, settings, summary)
            all_rows += rows
            if summary["full_at"] is None:
                print(f"\n== {name}: the buffers never filled; raise --iterations ==")
                continue
            print(f"\n== {name}: buffers full at iteration {summary['full_at']} ==")
            for proc, v in summary["processes"].items():
                print(
                    f"  {proc:8s} RSS at full {v['at_full']:7.1f} MB, end {v['end']:7.1f} MB, "
                    f"slope after full {v['slope']:+6.2f} MB/100 it -> "
                    f"{'flat' if v['flat'] else 'GROWS'} (threshold {args.threshold:g})"
                )
    finally:
        ray.shutdown()
    wall = time.time() - t0
    write_csv(args.out / "long_run_memory.csv", all_rows)
    argv = sys.argv[1:]
    write_md(args.out / "long_run_memory.md", runs, args.threshold, wall, argv)
    verdict = all(s["flat"] for _, _, s in runs.values())
    if any(s["full_at"] is None for _, _, s in runs.values()):
        print("\nverdict: none (the buffers never filled in some run)")
    else:
        print(f"\nverdict: {'memory flat once buffers are full' if verdict else 'memory GROWS'}")
    print(f"wrote {args.out / 'long_run_memory.csv'} and {args.out / 'long_run_memory.md'}")
    return 0 if verdict else 1


if __name__ == "__main__":
    sys.exit(main())
