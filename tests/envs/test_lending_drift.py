"""Tests of fair/LendingDrift-v0 (Lear & Zhang 2025, App. C; docs/methods/lear2025.md)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the ids)
from rllib_fair.envs.lending_drift import (
    C_MINUS,
    C_PLUS,
    P_HC,
    P_LC,
    QUALIFICATION_INFO_KEYS,
    SETTINGS,
    LendingDriftEnv,
)
from rllib_fair.fairness import qualification as q
from rllib_fair.fairness.counts import POPULATION, QUALIFIED_MASS

from .helpers import run_check_env

G = q.gain_table(14)


def clip(x: int) -> int:
    return min(13, max(0, x))


def run(env: LendingDriftEnv, policy, seed: int, steps: int | None = None):
    """One episode (or ``steps`` steps); returns the list of step infos and rewards."""
    obs, _ = env.reset(seed=seed)
    out = []
    for _ in range(steps or env.max_steps):
        a = int(policy(obs))
        obs, r, term, trunc, info = env.step(a)
        out.append((a, r, info))
        if term or trunc:
            break
    return out


def greedy(success):
    table = (1.1 * np.asarray(success) - 1 > 0).astype(int)
    return lambda obs: table[int(np.argmax(obs[:14]))]


# ----------------------------------------------------------------------------- API


@pytest.mark.parametrize("setting", [1, 2, 3])
def test_check_env_and_determinism(setting):
    run_check_env(gym.make("fair/LendingDrift-v0", setting=setting).unwrapped)
    env = LendingDriftEnv(setting=setting)
    rng = np.random.default_rng(setting)
    a = run(env, lambda o: rng.integers(0, 2), seed=3)
    rng = np.random.default_rng(setting)
    b = run(env, lambda o: rng.integers(0, 2), seed=3)
    assert [(x, r) for x, r, _ in a] == [(x, r) for x, r, _ in b]
    for (_, _, ia), (_, _, ib) in zip(a, b):
        assert {k: ia[k] for k in QUALIFICATION_INFO_KEYS} == {
            k: ib[k] for k in QUALIFICATION_INFO_KEYS
        }
        assert np.array_equal(ia["fairness"], ib["fairness"])


def test_presets_and_overrides():
    env = LendingDriftEnv(setting=2)
    assert np.allclose(env.success_probs, [P_LC, P_LC])
    assert np.allclose(env.initial_cluster_probs, [C_PLUS, C_MINUS])
    env = LendingDriftEnv(setting=3, drift_probs=[[0, 1, 0], [0, 1, 0]])
    assert np.allclose(env.initial_cluster_probs, [C_PLUS, C_PLUS])
    assert np.allclose(env.success_probs, [P_HC, P_HC])
    assert np.allclose(env.drift_probs, [[0, 1, 0], [0, 1, 0]])
    two = np.stack([P_HC, P_LC])
    env = LendingDriftEnv(setting=None, cluster_probs=[C_PLUS, C_MINUS], success_probs=two,
                          drift_probs=SETTINGS[1]["drift_probs"])  # fmt: skip
    assert np.allclose(env.success_probs, two)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"setting": 4}, "setting"),
        ({"setting": "1"}, "setting"),
        ({"setting": True}, "setting"),
        ({"setting": None}, "setting"),
        ({"cluster_probs": [[1 / 3, 2 / 3] + [0] * 12] * 2}, "cluster_probs"),
        ({"cluster_probs": [C_PLUS]}, "cluster_probs"),
        ({"success_probs": [0.5] * 13}, "success_probs"),
        ({"success_probs": [1.5] * 14}, "success_probs"),
        ({"drift_probs": [[0.5, 0.5, 0.5], [0, 1, 0]]}, "drift_probs"),
        ({"drift_probs": [0.1, 0.8, 0.1]}, "drift_probs"),
        ({"individuals_per_group": 0}, "individuals_per_group"),
        ({"group_probs": (0.6, 0.6)}, "group_probs"),
        ({"interest_rate": -0.1}, "interest_rate"),
        ({"loan_amount": 0}, "loan_amount"),
        ({"starting_cash": 1e300}, "starting_cash"),
        ({"max_steps": 0}, "max_steps"),
        ({"history_window": 0}, "history_window"),
        ({"obs_history": "yes"}, "obs_history"),
        ({"obs_bin": False, "obs_group": False, "obs_history": False}, "obs_bin"),
    ],
)
def test_bad_arguments_give_one_line_errors(kwargs, name):
    with pytest.raises(ValueError) as excinfo:
        LendingDriftEnv(**kwargs)
    message = str(excinfo.value)
    assert message.startswith(name) and "\n" not in message


# ----------------------------------------------------------------------------- population


@pytest.mark.parametrize("setting", [1, 2, 3])
def test_initial_counts_and_group_sizes(setting):
    env = LendingDriftEnv(setting=setting)
    env.reset(seed=0)
    want = np.round(100 * np.asarray(SETTINGS[setting]["cluster_probs"])).astype(int)
    assert np.array_equal(env.bin_counts(), want)
    if setting == 1:  # round(100 P(x0 | s)) of the authors' initial distributions
        assert env.bin_counts()[0].tolist() == [0, 0, 5, 5, 5, 5, 10, 10, 15, 15, 15, 15, 0, 0]
        assert env.bin_counts()[1].tolist() == [5, 5, 5, 5, 10, 10, 15, 15, 15, 15, 0, 0, 0, 0]
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    for _ in range(env.max_steps):
        env.step(int(rng.integers(0, 2)))
        assert env.bin_counts().sum(axis=1).tolist() == [100, 100]
    # Reset restores the initial population.
    env.reset()
    assert np.array_equal(env.bin_counts(), want)
    assert np.array_equal(env.population_bins(), env.initial_bins())


def test_population_rows_are_group_probs_and_mean_repay_probability():
    env = LendingDriftEnv(setting=1, group_probs=(0.3, 0.7))
    _, info = env.reset(seed=1)
    rng = np.random.default_rng(1)
    infos = [info] + [i for _, _, i in run(env, lambda o: rng.integers(0, 2), seed=1)]
    bins = env.population_bins()
    counts = infos[-1]["fairness"]
    assert np.allclose(counts[POPULATION], [0.3, 0.7], atol=0)
    p = np.asarray(P_HC)
    want = [0.3 * p[bins[:100]].mean(), 0.7 * p[bins[100:]].mean()]
    assert np.allclose(counts[QUALIFIED_MASS], want, atol=1e-12, rtol=0)


# ----------------------------------------------------------------------------- dynamics


def test_transitions_drift_and_clipping():
    # Drift-heavy tables so that clipping at both ends happens often.
    env = LendingDriftEnv(
        setting=1, drift_probs=[[0.4, 0.2, 0.4], [0.45, 0.1, 0.45]], max_steps=4000
    )
    rng = np.random.default_rng(2)
    rejected_moves = clipped_low = clipped_high = 0
    for a, r, info in run(env, lambda o: rng.integers(0, 2), seed=2):
        x, k, nx = info["credit_bin"], info["credit_drift"], info["next_credit_bin"]
        assert k in (-1, 0, 1)
        if a == 1:
            step = 1 if info["label"] == 1 else -1
            assert nx == clip(x + k + step)
            assert r == (0.1 if info["label"] == 1 else -1.0)
        else:
            assert nx == clip(x + k) and r == 0.0
            rejected_moves += nx != x
        raw = x + k + ((1 if info["label"] else -1) if a else 0)
        clipped_low += raw < 0
        clipped_high += raw > 13
        assert info["label_observed"] == a and info["decision"] == a
    assert rejected_moves > 0 and clipped_low > 0 and clipped_high > 0


def test_rewards_cash_and_termination():
    env = LendingDriftEnv(setting=2, starting_cash=3.0)
    obs, _ = env.reset(seed=4)
    cash = 3.0
    for _ in range(500):
        obs, r, term, trunc, info = env.step(1)
        assert r in (0.1, -1.0)
        cash += r
        assert env.cash == pytest.approx(cash, abs=1e-12)
        assert term == (cash < 1.0)
        if term or trunc:
            break
    assert term and not trunc


def test_time_limit_terminates():
    env = LendingDriftEnv(max_steps=3, time_limit_terminates=True)
    env.reset(seed=0)
    ends = [env.step(0)[2:4] for _ in range(3)]
    assert ends == [(False, False), (False, False), (True, False)]
    env = LendingDriftEnv(max_steps=3)
    env.reset(seed=0)
    assert [env.step(0)[2:4] for _ in range(3)][-1] == (False, True)


def test_qualification_gain_info():
    env = LendingDriftEnv(setting=3)
    delta = env.benefit_table()
    rng = np.random.default_rng(5)
    shadow = dict(enumerate(env.initial_bins().tolist()))
    _, info0 = env.reset(seed=5)
    assert set(QUALIFICATION_INFO_KEYS) <= set(info0) and info0["individual"] == -1
    for _, _, info in run(env, lambda o: rng.integers(0, 2), seed=5):
        i, x, nx, k = (info[key] for key in ("individual", "credit_bin", "next_credit_bin",
                                              "credit_drift"))  # fmt: skip
        assert info["group"] == (0 if i < 100 else 1)
        assert info["initial_credit_bin"] == int(env.initial_bins()[i])
        assert info["qual_gain"] == G[x, nx]
        assert info["qual_gain_ps"] == G[x, clip(x + k)]  # same drift draw (pi^PS / pi0)
        s0 = shadow[i]
        shadow[i] = clip(s0 + k)
        assert info["qual_gain_pi0"] == G[s0, shadow[i]]
        assert info["benefit"] == delta[info["group"], x]
        for key in QUALIFICATION_INFO_KEYS:
            assert type(info[key]) in (int, float)


def test_mass_equivalence_with_the_reference_credit_shift():
    """Replaying the env's events through a port of the reference's mass bookkeeping."""
    env = LendingDriftEnv(setting=1, max_steps=3000)
    increment = 0.01  # the reference's cluster_shift_increment
    mass = [list(C_PLUS), list(C_MINUS)]
    rng = np.random.default_rng(6)
    env.reset(seed=6)
    for _ in range(env.max_steps):
        a = int(rng.integers(0, 2))
        info = env.step(a)[-1]
        s, x, k, y = info["group"], info["credit_bin"], info["credit_drift"], info["label"]
        # PPOEnvWrapper.next_x_given_action (one-sided clips) + _CreditShift mass move.
        cx = x + k
        if a == 1:
            nx = max(0, cx - 1) if not y else min(13, cx + 1)
        else:
            nx = max(0, min(13, cx))
        if nx != x:
            mass[s][x] -= increment
            mass[s][nx] += increment
        assert np.allclose(env.bin_counts() / 100, mass, atol=1e-9, rtol=0)


def test_visits_do_not_depend_on_the_policy():
    env = LendingDriftEnv(setting=1, max_steps=10_000)
    accept = [i["individual"] for _, _, i in run(env, lambda o: 1, seed=7)]
    reject = [i["individual"] for _, _, i in run(env, lambda o: 0, seed=7)]
    assert accept == reject  # same draws pick the same individuals, whatever the decision
    freq = np.bincount(accept, minlength=200)
    expected = len(accept) / 200
    chi2 = float(((freq - expected) ** 2 / expected).sum())
    assert chi2 < 199 + 5 * np.sqrt(2 * 199)  # 199 dof, about 5 sd


def test_monte_carlo_anchors_greedy_setting_1():
    """Exact E[profit(500)] = 15.322 and C (visited) = 0.367843 of the greedy policy.

    Compared with the exact expectations, not with an earlier Monte Carlo sample
    (docs/methods/lear2025.md, "Reference values").
    """
    env = LendingDriftEnv(setting=1)
    policy = greedy(P_HC)
    profits, cs, dpes = [], [], []
    for ep in range(200):
        steps = run(env, policy, seed=1000 + ep)
        profits.append(sum(r for _, r, _ in steps))
        cols = {k: [i[k] for _, _, i in steps] for k in
                ("individual", "group", "credit_bin", "qual_gain", "qual_gain_ps")}  # fmt: skip
        d = q.episode_decomposition(cols["individual"], cols["group"], cols["credit_bin"],
                                    cols["qual_gain"], cols["qual_gain_ps"])  # fmt: skip
        cs.append(d["C"])
        dpes.append(d["DPE"])
    for values, want in ((profits, 15.322), (cs, 0.367843), (dpes, 0.382896)):
        se = np.std(values) / np.sqrt(len(values))
        assert abs(np.mean(values) - want) < 3 * se, (np.mean(values), want, se)


# ----------------------------------------------------------------------------- observation


def test_observation_layout_and_history():
    env = LendingDriftEnv(setting=1, history_window=5)
    assert env.observation_space.shape == (44,)
    obs, _ = env.reset(seed=8)
    window: list[tuple[int, int]] = []
    rng = np.random.default_rng(8)
    for _ in range(40):
        _, g, b = env.applicant
        assert obs[b] == 1.0 and obs[:14].sum() == 1.0
        assert obs[14 + g] == 1.0 and obs[14:16].sum() == 1.0
        hist = np.zeros((2, 14))
        for wg, wb in window:
            hist[wg, wb] += 1
        assert np.allclose(obs[16:], (hist / (len(window) + 1)).ravel(), atol=1e-7)
        obs, _, _, _, info = env.step(int(rng.integers(0, 2)))
        window = (window + [(info["group"], info["credit_bin"])])[-5:]
    sizes = {
        (True, True, False): 16,
        (False, False, True): 28,
        (True, False, True): 42,
    }
    for (ob, og, oh), size in sizes.items():
        env = LendingDriftEnv(obs_bin=ob, obs_group=og, obs_history=oh)
        assert env.observation_space.shape == (size,)
        obs, _ = env.reset(seed=0)
        assert obs.shape == (size,) and obs in env.observation_space


def test_helper_tables():
    env = LendingDriftEnv(setting=1)
    assert env.transition_kernels().shape == (2, 2, 14, 14)
    assert np.allclose(env.benefit_table()[0, [0, 13]], [0.002424, 0.075384], atol=1e-6)
    pmf = env.visit_pmf()
    assert pmf.shape == (501,) and pmf[0] == pytest.approx(0.995**500, rel=1e-12)
    v0 = env.pi0_value_table()
    assert v0[0, 0] == pytest.approx(0.000921, abs=1e-6)
    assert v0[0, 13] == pytest.approx(-0.238681, abs=1e-6)
