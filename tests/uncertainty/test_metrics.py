"""Metrics against hand computations and fairlearn (Lee et al. 2026, App. B).

A positive Delta FNR means group 0 is worse off; for Delta SR and Delta FPR a negative one
(docs/methods/lee2026.md, "Corrections and discrepancies").
"""

import numpy as np
import pytest

from rllib_fair.fairness.notions import get_notion
from rllib_fair.uncertainty.metrics import (
    auc,
    group_rates,
    profit,
    quarter_metrics,
    signed_differences,
    table1_bookkeeping,
    utility,
)

# Hand-made quarter: 10 applicants, groups 0 (first 5) and 1 (last 5).
GROUP = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
Y_REAL = np.array([1, 1, 0, 0, 1, 1, 0, 1, 1, 0])
D = np.array([1, 0, 1, 0, 0, 1, 1, 1, 0, 0])
Y_OBS = np.array([1, 0, 0, 0, 1, 1, 0, 1, 1, 0])  # the bank's record (one positive lost)


def test_group_rates_by_hand():
    r = group_rates(D, Y_REAL, GROUP)
    # group 0: SR 2/5; FPR (D=1 | Y=0) = 1/2; FNR (D=0 | Y=1) = 2/3; Acc = (1 + 1)/5
    # group 1: SR 3/5; FPR = 1/2; FNR = 1/3; Acc = (2 + 1)/5
    np.testing.assert_allclose(r["sr"], [0.4, 0.6])
    np.testing.assert_allclose(r["fpr"], [0.5, 0.5])
    np.testing.assert_allclose(r["fnr"], [2 / 3, 1 / 3])
    np.testing.assert_allclose(r["acc"], [0.4, 0.6])
    diff = signed_differences(r)
    assert diff["delta_sr"] == pytest.approx(-0.2)
    assert diff["delta_fpr"] == pytest.approx(0.0)
    assert diff["delta_fnr"] == pytest.approx(1 / 3)  # positive: group 0 worse off (E4)
    assert diff["delta_acc"] == pytest.approx(-0.2)
    assert all(diff[f"delta_{m}_defined"] for m in ("sr", "fpr", "fnr", "acc"))
    # the package's notions on the same counts
    s, d = get_notion("equal_opportunity").supply_demand(r["counts"])
    np.testing.assert_allclose(1 - s[0] / d[0], r["fnr"])


def test_undefined_rates_are_flagged_not_nan():
    y = np.array([1, 1, 1, 0])  # group 0 has no Y_real = 0
    r = group_rates(np.array([1, 0, 1, 1]), y, np.array([0, 0, 1, 1]))
    assert not r["fpr_defined"][0] and r["fpr"][0] == 0.0
    diff = signed_differences(r)
    assert diff["delta_fpr"] == 0.0 and not diff["delta_fpr_defined"]
    assert diff["delta_sr_defined"]


def test_against_fairlearn():
    fl = pytest.importorskip("fairlearn.metrics")
    rng = np.random.default_rng(0)
    n = 500
    group = rng.integers(0, 2, n)
    y = rng.integers(0, 2, n)
    d = rng.integers(0, 2, n)
    r = group_rates(d, y, group)
    for g in (0, 1):
        m = group == g
        assert r["sr"][g] == pytest.approx(fl.selection_rate(y[m], d[m]))
        assert r["fpr"][g] == pytest.approx(fl.false_positive_rate(y[m], d[m]))
        assert r["fnr"][g] == pytest.approx(fl.false_negative_rate(y[m], d[m]))
        assert r["acc"][g] == pytest.approx(np.mean(y[m] == d[m]))


def test_profit_and_table1_by_hand():
    g, lo = 0.4, 1.0
    # granted: rows 0 (repays), 2 (defaults), 5 (repays), 6 (defaults), 7 (repays)
    assert profit(D, Y_REAL, g, lo) == pytest.approx(3 * 0.4 - 2 * 1.0)
    t = table1_bookkeeping(D, Y_REAL, g, lo)
    assert t["realised_gain"] == pytest.approx(1.2)
    assert t["realised_loss"] == pytest.approx(2.0)
    # rejected: rows 1, 4, 8 repay (unrealised gain), rows 3, 9 default (avoided loss)
    assert t["unrealised_gain"] == pytest.approx(1.2)
    assert t["unrealised_loss"] == pytest.approx(2.0)
    # u as written (Sec. 3): granted 3g - 2l; rejected defaulters +g each, repayers -l each
    expected_u = (3 * g - 2 * lo) + (2 * g - 3 * lo)
    assert t["utility"] == pytest.approx(expected_u)
    assert utility(D, Y_REAL, g, lo) == pytest.approx(expected_u)


def test_quarter_metrics_normalisations_and_labels():
    m = quarter_metrics(D, Y_REAL, GROUP, y_obs=Y_OBS)
    assert m["profit"] == pytest.approx(-0.8)
    assert m["utility_q"] == pytest.approx(100 * -0.8 / 10)
    assert m["profit_per_loan"] == pytest.approx(-0.8 / 5)
    assert m["profit_observed"] == pytest.approx(-0.8)  # Y_OBS equals Y_REAL on granted rows
    m2 = quarter_metrics(D, Y_REAL, GROUP, y_obs=1 - Y_REAL, profit_label="y")
    assert m2["profit"] == pytest.approx(2 * 0.4 - 3 * 1.0)
    m3 = quarter_metrics(D, Y_REAL, GROUP, profit_normalization="per_loan")
    assert m3["utility_q"] == pytest.approx(-0.16)
    assert m["n_granted_0"] == 2 and m["n_granted_1"] == 3 and m["n_granted"] == 5
    assert m["delta_sr"] == pytest.approx(-0.2)


def test_auc():
    assert auc(np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1])) == pytest.approx(0.75)
    assert auc(np.array([0.5, 0.5]), np.array([0, 1])) == pytest.approx(0.5)


def test_core_imports_no_ray_torch_scipy():
    import subprocess
    import sys

    code = (
        "import sys, rllib_fair.uncertainty; "
        "print(sorted(m for m in ('ray', 'torch', 'scipy', 'sklearn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
