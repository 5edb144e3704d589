"""``validate()`` only validates: it changes no setting and builds no environment.

Every registered algorithm's config is validated on its ``smoke_env`` while building an
environment raises (``gymnasium.make`` and the constructor of every registered env
class); its attributes must come out as they went in, apart from what RLlib's own
``AlgorithmConfig.validate()`` sets on a stock config. What a config derives is set by
``freeze()``, and an algorithm builds its envs in its setup: a few representative
algorithms are frozen and trained for one iteration.
"""

from __future__ import annotations

import copy
import functools
import importlib
import math

import gymnasium
import numpy as np
import pytest
import torch

from rllib_fair.algorithms import ALGORITHMS, get_config_class
from rllib_fair.envs import ENTRY_POINTS, VECTOR_ENTRY_POINTS

torch.set_num_threads(1)


def _entry_class(entry: str) -> type:
    module, _, name = entry.partition(":")
    return getattr(importlib.import_module(module), name)


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - arrays and other values without a plain ==
        return repr(a) == repr(b)


def _changes(before: dict, after: dict) -> dict:
    """``{name: value after}`` of every attribute added, removed or changed."""
    missing = object()
    return {
        k: after.get(k, missing)
        for k in before.keys() | after.keys()
        if k not in before or k not in after or not _same(before[k], after[k])
    }


@pytest.fixture(scope="module")
def rllib_own_changes() -> dict:
    """What RLlib's own ``validate()`` sets on a stock ``PPOConfig`` (``simple_optimizer``)."""
    from ray.rllib.algorithms.ppo import PPOConfig

    cfg = PPOConfig().environment("fair/Lending-v0")
    before = copy.deepcopy(vars(cfg))
    cfg.validate()
    return _changes(before, vars(cfg))


@pytest.fixture
def env_builds(monkeypatch) -> list[str]:
    """Makes building an env raise; returns the list of attempts (some callers swallow)."""
    attempts: list[str] = []

    def refuse(what, wrapped=None):
        def raise_(*args, **kwargs):
            attempts.append(what)
            raise AssertionError(f"an environment was built: {what}")

        # keep the signature: reading a constructor's defaults is allowed
        return functools.wraps(wrapped)(raise_) if wrapped is not None else raise_

    for name in ("make", "make_vec"):
        monkeypatch.setattr(gymnasium, name, refuse(f"gymnasium.{name}"))
        monkeypatch.setattr(gymnasium.envs.registration, name, refuse(f"gymnasium.{name}"))
    for entry in {*ENTRY_POINTS.values(), *VECTOR_ENTRY_POINTS.values()}:
        cls = _entry_class(entry)
        if "__init__" in vars(cls):
            monkeypatch.setattr(cls, "__init__", refuse(entry, cls.__init__))
    return attempts


def _smoke_config(name: str):
    return get_config_class(name)().environment(ALGORITHMS[name].smoke_env)


def test_the_guard_catches_a_build(env_builds):
    """The fixture is not vacuous: both ways of building an env are caught."""
    from rllib_fair.envs.replicator import ReplicatorAdultEnv

    with pytest.raises(AssertionError):
        gymnasium.make("fair/Lending-v0")
    with pytest.raises(AssertionError):
        ReplicatorAdultEnv()
    assert env_builds == ["gymnasium.make", "rllib_fair.envs.replicator:ReplicatorAdultEnv"]


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_validate_changes_no_setting(name, rllib_own_changes):
    cfg = _smoke_config(name)
    before = copy.deepcopy(vars(cfg))
    cfg.validate()
    changed = _changes(before, vars(cfg))
    assert set(changed) <= set(rllib_own_changes), sorted(set(changed) - set(rllib_own_changes))
    for key, value in changed.items():
        assert _same(value, rllib_own_changes[key]), key


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_validate_builds_no_env(name, env_builds):
    cfg = _smoke_config(name)
    cfg.validate()
    assert env_builds == []


@pytest.mark.parametrize(
    ("name", "env_config", "message"),
    [
        ("Myopic", {}, "env: 'fair/Lending-v0' is invalid for a myopic baseline"),
        ("LUCBFair", {}, "env: 'fair/Lending-v0' is invalid for L-UCBFair"),
        ("LUCBFair", {"max_steps": 0}, "max_steps=0: expected an integer >= 1"),
        ("ELBERTPO", {"max_steps": 0}, "episode_length: None but env 'fair/Lending-v0' has no"),
    ],
)
def test_env_checks_read_the_class_and_the_env_config(name, env_config, message, env_builds):
    cfg = get_config_class(name)().environment("fair/Lending-v0", env_config=env_config)
    if name == "LUCBFair" and env_config:
        cfg.environment("fair/Replicator-v0", env_config=env_config)
    with pytest.raises(ValueError) as err:
        cfg.validate()
    assert message in str(err.value) and "\n" not in str(err.value)
    assert env_builds == []


def test_derived_settings_read_the_declared_env_arguments(env_builds):
    """H, ELBERT-PO's L and the lending strategies' features come from env_config + defaults."""
    lucb = get_config_class("LUCBFair")().environment("fair/ReplicatorAdult-v0")
    assert lucb.resolved_horizon() == 150  # ReplicatorAdultEnv's own default
    lucb.environment("fair/Replicator-v0", env_config={"max_steps": 12})
    assert lucb.settings().horizon == 12
    with pytest.raises(ValueError, match="horizon: 7 is invalid; valid: the env's max_steps \\(12"):
        lucb.training(horizon=7).validate()
    elbert = get_config_class("ELBERTPO")().environment("fair/Attention-v0")
    assert elbert.resolved_episode_length() == 1000
    unc = get_config_class("Uncertainty")()
    assert unc.feature_names() == ("R", "Q", "A")
    unc.environment("fair/QuarterlyLending-v0", env_config={"l_m": 1.0})
    assert unc.feature_names() == ("P", "Q", "A")
    unc.environment("fair/QuarterlyLending-v0", env_config={"bias": {"l_o": True}})
    assert unc.feature_names() == ("Q", "A")
    assert env_builds == []


def test_feature_names_match_the_built_env():
    from rllib_fair.envs.quarterly_lending import QuarterlyLendingEnv

    for config in ({}, {"l_m": 2.0}, {"l_o": True}, {"bias": {"l_m": 1.0, "l_o": True}}):
        env = QuarterlyLendingEnv(dim=400, **config)
        assert QuarterlyLendingEnv.feature_names_for(config) == env.feature_names, config


@pytest.mark.parametrize("name", ["LUCBFair", "RTD3", "PPO"])
def test_freeze_sets_what_validate_left(name):
    cfg = _smoke_config(name)
    cfg.validate()
    assert cfg.env_runner_cls is None
    cfg.freeze()
    assert cfg.env_runner_cls is not None
    if name == "LUCBFair":
        assert cfg.env_config["include_time"] is True
    if name == "RTD3":
        assert cfg.env_config["reward_mode"] == "relaxed"


# ----------------------------------------------------------------------------- training


def _small(name: str):
    env_config = {
        "Myopic": {"max_steps": 5},
        "LUCBFair": {"max_steps": 5},
        "ELBERTPO": {"max_steps": 40},
        "Uncertainty": {"dim": 400, "num_partitions": 3},
    }[name]
    cfg = (
        get_config_class(name)()
        .environment(ALGORITHMS[name].smoke_env, env_config=env_config)
        .env_runners(num_env_runners=0)
        .debugging(seed=0)
    )
    if name == "Myopic":
        cfg.training(train_batch_size_per_learner=10, solver_grid=5, solver_iters=2)
    if name == "LUCBFair":
        cfg.training(num_episodes_hint=5, regret_reference=False)
    if name == "ELBERTPO":
        cfg.training(train_batch_size_per_learner=40, minibatch_size=40, num_epochs=1)
        cfg.rl_module(model_config={"fcnet_hiddens": [4]})
    return cfg


@pytest.mark.ray
@pytest.mark.parametrize("name", ["Myopic", "LUCBFair", "ELBERTPO", "Uncertainty"])
def test_algorithms_that_built_envs_in_validate_train_one_iteration(ray_session, name):
    """Their envs are now built by the algorithm and its module, in setup."""
    algo = _small(name).build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert result["training_iteration"] == 1
    assert result["env_runners"]["num_env_steps_sampled"] > 0


@pytest.mark.ray
@pytest.mark.parametrize(
    ("name", "stat"), [("PPOC", "ppoc/c_hat"), ("FPPOL", "fppol/w1_delta_mean")]
)
def test_qualification_inputs_without_fairness_metrics(ray_session, name, stat):
    """fairness_metrics=False: no fairness/ keys, but the annotators still feed the learner."""
    from rllib_fair.algorithms.common.connectors import qualification_columns

    cfg = (
        get_config_class(name)()
        .environment("fair/LendingDrift-v0", env_config={"max_steps": 100})
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .fairness(metrics=False)
        .debugging(seed=0)
    )
    cfg.validate()
    algo = cfg.build_algo()
    try:
        result = algo.train()
        episodes = algo.env_runner.sample(num_timesteps=50, random_actions=True)
    finally:
        algo.stop()
    assert "fairness" not in result
    value = result["learners"]["default_policy"][stat]
    assert math.isfinite(value) and value != 0.0
    need_w1 = name == "FPPOL"
    columns = [
        qualification_columns(
            ep.get_infos()[1:], len(ep), len(ep), np.zeros(64), need_q=not need_w1, need_w1=need_w1
        )
        for ep in episodes
        if len(ep)
    ]
    key = "fair_long_delta" if need_w1 else "fair_qual_q"
    assert any(np.any(c[key] != 0) for c in columns)
