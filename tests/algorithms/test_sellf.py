"""SELLF: IPW weights, the self-normalised predictor loss, the pipeline and its state."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from rllib_fair.algorithms import get_algorithm_class, get_config_class
from rllib_fair.algorithms.sellf.connectors import (
    PENALTY_DISPARITY,
    PI_ALL,
    RENYI_SCALE,
    acceptance_under_all,
)
from rllib_fair.algorithms.sellf.torch.sellf_torch_learner import (
    group_columns,
    ipw_weights,
    self_normalized_bce,
)
from rllib_fair.rllib import keys


def t(x):
    return torch.tensor(x, dtype=torch.float32)


def test_acceptance_under_all_policies_eq_3():
    probs = [t([0.5, 0.1]), t([0.5, 0.0]), t([0.0, 0.2])]
    # 1 - (0.5 * 0.5 * 1), 1 - (0.9 * 1 * 0.8)
    np.testing.assert_allclose(acceptance_under_all(probs), [0.75, 0.28], atol=1e-6)
    np.testing.assert_allclose(
        ipw_weights(t([0.5, 0.1]), t([0.75, 0.28])), [0.5 / 0.75, 0.9 / 0.28], atol=1e-6
    )


def test_self_normalized_bce_eq_7_hand_computed():
    logits, labels = t([0.0, 0.0, 2.0]), t([1.0, 0.0, 1.0])
    weights, groups = t([1.0, 3.0, 2.0]), torch.tensor([0, 0, 1])
    l0 = math.log(2.0)  # BCE at logit 0, either label
    l2 = math.log(1.0 + math.exp(-2.0))
    expected = (1.0 * l0 + 3.0 * l0) / 4.0 + (2.0 * l2) / 2.0
    assert self_normalized_bce(logits, labels, weights, groups).item() == pytest.approx(
        expected, rel=1e-6
    )
    # self-normalisation: scaling a group's weights changes nothing
    scaled = self_normalized_bce(logits, labels, weights * t([7.0, 7.0, 1.0]), groups)
    assert scaled.item() == pytest.approx(expected, rel=1e-6)


def small_sellf(**training):
    return (
        get_config_class("SELLF")()
        .environment("fair/LendingFICO-v0", env_config={"max_steps": 400})
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=1, **training)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .fairness(disparity_window=100)
        .debugging(seed=0)
    )


@pytest.mark.ray
def test_sellf_pipeline_predictions_memory_and_no_hidden_labels(ray_session):
    cfg = small_sellf()
    assert cfg.resolved_label_access() == "observed"
    algo = cfg.build_algo()
    try:
        episodes = algo.env_runner.sample(num_timesteps=400)
        for ep in episodes:  # every step carries phi's prediction and Delta-tilde
            pred = np.asarray(ep.get_extra_model_outputs(keys.LABEL_PREDICTION))
            assert pred.shape[0] == len(ep) and np.all((pred > 0) & (pred < 1))
            assert all(keys.INFO_DISPARITY in info for info in ep.get_infos())
        learner = algo.learner_group._learner
        b = learner._learner_connector(
            rl_module=learner.module, batch={}, episodes=episodes, shared_data={}
        )["default_policy"]
        valid = b[keys.COL_VALID].bool()
        assert torch.all(b[PI_ALL][valid] > 0) and torch.all(b[PI_ALL][valid] <= 1)
        assert torch.all(b[RENYI_SCALE][valid] >= 0)
        assert torch.all(b[PENALTY_DISPARITY][valid] >= 0)
        memory = learner._memory.arrays()
        accepted = (valid & (b[keys.COL_DECISION] == 1)).sum().item()
        assert len(memory["obs"]) == accepted  # only accepted rows enter M
        assert set(np.unique(memory["label"])) <= {0.0, 1.0}
        result = algo.train()
        stats = result["learners"]["default_policy"]
        for key in ("renyi_loss", "predictor_loss", "memory_size", "max_ipw_weight"):
            assert np.isfinite(stats[key]), key
        sel = result["fairness"]["equal_opportunity"]["selective"]
        assert sel["accepted_disparity_mean"] == 0.0  # Prop. 3.1
        assert {"true_disparity_mean", "imputed_disparity_mean"} <= set(sel)
    finally:
        algo.stop()


@pytest.mark.ray
def test_sellf_trains_with_a_remote_env_runner(ray_session):
    """Remote runners predict with the learner's phi and ship Delta-tilde and the labels
    the decision-maker observed, nothing more."""
    algo = small_sellf().env_runners(num_env_runners=1).build_algo()
    try:
        for _ in range(2):
            result = algo.train()
        assert "env_runners" in result, "the remote env runner crashed"
        stats = result["learners"]["default_policy"]
        assert np.isfinite(stats["renyi_loss"]) and stats["memory_size"] > 0
        assert result["fairness"]["equal_opportunity"]["num_steps"] == 400
        sel = result["fairness"]["equal_opportunity"]["selective"]
        assert np.isfinite(sel["imputed_disparity_mean"])
        # phi on the remote runner is the learner's phi after the last update
        learner_phi = algo.learner_group._learner.module["default_policy"].predictor[0]
        remote = algo.env_runner_group.foreach_env_runner(
            lambda r: r.module.predictor[0].weight.detach().numpy().copy(),
            local_env_runner=False,
        )
        np.testing.assert_allclose(remote[0], learner_phi.weight.detach().numpy(), atol=1e-6)
    finally:
        algo.stop()


@pytest.mark.ray
def test_sellf_state_survives_checkpoint(ray_session, tmp_path):
    algo = small_sellf().build_algo()
    try:
        algo.train()
        algo.train()
        learner = algo.learner_group._learner
        memory = learner._memory.state()
        weights = learner.module["default_policy"].predictor[0].weight.detach().clone()
        algo.save_to_path(str(tmp_path / "ckpt"))
    finally:
        algo.stop()
    restored = get_algorithm_class("SELLF").from_checkpoint(str(tmp_path / "ckpt"))
    try:
        lrn = restored.learner_group._learner
        assert len(lrn._store) == 2 and lrn._iteration == 2
        for key in ("obs", "group", "label"):
            np.testing.assert_array_equal(lrn._memory.arrays()[key], memory[key])
        torch.testing.assert_close(lrn.module["default_policy"].predictor[0].weight, weights)
        restored.train()
    finally:
        restored.stop()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"beta_2": -1}, "beta_2: -1 is invalid"),
        ({"advantage_normalization": "z"}, "valid choices: paper, minmax"),
        ({"policy_samples": 0}, "policy_samples: 0 is invalid; valid: an integer >= 1"),
        ({"predictor_hiddens": [0]}, "predictor_hiddens[0]: 0 is invalid"),
    ],
)
def test_sellf_validation(kwargs, message):
    cfg = get_config_class("SELLF")().environment("fair/LendingFICO-v0").training(**kwargs)
    with pytest.raises(ValueError) as info:
        cfg.validate()
    assert message in str(info.value)


def test_renyi_form_validation():
    cfg = get_config_class("SELLF")().environment("fair/LendingFICO-v0").training(renyi_form="x")
    with pytest.raises(
        ValueError, match="renyi_form: 'x' is invalid; valid choices: paper, reference"
    ):
        cfg.validate()


def test_self_normalized_bce_with_given_columns_and_an_absent_group():
    logits, labels = t([0.3, -1.0, 2.0, 0.5]), t([1.0, 0.0, 1.0, 0.0])
    weights, groups = t([1.0, 3.0, 2.0, 0.5]), torch.tensor([0, 0, 1, 1])
    columns = group_columns(groups)
    assert columns.tolist() == [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]
    per_group = 0.0
    losses = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels, reduction="none")
    for g in (0, 1):  # Eq. 7, group by group
        m = groups == g
        per_group += ((weights[m] * losses[m]).sum() / weights[m].sum()).item()
    got = self_normalized_bce(logits, labels, weights, columns=columns).item()
    assert got == pytest.approx(per_group, rel=1e-6)
    # a minibatch of the memory without group 1's rows: that group adds nothing
    only_0 = self_normalized_bce(logits[:2], labels[:2], weights[:2], columns=columns[:2])
    assert only_0.item() == pytest.approx(
        ((weights[:2] * losses[:2]).sum() / weights[:2].sum()).item(), rel=1e-6
    )


@pytest.mark.ray
def test_sellf_loss_is_ppo_on_regularised_advantages_plus_eq_6(ray_session):
    """The connector's paper-form advantages are A - beta_1 max(|D| - omega/2, 0) of
    RLlib's GAE advantages, and the loss is PPO's on them plus beta_2 times the sum
    over groups of the mean of c (1 - pi)^2 / pi_all over the group's rows (Eq. 6); a
    minibatch with one group only gets that group's mean alone."""
    from ray.rllib.core.columns import Columns
    from ray.rllib.evaluation.postprocessing import Postprocessing

    from rllib_fair.accel.ppo_loss import lean_ppo_loss
    from rllib_fair.algorithms.sellf.connectors import SELLFBatchStats

    algo = small_sellf(beta_1=2.0, omega=0.05, beta_2=0.1).build_algo()
    try:
        learner = algo.learner_group._learner
        cfg = learner.config.get_config_for_module("default_policy")
        episodes = algo.env_runner.sample(num_timesteps=400)
        full = learner._learner_connector(
            rl_module=learner.module, batch={}, episodes=copy.deepcopy(episodes), shared_data={}
        )["default_policy"]
        pipeline = copy.deepcopy(learner._learner_connector)
        pipeline.remove(SELLFBatchStats.__name__)
        plain = pipeline(
            rl_module=learner.module, batch={}, episodes=copy.deepcopy(episodes), shared_data={}
        )["default_policy"]
        penalty = torch.clamp(full[PENALTY_DISPARITY] - 0.05 / 2.0, min=0.0)
        assert penalty.max() > 0, "no disparity above omega / 2: the check would be empty"
        assert torch.equal(
            full[Postprocessing.ADVANTAGES], plain[Postprocessing.ADVANTAGES] - 2.0 * penalty
        )
        module = learner.module["default_policy"]
        group = full[keys.COL_GROUP]
        for rows in (torch.arange(100), torch.nonzero(group[:200] == 0).squeeze(-1)):
            mb = {k: v[rows] for k, v in full.items()}
            fwd = module.forward_train(mb)
            got = learner.compute_loss_for_module(
                module_id="default_policy", config=cfg, batch=mb, fwd_out=fwd
            )
            ppo = lean_ppo_loss(
                learner,
                module_id="default_policy",
                config=cfg,
                batch=mb,
                fwd_out=fwd,
                module=module,
            )
            pi = torch.softmax(fwd[Columns.ACTION_DIST_INPUTS], dim=-1)[..., 1]
            per_row = mb[RENYI_SCALE] * (1.0 - pi) ** 2 / mb[PI_ALL]
            mask = mb[Columns.LOSS_MASK].bool()
            renyi = sum(
                per_row[mask & (mb[keys.COL_GROUP] == g)].mean()
                for g in (0, 1)
                if (mask & (mb[keys.COL_GROUP] == g)).any()
            )
            assert got.item() == pytest.approx((ppo + 0.1 * renyi).item(), rel=1e-5)
    finally:
        algo.stop()


# ---------------------------------------------------------------- memory-flat update


def _bare_learner(**training):
    """A SELLF learner outside an algorithm, with a store of distinct policy snapshots."""
    import gymnasium as gym

    torch.manual_seed(0)
    cfg = (
        get_config_class("SELLF")()
        .environment("fair/LendingFICO-v0")
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .training(**training)
        .debugging(seed=0)
    )
    learner = cfg.build_learner(env=gym.make("fair/LendingFICO-v0"))
    learner.build()
    module = learner.module["default_policy"].unwrapped()
    with torch.no_grad():
        for _ in range(learner.config.policy_store_size):
            for p in [*module.encoder.actor_encoder.parameters(), *module.pi.parameters()]:
                p.add_(0.5 * torch.randn_like(p))
            learner._store.append(learner._snapshot(module))
    return learner, module


def _rows(rng, k, dim, pool=None):
    """``k`` memory rows; group 1 is rare, so some updates read none of its rows.

    With ``pool`` (an array of observations) each row's observation is one of them, as
    in FICO lending, whose rows repeat a few score-bin features.
    """
    if pool is None:
        obs = rng.random((k, dim)).astype(np.float32)
    else:
        obs = pool[rng.integers(0, len(pool), k)]
    return obs, (rng.random(k) < 0.02).astype(np.int64), (rng.random(k) < 0.6).astype(np.float32)


def _reference_update(learner, module, memory, rng):
    """The predictor update computed the direct way (Alg. 1 as first written): the
    acceptance probabilities of the whole memory under the current and the sampled
    stored policies, then each step's rows picked from them."""
    from rllib_fair.algorithms.sellf.connectors import accept_probability

    cfg = learner.config
    opt = learner.get_optimizer("default_policy", "predictor")
    for group in opt.param_groups:
        group["lr"] = cfg.predictor_lr * cfg.predictor_lr_decay**learner._iteration
    obs, groups, labels = (torch.from_numpy(memory[k]) for k in ("obs", "group", "label"))
    n_pol = min(cfg.policy_samples, len(learner._store))
    policies = [learner._store[i] for i in rng.choice(len(learner._store), n_pol, replace=False)]
    with torch.no_grad():
        pi_now = accept_probability(module, None, obs)
        probs = [pi_now] + [accept_probability(module, s, obs) for s in policies]
        weights = ipw_weights(pi_now, acceptance_under_all(probs))
    n, columns = len(obs), group_columns(groups)
    used = torch.zeros(n, dtype=torch.bool)
    for _ in range(cfg.predictor_steps):
        if cfg.predictor_batch_size and cfg.predictor_batch_size < n:
            idx = torch.from_numpy(rng.choice(n, cfg.predictor_batch_size, replace=False))
        else:
            idx = torch.arange(n)
        used[idx] = True
        opt.zero_grad(set_to_none=True)
        loss = self_normalized_bce(
            module.predict_logits(obs[idx]), labels[idx], weights[idx], columns=columns[idx]
        )
        loss.backward()
        opt.step()
    return loss.detach(), weights[used].max(), weights.max(), bool(groups[used].any())


@pytest.mark.parametrize("repeated", [False, True], ids=["distinct_obs", "repeated_obs"])
@pytest.mark.parametrize("batch", [16, None], ids=["minibatches", "whole_memory"])
def test_memory_flat_predictor_update_equals_the_whole_memory_computation(batch, repeated):
    """Appends of every size (wrapping the memory, larger than it) keep the memory the
    tail of everything appended, and every predictor update (rows drawn, acceptance
    probabilities only on the rows the steps read, or, where the rows repeat a few
    observations, only on those observations) gives exactly the loss, the predictor
    parameters and the RNG state of the reference that evaluates the whole memory. The
    probabilities are bit-equal because each row's forward pass does not depend on
    the other rows in the batch on this CPU path."""
    learner, module = _bare_learner(
        memory_size=300,
        policy_store_size=6,
        policy_samples=3,
        predictor_steps=3,
        predictor_batch_size=batch,
    )
    opt = learner.get_optimizer("default_policy", "predictor")
    rng = np.random.default_rng(1)
    dim = int(np.prod(module.observation_space.shape))
    pool = rng.random((7, dim)).astype(np.float32) if repeated else None
    tail = dict(zip(("obs", "group", "label"), _rows(rng, 0, dim)))
    skipped_rare = 0  # updates whose steps read no row of the rare group in memory
    for step, k in enumerate([130, 70, 260, 0, 400, 90, 299, 33, 301, 5]):
        new = dict(zip(("obs", "group", "label"), _rows(rng, k, dim, pool)))
        learner.remember(new["obs"], new["group"], new["label"])
        tail = {key: np.concatenate([tail[key], new[key]])[-300:] for key in tail}
        memory = learner._memory.arrays()
        for key in tail:
            assert memory[key].dtype == tail[key].dtype
            np.testing.assert_array_equal(memory[key], tail[key])
        pred0 = copy.deepcopy(module.predictor.state_dict())
        opt0 = copy.deepcopy(opt.state_dict())
        rng0 = copy.deepcopy(learner._rng.bit_generator.state)
        got = learner._train_predictor("default_policy", module)
        got_pred = copy.deepcopy(module.predictor.state_dict())
        got_max = learner.metrics.peek(("default_policy", "max_ipw_weight"))
        got_rng = learner._rng.bit_generator.state
        module.predictor.load_state_dict(pred0)
        opt.load_state_dict(opt0)
        ref_rng = np.random.default_rng()
        ref_rng.bit_generator.state = rng0
        want, want_max_used, want_max_all, reads_rare = _reference_update(
            learner, module, tail, ref_rng
        )
        assert torch.equal(got, want), step
        for name, value in module.predictor.state_dict().items():
            assert torch.equal(got_pred[name], value), (step, name)
        assert got_rng == ref_rng.bit_generator.state
        assert got_max == want_max_used.item() <= want_max_all.item()
        if batch is None:
            assert got_max == want_max_all.item()
        assert memory["group"].any()
        # the repeated observations are forwarded once each; distinct ones row by row
        distinct = learner._memory.distinct()
        assert (distinct is not None and len(distinct[0]) < len(memory["obs"])) == repeated
        skipped_rare += int(not reads_rare)
        learner._iteration += 1
    assert skipped_rare > 0 if batch else skipped_rare == 0


def test_sellf_learner_state_round_trips_and_continues_equally():
    """get_state / set_state carry the memory (as copies, untouched by later appends),
    the store, the RNG and the counter; the restored learner then appends and updates
    exactly like the original."""
    kwargs = dict(
        memory_size=200,
        policy_store_size=4,
        policy_samples=2,
        predictor_steps=4,
        predictor_batch_size=32,
    )
    a, mod_a = _bare_learner(**kwargs)
    rng = np.random.default_rng(2)
    dim = int(np.prod(mod_a.observation_space.shape))
    for k in (150, 120):
        a.remember(*_rows(rng, k, dim))
    a._train_predictor("default_policy", mod_a)
    state = a.get_state()
    saved = {k: v.copy() for k, v in state["sellf"]["memory"].items()}
    assert len(saved["obs"]) == 200
    b, mod_b = _bare_learner(**kwargs)
    b._store = []
    b.set_state(state)
    assert len(b._store) == 4 and b._iteration == a._iteration
    for key, value in a._memory.arrays().items():
        np.testing.assert_array_equal(b._memory.arrays()[key], value)
    for k in (190, 60, 10):  # moves rows inside both memories' arrays
        rows = _rows(rng, k, dim)
        a.remember(*rows)
        b.remember(*rows)
        la = a._train_predictor("default_policy", mod_a)
        lb = b._train_predictor("default_policy", mod_b)
        assert torch.equal(la, lb)
    for key, value in saved.items():  # the checkpoint's arrays did not move with them
        np.testing.assert_array_equal(state["sellf"]["memory"][key], value)
    for name, value in mod_a.predictor.state_dict().items():
        assert torch.equal(mod_b.predictor.state_dict()[name], value), name
    for key, value in a._memory.arrays().items():
        np.testing.assert_array_equal(b._memory.arrays()[key], value)


def test_accept_probability_is_the_policy_s_accept_probability():
    """The current policy's P(accept | x) runs only the actor's encoder; it equals the
    softmax of the module's own action logits (both encoders run there), bit for bit."""
    from ray.rllib.core.columns import Columns

    from rllib_fair.algorithms.sellf.connectors import ACCEPT, accept_probability

    _, module = _bare_learner()
    obs = torch.from_numpy(
        np.random.default_rng(3).random((40, *module.observation_space.shape), np.float32)
    )
    with torch.no_grad():
        got = accept_probability(module, None, obs)
        logits = module.forward_train({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS]
    assert module.encoder.actor_encoder is not None  # the path without the critic ran
    torch.testing.assert_close(got, torch.softmax(logits, -1)[:, ACCEPT], rtol=0, atol=0)


def test_memory_tracks_distinct_observations_up_to_its_limit():
    """Each kept row's index among the distinct observations, through wraps and a
    reload; tracking stops (None) once more distinct rows than the limit arrived."""
    from rllib_fair.algorithms.sellf.torch.sellf_torch_learner import SampleMemory

    rng = np.random.default_rng(0)
    pool = rng.random((5, 3)).astype(np.float32)
    memory = SampleMemory(50)
    for k in (20, 40, 7, 60):
        obs = pool[rng.integers(0, 5, k)]
        memory.append(obs, np.zeros(k), np.ones(k))
        table, ids = memory.distinct()
        np.testing.assert_array_equal(table[ids], memory.arrays()["obs"])
        assert len(table) <= 5
        idx = np.array([0, 3, len(memory) - 1])
        np.testing.assert_array_equal(table[memory.distinct(idx)[1]], memory.rows(idx)["obs"])
    reloaded = SampleMemory(50)
    reloaded.load(memory.state())
    table, ids = reloaded.distinct()
    np.testing.assert_array_equal(table[ids], memory.arrays()["obs"])
    assert set(memory.state()) == {"obs", "group", "label"}
    small = SampleMemory(50)
    small.DISTINCT_LIMIT = 8
    small.append(pool, np.zeros(5), np.ones(5))
    assert small.distinct() is not None
    small.append(rng.random((4, 3)).astype(np.float32), np.zeros(4), np.ones(4))
    assert small.distinct() is None  # 9 distinct rows: no longer tracked
    small.append(pool, np.zeros(5), np.ones(5))
    assert small.distinct() is None
