"""Tests of fair/Replicator-v0 and fair/ReplicatorAdult-v0 (Yin et al. 2023, Sec. 4).

The replicator model is a reconstruction: docs/methods/yin2023.md, "The population:
replicator dynamics".
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the ids)
from rllib_fair.envs.replicator import (
    ADULT_TABLE_PATH,
    ReplicatorAdultEnv,
    ReplicatorEnv,
    load_adult_table,
    replicator_update,
)
from rllib_fair.fairness import replicator as fr
from rllib_fair.fairness.counts import NUM_FIELDS
from rllib_fair.fairness.notions import get_notion

from .helpers import rollout, run_check_env, same

IDS = ("fair/Replicator-v0", "fair/ReplicatorAdult-v0")
REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "scripts" / "derive_adult_replicator_table.py"
WRAPPED = (__import__("re").compile(r"is different from the unwrapped version"),)
STEP_KEYS = {
    "fairness",
    "group",
    "label",
    "decision",
    "label_observed",
    "q",
    "q_next",
    "accept_rate",
    "tpr",
    "fpr",
    "tp",
    "tn",
    "loss",
    "disparity",
    "disparities",
    "r",
    "g",
    "lambda_t",
    "t",
}
PHI_1 = 0.8413447460685429  # Phi(1)


def act(a0: float, a1: float | None = None) -> np.ndarray:
    return np.array([a0, a0 if a1 is None else a1], dtype=np.float64)


def tau_to_a(tau: float) -> float:
    """Threshold in feature units -> action on the default range [-4, 4]."""
    return (tau + 4.0) / 8.0


# ------------------------------------------------------------------ 1. API, determinism


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"observation_mode": "distribution"},
        {"observation_mode": "distribution", "include_time": True},
        {"include_time": True, "reward_mode": "relaxed"},
    ],
)
def test_check_env_every_observation_mode(env_id, kwargs):
    env = gym.make(env_id, **kwargs)
    run_check_env(env.unwrapped)
    run_check_env(env, allowed=WRAPPED)


@pytest.mark.parametrize("env_id", IDS)
def test_seeded_determinism_and_episode_end(env_id):
    rng = np.random.default_rng(0)
    actions = [rng.random(2).astype(np.float32) for _ in range(400)]
    kw = {"max_steps": 150, "observation_mode": "distribution", "population_size": 500}
    run_a = rollout(env_id, 5, actions, **kw)
    run_b = rollout(env_id, 5, actions, **kw)
    assert all(same(x, y) for sa, sb in zip(run_a, run_b) for x, y in zip(sa, sb))
    ends = [s[2] for s in run_a if len(s) == 5 and s[2] is not None]
    assert sum(ends) == 2 and not any(s[3] for s in run_a if s[3] is not None)
    env = gym.make(env_id, max_steps=3, terminate_at_horizon=False)
    env.reset(seed=0)
    flags = [env.step(act(0.5))[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]
    env = ReplicatorEnv(max_steps=2)
    env.reset(seed=0)
    env.step(act(0.5))
    assert env.step(act(0.5))[2] is True
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(act(0.5))


def test_reset_draws_and_options():
    env = ReplicatorEnv()
    qs = np.array([env.reset(seed=s)[0] for s in range(200)])
    assert qs.min() >= 0.01 and qs.max() <= 0.99 and qs.std() > 0.2
    for key in ("q", "pr_q", "q_g"):
        obs, info = env.reset(options={key: [0.2, 0.8]})
        np.testing.assert_array_equal(obs, np.float32([0.2, 0.8]))
        assert info["t"] == 0 and set(info) >= {"fairness", "group", "q"}
    for key in ("group_shares", "pr_G"):
        env.reset(options={"q": [0.2, 0.8], key: [0.3, 0.7]})
        np.testing.assert_array_equal(env.shares, [0.3, 0.7])
        np.testing.assert_array_equal(env.step(act(0.5))[4]["fairness"][0], [0.3, 0.7])
    env.reset()
    np.testing.assert_array_equal(env.shares, [0.5, 0.5])  # shares are per episode
    with pytest.raises(ValueError, match=r"options\['q'\]"):
        env.reset(options={"q": [1.2, 0.5]})
    with pytest.raises(ValueError, match=r"options\['pr_G'\]"):
        env.reset(options={"pr_G": [0.6, 0.6]})
    with pytest.raises(ValueError, match="unknown keys"):
        env.reset(options={"qq": [0.5, 0.5]})


def test_step_info_contract():
    env = ReplicatorEnv()
    env.reset(seed=1)
    with pytest.raises(RuntimeError, match="before reset"):
        ReplicatorEnv().step(act(0.5))
    obs, reward, _, _, info = env.step(np.float32([0.3, 0.7]))
    assert set(info) == STEP_KEYS
    assert info["group"] == info["label"] == info["decision"] == -1
    assert info["label_observed"] == 0 and info["t"] == 1
    assert info["fairness"].shape == (NUM_FIELDS, 2) and info["fairness"].dtype == np.float64
    assert set(info["disparities"]) == set(fr.DISPARITIES)
    assert reward == info["r"] == 1.0 - info["loss"] and info["lambda_t"] == 0.0
    assert info["g"] == 1.0 - info["disparities"]["dp"]
    np.testing.assert_array_equal(obs, info["q_next"].astype(np.float32))


@pytest.mark.parametrize(
    "action",
    [[0.5], [0.1, 0.2, 0.3], [[0.5, 0.5]], [float("nan"), 0.5], [0.5, float("inf")], "ab", None],
)
def test_bad_actions_are_rejected(action):
    env = ReplicatorEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"^action=.*: expected 2 .*thresholds") as e:
        env.step(action)
    assert "\n" not in str(e.value)
    env.step(act(0.5))  # the rejected step changed nothing


def test_actions_outside_the_box_are_clipped():
    a, b = ReplicatorEnv(), ReplicatorEnv()
    a.reset(options={"q": [0.4, 0.6]})
    b.reset(options={"q": [0.4, 0.6]})
    out_a, out_b = a.step([-3.0, 7.0]), b.step(np.float32([0.0, 1.0]))
    assert all(same(x, y) for x, y in zip(out_a, out_b))


# ------------------------------------------------------------------ 2. closed forms, anchors


def test_closed_form_rates_at_tau_zero():
    env = ReplicatorEnv()
    tpr, fpr = env.rates(act(0.5)[None])
    np.testing.assert_allclose(tpr, PHI_1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fpr, 1.0 - PHI_1, rtol=0, atol=1e-12)
    assert abs(PHI_1 - 0.8413447) < 1e-7


@pytest.mark.parametrize(
    ("q", "tau0", "accept_all", "reject_all", "env_a0", "env_a1"),
    [
        (0.5, 0.5708684, 0.4594595, 0.4117647, 0.4596271, 0.4122314),
        (0.3, 0.3631073, 0.2670157, 0.2307692, 0.2671478, 0.2311114),
        (0.9, 0.9229144, 0.8843931, 0.8630137, 0.8844621, 0.8632413),
    ],
)
def test_one_step_anchors(q, tau0, accept_all, reject_all, env_a0, env_a1):
    # Accept-all / reject-all use injected rates (TPR = FPR = 1 or 0): through the action
    # a = 0 gives FPR = 0.99865, not 1, so the env columns differ by up to 5e-4.
    env = ReplicatorEnv()
    assert abs(env.replicator_step(q, 1.0, 1.0) - accept_all) < 1e-7
    assert abs(env.replicator_step(q, 0.0, 0.0) - reject_all) < 1e-7
    for a, want in ((0.5, tau0), (0.0, env_a0), (1.0, env_a1)):
        env.reset(options={"q": [q, q]})
        info = env.step(act(a))[4]
        np.testing.assert_allclose(info["q_next"], want, rtol=0, atol=1e-7)


def test_step_statistics_anchor():
    env = ReplicatorEnv()
    env.reset(options={"q": [0.5, 0.3]})
    info = env.step(act(0.5))[4]
    np.testing.assert_allclose(info["accept_rate"], [0.5, 0.3634621], rtol=0, atol=1e-7)
    assert abs(info["disparity"] - 0.0186426) < 1e-7
    assert abs(info["tp"] @ [0.5, 0.5] - 0.3365379) < 1e-7
    assert abs(info["tn"] @ [0.5, 0.5] - 0.5048068) < 1e-7
    assert abs(info["loss"] - (1.0 - 0.3365379)) < 1e-7


@pytest.mark.parametrize(
    ("rates", "action", "mean_tp"),
    [
        ((1.0, 1.0), None, 0.0343296),
        (None, 0.0, 0.0344642),
        (None, tau_to_a(0.0), 0.8108111),
        (None, tau_to_a(-0.5), 0.8904130),
    ],
)
def test_hundred_step_means(rates, action, mean_tp):
    # Exact 100-step means of tp from (0.5, 0.3), tested at 1e-6.
    env = ReplicatorEnv()
    if rates is not None:
        q, tps = np.array([0.5, 0.3]), []
        for _ in range(100):
            tps.append(0.5 * q.sum() * rates[0])
            q = env.replicator_step(q, *rates)
        assert q.max() < 1e-6
    else:
        env.reset(options={"q": [0.5, 0.3]})
        tps = []
        for _ in range(100):
            _, _, terminated, _, info = env.step(act(action))
            tps.append(info["tp"] @ [0.5, 0.5])
        assert terminated
    assert abs(np.mean(tps) - mean_tp) < 1e-6


# ------------------------------------------------------------------ 3-5. dynamics


def test_fixed_points():
    env = ReplicatorEnv()
    env.reset(options={"q": [0.0, 1.0]})
    rng = np.random.default_rng(3)
    for _ in range(100):
        info = env.step(rng.random(2))[4]
        np.testing.assert_array_equal(info["q_next"], [0.0, 1.0])
    # TPR - FPR = c / b = 0.3 exactly: W_1 = W_0, every q is a fixed point.
    q = np.linspace(0.0, 1.0, 21)
    np.testing.assert_allclose(env.replicator_step(q, 0.65, 0.35), q, rtol=0, atol=1e-15)


def test_monotonicity_on_open_interval():
    rng = np.random.default_rng(4)
    q = rng.uniform(1e-6, 1 - 1e-6, 5000)
    tpr, fpr = rng.random(5000), rng.random(5000)
    u = ReplicatorEnv().utilities
    np.testing.assert_array_equal(u, [[1.0, 2.0], [0.7, 1.7]])
    q_next = replicator_update(q, tpr, fpr, u)
    w1 = u[1, 1] * tpr + u[1, 0] * (1 - tpr)
    w0 = u[0, 1] * fpr + u[0, 0] * (1 - fpr)
    grows, shrinks = w1 > w0 + 1e-9, w1 < w0 - 1e-9
    assert np.all(q_next[grows] > q[grows]) and np.all(q_next[shrinks] < q[shrinks])
    assert np.all((q_next >= 0) & (q_next <= 1))
    # eta_rep scales the move.
    half = replicator_update(q, tpr, fpr, u, eta=0.5)
    np.testing.assert_allclose(half - q, 0.5 * (q_next - q), rtol=0, atol=1e-15)


def test_regimes():
    env = ReplicatorEnv()
    q0 = np.random.default_rng(5).uniform(0.01, 0.99, (100, 2))
    for a, check in ((0.0, lambda q: q.max() < 1e-3), (0.5, lambda q: q.min() > 0.999)):
        tpr, fpr = env.rates(act(a)[None])
        q = q0.copy()
        for _ in range(200):
            q = env.replicator_step(q, tpr, fpr)
        assert check(q), (a, q.min(), q.max())


# ------------------------------------------------------------------ 6-7. binned model, symmetry


def test_binned_matches_exact_gaussian():
    exact, binned = ReplicatorEnv(), ReplicatorEnv(bins=4096)
    a = np.random.default_rng(6).uniform(1e-3, 1 - 1e-3, (50, 2))
    for x, y in zip(exact.rates(a), binned.rates(a)):
        assert np.max(np.abs(x - y)) < 1e-6
    # Binned a = 0 / 1 accept / reject exactly everyone; rates are monotone and continuous.
    coarse = ReplicatorEnv(bins=8)
    tpr, fpr = coarse.rates(np.array([[0.0, 1.0]]))
    np.testing.assert_allclose(tpr, [[1.0, 0.0]], atol=1e-15)
    np.testing.assert_allclose(fpr, [[1.0, 0.0]], atol=1e-15)
    grid = np.linspace(0, 1, 2001)[:, None].repeat(2, 1)
    t, _ = coarse.rates(grid)
    assert np.all(np.diff(t[:, 0]) <= 0) and np.max(np.abs(np.diff(t[:, 0]))) < 0.01


@pytest.mark.parametrize("kwargs", [{}, {"bins": 32}, {"feature_model": "adult"}])
def test_vectorised_rates_and_objective_match_step(kwargs):
    env = ReplicatorEnv(**kwargs)
    rng = np.random.default_rng(7)
    for _ in range(20):
        obs, _ = env.reset(seed=int(rng.integers(1000)))
        q = env.q
        a = rng.random(2)
        info = env.step(a)[4]
        tpr, fpr = env.rates(a[None])
        np.testing.assert_allclose(tpr[0], info["tpr"], rtol=0, atol=1e-15)
        np.testing.assert_allclose(fpr[0], info["fpr"], rtol=0, atol=1e-15)
        stats = env.step_statistics(a[None], q)
        np.testing.assert_allclose(stats["q_next"][0], info["q_next"], rtol=0, atol=1e-15)
        loss = env.objective_values(a[None], q, "myopic")[0]
        assert abs(loss - info["loss"]) < 1e-15
        fair = env.objective_values(a[None], q, "myopic_fair", 0.3)[0]
        assert abs(fair - (0.7 * info["loss"] + 0.3 * info["disparity"])) < 1e-15


def test_symmetry():
    env = ReplicatorEnv(disparity="eo", loss="zero_one")
    env.reset(options={"q": [0.37, 0.37]})
    info = env.step(act(0.42))[4]
    assert all(v == 0.0 for v in info["disparities"].values())
    a, b = ReplicatorEnv(bins=64), ReplicatorEnv(bins=64)
    a.reset(options={"q": [0.2, 0.7]})
    b.reset(options={"q": [0.7, 0.2]})
    ia = a.step(act(0.3, 0.6))[4]
    ib = b.step(act(0.6, 0.3))[4]
    for key in ("q_next", "accept_rate", "tpr", "fpr", "tp", "tn"):
        np.testing.assert_array_equal(ia[key], ib[key][::-1])
    assert ia["disparities"] == ib["disparities"] and ia["loss"] == ib["loss"]


# ------------------------------------------------------------------ 8. disparity forms


def test_disparities_equal_reference_forms():
    rng = np.random.default_rng(8)
    env = ReplicatorEnv()
    for _ in range(50):
        env.reset(seed=int(rng.integers(10**6)))
        info = env.step(rng.random(2))[4]

        def ref(v):
            return sum((v[i] - v[j]) ** 2 for i in range(2) for j in range(2)) / 2

        d = info["disparities"]
        assert math.isclose(d["dp"], ref(info["accept_rate"]), abs_tol=1e-15)
        assert math.isclose(d["eop"], ref(info["tpr"]), abs_tol=1e-15)
        eo = 0.5 * ref(info["tpr"]) + 0.5 * ref(1 - info["fpr"])
        assert math.isclose(d["eo"], eo, abs_tol=1e-15)
        assert math.isclose(d["qr"], ref(info["q_next"]), abs_tol=1e-15)


@pytest.mark.parametrize("disparity", ["dp", "eop", "eo", "qr"])
@pytest.mark.parametrize("loss", ["tp", "tp_tn", "zero_one", "qr", (0.4, 0.9)])
def test_loss_and_disparity_settings(loss, disparity):
    env = ReplicatorEnv(loss=loss, disparity=disparity)
    env.reset(options={"q": [0.6, 0.25], "group_shares": [0.3, 0.7]})
    info = env.step(act(0.45, 0.55))[4]
    pi = np.array([0.3, 0.7])
    if loss == "qr":
        want = fr.qr_loss(info["q_next"], pi)
    else:
        w = fr.LOSS_WEIGHTS.get(loss, loss)
        want = fr.classification_loss(info["tp"], info["tn"], pi, *w)
    assert math.isclose(info["loss"], want, abs_tol=1e-15) and 0 <= info["loss"] <= 1
    assert info["disparity"] == info["disparities"][disparity]


# ------------------------------------------------------------------ 9. reward modes


def test_relaxed_reward_schedule():
    h = 10
    for kappa in (1.0, 20.0):
        env = ReplicatorEnv(reward_mode="relaxed", relaxation_sharpness=kappa, max_steps=h)
        for _ in range(2):  # lambda resets with the episode
            env.reset(options={"q": [0.8, 0.2]})
            for t in range(1, h + 1):
                _, reward, _, _, info = env.step(act(0.3, 0.6))
                assert info["lambda_t"] == pytest.approx(t / h, abs=1e-15) and info["t"] == t
                lam, loss, d = info["lambda_t"], info["loss"], info["disparity"]
                psi = 1 - (1 - d) ** kappa
                assert reward == pytest.approx(1 - ((1 - lam) * loss + lam * psi), abs=1e-14)
                if kappa == 1.0:  # Eq. 6 exactly
                    assert reward == pytest.approx((1 - lam) * info["r"] + lam * info["g"])
                assert reward == pytest.approx(fr.relaxed_reward(loss, d, lam, kappa), abs=1e-14)
    env = ReplicatorEnv(reward_mode="relaxed", relaxation_lambda_final=0.5, max_steps=4)
    env.reset(seed=0)
    lams = [env.step(act(0.5))[4]["lambda_t"] for _ in range(4)]
    np.testing.assert_allclose(lams, [0.125, 0.25, 0.375, 0.5])
    env = ReplicatorEnv(reward_mode="relaxed", relaxation_lambda_final=2.0, max_steps=4)
    env.reset(seed=0)
    lams = [env.step(act(0.5))[4]["lambda_t"] for _ in range(4)]
    np.testing.assert_allclose(lams, [0.5, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(fr.lambda_schedule(np.arange(1, 5), 4, 2.0), lams)


def test_lagrangian_reward():
    env = ReplicatorEnv(reward_mode="lagrangian", lagrange_lambda=0.25)
    env.reset(options={"q": [0.8, 0.2]})
    _, reward, _, _, info = env.step(act(0.3, 0.6))
    assert info["lambda_t"] == 0.25
    assert reward == pytest.approx(1 - (0.75 * info["loss"] + 0.25 * info["disparity"]))


# ------------------------------------------------------------------ 10. counts record


@pytest.mark.parametrize("env_id", IDS)
def test_counts_record_gives_paper_statistics(env_id):
    env = gym.make(env_id)
    env.reset(seed=9, options={"group_shares": [0.35, 0.65]})
    rng = np.random.default_rng(9)
    for _ in range(30):
        info = env.step(rng.random(2))[4]
        counts = info["fairness"]

        def rates_of(name, counts=counts):
            supply, demand = get_notion(name).supply_demand(counts)
            return supply / demand

        np.testing.assert_allclose(rates_of("demographic_parity")[0], info["accept_rate"], 1e-13)
        np.testing.assert_allclose(rates_of("equal_opportunity")[0], info["tpr"], 1e-13)
        eo = rates_of("equalized_odds")
        np.testing.assert_allclose(eo[0], info["tpr"], 1e-13)
        np.testing.assert_allclose(eo[1], info["fpr"], 1e-12)
        np.testing.assert_allclose(rates_of("qualification_parity")[0], info["q_next"], 1e-13)
        assert np.all(counts[6:] == 0.0)


# ------------------------------------------------------------------ observations


@pytest.mark.parametrize("env_id", IDS)
def test_distribution_observation(env_id):
    env = gym.make(env_id, observation_mode="distribution", include_time=True, max_steps=5)
    base = env.unwrapped
    obs, _ = env.reset(seed=10)
    assert obs.shape == (131,) and obs in env.observation_space
    assert np.all(env.observation_space.high[1:33] == 10.0)
    assert np.all(env.observation_space.high[33:65] == 1.0)
    for j in range(5):
        assert obs[-1] == np.float32(j / 5)
        np.testing.assert_allclose(base.q_from_observation(obs), base.q, rtol=0, atol=2e-6)
        for k in range(2):
            block = obs[65 * k : 65 * (k + 1)]
            assert block[0] == 0.5
            assert abs(block[1:33].sum() / 10 - 1.0) < 1e-5
        obs = env.step(np.float32([0.4, 0.6]))[0]
    assert obs[-1] == 1.0
    qual = ReplicatorEnv(include_time=True)
    obs, _ = qual.reset(seed=3)
    assert obs.shape == (3,) and obs[2] == 0.0
    np.testing.assert_array_equal(qual.q_from_observation(obs), obs[:2].astype(np.float64))


# ------------------------------------------------------------------ 11. Adult table


def test_adult_table_sanity():
    table = load_adult_table()
    f = np.asarray(table["class_conditionals"])
    assert f.shape == (2, 2, 32) and np.all(f > 0)
    np.testing.assert_allclose(f.sum(axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(table["q_emp"], [0.3138, 0.1137], atol=1e-4)
    assert abs(table["accuracy"] - 0.841) < 2e-3 and len(table["coefficients"]) == 40
    assert table["group_names"] == ["Male", "Female"] and table["group_sizes"] == [20380, 9782]
    for key in ("source_files", "origin", "derivation", "script", "date"):
        assert table["provenance"][key]
    env = ReplicatorAdultEnv()
    assert env.GROUP_NAMES == ("Male", "Female") and env.max_steps == 150
    assert ReplicatorEnv(feature_model="adult").GROUP_NAMES == ("Male", "Female")
    # Assumption 4.1 fails for the Adult score, as the paper says: the posterior is not
    # monotone in the bin.
    q = np.array(table["q_emp"])[:, None]
    post = q * f[:, 1] / (q * f[:, 1] + (1 - q) * f[:, 0])
    assert np.any(np.diff(post, axis=1) < 0)


def test_adult_derivation_is_deterministic(tmp_path):
    spec = importlib.util.spec_from_file_location("derive_adult_replicator_table", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    if not script.DEFAULT_CSV.exists():
        pytest.skip(f"raw Adult data not available at {script.DEFAULT_CSV}")
    fresh = script.derive(script.DEFAULT_CSV)
    again = script.derive(script.DEFAULT_CSV)
    committed = json.loads(ADULT_TABLE_PATH.read_text())
    assert fresh == again
    for key in ("group_names", "bin_counts", "group_sizes", "features", "n_rows"):
        assert fresh[key] == committed[key], key
    for key in ("class_conditionals", "q_emp", "coefficients", "accuracy"):
        np.testing.assert_allclose(fresh[key], committed[key], rtol=0, atol=1e-10)
    out = tmp_path / "adult.json"
    script.main([str(script.DEFAULT_CSV), "--out", str(out)])
    assert json.loads(out.read_text())["bin_counts"] == committed["bin_counts"]


# ------------------------------------------------------------------ bad arguments


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"feature_model": "normal"}, "feature_model"),
        ({"bins": 0}, "bins"),
        ({"bins": 2.5}, "bins"),
        ({"feature_model": "adult", "bins": 16}, "bins"),
        ({"threshold_range": (1.0, -1.0)}, "threshold_range"),
        ({"threshold_range": (0.0,)}, "threshold_range"),
        ({"threshold_range": (-1e9, 1.0)}, "threshold_range"),
        ({"feature_model": "adult", "threshold_range": (-4, 4)}, "threshold_range"),
        ({"utilities": "greedy"}, "utilities"),
        ({"utilities": [[1.0, 2.0], [0.0, 1.7]]}, "utilities"),
        ({"utilities": [[1.0, 2.0, 3.0]]}, "utilities"),
        ({"utilities": [[1e300, 2.0], [1.0, 1.7]]}, "utilities"),
        ({"eta_rep": 0.0}, "eta_rep"),
        ({"eta_rep": 1.5}, "eta_rep"),
        ({"population_size": 0}, "population_size"),
        ({"group_shares": (0.6, 0.6)}, "group_shares"),
        ({"loss": "accuracy"}, "loss"),
        ({"loss": (1.2, 0.0)}, "loss"),
        ({"loss": (0.5,)}, "loss"),
        ({"disparity": "di"}, "disparity"),
        ({"reward_mode": "penalty"}, "reward_mode"),
        ({"lagrange_lambda": 1.5}, "lagrange_lambda"),
        ({"lagrange_lambda": "0.5"}, "lagrange_lambda"),
        ({"relaxation_lambda_final": -1.0}, "relaxation_lambda_final"),
        ({"relaxation_sharpness": 0.0}, "relaxation_sharpness"),
        ({"max_steps": 0}, "max_steps"),
        ({"terminate_at_horizon": "yes"}, "terminate_at_horizon"),
        ({"observation_mode": "image"}, "observation_mode"),
        ({"include_time": 1}, "include_time"),
    ],
)
def test_constructor_validation(kwargs, name):
    with pytest.raises(ValueError) as excinfo:
        ReplicatorEnv(**kwargs)
    message = str(excinfo.value)
    assert message.startswith(f"{name}=") and "\n" not in message


def test_objective_validation():
    env = ReplicatorEnv()
    with pytest.raises(ValueError, match=r"^objective='best': expected one of"):
        env.objective_values(act(0.5)[None], [0.5, 0.5], "best")
