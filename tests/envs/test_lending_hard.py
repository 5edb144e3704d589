"""Tests of fair/LendingHard-v0 (ELBERT's harder lending): API, dynamics vs the tables."""

from __future__ import annotations

import math
import re

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the ids)
from rllib_fair.envs import env_info
from rllib_fair.envs.lending import LendingEnv
from rllib_fair.envs.lending_hard import (
    HARD_ALTER_RATES,
    HARD_CLUSTER_PROBS,
    HARD_TRANSITIONS,
    LendingHardEnv,
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

from .helpers import run_check_env, sd_tol

ENV_ID = "fair/LendingHard-v0"
WRAPPED_ALLOWED_WARNINGS = (re.compile(r"is different from the unwrapped version"),)
INFO_KEYS = {"fairness", "group", "label", "decision", "label_observed"}
N_BINS = 7
UNIFORM_BINS = [[1.0 / N_BINS] * N_BINS] * 2


def _matrices(**rows) -> list:
    """The reference matrices with some rows replaced: key ``"r4"`` = repay row of bin 4."""
    mats = [[list(row) for row in mat] for mat in HARD_TRANSITIONS]
    for key, target in rows.items():
        k = 0 if key[0] == "r" else 1
        row = [0.0] * N_BINS
        row[target] = 1.0
        mats[k][int(key[1:])] = row
    return mats


def _move(before: np.ndarray, after: np.ndarray, g: int, b: int, inc: float) -> int:
    """Checks one step moved exactly min(inc, p_g[b]) from b (or nothing); returns the bin."""
    assert np.array_equal(after[1 - g], before[1 - g])
    changed = np.flatnonzero(after[g] != before[g])
    if changed.size == 0:
        return b
    mass = min(inc, before[g, b])
    assert changed.size == 2 and b in changed, (before[g], after[g], b)
    dst = int(changed[changed != b][0])
    assert after[g, b] == before[g, b] - mass
    assert after[g, dst] == before[g, dst] + mass
    return dst


def _tally(action: int, n_steps: int, seed: int, **kwargs) -> np.ndarray:
    """Counts [group, label, bin, destination] over n_steps of a constant action.

    Uniform bins, repay probability 1/2 and a tiny increment keep the applicant stream
    (nearly) stationary so that every (group, label, bin) is well covered.
    """
    inc = 1e-7
    env = LendingHardEnv(
        cluster_probs=UNIFORM_BINS,
        success_probs=[0.5] * N_BINS,
        cluster_shift_increment=inc,
        starting_cash=1e9,
        max_steps=10**7,
        **kwargs,
    )
    env.reset(seed=seed)
    out = np.zeros((2, 2, N_BINS, N_BINS))
    before = env.cluster_probs
    for _ in range(n_steps):
        g, b = env.applicant
        _, _, _, _, info = env.step(action)
        after = env.cluster_probs
        out[g, info["label"], b, _move(before, after, g, b, inc)] += 1
        before = after
    return out


def _assert_rows_match(counts: np.ndarray, expected: np.ndarray) -> None:
    """Each row of counts [.., B] is a sample of the matching row of expected."""
    for idx in np.ndindex(*counts.shape[:-1]):
        n = counts[idx].sum()
        assert n >= 300, (idx, n)
        for d in range(counts.shape[-1]):
            p = expected[idx][d]
            freq = counts[idx][d] / n
            if p == 0.0:
                assert counts[idx][d] == 0, (idx, d)
            else:
                assert abs(freq - p) <= sd_tol(p, n), (idx, d, freq, p)


# ------------------------------------------------------------------ API and metadata


def test_check_env_unwrapped_and_wrapped():
    run_check_env(gym.make(ENV_ID).unwrapped, allowed=())
    run_check_env(gym.make(ENV_ID), allowed=WRAPPED_ALLOWED_WARNINGS)


def test_metadata_and_defaults_follow_the_reference():
    info = env_info(ENV_ID)
    assert info["class"] == "rllib_fair.envs.lending_hard:LendingHardEnv"
    assert LendingHardEnv.GROUP_NAMES == ("group_0", "group_1")
    assert LendingHardEnv.SUPPORTED_NOTIONS == LendingEnv.SUPPORTED_NOTIONS
    assert LendingHardEnv.DEFAULT_NOTION == "equal_opportunity"
    env = gym.make(ENV_ID).unwrapped
    assert isinstance(env, LendingHardEnv)
    assert np.array_equal(
        env.initial_cluster_probs,
        [[0.05, 0.05, 0.0, 0.2, 0.1, 0.3, 0.3], [0.0, 0.0, 0.3, 0.3, 0.3, 0.05, 0.05]],
    )
    assert env.alter_rates == (0.3, 0.1) == HARD_ALTER_RATES
    assert np.array_equal(env.success_probs, [[0.1, 0.2, 0.45, 0.6, 0.65, 0.7, 0.7]] * 2)
    assert env.group_probs == (0.5, 0.5)
    assert (env.starting_cash, env.interest_rate, env.loan_amount) == (10_000.0, 1.0, 1.0)
    assert (env.cluster_shift_increment, env.max_steps) == (0.01, 2000)
    trans = env.transition_dynamics
    assert trans.shape == (2, N_BINS, N_BINS)
    np.testing.assert_allclose(trans.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    assert np.array_equal(trans, np.asarray(HARD_TRANSITIONS))
    # Distinctive reference entries: [0] = repay, [1] = default, non-adjacent jumps.
    assert trans[0, 4, 1] == 0.5 and trans[0, 6, 6] == 1.0 and trans[0, 5, 6] == 0.8
    assert trans[1, 0, 4] == 0.5 and trans[1, 1, 0] == 0.9 and trans[1, 6, 5] == 0.7
    # Regular pattern: repay b -> (b, b+1, b+2) w.p. (.2, .7, .1), default b -> (b-2, b-1, b).
    assert np.array_equal(trans[1, 2:6], trans[0, :4])
    assert np.array_equal(trans[1, 6], [0, 0, 0, 0, 0.2, 0.7, 0.1])


@pytest.mark.parametrize(
    ("kwargs", "size"), [({}, 11), ({"obs_tpr": False}, 9), ({"obs_bin": False}, 4)]
)
def test_observation_parts(kwargs, size):
    env = gym.make(ENV_ID, **kwargs)
    assert env.observation_space.shape == (size,)
    obs, _ = env.reset(seed=1)
    for a in np.random.default_rng(1).integers(0, 2, 300):
        assert obs.dtype == np.float32 and obs in env.observation_space
        obs, *_ = env.step(int(a))


def test_seeded_determinism():
    actions = np.random.default_rng(7).integers(0, 2, 3000)

    def rollout(seed):
        env = gym.make(ENV_ID, max_steps=700)  # crosses episode ends (unseeded resets)
        obs, info = env.reset(seed=seed)
        trace = [(obs, info["fairness"])]
        for a in actions:
            obs, reward, terminated, truncated, info = env.step(int(a))
            trace.append((obs, info["fairness"], reward, info["label"], terminated, truncated))
            if terminated or truncated:
                obs, info = env.reset()
                trace.append((obs, info["fairness"]))
        return trace, env.unwrapped.cluster_probs

    run_a, probs_a = rollout(42)
    run_b, probs_b = rollout(42)
    assert len(run_a) == len(run_b)
    for step_a, step_b in zip(run_a, run_b):
        for x, y in zip(step_a, step_b):
            assert np.array_equal(x, y) and type(x) is type(y)
    assert np.array_equal(probs_a, probs_b)
    run_c, _ = rollout(43)
    assert not np.array_equal(
        np.stack([s[0] for s in run_a[:200]]), np.stack([s[0] for s in run_c[:200]])
    )


# ------------------------------------------------------------------ dynamics


def test_initial_bin_frequencies_match_hard_distributions():
    counts = np.zeros((2, N_BINS))
    # Applicants drawn at reset with the default environment ...
    env = LendingHardEnv()
    env.reset(seed=11)
    for _ in range(3000):
        env.reset()
        counts[env.applicant] += 1
    # ... and a long stream that never moves (no alteration on reject).
    env = LendingHardEnv(alter_rates=(0.0, 0.0), max_steps=10**6)
    obs, _ = env.reset(seed=12)
    for _ in range(60_000):
        counts[int(np.argmax(obs[7:9])), int(np.argmax(obs[:7]))] += 1
        obs, *_ = env.step(0)
    assert np.array_equal(env.cluster_probs, np.asarray(HARD_CLUSTER_PROBS))
    group_n = counts.sum(axis=1)
    total = group_n.sum()
    assert abs(group_n[0] / total - 0.5) <= sd_tol(0.5, total)
    _assert_rows_match(counts, np.asarray(HARD_CLUSTER_PROBS))


def test_accept_destinations_follow_the_transition_matrices():
    counts = _tally(1, 40_000, seed=21).sum(axis=0)  # [label, bin, destination]
    trans = np.asarray(HARD_TRANSITIONS)
    # label 1 (repay) uses TRANSITION_DYNAMICS[0], label 0 (default) uses [1].
    _assert_rows_match(counts, np.stack([trans[1], trans[0]]))


def test_reject_destinations_follow_the_alter_rate_mixture():
    counts = _tally(0, 60_000, seed=22)  # [group, label, bin, destination]
    trans = np.asarray(HARD_TRANSITIONS)
    expected = np.zeros_like(counts)
    for g, rate in enumerate(HARD_ALTER_RATES):
        for y in (0, 1):
            expected[g, y] = rate * trans[1 - y] + (1.0 - rate) * np.eye(N_BINS)
    _assert_rows_match(counts, expected)


def test_reject_moves_with_the_per_group_alter_rate():
    # Every row jumps three bins on (no self-loop): a move happens iff the alteration does.
    jump = {f"{k}{b}": (b + 3) % N_BINS for k in "rd" for b in range(N_BINS)}
    counts = _tally(0, 24_000, seed=23, transition_dynamics=_matrices(**jump))
    for g, rate in enumerate(HARD_ALTER_RATES):
        stay = np.trace(counts[g].sum(axis=0))
        n = counts[g].sum()
        moved = n - stay
        assert abs(moved / n - rate) <= sd_tol(rate, n), (g, moved / n, rate)
        for b in range(N_BINS):  # moves land only on the specified bin
            row = counts[g, :, b].sum(axis=0)
            assert row.sum() == row[b] + row[(b + 3) % N_BINS]


def test_single_accept_moves_increment_to_the_drawn_bin():
    # Group 0 all in bin 4, everyone repays, repay row 4 jumps to bin 1 (non-adjacent).
    cluster = [[0, 0, 0, 0, 1.0, 0, 0], [0.1, 0.1, 0.2, 0.3, 0.3, 0, 0]]
    env = LendingHardEnv(
        group_probs=(1.0, 0.0),
        cluster_probs=cluster,
        success_probs=[1.0] * N_BINS,
        transition_dynamics=_matrices(r4=1),
    )
    env.reset(seed=0)
    assert env.applicant == (0, 4)
    _, reward, _, _, info = env.step(1)
    assert info["label"] == 1 and reward == 1.0 and env.cash == 10_001.0
    assert np.array_equal(env.cluster_probs, [[0, 0.01, 0, 0, 0.99, 0, 0], cluster[1]])


def test_mass_moved_is_capped_by_the_bin_mass():
    cluster = [[0.995, 0, 0, 0, 0.005, 0, 0], [0.1, 0.1, 0.2, 0.3, 0.3, 0, 0]]
    env = LendingHardEnv(
        group_probs=(1.0, 0.0),
        cluster_probs=cluster,
        success_probs=[1.0] * N_BINS,
        alter_rates=(0.0, 0.0),
        transition_dynamics=_matrices(r4=6),
        max_steps=10**6,
    )
    env.reset(seed=1)
    for _ in range(50_000):  # rejects move nothing: wait for an applicant from bin 4
        if env.applicant == (0, 4):
            break
        env.step(0)
    assert env.applicant == (0, 4)
    assert np.array_equal(env.cluster_probs, cluster)
    env.step(1)
    assert np.array_equal(env.cluster_probs, [[0.995, 0, 0, 0, 0.0, 0, 0.005], cluster[1]])


def test_default_from_bin_zero_jumps_to_bin_four_or_stays():
    # Reference default row 0 is (0.5, 0, 0, 0, 0.5, 0, 0).
    cluster = [[1.0, 0, 0, 0, 0, 0, 0], [0.1, 0.1, 0.2, 0.3, 0.3, 0, 0]]
    env = LendingHardEnv(group_probs=(1.0, 0.0), cluster_probs=cluster, success_probs=[0.0] * 7)
    env.reset(seed=2)
    seen = set()
    for _ in range(60):
        g, b = env.applicant
        before = env.cluster_probs
        _, reward, _, _, info = env.step(1)
        assert info["label"] == 0 and reward == -1.0
        dst = _move(before, env.cluster_probs, g, b, 0.01)
        assert HARD_TRANSITIONS[1][b][dst] > 0.0
        if b == 0:
            seen.add(dst)
    assert seen == {0, 4}


def test_single_reject_moves_with_the_label_row_and_never_cash():
    # Alter rate 1 for group 0: a rejection moves exactly like an accept would.
    cluster = [[0, 0, 0, 1.0, 0, 0, 0], [0.1, 0.1, 0.2, 0.3, 0.3, 0, 0]]
    for success, dst in ((1.0, 0), (0.0, 6)):
        env = LendingHardEnv(
            group_probs=(1.0, 0.0),
            cluster_probs=cluster,
            success_probs=[success] * N_BINS,
            alter_rates=(1.0, 0.0),
            transition_dynamics=_matrices(r3=0, d3=6),
        )
        env.reset(seed=3)
        _, reward, _, _, info = env.step(0)
        assert reward == 0.0 and env.cash == 10_000.0 and info["label_observed"] == 0
        expected = [[0.0] * N_BINS, cluster[1]]
        expected[0][3], expected[0][dst] = 0.99, 0.01
        assert np.array_equal(env.cluster_probs, expected)
    # Alter rate 0 (group 1 here): a rejection never moves anything.
    env = LendingHardEnv(group_probs=(0.0, 1.0), alter_rates=(1.0, 0.0))
    env.reset(seed=4)
    for _ in range(500):
        env.step(0)
    assert np.array_equal(env.cluster_probs, np.asarray(HARD_CLUSTER_PROBS))


def test_cash_reward_population_rows_and_tpr_match_hand_computation():
    inc, rate, loan = 0.05, 0.3, 2.0  # large increment: min(inc, p) binds often
    env = LendingHardEnv(
        interest_rate=rate, loan_amount=loan, cluster_shift_increment=inc, max_steps=5000
    )
    obs, _ = env.reset(seed=31)
    rng = np.random.default_rng(31)
    trans = np.asarray(HARD_TRANSITIONS)
    qualified = np.zeros(2)
    sel_qualified = np.zeros(2)
    total_reward = 0.0
    for _ in range(3000):
        a = int(rng.random() < 0.7)
        g, b = env.applicant
        before = env.cluster_probs
        cash_before = env.cash
        obs, reward, terminated, truncated, info = env.step(a)
        y = info["label"]
        assert (info["group"], info["decision"], info["label_observed"]) == (g, a, a)
        dst = _move(before, env.cluster_probs, g, b, inc)
        row = trans[1 - y, b]
        if not a:
            row = HARD_ALTER_RATES[g] * row + (1.0 - HARD_ALTER_RATES[g]) * np.eye(N_BINS)[b]
        assert row[dst] > 0.0
        assert reward == ((loan * rate if y else -loan) if a else 0.0)
        assert env.cash == cash_before + reward
        total_reward += reward
        counts = info["fairness"]
        assert counts.shape == (NUM_FIELDS, 2) and counts.dtype == np.float64
        expected = np.zeros((POPULATION, 2))
        expected[[DECIDED, QUALIFIED, SELECTED, SELECTED_QUALIFIED], g] = [1, y, a, y * a]
        assert np.array_equal(counts[:POPULATION], expected)
        assert np.array_equal(counts[POPULATION], [0.5, 0.5])
        qm = 0.5 * (env.cluster_probs * env.success_probs).sum(axis=1)
        np.testing.assert_allclose(counts[QUALIFIED_MASS], qm, rtol=0, atol=1e-12)
        qualified[g] += y
        sel_qualified[g] += y * a
        tpr = np.divide(sel_qualified, qualified, out=np.zeros(2), where=qualified > 0)
        np.testing.assert_allclose(obs[-2:], tpr.astype(np.float32), rtol=0, atol=0)
        assert not terminated and not truncated
    assert math.isclose(env.cash, env.starting_cash + total_reward, rel_tol=0, abs_tol=1e-9)
    np.testing.assert_allclose(env.cluster_probs.sum(axis=1), 1.0, rtol=0, atol=1e-9)
    assert np.all(env.cluster_probs >= 0.0)


def test_info_contract_at_reset_and_step():
    env = gym.make(ENV_ID)
    _, info = env.reset(seed=3)
    assert set(info) == INFO_KEYS
    assert np.all(info["fairness"][:POPULATION] == 0.0)
    assert info["group"] == info["label"] == info["decision"] == -1
    _, reward, terminated, truncated, info = env.step(1)
    assert set(info) == INFO_KEYS
    assert all(type(info[k]) is int for k in ("group", "label", "decision", "label_observed"))
    assert isinstance(reward, float) and type(terminated) is bool and type(truncated) is bool


def test_episode_end():
    env = LendingHardEnv(max_steps=5)
    env.reset(seed=0)
    assert [env.step(0)[3] for _ in range(5)] == [False, False, False, False, True]
    env = LendingHardEnv(starting_cash=3.0, success_probs=[0.0] * N_BINS)
    env.reset(seed=0)
    assert [env.step(1)[2] for _ in range(3)] == [False, False, True]
    assert env.cash == 0.0


# ------------------------------------------------------------------ validation


def _bad_row_matrices() -> list:
    mats = _matrices()
    mats[1][4] = [0.0, 0.0, 0.2, 0.7, 0.0, 0.0, 0.0]
    return mats


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"alter_rates": (0.3,)}, r"alter_rates=.*expected shape \(2,\)"),
        ({"alter_rates": (1.3, 0.1)}, r"alter_rates=.*\[0, 1\]"),
        ({"alter_rates": "high"}, r"alter_rates"),
        ({"transition_dynamics": HARD_TRANSITIONS[0]}, r"transition_dynamics=.*\(2, 7, 7\)"),
        ({"transition_dynamics": np.full((2, 7, 7), -0.1)}, r"transition_dynamics=.*\[0, 1\]"),
        ({"transition_dynamics": _bad_row_matrices()}, r"transition_dynamics\[1\]\[4\]=.*sum"),
        (
            {"cluster_probs": [[0.5] * 2] * 2, "success_probs": [0.5] * 2},
            r"transition_dynamics=.*\(2, 2, 2\)",
        ),
        ({"cluster_probs": [[0.2] * 7, [0.1] * 7]}, r"cluster_probs"),
        ({"group_probs": (0.3, 0.3)}, r"group_probs"),
        ({"success_probs": [1.2] * 7}, r"success_probs"),
        ({"interest_rate": -1.0}, r"interest_rate"),
        ({"loan_amount": 0.0}, r"loan_amount"),
        ({"starting_cash": float("nan")}, r"starting_cash"),
        ({"cluster_shift_increment": 1.5}, r"cluster_shift_increment"),
        ({"max_steps": 0}, r"max_steps"),
        ({"obs_bin": False, "obs_group": False, "obs_tpr": False}, r"obs_bin"),
    ],
)
def test_constructor_validation(kwargs, pattern):
    with pytest.raises(ValueError) as excinfo:
        LendingHardEnv(**kwargs)
    message = str(excinfo.value)
    assert re.search(pattern, message) and "\n" not in message, message


def test_invalid_action_and_step_before_reset():
    env = LendingHardEnv()
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(2)
