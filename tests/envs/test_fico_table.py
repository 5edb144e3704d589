"""The committed FICO table matches a fresh derivation from the raw TransRisk CSVs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from rllib_fair.envs.lending_fico import FICO_TABLE_PATH

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "scripts" / "derive_fico_table.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("derive_fico_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _committed() -> dict:
    return json.loads(FICO_TABLE_PATH.read_text())


def test_committed_table_is_well_formed():
    table = _committed()
    assert table["group_names"] == ["Black", "white"]
    cluster = np.asarray(table["cluster_probs"])
    success = np.asarray(table["success_probs"])
    assert cluster.shape == success.shape == (2, 10)
    np.testing.assert_allclose(cluster.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(cluster >= 0) and np.all((success >= 0) & (success <= 1))
    # Higher score bins repay more often.
    assert np.all(np.diff(success, axis=1) > 0)
    provenance = table["provenance"]
    for key in ("source_files", "origin", "derivation", "binning", "date"):
        assert provenance[key]
    assert "Federal Reserve" in provenance["origin"]


def test_committed_table_matches_derivation(tmp_path):
    script = _load_script()
    data_dir = script.DEFAULT_DATA_DIR
    if not (data_dir / script.CDF_FILE).exists():
        pytest.skip(f"raw FICO data not available at {data_dir}")
    fresh = script.derive(data_dir)
    committed = _committed()
    for key in ("group_names", "n_bins", "bin_score_ranges", "bin_row_counts"):
        assert fresh[key] == committed[key], key
    for key in ("cluster_probs", "success_probs"):
        np.testing.assert_allclose(fresh[key], committed[key], rtol=0, atol=1e-15)
    # The script's CLI writes the same numbers.
    out = tmp_path / "fico_bins.json"
    script.main([str(data_dir), "--out", str(out)])
    written = json.loads(out.read_text())
    assert written["cluster_probs"] == committed["cluster_probs"]
    assert written["provenance"]["source_files"] == committed["provenance"]["source_files"]
