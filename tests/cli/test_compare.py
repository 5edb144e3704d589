"""``rllib-fair compare``: reads finished experiments, groups seeds, writes table and plots."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import yaml

from rllib_fair.cli import main
from rllib_fair.cli.compare import pareto


def test_pareto_front():
    # (return, gap): the last one is beaten by the first on both
    pts = [(10.0, 0.1), (12.0, 0.3), (5.0, 0.05), (9.0, 0.2)]
    assert pareto(pts) == [0, 1, 2]


def test_compare_bad_input(tmp_path, capsys):
    assert main(["compare", str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert main(["compare", str(tmp_path)]) == 2
    assert "no finished trial" in capsys.readouterr().err


def _spec(run: str) -> dict:
    return {
        "run": run,
        "env": "fair/Lending-v0",
        "env_config": {"max_steps": 200},
        "stop": {"training_iteration": 2},
        "config": {
            "seed": {"grid_search": [0, 1]},
            "train_batch_size_per_learner": 200,
            "minibatch_size": 100,
            "num_epochs": 1,
            "model_config": {"fcnet_hiddens": [8]},
        },
    }


@pytest.mark.ray
def test_compare_two_experiments_over_two_seeds(tmp_path, ray_session, capsys):
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump({"cmp-ppo": _spec("PPO"), "cmp-pocar": _spec("POCAR")}))
    results = tmp_path / "results"
    assert main(["train", str(path), "--storage-path", str(results)]) == 0
    trained = capsys.readouterr().out
    side = trained[trained.index("== side by side ==") :]  # two experiments, one table
    assert "cmp-ppo" in side and "cmp-pocar" in side and side.count("fair/Lending-v0") == 4

    out = tmp_path / "cmp"
    assert main(["compare", str(results), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = {r["configuration"]: r for r in json.loads((out / "compare.json").read_text())}
    assert set(rows) == {"cmp-ppo", "cmp-pocar"}  # seeds grouped, not separate rows
    for name, row in rows.items():
        assert row["trials"] == 2 and row["seeds"] == ["0", "1"]
        assert row["env_steps"] == 400
        # the numbers are the trials' own last results, averaged over the seeds
        finals = []
        for trial in (results / name).glob("*/result.json"):
            last = json.loads(trial.read_text().splitlines()[-1])
            finals.append(last["fairness"]["equal_opportunity"]["bias"])
        mean, std, n = row["gap"]["equal_opportunity"]
        assert n == 2
        assert mean == pytest.approx(np.mean(finals)) and std == pytest.approx(np.std(finals))
        assert set(row["rates"]) == {"group_0", "group_1"}
        assert all(math.isfinite(v[0]) for v in row["rates"].values())
        assert f"| {name} | {row['algo']} | fair/Lending-v0 | 2 | 400 |" in printed
    assert rows["cmp-pocar"]["algo"] == "POCAR" and rows["cmp-ppo"]["algo"] == "PPO"
    for fig in ("frontier_fair_Lending-v0.png", "curves_fair_Lending-v0.png"):
        data = (out / fig).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000
    assert (out / "compare.csv").read_text().count("gap/equal_opportunity") == 2


def test_compare_run_table_csv(tmp_path, capsys):
    """Per-run CSVs of the reproduction scripts: configurations over seeds, frontier plot."""
    path = tmp_path / "runs.csv"
    path.write_text(
        "algo,env,seed,reward_per_step,bias,train_seconds,extra\n"
        "ppo,lending,0,0.15,0.20,10,\n"
        "ppo,lending,1,0.13,0.10,12,\n"
        "elbertpo,lending,0,0.14,0.02,20,0.5\n"
        "elbertpo,lending,1,0.16,0.04,22,0.7\n"
    )
    assert main(["compare", str(path), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "| ppo | lending | 2 | 0.1400 +- 0.0100 | 0.1500 +- 0.0500 | 11 +- 1 |" in printed
    assert "| elbertpo | lending | 2 | 0.1500 +- 0.0100 | 0.0300 +- 0.0100 | 21 +- 1 |" in printed
    rows = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert [r["runs"] for r in rows] == [2, 2]
    # a metric some runs leave empty is still a metric, not a grouping column
    assert rows[0]["extra"][0] is None and rows[1]["extra"][0] == pytest.approx(0.6)
    assert (tmp_path / "out" / "frontier_lending.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["compare", str(path), str(tmp_path)]) == 2
    assert "either experiment folders or CSV files" in capsys.readouterr().err
