"""TD3 on SAC's machinery: loss math, schedule, validation, learning, runners, checkpoints."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

from rllib_fair.algorithms.td3.td3 import TD3Config, TransitionRingBuffer, episode_transitions


class BanditEnv(gym.Env):
    """One-step continuous bandit: obs = target in [-1, 1], reward -(a - target)^2."""

    def __init__(self, config=None):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self._target = 0.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._target = float(self.np_random.uniform(-1.0, 1.0))
        return np.array([self._target], np.float32), {}

    def step(self, action):
        reward = -((float(np.asarray(action).reshape(-1)[0]) - self._target) ** 2)
        return np.array([self._target], np.float32), reward, True, False, {}


def _config(env=BanditEnv, **training):
    kw = {
        "random_warmup_steps": 64,
        "num_steps_sampled_before_learning_starts": 64,
        "train_batch_size_per_learner": 32,
        "actor_lr": 1e-3,
        "critic_lr": 1e-3,
    }
    kw.update(training)
    return (
        TD3Config()
        .environment(env)
        .env_runners(num_env_runners=0, rollout_fragment_length=50)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=100)
        .training(**kw)
        .debugging(seed=0)
    )


# --------------------------------------------------------------------------- loss math
def _local_learner(config):
    group = config.build_learner_group(env=BanditEnv())
    return group, group._learner


def _batch(rng, n):
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

    cols = {
        "obs": rng.uniform(-1, 1, (n, 1)).astype(np.float32),
        "actions": rng.uniform(-1, 1, (n, 1)).astype(np.float32),
        "rewards": rng.normal(size=n).astype(np.float32),
        "new_obs": rng.uniform(-1, 1, (n, 1)).astype(np.float32),
        "terminateds": (rng.uniform(size=n) < 0.3).astype(np.float32),
    }
    return cols, MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(cols)}, env_steps=n)


def _hand_td3(module, batches, cfg, seed):
    """Reference TD3 (paper Alg. 1 / SB3 order) on copies of the networks."""
    pi, qf, qf2 = (copy.deepcopy(m) for m in (module.pi, module.qf, module.qf_twin))
    tpi, tqf, tqf2 = (copy.deepcopy(m) for m in (module.pi, module.qf, module.qf_twin))
    opt_q = torch.optim.Adam(qf.parameters(), lr=cfg.critic_lr)
    opt_q2 = torch.optim.Adam(qf2.parameters(), lr=cfg.critic_lr)
    opt_pi = torch.optim.Adam(pi.parameters(), lr=cfg.actor_lr)
    torch.manual_seed(seed)
    history = []
    for step, cols in enumerate(batches):
        t = {k: torch.as_tensor(v) for k, v in cols.items()}
        with torch.no_grad():
            noise = (torch.randn(t["actions"].shape) * cfg.target_noise).clamp(
                -cfg.target_noise_clip, cfg.target_noise_clip
            )
            a2 = (tpi(t["new_obs"]) + noise).clamp(-1, 1)
            x2 = torch.cat([t["new_obs"], a2], -1)
            q_next = torch.min(tqf(x2), tqf2(x2)).squeeze(-1)
            y = t["rewards"] + cfg.gamma * (1 - t["terminateds"]) * q_next
        x = torch.cat([t["obs"], t["actions"]], -1)
        loss = ((qf(x).squeeze(-1) - y) ** 2).mean() + ((qf2(x).squeeze(-1) - y) ** 2).mean()
        opt_q.zero_grad()
        opt_q2.zero_grad()
        loss.backward()
        opt_q.step()
        opt_q2.step()
        actor_step = step % cfg.policy_delay == cfg.policy_delay - 1
        if actor_step:
            actor_loss = -qf(torch.cat([t["obs"], pi(t["obs"])], -1)).mean()
            opt_pi.zero_grad()
            actor_loss.backward()
            opt_pi.step()
            for net, tgt in ((pi, tpi), (qf, tqf), (qf2, tqf2)):
                for p, tp in zip(net.parameters(), tgt.parameters(), strict=True):
                    tp.data.mul_(1 - cfg.tau).add_(cfg.tau * p.data)
        history.append(actor_step)
    return {"pi": pi, "qf": qf, "qf_twin": qf2, "target_pi": tpi, "target_qf": tqf}


def _assert_close(a: torch.nn.Module, b: torch.nn.Module):
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-5, atol=1e-6)


def _changed(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    return any(not torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


@pytest.mark.ray
def test_loss_math_matches_hand_computation(ray_session):
    cfg = _config(tau=0.1)
    group, learner = _local_learner(cfg)
    module = learner.module["default_policy"].unwrapped()
    rng = np.random.default_rng(1)
    parts = [_batch(rng, 16) for _ in range(4)]
    expected = _hand_td3(module, [c for c, _ in parts], cfg, seed=123)

    before = copy.deepcopy(module)
    torch.manual_seed(123)
    learner.update(batch=parts[0][1], timesteps={"num_env_steps_sampled_lifetime": 0})
    # Step 1 (not an actor step): critics moved, actor and all targets did not.
    assert _changed(module.qf, before.qf) and _changed(module.qf_twin, before.qf_twin)
    assert not _changed(module.pi, before.pi)
    for name in ("target_pi", "target_qf", "target_qf_twin"):
        assert not _changed(getattr(module, name), getattr(before, name))
    mid = copy.deepcopy(module)
    learner.update(batch=parts[1][1], timesteps={"num_env_steps_sampled_lifetime": 0})
    # Step 2 (actor step): actor and targets moved; targets by exactly one Polyak step.
    assert _changed(module.pi, mid.pi)
    for net, tgt in (("pi", "target_pi"), ("qf", "target_qf")):
        for p, tp, tp0 in zip(
            getattr(module, net).parameters(),
            getattr(module, tgt).parameters(),
            getattr(mid, tgt).parameters(),
            strict=True,
        ):
            torch.testing.assert_close(tp, 0.9 * tp0 + 0.1 * p, rtol=1e-5, atol=1e-6)
    learner.update(batch=parts[2][1], timesteps={"num_env_steps_sampled_lifetime": 0})
    learner.update(batch=parts[3][1], timesteps={"num_env_steps_sampled_lifetime": 0})
    for name, net in expected.items():
        _assert_close(getattr(module, name), net)
    assert learner._num_gradient_steps == 4
    group.shutdown()

    # The same four steps packed into one update() call (4 minibatches) end identically.
    group2, learner2 = _local_learner(cfg)
    module2 = learner2.module["default_policy"].unwrapped()
    module2.load_state_dict(before.state_dict())
    for optim in learner2._optimizer_parameters:
        optim.state.clear()
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

    packed = {k: np.concatenate([c[k] for c, _ in parts]) for k in parts[0][0]}
    batch = MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(packed)}, env_steps=64)
    torch.manual_seed(123)
    learner2.update(
        batch=batch,
        minibatch_size=16,
        num_epochs=1,
        timesteps={"num_env_steps_sampled_lifetime": 0},
    )
    for name, net in expected.items():
        _assert_close(getattr(module2, name), net)
    group2.shutdown()


@pytest.mark.ray
def test_speed_layer_trains_bit_identically_to_rllibs_update_path(ray_session):
    """The speed layer's learner (consecutive tensor minibatches, optimizer steps without
    RLlib's per-parameter checks) ends in the same weights as RLlib's path, bit for bit."""
    from rllib_fair.accel.td3_learner import FastTD3LearnerMixin

    weights = {}
    for accel in (True, False):
        config = _config().accel(enabled=accel)
        assert issubclass(config.learner_class, FastTD3LearnerMixin) is accel
        algo = config.build_algo()
        try:
            results = [algo.train() for _ in range(2)]
            assert results[-1]["learners"]["__all_modules__"]["num_gradient_steps"] > 100
            weights[accel] = algo.get_module().state_dict()
        finally:
            algo.stop()
    assert weights[True].keys() == weights[False].keys()
    for key, value in weights[False].items():
        assert torch.equal(torch.as_tensor(weights[True][key]), torch.as_tensor(value)), key


@pytest.mark.ray
@pytest.mark.parametrize("fragment", [1, 50])
def test_local_path_trains_bit_identically_to_synced_weights(ray_session, monkeypatch, fragment):
    """In one process the env runner acts with the learner's own actor and one training
    step runs many fragments with metrics reduced once; the weights, the steps and the
    gradient steps equal the path that syncs weights after every fragment's updates."""
    from rllib_fair.algorithms.td3.td3 import TD3

    out = {}
    for shared in (True, False):
        if not shared:
            monkeypatch.setattr(TD3, "_share_local_actor", lambda self: False)
        config = _config().env_runners(rollout_fragment_length=fragment)
        algo = config.build_algo()
        try:
            assert algo.actor_shared is shared
            if shared:
                learner_pi = algo.learner_group.foreach_learner(
                    lambda learner: learner.module["default_policy"].pi
                )
                assert algo.env_runner.module.pi is next(iter(learner_pi)).get()
                assert algo.fragments_per_training_step() == 100 // fragment
            results = [algo.train() for _ in range(2)]
            out[shared] = (
                algo.get_module().state_dict(),
                results[-1]["num_env_steps_sampled_lifetime"],
                results[-1]["learners"]["__all_modules__"]["num_env_steps_trained_lifetime"],
            )
        finally:
            algo.stop()
    (w_shared, steps_shared, trained_shared), (w_ref, steps_ref, trained_ref) = (
        out[True],
        out[False],
    )
    assert steps_shared == steps_ref == 200
    assert trained_shared == trained_ref
    for key, value in w_ref.items():
        assert torch.equal(torch.as_tensor(w_shared[key]), torch.as_tensor(value)), key


@pytest.mark.ray
def test_schedule_one_env_step_then_one_gradient_step(ray_session, monkeypatch):
    """At rollout_fragment_length=1 (SB3's train_freq=1): after the warm-up every env step
    is followed by exactly one gradient step before the next env step."""
    config = _config(num_steps_sampled_before_learning_starts=10).env_runners(
        rollout_fragment_length=1
    )
    algo = config.build_algo()
    events: list[str] = []
    try:
        runner = algo.env_runner
        sample, update = runner.sample, algo.learner_group.update

        def logged_sample(*args, **kwargs):
            episodes = sample(*args, **kwargs)
            events.append("S" * sum(len(e) for e in episodes))
            return episodes

        def logged_update(*args, **kwargs):
            batch = kwargs.get("batch")
            rows = len(next(iter(batch.policy_batches.values())))
            events.append("U" * (rows // kwargs["minibatch_size"]))
            return update(*args, **kwargs)

        monkeypatch.setattr(runner, "sample", logged_sample)
        monkeypatch.setattr(algo.learner_group, "update", logged_update)
        algo.train()
    finally:
        algo.stop()
    schedule = "".join(events)
    # steps 1-10 fill the warm-up (the 10th earns nothing: it reaches the threshold);
    # from the 11th on, each env step earns one gradient step, taken before the next
    assert schedule == "S" * 10 + "SU" * 90


# --------------------------------------------------------------------------- numpy pieces
def test_ring_buffer_wraps_and_round_trips():
    buf = TransitionRingBuffer(5, seed=0)
    rows = {
        "obs": np.arange(7, dtype=np.float32).reshape(7, 1),
        "actions": np.zeros((7, 1), np.float32),
        "rewards": np.arange(7, dtype=np.float32),
        "new_obs": np.zeros((7, 1), np.float32),
        "terminateds": np.zeros(7, np.float32),
    }
    buf.add({k: v[:3] for k, v in rows.items()})
    buf.add({k: v[3:] for k, v in rows.items()})
    assert len(buf) == 5 and sorted(buf.data["rewards"].tolist()) == [2, 3, 4, 5, 6]
    clone = TransitionRingBuffer(1)
    clone.set_state(buf.get_state())
    np.testing.assert_array_equal(clone.sample(20)["rewards"], buf.sample(20)["rewards"])


def test_episode_transitions_bootstrap_on_truncation():
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    def make(terminated):
        ep = SingleAgentEpisode()
        ep.add_env_reset(observation=np.zeros(1, np.float32))
        for t in range(3):
            last = t == 2
            ep.add_env_step(
                observation=np.full(1, t + 1, np.float32),
                action=np.zeros(1, np.float32),
                reward=float(t),
                terminated=last and terminated,
                truncated=last and not terminated,
            )
        return ep.to_numpy()

    term = episode_transitions(make(True))
    trunc = episode_transitions(make(False))
    np.testing.assert_array_equal(term["terminateds"], [0, 0, 1])
    np.testing.assert_array_equal(trunc["terminateds"], [0, 0, 0])
    np.testing.assert_array_equal(trunc["new_obs"][:, 0], [1, 2, 3])
    np.testing.assert_array_equal(trunc["obs"][:, 0], [0, 1, 2])


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("training", "match"),
    [
        ({"policy_delay": 0}, "policy_delay: 0 is invalid"),
        ({"target_noise": -0.1}, "target_noise: -0.1 is invalid"),
        ({"target_noise_clip": -1.0}, "target_noise_clip: -1.0 is invalid"),
        ({"exploration_noise": -0.2}, "exploration_noise: -0.2 is invalid"),
        ({"random_warmup_steps": -1}, "random_warmup_steps: -1 is invalid"),
        ({"replay_path": "ring"}, "replay_path: 'ring' is invalid"),
        ({"updates_per_env_step": 0.0}, "updates_per_env_step: 0.0 is invalid"),
        ({"actor_lr": 0.0}, "actor_lr: 0.0 is invalid"),
        ({"tau": 0.0}, "tau: 0.0 is invalid"),
        ({"twin_q": False}, "twin_q: False is invalid"),
        ({"initial_alpha": 0.2}, "TD3 has no entropy term"),
        ({"n_step": 3}, "n_step: 3 is invalid with replay_path 'fast'"),
    ],
)
def test_validate_rejects(training, match):
    config = _config(**training)
    with pytest.raises(ValueError, match=match):
        config.validate()


def test_discrete_actions_rejected_where_the_space_is_known():
    """validate() builds no env: it checks a given action space; the CLI and the module
    check the built env's space (check_env_spaces, the module's setup)."""
    from rllib_fair.algorithms.td3.torch.td3_torch_rl_module import TD3TorchRLModule
    from rllib_fair.cli.experiment import ExperimentError, validate_experiment

    match = "action space: Discrete is invalid; TD3 needs a continuous"
    TD3Config().environment("Pendulum-v1").validate()
    by_id = TD3Config().environment("CartPole-v1")
    by_id.validate()  # the space of an env named by id is not known without building it
    box = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    with pytest.raises(ValueError, match=match):
        by_id.check_env_spaces(box, gym.spaces.Discrete(2))
    by_id.check_env_spaces(box, gym.spaces.Box(-1.0, 1.0, (1,), np.float32))
    given = TD3Config().environment(
        "CartPole-v1", observation_space=box, action_space=gym.spaces.Discrete(2)
    )
    with pytest.raises(ValueError, match=match):
        given.validate()
    with pytest.raises(ValueError, match=match):
        TD3TorchRLModule(
            observation_space=box, action_space=gym.spaces.Discrete(2), model_config={}
        )
    with pytest.raises(ExperimentError, match=match):
        validate_experiment("exp", {"run": "TD3", "env": "CartPole-v1", "stop": {}})


# --------------------------------------------------------------------------- Ray runs
def _greedy_bandit_return(algo, n=200, seed=0):
    module = algo.get_module()
    rng = np.random.default_rng(seed)
    targets = rng.uniform(-1, 1, (n, 1)).astype(np.float32)
    with torch.no_grad():
        actions = module.forward_inference({"obs": torch.as_tensor(targets)})["actions"]
    return float(-((actions.numpy() - targets) ** 2).mean())


@pytest.mark.ray
def test_learns_continuous_bandit(ray_session):
    algo = _config().build_algo()
    try:
        while True:
            result = algo.train()
            steps = result["num_env_steps_sampled_lifetime"]
            greedy = _greedy_bandit_return(algo)
            if greedy > -0.01 or steps >= 3000:
                break
        # Greedy (explore=False) evaluation, not the noisy training episodes: with noise 0.1
        # even a perfect actor scores about -0.0095 on them.
        assert greedy > -0.01, (steps, greedy)
        assert steps <= 3000
        learners = result["learners"]["__all_modules__"]
        assert learners["num_gradient_steps"] == steps - 64
    finally:
        algo.stop()


@pytest.mark.ray
def test_remote_env_runner_episode_path_and_checkpoint(ray_session, tmp_path):
    # A gymnasium id: a class defined in this test file is not importable on remote runners.
    config = _config("Pendulum-v1", replay_path="episode").env_runners(num_env_runners=1)
    algo = config.build_algo()
    try:
        result = algo.train()
        assert "env_runners" in result and result["num_env_steps_sampled_lifetime"] >= 100
    finally:
        algo.stop()

    config = _config("Pendulum-v1", checkpoint_replay_buffer=True).env_runners(num_env_runners=1)
    algo = config.build_algo()
    try:
        result = algo.train()
        assert "env_runners" in result
        assert result["learners"]["__all_modules__"]["num_gradient_steps"] > 0
        algo.save_to_path(str(tmp_path))
        weights = algo.get_module().state_dict()
        size = len(algo.ring_buffer)
    finally:
        algo.stop()
    restored = type(algo).from_checkpoint(str(tmp_path))
    try:
        for key, value in restored.get_module().state_dict().items():
            torch.testing.assert_close(value, weights[key])
        learner_state = restored.learner_group.get_state()
        assert len(restored.ring_buffer) == size > 0
        assert learner_state is not None
        restored.train()
    finally:
        restored.stop()


@pytest.mark.ray
def test_two_learners_keep_equal_weights(ray_session):
    config = (
        _config("Pendulum-v1", train_batch_size_per_learner=16)
        .learners(num_learners=2)
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    algo = config.build_algo()
    try:
        result = algo.train()
        # Summed over both learners: each took one step per env step past the warm-up.
        steps = result["num_env_steps_sampled_lifetime"]
        assert result["learners"]["__all_modules__"]["num_gradient_steps"] == 2 * (steps - 64)
        states = [
            r.get()
            for r in algo.learner_group.foreach_learner(
                lambda lrn: {
                    k: v.detach().cpu().numpy()
                    for k, v in lrn.module["default_policy"].unwrapped().state_dict().items()
                }
            )
        ]
        assert all(np.array_equal(states[0][k], states[1][k]) for k in states[0])
    finally:
        algo.stop()
