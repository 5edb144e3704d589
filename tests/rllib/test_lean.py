"""The speed layer's pipelines and module forward (rllib_fair.accel) match RLlib's exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.accel.module import direct_mlp_plan, direct_train_plan
from rllib_fair.accel.pipelines import (
    FusedDiscreteActionsToEnv,
    FusedFlatObsToModule,
    LeanEnvToModulePipeline,
    LeanModuleToEnvPipeline,
)
from rllib_fair.algorithms import get_config_class


def _algo(name: str, connector_metrics: bool, num_envs: int = 1, env: str = "fair/Lending-v0"):
    # short Lending episodes: sub-envs end and reset inside the sampled steps
    env_config = {"max_steps": 97} if env == "fair/Lending-v0" else {}
    cfg = (
        get_config_class(name)()
        .environment(env, env_config=env_config)
        .env_runners(num_env_runners=0, num_envs_per_env_runner=num_envs)
        .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16, 16]})
        .reporting(connector_metrics=connector_metrics)
        .debugging(seed=11)
    )
    return cfg.build_algo()


def _arrays(episodes) -> dict:
    keys = ("obs", "actions", "rewards", "action_logp")
    out = {k: [] for k in keys}
    for ep in episodes:
        out["obs"].append(np.asarray(ep.get_observations()))
        out["actions"].append(np.asarray(ep.get_actions()))
        out["rewards"].append(np.asarray(ep.get_rewards()))
        out["action_logp"].append(np.asarray(ep.get_extra_model_outputs("action_logp")))
    return {k: np.concatenate(v) for k, v in out.items()}


@pytest.mark.ray
@pytest.mark.parametrize(
    ("name", "num_envs", "env"),
    [
        ("PPO", 1, "fair/Lending-v0"),
        ("POCAR", 1, "fair/Lending-v0"),
        ("PPO", 3, "fair/Lending-v0"),  # several sub-envs: per-env order and resets
        ("SELLF", 2, "fair/LendingFICO-v0"),  # an extra module output (label prob)
        ("PPO", 1, "fair/Attention-v0"),  # Box action: lean, not fused
    ],
)
def test_same_samples_and_same_training_as_rllibs_pipeline(ray_session, name, num_envs, env):
    runs = {}
    for connector_metrics in (False, True):
        algo = _algo(name, connector_metrics, num_envs, env)
        try:
            runner = algo.env_runner
            lean = not connector_metrics
            fused = lean and env != "fair/Attention-v0"
            assert isinstance(runner._env_to_module, LeanEnvToModulePipeline) is lean
            assert isinstance(runner._module_to_env, LeanModuleToEnvPipeline) is lean
            assert isinstance(runner._env_to_module, FusedFlatObsToModule) is fused
            assert isinstance(runner._module_to_env, FusedDiscreteActionsToEnv) is fused
            result = algo.train()
            episodes = runner.sample(num_timesteps=300, explore=True)
            weights = algo.get_module().state_dict()
            timers = {
                k for k in result["env_runners"] if k.endswith("_connector")
            }  # env_to_module_connector / module_to_env_connector: per-piece timers
            runs[connector_metrics] = (_arrays(episodes), weights, timers)
        finally:
            algo.stop()
    (lean_data, lean_w, lean_timers), (rl_data, rl_w, rl_timers) = runs[False], runs[True]
    for key in lean_data:
        np.testing.assert_array_equal(lean_data[key], rl_data[key], err_msg=key)
        assert lean_data[key].dtype == rl_data[key].dtype, key
    for key in lean_w:  # one training iteration from the same batch: same weights
        assert torch.equal(torch.as_tensor(lean_w[key]), torch.as_tensor(rl_w[key])), key
    # only RLlib's path writes the per-connector timers
    assert rl_timers == {"env_to_module_connector", "module_to_env_connector"}
    assert not lean_timers


def test_cached_train_mode_keeps_every_submodule_consistent():
    from rllib_fair.algorithms.ppo.torch.ppo_torch_rl_module import FairPPOTorchRLModule
    from rllib_fair.envs.lending import LendingEnv

    env = LendingEnv()
    module = FairPPOTorchRLModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config={"fcnet_hiddens": [8], "weight_init": "rllib"},
    )
    obs = torch.as_tensor(np.stack([env.observation_space.sample() for _ in range(4)]))
    for _ in range(2):
        module.forward_exploration({"obs": obs})
        assert module.training and all(m.training for m in module.modules())
        module.eval()
        assert not any(m.training for m in module.modules())
        module.forward_train({"obs": obs})
        assert all(m.training for m in module.modules())
    inference = FairPPOTorchRLModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        inference_only=True,
        model_config={"fcnet_hiddens": [8], "weight_init": "rllib"},
    )
    assert not any(m.training for m in inference.modules())  # env runners: eval from setup


@pytest.mark.ray
@pytest.mark.parametrize("num_envs", [1, 4])
def test_native_vector_env_samples_and_trains_as_sync_vector_env(ray_session, num_envs):
    """fair/Lending-v0's native vector env: RLlib gets the same episodes, same weights."""
    from rllib_fair.envs.lending_vector import LendingVectorEnv

    runs = {}
    for native in (True, False):
        cfg = (
            get_config_class("POCAR")()
            .environment("fair/Lending-v0", env_config={"max_steps": 120})
            .env_runners(
                num_env_runners=0, num_envs_per_env_runner=num_envs, native_vector_env=native
            )
            .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
            .rl_module(model_config={"fcnet_hiddens": [16, 16]})
            .debugging(seed=2)
        )
        algo = cfg.build_algo()
        try:
            runner = algo.env_runner
            assert isinstance(runner.env.unwrapped, LendingVectorEnv) is native
            result = algo.train()
            episodes = runner.sample(num_timesteps=400, explore=True)
            infos = [ep.get_infos()[-1]["fairness"] for ep in episodes]
            runs[native] = (_arrays(episodes), algo.get_module().state_dict(), infos, result)
        finally:
            algo.stop()
    (n_data, n_w, n_inf, n_res), (s_data, s_w, s_inf, s_res) = runs[True], runs[False]
    for key in s_data:
        np.testing.assert_array_equal(n_data[key], s_data[key], err_msg=key)
    for a, b in zip(n_inf, s_inf, strict=True):
        np.testing.assert_array_equal(a, b)
    for key in s_w:
        assert torch.equal(torch.as_tensor(n_w[key]), torch.as_tensor(s_w[key])), key
    assert n_res["fairness"] == s_res["fairness"]


@pytest.mark.parametrize("share", [True, False])
@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("inference_only", [True, False])
def test_direct_forward_equals_rllibs_nested_forward(share, activation, inference_only):
    from rllib_fair.algorithms.ppo.torch.ppo_torch_rl_module import FairPPOTorchRLModule
    from rllib_fair.envs.lending import LendingEnv

    env = LendingEnv()
    module = FairPPOTorchRLModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        inference_only=inference_only,
        model_config={
            "fcnet_hiddens": [32, 16],
            "fcnet_activation": activation,
            "vf_share_layers": share,
            "weight_init": "orthogonal",
        },
    )
    plan = direct_mlp_plan(module)
    assert plan is not False and len(plan) == 5  # 2 hidden layers + 2 activations + logits
    obs = torch.as_tensor(np.stack([env.observation_space.sample() for _ in range(7)]))
    for forward in (module.forward_exploration, module.forward_inference):
        direct = forward({"obs": obs})["action_dist_inputs"]
        module._direct_plan = False  # RLlib's nested path
        nested = forward({"obs": obs})["action_dist_inputs"]
        module._direct_plan = None
        assert torch.equal(direct, nested)
    # a forward hook anywhere on the path: RLlib's path
    module._direct_plan = None
    handle = module.pi.net.mlp[0].register_forward_hook(lambda *a: None)
    assert direct_mlp_plan(module) is False
    handle.remove()


@pytest.mark.parametrize("share", [True, False])
@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_direct_train_forward_equals_rllibs_bit_for_bit(share, activation):
    """forward_train and compute_values, their outputs and their gradients, as RLlib's."""
    from rllib_fair.algorithms.ppo.torch.ppo_torch_rl_module import FairPPOTorchRLModule
    from rllib_fair.envs.lending import LendingEnv

    env = LendingEnv()
    torch.manual_seed(3)
    module = FairPPOTorchRLModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config={
            "fcnet_hiddens": [32, 16],
            "fcnet_activation": activation,
            "vf_share_layers": share,
        },
    )
    actor, critic, pi, vf = direct_train_plan(module)
    assert (critic is None) == share and len(actor) == 4 and len(pi) == len(vf) == 1
    obs = torch.as_tensor(np.stack([env.observation_space.sample() for _ in range(9)]))
    batch = {"obs": obs}

    def run(direct: bool):
        module._train_plan = None if direct else False
        module.zero_grad(set_to_none=True)
        out = module.forward_train(batch)
        values = module.compute_values(batch, embeddings=out["embeddings"])
        values_alone = module.compute_values(batch)
        loss = (out["action_dist_inputs"] ** 2).sum() + values.sum() + 0.5 * values_alone.sum()
        loss.backward()
        grads = {n: p.grad.clone() for n, p in module.named_parameters()}
        return out, values, values_alone, grads

    direct, nested = run(True), run(False)
    for key in ("embeddings", "action_dist_inputs"):
        assert torch.equal(direct[0][key], nested[0][key]), key
    assert torch.equal(direct[1], nested[1]) and torch.equal(direct[2], nested[2])
    assert direct[3].keys() == nested[3].keys()
    for name in nested[3]:
        assert torch.equal(direct[3][name], nested[3][name]), name
    # an inference-only copy has no critic: the train path falls back to RLlib's
    runner_copy = FairPPOTorchRLModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        inference_only=True,
        model_config={"fcnet_hiddens": [8], "vf_share_layers": share},
    )
    assert direct_train_plan(runner_copy)[3] is None


def test_direct_plans_refuse_a_clipped_log_std_head():
    """Box actions: RLlib clips the Gaussian head's log-stds, so its nested path runs."""
    import gymnasium as gym

    from rllib_fair.algorithms.ppo.torch.ppo_torch_rl_module import FairPPOTorchRLModule

    module = FairPPOTorchRLModule(
        observation_space=gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
        action_space=gym.spaces.Box(0.0, 1.0, (2,), np.float32),
        model_config={"fcnet_hiddens": [8]},
    )
    assert module.pi.clip_log_std
    assert direct_train_plan(module) is False
    obs = torch.zeros(2, 3)
    assert module.forward_exploration({"obs": obs})["action_dist_inputs"].shape == (2, 4)


def test_sellf_sampling_forward_predictor_equals_nested():
    """SELLF's phi in the sampling forward, layer by layer, equals its nn.Sequential."""
    from rllib_fair.algorithms.sellf.torch.sellf_torch_rl_module import SELLFTorchRLModule
    from rllib_fair.envs.lending import LendingEnv

    env = LendingEnv()
    module = SELLFTorchRLModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        inference_only=True,
        model_config={"fcnet_hiddens": [16], "predictor_hiddens": [8]},
    )
    obs = torch.as_tensor(np.stack([env.observation_space.sample() for _ in range(5)]))
    direct = module.forward_exploration({"obs": obs})
    assert module._predictor_plan and len(module._predictor_plan) == 3
    module._predictor_plan = module._direct_plan = False
    nested = module.forward_exploration({"obs": obs})
    for key in nested:
        assert torch.equal(direct[key], nested[key]), key


def test_elbertpo_fair_critic_layer_by_layer_equals_nested():
    """ELBERT-PO's supply/demand critic, layer by layer: same values and gradients."""
    from rllib_fair.algorithms.elbertpo.torch.elbertpo_torch_rl_module import (
        ELBERTPOTorchRLModule,
    )
    from rllib_fair.envs.lending import LendingEnv

    env = LendingEnv()
    torch.manual_seed(3)
    module = ELBERTPOTorchRLModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        inference_only=False,
        model_config={"fcnet_hiddens": [16, 8], "fair_value_streams": 4},
    )
    obs = torch.as_tensor(np.stack([env.observation_space.sample() for _ in range(6)]))
    runs = []
    for plan in (None, False):  # None: built on the call (layer by layer); False: nested
        module._fair_vf_plan = plan
        module.zero_grad(set_to_none=True)
        values = module.compute_fair_values({"obs": obs})
        assert bool(module._fair_vf_plan) is (plan is None)  # 5 steps, or nested
        (values**2).sum().backward()
        grads = [p.grad.clone() for p in module.fair_vf.parameters()]
        runs.append((values.detach(), grads))
    assert module._fair_vf_plan is False and values.shape == (6, 4)
    (direct, direct_grads), (nested, nested_grads) = runs
    assert torch.equal(direct, nested)
    for a, b in zip(direct_grads, nested_grads, strict=True):
        assert torch.equal(a, b)
