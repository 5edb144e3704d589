"""The speed layer's learner path (rllib_fair.accel.learner) trains exactly as RLlib's does."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.minibatch_utils import MiniBatchCyclicIterator
from ray.rllib.utils.torch_utils import clip_gradients

import rllib_fair  # noqa: F401  (registers the fair/* ids)
from rllib_fair.accel.learner import LeanLearnerMixin, TensorMinibatchCycler
from rllib_fair.algorithms import get_config_class

# every PPO-family learner gets the lean path
PPO_FAMILY = ["PPO", "RPPO", "POCAR", "ELBERTPO", "SELLF", "PPOC", "PPOCb", "FPPOL"]


@pytest.mark.parametrize("name", PPO_FAMILY)
def test_every_ppo_family_learner_has_the_lean_path(name):
    cfg = get_config_class(name)()
    assert issubclass(cfg.learner_class, LeanLearnerMixin)
    assert issubclass(cfg.learner_class, cfg.get_default_learner_class())
    assert cfg.learner_class is cfg.learner_class  # one class per process
    assert cfg.lean_learner is True and cfg.optimizer_impl == "foreach"
    assert not issubclass(cfg.accel(learner=False).learner_class, LeanLearnerMixin)
    assert not issubclass(cfg.accel(learner=True, enabled=False).learner_class, LeanLearnerMixin)


@pytest.mark.parametrize(
    ("n", "size", "epochs", "shuffle", "total"),
    [
        (2049, 64, 10, True, 0),
        (2050, 64, 3, True, 0),
        (128, 64, 2, False, 0),
        (100, 30, 4, True, 0),
        (64, 64, 3, True, 0),
        (50, 64, 2, True, 0),
        (70, 16, 1, True, 9),
    ],
)
def test_cycler_yields_rllibs_minibatches(n, size, epochs, shuffle, total):
    """Same rows in the same order as RLlib's iterator, including the shuffles' RNG draws."""
    cols = {"a": torch.arange(n), "b": torch.arange(n, dtype=torch.float32)[:, None] * 2}
    ref_batch = MultiAgentBatch({"p": SampleBatch({k: v.clone() for k, v in cols.items()})}, n)
    np.random.seed(3)  # noqa: NPY002 (RLlib shuffles with the global generator)
    ref = [
        mb.policy_batches["p"]["a"].clone()
        for mb in MiniBatchCyclicIterator(
            ref_batch,
            num_epochs=epochs,
            minibatch_size=size,
            shuffle_batch_per_epoch=shuffle,
            num_total_minibatches=total,
        )
    ]
    ref_state = np.random.rand()  # noqa: NPY002
    np.random.seed(3)  # noqa: NPY002 (RLlib shuffles with the global generator)
    lasts = []
    cycler = TensorMinibatchCycler(
        "p",
        cols,
        num_epochs=epochs,
        minibatch_size=size,
        shuffle=shuffle,
        num_total_minibatches=total,
        env_steps=n,
        on_last=lambda: lasts.append(True),
    )
    ours = []
    for mb in cycler:
        assert mb.env_steps() == n
        b = mb.policy_batches["p"]
        assert torch.equal(b["b"][:, 0], b["a"].float() * 2)  # rows stay aligned
        ours.append(b["a"])
    assert len(ours) == len(ref) == len(cycler)
    for i, (x, y) in enumerate(zip(ours, ref, strict=True)):
        assert torch.equal(x, y), i
    assert np.random.rand() == ref_state  # noqa: NPY002  # the same number of global RNG draws
    assert lasts == [True]


def test_clip_matches_rllibs_clip_gradients_bit_for_bit():
    gen = torch.Generator().manual_seed(0)
    shapes = [(64, 6), (64,), (64, 64), (64,), (2, 64), (2,)]
    for scale in (1e-3, 1.0, 50.0):
        grads = {i: torch.randn(s, generator=gen) * scale for i, s in enumerate(shapes)}
        ref = {k: v.clone() for k, v in grads.items()}
        ref_norm = clip_gradients(ref, grad_clip=0.5, grad_clip_by="global_norm")
        holder = LeanLearnerMixin()
        norm = holder._lean_clip(grads, grad_clip=0.5, grad_clip_by="global_norm")
        assert torch.equal(norm, ref_norm)
        assert holder._lean_grads_finite is True
        for k in grads:
            assert torch.equal(grads[k], ref[k]), (scale, k)
    # finite per-tensor norms (about 1.4e19) whose total overflows float32
    grads = {i: torch.full((2,), 1e19) for i in range(6)}
    ref = {k: v.clone() for k, v in grads.items()}
    ref_norm = clip_gradients(ref, grad_clip=0.5, grad_clip_by="global_norm")
    norm = holder._lean_clip(grads, grad_clip=0.5, grad_clip_by="global_norm")
    assert torch.equal(norm, ref_norm) and float(norm) == 10e8
    assert holder._lean_grads_finite is True
    assert all(torch.equal(grads[k], ref[k]) for k in grads)
    grads[2][0] = float("nan")
    holder._lean_clip(grads, grad_clip=0.5, grad_clip_by="global_norm")
    assert holder._lean_grads_finite is False


def _train(name: str, lean: bool, impl: str, iters: int = 2, **training):
    cfg = (
        get_config_class(name)()
        .environment("fair/Lending-v0", env_config={"max_steps": 300})
        .env_runners(num_env_runners=0)
        .training(
            train_batch_size_per_learner=256,
            minibatch_size=64,
            num_epochs=3,
            grad_clip=0.5,
            optimizer_impl=impl,
            **training,
        )
        .accel(learner=lean)
        .rl_module(model_config={"fcnet_hiddens": [16, 16]})
        .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=0)
        .debugging(seed=5)
    )
    algo = cfg.build_algo()
    try:
        results = [algo.train() for _ in range(iters)]
        return algo.get_module().state_dict(), results
    finally:
        algo.stop()


def _learner_stats(result) -> dict:
    """The learner's numbers that do not depend on wall time."""
    out = {}
    for module_id, stats in result["learners"].items():
        for key, value in stats.items():
            if "throughput" in key or "timer" in key or "lr" == key:
                continue
            if isinstance(value, (int, float, np.floating, np.integer)):
                out[(module_id, key)] = float(value)
    return out


@pytest.mark.ray
@pytest.mark.parametrize("name", ["PPO", "POCAR", "ELBERTPO", "SELLF"])
def test_lean_learner_trains_bit_identically_to_rllibs_loop(ray_session, name):
    """Same weights and the same reported learner metrics as RLlib's update loop.

    The lean loop computes the only-logged statistics (PPO's, ELBERT-PO's, SELLF's) on
    its last minibatch alone; RLlib's loop computes them on every minibatch."""
    extra = {"use_kl_loss": True} if name == "PPO" else {}  # KL coeff reads the metrics
    w_lean, r_lean = _train(name, True, "foreach", **extra)
    w_rl, r_rl = _train(name, False, "rllib", **extra)
    for key in w_rl:
        assert torch.equal(torch.as_tensor(w_lean[key]), torch.as_tensor(w_rl[key])), key
    for res_lean, res_rl in zip(r_lean, r_rl, strict=True):
        lean, rl = _learner_stats(res_lean), _learner_stats(res_rl)
        assert lean.keys() == rl.keys()
        for key in rl:
            assert lean[key] == pytest.approx(rl[key], rel=1e-6, abs=1e-9, nan_ok=True), key


@pytest.mark.ray
def test_fused_adam_trains_close_to_rllibs(ray_session):
    w_fused, _ = _train("PPO", True, "fused", iters=1)
    w_rl, _ = _train("PPO", False, "rllib", iters=1)
    diffs = [
        (torch.as_tensor(w_fused[k]) - torch.as_tensor(w_rl[k])).abs().max().item() for k in w_rl
    ]
    assert 0 < max(diffs) < 1e-4  # last-bit differences, not a different algorithm


@pytest.mark.ray
def test_non_finite_gradients_take_rllibs_path(ray_session):
    """A NaN gradient is zeroed as RLlib does, never stepped into the weights."""
    cfg = (
        get_config_class("PPO")()
        .environment("fair/Lending-v0", env_config={"max_steps": 300})
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1, grad_clip=None)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=1)
    )
    algo = cfg.build_algo()
    try:
        learner = algo.learner_group._learner
        pid, param = next(iter(learner._params.items()))
        grads = {p: torch.zeros_like(v) for p, v in learner._params.items()}
        grads[pid] = torch.full_like(param, float("nan"))
        before = {p: v.detach().clone() for p, v in learner._params.items()}
        learner._lean_active = True
        try:
            learner.apply_gradients(grads)
        finally:
            learner._lean_active = False
        assert torch.equal(learner._params[pid].grad, torch.zeros_like(param))  # nan_to_num
        for p, v in learner._params.items():
            assert torch.isfinite(v).all() and v.shape == before[p].shape
    finally:
        algo.stop()


def test_bad_optimizer_impl_is_a_one_line_error():
    cfg = get_config_class("PPO")().environment("fair/Lending-v0").training(optimizer_impl="sgd")
    with pytest.raises(
        ValueError,
        match=r"optimizer_impl: 'sgd' is invalid; valid choices: "
        r"foreach, fused, rllib",
    ):
        cfg.validate()


def test_deferring_metrics_reduce_to_what_the_logger_gives():
    """window=1 records held back, every other record passed on as it came: same reduce."""
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    from rllib_fair.accel.learner import _DeferringMetrics

    def log(m, i):
        m.log_value(("p", "ema"), float(i))  # RLlib's default reduction (EMA)
        m.log_value(("p", "last"), float(i) * 2, window=1)
        m.log_value(("p", "sum"), i, reduce="sum")
        m.log_dict({"a": float(i), "b": {"c": -float(i)}}, key="p", window=1)
        m.log_value(("p", "lifetime"), 1, reduce="lifetime_sum", with_throughput=True)

    direct, behind = MetricsLogger(), MetricsLogger()
    proxy = _DeferringMetrics(behind)
    for i in range(5):
        log(direct, i)
        log(proxy, i)
    assert proxy._held  # the window-1 records are held back until read
    assert proxy.peek(("p", "last")) == 8.0  # any read writes them first
    proxy.flush()
    expected, got = direct.reduce(), behind.reduce()
    assert got.keys() == expected.keys()
    for key in ("ema", "last", "sum", "a", "lifetime"):
        assert got["p"][key].peek() == pytest.approx(expected["p"][key].peek()), key
    assert got["p"]["b"]["c"].peek() == expected["p"]["b"]["c"].peek() == -4.0


class _RecordingMetrics:
    """Stands in for the learner's MetricsLogger: keeps what the loss logs."""

    def __init__(self):
        self.records = []

    def log_dict(self, stats, *, key=None, **kwargs):
        for name, value in stats.items():
            self.records.append(((key, name), value, kwargs))

    def log_value(self, name, value, **kwargs):
        self.records.append((name, value, kwargs))


def _loss_and_grads(learner, loss_fn, batch):
    module = learner.module["default_policy"]
    module.zero_grad(set_to_none=True)
    learner.metrics = _RecordingMetrics()
    fwd_out = module.forward_train(batch)
    loss = loss_fn(module_id="default_policy", config=learner.config, batch=batch, fwd_out=fwd_out)
    loss.backward()
    grads = {n: p.grad.clone() for n, p in module.named_parameters() if p.grad is not None}
    return loss.detach(), grads, learner.metrics.records


@pytest.mark.parametrize("use_kl", [True, False])
@pytest.mark.parametrize("masked", ["all", "some", "none_column"])
@pytest.mark.parametrize("extreme", [False, True])
def test_lean_ppo_loss_is_rllibs_loss_bit_for_bit(use_kl, masked, extreme):
    """Loss, every gradient and every logged statistic equal RLlib's PPO loss exactly."""
    import gymnasium as gym
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
    from ray.rllib.core.columns import Columns
    from ray.rllib.evaluation.postprocessing import Postprocessing

    torch.manual_seed(0)
    cfg = (
        get_config_class("PPO")()
        .environment("fair/Lending-v0")
        .rl_module(model_config={"fcnet_hiddens": [16, 16]})
        .training(use_kl_loss=use_kl, kl_coeff=0.3, entropy_coeff=0.01, vf_clip_param=0.5)
    )
    env = gym.make("fair/Lending-v0")
    learner = cfg.build_learner(env=env)
    learner.build()
    n = 67
    gen = torch.Generator().manual_seed(1)
    obs = torch.as_tensor(np.stack([env.observation_space.sample() for _ in range(n)]))
    old_logits = torch.randn(n, 2, generator=gen)
    if extreme:  # probabilities that underflow to exactly 0 (the KL's inf / 0 cases)
        old_logits[:5] = torch.tensor([200.0, -200.0])
        with torch.no_grad():
            learner.module["default_policy"].pi.net.mlp[-1].bias.copy_(torch.tensor([0.0, 150.0]))
    batch = {
        Columns.OBS: obs.float(),
        Columns.ACTIONS: torch.randint(0, 2, (n,), generator=gen),
        Columns.ACTION_LOGP: -torch.rand(n, generator=gen),
        Columns.ACTION_DIST_INPUTS: old_logits,
        Postprocessing.ADVANTAGES: torch.randn(n, generator=gen),
        Postprocessing.VALUE_TARGETS: torch.randn(n, generator=gen),
    }
    if masked != "none_column":
        mask = torch.ones(n, dtype=torch.bool)
        if masked == "some":
            mask[[3, 40, 66]] = False
        batch[Columns.LOSS_MASK] = mask
    assert cfg.lean_learner
    lean = _loss_and_grads(learner, learner.compute_loss_for_module, batch)

    def rllib_loss(**kw):
        return PPOTorchLearner.compute_loss_for_module(learner, **kw)

    ref = _loss_and_grads(learner, rllib_loss, batch)
    assert torch.equal(lean[0], ref[0]) or (lean[0].isnan() and ref[0].isnan())
    assert lean[1].keys() == ref[1].keys() and lean[1]
    for name in ref[1]:
        assert torch.equal(lean[1][name], ref[1][name]), name
    assert [(k, kw) for k, _, kw in lean[2]] == [(k, kw) for k, _, kw in ref[2]]
    for (key, a, _), (_, b, _) in zip(lean[2], ref[2]):
        a, b = torch.as_tensor(a).detach(), torch.as_tensor(b).detach()
        assert torch.equal(a, b) or (a.isnan().all() and b.isnan().all()), key
