"""Lee et al. Figs. 11-15 over the whole knob grid: exact quantiles, the stratified paired
bootstrap, verdicts on known data, bad input, and the script end to end on a real sweep."""

from __future__ import annotations

import csv
import importlib.util
import itertools
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rllib_fair.reproduce import lee_whole_grid as lwg
from rllib_fair.reproduce.stats import FAILS, HOLDS, INCONCLUSIVE
from rllib_fair.uncertainty import QuarterlyConfig
from rllib_fair.uncertainty.strategies import STRATEGIES
from rllib_fair.uncertainty.sweep import BIAS_GRID, COLUMNS, grid, run_config

SEEDS = (0, 20, 40, 60, 80)
#: 8 knob combinations: l_y, l_m, l_y_b at two levels each, the rest 0.
COMBOS = [
    {**dict.fromkeys(BIAS_GRID, 0.0), "l_y": a, "l_m": b, "l_y_b": c}
    for a, b, c in itertools.product((0.0, 4.0), (0.0, 2.0), (0.0, 2.0))
]


def _frame(scale: dict | None = None, rng_seed: int = 0, by_combo_only: bool = False):
    """Final-quarter rows: naive's values drawn at random, each strategy a multiple of them.

    ``scale[strategy][metric]`` multiplies naive's value (default 1: the same values).
    With ``by_combo_only`` a value depends on the knob combination alone, not the seed.
    """
    rng = np.random.default_rng(rng_seed)
    scale = scale or {}
    rows = []
    base = {}
    for ci in range(len(COMBOS)):
        for seed in SEEDS:
            r = np.random.default_rng(ci) if by_combo_only else rng
            base[(ci, seed)] = {
                "delta_sr": float(r.uniform(-0.6, 0.6)),
                "delta_fpr": float(r.uniform(-0.2, 0.2)),
                "delta_fnr": float(r.uniform(-1.5, 1.5)),
                "delta_acc": float(r.uniform(-0.1, 0.1)),
                "cumulative_profit": float(r.uniform(1000, 3000)),
            }
    for s in STRATEGIES:
        for (ci, seed), vals in base.items():
            row = {"strategy": s, **COMBOS[ci], "proportion_certain": 0.7, "delta": 0.05}
            row.update(seed=seed, quarter=8)
            for m, v in vals.items():
                row[m] = v * scale.get(s, {}).get(m, 1.0)
            rows.append(row)
            # an earlier quarter the loader must ignore
            rows.append({**row, "quarter": 2, "delta_sr": 99.0})
    return pd.DataFrame(rows)


def test_quantiles_are_numpys_over_the_pooled_final_quarter():
    frame = _frame()
    grid_ = lwg.load(frame)
    assert grid_.configs == len(COMBOS) * len(SEEDS) == 40
    rows = {r["strategy"]: r for r in lwg.quantiles(grid_)}
    last = frame[(frame["quarter"] == 8) & (frame["strategy"] == "naive")]
    for m in lwg.METRICS:
        v = last[m].to_numpy()
        v = np.abs(v) if m in lwg.ABSOLUTE else v
        q = np.quantile(v, [0.25, 0.5, 0.75])
        assert (
            rows["naive"][f"{m}_q25"],
            rows["naive"][f"{m}_median"],
            rows["naive"][f"{m}_q75"],
        ) == (
            pytest.approx(q[0], abs=0),
            pytest.approx(q[1], abs=0),
            pytest.approx(q[2], abs=0),
        )
    assert rows["naive"]["delta_sr_q75"] <= 0.6  # the quarter-2 rows (99) are not pooled


def test_bootstrap_is_stratified_by_knob_combination():
    # values that differ between combinations but not between seeds: a replicate that keeps
    # every combination's seeds in their stratum reproduces the data exactly
    grid_ = lwg.load(_frame({"prob_weighted": {"delta_sr": 0.5}}, by_combo_only=True))
    decided = lwg.decide(grid_, reps=200, seed=3)
    for d in decided.values():
        for r in d["results"]:
            assert r.low == pytest.approx(r.estimate, abs=1e-12)
            assert r.high == pytest.approx(r.estimate, abs=1e-12)


def test_bootstrap_is_seeded_and_paired():
    grid_ = lwg.load(_frame())
    a = lwg.bootstrap(grid_, reps=200, seed=1)
    b = lwg.bootstrap(grid_, reps=200, seed=1)
    c = lwg.bootstrap(grid_, reps=200, seed=2)
    assert all(np.array_equal(a[m], b[m]) for m in lwg.METRICS)
    assert not np.array_equal(a["delta_sr"], c["delta_sr"])
    # paired: identical strategies give identical replicates, so their difference is 0
    assert np.array_equal(a["delta_sr"][:, 0], a["delta_sr"][:, 1])


def test_verdicts_on_known_orderings():
    # prob-weighted and UA halve naive's |dSR| (lower and narrower); the counterfactual's
    # |dFNR| is a tenth of the others' (so "widest" does not hold); the rest equal naive
    scale = {
        "prob_weighted": {"delta_sr": 0.5},
        "uncertainty_aware": {"delta_sr": 0.5},
        "counterfactual": {"delta_fnr": 0.1},
    }
    decided = lwg.decide(lwg.load(_frame(scale)), reps=400, seed=0)
    assert decided["fig11_sr_ua_pw_lower_narrower"]["verdict"] == HOLDS
    assert decided["fig13_fnr_cf_widest"]["verdict"] == FAILS
    # equal values: every paired difference is exactly 0, so the interval is [0, 0]
    equal = decided["fig14_acc_ua_pw_lower_median"]
    assert equal["verdict"] == INCONCLUSIVE
    assert all(r.estimate == r.low == r.high == 0.0 for r in equal["results"])
    text = lwg.report(lwg.load(_frame(scale)), decided, 400, 0)
    assert "median \\|dAcc\\| of UA < median \\|dAcc\\| of naive: 0.0000 [0.0000, 0.0000] " in text
    assert "inconclusive (equal on every replicate)" in text
    for line in text.splitlines():
        if line.startswith("|"):  # a table row: 6 or 3 columns, every other pipe escaped
            assert len(re.split(r"(?<!\\)\|", line)) in (8, 5), line
    # |dFNR| (uniform on +-1.5) is wider than |dSR| (+-0.6, halved for two strategies),
    # |dFPR| (+-0.2) and |dAcc| (+-0.1)
    assert decided["fig13_fnr_most_volatile"]["verdict"] == HOLDS
    assert decided["fig14_acc_narrower_than_fnr"]["verdict"] == HOLDS
    # a single failing comparison decides the claim
    pw = lwg.decide(
        lwg.load(
            _frame({"prob_weighted": {"delta_sr": 0.5}, "uncertainty_aware": {"delta_sr": 2.0}})
        ),
        reps=400,
    )["fig11_sr_ua_pw_lower_narrower"]
    assert pw["verdict"] == FAILS
    assert [r.verdict for r in pw["results"]] == [FAILS, HOLDS, FAILS, HOLDS]


def test_group_swap_does_not_change_the_pooled_disparities():
    # Delta M = M(0) - M(1); relabelling the groups flips its sign and the analysis reads
    # |Delta M|, so the quantiles and verdicts do not move
    frame = _frame({"prob_weighted": {"delta_sr": 0.5}})
    swapped = frame.copy()
    for m in lwg.ABSOLUTE:
        swapped[m] = -swapped[m]
    a, b = lwg.load(frame), lwg.load(swapped)
    assert lwg.quantiles(a) == lwg.quantiles(b)
    da, db = lwg.decide(a, reps=200), lwg.decide(b, reps=200)
    assert {k: v["verdict"] for k, v in da.items()} == {k: v["verdict"] for k, v in db.items()}


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda f: f.drop(columns=["delta_fnr"]), "columns: 'delta_fnr' is missing"),
        (lambda f: f[f["strategy"] != "counterfactual"], "strategy: 'counterfactual' has no"),
        (lambda f: pd.concat([f, f.iloc[[0]]]), "appears twice"),
        (lambda f: f.drop(index=f.index[f["strategy"] == "naive"][0]), "strategy: 'naive' ran 39"),
        (lambda f: f[f["seed"] == 0], "seed: [0] is too few"),
        (lambda f: f.assign(delta_acc=np.nan), "delta_acc: a value is missing or not finite"),
        (lambda f: f.replace({"strategy": {"naive": "greedy"}}), "strategy: 'greedy' is invalid"),
    ],
)
def test_bad_input_is_one_line_naming_the_problem(mutate, message):
    with pytest.raises(lwg.GridError) as e:
        lwg.load(mutate(_frame()))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_other_method_parameters_are_not_pooled():
    frame = _frame()
    with pytest.raises(lwg.GridError, match="proportion_certain 0.8"):
        lwg.load(frame, proportion_certain=0.8)
    with pytest.raises(lwg.GridError, match="reps: 10 is too few"):
        lwg.bootstrap(lwg.load(frame), reps=10)


def _script():
    path = Path(__file__).resolve().parents[2] / "scripts" / "lee2026_whole_grid.py"
    spec = importlib.util.spec_from_file_location("lee2026_whole_grid_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_script_on_a_real_small_sweep_and_again_from_its_extract(tmp_path, capsys):
    # every strategy on two knob combinations x two seeds, small data, the sweep's own CSV
    small = QuarterlyConfig().replace(dim=400, num_partitions=4)
    bias = {k: (0.0,) for k in BIAS_GRID} | {"l_y": (0.0, 4.0)}
    configs = grid(
        STRATEGIES, seeds=(0, 20), bias_grid=bias, proportion_certain=(0.7,), deltas=(0.05,)
    )
    sweep = tmp_path / "sweep.csv"
    with open(sweep, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        for cfg in configs:
            writer.writerows(run_config(cfg, small))
    out = tmp_path / "results"
    script = _script()
    assert script.main(["--csv", str(sweep), "--out", str(out), "--reps", "100"]) == 0
    assert "4 configurations per strategy" in capsys.readouterr().out
    report = (out / script.REPORT).read_text()
    quant = pd.read_csv(out / script.QUANTILES)
    assert list(quant["strategy"]) == list(STRATEGIES)
    assert set(quant["group_encoding"]) == {"centered"} and set(quant["configs"]) == {4}
    raw = pd.read_csv(sweep)
    naive = raw[(raw["strategy"] == "naive") & (raw["quarter"] == raw["quarter"].max())]
    median = float(np.median(naive["delta_sr"].abs()))
    assert quant.loc[quant["strategy"] == "naive", "delta_sr_median"].item() == pytest.approx(
        median, rel=1e-5
    )
    for claim in lwg.CLAIMS:
        assert f"`{claim.id}`" in report
    # the tracked extract alone regenerates the same report and quantiles
    again = tmp_path / "again"
    again.mkdir()
    (again / script.EXTRACT).write_bytes((out / script.EXTRACT).read_bytes())
    assert (
        script.main(["--csv", str(again / script.EXTRACT), "--out", str(again), "--reps", "100"])
        == 0
    )
    assert (again / script.REPORT).read_text() == report
    assert (again / script.QUANTILES).read_text() == (out / script.QUANTILES).read_text()
    # bad input: one line on stderr, exit 2, nothing written
    bad = tmp_path / "bad"
    assert script.main(["--csv", str(tmp_path / "none.csv"), "--out", str(bad)]) == 2
    assert "--csv" in capsys.readouterr().err and not bad.exists()
