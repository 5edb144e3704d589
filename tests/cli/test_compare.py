"""``rllib-fair compare``: reads finished experiments, groups seeds, writes table and plots."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from rllib_fair.cli import main
from rllib_fair.cli.tables import pareto


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


# ------------------------------------------------------------- trial folders as Tune writes
def _trial(root, experiment, trainable, params, results, tag="00000"):
    """A finished trial folder: params.json and result.json (one JSON line per iteration)."""
    folder = root / experiment / f"{trainable}_{params['env'].replace('/', '_')}_{tag}_0"
    folder.mkdir(parents=True)
    (folder / "params.json").write_text(json.dumps(params))
    lines = []
    for i, flat in enumerate(results, start=1):
        nested: dict = {"training_iteration": i, "num_env_steps_sampled_lifetime": 100 * i}
        nested["time_total_s"] = float(i)
        for key, value in flat.items():
            node = nested
            *parents, leaf = key.split("/")
            for p in parents:
                node = node.setdefault(p, {})
            node[leaf] = value
        lines.append(json.dumps(nested))
    (folder / "result.json").write_text("\n".join(lines) + "\n")
    return folder


def _drift_result(ret, eo_gap, gain_gap):
    return {
        "env_runners/episode_return_mean": ret,
        "fairness/equal_opportunity/bias": eo_gap,
        "fairness/equal_opportunity/rate/advantaged": 0.5,
        "fairness/equal_opportunity/rate/disadvantaged": 0.5 - eo_gap,
        "fairness/qualification_gain/gain_gap_abs": gain_gap,
    }


def test_compare_pools_separately_seeded_runs(tmp_path, capsys):
    """Two runs of one file with --seed 1 and --seed 2: one row, mean +- std over both."""
    results = tmp_path / "results"
    for seed, tag, addr, (ret, gap) in (
        (1, "aaaaa", "0x7f8c8101", (10.0, 0.2)),
        (2, "bbbbb", "0x7fbb0060", (14.0, 0.1)),
    ):
        params = {
            "env": "fair/Lending-v0",
            "seed": seed,
            "lr": 0.0005,
            "env_config": {"max_steps": 200},
            "policy_mapping_fn": f"<function AlgorithmConfig.DEFAULT_POLICY_MAPPING_FN at {addr}>",
        }
        result = {"env_runners/episode_return_mean": ret, "fairness/equal_opportunity/bias": gap}
        _trial(results, "lending-ppo", "FairPPO", params, [result], tag=tag)
    out = tmp_path / "cmp"
    assert main(["compare", str(results), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    (row,) = json.loads((out / "compare.json").read_text())
    assert row["configuration"] == "lending-ppo"  # no memory address in the label
    assert row["trials"] == 2 and row["seeds"] == ["1", "2"]
    assert row["return"] == [12.0, 2.0, 2]
    assert "| lending-ppo | PPO | fair/Lending-v0 | 2 | 100 | 12.000 +- 2.000 |" in printed
    assert "0x7f" not in printed


def test_compare_labels_configurations_by_the_nested_setting_that_differs(tmp_path, capsys):
    results = tmp_path / "results"
    for steps, tag in ((200, "aaaaa"), (400, "bbbbb")):
        params = {"env": "fair/Lending-v0", "seed": 0, "env_config": {"max_steps": steps}}
        result = {"env_runners/episode_return_mean": 1.0, "fairness/equal_opportunity/bias": 0.1}
        _trial(results, "lending-ppo", "FairPPO", params, [result], tag=tag)
    assert main(["compare", str(results), "--out", str(tmp_path / "cmp"), "--no-plots"]) == 0
    rows = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert sorted(r["configuration"] for r in rows) == [
        "lending-ppo [env_config.max_steps=200]",
        "lending-ppo [env_config.max_steps=400]",
    ]


def test_compare_shows_each_algorithm_its_own_target(tmp_path, capsys):
    """PPO-C's own target, the qualification-gain gap, sits next to the env's default gap."""
    results = tmp_path / "results"
    base = {"env": "fair/LendingDrift-v0", "fairness_notion": "equal_opportunity"}
    for seed in (0, 1):
        _trial(
            results,
            "drift-ppokl",
            "PPOKL",
            {**base, "seed": seed},
            [_drift_result(13.0, 0.095, 17.11)],
            tag=f"kl00{seed}",
        )
        _trial(
            results,
            "drift-ppoc",
            "PPOC",
            {**base, "seed": seed},
            [_drift_result(12.0, 0.140, 5.96)],
            tag=f"c000{seed}",
        )
    out = tmp_path / "cmp"
    assert main(["compare", str(results), "--out", str(out), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    (head,) = [ln for ln in printed.splitlines() if ln.startswith("| configuration |")]
    cols = [c.strip() for c in head.strip("|").split("|")]
    assert "gap equal_opportunity" in cols and "qualification-gain gap" in cols
    cells = {}
    for line in printed.splitlines():
        if line.startswith("| drift-"):
            values = [c.strip() for c in line.strip("|").split("|")]
            cells[values[0]] = dict(zip(cols, values, strict=True))
    assert cells["drift-ppoc"]["qualification-gain gap"] == "5.9600 +- 0.0000 (own)"
    assert (
        cells["drift-ppokl"]["qualification-gain gap"] == "17.1100 +- 0.0000"
    )  # the baseline's value
    assert cells["drift-ppokl"]["gap equal_opportunity"] == "0.0950 +- 0.0000"
    assert cells["drift-ppoc"]["own target"] == "qualification-gain gap"
    assert cells["drift-ppokl"]["own target"] == "none"
    # the legend names what each gap measures and whose target a column is
    assert "- gap equal_opportunity: max - min over groups of the true positive rate" in printed
    assert "fairness/qualification_gain/gain_gap_abs; own target of PPOC)" in printed
    assert "PPOKL: unconstrained" in printed
    md = (out / "compare.md").read_text()
    assert "own target of PPOC" in md  # the legend is part of the Markdown file too
    rows = {r["configuration"]: r for r in json.loads((out / "compare.json").read_text())}
    key = "fairness/qualification_gain/gain_gap_abs"
    assert rows["drift-ppoc"]["targets"][key][0] == pytest.approx(5.96)
    assert rows["drift-ppokl"]["own"]["constraints"] == []


def test_compare_separates_rtd3_relaxed_return_from_the_env_return(tmp_path, capsys):
    results = tmp_path / "results"
    params = {"env": "fair/ReplicatorAdult-v0", "seed": 0, "fairness_notion": "demographic_parity"}
    result = {
        "env_runners/episode_return_mean": 145.65,  # the relaxed reward R-TD3 trains on
        "env_runners/replicator/reward_return": 142.35,  # the env's own reward 1 - L
        "env_runners/replicator/disparity_mean": 0.0032,
        "fairness/demographic_parity/bias": 0.02,
    }
    _trial(results, "adult-rtd3", "RTD3", params, [result])
    out = tmp_path / "cmp"
    assert main(["compare", str(results), "--out", str(out), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    (row,) = json.loads((out / "compare.json").read_text())
    assert row["return"][0] == pytest.approx(142.35)
    assert row["objective"]["name"] == "relaxed return"
    assert row["objective"]["value"][0] == pytest.approx(145.65)
    assert "| 142.350 | relaxed return 145.650 |" in printed
    assert "squared disparity D" in printed and "0.0032 (own)" in printed
    assert "RTD3: env_runners/replicator/reward_return" in printed


def test_compare_says_which_iterations_it_averages(tmp_path, capsys):
    """A sweep's pareto.md averages selection.last_iterations; compare says when it differs."""
    results = tmp_path / "results"
    rets = [5.0, 10.0, 20.0]
    for seed, tag in ((0, "aaaaa"), (1, "bbbbb")):
        rows = [
            {"env_runners/episode_return_mean": r, "fairness/equal_opportunity/bias": 0.1}
            for r in rets
        ]
        _trial(results, "sweep", "FairPPO", {"env": "fair/Lending-v0", "seed": seed}, rows, tag=tag)
    (results / "sweep" / "pareto.md").write_text("| front |\n")
    (results / "sweep" / "selection.json").write_text(json.dumps({"last_iterations": 3}))
    assert main(["compare", str(results), "--out", str(tmp_path / "c1"), "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "return (last iter)" in printed and "| 20.000 +- 0.000 |" in printed
    assert "use each trial's mean of last 3 iterations, this table the last iteration" in printed
    assert "pass --last 3" in printed
    argv = ["compare", str(results), "--out", str(tmp_path / "c3"), "--no-plots", "--last", "3"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "return (last 3 iters)" in printed and "| 11.667 +- 0.000 |" in printed
    assert "pass --last" not in printed


def test_compare_csv_writes_under_results_and_lists_what_it_wrote(tmp_path, capsys, monkeypatch):
    """The default output of a CSV (often in a tracked folder) goes to ./results."""
    docs = tmp_path / "docs" / "results"
    docs.mkdir(parents=True)
    path = docs / "runs.csv"
    path.write_text(
        "algo,env,seed,reward_per_step,bias\nppo,lending,0,0.1,0.2\nppo,lending,1,0.3,0.4\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["compare", "docs/results/runs.csv", "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert sorted(p.name for p in docs.iterdir()) == ["runs.csv"]  # nothing next to the CSV
    out = tmp_path / "results" / "compare_runs"
    (written,) = [ln for ln in printed.splitlines() if ln.startswith("written: ")]
    files = written.removeprefix("written: ").split(", ")
    assert sorted(Path(f).name for f in files) == ["compare.csv", "compare.json", "compare.md"]
    assert all(Path(f).is_file() and Path(f).parent == out for f in files)
    with (out / "compare.csv").open() as f:
        rows = list(csv.DictReader(f))
    (bias,) = [r for r in rows if r["metric"] == "bias"]
    assert float(bias["mean"]) == pytest.approx(0.3) and bias["n"] == "2"


def test_frontier_plots_keep_titles_and_coincident_points(tmp_path):
    """Long env names are not cut off; configurations at one point all stay visible."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from rllib_fair.cli import plots, tables, trials

    results = tmp_path / "results"
    same = {"env_runners/episode_return_mean": 11.9, "fairness/demographic_parity/bias": 0.0}
    for name in ("Maxmin", "MaxminFair", "MyopicFair"):
        params = {"env": "fair/ReplicatorAdult-v0", "seed": 0}
        _trial(results, f"adult-{name.lower()}", name, params, [same])
    configs = trials.group(trials.find_trials([str(results)]))
    rows = tables.summarize(configs)
    drawn = []
    original = Figure.savefig

    def spy(fig, path, **kwargs):
        renderer = fig.canvas.get_renderer()
        saved = fig.get_tightbbox(renderer) if kwargs.get("bbox_inches") == "tight" else None
        saved = fig.bbox if saved is None else saved.transformed(fig.dpi_scale_trans)
        title = fig.axes[0].title.get_window_extent(renderer)
        drawn.append((fig, title.x0 >= saved.x0 - 1 and title.x1 <= saved.x1 + 1))
        return original(fig, path, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "savefig", spy)
        plots.plot(configs, rows, tmp_path)
    fig, title_inside = drawn[0]  # the frontier
    assert title_inside
    ax = fig.axes[0]
    points = [line for line in ax.lines if line.get_marker() in plots._MARKERS]
    assert len(points) == 3
    assert len({(p.get_marker(), p.get_markersize()) for p in points}) == 3
    assert all(p.get_markerfacecolor() == "none" for p in points)  # hollow: none hides another
