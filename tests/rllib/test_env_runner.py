"""The speed layer's sampling loop (LeanSamplingMixin) returns exactly RLlib's episodes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.accel.env_runner import LeanSamplingMixin, _infos_to_list, _pending_infos
from rllib_fair.accel.pipelines import check_sampled, sample_categorical
from rllib_fair.algorithms import get_config_class
from rllib_fair.envs.lending import LendingEnv
from rllib_fair.rllib.env_runner import FairEnvRunner

pytestmark = pytest.mark.ray


class CountSteps(RLlibCallback):
    """Counts on_episode_step calls per env index (a callback that defines the method)."""

    def __init__(self):
        super().__init__()
        self.steps: dict[int, int] = {}

    def on_episode_step(self, *, env_index=None, episode=None, **kwargs):
        self.steps[env_index] = self.steps.get(env_index, 0) + 1
        assert episode.t >= 1


def _runner(
    lean: bool,
    num_envs: int,
    native: bool = False,
    callbacks=None,
    name: str = "PPO",
    env: str = "fair/Lending-v0",
    max_steps: int | None = None,
):
    # short episodes by default: copies end and restart inside every sample call
    if max_steps is None:
        max_steps = 37 if env == "fair/Lending-v0" else 45
    env_config = {"max_steps": max_steps}
    cfg = (
        get_config_class(name)()
        .environment(env, env_config=env_config)
        .env_runners(
            num_env_runners=0,
            num_envs_per_env_runner=num_envs,
            native_vector_env=native,
        )
        .accel(sampling=lean)
        .rl_module(model_config={"fcnet_hiddens": [16, 16]})
        .debugging(seed=5)
    )
    if callbacks is not None:
        cfg.callbacks(callbacks)
    cfg.validate()
    cfg.freeze()  # the runner class and vector mode are set with the frozen config
    # RLlib's loop (lean=False) runs on FairEnvRunner, the lean one on its subclass
    assert issubclass(cfg.env_runner_cls, FairEnvRunner)
    assert issubclass(cfg.env_runner_cls, LeanSamplingMixin) is lean
    runner = cfg.env_runner_cls(config=cfg)
    assert not lean or runner._lean_loop_applies(num_envs, False)
    return runner


def _episode_record(ep) -> dict:
    """Everything an episode chunk carries, as plain comparable values."""
    extra = {k: np.asarray(ep.get_extra_model_outputs(k)) for k in ep.extra_model_outputs}
    return {
        "obs": np.asarray(ep.get_observations()),
        "actions": np.asarray(ep.get_actions()),
        "rewards": np.asarray(ep.get_rewards()),
        "infos": ep.get_infos(),
        "extra": extra,
        "flags": (ep.is_terminated, ep.is_truncated, ep.t_started, ep.t, len(ep)),
    }


def _assert_same_info(a, b, where):
    assert a.keys() == b.keys(), where
    for key in a:
        assert type(a[key]) is type(b[key]), (where, key)
        np.testing.assert_array_equal(a[key], b[key], err_msg=f"{where} {key}")


def _assert_same_episodes(lean_eps, rl_eps):
    assert len(lean_eps) == len(rl_eps)
    for k, (a, b) in enumerate(zip(lean_eps, rl_eps, strict=True)):
        ra, rb = _episode_record(a), _episode_record(b)
        assert ra["flags"] == rb["flags"], k
        for key in ("obs", "actions", "rewards"):
            np.testing.assert_array_equal(ra[key], rb[key], err_msg=f"{k} {key}")
            assert ra[key].dtype == rb[key].dtype, (k, key)
        assert ra["extra"].keys() == rb["extra"].keys(), k
        for key in ra["extra"]:
            np.testing.assert_array_equal(ra["extra"][key], rb["extra"][key])
            assert ra["extra"][key].dtype == rb["extra"][key].dtype, (k, key)
        assert len(ra["infos"]) == len(rb["infos"]), k
        for t, (ia, ib) in enumerate(zip(ra["infos"], rb["infos"], strict=True)):
            _assert_same_info(ia, ib, (k, t))


@pytest.mark.parametrize(
    ("num_envs", "native", "name", "env", "max_steps"),
    [
        (1, False, "PPO", "fair/Lending-v0", None),
        (8, False, "PPO", "fair/Lending-v0", None),
        (8, True, "PPO", "fair/Lending-v0", None),  # native vector env
        # long episodes: held steps cross sample calls and the chunks' cuts
        (8, True, "PPO", "fair/Lending-v0", 400),
        (1, False, "PPO", "fair/Lending-v0", 400),
        (3, False, "SELLF", "fair/LendingFICO-v0", None),  # extra output (label prob)
        (8, True, "SELLF", "fair/LendingFICO-v0", None),  # FICO's native vector env
    ],
)
def test_lean_loop_returns_rllibs_episodes(ray_session, num_envs, native, name, env, max_steps):
    runs = {}
    for lean in (True, False):
        torch.manual_seed(0)
        runner = _runner(lean, num_envs, native, name=name, env=env, max_steps=max_steps)
        try:
            assert not lean or runner._lean_loop_applies(1, random_actions=False)
            calls = [
                runner.sample(num_timesteps=150, explore=True),
                runner.sample(num_timesteps=90, explore=True),  # continues the chunks
                runner.sample(num_timesteps=60, explore=False),  # greedy actions
                runner.sample(num_timesteps=50, explore=True, force_reset=True),
            ]
            metrics = runner.get_metrics()
            runs[lean] = (calls, metrics, torch.rand(4))
        finally:
            runner.stop()
    (lean_calls, lean_m, lean_rng), (rl_calls, rl_m, rl_rng) = runs[True], runs[False]
    for a, b in zip(lean_calls, rl_calls, strict=True):
        _assert_same_episodes(a, b)
    # the torch generator is left in the same state
    assert torch.equal(lean_rng, rl_rng)
    # same metrics keys; same counts, lengths and returns
    assert lean_m.keys() == rl_m.keys()
    compared = [k for k in lean_m if k.startswith(("num_", "episode_len", "episode_return"))]
    assert "num_env_steps_sampled" in compared
    for key in compared:
        assert _value(lean_m[key]) == _value(rl_m[key]), key


def _value(stat):
    """A metrics entry's value (``Stats.peek()``; dicts of them entry by entry)."""
    if isinstance(stat, dict):
        return {k: _value(v) for k, v in stat.items()}
    return stat.peek() if hasattr(stat, "peek") else stat


def test_per_step_callbacks_are_called_where_defined(ray_session):
    counts = {}
    for lean in (True, False):
        torch.manual_seed(0)
        runner = _runner(lean, 4, callbacks=CountSteps)
        try:
            runner.sample(num_timesteps=200, explore=True)
            (callback,) = [c for c in runner._callbacks if isinstance(c, CountSteps)]
            counts[lean] = dict(callback.steps)
        finally:
            runner.stop()
    assert counts[True] == counts[False]
    assert sum(counts[True].values()) > 150  # every step but the episode starts


def test_lean_loop_skips_undefined_step_callbacks(ray_session):
    runner = _runner(True, 2)
    try:
        assert not runner._per_step_callbacks()  # only the fairness callback: no step hook
        runner.config.callbacks_on_episode_step = [lambda **kw: None]
        assert runner._per_step_callbacks()
    finally:
        runner.stop()


def test_lean_loop_raises_on_non_finite_logits(ray_session):
    runner = _runner(True, 2)
    try:
        with torch.no_grad():
            for p in runner.module.parameters():
                p.fill_(float("nan"))
        with pytest.raises(RuntimeError, match="probability tensor contains"):
            runner.sample(num_timesteps=10, explore=True)
    finally:
        runner.stop()


def test_lean_sampling_false_keeps_rllibs_loop_and_bad_value_is_refused():
    cfg = get_config_class("PPO")().environment("fair/Lending-v0").accel(sampling=False)
    cfg.env_runners(num_env_runners=0).validate()
    cfg.freeze()
    # the seeding fix stays on: the runner is ours, its loop RLlib's
    assert cfg.env_runner_cls is FairEnvRunner
    bad = get_config_class("PPO")().environment("fair/Lending-v0").accel(sampling="y")
    with pytest.raises(ValueError, match="lean_sampling: 'y' is invalid; valid choices: true"):
        bad.validate()
    off = get_config_class("PPO")().environment("fair/Lending-v0").accel(enabled=False)
    off.validate()
    off.freeze()
    assert off.env_runner_cls is FairEnvRunner  # one switch: the whole layer off
    # the setting moved: the old keyword names the new call
    with pytest.raises(ValueError, match=r"lean_sampling: False .*config.accel\(sampling=...\)"):
        get_config_class("PPO")().env_runners(lean_sampling=False)


@pytest.mark.parametrize("seed", range(12))
def test_exponential_argmax_is_torch_multinomial(seed):
    """``multinomial(p, 1)``'s draw, reproduced: same actions, generator in the same state."""
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical

    class _Module:
        @staticmethod
        def get_exploration_action_dist_cls():
            return TorchCategorical

    gen = torch.Generator().manual_seed(seed)
    n, k = [(1, 2), (8, 2), (64, 3), (5, 7)][seed % 4]
    scale = [0.01, 1.0, 40.0][seed % 3]  # near-uniform, typical, underflowing probs
    logits = torch.randn(n, k, generator=gen) * scale
    torch.manual_seed(seed)
    dist = TorchCategorical(logits=logits)
    want = dist.sample()
    want_logp = dist.logp(want)
    after = torch.rand(3)
    torch.manual_seed(seed)
    batch = {Columns.ACTION_DIST_INPUTS: logits}
    assert sample_categorical(_Module, batch, explore=True)
    assert torch.equal(batch[Columns.ACTIONS], want)
    assert torch.equal(batch[Columns.ACTION_LOGP], want_logp)
    assert torch.equal(torch.rand(3), after)
    check_sampled(batch[Columns.ACTION_LOGP].numpy())
    with pytest.raises(RuntimeError, match="not finite"):
        check_sampled(np.array([0.0, np.nan]))


class _FailOnce(LendingEnv):
    """fair/Lending-v0 whose step raises once per process, after 20 steps of an episode."""

    failed = False

    def step(self, action):
        if not _FailOnce.failed and self._t >= 20:
            _FailOnce.failed = True
            raise RuntimeError("simulated crash of the environment")
        return super().step(action)


def _failing_runner(lean: bool, restart: bool):
    cfg = (
        get_config_class("PPO")()
        .environment(lambda ctx: _FailOnce(max_steps=50))
        .fairness(notion="equal_opportunity")
        .env_runners(num_env_runners=0, num_envs_per_env_runner=2)
        .accel(sampling=lean)
        .fault_tolerance(restart_failed_sub_environments=restart)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=1)
    )
    cfg.validate()
    cfg.freeze()
    runner = (cfg.env_runner_cls or SingleAgentEnvRunner)(config=cfg)
    assert not lean or runner._lean_loop_applies(1, random_actions=False)
    return runner


@pytest.mark.parametrize("lean", [True, False])
def test_env_step_failure_recreates_the_env_or_raises_as_rllib(ray_session, lean):
    _FailOnce.failed = False
    runner = _failing_runner(lean, restart=True)
    try:
        episodes = runner.sample(num_timesteps=120, explore=True)
        assert _FailOnce.failed
        # the steps before the failure are dropped, the env is rebuilt and reset
        assert sum(len(ep) for ep in episodes) >= 120
        assert _value(runner.get_metrics()["num_env_step_failures"]) == 1
    finally:
        runner.stop()
    _FailOnce.failed = False
    runner = _failing_runner(lean, restart=False)
    try:
        with pytest.raises(RuntimeError):
            runner.sample(num_timesteps=120, explore=True)
    finally:
        runner.stop()


class _SometimesInfo(LendingEnv):
    """fair/Lending-v0 whose infos lack ``"odd"`` every fifth step where the label is 0.

    Copies differ: with several copies the vector info dicts keep the key, with a
    partial ``_odd`` mask every fifth step; with one copy the key comes and goes.
    """

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        if self._t % 5 or self._label:
            info["odd"] = self._t
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize("num_envs", [1, 4])
def test_lean_loop_keeps_infos_whose_keys_vary_by_step(ray_session, num_envs):
    runs = {}
    for lean in (True, False):
        torch.manual_seed(0)
        cfg = (
            get_config_class("PPO")()
            .environment(lambda ctx: _SometimesInfo(max_steps=300))
            .fairness(notion="equal_opportunity")
            .env_runners(num_env_runners=0, num_envs_per_env_runner=num_envs)
            .accel(sampling=lean)
            .rl_module(model_config={"fcnet_hiddens": [8]})
            .debugging(seed=2)
        )
        cfg.validate()
        cfg.freeze()
        runner = (cfg.env_runner_cls or SingleAgentEnvRunner)(config=cfg)
        try:
            runs[lean] = [runner.sample(num_timesteps=120, explore=True) for _ in range(2)]
        finally:
            runner.stop()
    for a, b in zip(runs[True], runs[False], strict=True):
        _assert_same_episodes(a, b)
    infos = runs[True][0][0].get_infos()
    assert any("odd" in info for info in infos) and any("odd" not in info for info in infos)


def test_held_steps_infos_are_the_per_step_conversion():
    """_pending_infos (stacked) equals _infos_to_list step by step, masks and keys included."""
    from gymnasium.wrappers.vector import DictInfoToList

    rng = np.random.default_rng(0)
    n, k = 3, 4

    def step_dict(mask=None, extra=False):
        d = {
            "counts": rng.random((n, 2, 2)),
            "_counts": np.ones(n, dtype=bool),
            "group": rng.integers(0, 2, n),
            "_group": np.ones(n, dtype=bool) if mask is None else mask,
        }
        if extra:
            d["extra"] = rng.random(n).astype(np.float32)
            d["_extra"] = np.ones(n, dtype=bool)
        return d

    wrapper = DictInfoToList.__new__(DictInfoToList)
    cases = {
        "all true": [step_dict() for _ in range(k)],
        "partial mask": [step_dict(np.array([True, False, True])) for _ in range(k)],
        "keys vary": [step_dict(extra=t % 2 == 1) for t in range(k)],
    }
    for name, steps in cases.items():
        got = _pending_infos(steps, wrapper, object(), n)
        want = [_infos_to_list(wrapper, d, n) for d in steps]
        assert len(got) == n, name
        for i in range(n):
            assert len(got[i]) == k, name
            for t in range(k):
                _assert_same_info(got[i][t], want[t][i], (name, i, t))
    # the partial mask leaves the key out of copy 1's infos
    got = _pending_infos(cases["partial mask"], wrapper, object(), n)
    assert "group" not in got[1][0] and "group" in got[0][0]
