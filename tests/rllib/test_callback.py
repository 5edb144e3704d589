"""The fairness metrics callback: exact sums, per-step disparity across chunks, finalize.

No Ray instance is started: a real MetricsLogger and hand-built episodes are used.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

import rllib_fair  # noqa: F401
from rllib_fair.algorithms import get_config_class
from rllib_fair.fairness import Ledger, WindowedDisparity, get_notion
from rllib_fair.fairness.blocks import summarize_raw
from rllib_fair.fairness.sequence import running_disparity
from rllib_fair.rllib import keys
from rllib_fair.rllib.callbacks import FairnessMetricsCallback


def rollout(env_id, n, seed, p_accept=0.5, env_kwargs=None):
    env = gym.make(env_id, **(env_kwargs or {}))
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    ep = SingleAgentEpisode(observations=[obs], infos=[info], len_lookback_buffer=0)
    counts = []
    for _ in range(n):
        a = int(rng.random() < p_accept)
        obs, r, term, trunc, info = env.step(a)
        ep.add_env_step(obs, a, r, infos=info, terminated=term, truncated=trunc)
        counts.append(info["fairness"])
        if term or trunc:
            break
    return ep, np.stack(counts)


@pytest.mark.parametrize("window", [None, 1, 7, 50])
@pytest.mark.parametrize("notion", ["equal_opportunity", "equalized_odds", "qualification_parity"])
def test_running_disparity_over_chunks_equals_stepwise(window, notion):
    _, counts = rollout("fair/LendingFICO-v0", 120, seed=1)
    ref = WindowedDisparity(notion, 2, window=window)
    expected = np.array([ref.update(c) for c in counts])
    got, carry = [], None
    for lo, hi in [(0, 5), (5, 6), (6, 60), (60, 120)]:
        gaps, carry = running_disparity(notion, counts[lo:hi], window=window, carry=carry)
        got.append(gaps)
    np.testing.assert_allclose(np.concatenate(got), expected, rtol=1e-9, atol=1e-12)
    assert carry.num_steps == 120
    np.testing.assert_allclose(carry.total, counts.sum(axis=0))


def _logger_value(ml, *key):
    return ml.peek(key)


def test_on_sample_end_logs_exact_sums_and_episode_gap():
    cfg = (
        get_config_class("PPO")()
        .environment("fair/Lending-v0", env_config={"max_steps": 40})
        .fairness(notion="equal_opportunity", log_notions=["demographic_parity"])
    )
    runner = SimpleNamespace(config=cfg)
    done_ep, done_counts = rollout("fair/Lending-v0", 40, seed=2, env_kwargs={"max_steps": 40})
    assert done_ep.is_done
    running_ep, running_counts = rollout(
        "fair/Lending-v0", 25, seed=3, env_kwargs={"max_steps": 40}
    )
    assert not running_ep.is_done
    ml = MetricsLogger()
    cb = FairnessMetricsCallback()
    cb.on_sample_end(env_runner=runner, metrics_logger=ml, samples=[done_ep, running_ep])
    all_counts = np.concatenate([done_counts, running_counts])
    for name in ("equal_opportunity", "demographic_parity"):
        ledger = Ledger(name, 2)
        ledger.update_many(all_counts)
        pair = get_notion(name).pair_names[0]
        for g, group in enumerate(["group_0", "group_1"]):
            assert _logger_value(ml, keys.RAW, name, "supply", pair, group) == ledger.supply[0, g]
            assert _logger_value(ml, keys.RAW, name, "demand", pair, group) == ledger.demand[0, g]
        assert _logger_value(ml, keys.RAW, name, keys.NUM_STEPS) == 65
        assert _logger_value(ml, keys.RAW, name, keys.NUM_EPISODES) == 1
        ep_ledger = Ledger(name, 2)
        ep_ledger.update_many(done_counts)
        assert math.isclose(
            _logger_value(ml, keys.RAW, name, keys.RAW_EPISODE_BIAS_SUM), ep_ledger.bias()
        )
        stepwise = 0.0
        for counts in (done_counts, running_counts):
            wd = WindowedDisparity(name, 2)
            stepwise += sum(wd.update(c) for c in counts)
        assert math.isclose(
            _logger_value(ml, keys.RAW, name, keys.RAW_STEP_DISPARITY_SUM), stepwise, rel_tol=1e-9
        )
    # The unfinished episode is carried; the finished one is forgotten.
    assert {k[0] for k in cb._carries} == {running_ep.id_}


def test_running_episode_resumes_in_the_next_sample_call():
    cfg = get_config_class("PPO")().environment("fair/Lending-v0").fairness(disparity_window=10)
    runner = SimpleNamespace(config=cfg)
    ep, counts = rollout("fair/Lending-v0", 60, seed=4)
    cb = FairnessMetricsCallback()
    total = 0.0
    for lo, hi in [(0, 23), (23, 60)]:
        ml = MetricsLogger()
        cb.on_sample_end(env_runner=runner, metrics_logger=ml, samples=[ep.slice(slice(lo, hi))])
        total += _logger_value(ml, keys.RAW, "equal_opportunity", keys.RAW_STEP_DISPARITY_SUM)
    wd = WindowedDisparity("equal_opportunity", 2, window=10)
    assert math.isclose(total, sum(wd.update(c) for c in counts), rel_tol=1e-9)


def _raw(supply, demand, pair="tpr"):
    return {
        "supply": {pair: {"group_0": supply[0], "group_1": supply[1]}},
        "demand": {pair: {"group_0": demand[0], "group_1": demand[1]}},
        keys.RAW_STEP_DISPARITY_SUM: 3.0,
        keys.NUM_STEPS: 12.0,
        keys.RAW_EPISODE_BIAS_SUM: 0.5,
        keys.NUM_EPISODES: 2.0,
    }


def test_summarize_raw_exact_values():
    out = summarize_raw("equal_opportunity", _raw((3.0, 1.0), (4.0, 2.0)), ["group_0", "group_1"])
    assert out["rate"] == {"group_0": 0.75, "group_1": 0.5}
    assert out["bias"] == 0.25
    assert math.isclose(out["ratio"], 0.5 / 0.75)
    assert out["supply"] == {"group_0": 3.0, "group_1": 1.0}
    assert out["demand"] == {"group_0": 4.0, "group_1": 2.0}
    assert out["step_disparity_mean"] == 0.25
    assert out["episode_bias_mean"] == 0.25


def test_summarize_raw_zero_demand_never_nan():
    out = summarize_raw("equal_opportunity", _raw((0.0, 0.0), (5.0, 0.0)))
    assert out["rate"] == {"group_0": 0.0, "group_1": 0.0}
    assert out["bias"] == 0.0  # group_1 has no demand: excluded from the gap
    values = [out["bias"], out["ratio"], *out["rate"].values()]
    assert all(math.isfinite(v) for v in values)


def test_summarize_raw_group_order_follows_env():
    raw = _raw((1.0, 2.0), (4.0, 4.0))
    raw["supply"]["tpr"] = {"group_1": 2.0, "group_0": 1.0}
    out = summarize_raw("equal_opportunity", raw, ["group_0", "group_1"])
    assert list(out["rate"]) == ["group_0", "group_1"]


def test_finalize_moves_raw_into_fairness_for_training_and_evaluation():
    result = {
        "env_runners": {keys.RAW: {"equal_opportunity": _raw((3.0, 1.0), (4.0, 2.0))}},
        "evaluation": {
            "env_runners": {keys.RAW: {"equal_opportunity": _raw((1.0, 1.0), (2.0, 4.0))}}
        },
    }
    cb = FairnessMetricsCallback()
    algo = SimpleNamespace(config=get_config_class("PPO")().environment("fair/Lending-v0"))
    cb.on_train_result(algorithm=algo, metrics_logger=None, result=result)
    assert keys.RAW not in result["env_runners"]
    assert result["fairness"]["equal_opportunity"]["bias"] == 0.25
    assert result["evaluation"]["fairness"]["equal_opportunity"]["bias"] == 0.25
