"""Tests of fair/Attention-v0 and fair/AttentionHard-v0: API, action conversion, dynamics."""

from __future__ import annotations

import math
import re

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the ids)
from rllib_fair.envs import env_class, env_info
from rllib_fair.envs.attention import (
    HARD_DECREASE_RATES,
    HARD_INCIDENT_RATES,
    HARD_INCREASE_RATES,
    AttentionEnv,
    AttentionHardEnv,
    allocation_table,
)
from rllib_fair.fairness.counts import (
    ALLOCATED,
    DECIDED,
    NEEDED,
    NUM_FIELDS,
    POPULATION,
    QUALIFIED,
    QUALIFIED_MASS,
    SELECTED,
    SELECTED_QUALIFIED,
)
from rllib_fair.fairness.notions import get_notion

from .helpers import rollout, run_check_env, same

IDS = ("fair/Attention-v0", "fair/AttentionHard-v0")
INFO_KEYS = {"fairness", "group", "label", "decision", "label_observed"}
ATTENTION_INFO_KEYS = INFO_KEYS | {"allocation", "incident_rates"}
# gymnasium's check_env recommends a [-1, 1] Box for actions; the reference's scores live
# in [-3, 3] (POCAR's wrapper), so that one warning is expected.
BOX_ACTION_WARNING = re.compile(r"recommend using a symmetric and normalized space")
WRAPPED_WARNING = re.compile(r"is different from the unwrapped version")


def _reference_greedy(scores, units: int, bound: float = 3.0) -> np.ndarray:
    """POCAR's conversion as a literal loop: softmax, then unit by unit to the argmax."""
    s = np.clip(np.asarray(scores, dtype=np.float64), -bound, bound)
    probs = np.exp(s - s.max())
    probs /= probs.sum()
    alloc = np.zeros(len(s), dtype=np.int64)
    for _ in range(units):
        i = int(np.argmax(probs))
        alloc[i] += 1
        probs[i] -= 1.0 / units
    return alloc


def _update_rates(rates, alloc, dec, inc) -> list[float]:
    out = []
    for r, a, d, i in zip(rates, alloc, dec, inc):
        out.append(max(0.0, r - d * a) if a > 0 else r + i)
    return out


# ------------------------------------------------------------------ registry and API


@pytest.mark.parametrize("env_id", IDS)
def test_registry_metadata(env_id):
    info = env_info(env_id)
    assert info["group_names"] == tuple(f"site_{g}" for g in range(5))
    assert info["supported_notions"] == ("benefit_rate", "equal_opportunity", "demographic_parity")
    assert info["default_notion"] == "benefit_rate"
    assert info["description"] and "\n" not in info["description"]
    for name in info["supported_notions"]:
        get_notion(name)  # every supported notion exists
    cls = env_class(env_id)
    assert cls is (AttentionEnv if env_id == "fair/Attention-v0" else AttentionHardEnv)


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_unwrapped(env_id):
    run_check_env(gym.make(env_id).unwrapped, allowed=(BOX_ACTION_WARNING,))


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_wrapped(env_id):
    run_check_env(gym.make(env_id), allowed=(BOX_ACTION_WARNING, WRAPPED_WARNING))


@pytest.mark.parametrize(
    ("env_id", "kwargs", "size"),
    [
        ("fair/Attention-v0", {}, 160),
        ("fair/Attention-v0", {"obs_ratio": False}, 120),
        ("fair/Attention-v0", {"history_len": 3, "normalize_obs": False}, 60),
        ("fair/Attention-v0", {"action_type": "allocation"}, 160),
        ("fair/AttentionHard-v0", {}, 160),
        ("fair/AttentionHard-v0", {"normalize_obs": False, "count_cap": 25}, 160),
        ("fair/AttentionHard-v0", {"action_type": "allocation", "history_len": 1}, 20),
    ],
)
def test_spaces_finite_and_observations_inside(env_id, kwargs, size):
    env = gym.make(env_id, **kwargs)
    space = env.observation_space
    assert space.shape == (size,) and space.dtype == np.float32
    assert np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))
    if kwargs.get("action_type") == "allocation":
        assert isinstance(env.action_space, gym.spaces.Discrete)
    else:
        assert env.action_space == gym.spaces.Box(-3.0, 3.0, (5,), np.float32)
    obs, _ = env.reset(seed=1)
    env.action_space.seed(1)
    for _ in range(400):
        assert obs.dtype == np.float32 and obs in space
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert isinstance(reward, float) and math.isfinite(reward)
        assert terminated is False and type(truncated) is bool
    allowed = () if kwargs.get("action_type") == "allocation" else (BOX_ACTION_WARNING,)
    run_check_env(env.unwrapped, allowed=allowed)


def test_hard_defaults_and_subclass_only_changes_defaults():
    env = AttentionHardEnv()
    assert env.attention_units == 30 and env.count_cap == 200
    assert np.array_equal(env.initial_incident_rates, HARD_INCIDENT_RATES)
    assert np.array_equal(env.decrease_rates, HARD_DECREASE_RATES)
    assert np.array_equal(env.increase_rates, HARD_INCREASE_RATES)
    assert (env.discovered_weight, env.missed_weight, env.max_steps) == (0.0, 0.25, 1000)
    orig = AttentionEnv()
    assert orig.attention_units == 6 and orig.count_cap == 50 and orig.max_steps == 1000
    assert np.array_equal(orig.initial_incident_rates, (8, 6, 4, 3, 1.5))
    assert np.array_equal(orig.decrease_rates, [0.1] * 5)
    assert np.array_equal(orig.increase_rates, [0.1] * 5)
    assert (orig.discovered_weight, orig.missed_weight) == (1.0, 0.25)
    # The harder class with the original arguments behaves exactly like the original.
    kwargs = {
        "incident_rates": (8, 6, 4, 3, 1.5),
        "attention_units": 6,
        "decrease_rates": 0.1,
        "increase_rates": 0.1,
        "discovered_weight": 1.0,
        "count_cap": 50,
    }
    a, b = AttentionEnv(), AttentionHardEnv(**kwargs)
    oa, _ = a.reset(seed=4)
    ob, _ = b.reset(seed=4)
    rng = np.random.default_rng(4)
    for _ in range(200):
        act = rng.uniform(-3, 3, 5).astype(np.float32)
        sa, sb = a.step(act), b.step(act)
        assert np.array_equal(sa[0], sb[0]) and sa[1] == sb[1]


# ------------------------------------------------------------------ determinism


@pytest.mark.parametrize("env_id", IDS)
def test_seeded_determinism(env_id):
    actions = list(np.random.default_rng(7).uniform(-3, 3, (1500, 5)).astype(np.float32))
    kwargs = {"max_steps": 400}  # crosses episode ends (unseeded resets)
    run_a = rollout(env_id, 42, actions, **kwargs)
    run_b = rollout(env_id, 42, actions, **kwargs)
    assert len(run_a) == len(run_b)
    for step_a, step_b in zip(run_a, run_b):
        assert all(same(x, y) for x, y in zip(step_a, step_b))
    run_c = rollout(env_id, 43, actions, **kwargs)
    obs_a = np.stack([s[0] for s in run_a[:100]])
    obs_c = np.stack([s[0] for s in run_c[:100]])
    assert not np.array_equal(obs_a, obs_c)


# ------------------------------------------------------------------ action conversion


@pytest.mark.parametrize(
    ("scores", "units", "expected"),
    [
        ((0, 0, 0, 0, 0), 6, (2, 1, 1, 1, 1)),  # tie: the extra unit goes to site 0
        ((0, 0, 0, 0, 0), 7, (2, 2, 1, 1, 1)),
        ((0, 0, 0, 0, 0), 30, (6, 6, 6, 6, 6)),
        ((3, -3, -3, -3, -3), 6, (6, 0, 0, 0, 0)),
        ((3, -3, -3, -3, -3), 30, (30, 0, 0, 0, 0)),
        ((10, -10, -3, -3, -3), 6, (6, 0, 0, 0, 0)),  # clipped to the bounds first
        (tuple(np.log([0.4, 0.3, 0.1, 0.1, 0.1])), 6, (2, 2, 1, 1, 0)),
        ((1, 1, 0, 0, 0), 6, (2, 2, 1, 1, 0)),  # ties among sites 2-4: lower index first
        # units * p = (2.5, 1.5, 1, 0.5, 0.5): four remaining shares of 0.5 tie (the
        # reference's float loop gives (3, 1, 1, 1, 0) here, by rounding).
        (tuple(np.log([5 / 12, 3 / 12, 2 / 12, 1 / 12, 1 / 12])), 6, (3, 2, 1, 0, 0)),
        ((0, 0, 3, 0, 0), 1, (0, 0, 1, 0, 0)),
    ],
)
def test_scores_to_allocation_hand_computed(scores, units, expected):
    env = AttentionEnv(attention_units=units)
    alloc = env.scores_to_allocation(np.asarray(scores, dtype=np.float32))
    assert alloc.dtype == np.int64
    assert tuple(alloc.tolist()) == expected


def test_hand_computed_cases_match_the_reference_loop():
    # The reference loop (float arithmetic) agrees on the unambiguous cases above.
    for scores, units, expected in [
        ((0, 0, 0, 0, 0), 6, (2, 1, 1, 1, 1)),
        ((3, -3, -3, -3, -3), 30, (30, 0, 0, 0, 0)),
        ((1, 1, 0, 0, 0), 6, (2, 2, 1, 1, 0)),
    ]:
        assert tuple(_reference_greedy(scores, units).tolist()) == expected


@pytest.mark.parametrize("units", [1, 6, 7, 30])
def test_scores_to_allocation_matches_reference_loop_and_sums_to_units(units):
    env = AttentionEnv(attention_units=units)
    rng = np.random.default_rng(units)
    scores = rng.uniform(-4, 4, (2000, 5)).astype(np.float32)
    for s in scores:
        alloc = env.scores_to_allocation(s)
        assert alloc.sum() == units and np.all(alloc >= 0)
        np.testing.assert_array_equal(alloc, _reference_greedy(s, units))


def test_allocation_is_used_by_step_and_invalid_actions_raise():
    env = AttentionEnv()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(5, dtype=np.float32))
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(50):
        s = rng.uniform(-3, 3, 5)
        _, _, _, _, info = env.step(s.astype(np.float32))
        np.testing.assert_array_equal(info["allocation"], _reference_greedy(s, 6))
        assert info["allocation"].dtype == np.int64
    for bad in (np.zeros(4), np.zeros((5, 1)), [0, 0, np.nan, 0, 0], [np.inf, 0, 0, 0, 0], "x"):
        with pytest.raises(ValueError, match="action"):
            env.step(bad)


def test_allocation_action_type_table_and_round_trip():
    table = allocation_table(6, 5)
    assert table.shape == (math.comb(10, 4), 5) == (210, 5)
    assert not table.flags.writeable
    assert np.all(table.sum(axis=1) == 6) and np.all(table >= 0)
    assert len({tuple(r) for r in table.tolist()}) == 210
    assert table[0].tolist() == [0, 0, 0, 0, 6] and table[-1].tolist() == [6, 0, 0, 0, 0]
    assert [tuple(r) for r in table.tolist()] == sorted(tuple(r) for r in table.tolist())
    assert allocation_table(30, 5).shape == (46_376, 5)

    env = AttentionEnv(action_type="allocation")
    assert env.action_space == gym.spaces.Discrete(210)
    env.reset(seed=3)
    for k in (0, 17, 209):
        alloc = env.allocations[k]
        assert env.allocation_to_action(alloc) == k
        _, _, _, _, info = env.step(k)
        np.testing.assert_array_equal(info["allocation"], alloc)
    _, _, _, _, info = env.step(np.int64(env.allocation_to_action([1, 2, 0, 3, 0])))
    assert info["allocation"].tolist() == [1, 2, 0, 3, 0]
    for bad in (-1, 210, 2.5, "a", None):
        with pytest.raises(ValueError, match="action"):
            env.step(bad)
    for bad in ([1, 1, 1, 1, 1], [7, -1, 0, 0, 0], [1.5, 1.5, 1, 1, 1], [6, 0, 0, 0]):
        with pytest.raises(ValueError, match="allocation"):
            env.allocation_to_action(bad)


# ------------------------------------------------------------------ dynamics


@pytest.mark.parametrize("cls", [AttentionEnv, AttentionHardEnv])
def test_rates_discovery_reward_and_counts_follow_the_parameters(cls):
    env = cls(action_type="allocation", max_steps=10_000)
    _, info = env.reset(seed=11)
    units = env.attention_units
    dec, inc = env.decrease_rates.tolist(), env.increase_rates.tolist()
    rates = env.initial_incident_rates.tolist()
    assert info["incident_rates"].tolist() == rates
    assert np.all(info["fairness"][:POPULATION] == 0.0)
    assert np.all(info["fairness"][POPULATION] == 1.0)
    assert info["fairness"][QUALIFIED_MASS].tolist() == rates
    assert info["allocation"].tolist() == [0] * 5
    rng = np.random.default_rng(11)
    # Fixed allocations (all units on the last or the first site: rates hit the floor at 0)
    # and random ones.
    fixed_last = env.allocation_to_action([0, 0, 0, 0, units])
    fixed_first = env.allocation_to_action([units, 0, 0, 0, 0])
    plan = [fixed_last] * 60 + [fixed_first] * 300
    plan += rng.integers(0, env.action_space.n, 600).tolist()
    hit_floor = set()
    for k in plan:
        _, reward, terminated, truncated, info = env.step(k)
        assert set(info) == ATTENTION_INFO_KEYS
        assert (info["group"], info["label"], info["decision"], info["label_observed"]) == (
            -1,
            -1,
            -1,
            0,
        )
        alloc = env.allocations[k].tolist()
        assert info["allocation"].tolist() == alloc
        rates = _update_rates(rates, alloc, dec, inc)
        hit_floor |= {g for g in range(5) if rates[g] == 0.0}
        assert info["incident_rates"].tolist() == rates  # exact
        assert env.incident_rates.tolist() == rates
        counts = info["fairness"]
        assert counts.shape == (NUM_FIELDS, 5) and counts.dtype == np.float64
        occurred = counts[NEEDED]
        seen = counts[ALLOCATED]
        np.testing.assert_array_equal(seen, np.minimum(alloc, occurred))
        for row in (DECIDED, QUALIFIED):
            np.testing.assert_array_equal(counts[row], occurred)
        for row in (SELECTED, SELECTED_QUALIFIED):
            np.testing.assert_array_equal(counts[row], seen)
        np.testing.assert_array_equal(counts[POPULATION], np.ones(5))
        assert counts[QUALIFIED_MASS].tolist() == rates
        missed = occurred.sum() - seen.sum()
        expected = env.discovered_weight * seen.sum() - env.missed_weight * missed
        assert reward == expected and not terminated and not truncated
        if cls is AttentionHardEnv:
            assert reward == -0.25 * missed
        else:
            assert reward == seen.sum() - 0.25 * missed
        supply, demand = get_notion("benefit_rate").supply_demand(counts)
        np.testing.assert_array_equal(supply[0], seen)
        np.testing.assert_array_equal(demand[0], occurred)
        supply, demand = get_notion("equal_opportunity").supply_demand(counts)
        np.testing.assert_array_equal(supply[0], seen)
        np.testing.assert_array_equal(demand[0], occurred)
    assert {0, 4} <= hit_floor


@pytest.mark.parametrize("cls", [AttentionEnv, AttentionHardEnv])
def test_scores_path_rates_follow_the_allocation(cls):
    env = cls()
    env.reset(seed=5)
    rates = env.initial_incident_rates.tolist()
    dec, inc = env.decrease_rates.tolist(), env.increase_rates.tolist()
    rng = np.random.default_rng(5)
    for _ in range(500):
        s = rng.uniform(-3, 3, 5).astype(np.float32)
        _, _, _, _, info = env.step(s)
        alloc = info["allocation"].tolist()
        assert alloc == env.scores_to_allocation(s).tolist()
        rates = _update_rates(rates, alloc, dec, inc)
        assert info["incident_rates"].tolist() == rates


@pytest.mark.parametrize("cls", [AttentionEnv, AttentionHardEnv])
def test_mean_incidents_match_rates_when_rates_are_fixed(cls):
    steps = 20_000
    env = cls(decrease_rates=0.0, increase_rates=0.0, max_steps=steps)
    env.reset(seed=21)
    rates = env.initial_incident_rates
    total = np.zeros(5)
    total_sq = np.zeros(5)
    action = np.zeros(5, dtype=np.float32)
    for _ in range(steps):
        _, _, _, truncated, info = env.step(action)
        y = info["fairness"][NEEDED]
        total += y
        total_sq += y * y
        assert info["incident_rates"].tolist() == rates.tolist()
    assert truncated
    mean = total / steps
    var = total_sq / steps - mean**2
    sd = np.sqrt(rates / steps)
    assert np.all(np.abs(mean - rates) <= 5 * sd), (mean, rates)
    assert np.all(np.abs(var - rates) <= 0.05 * rates + 0.1), (var, rates)  # Poisson: var = mean


def test_zero_rate_gives_no_incidents_and_custom_sites():
    env = AttentionEnv(incident_rates=(0.0, 5.0, 0.0), attention_units=2, increase_rates=0.0)
    assert env.GROUP_NAMES == ("site_0", "site_1", "site_2") and env.n_groups == 3
    assert AttentionEnv.GROUP_NAMES == tuple(f"site_{g}" for g in range(5))
    assert env.observation_space.shape == (8 * 12,)
    env.reset(seed=0)
    for _ in range(100):
        _, _, _, _, info = env.step(np.zeros(3, dtype=np.float32))
        counts = info["fairness"]
        assert counts.shape == (NUM_FIELDS, 3)
        assert counts[NEEDED, 0] == 0.0 and counts[NEEDED, 2] == 0.0


# ------------------------------------------------------------------ episode and observation


@pytest.mark.parametrize("cls", [AttentionEnv, AttentionHardEnv])
def test_truncation_at_max_steps_and_reset_restores_state(cls):
    env = cls(max_steps=5)
    obs0, _ = env.reset(seed=0)
    assert np.all(obs0 == 0.0)
    flags = [env.step(np.zeros(5, dtype=np.float32))[2:4] for _ in range(5)]
    assert flags == [(False, False)] * 4 + [(False, True)]
    assert env.elapsed_steps == 5
    assert env.incident_rates.tolist() != env.initial_incident_rates.tolist()
    obs, info = env.reset()
    assert np.all(obs == 0.0) and env.elapsed_steps == 0
    assert env.incident_rates.tolist() == env.initial_incident_rates.tolist()
    assert set(info) == ATTENTION_INFO_KEYS
    assert cls().max_steps == 1000


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [
        (AttentionEnv, {}),
        (AttentionEnv, {"obs_ratio": False, "history_len": 3}),
        (AttentionHardEnv, {"count_cap": 20}),  # rates 12.5-30: the cap binds often
        (AttentionHardEnv, {"history_len": 1}),
    ],
)
@pytest.mark.parametrize("normalize", [False, True])
def test_observation_history_shifts_and_clips(cls, kwargs, normalize):
    env = cls(normalize_obs=normalize, **kwargs)
    n, h, units, cap = 5, env.history_len, env.attention_units, env.count_cap
    parts = 4 if env.obs_ratio else 3
    high = np.array([units] * n + [cap] * n + [units] * n + [1] * n, dtype=np.float64)
    high = high[: parts * n]
    if normalize:
        assert np.all(env.observation_space.high == 1.0)
    else:
        np.testing.assert_array_equal(env.observation_space.high, np.tile(high, h))
    obs, _ = env.reset(seed=8)
    prev = obs.reshape(h, parts * n)
    cum_seen = np.zeros(n)
    cum_occ = np.zeros(n)
    clipped = 0
    rng = np.random.default_rng(8)
    for _ in range(300):
        obs, _, _, _, info = env.step(rng.uniform(-3, 3, 5).astype(np.float32))
        assert obs in env.observation_space
        hist = obs.reshape(h, parts * n)
        occ = info["fairness"][NEEDED]
        seen = info["fairness"][ALLOCATED]
        cum_seen += seen
        cum_occ += occ
        clipped += int(np.any(occ > cap))
        raw = [seen, np.minimum(occ, cap), info["allocation"]]
        if parts == 4:
            raw.append(cum_seen / (cum_occ + 1.0))
        row = np.concatenate(raw)
        if normalize:
            row = row / high
        np.testing.assert_allclose(hist[-1], row.astype(np.float32), rtol=1e-6, atol=0)
        np.testing.assert_array_equal(hist[:-1], prev[1:])  # older rows shift up by one
        prev = hist
    if cap == 20:
        assert clipped > 0


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"incident_rates": (1.0,)}, "incident_rates"),
        ({"incident_rates": (-1.0, 2.0)}, "incident_rates"),
        ({"incident_rates": [[1.0, 2.0], [3.0, 4.0]]}, "incident_rates"),
        ({"incident_rates": (float("nan"), 1.0)}, "incident_rates"),
        ({"incident_rates": "abc"}, "incident_rates"),
        ({"attention_units": 0}, "attention_units"),
        ({"attention_units": 2.5}, "attention_units"),
        ({"attention_units": True}, "attention_units"),
        ({"decrease_rates": -0.1}, "decrease_rates"),
        ({"decrease_rates": (0.1, 0.1)}, "decrease_rates"),
        ({"decrease_rates": (0.1, 0.1, -0.1, 0.1, 0.1)}, "decrease_rates"),
        ({"increase_rates": (0.1,) * 4}, "increase_rates"),
        ({"increase_rates": float("nan")}, "increase_rates"),
        ({"increase_rates": [[0.1], [0.1, 0.2]]}, "increase_rates"),
        ({"discovered_weight": -1.0}, "discovered_weight"),
        ({"missed_weight": float("inf")}, "missed_weight"),
        ({"max_steps": 0}, "max_steps"),
        ({"history_len": 0}, "history_len"),
        ({"count_cap": 0}, "count_cap"),
        ({"count_cap": 1.5}, "count_cap"),
        ({"obs_ratio": "yes"}, "obs_ratio"),
        ({"normalize_obs": 1}, "normalize_obs"),
        ({"action_type": "multidiscrete"}, "action_type"),
        ({"action_type": None}, "action_type"),
        ({"action_type": "allocation", "attention_units": 200}, "action_type"),
        ({"score_bound": 0.0}, "score_bound"),
    ],
)
@pytest.mark.parametrize("cls", [AttentionEnv, AttentionHardEnv])
def test_constructor_validation(cls, kwargs, name):
    with pytest.raises(ValueError) as excinfo:
        cls(**kwargs)
    message = str(excinfo.value)
    assert name in message and "\n" not in message
