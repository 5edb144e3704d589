"""``weight_init``: the papers' orthogonal initialisation for every PPO-family algorithm."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.algorithms import get_config_class
from rllib_fair.algorithms.ppo.torch.ppo_torch_rl_module import HIDDEN_GAIN, apply_weight_init
from rllib_fair.envs.lending_fico import LendingFICOEnv

PPO_FAMILY = ["PPO", "RPPO", "POCAR", "ELBERTPO", "SELLF", "PPOC", "FPPOL"]


def _module(name: str, weight_init: str, seed: int = 0):
    cfg = get_config_class(name)().environment("fair/LendingFICO-v0")
    cfg.training(weight_init=weight_init).rl_module(
        model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"}
    )
    env = LendingFICOEnv()
    spec = cfg.get_default_rl_module_spec()
    spec.observation_space, spec.action_space = env.observation_space, env.action_space
    spec.model_config = cfg.model_config
    torch.manual_seed(seed)
    return spec.build(), env


def _accept_probs(module, env) -> np.ndarray:
    """P(accept) for the 20 one-hot (bin, group) states of FICO lending."""
    n = env.observation_space.shape[0]
    obs = []
    for b in range(10):
        for g in range(2):
            o = np.zeros(n, dtype=np.float32)
            o[b] = 1.0
            o[10 + g] = 1.0
            obs.append(o)
    with torch.no_grad():
        logits = module.forward_inference({Columns.OBS: torch.as_tensor(np.array(obs))})[
            Columns.ACTION_DIST_INPUTS
        ]
    return torch.softmax(logits, -1)[:, 1].numpy()


@pytest.mark.parametrize("name", PPO_FAMILY)
def test_orthogonal_initial_policy_is_uniform(name):
    module, env = _module(name, "orthogonal")
    probs = _accept_probs(module, env)
    # the SELLF reference code's initial policy accepts with 0.498-0.502 in every state
    assert np.all(np.abs(probs - 0.5) < 0.005), probs
    linears = [m for m in module.modules() if isinstance(m, torch.nn.Linear)]
    square = [m for m in linears if m.weight.shape == (64, 64)]
    assert square
    for layer in square:  # orthogonal with gain sqrt(2): W W^T = 2 I
        w = layer.weight.detach()
        assert torch.allclose(w @ w.T, HIDDEN_GAIN**2 * torch.eye(64), atol=1e-4)
    assert all(float(m.bias.detach().abs().max()) == 0.0 for m in linears)
    # output gains: the policy's 0.01, the value function's 1 (singular values = gain)
    pi_out = [m for m in module.pi.modules() if isinstance(m, torch.nn.Linear)][-1]
    vf_out = [m for m in module.vf.modules() if isinstance(m, torch.nn.Linear)][-1]
    assert torch.linalg.svdvals(pi_out.weight.detach()) == pytest.approx([0.01, 0.01], abs=1e-6)
    assert torch.linalg.svdvals(vf_out.weight.detach()) == pytest.approx([1.0], abs=1e-6)


def test_rllib_default_is_unchanged_and_not_uniform():
    """Without the option the module is RLlib's (same draws as DefaultPPOTorchRLModule)."""
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )

    module, env = _module("POCAR", "rllib")
    probs = _accept_probs(module, env)
    assert np.abs(probs - 0.5).max() > 0.02, probs  # exp. E: up to 0.59 for seed 0
    spec = get_config_class("POCAR")().environment("fair/LendingFICO-v0")
    spec = spec.rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})
    torch.manual_seed(0)
    plain = DefaultPPOTorchRLModule(
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config=spec.model_config,
    )
    for a, b in zip(module.state_dict().values(), plain.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_extra_heads_get_their_output_gain():
    sellf, _ = _module("SELLF", "orthogonal")
    (phi,) = [m for m in sellf.predictor.modules() if isinstance(m, torch.nn.Linear)]
    assert float(torch.linalg.svdvals(phi.weight.detach())[0]) == pytest.approx(0.01, abs=1e-6)
    elbert, _ = _module("ELBERTPO", "orthogonal")
    out = [m for m in elbert.fair_vf.modules() if isinstance(m, torch.nn.Linear)][-1]
    svals = torch.linalg.svdvals(out.weight.detach())
    assert svals.numpy() == pytest.approx(np.ones(len(svals)), abs=1e-5)


def test_bad_value_is_one_line():
    cfg = get_config_class("POCAR")().environment("fair/LendingFICO-v0")
    cfg.training(weight_init="xavier")
    with pytest.raises(ValueError) as err:
        cfg.validate()
    msg = str(err.value)
    assert "weight_init: 'xavier' is invalid" in msg and "orthogonal" in msg and "\n" not in msg
    with pytest.raises(ValueError, match="weight_init: 'he'"):
        apply_weight_init(torch.nn.Linear(2, 2), "he", {})


def test_yaml_key_reaches_the_module(tmp_path):
    from rllib_fair.cli.experiment import load_experiments, validate_experiment

    path = tmp_path / "x.yaml"
    path.write_text(
        "x:\n  run: POCAR\n  env: fair/LendingFICO-v0\n  stop: {training_iteration: 1}\n"
        "  config: {weight_init: orthogonal, model_config: {fcnet_hiddens: [64, 64]}}\n"
    )
    ((name, spec),) = load_experiments(path).items()
    exp = validate_experiment(name, spec)
    assert exp.config.weight_init == "orthogonal"
    assert exp.config.model_config["weight_init"] == "orthogonal"


@pytest.mark.ray
def test_env_runner_samples_with_the_learner_weights(ray_session):
    cfg = (
        get_config_class("PPO")()
        .environment("fair/LendingFICO-v0")
        .training(weight_init="orthogonal", train_batch_size_per_learner=64, minibatch_size=32)
        .rl_module(model_config={"fcnet_hiddens": [16, 16]})
        .env_runners(num_env_runners=0)
        .debugging(seed=3)
    )
    algo = cfg.build_algo()
    try:
        learner = algo.learner_group.get_state(components=["learner/rl_module"])["learner"]
        runner = algo.env_runner.module.state_dict()
        for key, value in runner.items():
            ref = learner["rl_module"]["default_policy"][key]
            assert np.allclose(np.asarray(value.detach()), np.asarray(ref)), key
        logits = algo.env_runner.module.pi.net.mlp[-1].weight
        assert math.isclose(float(torch.linalg.svdvals(logits.detach())[0]), 0.01, abs_tol=1e-6)
    finally:
        algo.stop()
