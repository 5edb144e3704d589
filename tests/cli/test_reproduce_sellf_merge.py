"""scripts/reproduce_sellf_table1.py --merge: tables and curves from earlier runs' CSVs."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "reproduce_sellf_table1.py"
FIELDS = [
    "cell", "env", "notion", "method", "seed", "settings", "weight_init",
    "advantage_normalization", "actions", "overrides", "train_env_steps", "train_seconds",
    "deploy_steps", "deploy_seeds", "disparity_mean", "disparity_std", "reward_mean",
    "reward_std", "final_gap_mean", "deploy_len_mean", "window",
]  # fmt: skip


def _write(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})


def _row(method: str, seed: int, disparity: float, reward: float, overrides: str = "") -> dict:
    return dict(
        cell="fico-eo", env="lending_fico", notion="equal_opportunity", method=method,
        seed=seed, settings="paper", weight_init="orthogonal",
        advantage_normalization="minmax", actions="sampled", overrides=overrides,
        train_env_steps=500000, train_seconds=1.0, deploy_steps=10000, deploy_seeds=10,
        disparity_mean=disparity, disparity_std=0.01, reward_mean=reward, reward_std=1.0,
        final_gap_mean=disparity, deploy_len_mean=10000, window=4000,
    )  # fmt: skip


def test_merge_writes_seed_summary_and_curves(tmp_path):
    _write(tmp_path / "a.csv", [_row("sellf", 0, 0.02, -5.0), _row("ppo", 0, 0.40, 649.0)])
    _write(tmp_path / "b.csv", [_row("sellf", 1, 0.04, -15.0)])
    _write(tmp_path / "c.csv", [_row("sellf", 0, 0.36, 658.0, overrides="beta_1=0")])
    (tmp_path / "b_series.csv").write_text(
        "cell,method,seed,step,disparity\nfico-eo,sellf,1,50,0.1\nfico-eo,sellf,1,100,0.05\n"
    )
    out = tmp_path / "out"
    args = ["--merge", *(str(tmp_path / n) for n in ("a.csv", "b.csv", "c.csv"))]
    subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--name", "t", "--out", str(out)], check=True
    )
    md = (out / "t.md").read_text()
    assert "SELLF (seed 0, beta_1=0)" in md
    # SELLF over seeds 0 and 1: 0.030 +- 0.010 (the ablation row left out)
    assert "| lending_fico (equal_opportunity) | SELLF | 0, 1 | 0.030 +- 0.010 | 0.04 |" in md
    assert "-10.0 +- 5.0" in md
    lines = (out / "t_series.csv").read_text().splitlines()
    assert lines == [
        "cell,method,seed,step,disparity",
        "fico-eo,sellf,1,50,0.100000",
        "fico-eo,sellf,1,100,0.050000",
    ]
    assert (out / "t_series.png").stat().st_size > 1000
    assert (out / "t_bars.png").stat().st_size > 1000
    assert len((out / "t.csv").read_text().splitlines()) == 5
