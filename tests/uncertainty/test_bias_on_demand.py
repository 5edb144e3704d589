"""BiasOnDemand generator: golden values of the public generator and the bias knobs.

The knobs follow the generator's code where it and the paper disagree
(docs/methods/lee2026.md, "Corrections and discrepancies").
"""

import numpy as np
import pytest

from rllib_fair.uncertainty.bias_on_demand import BiasOnDemandConfig, generate


def test_golden_values_public_generator_bit_for_bit():
    d = generate(BiasOnDemandConfig.bod_defaults(), seed=42, compat=True)
    assert len(d) == 15000
    assert d.feature_names == ("P", "Q", "A")
    assert d.features[:, 0].mean() == 4.784181751971225
    assert np.bincount(d.q).tolist() == [1109, 4043, 6047, 3801]
    assert d.group.mean() == pytest.approx(0.5001333, abs=1e-7)
    assert d.y.mean() == pytest.approx(0.4894667, abs=1e-7)
    assert d.y_real.mean() == pytest.approx(0.4894667, abs=1e-7)
    assert d.threshold == -0.3482702003587251
    np.testing.assert_allclose(
        d.features[:3],
        [[6.242744185, 1, 1], [-0.352559071, 2, 1], [2.404239228, 3, 1]],
        atol=5e-10,
    )
    assert d.y[:3].tolist() == [0, 0, 0]
    assert d.biased_group == 1


def test_golden_values_no_bias_baseline_seed0():
    # The counts are the golden values (rounded shares would hide a 0.1225 vs 0.122 tie).
    d = generate(seed=0, disadvantaged_group=1)
    assert np.bincount(d.q).tolist() == [2509, 7469, 7572, 2450]
    assert int(d.y.sum()) == 8910
    assert np.bincount(d.group).tolist() == [9994, 10006]
    assert d.y.mean() == 0.4455
    assert round(d.y[d.group == 0].mean(), 4) == 0.4468
    assert round(d.y[d.group == 1].mean(), 4) == 0.4442


def test_no_bias_groups_exchangeable_and_labels_equal():
    d = generate(seed=3)
    assert abs(d.y[d.group == 0].mean() - d.y[d.group == 1].mean()) < 0.02
    np.testing.assert_array_equal(d.y, d.y_real)


def _by_group(d, values, g):
    return values[d.group == g].mean()


def test_knob_l_h_r_lowers_resources_of_biased_group():
    base = generate(seed=1)
    biased = generate(BiasOnDemandConfig(l_h_r=4.0), seed=1)
    # Same stream: R shifts by exactly l_h_r on the biased group, nothing else.
    b = base.group == 0
    np.testing.assert_allclose(biased.resources[b], base.resources[b] - 4.0)
    np.testing.assert_allclose(biased.resources[~b], base.resources[~b])
    assert _by_group(biased, biased.y, 0) < _by_group(biased, biased.y, 1) - 0.2


def test_knob_l_m_y_biases_observed_label_only():
    base = generate(seed=2)
    cfg = BiasOnDemandConfig(l_m_y=4.0)
    d = generate(cfg, seed=2)
    assert _by_group(d, d.y, 0) < _by_group(d, d.y, 1) - 0.2
    np.testing.assert_allclose(d.score_real, base.score_real)  # true score unchanged
    assert (d.y <= d.y_real)[d.group == 0].all()  # biased group can only lose positives
    # Free consistency check: l_y and l_m_y give the same observed data.
    d2 = generate(BiasOnDemandConfig(l_y=4.0), seed=2)
    np.testing.assert_array_equal(d.y, d2.y)
    np.testing.assert_array_equal(d.features, d2.features)
    assert not np.array_equal(d.y_real, d2.y_real)


def test_knob_l_m_replaces_r_by_proxy():
    d = generate(BiasOnDemandConfig(l_m=2.0), seed=4)
    assert d.feature_names[0] == "P"
    corr = np.corrcoef(d.features[:, 0], d.resources)[0, 1]
    assert 0.5 < corr < 1.0
    gap = d.features[:, 0] - d.resources
    assert gap[d.group == 0].mean() == pytest.approx(-2.0, abs=0.1)
    assert gap[d.group == 1].mean() == pytest.approx(0.0, abs=0.1)


def test_knob_l_h_q_follows_the_code_not_table2():
    # l_h_q raises Q for the biased group (Table 2 says it lowers Q), which still lowers
    # its score because Q enters the score with -l_q.
    d = generate(BiasOnDemandConfig(l_h_q=4.0), seed=0)
    assert _by_group(d, d.q, 0) > _by_group(d, d.q, 1) + 1.0
    assert _by_group(d, d.y, 0) < _by_group(d, d.y, 1)


def test_knob_l_y_b_favours_the_biased_group():
    # The generator adds + l_y_b R A (its docstring says it lowers the score): it raises
    # the biased group's score.
    d = generate(BiasOnDemandConfig(l_y_b=4.0), seed=0)
    assert _by_group(d, d.y, 0) > 0.6 and _by_group(d, d.y, 1) < 0.05


def test_undersampling_and_representation_bias():
    full = generate(seed=5)
    half = generate(BiasOnDemandConfig(p_u=0.5), seed=5)
    n0 = int(np.sum(full.group == 0))
    assert int(np.sum(half.group == 0)) == int(n0 * 0.5)
    assert int(np.sum(half.group == 1)) == int(np.sum(full.group == 1))
    low = generate(BiasOnDemandConfig(p_u=0.5, l_r=True), seed=5)
    kept = low.resources[low.group == 0]
    dropped_max = np.sort(full.resources[full.group == 0])[len(kept) - 1]
    assert kept.max() == dropped_max  # the lowest-R half of the biased group
    with pytest.raises(KeyError):
        generate(BiasOnDemandConfig(p_u=0.5, l_r=True, l_m=1.0), seed=5, compat=True)
    with pytest.raises(ValueError):
        generate(BiasOnDemandConfig(p_u=1e-6), seed=5)


def test_relabelling_swaps_group_and_nothing_else():
    cfg = BiasOnDemandConfig(l_y=2.0, l_m=1.0)
    a = generate(cfg, seed=7, disadvantaged_group=0)
    b = generate(cfg, seed=7, disadvantaged_group=1)
    np.testing.assert_array_equal(a.group, 1 - b.group)
    np.testing.assert_array_equal(a.features[:, :2], b.features[:, :2])
    np.testing.assert_array_equal(a.features[:, 2], 1 - b.features[:, 2])
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.y_real, b.y_real)
    assert a.biased_group == 0 and b.biased_group == 1


def test_omitted_variable_and_feature_sets():
    d = generate(BiasOnDemandConfig(l_o=True), seed=0)
    assert d.feature_names == ("Q", "A")
    x_ind, names = generate(seed=0).feature_matrix("X_ind")
    assert names == ("R", "Q") and x_ind.shape[1] == 2


def test_seeded_determinism():
    a, b, c = generate(seed=11), generate(seed=11), generate(seed=12)
    np.testing.assert_array_equal(a.features, b.features)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.array_equal(a.features, c.features)


@pytest.mark.parametrize("bad", [{"p_u": 0.0}, {"sy": 0.0}, {"dim": 50}, {"p_u": 1.5}])
def test_validation(bad):
    with pytest.raises(ValueError):
        BiasOnDemandConfig(**bad)
