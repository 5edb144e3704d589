"""The quarterly loop (Lee et al. 2026, Sec. 4) and checks of the paper's claims.

The claims are the paper's qualitative statements under our documented choices
(docs/methods/lee2026.md); a claim that fails is a finding, recorded as ``xfail``.
"""

import numpy as np
import pytest

from rllib_fair.uncertainty.bias_on_demand import BiasOnDemandConfig
from rllib_fair.uncertainty.logistic import DesignTransform
from rllib_fair.uncertainty.loop import (
    QuarterlyAgent,
    QuarterlyConfig,
    QuarterlyProblem,
    make_streams,
    run_quarters,
)
from rllib_fair.uncertainty.strategies import STRATEGIES

SMALL = BiasOnDemandConfig(dim=2000)


def test_records_budgets_and_partition():
    cfg = QuarterlyConfig(bias=SMALL, strategy="prob_weighted")
    records = run_quarters(cfg, seed=0)
    assert [r.quarter for r in records] == list(range(2, 9))
    problem = QuarterlyProblem.build(cfg, 0, make_streams(0)["partition"])
    rows = np.concatenate(problem.parts)
    assert sorted(rows.tolist()) == list(range(len(problem.data)))
    sizes = [len(p) for p in problem.parts]
    assert max(sizes) - min(sizes) <= 1
    for r in records:
        idx = problem.parts[r.quarter - 1]
        np.testing.assert_array_equal(r.rows, idx)
        assert r.budget == int(np.floor(0.8 * problem.data.y[idx].sum() + 0.5))
        assert r.granted.sum() <= r.budget
        assert r.metrics["n_granted"] == r.granted.sum()
        assert r.metrics["n_explored"] == r.explored.sum() <= np.floor(0.05 * len(idx) + 0.5)
    cum = np.cumsum([r.metrics["profit"] for r in records])
    np.testing.assert_allclose([r.metrics["cumulative_profit"] for r in records], cum)
    assert set(records[0].as_row()) >= {"quarter", "budget", "delta_sr", "utility_q"}


def test_budget_label_y_real():
    cfg = QuarterlyConfig(bias=SMALL.replace(l_m_y=4.0), budget_label="y_real")
    problem = QuarterlyProblem.build(cfg, 1, make_streams(1)["partition"])
    idx = problem.parts[3]
    assert problem.budgets[3] == int(np.floor(0.8 * problem.data.y_real[idx].sum() + 0.5))


def test_seeded_determinism():
    cfg = QuarterlyConfig(bias=SMALL, strategy="naive_exploration")
    a, b, c = run_quarters(cfg, 3), run_quarters(cfg, 3), run_quarters(cfg, 4)
    for ra, rb in zip(a, b):
        np.testing.assert_array_equal(ra.granted, rb.granted)
        assert ra.metrics == rb.metrics
    assert any(ra.metrics["delta_sr"] != rc.metrics["delta_sr"] for ra, rc in zip(a, c))


@pytest.mark.parametrize("strategy", ["naive_exploration", "prob_weighted", "uncertainty_aware"])
def test_no_exploration_equals_naive_in_the_loop(strategy):
    naive = run_quarters(QuarterlyConfig(bias=SMALL), seed=5)
    other = run_quarters(QuarterlyConfig(bias=SMALL, strategy=strategy, delta=0.0), seed=5)
    for a, b in zip(naive, other):
        np.testing.assert_array_equal(a.granted, b.granted)


@pytest.mark.parametrize("strategy", ["naive", "counterfactual"])
@pytest.mark.parametrize("train_on", ["quarter", "cumulative"])
def test_selective_feedback_rejected_labels_never_reach_the_model(strategy, train_on):
    cfg = QuarterlyConfig(bias=SMALL, strategy=strategy, train_on=train_on)
    rng = np.random.default_rng(0)
    raw = np.column_stack([rng.gamma(2, 3, 300), rng.integers(0, 4, 300), rng.integers(0, 2, 300)])
    y = rng.integers(0, 2, 300)
    group = raw[:, 2].astype(int)
    design = DesignTransform.fit(raw[:100], ("R", "Q", "A"))
    thetas = []
    for poison in (None, 1 - y):
        agent = QuarterlyAgent(cfg, design, np.random.default_rng(1), np.random.default_rng(2))
        agent.fit_base(raw[:100], y[:100], group[:100])
        p, _ = agent.score(raw[100:])
        dec = agent.decide(p, 60)
        fb = np.where(dec.granted, y[100:], -1 if poison is None else poison[100:])
        agent.update(raw[100:], dec.granted, fb, group[100:], 60)
        thetas.append(agent.model.theta)
        assert len(agent.labelled_y) == 100 + dec.granted.sum()
    np.testing.assert_array_equal(thetas[0], thetas[1])


@pytest.mark.parametrize(
    "kw",
    [
        {"train_on": "cumulative"},
        {"optimizer": "newton"},
        {"strategy": "counterfactual", "cf_rows": "labelled"},
        {"strategy": "counterfactual", "cf_bce_weight": 0.5},
        {"strategy": "prob_weighted", "exploration_sizing": "literal"},
        {"strategy": "naive_exploration", "fill_budget": False},
        {"use_group_feature": False, "q_encoding": "onehot", "batch_size": None},
        {"compute_halfwidth": True, "profit_normalization": "per_loan", "profit_label": "y"},
        {"strategy": "uncertainty_aware", "disadvantaged_group": 1, "num_partitions": 4},
    ],
)
def test_options_run(kw):
    records = run_quarters(QuarterlyConfig(bias=SMALL, **kw), seed=2)
    assert len(records) == kw.get("num_partitions", 8) - 1
    assert all(np.isfinite(r.metrics["utility_q"]) for r in records)


def test_config_validation_and_replace():
    cfg = QuarterlyConfig().replace(l_y=2.0, delta=0.1)
    assert cfg.bias.l_y == 2.0 and cfg.delta == 0.1
    for bad in ({"strategy": "greedy"}, {"num_partitions": 1}, {"delta": 1.5},
                {"strategy": "counterfactual", "optimizer": "newton"}):  # fmt: skip
        with pytest.raises(ValueError):
            QuarterlyConfig(**bad)


def test_label_bias_on_y_and_on_measurement_give_identical_decisions():
    # l_y and l_m_y change S by the same (l_y + l_m_y) A, so (X, Y) are identical;
    # with budget_label="y" every decision is identical and only Y_real differs.
    a = run_quarters(QuarterlyConfig(bias=SMALL.replace(l_y=4.0)), seed=0)
    b = run_quarters(QuarterlyConfig(bias=SMALL.replace(l_m_y=4.0)), seed=0)
    for ra, rb in zip(a, b):
        np.testing.assert_array_equal(ra.granted, rb.granted)
        assert ra.metrics["delta_sr"] == rb.metrics["delta_sr"]
    assert a[-1].metrics["cumulative_profit"] != b[-1].metrics["cumulative_profit"]


# ---- claims (Figs. 2-5 and App. C) --------------------------------------------------------
# Short variant (default suite): one seed, full-size data, the claims that are cheap.


def _final(strategy, seed, **kw):
    return run_quarters(QuarterlyConfig(strategy=strategy), seed, **kw)[-1].metrics


def test_claims_short():
    # 1. no bias: every method's final |Delta SR| is small (per seed 0.08: the naive
    # policy alone exceeds 0.05 on 4 % of seeds)
    for s in STRATEGIES:
        assert abs(_final(s, 0)["delta_sr"]) < 0.08
    # 2. l_m_y = 4: counterfactual ends with a smaller |Delta SR| than naive
    assert abs(_final("counterfactual", 0, l_m_y=4.0)["delta_sr"]) < abs(
        _final("naive", 0, l_m_y=4.0)["delta_sr"]
    )
    # interaction bias favours the biased group 0 (the generator adds + l_y_b R A)
    assert _final("naive", 0, l_y_b=4.0)["delta_sr"] > 0.3


SEEDS = (0, 20, 40)
MAX_SEVERITY = ({"l_y": 4.0}, {"l_m_y": 4.0}, {"l_h_q": 4.0}, {"l_m": 2.0}, {"l_y_b": 4.0})


def _mean(strategy, key, absolute=False, **kw):
    vals = [_final(strategy, seed, **kw)[key] for seed in SEEDS]
    return float(np.mean(np.abs(vals) if absolute else vals))


@pytest.mark.slow
def test_claim1_no_bias_parity():
    for s in STRATEGIES:
        assert _mean(s, "delta_sr", absolute=True) < 0.05  # seed mean (E7)


@pytest.mark.slow
@pytest.mark.xfail(
    reason="finding: under our choices exploration costs profit; naive exploration ends "
    "about 19 % below naive in the no-bias setting",
    strict=False,
)
def test_claim1_no_bias_profits_within_15_percent():
    profits = [_mean(s, "cumulative_profit") for s in STRATEGIES]
    assert min(profits) >= 0.85 * max(profits)


@pytest.mark.slow
@pytest.mark.parametrize("use_group_feature", [True, False])
def test_claim2_counterfactual_mitigates_measurement_bias_on_y(use_group_feature):
    kw = {"l_m_y": 4.0, "use_group_feature": use_group_feature}
    cf = _mean("counterfactual", "delta_sr", absolute=True, **kw)
    assert cf <= _mean("naive", "delta_sr", absolute=True, **kw)


@pytest.mark.slow
@pytest.mark.parametrize(
    "use_group_feature",
    [
        pytest.param(
            True,
            marks=pytest.mark.xfail(
                reason="finding: with the group column centered (A - 1/2) the counterfactual "
                "ends below naive at l_m = 2 (seeds 0/20/40: 0.009 vs 0.018); its larger gap "
                "with the raw 0/1 column came from the coding, which gave the group coded 0 "
                "fewer loans even without bias",
                strict=True,
            ),
        ),
        False,
    ],
)
def test_claim3_counterfactual_worst_under_proxy_bias(use_group_feature):
    kw = {"l_m": 2.0, "use_group_feature": use_group_feature}
    cf = _mean("counterfactual", "delta_sr", absolute=True, **kw)
    assert cf >= _mean("naive", "delta_sr", absolute=True, **kw)


@pytest.mark.slow
@pytest.mark.xfail(
    reason="finding: under our choices naive is the most profitable method in every "
    "single-bias setting (exploration only costs; the logistic model is well specified)",
    strict=False,
)
def test_claim4_prob_weighted_most_profitable():
    wins = sum(
        _mean("prob_weighted", "cumulative_profit", **b) >= _mean("naive", "cumulative_profit", **b)
        for b in MAX_SEVERITY
    )
    assert wins >= 4  # of the five bias types of App. C (l_h_r is in no heatmap)


def test_counterfactual_tau_is_the_budget_th_largest_score(monkeypatch):
    cfg = QuarterlyConfig(bias=SMALL, strategy="counterfactual")
    rng = np.random.default_rng(0)
    raw = np.column_stack([rng.gamma(2, 3, 300), rng.integers(0, 4, 300), rng.integers(0, 2, 300)])
    y = rng.integers(0, 2, 300)
    group = raw[:, 2].astype(int)
    agent = QuarterlyAgent(
        cfg, DesignTransform.fit(raw[:100], ("R", "Q", "A")), np.random.default_rng(1),
        np.random.default_rng(2),
    )  # fmt: skip
    agent.fit_base(raw[:100], y[:100], group[:100])
    p, _ = agent.score(raw[100:])
    seen = {}
    original = agent.model.fit_counterfactual

    def spy(x, y_, observed, tau, **kw):
        seen["tau"], seen["n"], seen["observed"] = tau, x.shape[0], observed.sum()
        return original(x, y_, observed, tau, **kw)

    monkeypatch.setattr(agent.model, "fit_counterfactual", spy)
    dec = agent.decide(p, 60)
    agent.update(raw[100:], dec.granted, np.where(dec.granted, y[100:], -1), group[100:], 60)
    assert seen["tau"] == np.sort(p)[::-1][59]
    assert seen["n"] == 200 and seen["observed"] == dec.granted.sum()  # cf_rows="all" (E9)
