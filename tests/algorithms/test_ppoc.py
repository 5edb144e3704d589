"""PPO-C / PPO-Cb / PPO-KL / F-PPO-L (Lear & Zhang, ICLR 2025; spec ppo_c.md §5.7)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from rllib_fair.algorithms.ppoc.ppoc_learner import (
    COL_BENEFIT,
    COL_CREDIT_BIN,
    COL_QUAL_PS,
    COL_QUAL_Q,
    INFO_QUAL_PS,
    INFO_QUAL_Q,
    c_hat,
    lambda_hat,
    qualification_columns,
)
from rllib_fair.fairness import qualification as qual

ROOT = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- loss terms


def _tiny_policy(seed=0, n=40, obs=5):
    """Linear 2-action policy in float64: obs [n, obs], W [obs, 2], actions, q, groups, Delta."""
    rng = np.random.default_rng(seed)
    x = torch.tensor(rng.normal(size=(n, obs)), dtype=torch.float64)
    w0 = torch.tensor(rng.normal(size=(obs, 2)) * 0.3, dtype=torch.float64)
    actions = torch.tensor(rng.integers(0, 2, n))
    q = torch.tensor(rng.normal(size=n) * 0.5 + 0.2, dtype=torch.float64)
    groups = torch.tensor(rng.integers(0, 2, n))
    delta = torch.tensor(rng.choice(qual.benefit(qual.kernels(*_s1()), qual.gain_table())[0], n))
    mask = torch.ones(n, dtype=torch.bool)
    mask[-1] = False  # a bootstrap row
    return x, w0, actions, q, groups, delta, mask


def _s1():
    from rllib_fair.envs.lending_drift import SETTINGS

    return np.asarray(SETTINGS[1]["success_probs"]), np.asarray(SETTINGS[1]["drift_probs"])


def _logp(x, w, actions):
    return torch.log_softmax(x @ w, dim=-1).gather(1, actions[:, None])[:, 0]


def test_c_hat_gradient_at_theta_old_is_the_policy_gradient_form():
    """autograd of beta C^2 = 2 beta C (mean_B0 q~ dlogpi - mean_B1 q~ dlogpi), spec §3.2."""
    x, w0, actions, q, groups, _, mask = _tiny_policy()
    beta = 0.65
    w = w0.clone().requires_grad_(True)
    logp_old = _logp(x, w0, actions).detach()
    c, empty = c_hat(_logp(x, w, actions), logp_old, q, groups, mask)
    assert not empty
    (beta * c * c).backward()
    valid = mask & (groups >= 0)
    qv = q[valid]
    qt = (q - qv.mean()) / (qv.std() + 1e-8)
    expected = torch.zeros_like(w0)
    for g, sign in ((0, 1.0), (1, -1.0)):
        idx = torch.nonzero(valid & (groups == g))[:, 0]
        for t in idx.tolist():
            wt = w0.clone().requires_grad_(True)
            (gl,) = torch.autograd.grad(_logp(x[t : t + 1], wt, actions[t : t + 1]).sum(), wt)
            expected += sign * qt[t] * gl / len(idx)
    expected *= 2 * beta * c.detach()
    assert torch.allclose(w.grad, expected, atol=1e-10, rtol=0)


@pytest.mark.parametrize("term", ["c", "lambda"])
def test_new_loss_terms_match_finite_differences_away_from_theta_old(term):
    x, w0, actions, q, groups, delta, mask = _tiny_policy(seed=1)
    logp_old = _logp(x, w0, actions).detach()
    w_new = w0 + 0.2 * torch.tensor(
        np.random.default_rng(2).normal(size=w0.shape), dtype=torch.float64
    )

    def f(w):
        if term == "c":
            c, _ = c_hat(_logp(x, w, actions), logp_old, q, groups, mask)
            return 0.75 * c * c
        p = torch.softmax(x @ w, dim=-1)[:, 1]
        return 10.0 * lambda_hat(p, delta, groups, mask, eps=1e-2)

    w = w_new.clone().requires_grad_(True)
    f(w).backward()
    h = 1e-6
    fd = torch.zeros_like(w_new)
    for i in range(w_new.shape[0]):
        for j in range(w_new.shape[1]):
            e = torch.zeros_like(w_new)
            e[i, j] = h
            fd[i, j] = (f(w_new + e) - f(w_new - e)) / (2 * h)
    assert torch.allclose(w.grad, fd, atol=1e-7, rtol=1e-6)
    assert w.grad.abs().max() > 1e-6


def test_lambda_hat_equals_the_numpy_core_and_empty_groups_are_guarded():
    rng = np.random.default_rng(3)
    p = torch.tensor(rng.uniform(size=30), dtype=torch.float64)
    d = torch.tensor(rng.choice([0.1, 0.2, 0.3], 30), dtype=torch.float64)
    groups = torch.tensor(rng.integers(0, 2, 30))
    mask = torch.ones(30, dtype=torch.bool)
    got = lambda_hat(p, d, groups, mask, eps=1e-6).item()
    g0, g1 = (groups == 0).numpy(), (groups == 1).numpy()
    want = qual.benefit_fairness_lambda(p.numpy()[g0], p.numpy()[g1], d.numpy()[g0], d.numpy()[g1])
    assert got == pytest.approx(want, rel=1e-12)
    # one group only: C_hat = 0, Lambda = 0, finite gradients, flagged (spec §3.2, P20)
    w = torch.zeros(30, dtype=torch.float64, requires_grad=True)
    only0 = torch.zeros(30, dtype=torch.long)
    c, empty = c_hat(w, torch.zeros(30, dtype=torch.float64), p, only0, mask)
    lam = lambda_hat(torch.sigmoid(w), d, only0, mask)
    (c * c + lam).backward()
    assert empty and c.item() == 0.0 and lam.item() == 0.0
    assert torch.isfinite(w.grad).all()


# ----------------------------------------------------------------------------- connector


def test_qualification_columns_align_and_mask_the_bootstrap_row():
    h = qual.reference_pi0_heuristic().astype(np.float32)
    infos = [
        {"credit_bin": 3, "benefit": 0.06, INFO_QUAL_Q: 0.5, INFO_QUAL_PS: 0.1},
        {"credit_bin": 7, "benefit": 0.3, INFO_QUAL_Q: -0.25, INFO_QUAL_PS: 0.0},
        {"credit_bin": 9, "benefit": 0.5, INFO_QUAL_Q: 9.0, INFO_QUAL_PS: 9.0},  # bootstrap
    ]
    cols = qualification_columns(infos, 3, 2, h)
    np.testing.assert_allclose(cols[COL_QUAL_Q], [0.5, -0.25, 0.0])
    np.testing.assert_allclose(cols[COL_QUAL_PS], [0.1, 0.0, 0.0])
    np.testing.assert_allclose(cols[COL_BENEFIT], [0.06, 0.3, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(cols[COL_CREDIT_BIN], [3, 7, -1])
    with pytest.raises(ValueError, match="Monte Carlo gains"):
        qualification_columns([{"credit_bin": 3, "benefit": 0.1}], 1, 1, h)


def test_config_validation_is_one_line():
    from rllib_fair.algorithms.ppoc.ppoc import PPOCConfig

    cfg = PPOCConfig().environment("fair/Lending-v0")
    with pytest.raises(ValueError, match="emits no qualification-gain infos"):
        cfg.validate()
    cfg = (
        PPOCConfig().environment("fair/LendingDrift-v0").env_runners(batch_mode="truncate_episodes")
    )
    with pytest.raises(ValueError, match="complete_episodes"):
        cfg.validate()
    cfg = PPOCConfig().environment("fair/LendingDrift-v0").training(beta_c=-1.0)
    with pytest.raises(ValueError, match="beta_c"):
        cfg.validate()


# ----------------------------------------------------------------------------- learner


def _learner_and_batch(config_cls, **training):
    from ray.rllib.core.columns import Columns
    from ray.rllib.evaluation.postprocessing import Postprocessing

    from rllib_fair.rllib import keys

    cfg = (
        config_cls()
        .environment("fair/LendingDrift-v0")
        .training(**training)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    learner = cfg.build_learner(env=None, spaces=_spaces())
    rng = np.random.default_rng(0)
    n = 50
    batch = {
        Columns.OBS: torch.tensor(rng.uniform(size=(n, 44)), dtype=torch.float32),
        Columns.ACTIONS: torch.tensor(rng.integers(0, 2, n)),
        Columns.ACTION_LOGP: torch.tensor(np.log(rng.uniform(0.3, 0.7, n)), dtype=torch.float32),
        Columns.ACTION_DIST_INPUTS: torch.tensor(rng.normal(size=(n, 2)), dtype=torch.float32),
        Columns.LOSS_MASK: torch.tensor(np.r_[np.ones(n - 1), 0].astype(bool)),
        Postprocessing.ADVANTAGES: torch.tensor(rng.normal(size=n) * 3 + 1, dtype=torch.float32),
        Postprocessing.VALUE_TARGETS: torch.tensor(rng.normal(size=n), dtype=torch.float32),
        keys.COL_GROUP: torch.tensor(rng.integers(0, 2, n)),
        COL_QUAL_Q: torch.tensor(rng.normal(size=n), dtype=torch.float32),
        COL_QUAL_PS: torch.tensor(rng.normal(size=n), dtype=torch.float32),
        "fair_v_pi0_ref": torch.zeros(n),
        COL_CREDIT_BIN: torch.tensor(rng.integers(0, 14, n)),
    }
    table = qual.benefit(qual.kernels(*_s1()), qual.gain_table())[0]  # Setting 1's Delta
    batch[COL_BENEFIT] = torch.tensor(table[batch[COL_CREDIT_BIN].numpy()], dtype=torch.float32)
    return learner, cfg, batch


def _spaces():
    from rllib_fair.envs.lending_drift import LendingDriftEnv

    env = LendingDriftEnv()
    return {"default_policy": (env.observation_space, env.action_space)}


def _loss(learner, cfg, batch, fn=None):
    mid = "default_policy"
    with torch.no_grad():
        fwd = learner.module[mid].forward_train(batch)
    fn = fn or type(learner).compute_loss_for_module
    return fn(
        learner, module_id=mid, config=cfg.get_config_for_module(mid), batch=batch, fwd_out=fwd
    )


def test_zero_weights_give_ppokl_and_rllib_ppo_loss_bit_for_bit():
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner

    from rllib_fair.algorithms.ppoc.ppoc import PPOCConfig, PPOKLConfig

    ppoc, cfg_c, batch = _learner_and_batch(PPOCConfig, beta_c=0.0, beta_lambda=0.0)
    ppokl, cfg_kl, _ = _learner_and_batch(PPOKLConfig)
    ppokl.module.set_state(ppoc.module.get_state())
    a = _loss(ppoc, cfg_c, batch)
    b = _loss(ppokl, cfg_kl, batch)
    assert a.dtype == b.dtype and a.item() == b.item()
    # with RLlib's batch-level advantage standardisation only, it is RLlib's PPO loss with
    # a fixed KL coefficient of 1.5
    batch_std, cfg_b, _ = _learner_and_batch(PPOKLConfig, advantage_standardization="batch")
    batch_std.module.set_state(ppoc.module.get_state())
    assert float(batch_std.curr_kl_coeffs_per_module["default_policy"]) == 1.5
    mine = _loss(batch_std, cfg_b, batch)
    rllib = _loss(batch_std, cfg_b, batch, PPOTorchLearner.compute_loss_for_module)
    assert mine.item() == rllib.item()
    # the new terms do change it
    ppocb, cfg_cb, _ = _learner_and_batch(PPOCConfig, beta_c=0.65, beta_lambda=100.0)
    ppocb.module.set_state(ppoc.module.get_state())
    assert _loss(ppocb, cfg_cb, batch).item() != a.item()


# ----------------------------------------------------------------------------- training


def _train(argv, capsys):
    from rllib_fair.cli import main

    rc = main(["train", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


# Every registered name, locally and with a remote env runner (about 6-9 s each on an
# idle 2-core machine).
CASES = [
    pytest.param("ppoc/lending_drift_s1-ppoc-fast.yaml", 0, id="ppoc-0"),
    pytest.param("ppoc/lending_drift_s1-ppoc-fast.yaml", 1, id="ppoc-1"),
    pytest.param("fppol/lending_drift_s1-fppol-fast.yaml", 0, id="fppol-0"),
    pytest.param("fppol/lending_drift_s1-fppol-fast.yaml", 1, id="fppol-1"),
    pytest.param("ppoc/lending_drift_s1-ppokl-fast.yaml", 0, id="ppokl-0"),
    pytest.param("ppoc/lending_drift_s1-ppokl-fast.yaml", 1, id="ppokl-1"),
    pytest.param("ppoc/lending_drift_s1-ppocb-fast.yaml", 0, id="ppocb-0"),
    pytest.param("ppoc/lending_drift_s1-ppocb-fast.yaml", 1, id="ppocb-1"),
]


@pytest.mark.ray
@pytest.mark.parametrize(("example", "runners"), CASES)
def test_examples_train_from_yaml(example, runners, tmp_path, ray_session, capsys):
    """Every new algorithm trains for real from its YAML, locally and with a remote runner."""
    storage = tmp_path / "results"
    argv = [
        str(ROOT / "tuned_examples" / example),
        "--num-env-runners",
        str(runners),
        "--stop",
        "training_iteration=1",
        "--config",
        "train_batch_size_per_learner=500",
        "--config",
        "num_epochs=1",
        "--config",
        "model_config={fcnet_hiddens: [8]}",
        "--storage-path",
        str(storage),
    ]
    rc, out, err = _train(argv, capsys)
    assert rc == 0, out + err
    (trial,) = [p for p in next(storage.iterdir()).iterdir() if p.is_dir()]
    assert json.loads((trial / "params.json").read_text())["num_env_runners"] == runners
    (result,) = [json.loads(x) for x in (trial / "result.json").read_text().splitlines() if x]
    qg = result["fairness"]["qualification_gain"]
    assert qg["num_episodes"] == 1
    for k in ("c_pi", "dpe", "ipe", "spe", "gain_gap_abs"):
        assert np.isfinite(qg[k])
    assert qg["c_pi"] == pytest.approx(qg["dpe"] + qg["ipe"] + qg["spe"], abs=1e-9)
    assert qg["reference"]["spe"] != qg["shadow"]["spe"]
    learner = result["learners"]["default_policy"]
    assert np.isfinite(learner["policy_loss"])
    if "fppol" not in example:
        for k in ("ppoc/c_hat", "ppoc/lambda", "ppoc/dpe_step"):
            assert np.isfinite(learner[k])
        assert learner.get("curr_kl_coeff", 1.5) == 1.5


# ----------------------------------------------------------------------------- learning


def _learn(ray_session, name, iters, hidden, lr=3e-4, **training):
    from rllib_fair.algorithms import get_config_class
    from rllib_fair.cli.runner import flatten

    cfg = (
        get_config_class(name)()
        .environment(
            "fair/LendingDrift-v0",
            env_config={"setting": 1, "max_steps": 500, "time_limit_terminates": True},
        )
        .env_runners(num_env_runners=0)
        .training(
            lr=lr, train_batch_size_per_learner=500, minibatch_size=50, num_epochs=10, **training
        )
        .rl_module(model_config={"fcnet_hiddens": hidden})
        .debugging(seed=0)
    )
    algo = cfg.build_algo()
    try:
        rows = [flatten(algo.train()) for _ in range(iters)]
    finally:
        algo.stop()
    learner = "learners/default_policy/ppoc/"
    return {
        "constraint": np.mean([r[learner + "constraint"] for r in rows]),
        "lambda": np.mean([r[learner + "lambda"] for r in rows]),
        "gap": np.array([r["fairness/qualification_gain/gain_gap_abs"] for r in rows]),
    }


def _terms_after_updates(config_cls, state, steps=40, **training):
    """C_hat^2 and Lambda of a fixed batch after ``steps`` Adam steps on the learner's loss."""
    from ray.rllib.core.columns import Columns

    learner, cfg, batch = _learner_and_batch(config_cls, **training)
    if state is not None:
        learner.module.set_state(state)
    mid = "default_policy"
    module = learner.module[mid]
    opt = torch.optim.Adam(module.parameters(), lr=3e-3)
    mcfg = cfg.get_config_for_module(mid)
    for _ in range(steps):
        fwd = module.forward_train(batch)
        loss = learner.compute_loss_for_module(module_id=mid, config=mcfg, batch=batch, fwd_out=fwd)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        logits = module.forward_train(batch)[Columns.ACTION_DIST_INPUTS]
        logp = torch.log_softmax(logits, -1).gather(1, batch[Columns.ACTIONS][:, None])[:, 0]
        mask, groups = batch[Columns.LOSS_MASK], batch["fair_group"]
        c, _ = c_hat(logp, batch[Columns.ACTION_LOGP], batch[COL_QUAL_Q], groups, mask)
        lam = lambda_hat(torch.softmax(logits, -1)[:, 1], batch[COL_BENEFIT], groups, mask)
    return float(c * c), float(lam), learner.module.get_state()


def test_learning_short_ppoc_lowers_c_hat_and_ppocb_lowers_lambda():
    """Same start, same batch, same 40 Adam steps: each method lowers its own penalised term.

    The default-suite variant of the learning test (no env runs): a wrong sign, a detached
    ratio or probability, or a term left out of the loss leaves C_hat^2 at PPO-KL's level
    and Lambda at PPO-C's.
    """
    from rllib_fair.algorithms.ppoc.ppoc import PPOCbConfig, PPOCConfig, PPOKLConfig

    c0, lam0, state = _terms_after_updates(PPOKLConfig, None, steps=0)
    c_kl, lam_kl, _ = _terms_after_updates(PPOKLConfig, state)
    c_c, lam_c, _ = _terms_after_updates(PPOCConfig, state, beta_c=10.0)
    c_cb, lam_cb, _ = _terms_after_updates(PPOCbConfig, state, beta_c=10.0, beta_lambda=100.0)
    assert c_c < 0.5 * c_kl and c_c < 0.5 * c0, (c0, c_kl, c_c)
    assert lam_cb < 0.5 * lam_c and lam_cb < 0.5 * lam0, (lam0, lam_c, lam_cb)


@pytest.mark.slow
@pytest.mark.ray
def test_learning_ppoc_gain_gap_below_ppokl_and_ppocb_lambda_below_ppoc(ray_session):
    """Setting 1, seed 0, 30,000 steps each (the fast tuned examples' budget, ~1 min each).

    PPO-C's |G0 - G1| over the last 20 training episodes is clearly below PPO-KL's (measured
    with the fast examples: 6.7 vs 12.5 over the last 10), and PPO-Cb's Lambda (beta_Lambda
    = 10, spec §5.7) below PPO-C's.
    """
    kl = _learn(ray_session, "PPOKL", 60, [64, 64])
    c = _learn(ray_session, "PPOC", 60, [64, 64], beta_c=0.65)
    cb = _learn(ray_session, "PPOCb", 60, [64, 64], beta_c=0.65, beta_lambda=10.0)
    assert c["gap"][-20:].mean() < 0.8 * kl["gap"][-20:].mean(), (c["gap"], kl["gap"])
    assert cb["lambda"] < c["lambda"], (cb, c)
