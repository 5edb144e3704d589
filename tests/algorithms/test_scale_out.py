"""Every registered algorithm scales out: data-parallel learners, GPU learners, small syncs.

Parametrised over the algorithm registry, so an algorithm added later is checked
without touching this file (its ``smoke_env`` in :mod:`rllib_fair.algorithms` says
where it trains). Registered variants (``variant_of``: the same classes with another
default) are covered by their base name.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from rllib_fair.algorithms import ALGORITHMS, base_algorithms, get_config_class
from rllib_fair.cli.runner import flatten
from rllib_fair.rllib.distributed import replicated_state

pytestmark = pytest.mark.ray


def smoke_config(name: str):
    cfg = (
        get_config_class(name)()
        .environment(ALGORITHMS[name].smoke_env, env_config={"max_steps": 300})
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )
    if hasattr(cfg, "random_warmup_steps"):
        # off-policy (TD3 family): iterations hold 100 env steps, so gradient steps start
        # in the second iteration instead of after the default 300-step warm-up
        cfg.training(num_steps_sampled_before_learning_starts=100, random_warmup_steps=100)
    return cfg


def _assert_same(a, b, path="state"):
    """Exact equality of two nested learner states (dicts, lists, arrays, numbers)."""
    if isinstance(a, dict):
        assert set(a) == set(b), f"{path}: keys differ: {set(a) ^ set(b)}"
        for k in a:
            _assert_same(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{path}[{i}]")
    elif hasattr(a, "shape") or hasattr(b, "shape"):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=path)
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


@pytest.mark.parametrize("name", base_algorithms())
def test_two_ddp_learners_train_and_stay_equal(ray_session, name):
    """num_learners=2 on CPU: trains, reports fairness, and both learners end equal."""
    algo = smoke_config(name).learners(num_learners=2).build_algo()
    try:
        for _ in range(2):
            result = algo.train()
            assert "env_runners" in result, "an env runner crashed (RLlib swallows it)"
        flat = flatten(result)
        gaps = [v for k, v in flat.items() if k.startswith("fairness/") and k.endswith("/bias")]
        assert gaps and all(math.isfinite(g) for g in gaps)
        states = [
            r.get() if hasattr(r, "get") else r
            for r in algo.learner_group.foreach_learner(replicated_state)
        ]
        assert len(states) == 2
        _assert_same(states[0], states[1])
        if not ALGORITHMS[name].learns:  # a baseline that only samples (no learner update)
            assert flat["env_runners/num_env_steps_sampled_lifetime"] >= 2 * 200
            return
        assert flat["learners/__all_modules__/num_env_steps_trained_lifetime"] >= 2 * 400
        weights = states[0]["rl_module"]["default_policy"]
        assert any(np.abs(np.asarray(v)).sum() > 0 for v in weights.values())
    finally:
        algo.stop()


@pytest.mark.parametrize("name", base_algorithms())
def test_weight_sync_carries_module_weights_only(ray_session, name):
    """What env runners get each iteration is the inference module, not learner state."""
    algo = smoke_config(name).build_algo()
    try:
        algo.train()
        learner = algo.learner_group._learner
        if hasattr(learner, "remember"):  # SELLF: fill the memory like a long run would
            rng = np.random.default_rng(0)
            dim = int(np.prod(learner.module["default_policy"].observation_space.shape))
            learner.remember(rng.random((20_000, dim)), np.zeros(20_000), np.ones(20_000))
        # exactly the call EnvRunnerGroup.sync_weights makes on a LearnerGroup
        synced = algo.learner_group.get_state(
            components=["learner/rl_module/default_policy"], inference_only=True
        )
        module_only = learner.module["default_policy"].get_state(inference_only=True)
        size = len(pickle.dumps(synced))
        assert size <= 1.5 * len(pickle.dumps(module_only)) + 4096, size
    finally:
        algo.stop()


@pytest.mark.gpu
@pytest.mark.parametrize("remote", [False, True], ids=["local", "remote"])
@pytest.mark.parametrize("name", base_algorithms())
def test_gpu_learner(ray_session_gpu, name, remote):
    """One GPU learner (local, or one remote learner actor): trains with finite metrics."""
    cfg = smoke_config(name).learners(num_learners=1 if remote else 0, num_gpus_per_learner=1)
    algo = cfg.build_algo()
    try:
        for _ in range(2):
            result = algo.train()
            assert "env_runners" in result

        def learner_devices(learner) -> tuple[str, list[str]]:
            # the learner's device and the devices of its module's parameters and buffers
            # (none for L-UCBFair, the myopic baselines and Uncertainty: they decide from
            # numpy state their Algorithm keeps, so the learner's device is what a GPU
            # learner changes for them); nested, so remote learners get it by value
            module = learner.module["default_policy"].unwrapped()
            tensors = [*module.parameters(), *module.buffers()]
            return str(learner.device), sorted({str(t.device) for t in tensors})

        placed = algo.learner_group.foreach_learner(learner_devices)
        placed = [p.get() if hasattr(p, "get") else p for p in placed]
        assert placed, "no learner answered"
        for learner_device, tensor_devices in placed:
            assert learner_device.startswith("cuda"), placed
            # parameters and buffers (none for the numpy algorithms' no-op learner)
            assert all(d.startswith("cuda") for d in tensor_devices), placed
        for key, value in flatten(result.get("fairness", {})).items():
            assert math.isfinite(value), key
    finally:
        algo.stop()
