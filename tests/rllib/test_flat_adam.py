"""``FlatAdam`` computes what torch's Adam computes, bit for bit, on one buffer.

Compared bitwise (the float bits, so a -0.0 against a +0.0 counts) with torch's
multi-tensor and single-tensor Adam over many steps, on the PPO family's layer shapes
and odd sizes (an element's place in a buffer decides whether torch's vectorised or
scalar loop handles it), through checkpoints and every fallback.
"""

from __future__ import annotations

import copy

import pytest
import torch

from rllib_fair.accel.flat_adam import FlatAdam

SHAPES = [(64, 7), (64,), (64, 64), (64,), (2, 64), (2,), (1, 64), (1,), (3,), (17, 5)]


def params(dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(s, generator=g, dtype=dtype)) for s in SHAPES]


def grads_stream(n_steps, dtype=torch.float32, seed=1):
    """Gradients over six orders of magnitude, with -0.0 and +0.0 blocks."""
    g = torch.Generator().manual_seed(seed)
    for step in range(n_steps):
        out = []
        for s in SHAPES:
            scale = 10.0 ** torch.randint(-6, 2, (1,), generator=g).item()
            out.append(torch.randn(s, generator=g, dtype=dtype) * scale)
        if step % 7 == 0:
            out[3] = -torch.zeros(SHAPES[3], dtype=dtype)
        if step % 5 == 0:
            out[5] = torch.zeros(SHAPES[5], dtype=dtype)
        yield out


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().view(torch.int64 if t.dtype == torch.float64 else torch.int32)


def assert_same(ps, qs, opt_p, opt_q):
    for p, q in zip(ps, qs, strict=True):
        assert torch.equal(bits(p), bits(q))
        sp, sq = opt_p.state[p], opt_q.state[q]
        assert torch.equal(sp["step"], sq["step"])
        assert torch.equal(bits(sp["exp_avg"]), bits(sq["exp_avg"]))
        assert torch.equal(bits(sp["exp_avg_sq"]), bits(sq["exp_avg_sq"]))


def step_all(pairs, grads):
    for ps, opt in pairs:
        for p, g in zip(ps, grads):
            p.grad = None if g is None else g.clone()
        opt.step()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lr": 3e-4},
        {"lr": 3e-4, "eps": 1e-5},
        {"lr": 1e-3, "betas": (0.8, 0.95)},
        {"lr": 2.5e-4, "dtype": torch.float64},
    ],
)
def test_flat_adam_is_torchs_adam_bit_for_bit(kwargs):
    dtype = kwargs.pop("dtype", torch.float32)
    a, b, c = params(dtype), params(dtype), params(dtype)
    foreach = torch.optim.Adam(a, foreach=True, **kwargs)
    flat = FlatAdam(b, **kwargs)
    single = torch.optim.Adam(c, foreach=False, **kwargs)
    for grads in grads_stream(300, dtype):
        step_all([(a, foreach), (b, flat), (c, single)], grads)
    assert flat._flat[0] is not None  # the flat path ran
    assert_same(a, b, foreach, flat)
    assert_same(c, b, single, flat)
    # the parameters are views into one buffer
    base = flat._flat[0].flat_param
    assert all(p.untyped_storage().data_ptr() == base.untyped_storage().data_ptr() for p in b)


def test_checkpoints_load_across_torchs_adam_and_flat_adam():
    """``state_dict`` has torch's layout: a run continued in the other class after a
    save and load equals one that never stopped."""
    ref, ref_opt = (ps := params()), torch.optim.Adam(ps, foreach=True, lr=3e-4)
    x = params()
    x_opt = FlatAdam(x, lr=3e-4)
    stream = list(grads_stream(60))
    for grads in stream[:30]:
        step_all([(ref, ref_opt), (x, x_opt)], grads)
    # FlatAdam -> torch's Adam
    y = params()
    with torch.no_grad():
        for p, q in zip(y, x):
            p.copy_(q)
    y_opt = torch.optim.Adam(y, foreach=True, lr=3e-4)
    y_opt.load_state_dict(copy.deepcopy(x_opt.state_dict()))  # as a checkpoint would
    # torch's Adam -> FlatAdam (rebuilt from the loaded state on its next step)
    z = params()
    with torch.no_grad():
        for p, q in zip(z, ref):
            p.copy_(q)
    z_opt = FlatAdam(z, lr=3e-4)
    z_opt.load_state_dict(copy.deepcopy(ref_opt.state_dict()))
    for grads in stream[30:]:
        step_all([(ref, ref_opt), (x, x_opt), (y, y_opt), (z, z_opt)], grads)
    for other, opt in ((x, x_opt), (y, y_opt), (z, z_opt)):
        assert_same(ref, other, ref_opt, opt)


def test_fallbacks_keep_torchs_numbers():
    """A parameter without a gradient (its step counter stays behind), weight decay and
    a module whose storage was replaced all take torch's path or a rebuild."""
    ref, flat_ps = params(), params()
    ref_opt = torch.optim.Adam(ref, foreach=True, lr=1e-3)
    flat_opt = FlatAdam(flat_ps, lr=1e-3)
    stream = list(grads_stream(40))
    for i, grads in enumerate(stream):
        if 10 <= i < 15:
            grads = [None if j == 2 else g for j, g in enumerate(grads)]
        if i == 25:  # what .to(device) does: new storage for every parameter
            with torch.no_grad():
                for p in flat_ps:
                    p.data = p.data.clone()
        step_all([(ref, ref_opt), (flat_ps, flat_opt)], grads)
    assert_same(ref, flat_ps, ref_opt, flat_opt)
    assert float(flat_opt.state[flat_ps[0]]["step"]) == 40.0
    assert float(flat_opt.state[flat_ps[2]]["step"]) == 35.0
    assert flat_opt._flat[0] is None  # the counters differ: torch's step keeps them

    ref, flat_ps = params(), params()
    ref_opt = torch.optim.Adam(ref, foreach=True, lr=1e-3, weight_decay=0.01)
    flat_opt = FlatAdam(flat_ps, lr=1e-3, weight_decay=0.01)
    for grads in grads_stream(20):
        step_all([(ref, ref_opt), (flat_ps, flat_opt)], grads)
    assert_same(ref, flat_ps, ref_opt, flat_opt)


def test_no_gradient_at_all_changes_nothing():
    """SELLF's predictor optimiser has no gradients during PPO's minibatches."""
    ps = params()
    opt = FlatAdam(ps, lr=1e-3)
    before = [p.detach().clone() for p in ps]
    opt.step()
    assert all(torch.equal(p, q) for p, q in zip(ps, before)) and not opt.state


def _optimizers(learner) -> list[tuple[type, float]]:
    return [
        (type(opt), opt.defaults["eps"])
        for module_id in learner.module.keys()
        for _, opt in learner.get_optimizers_for_module(module_id)
    ]


@pytest.mark.ray
def test_the_speed_layer_builds_flat_adam(ray_session):
    from rllib_fair.algorithms import get_config_class

    def optimizers(lean: bool):
        cfg = (
            get_config_class("POCAR")()
            .environment("fair/Lending-v0", env_config={"max_steps": 100})
            .env_runners(num_env_runners=0)
            .accel(learner=lean)
            .rl_module(model_config={"fcnet_hiddens": [8]})
        )
        algo = cfg.build_algo()
        try:
            (found,) = algo.learner_group.foreach_learner(_optimizers)
            return found.get()
        finally:
            algo.stop()

    assert optimizers(True) == [(FlatAdam, 1e-5)]  # POCAR's adam_epsilon carries over
    assert optimizers(False) == [(torch.optim.Adam, 1e-5)]
