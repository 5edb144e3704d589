import math

import numpy as np
import pytest

from rllib_fair.fairness import (
    Ledger,
    WindowedDisparity,
    benefit_rates,
    bias,
    bias_grad,
    difference,
    disparity_series,
    get_notion,
    list_notions,
    ratio,
    soft_bias,
    soft_bias_grad,
)
from rllib_fair.fairness.counts import (
    DECIDED,
    NUM_FIELDS,
    POPULATION,
    QUALIFIED,
    QUALIFIED_MASS,
    SELECTED,
    SELECTED_QUALIFIED,
    empty_counts,
)


def step(decided, qualified, selected, selected_qualified, population=None, qualified_mass=None):
    counts = empty_counts(len(decided))
    counts[DECIDED] = decided
    counts[QUALIFIED] = qualified
    counts[SELECTED] = selected
    counts[SELECTED_QUALIFIED] = selected_qualified
    counts[POPULATION] = decided if population is None else population
    counts[QUALIFIED_MASS] = qualified if qualified_mass is None else qualified_mass
    return counts


def random_counts(rng, n_steps, n_groups, p_empty=0.3, fractional=False):
    """Consistent random counts; some groups have no decision in some steps."""
    decided = rng.integers(0, 4, size=(n_steps, n_groups)).astype(float)
    decided[rng.random((n_steps, n_groups)) < p_empty] = 0.0
    qualified = rng.binomial(decided.astype(int), 0.5).astype(float)
    selected_qualified = rng.binomial(qualified.astype(int), 0.6).astype(float)
    selected_unqualified = rng.binomial((decided - qualified).astype(int), 0.3).astype(float)
    counts = np.zeros((n_steps, NUM_FIELDS, n_groups))
    counts[:, DECIDED] = decided
    counts[:, QUALIFIED] = qualified
    counts[:, SELECTED] = selected_qualified + selected_unqualified
    counts[:, SELECTED_QUALIFIED] = selected_qualified
    counts[:, POPULATION] = rng.integers(0, 5, size=(n_steps, n_groups))
    counts[:, QUALIFIED_MASS] = rng.binomial(counts[:, POPULATION].astype(int), 0.4)
    if fractional:
        counts *= rng.uniform(0.1, 1.0, size=(n_steps, 1, n_groups))
    return counts


# ---------------------------------------------------------------- pure functions


def test_benefit_rates_zero_demand_convention():
    supply = np.array([[1.0, 0.0, 3.0]])
    demand = np.array([[2.0, 0.0, 4.0]])
    rates, defined = benefit_rates(supply, demand)
    np.testing.assert_array_equal(rates, [[0.5, 0.0, 0.75]])
    np.testing.assert_array_equal(defined, [[True, False, True]])
    rates, defined = benefit_rates(supply, demand, smoothing=1.0)
    np.testing.assert_array_equal(rates, [[1 / 3, 0.0, 0.6]])
    assert defined.all()
    with np.errstate(all="raise"):
        rates, defined = benefit_rates([0.0, 1.0], [1e-13, 0.0])
    np.testing.assert_array_equal(rates, [0.0, 0.0])
    assert not defined.any()
    with pytest.raises(ValueError, match="smoothing"):
        benefit_rates(supply, demand, smoothing=-1.0)


def test_bias_difference_ratio_hand_examples():
    z = np.array([0.2, 0.5, 0.9])
    assert bias(z) == pytest.approx(0.7)
    assert difference(z) == pytest.approx(0.7)
    assert ratio(z) == pytest.approx(0.2 / 0.9)
    # group 2 undefined: excluded from the gap
    mask = np.array([True, True, False])
    assert bias(z, mask) == pytest.approx(0.3)
    assert ratio(z, mask) == pytest.approx(0.4)
    # one or no group defined: no gap
    assert bias(z, [False, True, False]) == 0.0
    assert bias(z, [False, False, False]) == 0.0
    assert ratio(z, [False, True, False]) == 1.0
    assert ratio(np.zeros(3)) == 1.0
    assert soft_bias(z, 5.0, [False, True, False]) == 0.0
    assert soft_bias(z, 5.0, [False, False, False]) == 0.0
    # non-finite rates count as undefined; results are finite
    assert bias([np.nan, 0.1, 0.4]) == pytest.approx(0.3)
    assert bias([np.inf, 0.1]) == 0.0
    # vectorised over leading dims
    stacked = np.array([[0.1, 0.4], [0.3, 0.3]])
    np.testing.assert_allclose(bias(stacked), [0.3, 0.0])
    assert isinstance(bias(z), float)


def test_soft_bias_hand_value():
    z = np.array([0.0, 1.0])
    beta = 2.0
    # (1/beta) [log(e^0 + e^2) + log(e^0 + e^-2)]
    expected = (math.log(1 + math.e**2) + math.log(1 + math.e**-2)) / beta
    assert soft_bias(z, beta) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="beta"):
        soft_bias(z, 0.0)


def test_soft_bias_is_stable_for_large_beta():
    z = np.array([0.1, 0.7, 0.4])
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        value = soft_bias(z, 1e6)
        grad = soft_bias_grad(z, 1e6)
    assert value == pytest.approx(0.6, abs=1e-6)
    np.testing.assert_allclose(grad, [-1.0, 1.0, 0.0], atol=1e-9)


@pytest.mark.parametrize("n_groups", [2, 3, 5, 10])
@pytest.mark.parametrize("beta", [0.5, 3.0, 20.0, 100.0])
def test_prop_3_3_bounds(n_groups, beta):
    rng = np.random.default_rng(n_groups * 1000 + int(beta))
    rates = rng.random((500, n_groups))
    b = bias(rates)
    b_soft = soft_bias(rates, beta)
    # Prop. 3.3, Xu et al. 2024: b <= b_soft <= b + 2 log(M) / beta
    assert np.all(b <= b_soft)
    assert np.all(b_soft <= b + 2 * math.log(n_groups) / beta + 1e-12)
    # with an undefined group, M is the number of defined groups
    if n_groups > 2:
        mask = np.ones(n_groups, dtype=bool)
        mask[0] = False
        b = bias(rates, mask)
        b_soft = soft_bias(rates, beta, mask)
        assert np.all(b <= b_soft)
        assert np.all(b_soft <= b + 2 * math.log(n_groups - 1) / beta + 1e-12)


def test_soft_bias_upper_bound_is_tight_and_large_beta_approaches_bias():
    # all groups equal: b = 0 and b_soft = 2 log(M) / beta exactly
    for m in (2, 4, 7):
        assert soft_bias(np.full(m, 0.3), 4.0) == pytest.approx(2 * math.log(m) / 4.0)
    rng = np.random.default_rng(1)
    rates = rng.random((50, 4))
    gaps = [np.max(soft_bias(rates, beta) - bias(rates)) for beta in (1.0, 10.0, 1e3, 1e5)]
    assert gaps == sorted(gaps, reverse=True)
    assert gaps[-1] < 2 * math.log(4) / 1e5 + 1e-12


@pytest.mark.parametrize("beta", [1.0, 7.0, 30.0])
def test_soft_bias_grad_matches_finite_differences(beta):
    rng = np.random.default_rng(2)
    eps = 1e-6
    for _ in range(20):
        z = rng.random(4)
        mask = rng.random(4) < 0.8
        grad = soft_bias_grad(z, beta, mask)
        numeric = np.zeros(4)
        for g in range(4):
            up, down = z.copy(), z.copy()
            up[g] += eps
            down[g] -= eps
            numeric[g] = (soft_bias(up, beta, mask) - soft_bias(down, beta, mask)) / (2 * eps)
        np.testing.assert_allclose(grad, numeric, atol=1e-6)
        assert np.all(grad[~mask] == 0.0)
        if mask.sum() >= 2:
            assert grad.sum() == pytest.approx(0.0, abs=1e-12)
    # vectorised over leading dims
    stacked = rng.random((3, 2, 5))
    grad = soft_bias_grad(stacked, beta)
    assert grad.shape == stacked.shape
    np.testing.assert_allclose(grad[1, 0], soft_bias_grad(stacked[1, 0], beta))


def test_bias_grad():
    np.testing.assert_array_equal(bias_grad([0.2, 0.9, 0.1]), [0.0, 1.0, -1.0])
    np.testing.assert_array_equal(bias_grad([0.2, 0.9, 0.1], [True, False, True]), [1, 0, -1])
    np.testing.assert_array_equal(bias_grad([0.2, 0.9, 0.1], [False, True, False]), [0, 0, 0])
    np.testing.assert_array_equal(bias_grad([0.5, 0.5]), [0.0, 0.0])
    np.testing.assert_array_equal(bias_grad([[0.1, 0.2], [0.4, 0.3]]), [[-1, 1], [1, -1]])
    # agrees with finite differences of the bias away from ties
    z = np.array([0.3, 0.8, 0.1, 0.5])
    eps = 1e-7
    numeric = [(bias(z + eps * np.eye(4)[g]) - bias(z)) / eps for g in range(4)]
    np.testing.assert_allclose(bias_grad(z), numeric, atol=1e-6)


# ---------------------------------------------------------------- Ledger


def test_ledger_exact_rates_and_bias():
    ledger = Ledger("equal_opportunity", 2)
    ledger.update(step([10, 8], [6, 2], [5, 3], [4, 1]))
    np.testing.assert_array_equal(ledger.supply, [[4.0, 1.0]])
    np.testing.assert_array_equal(ledger.demand, [[6.0, 2.0]])
    np.testing.assert_allclose(ledger.rates(), [[4 / 6, 1 / 2]])
    assert ledger.bias() == pytest.approx(1 / 6)
    assert ledger.difference() == pytest.approx(1 / 6)
    assert ledger.ratio() == pytest.approx(0.75)
    ledger.update(step([4, 4], [3, 2], [1, 2], [0, 2]))
    np.testing.assert_allclose(ledger.rates(), [[4 / 9, 3 / 4]])
    assert ledger.bias() == pytest.approx(3 / 4 - 4 / 9)
    np.testing.assert_array_equal(ledger.bias_grad(), [[-1.0, 1.0]])
    assert ledger.steps == 2


def test_ledger_equalized_odds_takes_worst_pair():
    ledger = Ledger("equalized_odds", 2)
    ledger.update(step([10, 8], [6, 2], [5, 3], [4, 1]))
    # tpr: 4/6 vs 1/2 -> 1/6; fpr: 1/4 vs 2/6 -> 1/12
    np.testing.assert_allclose(ledger.rates(), [[4 / 6, 1 / 2], [1 / 4, 2 / 6]])
    np.testing.assert_allclose(ledger.pair_bias(), [1 / 6, 1 / 12])
    assert ledger.bias() == pytest.approx(1 / 6)
    assert ledger.ratio() == pytest.approx(min(0.5 / (4 / 6), (1 / 4) / (2 / 6)))
    assert ledger.soft_bias(10.0) == pytest.approx(
        max(soft_bias([4 / 6, 1 / 2], 10.0), soft_bias([1 / 4, 2 / 6], 10.0))
    )


def test_ledger_discounted():
    gamma = 0.5
    ledger = Ledger("demographic_parity", 2, gamma=gamma)
    a = step([2, 4], [0, 0], [1, 4], [0, 0])
    b = step([2, 4], [0, 0], [2, 0], [0, 0])
    c = step([4, 4], [0, 0], [0, 4], [0, 0])
    for counts in (a, b, c):
        ledger.update(counts)
    # Def. 2.2: S_g = sum_t gamma^t S_g(t)
    np.testing.assert_allclose(ledger.supply, [[1 + 0.5 * 2 + 0.25 * 0, 4 + 0 + 0.25 * 4]])
    np.testing.assert_allclose(ledger.demand, [[2 + 1 + 1, 4 + 2 + 1]])
    np.testing.assert_allclose(ledger.rates(), [[2 / 4, 5 / 7]])
    assert ledger.bias() == pytest.approx(5 / 7 - 1 / 2)
    ledger.reset()
    ledger.update(a)
    np.testing.assert_allclose(ledger.supply, [[1, 4]])
    with pytest.raises(ValueError, match="gamma"):
        Ledger("demographic_parity", 2, gamma=0.0)


def test_ledger_zero_demand_convention():
    # group 1 never had a qualified individual: its TPR is undefined
    ledger = Ledger("equal_opportunity", 3)
    with np.errstate(all="raise"):
        ledger.update(step([5, 3, 4], [2, 0, 4], [2, 1, 1], [1, 0, 1]))
        rates = ledger.rates()
        np.testing.assert_array_equal(ledger.defined, [[True, False, True]])
        np.testing.assert_allclose(rates, [[0.5, 0.0, 0.25]])
        assert ledger.bias() == pytest.approx(0.25)  # group 1 excluded, not "rate 0"
        assert ledger.ratio() == pytest.approx(0.5)
        assert np.isfinite(ledger.soft_bias(5.0))
        summary = ledger.summary(beta=5.0)
    assert all(math.isfinite(v) for v in summary.values())
    # only one group defined: no gap
    single = Ledger("equal_opportunity", 2)
    single.update(step([5, 3], [2, 0], [2, 1], [1, 0]))
    assert single.bias() == 0.0
    assert single.soft_bias(3.0) == 0.0
    assert single.ratio() == 1.0
    np.testing.assert_array_equal(single.soft_bias_grad(3.0), [[0.0, 0.0]])
    # empty ledger
    empty = Ledger("accuracy_parity", 2)
    assert empty.bias() == 0.0 and empty.ratio() == 1.0
    np.testing.assert_array_equal(empty.rates(), [[0.0, 0.0]])


def test_ledger_smoothing():
    ledger = Ledger("equal_opportunity", 2, smoothing=1.0)
    ledger.update(step([5, 3], [3, 0], [2, 1], [2, 0]))
    np.testing.assert_allclose(ledger.rates(), [[2 / 4, 0 / 1]])
    assert ledger.defined.all()
    assert ledger.bias() == pytest.approx(0.5)


@pytest.mark.parametrize("notion", list_notions())
@pytest.mark.parametrize("gamma", [1.0, 0.9])
def test_update_many_equals_repeated_update(notion, gamma):
    rng = np.random.default_rng(3)
    counts = random_counts(rng, 40, 3, fractional=True)
    one = Ledger(notion, 3, gamma=gamma)
    for t in range(40):
        one.update(counts[t])
    many = Ledger(notion, 3, gamma=gamma)
    many.update_many(counts[:15])
    many.update_many(counts[15:15])
    many.update_many(counts[15:])
    np.testing.assert_allclose(many.supply, one.supply, rtol=1e-12)
    np.testing.assert_allclose(many.demand, one.demand, rtol=1e-12)
    assert many.bias() == pytest.approx(one.bias(), rel=1e-12, abs=1e-15)
    assert many.steps == one.steps == 40
    built = Ledger.from_counts(notion, counts, gamma=gamma)
    np.testing.assert_allclose(built.supply, one.supply, rtol=1e-12)
    # one more step continues the same discount clock
    one.update(counts[0])
    many.update(counts[0])
    np.testing.assert_allclose(many.demand, one.demand, rtol=1e-12)


def test_merge_combine_copy():
    rng = np.random.default_rng(4)
    episodes = [random_counts(rng, 10, 2) for _ in range(3)]
    ledgers = [Ledger.from_counts("accuracy_parity", ep, gamma=0.95) for ep in episodes]
    total = Ledger.combine(ledgers)
    np.testing.assert_allclose(total.supply, sum(led.supply for led in ledgers))
    np.testing.assert_allclose(total.demand, sum(led.demand for led in ledgers))
    assert total.steps == 30
    assert total is not ledgers[0]
    fresh = Ledger.from_counts("accuracy_parity", episodes[0], gamma=0.95)
    np.testing.assert_allclose(ledgers[0].supply, fresh.supply)  # inputs untouched
    copy = ledgers[1].copy()
    copy.merge(ledgers[2])
    np.testing.assert_allclose(copy.demand, ledgers[1].demand + ledgers[2].demand)
    assert not np.allclose(copy.demand, ledgers[1].demand)
    assert copy.merge(Ledger("accuracy_parity", 2, gamma=0.95)) is copy
    with pytest.raises(ValueError, match="cannot merge"):
        total.merge(Ledger("equal_opportunity", 2, gamma=0.95))
    with pytest.raises(ValueError, match="cannot merge"):
        total.merge(Ledger("accuracy_parity", 3, gamma=0.95))
    with pytest.raises(ValueError, match="gamma"):
        total.merge(Ledger("accuracy_parity", 2, gamma=1.0))
    with pytest.raises(ValueError):
        Ledger.combine([])


def test_temporal_discrimination_example():
    """Xu et al. 2024 Sec. 2.3: trajectories A and B have the same long-term bias."""
    # group 0 (blue), group 1 (red); demographic parity: approvals / applicants
    traj_a = np.stack(
        [step([1, 100], [0, 0], [0, 0], [0, 0]), step([100, 1], [0, 0], [100, 1], [0, 0])]
    )
    traj_b = np.stack(
        [step([1, 100], [0, 0], [0, 1], [0, 0]), step([100, 1], [0, 0], [100, 0], [0, 0])]
    )
    expected = abs(100 / 101 - 1 / 101)
    for traj in (traj_a, traj_b):
        ledger = Ledger.from_counts("demographic_parity", traj)
        assert ledger.bias() == pytest.approx(expected, rel=1e-12)
    # ratio-before-aggregation (sum of per-step signed gaps) tells them apart
    per_step_a = disparity_series("demographic_parity", traj_a, window=1, signed=True)
    per_step_b = disparity_series("demographic_parity", traj_b, window=1, signed=True)
    assert per_step_a.sum() == pytest.approx(0.0)
    assert per_step_b.sum() == pytest.approx(-0.99)


def test_by_group_and_summary_keys():
    ledger = Ledger("equalized_odds", 2)
    ledger.update(step([10, 8], [6, 2], [5, 3], [4, 1]))
    table = ledger.by_group(["a", "b"])
    assert set(table) == {"tpr", "fpr"}
    assert table["fpr"]["b"] == {"supply": 2.0, "demand": 6.0, "rate": 2 / 6, "defined": True}
    summary = ledger.summary(beta=10.0)
    assert summary["rate/tpr/0"] == pytest.approx(4 / 6)
    assert summary["supply/fpr/1"] == 2.0
    assert summary["demand/tpr/1"] == 2.0
    assert summary["bias/tpr"] == pytest.approx(1 / 6)
    assert summary["bias/fpr"] == pytest.approx(1 / 12)
    assert summary["bias"] == pytest.approx(1 / 6)
    assert summary["soft_bias"] == pytest.approx(ledger.soft_bias(10.0))
    assert "ratio" in summary
    single = Ledger("demographic_parity", 2).summary(group_names=["x", "y"])
    assert sorted(single) == sorted(
        [
            "rate/selection_rate/x",
            "rate/selection_rate/y",
            "supply/selection_rate/x",
            "supply/selection_rate/y",
            "demand/selection_rate/x",
            "demand/selection_rate/y",
            "bias/selection_rate",
            "bias",
            "ratio",
        ]
    )
    assert all(isinstance(v, float) for v in summary.values())
    with pytest.raises(ValueError, match="group_names"):
        ledger.summary(group_names=["only-one"])


def test_qualification_parity_aggregates_population_snapshots():
    ledger = Ledger("qualification_parity", 2)
    ledger.update(step([1, 1], [0, 0], [0, 0], [0, 0], population=[10, 10], qualified_mass=[5, 2]))
    ledger.update(step([0, 0], [0, 0], [0, 0], [0, 0], population=[10, 30], qualified_mass=[7, 9]))
    np.testing.assert_allclose(ledger.rates(), [[12 / 20, 11 / 40]])
    current = WindowedDisparity("qualification_parity", 2, window=1)
    current.update(step([1, 1], [0, 0], [0, 0], [0, 0], population=[10, 10], qualified_mass=[5, 2]))
    assert current.value == pytest.approx(0.3)
    current.update(step([0, 0], [0, 0], [0, 0], [0, 0], population=[10, 30], qualified_mass=[7, 9]))
    assert current.value == pytest.approx(0.7 - 0.3)
    assert current.signed_value == pytest.approx(0.3 - 0.7)


# ---------------------------------------------------------------- WindowedDisparity


@pytest.mark.parametrize("notion", list_notions())
@pytest.mark.parametrize("n_groups", [2, 3])
def test_windowed_cumulative_equals_ledger(notion, n_groups):
    rng = np.random.default_rng(5)
    counts = random_counts(rng, 60, n_groups, p_empty=0.5)
    tracker = WindowedDisparity(notion, n_groups)
    ledger = Ledger(notion, n_groups)
    series = disparity_series(notion, counts)
    for t in range(60):
        ledger.update(counts[t])
        value = tracker.update(counts[t])
        assert value == pytest.approx(ledger.bias(), abs=1e-12)
        assert tracker.value == value
        assert series[t] == pytest.approx(value, abs=1e-12)
        np.testing.assert_allclose(tracker.rates(), ledger.rates(), atol=1e-12)
        np.testing.assert_array_equal(tracker.defined, ledger.defined)


@pytest.mark.parametrize("notion", list_notions())
@pytest.mark.parametrize("window", [1, 3, 7])
@pytest.mark.parametrize("fractional", [False, True])
def test_windowed_equals_naive_recomputation(notion, window, fractional):
    rng = np.random.default_rng(window + 10 * fractional)
    n_groups = 2
    counts = random_counts(rng, 50, n_groups, p_empty=0.4, fractional=fractional)
    tracker = WindowedDisparity(notion, n_groups, window=window)
    series = disparity_series(notion, counts, window=window)
    signed_series = disparity_series(notion, counts, window=window, signed=True)
    for t in range(50):
        value = tracker.update(counts[t])
        naive = Ledger.from_counts(notion, counts[max(0, t - window + 1) : t + 1])
        assert value == pytest.approx(naive.bias(), abs=1e-9)
        np.testing.assert_allclose(tracker.supply, naive.supply, atol=1e-9)
        np.testing.assert_allclose(tracker.demand, naive.demand, atol=1e-9)
        np.testing.assert_array_equal(tracker.defined, naive.defined)
        assert series[t] == pytest.approx(value, abs=1e-9)
        # with two pairs (equalized odds) the sign may follow either pair on a near-tie
        assert abs(signed_series[t]) == pytest.approx(abs(tracker.signed_value), abs=1e-9)
        assert abs(tracker.signed_value) == pytest.approx(value, abs=1e-9)
        if get_notion(notion).n_pairs == 1:
            assert signed_series[t] == pytest.approx(tracker.signed_value, abs=1e-9)
            assert tracker.signed_value == pytest.approx(
                tracker.rates()[0, 1] - tracker.rates()[0, 0] if tracker.defined.all() else 0.0
            )


def test_windowed_smoothing_signed_and_reset():
    tracker = WindowedDisparity("equal_opportunity", 2, window=2, smoothing=1.0)
    assert tracker.value == 0.0 and tracker.signed_value == 0.0
    tracker.update(step([4, 4], [3, 1], [2, 1], [2, 1]))
    # rates 2/4 and 1/2
    assert tracker.value == pytest.approx(0.0)
    value = tracker.update(step([4, 4], [1, 3], [1, 3], [1, 3]))
    # rates 3/5 and 4/5
    assert value == pytest.approx(0.2)
    assert tracker.signed_value == pytest.approx(0.2)
    value = tracker.update(step([4, 4], [0, 0], [0, 0], [0, 0]))
    # window drops the first step: rates 1/2 and 3/4
    assert value == pytest.approx(0.25)
    tracker.reset()
    assert tracker.value == 0.0 and tracker.steps == 0
    np.testing.assert_array_equal(tracker.supply, np.zeros((1, 2)))
    tracker.update(step([4, 4], [2, 2], [2, 0], [2, 0]))
    assert tracker.signed_value == pytest.approx(0.0 - 2 / 3)
    with pytest.raises(ValueError, match="2 groups"):
        _ = WindowedDisparity("equal_opportunity", 3).signed_value
    with pytest.raises(ValueError, match="window"):
        WindowedDisparity("equal_opportunity", 2, window=0)
    with pytest.raises(ValueError, match="expected shape"):
        tracker.update(np.zeros((NUM_FIELDS, 3)))


def test_windowed_running_sums_do_not_drift():
    # A huge step followed by small fractional ones: plain running sums would keep the
    # cancellation error forever; the periodic refresh from the ring removes it.
    tracker = WindowedDisparity("demographic_parity", 2, window=2)
    huge = step([1e17, 1e17], [0, 0], [3e16, 1e16], [0, 0])
    tracker.update(huge)
    rng = np.random.default_rng(6)
    small = [step(d, [0, 0], d * rng.random(2), [0, 0]) for d in rng.uniform(0.1, 1.0, (8, 2))]
    for t, counts in enumerate(small):
        value = tracker.update(counts)
        if t >= 3:
            naive = Ledger.from_counts("demographic_parity", np.stack(small[t - 1 : t + 1]))
            assert value == pytest.approx(naive.bias(), abs=1e-12)
            np.testing.assert_allclose(tracker.demand, naive.demand, rtol=1e-14)
