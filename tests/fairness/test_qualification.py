"""Tests of rllib_fair.fairness.qualification (Lear & Zhang 2025; docs/methods/lear2025.md).

Exact where possible: identities to 1e-12 on random kernels and policies, independently
computed tables (the benefit per bin, the reference heuristic, the exact decomposition of
fixed policies, the never-lend values) to 1e-6, the estimators against literal ports of
the reference code.
"""

from __future__ import annotations

import numpy as np
import pytest

from rllib_fair.envs.lending_drift import SETTINGS
from rllib_fair.fairness import qualification as q

N_BINS = 14
G = q.gain_table(N_BINS)

#: Delta(0..13) per setting (and group in Setting 3), computed two ways: from the kernels
#: and by a literal port of the reference code's benefit table.
DELTA = {
    (1, 0): [.002424, .012402, .032106, .062730, .105750, .161991, .231874, .315995,
             .413605, .525908, .653018, .793343, .832676, .075384],
    (2, 0): [.001513, .008327, .023058, .049680, .091579, .149904, .224396, .315361,
             .421035, .540511, .673597, .819775, .862127, .091138],
    (3, 0): [.002506, .012895, .033065, .064192, .107767, .164602, .235107, .319874,
             .418137, .531110, .658904, .799909, .839910, .026442],
    (3, 1): [.001706, .010018, .027844, .056427, .097198, .151037, .218413, .299932,
             .394916, .504524, .628888, .766484, .859703, .220959],
}  # fmt: skip
DELTA[(1, 1)] = DELTA[(1, 0)]
DELTA[(2, 1)] = DELTA[(2, 0)]

#: Exact decomposition of fixed policies (visited variant, T = 500): C, DPE, IPE, SPE
#: (docs/methods/lear2025.md, "Reference values").
EXACT = {
    (1, "reject"): (0.006526, 0.0, 0.0, 0.006526),
    (1, "accept"): (0.305542, 0.321184, -0.022168, 0.006526),
    (1, "greedy"): (0.367843, 0.382896, -0.021579, 0.006526),
    (2, "accept"): (0.326694, 0.342996, -0.022828, 0.006526),
    (2, "greedy"): (0.424416, 0.440164, -0.022274, 0.006526),
    (3, "reject"): (0.259354, 0.0, 0.0, 0.259354),
    (3, "accept"): (0.319773, 0.005156, 0.055263, 0.259354),
    (3, "greedy"): (0.299157, -0.008493, 0.048296, 0.259354),
}

#: The reference code's heuristic h(x0) = mean_j g(x0, j).
H_TABLE = [1.261194, 1.259062, 1.244136, 1.203625, 1.124733, 0.994670, 0.800640, 0.529851,
           0.169510, -0.293177, -0.871002, -1.576759, -2.423241, -3.423241]  # fmt: skip


def setting_arrays(setting: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(P [2,2,14,14], x0 [2,14], success [14])`` of a preset."""
    s = SETTINGS[setting]
    success = np.asarray(s["success_probs"])
    return q.kernels(success, s["drift_probs"]), np.asarray(s["cluster_probs"]), success


def random_problem(rng: np.random.Generator, n: int = 6):
    """Random kernels ``[2,2,n,n]``, policy ``[2,n]``, additive gain, x0 ``[2,n]``."""
    P = rng.random((2, 2, n, n)) ** 3
    P /= P.sum(axis=-1, keepdims=True)
    pi = rng.random((2, n))
    gain = q.potential_gain(rng.normal(size=n))
    x0 = rng.random((2, n))
    x0 /= x0.sum(axis=-1, keepdims=True)
    return P, pi, gain, x0


# ----------------------------------------------------------------------------- gain


def test_cubic_gain_values_and_additivity():
    assert q.cubic_gain(12, 13) == pytest.approx(1.0, abs=1e-15)
    assert q.cubic_gain(0, 1) == pytest.approx(1 / 469, abs=1e-15)
    assert np.all(np.diag(G) == 0.0)
    xs = np.arange(N_BINS)
    assert np.allclose(q.cubic_gain(xs[:, None], xs[None, :]), G, atol=1e-15, rtol=0)
    rng = np.random.default_rng(0)
    for _ in range(20):
        path = rng.integers(0, N_BINS, 7)
        total = sum(G[a, b] for a, b in zip(path[:-1], path[1:]))
        assert total == pytest.approx(G[path[0], path[-1]], abs=1e-12)
    assert np.allclose(q.potential_gain(xs**3 / 469.0), G, atol=1e-15, rtol=0)


# ----------------------------------------------------------------------------- kernels, benefit


def ref_next_x(x: int, drift: int, d: int, will_default: bool) -> int:
    """Literal port of the reference's ``PPOEnvWrapper.next_x_given_action``."""
    cx = x + drift
    if d == 1:
        return max(0, cx - 1) if will_default else min(N_BINS - 1, cx + 1)
    return max(0, min(N_BINS - 1, cx))


class RefBenefitDelta:
    """Literal port of the reference's ``q_custom_utils.BenefitDelta`` (bins-1/12 quirk kept)."""

    def __init__(self, drift, succ):
        self.drift, self.succ = drift, succ

    def _c(self, c, g):
        return self.drift[g][c + 1]

    def _py(self, x, y):
        return 1 - self.succ[x] if y == 0 else self.succ[x]

    def _c1(self, x, a, g):
        return self._py(x, 1) * self._c(1, g) if a == 1 else 0.0

    def _c2(self, x, a, g):
        if a == 1:
            return self._py(x, 1) * self._c(0, g)
        return self._py(x, 1) * self._c(1, g) + self._py(x, 0) * self._c(1, g)

    def _c3(self, x, a, g):
        if a == 1:
            return self._py(x, 1) * self._c(-1, g) + self._py(x, 0) * self._c(1, g)
        return self._py(x, 1) * self._c(0, g) + self._py(x, 0) * self._c(0, g)

    def _c4(self, x, a, g):
        if a == 1:
            return self._py(x, 0) * self._c(0, g)
        return self._py(x, 1) * self._c(-1, g) + self._py(x, 0) * self._c(-1, g)

    def _c5(self, x, a, g):
        return self._py(x, 0) * self._c(-1, g) if a == 1 else 0.0

    def _p(self, x, a, xp, hi, lo, g):
        if x == hi:
            if xp == hi:
                return self._c1(x, a, g) + self._c2(x, a, g) + self._c3(x, a, g)
        elif x == lo:
            if xp == lo:
                return self._c3(x, a, g) + self._c4(x, a, g) + self._c5(x, a, g)
        else:
            if x == hi - 1 and xp >= x:
                return self._c1(x, a, g) + self._c2(x, a, g)
            if x == lo + 1 and xp <= x:
                return self._c4(x, a, g) + self._c5(x, a, g)
        return {0: self._c3, -1: self._c4, -2: self._c5, 1: self._c2, 2: self._c1}[xp - x](x, a, g)

    def delta(self, x, g):
        hi, lo = len(self.succ) - 1, 0
        if x == hi:
            xps = [hi, hi - 1, hi - 2]
        elif x == hi - 1:
            xps = [x + 1, x, x - 1, x - 2]
        elif x == lo:
            xps = [lo, lo + 1, lo + 2]
        elif x == lo + 1:
            xps = [x - 1, x, x + 1, x + 2]
        else:
            xps = [x - 2, x - 1, x, x + 1, x + 2]
        return sum(
            (self._p(x, 1, xp, hi, lo, g) - self._p(x, 0, xp, hi, lo, g)) * G[x, xp] for xp in xps
        )


@pytest.mark.parametrize("setting", [1, 2, 3])
def test_kernels_match_the_reference_transition(setting):
    P, _, success = setting_arrays(setting)
    drift = SETTINGS[setting]["drift_probs"]
    ref = np.zeros_like(P)
    for s in range(2):
        for x in range(N_BINS):
            for k, ck in zip((-1, 0, 1), drift[s]):
                ref[s, 1, x, ref_next_x(x, k, 1, False)] += ck * success[x]
                ref[s, 1, x, ref_next_x(x, k, 1, True)] += ck * (1 - success[x])
                ref[s, 0, x, ref_next_x(x, k, 0, False)] += ck
    assert np.allclose(P, ref, atol=1e-15, rtol=0)
    assert np.allclose(P.sum(axis=-1), 1.0, atol=1e-12)


@pytest.mark.parametrize("setting", [1, 2, 3])
def test_benefit_tables_match_spec_and_reference_port(setting):
    P, _, success = setting_arrays(setting)
    delta = q.benefit(P, G)
    ref = RefBenefitDelta(SETTINGS[setting]["drift_probs"], success)
    for s in range(2):
        assert np.allclose(delta[s], DELTA[(setting, s)], atol=1e-6, rtol=0)
        port = [ref.delta(x, s) for x in range(N_BINS)]
        assert np.allclose(delta[s], port, atol=1e-14, rtol=0)


# ----------------------------------------------------------------------------- exact values


def test_visit_pmf_and_weights():
    pmf = q.visit_pmf(500, 1 / 200)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert pmf[0] == pytest.approx(0.995**500, rel=1e-12)
    assert 1 - pmf[0] == pytest.approx(0.918428, abs=1e-6)
    assert (np.arange(501) * pmf).sum() == pytest.approx(2.5, abs=1e-12)
    w_vis = q.visit_weights(500, 1 / 200, visited=True)
    w_pop = q.visit_weights(500, 1 / 200, visited=False)
    assert w_vis.shape == (500,) and w_vis[0] == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(w_pop, w_vis * (1 - pmf[0]), atol=1e-15)
    # sum_j P(K > j) = E[K]
    assert w_pop.sum() == pytest.approx(2.5, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_decomposition_identity_and_prop1_on_random_problems(seed):
    rng = np.random.default_rng(seed)
    P, pi, gain, x0 = random_problem(rng)
    w = rng.random(int(rng.integers(1, 12)))
    V_pi, V_ps, V_0, eta = q.tabular_values(P, pi, gain, w)
    d = q.decomposition(V_pi, V_ps, V_0, x0)
    assert abs(d["DPE"] + d["IPE"] + d["SPE"] - d["C"]) < 1e-12
    delta = q.benefit(P, gain)
    # Prop. 1(a): V_pi - V_PS = eta (pi1 * Delta), benefit at the visited state.
    assert np.allclose(V_pi - V_ps, np.einsum("sxy,sy->sx", eta, pi * delta), atol=1e-12, rtol=0)
    # Prop. 1(b), corrected: V_PS - V_pi0 = (eta^pi - eta^pi0) c0.
    eta0 = q.tabular_values(P, np.zeros_like(pi), gain, w)[3]
    c0 = (P[:, 0] * gain[None]).sum(axis=-1)
    assert np.allclose(V_ps - V_0, np.einsum("sxy,sy->sx", eta - eta0, c0), atol=1e-12, rtol=0)
    # DPE through the benefit and the visitation measure (from Prop. 1(a)).
    assert abs(q.dpe_from_benefit(pi, delta, eta, x0) - d["DPE"]) < 1e-12


@pytest.mark.parametrize("horizon", [1, 2, 7])
def test_tabular_values_equal_the_literal_recursions(horizon):
    P, pi, gain, _ = random_problem(np.random.default_rng(horizon))
    tab = q.tabular_values(P, pi, gain, np.ones(horizon))[:3]
    lit = q.finite_horizon_values(P, pi, gain, horizon)
    for a, b in zip(tab, lit):
        assert np.allclose(a, b, atol=1e-12, rtol=0)


def test_pi0_policy_has_no_policy_effects():
    P, _, gain, x0 = random_problem(np.random.default_rng(11))
    pi = np.zeros((2, P.shape[-1]))
    d = q.decomposition(*q.tabular_values(P, pi, gain, np.ones(9))[:3], x0)
    assert abs(d["DPE"]) < 1e-15 and abs(d["IPE"]) < 1e-15
    assert d["C"] == pytest.approx(d["SPE"], abs=1e-15)


@pytest.mark.parametrize(("setting", "policy"), sorted(EXACT))
def test_exact_decomposition_anchors(setting, policy):
    P, x0, success = setting_arrays(setting)
    pi1 = {
        "reject": np.zeros(N_BINS),
        "accept": np.ones(N_BINS),
        "greedy": (1.1 * success - 1 > 0).astype(float),
    }[policy]
    w = q.visit_weights(500, 1 / 200, visited=True)
    pi = np.stack([pi1, pi1])
    V_pi, V_ps, V_0, eta = q.tabular_values(P, pi, G, w)
    d = q.decomposition(V_pi, V_ps, V_0, x0)
    got = (d["C"], d["DPE"], d["IPE"], d["SPE"])
    assert np.allclose(got, EXACT[(setting, policy)], atol=1e-6, rtol=0)
    assert abs(sum(got[1:]) - got[0]) < 1e-12
    assert abs(q.dpe_from_benefit(pi, q.benefit(P, G), eta, x0) - d["DPE"]) < 1e-12


def test_pi0_value_tables():
    w = q.visit_weights(500, 1 / 200, visited=True)
    zeros = np.zeros((2, N_BINS))
    V1 = q.tabular_values(setting_arrays(1)[0], zeros, G, w)[2]
    V3 = q.tabular_values(setting_arrays(3)[0], zeros, G, w)[2]
    assert V1[0, 0] == pytest.approx(0.000921, abs=1e-6)
    assert np.allclose(V1[0, -2:], [0.010427, -0.238681], atol=1e-6)
    assert np.allclose(V1[1], V1[0], atol=0)
    assert V3[0, 0] == pytest.approx(0.000983, abs=1e-6)
    assert V3[0, -1] == pytest.approx(-0.119911, abs=1e-6)
    assert V3[1, 0] == pytest.approx(0.000294, abs=1e-6)
    assert V3[1, -1] == pytest.approx(-0.616925, abs=1e-6)


# ----------------------------------------------------------------------------- estimators


def ref_returns_to_go(ids, gains):
    """Literal loop port of the reference's ``Individual.compute_q_mc`` bookkeeping."""
    visits: dict[int, list[int]] = {}
    for t, i in enumerate(ids):
        visits.setdefault(int(i), []).append(t)
    out = np.zeros(len(ids))
    for steps in visits.values():
        running = 0.0
        for t in reversed(steps):
            running += gains[t]
            out[t] = running
    return out


@pytest.mark.parametrize("seed", range(4))
def test_returns_to_go_by_individual(seed):
    rng = np.random.default_rng(seed)
    T = int(rng.integers(1, 400))
    ids = rng.integers(0, 30, T)
    gains = rng.normal(size=T)
    assert np.allclose(
        q.returns_to_go_by_individual(ids, gains), ref_returns_to_go(ids, gains), atol=1e-12
    )
    # Cubic gain along each individual's own trajectory telescopes to g(x_t, x_final).
    x = rng.integers(0, N_BINS, T)
    pos: dict[int, int] = {}
    x_before = np.empty(T, dtype=np.int64)
    x_after = np.empty(T, dtype=np.int64)
    for t, i in enumerate(ids):
        x_before[t] = pos.get(int(i), int(x[t]))
        x_after[t] = pos[int(i)] = int(rng.integers(0, N_BINS))
    final = {int(i): pos[int(i)] for i in ids}
    qv = q.returns_to_go_by_individual(ids, G[x_before, x_after])
    want = np.array([G[x_before[t], final[int(ids[t])]] for t in range(T)])
    assert np.allclose(qv, want, atol=1e-12)
    assert q.returns_to_go_by_individual([], []).shape == (0,)


def test_reference_heuristic_and_its_spe():
    h = q.reference_pi0_heuristic(N_BINS)
    assert np.allclose(h, H_TABLE, atol=1e-6, rtol=0)
    # Every individual visited once, initial populations of Settings 1/2: SPE_ref = -0.665672.
    _, x0, _ = setting_arrays(1)
    counts = np.round(100 * x0).astype(int)
    bins = np.concatenate([np.repeat(np.arange(N_BINS), counts[s]) for s in (0, 1)])
    groups = np.repeat([0, 1], 100)
    ids = np.arange(200)
    zeros = np.zeros(200)
    d = q.episode_decomposition(ids, groups, bins, zeros, zeros, v_pi0="reference")
    assert d["SPE"] == pytest.approx(-0.665672, abs=1e-6)
    assert d["C"] == 0.0 and d["IPE"] == pytest.approx(0.665672, abs=1e-6)


def test_episode_decomposition_by_hand():
    # 6 steps: individuals 7 (group 0) twice, 3 (group 0) once, 5 (group 1) three times.
    ids = [7, 5, 3, 5, 7, 5]
    groups = [0, 1, 0, 1, 0, 1]
    x = [4, 2, 9, 3, 5, 3]
    g = [0.10, 0.02, -0.30, 0.0, 0.20, 0.05]
    g_ps = [0.01, 0.02, 0.03, 0.0, -0.01, 0.04]
    g_pi0 = [0.0, 0.01, 0.02, 0.03, 0.04, 0.05]
    h = q.reference_pi0_heuristic(N_BINS)
    vpi = np.array([((0.10 + 0.20) + -0.30) / 2, (0.02 + 0.0 + 0.05) / 1])
    vps = np.array([((0.01 - 0.01) + 0.03) / 2, (0.02 + 0.0 + 0.04) / 1])
    ref0 = np.array([(h[4] + h[9]) / 2, h[2]])
    sh0 = np.array([((0.0 + 0.04) + 0.02) / 2, 0.01 + 0.03 + 0.05])

    def check(d, v0):
        assert d["C"] == pytest.approx(vpi[0] - vpi[1], abs=1e-15)
        assert d["DPE"] == pytest.approx((vpi[0] - vps[0]) - (vpi[1] - vps[1]), abs=1e-15)
        assert d["IPE"] == pytest.approx((vps[0] - v0[0]) - (vps[1] - v0[1]), abs=1e-15)
        assert d["SPE"] == pytest.approx(v0[0] - v0[1], abs=1e-15)
        assert abs(d["DPE"] + d["IPE"] + d["SPE"] - d["C"]) < 1e-12

    check(q.episode_decomposition(ids, groups, x, g, g_ps), ref0)
    d = q.episode_decomposition(ids, groups, x, g, g_ps, v_pi0="shadow", g_pi0=g_pi0)
    check(d, sh0)
    assert np.array_equal(d["n_visited"], [2, 1])
    assert np.allclose(d["G"], [0.0, 0.07]) and d["G_gap"] == pytest.approx(-0.07)
    table = np.arange(28, dtype=float).reshape(2, 14)
    check(
        q.episode_decomposition(ids, groups, x, g, g_ps, v_pi0=table),
        np.array([(table[0, 4] + table[0, 9]) / 2, table[1, 2]]),
    )
    pop = q.episode_decomposition(
        ids, groups, x, g, g_ps, v_pi0="exact", g_pi0=g_pi0, average="population",
        n_per_group=[4, 2],
    )  # fmt: skip
    assert pop["C"] == pytest.approx(vpi[0] * 2 / 4 - vpi[1] / 2, abs=1e-15)
    with pytest.raises(ValueError, match="v_pi0"):
        q.episode_decomposition(ids, groups, x, g, g_ps, v_pi0="mystery")
    with pytest.raises(ValueError, match="g_pi0"):
        q.episode_decomposition(ids, groups, x, g, g_ps, v_pi0="shadow")
    with pytest.raises(ValueError, match="n_per_group"):
        q.episode_decomposition(ids, groups, x, g, g_ps, average="population")


# ----------------------------------------------------------------------------- Lambda


def test_lambda_hand_computed():
    # 2 x 3 pairs, eps = 0.1.
    p_plus, d_plus = [0.2, 0.8], [0.0, 1.0]
    p_minus, d_minus = [0.5, 0.8, 0.1], [0.0, 0.5, 1.0]
    eps = 0.1
    total = 0.0
    for pp, dp in zip(p_plus, d_plus):
        for pm, dm in zip(p_minus, d_minus):
            total += eps * abs(pp - pm) / (eps + abs(dp - dm))
    want = total / 6
    assert q.benefit_fairness_lambda(p_plus, p_minus, d_plus, d_minus, eps) == pytest.approx(
        want, abs=1e-15
    )
    # Population form: weights used as given.
    w_plus, w_minus = [0.25, 0.75], [0.5, 0.25, 0.25]
    want_w = sum(
        eps * abs(pp - pm) / (eps + abs(dp - dm)) * wp * wm
        for pp, dp, wp in zip(p_plus, d_plus, w_plus)
        for pm, dm, wm in zip(p_minus, d_minus, w_minus)
    )
    got = q.benefit_fairness_lambda(p_plus, p_minus, d_plus, d_minus, eps, w_plus, w_minus)
    assert got == pytest.approx(want_w, abs=1e-15)
    assert q.benefit_fairness_lambda([], [0.5], [], [0.1]) == 0.0


def test_lambda_limit_is_over_all_pairs():
    # Lambda's normaliser is every cross-group pair, not the equal-benefit ones
    # (docs/methods/lear2025.md, "Benefit fairness"). Setting 1's Delta: bins 5, 6 (s+), 5, 7 (s-).
    delta = np.asarray(DELTA[(1, 0)])
    p_plus, p_minus = [0.2, 0.9], [0.5, 0.1]
    d_plus, d_minus = delta[[5, 6]], delta[[5, 7]]
    assert q.benefit_fairness_lambda(p_plus, p_minus, d_plus, d_minus, 1e-6) == pytest.approx(
        0.075004, abs=1e-6
    )
    for eps in (1e-9, 1e-12):
        # -> sum over equal-benefit pairs / (|B+| |B-|) = |0.2 - 0.5| / 4, not the 0.3 mean.
        got = q.benefit_fairness_lambda(p_plus, p_minus, d_plus, d_minus, eps)
        assert got == pytest.approx(0.3 / 4, abs=1e-6)


def test_lambda_gradient_vanishes_when_equal_benefit_pairs_agree():
    # Only equal-benefit pairs (E1: unequal pairs would still contribute eps / |dDelta|).
    d = np.array([0.1, 0.1, 0.1])
    p_plus = np.array([0.3, 0.3])
    p_minus = np.array([0.3, 0.3, 0.3])
    h = 1e-7
    for k in range(2):
        up, down = p_plus.copy(), p_plus.copy()
        up[k] += h
        down[k] -= h
        lam_up = q.benefit_fairness_lambda(up, p_minus, d[:2], d, 1e-6)
        lam_down = q.benefit_fairness_lambda(down, p_minus, d[:2], d, 1e-6)
        # |.| has a kink at 0: both one-sided slopes are +-1 x weight, so the central
        # difference is 0 and the value at the point is the minimum.
        assert (lam_up - lam_down) / (2 * h) == pytest.approx(0.0, abs=1e-9)
        assert q.benefit_fairness_lambda(p_plus, p_minus, d[:2], d, 1e-6) <= min(lam_up, lam_down)


def test_dpe_step():
    groups = [0, 0, 1, 1, 1]
    prob = [0.5, 1.0, 0.2, 0.4, 0.0]
    delta = [0.2, 0.4, 1.0, 0.5, 0.3]
    assert q.dpe_step(groups, prob, delta) == pytest.approx((0.1 + 0.4) / 2 - (0.2 + 0.2) / 3)
    assert q.dpe_step([1, 1], [0.5, 0.5], [0.2, 0.2]) == pytest.approx(-0.1)


# ----------------------------------------------------------------------------- F-PPO-L distance


@pytest.mark.parametrize("form", ["reference", "sorted_counts", "intended"])
def test_windowed_count_w1_matches_a_loop_and_resumes(form):
    from rllib_fair.fairness.sinkhorn import sinkhorn_divergence_1d

    rng = np.random.default_rng(3)
    T, window = 230, 17
    groups = rng.integers(0, 2, T)
    bins = rng.integers(0, N_BINS, T)
    want = []
    for t in range(T):
        lo = max(0, t - window + 1)
        h = np.zeros((2, N_BINS))
        for s, b in zip(groups[lo : t + 1], bins[lo : t + 1]):
            h[s, b] += 1
        if form == "reference":
            want.append(sinkhorn_divergence_1d(h[0], h[1], p=1, blur=0.01, scaling=0.5))
        elif form == "sorted_counts":
            want.append(np.abs(np.sort(h[0]) - np.sort(h[1])).mean())
        elif h[0].sum() and h[1].sum():
            f = np.cumsum(h / h.sum(axis=1, keepdims=True), axis=1)
            want.append(np.abs(f[0] - f[1]).sum())
        else:
            want.append(0.0)
    whole, _ = q.windowed_count_w1(groups, bins, N_BINS, window, form)
    assert np.allclose(whole, want, rtol=1e-12, atol=1e-12)
    parts, carry = [], None
    for lo, hi in ((0, 5), (5, 6), (6, 100), (100, T)):
        w, carry = q.windowed_count_w1(groups[lo:hi], bins[lo:hi], N_BINS, window, form, carry)
        parts.append(w)
    assert np.allclose(np.concatenate(parts), want, rtol=1e-12, atol=1e-12)
    assert carry["last"] == pytest.approx(want[-1])
    with pytest.raises(ValueError, match="form: 'bogus' is invalid"):
        q.windowed_count_w1(groups, bins, form="bogus")


def test_windowed_count_w1_reference_form_is_the_sinkhorn_divergence_not_sorted_w1():
    """The reference's distance at its settings sits clearly below the sorted-count W1.

    Its default window is the reference's 300 applicants (the current one included).
    """
    import inspect

    rng = np.random.default_rng(4)
    groups = rng.integers(0, 2, 400)
    bins = rng.integers(0, N_BINS, 400)
    ref, _ = q.windowed_count_w1(groups, bins)
    exact, _ = q.windowed_count_w1(groups, bins, form="sorted_counts")
    tail = slice(300, None)
    assert np.all(ref[tail] < exact[tail])
    assert 0.6 < np.mean(ref[tail] / exact[tail]) < 0.95
    assert inspect.signature(q.windowed_count_w1).parameters["window"].default == 300
