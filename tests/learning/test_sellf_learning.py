"""Learning tier for SELLF on FICO lending with selective labels (equal opportunity).

Same budget (48,000 env steps), seed and PPO settings for PPO, POCAR regularised by the
accepted-only disparity (the naive selective-labels baseline, blind here because
Delta^{A=1} is identically 0 for equal opportunity, Prop. 3.1) and SELLF. The true gap
(long-term benefit rate over the last 3 iterations, true labels) of SELLF must be below
both while it still lends profitably. Measured at this budget: PPO 0.226, POCAR 0.222,
SELLF 0.168 (the paper's 0.37 -> 0.03 needs 500k steps; issue 4 tracks the tuning).
"""

from __future__ import annotations

import numpy as np
import pytest

from rllib_fair.algorithms import get_config_class

pytestmark = pytest.mark.ray

COMMON = dict(lr=5e-4, train_batch_size_per_learner=4000, minibatch_size=250, num_epochs=5)


def run(name, training, fairness):
    cfg = (
        get_config_class(name)()
        .environment("fair/LendingFICO-v0")
        .env_runners(num_env_runners=0)
        .training(**COMMON, **training)
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .fairness(notion="equal_opportunity", disparity_window=4000, **fairness)
        .debugging(seed=0)
    )
    algo = cfg.build_algo()
    gaps, returns = [], []
    try:
        for _ in range(12):
            result = algo.train()
            gaps.append(result["fairness"]["equal_opportunity"]["bias"])
            returns.append(result["env_runners"].get("episode_return_mean", np.nan))
    finally:
        algo.stop()
    return float(np.mean(gaps[-3:])), float(np.nanmean(returns[-4:]))


def test_sellf_true_gap_below_ppo_and_naive_pocar(ray_session):
    ppo_gap, _ = run("PPO", {}, {})
    pocar_gap, _ = run(
        "POCAR", dict(beta_1=5.0, beta_2=1.0, omega=0.05), dict(disparity_source="accepted")
    )
    gap, ret = run("SELLF", dict(beta_1=5.0, beta_2=0.1), {})
    assert ppo_gap > 0.15, ppo_gap
    assert gap < 0.85 * min(ppo_gap, pocar_gap), (gap, ppo_gap, pocar_gap)
    assert ret > 0, ret  # still profitable (a bankrupt policy ends at -1,000)
