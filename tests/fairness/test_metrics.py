import numpy as np
import pytest

from rllib_fair.fairness import (
    Ledger,
    accuracy_parity_difference,
    counts_from_decisions,
    demographic_parity_difference,
    demographic_parity_ratio,
    equal_opportunity_difference,
    equal_opportunity_ratio,
    equalized_odds_difference,
    equalized_odds_ratio,
    group_rates,
    qualification_parity_difference,
)
from rllib_fair.fairness.counts import (
    DECIDED,
    POPULATION,
    QUALIFIED,
    QUALIFIED_MASS,
    SELECTED,
    SELECTED_QUALIFIED,
)

# Two groups, hand-computed:
# group "a": y_true 1 1 0 0 0, y_pred 1 0 1 0 0 -> sel 2/5, tpr 1/2, fpr 1/3, acc 3/5, qual 2/5
# group "b": y_true 1 1 1 0,   y_pred 1 1 0 0   -> sel 2/4, tpr 2/3, fpr 0/1, acc 3/4, qual 3/4
Y_TRUE = [1, 1, 0, 0, 0, 1, 1, 1, 0]
Y_PRED = [1, 0, 1, 0, 0, 1, 1, 0, 0]
GROUPS = ["a", "a", "a", "a", "a", "b", "b", "b", "b"]


def test_counts_from_decisions():
    counts = counts_from_decisions(Y_TRUE, Y_PRED, [0] * 5 + [1] * 4)
    np.testing.assert_array_equal(counts[DECIDED], [5, 4])
    np.testing.assert_array_equal(counts[QUALIFIED], [2, 3])
    np.testing.assert_array_equal(counts[SELECTED], [2, 2])
    np.testing.assert_array_equal(counts[SELECTED_QUALIFIED], [1, 2])
    np.testing.assert_array_equal(counts[POPULATION], [5, 4])
    np.testing.assert_array_equal(counts[QUALIFIED_MASS], [2, 3])
    weighted = counts_from_decisions([1, 0], [1, 1], [1, 1], n_groups=3, sample_weight=[2, 0.5])
    np.testing.assert_array_equal(weighted[:, 0], 0.0)
    np.testing.assert_array_equal(weighted[[DECIDED, QUALIFIED, SELECTED], 1], [2.5, 2, 2.5])
    with pytest.raises(ValueError, match="same length"):
        counts_from_decisions([1], [1, 0], [0, 0])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        counts_from_decisions([2], [1], [0])
    with pytest.raises(ValueError, match="groups must lie"):
        counts_from_decisions([1], [1], [3], n_groups=2)


def test_hand_computed_values():
    kw = {"sensitive_features": GROUPS}
    assert demographic_parity_difference(Y_TRUE, Y_PRED, **kw) == pytest.approx(0.1)
    assert demographic_parity_ratio(Y_TRUE, Y_PRED, **kw) == pytest.approx(0.8)
    assert equal_opportunity_difference(Y_TRUE, Y_PRED, **kw) == pytest.approx(1 / 6)
    assert equal_opportunity_ratio(Y_TRUE, Y_PRED, **kw) == pytest.approx(0.75)
    assert equalized_odds_difference(Y_TRUE, Y_PRED, **kw) == pytest.approx(1 / 3)
    assert equalized_odds_difference(Y_TRUE, Y_PRED, **kw, agg="mean") == pytest.approx(0.25)
    assert equalized_odds_ratio(Y_TRUE, Y_PRED, **kw) == pytest.approx(0.0)
    assert equalized_odds_ratio(Y_TRUE, Y_PRED, **kw, agg="mean") == pytest.approx(0.375)
    assert accuracy_parity_difference(Y_TRUE, Y_PRED, **kw) == pytest.approx(0.15)
    assert qualification_parity_difference(Y_TRUE, Y_PRED, **kw) == pytest.approx(0.35)
    # to_overall: overall selection rate 4/9
    assert demographic_parity_difference(
        Y_TRUE, Y_PRED, **kw, method="to_overall"
    ) == pytest.approx(max(abs(0.4 - 4 / 9), abs(0.5 - 4 / 9)))
    # to_overall ratio: min over groups of min(r/o, o/r) = min(0.9, 8/9)
    assert demographic_parity_ratio(Y_TRUE, Y_PRED, **kw, method="to_overall") == pytest.approx(
        8 / 9
    )
    rates, overall, labels = group_rates(
        "equalized_odds", Y_TRUE, Y_PRED, sensitive_features=np.array(GROUPS)
    )
    np.testing.assert_allclose(rates, [[1 / 2, 2 / 3], [1 / 3, 0.0]])
    np.testing.assert_allclose(overall, [3 / 5, 1 / 4])
    assert list(labels) == ["a", "b"]


def test_static_equals_one_step_ledger():
    codes = [0] * 5 + [1] * 4
    counts = counts_from_decisions(Y_TRUE, Y_PRED, codes)
    ledger = Ledger.from_counts("equal_opportunity", counts)
    assert ledger.bias() == pytest.approx(
        equal_opportunity_difference(Y_TRUE, Y_PRED, sensitive_features=codes)
    )


def test_zero_demand_group_counts_as_zero_rate():
    # group 1 has no qualified individual: TPR 0.0 and it takes part in the gap (fairlearn),
    # whereas a ledger excludes it
    y_true = [1, 1, 0, 0, 0]
    y_pred = [1, 1, 0, 1, 0]
    groups = [0, 0, 0, 1, 1]
    assert equal_opportunity_difference(y_true, y_pred, sensitive_features=groups) == 1.0
    counts = counts_from_decisions(y_true, y_pred, groups)
    assert Ledger.from_counts("equal_opportunity", counts).bias() == 0.0
    # all rates 0: ratio is 1.0 (fairlearn would give NaN)
    assert demographic_parity_ratio([0, 1], [0, 0], sensitive_features=[0, 1]) == 1.0


def test_bad_arguments():
    kw = {"sensitive_features": GROUPS}
    with pytest.raises(ValueError, match="method must be one of between_groups, to_overall"):
        demographic_parity_difference(Y_TRUE, Y_PRED, **kw, method="pairwise")
    with pytest.raises(ValueError, match="agg must be one of"):
        equalized_odds_difference(Y_TRUE, Y_PRED, **kw, agg="median")
    with pytest.raises(ValueError, match="empty"):
        demographic_parity_difference([], [], sensitive_features=[])


# ---------------------------------------------------------------- against fairlearn


def random_dataset(seed, n_groups, n=300, weighted=False):
    rng = np.random.default_rng(seed)
    names = np.array(["north", "south", "east"])[:n_groups]
    groups = names[rng.integers(0, n_groups, size=n)]
    base = rng.uniform(0.2, 0.8, size=n_groups)[rng.integers(0, n_groups, size=n)]
    y_true = (rng.random(n) < base).astype(int)
    y_pred = (rng.random(n) < 0.3 + 0.4 * y_true * rng.random(n)).astype(int)
    weights = rng.uniform(0.1, 2.0, size=n) if weighted else None
    return y_true, y_pred, groups, weights


PAIRS = [
    ("demographic_parity_difference", demographic_parity_difference),
    ("demographic_parity_ratio", demographic_parity_ratio),
    ("equal_opportunity_difference", equal_opportunity_difference),
    ("equal_opportunity_ratio", equal_opportunity_ratio),
    ("equalized_odds_difference", equalized_odds_difference),
    ("equalized_odds_ratio", equalized_odds_ratio),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_groups", [2, 3])
@pytest.mark.parametrize("method", ["between_groups", "to_overall"])
@pytest.mark.parametrize("weighted", [False, True])
def test_against_fairlearn(seed, n_groups, method, weighted):
    flm = pytest.importorskip("fairlearn.metrics")
    pd = pytest.importorskip("pandas")
    y_true, y_pred, groups, weights = random_dataset(seed, n_groups, weighted=weighted)
    kw = {"sensitive_features": groups, "method": method, "sample_weight": weights}
    for name, ours in PAIRS:
        expected = getattr(flm, name)(y_true, y_pred, **kw)
        assert ours(y_true, y_pred, **kw) == pytest.approx(expected, rel=1e-10, abs=1e-12), name
    for agg in ("worst_case", "mean"):
        for name in ("equalized_odds_difference", "equalized_odds_ratio"):
            expected = getattr(flm, name)(y_true, y_pred, agg=agg, **kw)
            ours = globals()[name](y_true, y_pred, agg=agg, **kw)
            assert ours == pytest.approx(expected, rel=1e-10, abs=1e-12), (name, agg)
    # pandas Series inputs work too (read with np.asarray)
    series_kw = dict(kw, sensitive_features=pd.Series(groups))
    assert demographic_parity_difference(
        pd.Series(y_true), pd.Series(y_pred), **series_kw
    ) == pytest.approx(flm.demographic_parity_difference(y_true, y_pred, **kw))
    # accuracy and qualification parity through MetricFrame
    from sklearn.metrics import accuracy_score

    frame = flm.MetricFrame(
        metrics={
            "accuracy": accuracy_score,
            "qualification": lambda yt, yp, sample_weight=None: np.average(
                yt, weights=sample_weight
            ),
        },
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=groups,
        sample_params={
            "accuracy": {"sample_weight": weights},
            "qualification": {"sample_weight": weights},
        },
    )
    diffs = frame.difference(method=method)
    assert accuracy_parity_difference(y_true, y_pred, **kw) == pytest.approx(
        diffs["accuracy"], rel=1e-10, abs=1e-12
    )
    assert qualification_parity_difference(y_true, y_pred, **kw) == pytest.approx(
        diffs["qualification"], rel=1e-10, abs=1e-12
    )


def test_against_fairlearn_zero_positive_group_and_two_columns():
    flm = pytest.importorskip("fairlearn.metrics")
    rng = np.random.default_rng(7)
    y_true, y_pred, groups, _ = random_dataset(7, 3)
    y_true[groups == "east"] = 0  # no positives in one group
    for name in ("equal_opportunity_difference", "equalized_odds_difference"):
        for method in ("between_groups", "to_overall"):
            expected = getattr(flm, name)(y_true, y_pred, sensitive_features=groups, method=method)
            ours = globals()[name](y_true, y_pred, sensitive_features=groups, method=method)
            assert ours == pytest.approx(expected, abs=1e-12), (name, method)
    # two sensitive columns: groups are the combinations present
    features = np.stack([groups, rng.integers(0, 2, size=len(groups)).astype(str)], axis=1)
    y_true, y_pred, _, _ = random_dataset(8, 3)
    for name, ours in PAIRS:
        expected = getattr(flm, name)(y_true, y_pred, sensitive_features=features)
        assert ours(y_true, y_pred, sensitive_features=features) == pytest.approx(
            expected, abs=1e-12
        ), name
