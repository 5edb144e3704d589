from fractions import Fraction as F

import numpy as np
import pytest

import rllib_fair.fairness as fairness
from rllib_fair.fairness import (
    LABEL_SOURCES,
    SELECTIVE_NOTIONS,
    SelectiveDisparities,
    SelectiveWindow,
    decision_counts,
    disparity_series,
    get_notion,
    group_utilities,
    imputation_bias,
    imputation_terms,
    running_selective_disparity,
    selective_disparity,
    selective_disparity_series,
)

QP, AP, EO = "qualification_parity", "accuracy_parity", "equal_opportunity"

# --------------------------------------------------------------------------------------
# An independent, row-by-row reference (plain masks, no sufficient statistics)
# --------------------------------------------------------------------------------------


def naive_mu(notion, source, g, a, y, p, group):
    """mu^group computed directly from the rows, and whether it is defined."""
    m = g == group
    a, y, p = a[m], y[m], p[m]
    if source == "accepted":
        keep = a == 1
        a, y, p = a[keep], y[keep], p[keep]
        lab = y
    elif source == "imputed":
        lab = a * y + (1 - a) * p
    else:
        lab = y
    if notion == QP:
        num, den = lab.sum(), float(len(lab))
    elif notion == AP:
        num, den = (a * lab + (1 - a) * (1 - lab)).sum(), float(len(lab))
    else:
        num, den = (a * lab).sum(), lab.sum()
    return (num / den, True) if den > 1e-12 else (0.0, False)


def naive_delta(notion, source, g, a, y, p):
    m0, d0 = naive_mu(notion, source, g, a, y, p, 0)
    m1, d1 = naive_mu(notion, source, g, a, y, p, 1)
    return m1 - m0 if (d0 and d1) else 0.0


def naive_terms(g, a, y, p, group):
    """(r, eps, phi_tilde) of one group, directly from the rows."""
    m = g == group
    a, y, p = a[m], y[m], p[m]
    n = len(a)
    rej = a == 0
    r = rej.sum() / n if n else 0.0
    eps = (p[rej] - y[rej]).mean() if rej.any() else 0.0
    phi = (a * y + (1 - a) * p).mean() if n else 0.0
    return r, eps, phi


def random_rows(rng, n, p_group1=0.4, p_accept=0.5, prob_pred=False):
    g = (rng.random(n) < p_group1).astype(int)
    a = (rng.random(n) < p_accept).astype(float)
    y = (rng.random(n) < 0.6).astype(float)
    p = rng.random(n) if prob_pred else (rng.random(n) < 0.5).astype(float)
    return g, a, y, p


# --------------------------------------------------------------------------------------
# Hand-computed table
# --------------------------------------------------------------------------------------

# (group, A, Y, Y^). Predictions of accepted rows are the wrong label on purpose: the
# imputed source must never read them.
TABLE = [
    (0, 1, 1, 0),
    (0, 1, 0, 1),
    (0, 0, 1, 0),
    (0, 0, 0, 1),
    (0, 0, 1, 0),
    (1, 1, 1, 0),
    (1, 1, 1, 0),
    (1, 0, 0, 1),
    (1, 0, 1, 1),
]
# group 0: n=5, accepted 2 (Y = 1, 0), rejected Y = (1, 0, 1) with Y^ = (0, 1, 0)
#   Y~ = (1, 0, 0, 1, 0)
# group 1: n=4, accepted 2 (Y = 1, 1), rejected Y = (0, 1) with Y^ = (1, 1)
#   Y~ = (1, 1, 1, 1)
EXPECTED_MU = {
    (QP, "true"): (F(3, 5), F(3, 4)),
    (AP, "true"): (F(2, 5), F(3, 4)),
    (EO, "true"): (F(1, 3), F(2, 3)),
    (QP, "accepted"): (F(1, 2), F(1)),
    (AP, "accepted"): (F(1, 2), F(1)),
    (EO, "accepted"): (F(1), F(1)),
    (QP, "imputed"): (F(2, 5), F(1)),
    (AP, "imputed"): (F(3, 5), F(1, 2)),
    (EO, "imputed"): (F(1, 2), F(1, 2)),
}


def table_columns(table=TABLE):
    cols = np.array(table, dtype=float).T
    return cols[0].astype(int), cols[1], cols[2], cols[3]


@pytest.mark.parametrize(("notion", "source"), sorted(EXPECTED_MU))
def test_hand_computed_utilities(notion, source):
    g, a, y, p = table_columns()
    util = group_utilities(notion, g, a, y, p, source=source)
    mu0, mu1 = EXPECTED_MU[(notion, source)]
    assert util.notion == notion and util.source == source
    assert util.utility.tolist() == pytest.approx([float(mu0), float(mu1)], abs=1e-15)
    assert util.defined.tolist() == [True, True]
    assert util.disparity == pytest.approx(float(mu1 - mu0), abs=1e-15)
    assert util.gap == pytest.approx(abs(float(mu1 - mu0)), abs=1e-15)
    assert selective_disparity(notion, g, a, y, p, source=source) == util.disparity
    assert selective_disparity(notion, g, a, y, p, source=source, signed=False) == util.gap


def test_hand_computed_disparities_and_sign():
    g, a, y, p = table_columns()
    # group 1 minus group 0
    assert selective_disparity(QP, g, a, y, p) == pytest.approx(0.15, abs=1e-15)
    assert selective_disparity(AP, g, a, y, p) == pytest.approx(0.35, abs=1e-15)
    assert selective_disparity(EO, g, a, y, p) == pytest.approx(1 / 3, abs=1e-15)
    assert selective_disparity(AP, g, a, y, p, source="imputed") == pytest.approx(-0.1)
    assert selective_disparity(AP, g, a, y, p, source="imputed", signed=False) == pytest.approx(0.1)
    # swapping the group labels flips the sign
    assert selective_disparity(QP, 1 - g, a, y, p) == pytest.approx(-0.15, abs=1e-15)
    # imputed equal opportunity hides a true gap of 1/3 on this table
    assert selective_disparity(EO, g, a, y, p, source="imputed") == 0.0


def test_hand_computed_terms():
    g, a, y, p = table_columns()
    terms = imputation_terms(QP, g, a, y, p)
    assert terms.rejection_rate.tolist() == pytest.approx([3 / 5, 1 / 2])
    # eps^0 = mean(Y^ - Y | rejected) = ((0-1) + (1-0) + (0-1)) / 3; eps^1 = ((1-0) + (1-1)) / 2
    assert terms.predictor_error.tolist() == pytest.approx([-1 / 3, 1 / 2])
    assert terms.weighted_error.tolist() == pytest.approx([-1 / 5, 1 / 4])
    assert terms.imputed_positive_rate.tolist() == pytest.approx([2 / 5, 1.0])
    assert terms.phi_tilde is terms.imputed_positive_rate
    # kappa = 1 - r eps / phi~ = (1 + 1/2, 1 - 1/4)
    assert terms.kappa.tolist() == pytest.approx([1.5, 0.75])
    assert terms.true_disparity == pytest.approx(0.15)
    assert terms.imputed_disparity == pytest.approx(0.6)
    # B = r^1 eps^1 - r^0 eps^0 = 1/4 + 1/5
    assert terms.bias == pytest.approx(9 / 20)
    assert imputation_bias(QP, g, a, y, p) == pytest.approx(9 / 20)
    assert imputation_bias(AP, g, a, y, p) == pytest.approx(9 / 20)
    # EO form: r^1 eps^1 / phi~^1 - r^0 eps^0 / phi~^0 = 1/4 + 1/2
    assert imputation_bias(EO, g, a, y, p) == pytest.approx(3 / 4)


def test_hand_computed_probability_predictions():
    # (group, A, Y, P(Y^ = 1)); expected utilities are ratios of expected counts
    table = [(0, 1, 1, 0.9), (0, 0, 1, 0.25), (0, 0, 0, 0.5), (1, 1, 0, 0.2), (1, 0, 1, 0.75)]
    g, a, y, p = table_columns(table)
    # group 0: Y~ = (1, .25, .5); group 1: Y~ = (0, .75)
    qp = group_utilities(QP, g, a, y, p, source="imputed").utility
    ap = group_utilities(AP, g, a, y, p, source="imputed").utility
    eo = group_utilities(EO, g, a, y, p, source="imputed").utility
    assert qp.tolist() == pytest.approx([7 / 12, 3 / 8])
    assert ap.tolist() == pytest.approx([9 / 12, 1 / 8])
    assert eo.tolist() == pytest.approx([4 / 7, 0.0])
    terms = imputation_terms(QP, g, a, y, p)
    assert terms.predictor_error.tolist() == pytest.approx([-1 / 8, -1 / 4])
    assert terms.weighted_error.tolist() == pytest.approx([-1 / 12, -1 / 8])
    assert terms.imputed_positive_rate.tolist() == pytest.approx([7 / 12, 3 / 8])
    assert terms.bias == pytest.approx(-1 / 8 + 1 / 12)


# --------------------------------------------------------------------------------------
# Prop. 3.1: the accepted-only disparity
# --------------------------------------------------------------------------------------


def test_prop_3_1_accepted_equal_opportunity_is_identically_zero():
    rng = np.random.default_rng(0)
    checked = nonzero_true = 0
    for _ in range(300):
        n = int(rng.integers(2, 40))
        g, a, y, p = random_rows(rng, n, p_accept=rng.uniform(0.1, 0.9))
        util = group_utilities(EO, g, a, y, p, source="accepted")
        has_accepted_positive = [bool(np.any((g == i) & (a == 1) & (y == 1))) for i in (0, 1)]
        assert util.defined.tolist() == has_accepted_positive
        if all(has_accepted_positive):
            checked += 1
            assert util.utility.tolist() == [1.0, 1.0]
            assert util.disparity == 0.0
            nonzero_true += selective_disparity(EO, g, a, y, p) != 0.0
        else:
            assert util.disparity == 0.0  # undefined group: excluded from the gap
    assert checked > 150
    assert nonzero_true > 0.8 * checked


def test_prop_3_1_accepted_zero_is_not_sufficient():
    # both groups accept one qualified and one unqualified applicant; group 1's rejected
    # applicants are all qualified, group 0's are not
    rows = [(0, 1, 1), (0, 1, 0), (0, 0, 0), (0, 0, 0), (1, 1, 1), (1, 1, 0), (1, 0, 1), (1, 0, 1)]
    g, a, y = (np.array(c, dtype=float) for c in zip(*rows))
    g = g.astype(int)
    for notion, true_delta in ((QP, 0.5), (AP, -0.5)):
        assert selective_disparity(notion, g, a, y, source="accepted") == 0.0
        assert selective_disparity(notion, g, a, y) == pytest.approx(true_delta)


def test_prop_b_1_decomposition_of_accepted_utilities():
    rng = np.random.default_rng(1)
    for _ in range(200):
        g, a, y, p = random_rows(rng, int(rng.integers(1, 30)))
        for i in (0, 1):
            m = g == i
            if not np.any(m & (a == 1)):
                continue
            acc_rate = a[m].mean()
            mu_qp, _ = naive_mu(QP, "true", g, a, y, p, i)
            tpr = (a[m] * y[m]).sum() / y[m].sum() if y[m].sum() else 0.0
            acc_qp = group_utilities(QP, g, a, y, source="accepted").utility[i]
            # Prop. B.1, qualification parity: mu^{A=1} = mu * P(A=1 | Y=1) / a
            assert acc_qp == pytest.approx(mu_qp * tpr / acc_rate, abs=1e-12)
            mu_ap, _ = naive_mu(AP, "true", g, a, y, p, i)
            p_y0_a0 = np.mean((y[m] == 0) & (a[m] == 0))
            acc_ap = group_utilities(AP, g, a, y, source="accepted").utility[i]
            # Prop. B.1, accuracy parity: mu^{A=1} = mu / a - P(Y=0, A=0) / a
            assert acc_ap == pytest.approx(mu_ap / acc_rate - p_y0_a0 / acc_rate, abs=1e-12)


# --------------------------------------------------------------------------------------
# Theorem 3.1 on finite samples
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("prob_pred", [False, True], ids=["sampled", "probability"])
def test_theorem_3_1_qualification_parity(prob_pred):
    rng = np.random.default_rng(2)
    both_present = 0
    for _ in range(300):
        g, a, y, p = random_rows(rng, int(rng.integers(0, 40)), prob_pred=prob_pred)
        t = imputation_terms(QP, g, a, y, p)
        # per group, always: mu~ = mu + r eps
        assert np.allclose(t.imputed_utility, t.true_utility + t.weighted_error, rtol=0, atol=1e-12)
        assert np.allclose(
            t.weighted_error, t.rejection_rate * t.predictor_error, rtol=0, atol=1e-12
        )
        if (g == 0).any() and (g == 1).any():
            both_present += 1
            delta = selective_disparity(QP, g, a, y, p)
            delta_t = selective_disparity(QP, g, a, y, p, source="imputed")
            r, eps = t.rejection_rate, t.predictor_error
            # Theorem 3.1: Delta~ = Delta + (r^1 eps^1 - r^0 eps^0)
            assert delta_t == pytest.approx(delta + r[1] * eps[1] - r[0] * eps[0], abs=1e-12)
            assert delta_t == pytest.approx(delta + imputation_bias(QP, g, a, y, p), abs=1e-12)
            assert (t.true_disparity, t.imputed_disparity) == (delta, delta_t)
    assert both_present > 250


@pytest.mark.parametrize("prob_pred", [False, True], ids=["sampled", "probability"])
def test_theorem_3_1_accuracy_parity(prob_pred):
    rng = np.random.default_rng(3)
    for _ in range(300):
        g, a, y, p = random_rows(rng, int(rng.integers(0, 40)), prob_pred=prob_pred)
        t = imputation_terms(AP, g, a, y, p)
        # App. B.2, Eq. 32: mu~ = mu - r eps, per group
        assert np.allclose(t.imputed_utility, t.true_utility - t.weighted_error, rtol=0, atol=1e-12)
        if (g == 0).any() and (g == 1).any():
            r, eps = t.rejection_rate, t.predictor_error
            # App. B.2, Eq. 35: Delta~ = Delta - (r^1 eps^1 - r^0 eps^0)
            expected = t.true_disparity - (r[1] * eps[1] - r[0] * eps[0])
            assert t.imputed_disparity == pytest.approx(expected, abs=1e-12)
            assert t.imputed_disparity == pytest.approx(t.true_disparity - t.bias, abs=1e-12)


@pytest.mark.parametrize("prob_pred", [False, True], ids=["sampled", "probability"])
def test_theorem_3_1_equal_opportunity(prob_pred):
    rng = np.random.default_rng(4)
    checked = 0
    for _ in range(300):
        g, a, y, p = random_rows(rng, int(rng.integers(0, 40)), prob_pred=prob_pred)
        t = imputation_terms(EO, g, a, y, p)
        r, eps, phi, kappa = t.rejection_rate, t.predictor_error, t.phi_tilde, t.kappa
        # App. B.2, Eq. 37: mu~ = mu kappa, per group (with the zero conventions)
        assert np.allclose(t.imputed_utility, t.true_utility * kappa, rtol=0, atol=1e-12)
        if (phi > 0).all():
            checked += 1
            # Theorem 3.1: kappa^i = 1 - r^i eps^i / phi~^i
            assert np.allclose(kappa, 1 - r * eps / phi, rtol=0, atol=1e-12)
            # Theorem 3.1: Delta~ = mu^1 kappa^1 - mu^0 kappa^0
            mu = t.true_utility
            expected = mu[1] * kappa[1] - mu[0] * kappa[0]
            assert t.imputed_disparity == pytest.approx(expected, abs=1e-12)
            assert t.bias == pytest.approx(kappa[0] - kappa[1], abs=1e-12)
    assert checked > 200


def test_imputation_is_exact_without_rejections_or_with_a_perfect_predictor():
    rng = np.random.default_rng(5)
    g, a, y, p = random_rows(rng, 50)
    for notion in SELECTIVE_NOTIONS:
        ones = np.ones_like(a)
        assert selective_disparity(notion, g, ones, y, p, source="imputed") == (
            selective_disparity(notion, g, ones, y, p)
        )
        assert selective_disparity(notion, g, a, y, y, source="imputed") == (
            selective_disparity(notion, g, a, y, p)
        )
        assert imputation_bias(notion, g, a, y, y) == 0.0


# --------------------------------------------------------------------------------------
# Sliding window
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("prob_pred", [False, True], ids=["sampled", "probability"])
@pytest.mark.parametrize("window", [1, 7, 100, None])
def test_window_matches_naive_recomputation(window, prob_pred):
    rng = np.random.default_rng(6 if window is None else window)
    n = 240
    g, a, y, p = random_rows(rng, n, p_group1=0.3, prob_pred=prob_pred)
    tol = 1e-12 if prob_pred else 0.0
    for notion in SELECTIVE_NOTIONS:
        tracker = SelectiveWindow(notion, window)
        out = np.zeros((n, 3))
        for t in range(n):
            got = tracker.update(int(g[t]), int(a[t]), y[t], p[t])
            assert isinstance(got, SelectiveDisparities)
            out[t] = got
            lo = 0 if window is None else max(0, t + 1 - window)
            rows = (g[lo : t + 1], a[lo : t + 1], y[lo : t + 1], p[lo : t + 1])
            want = [naive_delta(notion, s, *rows) for s in LABEL_SOURCES]
            assert np.allclose(got, want, rtol=0, atol=tol), (notion, t)
            assert tracker.size == t + 1 - lo
            if notion == EO:
                r, eps, phi = zip(*(naive_terms(*rows, i) for i in (0, 1)))
                assert np.allclose(tracker.rejection_rate, r, rtol=0, atol=1e-12)
                assert np.allclose(tracker.predictor_error, eps, rtol=0, atol=1e-12)
                assert np.allclose(tracker.phi_tilde, phi, rtol=0, atol=1e-12)
        # the vectorised series matches the tracker step by step
        for k, source in enumerate(LABEL_SOURCES):
            series = selective_disparity_series(notion, g, a, y, p, window, source)
            assert series.shape == (n,)
            assert np.allclose(series, out[:, k], rtol=0, atol=1e-9 if prob_pred else 0.0)
            gaps = selective_disparity_series(notion, g, a, y, p, window, source, signed=False)
            assert np.array_equal(gaps, np.abs(series))
        assert tracker.disparities == tuple(out[-1])


def test_window_running_sums_do_not_drift():
    rng = np.random.default_rng(7)
    n, window = 13 * 385, 13
    g, a, y, p = random_rows(rng, n, prob_pred=True)
    tracker = SelectiveWindow(QP, window)
    for t in range(n):
        tracker.update(int(g[t]), int(a[t]), y[t], p[t])
    lo = n - window
    # every `window` updates the sums are rebuilt from the ring: bit-identical to a fresh sum
    cols = (np.ones(window), a[lo:], y[lo:], a[lo:] * y[lo:], (1 - a[lo:]) * p[lo:])
    fresh = np.stack([np.bincount(g[lo:], weights=c, minlength=2) for c in cols], axis=-1)
    assert np.array_equal(tracker.sums, fresh)
    naive = [naive_delta(QP, s, g[lo:], a[lo:], y[lo:], p[lo:]) for s in LABEL_SOURCES]
    assert np.allclose(tracker.disparities, naive, rtol=0, atol=1e-13)
    series = selective_disparity_series(QP, g, a, y, p, window, "imputed")
    assert series[-1] == pytest.approx(naive[2], abs=1e-10)


def test_window_utilities_terms_reset_and_repr():
    g, a, y, p = table_columns()
    tracker = SelectiveWindow(get_notion(EO), window=None)
    assert tracker.notion == EO
    for row in zip(g, a, y, p):
        tracker.update(int(row[0]), int(row[1]), row[2], row[3])
    assert tracker.disparities == pytest.approx((1 / 3, 0.0, 0.0))
    assert tracker.utilities("imputed").utility.tolist() == pytest.approx([0.5, 0.5])
    assert tracker.imputation_bias == pytest.approx(0.75)
    assert tracker.terms().kappa.tolist() == pytest.approx([1.5, 0.75])
    assert tracker.sums.shape == (2, 5)
    assert tracker.disparities.gaps() == pytest.approx((1 / 3, 0.0, 0.0))
    assert "equal_opportunity" in repr(tracker)
    tracker.reset()
    assert tracker.steps == 0 and tracker.size == 0
    assert tracker.disparities == (0.0, 0.0, 0.0)
    assert tracker.rejection_rate.tolist() == [0.0, 0.0]


def test_running_chunks_equal_whole_series():
    rng = np.random.default_rng(8)
    g, a, y, p = random_rows(rng, 120, prob_pred=True)
    cuts = [0, 1, 1, 9, 40, 41, 100, 120]  # includes empty and one-row chunks
    for window in (None, 1, 7, 50):
        for notion in SELECTIVE_NOTIONS:
            whole = {
                s: selective_disparity_series(notion, g, a, y, p, window, s) for s in LABEL_SOURCES
            }
            carry = None
            parts = {s: [] for s in LABEL_SOURCES}
            for lo, hi in zip(cuts[:-1], cuts[1:]):
                cols = (g[lo:hi], a[lo:hi], y[lo:hi], p[lo:hi])
                new_carry = None
                for s in LABEL_SOURCES:  # one incoming carry serves every source
                    series, new_carry = running_selective_disparity(
                        notion, *cols, window=window, source=s, carry=carry
                    )
                    parts[s].append(series)
                carry = new_carry
            assert carry.num_steps == 120
            for s in LABEL_SOURCES:
                assert np.allclose(np.concatenate(parts[s]), whole[s], rtol=0, atol=1e-12)


def test_true_source_matches_ledger_for_count_notions():
    # equal opportunity and accuracy parity over the decisions are also count notions
    rng = np.random.default_rng(9)
    g, a, y, p = random_rows(rng, 150)
    counts = np.stack(
        [decision_counts(int(gi), int(yi), int(ai), 2) for gi, ai, yi in zip(g, a, y)]
    )
    for notion in (EO, AP):
        for window in (None, 7):
            ours = selective_disparity_series(notion, g, a, y, None, window, "true")
            ledger = disparity_series(notion, counts, window=window, signed=True)
            assert np.array_equal(ours, ledger)


# --------------------------------------------------------------------------------------
# Zero denominators
# --------------------------------------------------------------------------------------


def all_finite(*values):
    return all(np.all(np.isfinite(np.asarray(v, dtype=float))) for v in values)


def check_terms_finite(t):
    return all_finite(
        t.rejection_rate,
        t.predictor_error,
        t.weighted_error,
        t.phi_tilde,
        t.kappa,
        t.true_utility,
        t.imputed_utility,
        t.true_disparity,
        t.imputed_disparity,
        t.bias,
    )


def test_zero_denominators_empty_input():
    empty = np.zeros(0)
    for notion in SELECTIVE_NOTIONS:
        for source in LABEL_SOURCES:
            util = group_utilities(notion, empty, empty, empty, empty, source=source)
            assert util.utility.tolist() == [0.0, 0.0]
            assert util.defined.tolist() == [False, False]
            assert util.disparity == 0.0
            assert selective_disparity_series(notion, empty, empty, empty, empty).shape == (0,)
        t = imputation_terms(notion, empty, empty, empty, empty)
        assert check_terms_finite(t)
        assert t.rejection_rate.tolist() == [0.0, 0.0]
        assert t.predictor_error.tolist() == [0.0, 0.0]
        assert t.phi_tilde.tolist() == [0.0, 0.0]
        assert t.kappa.tolist() == [1.0, 1.0]
        assert t.bias == 0.0
        tracker = SelectiveWindow(notion, 3)
        assert tracker.disparities == (0.0, 0.0, 0.0)
        assert check_terms_finite(tracker.terms())


def test_zero_denominators_degenerate_samples():
    # one group only
    g, a, y, p = np.zeros(4, int), np.array([1, 0, 1, 0.0]), np.ones(4), np.zeros(4)
    for notion in SELECTIVE_NOTIONS:
        for source in LABEL_SOURCES:
            assert selective_disparity(notion, g, a, y, p, source=source) == 0.0
        assert check_terms_finite(imputation_terms(notion, g, a, y, p))
    g = np.array([0, 0, 1, 1])
    # everyone rejected: the accepted source is undefined for both groups
    rejected = np.zeros(4)
    for notion in SELECTIVE_NOTIONS:
        util = group_utilities(notion, g, rejected, y, p, source="accepted")
        assert util.defined.tolist() == [False, False] and util.disparity == 0.0
    t = imputation_terms(QP, g, rejected, y, p)
    assert t.rejection_rate.tolist() == [1.0, 1.0]
    assert t.predictor_error.tolist() == [-1.0, -1.0]
    # no positive imputed label: phi~ = 0, kappa reported 1, EO imputed undefined
    t = imputation_terms(EO, g, rejected, y, p)
    assert t.phi_tilde.tolist() == [0.0, 0.0]
    assert t.kappa.tolist() == [1.0, 1.0]
    assert t.imputed_disparity == 0.0 and t.bias == 0.0
    assert check_terms_finite(t)
    # everyone accepted: no rejected row, eps reported 0, imputed = true
    accepted = np.ones(4)
    t = imputation_terms(AP, g, accepted, np.array([1, 0, 0, 0.0]), p)
    assert t.rejection_rate.tolist() == [0.0, 0.0]
    assert t.predictor_error.tolist() == [0.0, 0.0]
    assert t.imputed_disparity == t.true_disparity == pytest.approx(-0.5)
    # no positive label at all: equal opportunity undefined for both sources
    zeros = np.zeros(4)
    for source in LABEL_SOURCES:
        util = group_utilities(EO, g, np.array([1, 0, 1, 0.0]), zeros, zeros, source=source)
        assert util.defined.tolist() == [False, False]
        assert util.utility.tolist() == [0.0, 0.0]


def test_zero_denominators_in_series_and_window():
    # long runs of one group and of rejections make many utilities undefined
    g = np.array([0] * 10 + [1] * 10 + [0, 1] * 10)
    a = np.array([0.0] * 15 + [1.0] * 25)
    y = np.zeros(40)
    p = np.zeros(40)
    for notion in SELECTIVE_NOTIONS:
        for window in (1, 3, None):
            tracker = SelectiveWindow(notion, window)
            for row in zip(g, a, y, p):
                assert all_finite(tracker.update(int(row[0]), int(row[1]), row[2], row[3]))
                assert check_terms_finite(tracker.terms())
            for source in LABEL_SOURCES:
                series = selective_disparity_series(notion, g, a, y, p, window, source)
                assert all_finite(series)


def test_undefined_zero_rule_hand_computed():
    # group 0 all rejected, group 1 accepted with labels 1, 0: accepted-only precision
    # of group 0 is undefined
    g, a, y = [0, 0, 1, 1], [0, 0, 1, 1], [1, 0, 1, 0]
    for notion in (QP, AP):
        assert selective_disparity(notion, g, a, y, source="accepted") == 0.0
        # the authors' rule: mu^0 = 0, so Delta = mu^1 - 0 = 1/2
        assert selective_disparity(notion, g, a, y, source="accepted", undefined="zero") == 0.5
        util = group_utilities(notion, g, a, y, source="accepted", undefined="zero")
        assert util.defined.tolist() == [False, True] and util.gap == 0.5
        # swapping the group labels swaps the utilities and flips the sign
        swapped = [1 - z for z in g]
        assert (
            selective_disparity(notion, swapped, a, y, source="accepted", undefined="zero") == -0.5
        )
    # equal opportunity with no positive label in group 0: TPR^0 counts as 0
    g, a, y = [0, 0, 1, 1, 1], [1, 0, 1, 0, 1], [0, 0, 1, 1, 0]
    assert selective_disparity(EO, g, a, y, source="true") == 0.0
    assert selective_disparity(EO, g, a, y, source="true", undefined="zero") == 0.5
    # where both utilities are defined the rules agree
    g, a, y, p = table_columns()
    for notion in SELECTIVE_NOTIONS:
        for source in LABEL_SOURCES:
            util = group_utilities(notion, g, a, y, p, source=source)
            if util.defined.all():
                assert util.disparity == selective_disparity(
                    notion, g, a, y, p, source=source, undefined="zero"
                )


@pytest.mark.parametrize("window", [1, 4, None])
def test_undefined_zero_rule_window_series_and_chunks_agree(window):
    rng = np.random.default_rng(3)
    t_len = 120
    # long single-group stretches and rejection runs leave utilities undefined often
    g = np.repeat(rng.integers(0, 2, 24), 5)
    a = (rng.random(t_len) < 0.3).astype(float)
    y = (rng.random(t_len) < 0.5).astype(float)
    p = rng.random(t_len)
    for notion in SELECTIVE_NOTIONS:
        tracker = SelectiveWindow(notion, window, undefined="zero")
        rows = [tracker.update(int(gi), int(ai), yi, pi) for gi, ai, yi, pi in zip(g, a, y, p)]
        differs = False
        for k, source in enumerate(LABEL_SOURCES):
            series = selective_disparity_series(
                notion, g, a, y, p, window, source, undefined="zero"
            )
            np.testing.assert_allclose(series, [r[k] for r in rows], atol=1e-12)
            # the naive reference: an undefined utility counts as 0
            for t in range(t_len):
                lo = 0 if window is None else max(0, t + 1 - window)
                sl = slice(lo, t + 1)
                # naive_mu reports an undefined utility as 0.0
                mu = [naive_mu(notion, source, g[sl], a[sl], y[sl], p[sl], i)[0] for i in (0, 1)]
                assert series[t] == pytest.approx(mu[1] - mu[0], abs=1e-12)
            chunks, carry = [], None
            for part in np.array_split(np.arange(t_len), 5):
                out, carry = running_selective_disparity(
                    notion,
                    g[part],
                    a[part],
                    y[part],
                    p[part],
                    window=window,
                    source=source,
                    carry=carry,
                    undefined="zero",
                )
                chunks.append(out)
            np.testing.assert_allclose(np.concatenate(chunks), series, atol=1e-12)
            plain = selective_disparity_series(notion, g, a, y, p, window, source)
            differs |= bool(np.any(np.abs(plain - series) > 1e-9))
        assert differs, "the zero rule changed nothing: the test data has no undefined utility"


# --------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------


def test_unknown_undefined_rule_raises_a_one_line_error():
    g, a, y, p = table_columns()
    message = "undefined utility rule 'nan' is unknown; valid choices: exclude, zero"
    with pytest.raises(ValueError, match=message):
        selective_disparity(QP, g, a, y, p, undefined="nan")
    with pytest.raises(ValueError, match=message):
        selective_disparity_series(QP, g, a, y, p, undefined="nan")
    with pytest.raises(ValueError, match=message):
        SelectiveWindow(QP, 3, undefined="nan")


def test_unknown_notion_and_source_raise_one_line_errors():
    g, a, y, p = table_columns()
    with pytest.raises(ValueError) as err:
        group_utilities("demographic_parity", g, a, y, p)
    message = str(err.value)
    assert "\n" not in message
    assert "accuracy_parity, equal_opportunity, qualification_parity" in message
    with pytest.raises(ValueError, match="valid choices: true, accepted, imputed"):
        selective_disparity(QP, g, a, y, p, source="observed")
    with pytest.raises(ValueError, match="selective-labels notion"):
        SelectiveWindow(get_notion("equalized_odds"), 5)
    with pytest.raises(ValueError, match="predicted labels are required"):
        selective_disparity(QP, g, a, y, source="imputed")
    with pytest.raises(ValueError, match="predicted labels are required"):
        imputation_terms(QP, g, a, y, None)


def test_malformed_inputs_raise():
    g, a, y, p = table_columns()
    with pytest.raises(ValueError, match="groups must hold 0 or 1"):
        group_utilities(QP, g + 1, a, y, p)
    with pytest.raises(ValueError, match="decisions must hold 0 or 1"):
        group_utilities(QP, g, a * 0.5, y, p)
    with pytest.raises(ValueError, match="labels must hold values in"):
        group_utilities(QP, g, a, y + 1, p)
    with pytest.raises(ValueError, match="predicted must hold values in"):
        group_utilities(QP, g, a, y, p * np.nan, source="imputed")
    with pytest.raises(ValueError, match="same length"):
        group_utilities(QP, g[:-1], a, y, p)
    for window in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="window"):
            SelectiveWindow(QP, window)
        with pytest.raises(ValueError, match="window"):
            selective_disparity_series(QP, g, a, y, p, window)
    tracker = SelectiveWindow(QP, 3)
    for bad in ((2, 1, 1, 0), (0, 0.5, 1, 0), (0, 1, 1.5, 0), (0, 1, 1, -0.1), (0, 1, np.nan, 0)):
        with pytest.raises(ValueError):
            tracker.update(*bad)
    assert tracker.steps == 0


def test_public_names_exported():
    for name in (
        "LABEL_SOURCES",
        "SELECTIVE_NOTIONS",
        "UNDEFINED_UTILITY_RULES",
        "GroupUtilities",
        "ImputationTerms",
        "SelectiveCarry",
        "SelectiveDisparities",
        "SelectiveWindow",
        "group_utilities",
        "imputation_bias",
        "imputation_terms",
        "running_selective_disparity",
        "selective_disparity",
        "selective_disparity_series",
    ):
        assert name in fairness.__all__
        assert getattr(fairness, name) is getattr(fairness.selective, name)
    assert set(SELECTIVE_NOTIONS) <= set(fairness.list_notions())
