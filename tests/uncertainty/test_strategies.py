"""The five strategies on hand-built quarters (Lee et al. 2026, Sec. 4)."""

import itertools
import math

import numpy as np
import pytest

from rllib_fair.uncertainty.strategies import (
    STRATEGIES,
    decide,
    eligible_mask,
    exact_floor,
    exact_round,
    top_k,
)

# A hand-built quarter: 20 applicants, p descending in steps with a tie, 3 ineligible.
P = np.array(
    [0.95, 0.90, 0.90, 0.85, 0.80, 0.75, 0.70, 0.65, 0.60, 0.55,
     0.50, 0.45, 0.40, 0.35, 0.30, 0.25, 0.20, 0.09, 0.05, 0.01]
)  # fmt: skip
E = eligible_mask(P, 0.1)
N = P.size


def _idx(mask):
    return set(np.flatnonzero(mask).tolist())


def test_eligibility_and_exact_arithmetic():
    assert _idx(~E) == {17, 18, 19}
    assert math.floor(0.7 * 690) == 482  # the float trap: 0.7 * 690 = 482.999...
    assert exact_floor(0.7, 690) == 483
    assert exact_floor(0.6, 10) == 6 and exact_floor(0.8, 7) == 5
    assert exact_round(0.05, 2500) == 125 and exact_round(0.8, 1113) == 890
    assert exact_round(0.5, 5) == 3  # halves up


def test_top_k_ties_by_index():
    assert top_k(P, E, 3).tolist() == [0, 1, 2]
    p = np.array([0.5, 0.7, 0.5, 0.7])
    assert top_k(p, np.ones(4, bool), 3).tolist() == [1, 3, 0]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("budget", [0, 1, 7, 10, 17, 30])
@pytest.mark.parametrize("fill", [True, False])
def test_budget_accounting(strategy, budget, fill):
    rng = np.random.default_rng(budget)
    half = np.full(N, 0.2)
    d = decide(strategy, P, budget, E, rng, halfwidth=half, delta=0.2, fill_budget=fill)
    assert d.granted.sum() <= budget
    assert not (d.granted & ~E).any()  # only eligible applicants
    if fill or strategy in ("naive", "counterfactual"):
        assert d.granted.sum() == min(budget, E.sum())
    assert (d.certain | d.explored | d.filled == d.granted).all()
    assert not (d.certain & d.explored).any() and not (d.filled & d.explored).any()


@pytest.mark.parametrize("strategy", ["naive", "counterfactual"])
def test_naive_is_top_budget(strategy):
    d = decide(strategy, P, 5, E)
    assert _idx(d.granted) == {0, 1, 2, 3, 4}
    assert d.explored.sum() == 0 and d.tau == 0.80


@pytest.mark.parametrize("strategy", ["naive_exploration", "prob_weighted", "uncertainty_aware"])
def test_certain_set_and_exploration_sizes(strategy):
    budget, delta = 10, 0.1  # C = top floor(0.7 * 10) = 7; B^E = min(round(2), 3, |cand|)
    half = np.full(N, 0.12)
    for seed in range(20):
        d = decide(strategy, P, budget, E, np.random.default_rng(seed), halfwidth=half,
                   proportion_certain=0.7, delta=delta)  # fmt: skip
        assert _idx(d.certain) == set(range(7))
        assert d.tau == 0.70
        assert _idx(d.uncertain) == set(range(7, 17))
        assert d.explored.sum() == d.n_explore == 2
        assert d.explored.sum() <= d.candidates.sum()
        assert not (d.explored & ~d.candidates).any()
        assert not (d.candidates & ~d.uncertain).any()
        if strategy == "uncertainty_aware":
            # U' = {p + Delta >= tau} within U: p >= 0.58 -> rows 7, 8
            assert _idx(d.candidates) == {7, 8}
            assert _idx(d.explored) == {7, 8}
        else:
            assert d.candidates.sum() == d.uncertain.sum()
        # fill: the remaining 1 loan goes to the best eligible not yet granted
        rest = E & ~d.certain & ~d.explored
        assert _idx(d.filled) == {int(top_k(P, rest, 1)[0])}


def test_uncertainty_aware_candidates_follow_the_interval():
    half = np.zeros(N)
    half[12] = 0.31  # 0.40 + 0.31 >= 0.70: its interval overlaps tau
    half[13] = 0.34  # 0.35 + 0.34 < 0.70
    d = decide("uncertainty_aware", P, 10, E, np.random.default_rng(0), halfwidth=half,
               delta=0.1, fill_budget=False)  # fmt: skip
    assert _idx(d.candidates) == {12}
    assert _idx(d.granted) == set(range(7)) | {12}


@pytest.mark.parametrize("strategy", ["naive_exploration", "prob_weighted", "uncertainty_aware"])
@pytest.mark.parametrize("kw", [{"delta": 0.0}, {"proportion_certain": 1.0}])
def test_no_exploration_reduces_to_naive(strategy, kw):
    half = np.full(N, 0.3)
    for budget in (3, 10, 15):
        d = decide(strategy, P, budget, E, np.random.default_rng(1), halfwidth=half, **kw)
        np.testing.assert_array_equal(d.granted, decide("naive", P, budget, E).granted)
        assert d.explored.sum() == 0


def test_exploration_is_seeded():
    a = decide("naive_exploration", P, 10, E, np.random.default_rng(3), delta=0.1)
    b = decide("naive_exploration", P, 10, E, np.random.default_rng(3), delta=0.1)
    np.testing.assert_array_equal(a.explored, b.explored)
    seen = set()
    for s in range(30):
        d = decide("naive_exploration", P, 10, E, np.random.default_rng(s), delta=0.1)
        seen |= _idx(d.explored)
    assert seen == set(range(7, 17))  # every uncertain applicant can be explored


def test_prob_weighted_is_successive_sampling():
    # A small case with exact probabilities (inclusion frequencies of many draws would
    # give a weak, conservative test). Successive sampling of 2 from 5
    # with p_i ~ w_i gives P(i then j) = w_i w_j / (1 - w_i); the strategy's set {i, j}
    # has probability P(i, j) + P(j, i); chi-square over the 10 sets (multinomial).
    p = np.array([0.9, 0.7, 0.5, 0.3, 0.2, 0.95])  # row 5 is the certain one
    elig = np.ones(6, dtype=bool)
    w = p[:5] / p[:5].sum()
    sets = list(itertools.combinations(range(5), 2))
    exact = np.array([w[i] * w[j] / (1 - w[i]) + w[j] * w[i] / (1 - w[j]) for i, j in sets])
    assert exact.sum() == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    draws = 20000
    counts = dict.fromkeys(sets, 0)
    for _ in range(draws):
        d = decide("prob_weighted", p, 3, elig, rng, proportion_certain=0.34, delta=0.34,
                   fill_budget=False)  # fmt: skip
        assert d.certain[5] and d.certain.sum() == 1 and d.explored.sum() == 2
        counts[tuple(np.flatnonzero(d.explored).tolist())] += 1
    observed = np.array([counts[k] for k in sets])
    chi2 = np.sum((observed - draws * exact) ** 2 / (draws * exact))
    assert chi2 < 27.88  # chi-square(9) 0.999 quantile
    inclusion = np.array([sum(counts[k] for k in sets if i in k) for i in range(5)])
    assert np.all(np.diff(inclusion) < 0)  # increases with p


def test_literal_sizing():
    rng = np.random.default_rng(0)
    d = decide("prob_weighted", P, 10, E, rng, exploration_sizing="literal", delta=0.01)
    assert d.explored.sum() == 3  # "until the budget runs out": B - |C|
    sizes = [
        decide("naive_exploration", P, 10, E, np.random.default_rng(s), delta=0.2,
               exploration_sizing="literal", fill_budget=False).explored.sum()
        for s in range(200)
    ]  # fmt: skip
    assert max(sizes) <= 3 and 0 in sizes  # Bernoulli(delta) per uncertain applicant, capped


def test_errors():
    with pytest.raises(ValueError):
        decide("greedy", P, 3, E)
    with pytest.raises(ValueError):
        decide("naive_exploration", P, 3, E)  # no rng
    with pytest.raises(ValueError):
        decide("uncertainty_aware", P, 3, E, np.random.default_rng(0))  # no half-widths
