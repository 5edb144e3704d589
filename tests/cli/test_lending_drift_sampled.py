"""The ``lending_drift_sampled`` evaluator (Lear & Zhang's deployment) on fixed policies.

A stub algorithm carries a module whose acceptance probability is set by the test, so
every output can be checked against the env played with the same draws.
"""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from rllib_fair.envs.lending_drift import LendingDriftEnv
from rllib_fair.reproduce.evaluators import LendingDriftSampled

torch.set_num_threads(1)

ENV_CONFIG = {"setting": 1, "max_steps": 60}
GROUP = slice(14, 16)  # the one-hot group in the observation (obs_bin, obs_group on)


class _Module(torch.nn.Module):
    """P(approve) = p[group of the applicant] (1.0 and 0.0 exactly at the extremes)."""

    def __init__(self, p_by_group):
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(1))  # gives the module a device
        self.p = torch.tensor(p_by_group, dtype=torch.float64)

    def forward_inference(self, batch):
        group = batch["obs"][:, GROUP].argmax(-1)
        p = self.p[group]
        logits = torch.stack([torch.log1p(-p), torch.log(p)], dim=-1)  # -inf at 0 or 1
        return {"action_dist_inputs": logits}


def _measure(p_by_group, seed=3, episodes=4):
    algo = SimpleNamespace(
        config=SimpleNamespace(env_config=dict(ENV_CONFIG), seed=seed),
        get_module=lambda: _Module(p_by_group),
    )
    paths = {k: k for k in LendingDriftSampled.OUTPUTS}
    return LendingDriftSampled().measure(algo, {}, paths, {"episodes": episodes})


def _replay(p_by_group, seed=3, episodes=4):
    """Mean cash gained and each episode's decisions by group, the evaluator's draws made
    in its order."""
    rng = np.random.default_rng(10_000 + seed)
    env = LendingDriftEnv(**ENV_CONFIG)
    profits, episodes_decisions = [], []
    for _ in range(episodes):
        decisions = {0: [], 1: []}
        episodes_decisions.append(decisions)
        obs, _ = env.reset(seed=int(rng.integers(2**31)))
        start, done = env.cash, False
        while not done:
            group = int(obs[GROUP].argmax())
            action = int(rng.random() < p_by_group[group])
            obs, _, term, trunc, info = env.step(action)
            assert info["group"] == group
            decisions[group].append(action)
            done = term or trunc
        profits.append(env.cash - start)
    return float(np.mean(profits)), episodes_decisions


def test_approve_all_and_deny_all_match_the_env_played_with_the_same_draws():
    out = _measure([1.0, 1.0])
    profit, _ = _replay([1, 1])
    assert out["profit"] == pytest.approx(profit, abs=1e-9)
    assert out["approval_rate"] == out["approval_rate_0"] == out["approval_rate_1"] == 1.0
    assert out["lambda"] == 0.0  # equal probabilities everywhere
    deny = _measure([0.0, 0.0])
    assert deny["approval_rate"] == deny["approval_rate_0"] == deny["approval_rate_1"] == 0.0
    assert deny["profit"] == pytest.approx(_replay([0, 0])[0], abs=1e-9)
    assert deny["profit"] != out["profit"]


def test_a_group_only_policy_gives_per_group_rates_and_swapping_groups_swaps_them():
    out = _measure([1.0, 0.0])
    profit, episodes = _replay([1, 0])
    assert all(ep[0] and ep[1] for ep in episodes)  # both groups apply in every episode
    assert (out["approval_rate_0"], out["approval_rate_1"]) == (1.0, 0.0)
    assert out["profit"] == pytest.approx(profit, abs=1e-9)
    swapped = _measure([0.0, 1.0])
    assert (swapped["approval_rate_0"], swapped["approval_rate_1"]) == (0.0, 1.0)
    # the same applicants are drawn, so the overall rates are complements
    assert out["approval_rate"] + swapped["approval_rate"] == pytest.approx(1.0)
    assert out["lambda"] > 0.0 and swapped["lambda"] > 0.0


def test_sampled_rates_are_the_sampled_actions_and_the_seed_fixes_the_run():
    a, b = _measure([0.3, 0.6], episodes=6), _measure([0.3, 0.6], episodes=6)
    assert a == b  # same seed, same run
    profit, episodes = _replay([0.3, 0.6], episodes=6)
    assert a["profit"] == pytest.approx(profit, abs=1e-9)
    rate = np.mean([np.mean(ep[0] + ep[1]) for ep in episodes])
    assert a["approval_rate"] == pytest.approx(rate, abs=1e-12)
    for k in (0, 1):  # means over episodes of each episode's rate in the group
        assert a[f"approval_rate_{k}"] == pytest.approx(
            np.mean([np.mean(ep[k]) for ep in episodes]), abs=1e-12
        )
        # the rates are of the sampled actions, not the probabilities
        assert a[f"approval_rate_{k}"] != [0.3, 0.6][k]
    assert abs(a["approval_rate_0"] - 0.3) < 0.1 and abs(a["approval_rate_1"] - 0.6) < 0.1
    assert _measure([0.3, 0.3], seed=4, episodes=6) != a


def test_a_path_that_is_no_output_names_the_metric():
    algo = SimpleNamespace(
        config=SimpleNamespace(env_config=dict(ENV_CONFIG), seed=0),
        get_module=lambda: _Module([1.0, 1.0]),
    )
    with pytest.raises(ValueError, match=r"^metric path 'gap': no 'gap' in the result$"):
        LendingDriftSampled().measure(algo, {}, {"x": "gap"}, {"episodes": 1})
