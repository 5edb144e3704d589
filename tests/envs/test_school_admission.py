"""Tests of fair/SchoolAdmission-v0: stand-in calibration, dynamics, info, CSV loader."""

from __future__ import annotations

import json
import math
import re

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import rllib_fair  # noqa: F401  (registers the ids)
from rllib_fair.envs import CLASSIFICATION_NOTIONS, env_info
from rllib_fair.envs.school_admission import (
    DEFAULT_STANDIN_SEED,
    STANDIN_AGE_COEFFICIENTS,
    STANDIN_CARDINALITIES,
    STANDIN_PATH,
    TARGET_GROUP_PROBS,
    TARGET_POSITIVE_RATE,
    TARGET_QUALIFICATION_GAP,
    SchoolAdmissionEnv,
    SchoolAdmissionParams,
    fit_logistic,
    load_enem,
    make_standin_params,
    standin_params,
)
from rllib_fair.fairness.counts import (
    DECIDED,
    NUM_FIELDS,
    POPULATION,
    QUALIFIED,
    QUALIFIED_MASS,
    SELECTED,
    SELECTED_QUALIFIED,
)

from .helpers import run_check_env

ENV_ID = "fair/SchoolAdmission-v0"
N_DIMS = 126
INFO_KEYS = {"fairness", "group", "label", "decision", "label_observed"}


def _blocks(params: SchoolAdmissionParams) -> list[slice]:
    offsets = params.offsets
    return [slice(int(o), int(o) + m) for o, m in zip(offsets, params.cardinalities)]


def _recount(env: SchoolAdmissionEnv) -> np.ndarray:
    """Pass probability of every pool member recomputed from scratch."""
    return env.params.pass_probability(
        env.pool_categories, env.pool_groups, env.pool_gains, gain=env.gain
    )


# ------------------------------------------------------------------ API and defaults


def test_registered_metadata_and_defaults():
    info = env_info(ENV_ID)
    assert info["group_names"] == ("Black_brown", "white")
    assert info["default_notion"] == "qualification_parity"
    assert info["supported_notions"] == CLASSIFICATION_NOTIONS
    env = gym.make(ENV_ID).unwrapped
    assert (env.cost, env.n_applicants, env.starting_resource, env.max_steps, env.gain) == (
        0.5,
        4000,
        1000.0,
        2048,
        0.5,
    )
    assert env.group_probs == TARGET_GROUP_PROBS
    assert env.observation_space.shape == (N_DIMS + 1 + 2,)
    assert env.observation_space.dtype == np.float32
    assert np.all(env.observation_space.low == 0) and np.all(env.observation_space.high == 1)
    assert env.action_space == gym.spaces.Discrete(2)
    assert (env.gain_index, env.group_index) == (126, 127)
    assert gym.make(ENV_ID, obs_group=False).observation_space.shape == (N_DIMS + 1,)


def test_check_env_unwrapped():
    run_check_env(gym.make(ENV_ID).unwrapped)
    run_check_env(gym.make(ENV_ID, obs_group=False, cost=0.4).unwrapped)


def test_seeded_determinism():
    def rollout(seed):
        env = gym.make(ENV_ID, max_steps=300)
        env.action_space.seed(7)
        obs, info = env.reset(seed=seed)
        trace = [(obs, 0.0, info["group"])]
        for _ in range(900):
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            trace.append((obs, reward, info["group"], info["label"], info["fairness"]))
            if terminated or truncated:
                obs, info = env.reset()
                trace.append((obs, 0.0, info["group"]))
        return trace

    run_a, run_b, run_c = rollout(42), rollout(42), rollout(43)
    for step_a, step_b in zip(run_a, run_b, strict=True):
        for x, y in zip(step_a, step_b, strict=True):
            assert np.array_equal(x, y)
    assert not np.array_equal(np.stack([s[0] for s in run_a]), np.stack([s[0] for s in run_c]))


def test_step_before_reset_and_invalid_action():
    env = SchoolAdmissionEnv()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(2)


# ------------------------------------------------------------------ stand-in


def test_committed_standin_matches_generator():
    table = json.loads(STANDIN_PATH.read_text())
    assert table["calibration"]["seed"] == DEFAULT_STANDIN_SEED
    assert table["group_names"] == list(SchoolAdmissionEnv.GROUP_NAMES)
    for key in ("what", "derivation", "published_statistics_matched", "not_matched"):
        assert table["provenance"][key]
    committed = standin_params()
    fresh = make_standin_params(DEFAULT_STANDIN_SEED)
    assert committed.cardinalities == fresh.cardinalities == STANDIN_CARDINALITIES
    assert committed.feature_names == fresh.feature_names
    np.testing.assert_allclose(committed.coefficients, fresh.coefficients, rtol=0, atol=1e-12)
    for a, b in zip(committed.category_probs, fresh.category_probs, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    assert math.isclose(committed.intercept, fresh.intercept, abs_tol=1e-9)
    assert math.isclose(committed.group_coefficient, fresh.group_coefficient, abs_tol=1e-9)
    # The calibration hit its targets on its Monte Carlo sample.
    achieved = committed.info["achieved_on_calibration_sample"]
    assert abs(achieved["positive_rate"] - TARGET_POSITIVE_RATE) < 1e-9
    assert abs(achieved["qualification_gap"] - TARGET_QUALIFICATION_GAP) < 1e-9


def test_standin_structure():
    params = standin_params()
    assert len(params.cardinalities) == 38 and params.n_dims == N_DIMS
    assert params.age_feature == 0 and params.cardinalities[0] == 3
    assert 2 <= min(params.cardinalities[1:]) and max(params.cardinalities) <= 6
    # Age lowers qualification; everything else is a ladder (sorted coefficients).
    assert np.array_equal(params.coefficients[:3], STANDIN_AGE_COEFFICIENTS)
    assert np.all(np.diff(params.coefficients[:3]) < 0)
    for block in _blocks(params)[1:]:
        assert np.all(np.diff(params.coefficients[block]) >= 0)
    for p in params.category_probs:
        np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)


def test_calibration_of_initial_pool():
    env = SchoolAdmissionEnv()
    env.reset(seed=100)
    groups, probs = [], []
    for _ in range(10):
        env.reset()
        groups.append(env.pool_groups)
        probs.append(env.pass_probabilities)
        np.testing.assert_allclose(env.pass_probabilities, _recount(env), rtol=0, atol=1e-12)
        assert np.all(env.pool_gains == 0)
    g, p = np.concatenate(groups), np.concatenate(probs)
    n = g.size
    share = np.mean(g == 1)
    assert abs(share - 0.62) < 5 * math.sqrt(0.62 * 0.38 / n)
    assert abs(p.mean() - TARGET_POSITIVE_RATE) < 0.01
    gap = p[g == 1].mean() - p[g == 0].mean()
    assert abs(gap - TARGET_QUALIFICATION_GAP) < 0.015
    # The initial info's population rows say the same.
    _, info = env.reset(seed=101)
    counts = info["fairness"]
    np.testing.assert_array_equal(counts[POPULATION], np.bincount(env.pool_groups, minlength=2))
    rates = counts[QUALIFIED_MASS] / counts[POPULATION]
    assert abs(rates[1] - rates[0] - TARGET_QUALIFICATION_GAP) < 0.03


def test_standin_seed_generates_another_calibrated_population():
    env = SchoolAdmissionEnv(standin_seed=7)
    default = SchoolAdmissionEnv()
    assert not np.allclose(env.params.coefficients, default.params.coefficients)
    achieved = env.params.info["achieved_on_calibration_sample"]
    assert abs(achieved["positive_rate"] - 0.37) < 1e-9
    assert abs(achieved["qualification_gap"] - 0.125) < 1e-9
    assert env.params.info["seed"] == 7


# ------------------------------------------------------------------ observation layout


def test_observation_layout_and_pool():
    env = SchoolAdmissionEnv()
    obs, _ = env.reset(seed=3)
    blocks = _blocks(env.params)
    assert len(blocks) == 38 and blocks[-1].stop == N_DIMS
    pool_obs = env.pool_observations
    cats = env.pool_categories
    for k, block in enumerate(blocks):
        assert np.all(pool_obs[:, block].sum(axis=1) == 1.0)
        assert np.array_equal(np.argmax(pool_obs[:, block], axis=1), cats[:, k])
    assert np.all(pool_obs[:, 126] == 0.0)
    assert np.array_equal(np.argmax(pool_obs[:, 127:129], axis=1), env.pool_groups)
    assert np.all(pool_obs[:, 127:129].sum(axis=1) == 1.0)
    rng = np.random.default_rng(3)
    for _ in range(500):
        i, g, _ = env.applicant
        assert np.array_equal(obs, env.pool_observations[i])
        assert obs.sum() == 38 + obs[126] + 1 and obs[127 + g] == 1.0
        obs, _, _, _, info = env.step(int(rng.integers(0, 2)))
        assert info["group"] == g
        assert obs in env.observation_space


# ------------------------------------------------------------------ dynamics


def test_age_advances_and_lowers_pass_probability():
    env = SchoolAdmissionEnv(max_steps=3000)  # one episode: stepping past its end is an error
    obs, _ = env.reset(seed=4)
    aged = 0
    for _ in range(3000):
        i, _, p_before = env.applicant
        age = env.pool_ages[i]
        assert obs[age] == 1.0 and obs[:3].sum() == 1.0
        gained_before = env.pool_gains[i]
        obs, _, _, _, info = env.step(0)
        new_age = env.pool_ages[i]
        assert new_age == min(age + 1, 2)
        p_after = env.pass_probabilities[i]
        if new_age > age and not gained_before and not env.pool_gains[i]:
            # Only the age moved: alpha drops by the age coefficient difference.
            assert p_after < p_before
            aged += 1
        elif new_age == age and gained_before:
            assert p_after == p_before
        row = env.pool_observations[i]
        assert row[new_age] == 1.0 and row[:3].sum() == 1.0
    assert aged > 100
    np.testing.assert_allclose(env.pass_probabilities, _recount(env), rtol=0, atol=1e-12)


@pytest.mark.parametrize("gain", [0.5, 0.9])
def test_gain_raises_pass_probability_exactly(gain):
    # One episode (stepping past its end is an error); the draws do not depend on these.
    env = SchoolAdmissionEnv(gain=gain, max_steps=100_000, starting_resource=1e9)
    env.reset(seed=5)
    rng = np.random.default_rng(5)
    checked = {"accept": 0, "pass": 0, "none": 0, "capped": 0}
    for _ in range(6000):
        i, _, p_before = env.applicant
        top, had_gain = env.pool_ages[i] == 2, env.pool_gains[i] == 1
        a = int(rng.random() < 0.3)
        _, _, _, _, info = env.step(a)
        y = info["label"]
        p_after = env.pass_probabilities[i]
        assert env.pool_gains[i] == int(had_gain or a == 1 or y == 1)
        if top and not had_gain:
            if a or y:
                assert p_after == min(1.0, p_before + gain)
                checked["accept" if a else "pass"] += 1
                checked["capped"] += p_after == 1.0
            else:
                assert p_after == p_before
                checked["none"] += 1
        elif top:
            assert p_after == p_before  # the indicator is set once; no further gain
    assert min(checked["accept"], checked["pass"], checked["none"]) > 10
    if gain == 0.9:
        assert checked["capped"] > 10
    np.testing.assert_allclose(env.pass_probabilities, _recount(env), rtol=0, atol=1e-12)


def test_labels_follow_pass_probability():
    env = SchoolAdmissionEnv(max_steps=100_000)
    env.reset(seed=6)
    total_y = total_p = total_var = 0.0
    for _ in range(20_000):
        p = env.applicant[2]
        _, _, _, _, info = env.step(0)
        total_y += info["label"]
        total_p += p
        total_var += p * (1 - p)
    assert abs(total_y - total_p) < 5 * math.sqrt(total_var)


@pytest.mark.parametrize("cost", [0.5, 0.4])
def test_reward_is_exact_and_resource_tracks_it(cost):
    env = gym.make(ENV_ID, cost=cost, max_steps=10_000).unwrapped
    env.reset(seed=8)
    rng = np.random.default_rng(8)
    total = 0.0
    for _ in range(2000):
        a = int(rng.random() < 0.5)
        before = env.resource
        _, reward, terminated, _, info = env.step(a)
        assert type(reward) is float
        assert reward == a * (info["label"] - cost)
        assert env.resource == before + reward
        total += reward
        assert not terminated
    assert math.isclose(env.resource, 1000.0 + total, rel_tol=0, abs_tol=1e-9)


def test_info_contract_and_population_rows_match_recount():
    env = SchoolAdmissionEnv(max_steps=100_000)
    _, info = env.reset(seed=9)
    assert set(info) == INFO_KEYS
    assert np.all(info["fairness"][:POPULATION] == 0.0)
    assert info["group"] == info["label"] == info["decision"] == -1
    rng = np.random.default_rng(9)
    for step in range(5000):
        _, g, _ = env.applicant
        a = int(rng.random() < 0.6)
        _, _, _, _, info = env.step(a)
        assert set(info) == INFO_KEYS
        for key in ("group", "label", "decision", "label_observed"):
            assert type(info[key]) is int
        counts = info["fairness"]
        assert counts.shape == (NUM_FIELDS, 2) and counts.dtype == np.float64
        y = info["label"]
        assert info["group"] == g and info["decision"] == a and info["label_observed"] == a
        expected = np.zeros((POPULATION, 2))
        expected[DECIDED, g] = 1.0
        expected[QUALIFIED, g] = y
        expected[SELECTED, g] = a
        expected[SELECTED_QUALIFIED, g] = y * a
        assert np.array_equal(counts[:POPULATION], expected)
        assert np.all(counts[QUALIFIED_MASS] <= counts[POPULATION])
        if step % 499 == 0:
            groups = env.pool_groups
            recount = _recount(env)
            assert np.array_equal(counts[POPULATION], np.bincount(groups, minlength=2))
            qm = [recount[groups == k].sum() for k in range(2)]
            np.testing.assert_allclose(counts[QUALIFIED_MASS], qm, rtol=0, atol=1e-8)
    # Accepting many applicants raised the qualification of both groups.
    _, first = env.reset(seed=9)
    assert np.all(counts[QUALIFIED_MASS] > first["fairness"][QUALIFIED_MASS])


def test_episode_end():
    env = SchoolAdmissionEnv(max_steps=4)
    env.reset(seed=0)
    assert [env.step(1)[3] for _ in range(4)] == [False, False, False, True]
    env = SchoolAdmissionEnv(cost=5.0, starting_resource=10.0)
    env.reset(seed=0)
    resource = 10.0
    for _ in range(5):
        _, reward, terminated, truncated, _ = env.step(1)
        resource += reward
        assert terminated == (resource <= 0) and not truncated
        if terminated:
            break
    assert terminated and env.resource <= 0


# ------------------------------------------------------------------ logistic fit


def test_fit_logistic_recovers_coefficients_and_matches_the_score_equation():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((5000, 3))
    true_w, true_b = np.array([1.0, -2.0, 0.5]), -0.3
    y = (rng.random(5000) < 1 / (1 + np.exp(-(x @ true_w + true_b)))).astype(float)
    w, b, stats = fit_logistic(x, y, l2=0.0, iterations=50)
    assert stats["converged"] and stats["iterations"] < 20
    np.testing.assert_allclose(w, true_w, atol=0.15)
    assert abs(b - true_b) < 0.15
    p = 1 / (1 + np.exp(-(x @ w + b)))
    assert abs(p.sum() - y.sum()) < 1e-6  # unpenalised intercept: sum p = sum y
    w_l2, _, _ = fit_logistic(x, y, l2=500.0)
    assert np.all(np.abs(w_l2) < np.abs(w))  # the penalty shrinks


# ------------------------------------------------------------------ CSV loader

TRUTH = {
    "intercept": -0.5,
    "white": 1.0,
    "age": (0.0, -1.0, -2.0),
    "lunch": {"no": 0.0, "yes": 1.5},
    "school": {"a": 0.0, "b": 0.5, "c": -0.5},
}


def _write_csv(path, n=300, seed=11):
    """n applicants with a known logistic ground truth: P(score > 0) = sigmoid(logit)."""
    rng = np.random.default_rng(seed)
    race = rng.choice(["white", "black", "brown"], size=n, p=[0.6, 0.15, 0.25])
    age = rng.choice([1, 2, 3], size=n, p=[0.5, 0.3, 0.2])
    lunch = rng.choice(["no", "yes"], size=n)
    school = rng.choice(["a", "b", "c"], size=n)
    logit = (
        TRUTH["intercept"]
        + TRUTH["white"] * (race == "white")
        + np.asarray(TRUTH["age"])[age - 1]
        + np.array([TRUTH["lunch"][v] for v in lunch])
        + np.array([TRUTH["school"][v] for v in school])
    )
    score = logit + rng.logistic(0.0, 1.0, n)
    frame = pd.DataFrame(
        {
            "id": np.arange(n),
            "race": race,
            "age": age,
            "lunch": lunch,
            "school": school,
            "score": 500 + 100 * score,
            "passed": (score > 0).astype(int),
        }
    )
    frame.to_csv(path, index=False)
    return frame


@pytest.fixture
def enem_csv(tmp_path):
    path = tmp_path / "enem_small.csv"
    frame = _write_csv(path)
    return path, frame


LOADER_KWARGS = {
    "label_column": "score",
    "positive_threshold": 500.0,
    "group_column": "race",
    "group_map": {"white": 1, "black": 0, "brown": 0},
    "age_column": "age",
    "feature_columns": ["lunch", "school"],
    "l2": 0.01,
}


def test_loader_fits_the_ground_truth(enem_csv):
    path, frame = enem_csv
    params = load_enem(path, **LOADER_KWARGS)
    assert params.feature_names == ("age", "lunch", "school")
    assert params.levels == (("1", "2", "3"), ("no", "yes"), ("a", "b", "c"))
    assert params.n_dims == 8 and params.age_feature == 0
    w = params.coefficients
    age_contrast = w[2] - w[0]
    lunch_contrast = w[4] - w[3]
    assert age_contrast < 0 and abs(age_contrast - (-2.0)) < 1.0
    assert w[1] - w[0] < 0
    assert lunch_contrast > 0 and abs(lunch_contrast - 1.5) < 1.0
    assert params.group_coefficient > 0 and abs(params.group_coefficient - 1.0) < 1.0
    info = params.info
    assert info["n_rows"] == 300 and info["fit"]["converged"]
    white = (frame["race"] == "white").to_numpy()
    assert math.isclose(info["group_shares"][1], white.mean())
    assert math.isclose(info["positive_rate"], frame["passed"].mean())
    # The score equation of the unpenalised intercept: mean alpha = positive rate.
    cats = params.rows
    alpha = params.pass_probability(cats, params.row_groups)
    assert abs(alpha.mean() - info["positive_rate"]) < 1e-6
    # A 0/1 label column gives the same labels, hence the same fit.
    binary = load_enem(
        path, **{**LOADER_KWARGS, "label_column": "passed", "positive_threshold": None}
    )
    np.testing.assert_allclose(binary.coefficients, w, rtol=0, atol=1e-9)


def test_loader_env_builds_and_steps(enem_csv):
    path, frame = enem_csv
    env = SchoolAdmissionEnv.from_enem_csv(path, n_applicants=500, cost=0.4, **LOADER_KWARGS)
    assert env.observation_space.shape == (8 + 1 + 2,) and env.cost == 0.4
    params = env.params
    run_check_env(gym.make(ENV_ID, params=params, n_applicants=500).unwrapped)
    env.reset(seed=12)
    # Every pool member is a data row of its own group.
    rows = {(int(g), tuple(r)) for g, r in zip(params.row_groups, params.rows.tolist())}
    for g, r in zip(env.pool_groups, env.pool_categories.tolist()):
        assert (int(g), tuple(r)) in rows
    rng = np.random.default_rng(12)
    for _ in range(1000):
        _, reward, terminated, truncated, info = env.step(int(rng.integers(0, 2)))
        assert reward == info["decision"] * (info["label"] - 0.4)
        assert not terminated and not truncated
    assert np.all(env.pool_ages <= 2) and np.any(env.pool_ages == 2)
    assert np.any(env.pool_gains == 1)
    np.testing.assert_allclose(env.pass_probabilities, _recount(env), rtol=0, atol=1e-12)
    # Without a group map a binary column works (the smaller value is group 0); default
    # feature columns are all other columns; without an age column nobody ages.
    frame2 = frame.assign(white=(frame["race"] == "white").astype(int))
    params2 = load_enem(
        frame2[["white", "lunch", "school", "passed"]], label_column="passed", group_column="white"
    )
    assert params2.feature_names == ("lunch", "school") and params2.age_feature is None
    env2 = SchoolAdmissionEnv(params=params2, n_applicants=50)
    env2.reset(seed=0)
    before = env2.pool_categories
    for _ in range(200):
        env2.step(0)
    assert np.array_equal(env2.pool_categories, before)


def test_loader_min_frequency_merges_rare_levels(tmp_path):
    frame = _write_csv(tmp_path / "x.csv")
    frame.loc[:4, "school"] = "rare"
    params = load_enem(frame, **{**LOADER_KWARGS, "min_frequency": 0.05})
    assert params.levels[2] == ("a", "b", "c", "infrequent")
    frame.loc[:9, "lunch"] = np.nan
    params = load_enem(frame, **LOADER_KWARGS)
    assert params.levels[1] == ("no", "yes", "missing")


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"label_column": "nota"}, "label_column"),
        ({"group_column": "cor"}, "group_column"),
        ({"age_column": "idade"}, "age_column"),
        ({"feature_columns": ["lunch", "renda"]}, "renda"),
        ({"feature_columns": ["lunch", "race"]}, "feature_columns"),
        ({"group_map": None}, "group_column"),  # three race values: not binary
        ({"group_map": {"white": 2}}, "group_map"),
        ({"group_map": {"white": 1}}, "group_column"),  # only one group left
        ({"positive_threshold": None}, "label_column"),  # scores are not 0/1
        ({"label_column": "race", "positive_threshold": 1.0}, "label_column"),
        ({"l2": -1.0}, "l2"),
        ({"min_frequency": 1.0}, "min_frequency"),
        ({"fit_iterations": 0}, "fit_iterations"),
        ({"age_column": "race"}, "age_column"),
    ],
)
def test_loader_bad_input_raises_one_line(enem_csv, kwargs, name):
    path, _ = enem_csv
    with pytest.raises(ValueError) as excinfo:
        load_enem(path, **{**LOADER_KWARGS, **kwargs})
    message = str(excinfo.value)
    assert name in message and "\n" not in message


def test_loader_bad_files(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    header_only = tmp_path / "header.csv"
    header_only.write_text("race,age,lunch,school,score\n")
    for path, pattern in (
        (empty, "empty file"),
        (header_only, "no data rows"),
        (tmp_path / "missing.csv", "no such file"),
    ):
        with pytest.raises(ValueError, match=re.escape(str(path))) as excinfo:
            load_enem(path, **LOADER_KWARGS)
        assert pattern in str(excinfo.value) and "\n" not in str(excinfo.value)


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"cost": -0.1}, "cost"),
        ({"cost": float("nan")}, "cost"),
        ({"n_applicants": 0}, "n_applicants"),
        ({"starting_resource": 0.0}, "starting_resource"),
        ({"max_steps": 1.5}, "max_steps"),
        ({"gain": 1.5}, "gain"),
        ({"gain": -0.5}, "gain"),
        ({"group_probs": (0.5, 0.6)}, "group_probs"),
        ({"group_probs": (0.2, 0.3, 0.5)}, "group_probs"),
        ({"standin_seed": -1}, "standin_seed"),
        ({"standin_seed": 3, "params": standin_params()}, "standin_seed"),
        ({"params": "enem.csv"}, "params"),
        ({"obs_group": 1}, "obs_group"),
    ],
)
def test_constructor_validation(kwargs, name):
    with pytest.raises(ValueError) as excinfo:
        SchoolAdmissionEnv(**kwargs)
    message = str(excinfo.value)
    assert name in message and "\n" not in message


def test_params_validation():
    good = standin_params()
    fields = {f: getattr(good, f) for f in good.__dataclass_fields__}
    bad_cases = [
        ({"coefficients": good.coefficients[:-1]}, "params.coefficients"),
        ({"age_feature": 38}, "params.age_feature"),
        ({"category_probs": None}, "params"),
        ({"intercept": float("inf")}, "params.intercept"),
        ({"group_probs": (0.5, 0.4)}, "params.group_probs"),
    ]
    for change, name in bad_cases:
        params = SchoolAdmissionParams(**{**fields, **change})
        with pytest.raises(ValueError) as excinfo:
            SchoolAdmissionEnv(params=params)
        assert name in str(excinfo.value) and "\n" not in str(excinfo.value)
