"""The Table 2 sweep on Ray: grid size, tidy CSV, resume.

The paper's count 10,935 fixes one method parameter; the full cross is 32,805, and naive
and counterfactual ignore both method parameters (docs/methods/lee2026.md).
"""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest

from rllib_fair.uncertainty import QuarterlyConfig, run_quarters
from rllib_fair.uncertainty.sweep import (
    COLUMNS,
    KEY_COLUMNS,
    SweepConfig,
    finished_ids,
    grid,
    run_config,
    run_sweep,
    single_bias_grid,
)

TINY_BIAS = {
    "l_y": (0.0, 4.0),
    "l_m_y": (0.0,),
    "l_h_r": (0.0,),
    "l_h_q": (0.0,),
    "l_m": (0.0, 2.0),
    "l_y_b": (0.0,),
}
SMALL = QuarterlyConfig().replace(dim=400, num_partitions=4)


def _tiny_grid():
    return grid(
        ("naive", "prob_weighted"),
        seeds=(0, 20),
        bias_grid=TINY_BIAS,
        proportion_certain=(0.7,),
        deltas=(0.05, 0.1),
    )


def test_grid_sizes_match_table2():
    assert len(grid(("prob_weighted",))) == 3**6 * 3 * 3 * 5 == 32_805
    assert len(grid(("naive",))) == len(grid(("counterfactual",))) == 3**6 * 5 == 3_645
    assert len(grid(("naive",), dedupe=False)) == 32_805
    full = grid()
    assert len(full) == 3 * 32_805 + 2 * 3_645 == 105_705
    assert len({c.config_id for c in full}) == len(full)
    with pytest.raises(ValueError, match="strategy: 'x' is invalid"):
        grid(("x",))
    single = single_bias_grid()
    assert len(single) == 5 * 13 * 5  # (no bias + 12 single-knob levels) x seeds x methods
    assert all(sum(getattr(c, k) != 0 for k in ("l_y", "l_m", "l_y_b")) <= 1 for c in single)


def test_run_config_rows_are_run_quarters():
    cfg = SweepConfig("naive_exploration", 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.6, 0.1, 20)
    rows = run_config(cfg, SMALL)
    recs = run_quarters(
        SMALL.replace(strategy="naive_exploration", proportion_certain=0.6, delta=0.1, l_y=2.0),
        seed=20,
    )
    assert [r["quarter"] for r in rows] == [r.quarter for r in recs] == [2, 3, 4]
    for row, rec in zip(rows, recs):
        assert row["delta_sr"] == rec.metrics["delta_sr"]
        assert row["cumulative_profit"] == rec.metrics["cumulative_profit"]
        assert row["config_id"] == cfg.config_id and row["seed"] == 20


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.ray
def test_sweep_writes_tidy_csv_and_resumes(ray_session, tmp_path):
    out = tmp_path / "sweep.csv"
    configs = _tiny_grid()
    assert len(configs) == 4 * 2 + 4 * 2 * 2  # naive deduped; prob_weighted x 2 deltas
    first = configs[:10]
    summary = run_sweep(first, out, chunk_size=3, base=SMALL, progress=lambda _m: None)
    assert summary["ran"] == 10 and summary["skipped"] == 0
    rows = _read(out)
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) == 10 * 3  # one row per (configuration, quarter)
    # Simulate a kill mid-write: a torn last line.
    text = out.read_text()
    out.write_text(text[: len(text) - 7])
    assert len(finished_ids(out)) == 9  # torn row cut, its configuration's rows removed
    assert len(_read(out)) == 9 * 3
    # Resume with the whole grid: only what is missing runs.
    seen = []
    summary = run_sweep(configs, out, chunk_size=4, base=SMALL, progress=seen.append)
    assert summary["skipped"] == 9 and summary["ran"] == len(configs) - 9
    assert any("configs/s" in m for m in seen)
    rows = _read(out)
    ids = [r["config_id"] for r in rows]
    assert set(ids) == {c.config_id for c in configs}
    keys = [(r["config_id"], r["quarter"]) for r in rows]
    assert len(keys) == len(set(keys)) == len(configs) * 3  # tidy: nothing twice
    for r in rows:
        assert all(r[k] != "" for k in KEY_COLUMNS)
    # A third run does nothing.
    summary = run_sweep(configs, out, base=SMALL, progress=lambda _m: None)
    assert summary["ran"] == 0 and summary["skipped"] == len(configs)


def test_sweep_script_group_flags_reach_the_runs():
    path = Path(__file__).resolve().parents[2] / "scripts" / "uncertainty_sweep.py"
    spec = importlib.util.spec_from_file_location("uncertainty_sweep_script", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    default = script.base_config(script.parse_args(["--out", "x.csv"]))
    assert (default.group_encoding, default.disadvantaged_group) == ("centered", 0)
    args = ["--out", "x.csv", "--group-encoding", "indicator", "--disadvantaged-group", "1"]
    base = script.base_config(script.parse_args([*args, "--dim", "400"]))
    assert (base.group_encoding, base.disadvantaged_group, base.bias.dim) == ("indicator", 1, 400)
    with pytest.raises(SystemExit):
        script.parse_args(["--out", "x.csv", "--group-encoding", "pm1"])
