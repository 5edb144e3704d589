"""The debiased Sinkhorn divergence F-PPO-L's reference computes (rllib_fair.fairness.sinkhorn).

Checked against values derived here by hand (two Diracs; identical clouds; symmetry),
against its limit (the exact Wasserstein cost of sorted samples as blur -> 0 and
scaling -> 1), against a literal scalar re-statement of the annealed loop, and against
the values the GeomLoss library (0.2.6, the reference's dependency) returned for the same
inputs, computed once offline (the library is not a dependency of this package).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rllib_fair.fairness.sinkhorn import (
    P1_COST_FLOOR,
    epsilon_schedule,
    sinkhorn_divergence_1d,
)

#: Credit-bin count windows of fair/LendingDrift-v0 (group 0, group 1) and the value
#: GeomLoss 0.2.6's SamplesLoss("sinkhorn", p, blur) returned for them (float64 input).
GEOMLOSS_VALUES = [
    ([0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 1, 0, 1, 0, 0, 2, 0, 0, 0, 0],
     1, 0.01, 0.19805805038286114),
    ([0, 0, 2, 0, 2, 3, 4, 2, 4, 3, 12, 10, 3, 0], [3, 7, 3, 1, 3, 5, 10, 11, 6, 6, 1, 0, 0, 0],
     1, 0.01, 0.8804880697141753),
    ([0, 0, 5, 8, 3, 9, 8, 18, 12, 23, 20, 15, 9, 5],
     [7, 6, 9, 10, 12, 12, 26, 21, 32, 23, 7, 0, 0, 0], 1, 0.01, 2.283830683825026),
    ([0, 0, 3, 7, 7, 8, 8, 17, 14, 24, 21, 17, 19, 10],
     [4, 4, 9, 11, 13, 10, 15, 19, 24, 19, 12, 3, 2, 0], 1, 0.01, 1.4287999711039974),
    ([0] * 14, [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0], 1, 0.01, 0.0701348353687094),
    ([0, 0, 5, 8, 3, 9, 8, 18, 12, 23, 20, 15, 9, 5],
     [7, 6, 9, 10, 12, 12, 26, 21, 32, 23, 7, 0, 0, 0], 2, 0.05, 7.118573274070565),
]  # fmt: skip


def _literal(x, y, p, blur, scaling):
    """The annealed symmetric Sinkhorn loop for one pair, in plain Python floats."""

    def cost(u, v):
        d2 = (u - v) ** 2
        return math.sqrt(max(d2, P1_COST_FLOOR**2)) if p == 1 else d2 / 2

    def softmin(eps, us, vs, logw, pot):
        out = []
        for u in us:
            z = [lw + g / eps - cost(u, v) / eps for v, lw, g in zip(vs, logw, pot, strict=True)]
            m = max(z)
            out.append(-eps * (math.log(sum(math.exp(t - m) for t in z)) + m))
        return out

    la, lb = [math.log(1 / len(x))] * len(x), [math.log(1 / len(y))] * len(y)
    diameter = max(x + y) - min(x + y)
    temps = [diameter**p]
    temps += [
        math.exp(e)
        for e in np.arange(p * math.log(diameter), p * math.log(blur), p * math.log(scaling))
    ]
    temps += [blur**p]
    zx, zy = [0.0] * len(x), [0.0] * len(y)
    g_ab, f_ba = softmin(temps[0], y, x, la, zx), softmin(temps[0], x, y, lb, zy)
    f_aa, g_bb = softmin(temps[0], x, x, la, zx), softmin(temps[0], y, y, lb, zy)
    for eps in temps:
        ft_ba, gt_ab = softmin(eps, x, y, lb, g_ab), softmin(eps, y, x, la, f_ba)
        ft_aa, gt_bb = softmin(eps, x, x, la, f_aa), softmin(eps, y, y, lb, g_bb)
        f_ba = [(s + t) / 2 for s, t in zip(f_ba, ft_ba, strict=True)]
        g_ab = [(s + t) / 2 for s, t in zip(g_ab, gt_ab, strict=True)]
        f_aa = [(s + t) / 2 for s, t in zip(f_aa, ft_aa, strict=True)]
        g_bb = [(s + t) / 2 for s, t in zip(g_bb, gt_bb, strict=True)]
    eps = blur**p
    f_ba, g_ab = softmin(eps, x, y, lb, g_ab), softmin(eps, y, x, la, f_ba)
    f_aa, g_bb = softmin(eps, x, x, la, f_aa), softmin(eps, y, y, lb, g_bb)
    return sum(f - h for f, h in zip(f_ba, f_aa, strict=True)) / len(x) + sum(
        g - h for g, h in zip(g_ab, g_bb, strict=True)
    ) / len(y)


@pytest.mark.parametrize(("x", "y", "p", "blur", "want"), GEOMLOSS_VALUES)
def test_matches_the_reference_library_on_credit_windows(x, y, p, blur, want):
    assert sinkhorn_divergence_1d(x, y, p=p, blur=blur) == pytest.approx(want, rel=1e-12)


def test_two_diracs_give_the_cost_minus_the_self_costs():
    """One point each: every soft-min is the cost itself, S = C(x,y) - C(x,x)/2 - C(y,y)/2.

    With p = 1 the self cost is the floor 1e-4, so S = |x - y| - 1e-4; with p = 2 it is 0,
    so S = |x - y|^2 / 2. Repeated points are the same measure as one point.
    """
    for blur, scaling in ((0.01, 0.5), (0.3, 0.8)):
        assert sinkhorn_divergence_1d([3.0], [7.5], blur=blur, scaling=scaling) == pytest.approx(
            4.5 - 1e-4, rel=1e-14
        )
        assert sinkhorn_divergence_1d(
            [3.0, 3.0, 3.0], [7.5, 7.5], blur=blur, scaling=scaling
        ) == pytest.approx(4.5 - 1e-4, rel=1e-14)
        assert sinkhorn_divergence_1d(
            [-2.0], [1.0], p=2, blur=blur, scaling=scaling
        ) == pytest.approx(4.5, rel=1e-14)


def test_identical_clouds_give_zero_and_swapping_gives_the_same_value():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 40, 14).astype(float)
    y = rng.integers(0, 40, 14).astype(float)
    for p, blur in ((1, 0.01), (2, 0.05)):
        assert sinkhorn_divergence_1d(x, x, p=p, blur=blur) == 0.0
        assert sinkhorn_divergence_1d(x, y, p=p, blur=blur) == sinkhorn_divergence_1d(
            y, x, p=p, blur=blur
        )
        assert sinkhorn_divergence_1d(x, y, p=p, blur=blur) > 0.0
    # every point of both clouds at one place: the divergence of identical measures
    assert sinkhorn_divergence_1d([2.0, 2.0], [2.0]) == 0.0


def test_approaches_the_exact_wasserstein_cost_as_blur_and_scaling_tighten():
    """Equal sizes: W_1 = mean |sort x - sort y|, W_2^2 / 2 = mean (sort x - sort y)^2 / 2."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 30, 14).astype(float)
    y = rng.integers(0, 30, 14).astype(float)
    d = np.sort(x) - np.sort(y)
    w1, half_w2sq = np.abs(d).mean(), (d**2).mean() / 2
    assert sinkhorn_divergence_1d(x, y, blur=1e-3, scaling=0.99) == pytest.approx(w1, rel=1e-3)
    assert sinkhorn_divergence_1d(x, y, p=2, blur=1e-2, scaling=0.99) == pytest.approx(
        half_w2sq, rel=1e-3
    )
    # the reference's settings stop the annealing early: clearly below W_1
    assert sinkhorn_divergence_1d(x, y) < 0.95 * w1


def test_batched_rows_equal_the_literal_loop_row_by_row():
    """Rows of different diameters (schedules of different lengths) in one call."""
    rng = np.random.default_rng(2)
    xs = rng.integers(0, 25, (5, 6)).astype(float)
    ys = rng.integers(0, 25, (5, 6)).astype(float)
    xs[3] = 4.0
    ys[3] = [4.0, 4.0, 4.0, 4.0, 4.0, 5.0]  # diameter 1
    for p, blur, scaling in ((1, 0.01, 0.5), (2, 0.05, 0.7)):
        got = sinkhorn_divergence_1d(xs, ys, p=p, blur=blur, scaling=scaling)
        assert got.shape == (5,)
        for r in range(5):
            want = _literal(xs[r].tolist(), ys[r].tolist(), p, blur, scaling)
            assert got[r] == pytest.approx(want, rel=1e-10, abs=1e-12), (p, r)
            single = sinkhorn_divergence_1d(xs[r], ys[r], p=p, blur=blur, scaling=scaling)
            assert single == pytest.approx(got[r], rel=1e-13, abs=1e-15)


def test_epsilon_schedule():
    temps = epsilon_schedule(8.0, p=1, blur=0.5, scaling=0.5)
    assert temps == pytest.approx([8.0, 8.0, 4.0, 2.0, 1.0, 0.5])
    assert epsilon_schedule(0.1, p=2, blur=0.5, scaling=0.5) == pytest.approx([0.01, 0.25])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"p": 3}, "p: 3 is invalid"),
        ({"p": True}, "p: True is invalid"),
        ({"blur": 0.0}, "blur: 0.0 is invalid"),
        ({"scaling": 1.0}, "scaling: 1.0 is invalid"),
    ],
)
def test_bad_settings_are_one_line_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sinkhorn_divergence_1d([1.0], [2.0], **kwargs)


def test_bad_points_are_one_line_errors():
    with pytest.raises(ValueError, match="leading shapes"):
        sinkhorn_divergence_1d(np.zeros((2, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="N, M >= 1"):
        sinkhorn_divergence_1d([], [1.0])
    with pytest.raises(ValueError, match="non-finite"):
        sinkhorn_divergence_1d([np.nan], [1.0])
