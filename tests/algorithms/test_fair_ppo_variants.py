"""Unit and integration tests of R-PPO, POCAR and ELBERT-PO's pieces (exact values)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from rllib_fair.algorithms import get_config_class
from rllib_fair.algorithms.common.advantages import pocar_terms
from rllib_fair.algorithms.pocar.torch.pocar_torch_learner import regularize_advantages
from rllib_fair.algorithms.rppo.connectors import ShapeRewardsWithDisparity, disparity_penalty
from rllib_fair.fairness import WindowedDisparity
from rllib_fair.rllib import keys


def t(x):
    return torch.tensor(x, dtype=torch.float32)


# ------------------------------------------------------------------------- R-PPO


def test_disparity_penalty_forms():
    d = t([0.0, 0.004, 0.005, 0.02, 0.3])
    np.testing.assert_allclose(
        disparity_penalty(d, 0.005, "hinge"), [0, 0, 0, 0.015, 0.295], atol=1e-7
    )
    np.testing.assert_allclose(
        disparity_penalty(d, 0.005, "threshold"), [0, 0, 0.005, 0.02, 0.3], atol=1e-7
    )


def test_reward_shaping_connector_exact_and_skips_bootstrap_step():
    batch = {
        "default_policy": {
            "rewards": t([1.0, -1.0, 0.0, 0.0]),
            keys.COL_DISPARITY: t([0.1, 0.02, 0.5, 0.5]),
            keys.COL_VALID: torch.tensor([True, True, True, False]),
        }
    }
    ShapeRewardsWithDisparity(zeta_1=2.0, omega=0.05, form="hinge")(
        rl_module=None, batch=batch, episodes=[]
    )
    np.testing.assert_allclose(
        batch["default_policy"]["rewards"], [1.0 - 0.1, -1.0, -0.9, 0.0], atol=1e-6
    )


# ------------------------------------------------------------------------- POCAR


def test_pocar_terms_post_and_pre():
    d, prev = t([0.01, 0.003, 0.02]), t([0.002, 0.01, 0.03])
    vt, div = pocar_terms(d, prev, 0.005, "post")
    np.testing.assert_allclose(vt, [-0.005, 0.0, -0.015], atol=1e-7)
    # increase above omega is penalised; decreases are not rewarded (min(0, .))
    np.testing.assert_allclose(div, [-0.008, 0.0, 0.0], atol=1e-7)
    vt, div = pocar_terms(d, prev, 0.005, "pre")  # Delta(s_t) = prev, Delta(s_t+1) = d
    np.testing.assert_allclose(vt, [0.0, -0.005, -0.025], atol=1e-7)
    np.testing.assert_allclose(div, [0.0, 0.0, 0.0], atol=1e-7)
    vt, div = pocar_terms(t([0.05]), t([0.02]), 0.005, "pre")
    np.testing.assert_allclose(div, [-0.03], atol=1e-7)


def test_regularize_advantages_paper_form_is_eq_28():
    a, d, prev = t([1.0, -1.0, 0.5]), t([0.01, 0.003, 0.02]), t([0.002, 0.01, 0.03])
    mask = torch.ones(3, dtype=torch.bool)
    out = regularize_advantages(
        a,
        d,
        prev,
        mask,
        beta_0=1.0,
        beta_1=2.0,
        beta_2=3.0,
        omega=0.005,
        normalization="none",
        timing="post",
    )
    vt, div = pocar_terms(d, prev, 0.005, "post")
    np.testing.assert_allclose(out, a + 2.0 * vt + 3.0 * div, atol=1e-6)


@pytest.mark.parametrize("normalization", ["minmax", "none"])
def test_regularizer_terms_vanish_exactly_when_the_disparity_gives_nothing_to_weigh(normalization):
    """A run whose terms are all 0 did not depend on beta_1 and beta_2 (INERT_GRID)."""
    from rllib_fair.algorithms.common.advantages import regularizer_terms

    mask = torch.tensor([True, True, True, False])
    kw = {"omega": 0.05, "normalization": normalization, "timing": "post", "dtype": torch.float32}
    # Delta identically 0 (the accepted-only EO disparity): both terms are exactly 0, and
    # so is every beta's contribution
    zero = t([0.0, 0.0, 0.0, 0.0])
    vt, div = regularizer_terms(zero, zero, mask, **kw)
    assert torch.equal(vt, torch.zeros(4)) and torch.equal(div, torch.zeros(4))
    a = t([0.3, -1.0, 2.0, 5.0])

    def under_two_betas(disparity):
        return [
            regularize_advantages(
                a,
                disparity,
                zero,
                mask,
                beta_0=1.0,
                beta_1=b1,
                beta_2=b2,
                omega=0.05,
                normalization=normalization,
                timing="post",
            )
            for b1, b2 in ((1.0, 1.0), (10.0, 5.0))
        ]

    outs = under_two_betas(zero)
    assert torch.equal(outs[0], outs[1])
    # a violation in one step: the terms are not 0, and the betas change the advantage
    d = t([0.0, 0.2, 0.0, 0.0])
    vt, div = regularizer_terms(d, zero, mask, **kw)
    assert float(torch.maximum(vt[mask].abs().max(), div[mask].abs().max())) > 0
    outs = under_two_betas(d)
    assert not torch.allclose(outs[0], outs[1])
    # a constant violation is 0 after min-max normalisation, not in the paper's form
    const = t([0.2, 0.2, 0.2, 0.2])
    vt, _ = regularizer_terms(const, const, mask, **kw)
    assert (float(vt[mask].abs().max()) == 0.0) == (normalization == "minmax")


def test_regularize_advantages_minmax_form_hand_computed():
    a = t([0.0, 1.0, 2.0, 99.0])
    d = t([0.0, 0.0, 0.1, 0.0])  # only step 2 violates
    prev = t([0.0, 0.0, 0.0, 0.0])
    mask = torch.tensor([True, True, True, False])  # step 3 is masked out
    out = regularize_advantages(
        a,
        d,
        prev,
        mask,
        beta_0=1.0,
        beta_1=1.0,
        beta_2=1.0,
        omega=0.05,
        normalization="minmax",
        timing="post",
    )
    # mm(A) = [0, .5, 1], mm(vt) = [1, 1, 0], mm(div) = [1, 1, 0] -> [2, 2.5, 1]
    combined = np.array([2.0, 2.5, 1.0])
    expected = (combined - combined.mean()) / (combined.std(ddof=1) + 1e-8)
    np.testing.assert_allclose(out[:3], expected, atol=1e-5)


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("RPPO", {"zeta_1": -1.0}, "zeta_1: -1.0 is invalid; valid: a finite number >= 0"),
        (
            "RPPO",
            {"penalty_form": "square"},
            "penalty_form: 'square' is invalid; valid choices: hinge, threshold",
        ),
        ("POCAR", {"beta_1": -0.1}, "beta_1: -0.1 is invalid"),
        ("POCAR", {"advantage_normalization": "z"}, "valid choices: minmax, none"),
        ("POCAR", {"delta_timing": "now"}, "valid choices: post, pre"),
        ("ELBERTPO", {"alpha": -5}, "alpha: -5 is invalid"),
        ("ELBERTPO", {"beta": 0}, "beta: 0 is invalid; valid: a finite number > 0"),
        ("ELBERTPO", {"beta": float("nan")}, "beta: nan is invalid; valid: a finite number > 0"),
        ("RPPO", {"zeta_1": float("nan")}, "zeta_1: nan is invalid; valid: a finite number >= 0"),
        ("ELBERTPO", {"advantage_form": "x"}, "valid choices: paper, reference"),
        (
            "ELBERTPO",
            {"standardize_fair_advantage": True},
            "standardize_fair_advantage: True is invalid; valid choices: ",
        ),
        (
            "ELBERTPO",
            {"demand_group": 2},
            "demand_group: 2 is invalid; valid: None or a group index in 0..1",
        ),
    ],
)
def test_config_validation_messages(name, kwargs, message):
    cfg = get_config_class(name)().environment("fair/Lending-v0").training(**kwargs)
    with pytest.raises(ValueError) as info:
        cfg.validate()
    assert message in str(info.value)
    assert "\n" not in str(info.value).split("\nTo suppress")[0]


def test_disparity_algorithms_refuse_to_drop_the_columns():
    cfg = get_config_class("POCAR")().environment("fair/Lending-v0").fairness(columns=False)
    with pytest.raises(ValueError, match="fairness_columns: False is invalid for POCARConfig"):
        cfg.validate()


# ------------------------------------------------------------- live learner pipelines


def small(name, env_id="fair/Lending-v0", **training):
    return (
        get_config_class(name)()
        .environment(env_id, env_config={"max_steps": 150})
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=1, **training)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )


def learner_batch(algo, n=400):
    episodes = algo.env_runner.sample(num_timesteps=n, random_actions=True)
    learner = algo.learner_group._learner
    batch = learner._learner_connector(
        rl_module=learner.module, batch={}, episodes=episodes, shared_data={}
    )
    return episodes, batch["default_policy"]


@pytest.mark.ray
def test_rppo_trains_on_shaped_rewards_of_the_true_disparity(ray_session):
    algo = small("RPPO", zeta_1=3.0, omega=0.01).build_algo()
    try:
        episodes, b = learner_batch(algo)
        valid = b[keys.COL_VALID].numpy().astype(bool)
        counts = b[keys.COL_COUNTS].numpy()
        disparity = b[keys.COL_DISPARITY].numpy()
        # Recompute Delta_t chunk by chunk (the sample starts each episode fresh).
        expected, row = [], 0
        for ep in episodes:
            n = len(ep)  # includes RLlib's bootstrap step on the learner
            wd = WindowedDisparity("equal_opportunity", 2)
            expected += [wd.update(c) for c in counts[row : row + n - 1]] + [None]
            row += n
        got = disparity[valid]
        want = np.array([x for x in expected if x is not None], dtype=np.float32)
        np.testing.assert_allclose(got, want, atol=1e-6)
        raw = np.concatenate([np.asarray(ep.get_rewards())[:-1] for ep in episodes])
        shaped = b["rewards"].numpy()[valid]
        np.testing.assert_allclose(shaped, raw - 3.0 * np.maximum(want - 0.01, 0.0), atol=1e-5)
        result = algo.train()
        assert np.isfinite(result["fairness"]["equal_opportunity"]["bias"])
    finally:
        algo.stop()


@pytest.mark.ray
def test_pocar_batch_has_disparity_and_trains(ray_session):
    algo = small("POCAR", beta_1=1.0, beta_2=1.0, omega=0.01).build_algo()
    try:
        _, b = learner_batch(algo)
        valid = b[keys.COL_VALID].numpy().astype(bool)
        prev = b[keys.COL_DISPARITY_PREV].numpy()
        cur = b[keys.COL_DISPARITY].numpy()
        # prev is cur shifted by one inside an episode chunk
        idx = np.flatnonzero(valid[1:] & valid[:-1]) + 1
        np.testing.assert_allclose(prev[idx], cur[idx - 1])
        result = algo.train()
        assert result["learners"]["default_policy"]["policy_loss"] == pytest.approx(
            result["learners"]["default_policy"]["policy_loss"]
        )
    finally:
        algo.stop()


@pytest.mark.ray
def test_elbertpo_with_alpha_zero_keeps_rllibs_advantages(ray_session):
    algo = small("ELBERTPO", alpha=0.0).build_algo()
    try:
        episodes = algo.env_runner.sample(num_timesteps=400, random_actions=True)
        learner = algo.learner_group._learner
        pipeline = learner._learner_connector
        # Run the pipeline without the ELBERT piece to get RLlib's own advantages.
        elbert = pipeline.connectors[-1]
        assert type(elbert).__name__ == "ELBERTAdvantage"
        pipeline.remove("ELBERTAdvantage")
        try:
            ref = pipeline(
                rl_module=learner.module,
                batch={},
                episodes=[copy.deepcopy(e) for e in episodes],
                shared_data={},
            )
        finally:
            pipeline.append(elbert)
        out = pipeline(rl_module=learner.module, batch={}, episodes=episodes, shared_data={})
        a_ref = ref["default_policy"]["advantages"].numpy()
        a_out = out["default_policy"]["advantages"].numpy()
        mask = out["default_policy"]["loss_mask"].numpy().astype(bool)
        z = (a_ref[mask] - a_ref[mask].mean()) / a_ref[mask].std()
        np.testing.assert_allclose(a_out[mask], z, atol=2e-3)
        targets = out["default_policy"]["fair_value_targets"]
        assert targets.shape == (a_out.shape[0], 4)  # supply and demand of 2 groups
    finally:
        algo.stop()


@pytest.mark.parametrize(
    ("form", "mode", "expected"),
    [
        ("paper", "auto", True),
        ("reference", "auto", False),  # the authors' code: the combination as it is
        ("reference", "always", True),
        ("paper", "never", False),
    ],
)
def test_elbertpo_standardize_fair_advantage_resolves(form, mode, expected):
    cfg = get_config_class("ELBERTPO")().training(
        advantage_form=form, standardize_fair_advantage=mode
    )
    assert cfg.standardizes_fair_advantage() is expected


@pytest.mark.ray
def test_elbertpo_unstandardised_advantage_is_the_combination_itself(ray_session):
    """'never' keeps Eq. 5's scale; 'always' is exactly its standardisation over the batch."""
    algo = small(
        "ELBERTPO",
        env_id="fair/AttentionHard-v0",
        alpha=2e4,
        advantage_form="reference",
        standardize_fair_advantage="never",
    ).build_algo()
    try:
        episodes = algo.env_runner.sample(num_timesteps=400, random_actions=True)
        learner = algo.learner_group._learner
        pipeline = learner._learner_connector
        elbert = pipeline.connectors[-1]
        assert type(elbert).__name__ == "ELBERTAdvantage" and not elbert.standardize_combined

        def advantages():
            out = pipeline(
                rl_module=learner.module,
                batch={},
                episodes=copy.deepcopy(episodes),
                shared_data={},
            )["default_policy"]
            return out["advantages"].numpy(), out["loss_mask"].numpy().astype(bool)

        raw, mask = advantages()
        elbert.standardize_combined = True
        scaled, mask2 = advantages()
        np.testing.assert_array_equal(mask, mask2)
        z = (raw[mask] - raw[mask].mean()) / raw[mask].std()
        np.testing.assert_allclose(scaled[mask], z, atol=1e-4)
        # the reward stream is standardised, the fairness term adds to it: not unit scale
        assert abs(raw[mask].std() - 1.0) > 0.05, raw[mask].std()
    finally:
        algo.stop()


@pytest.mark.ray
@pytest.mark.parametrize(
    ("env_id", "streams"),
    [("fair/Lending-v0", 4), ("fair/AttentionHard-v0", 10)],
)
def test_elbertpo_trains_and_module_split(ray_session, env_id, streams):
    cfg = small("ELBERTPO", env_id=env_id, alpha=50.0)
    algo = cfg.build_algo()
    try:
        result = algo.train()
        stats = result["learners"]["default_policy"]
        assert np.isfinite(stats["fair_vf_loss"]) and np.isfinite(stats["elbert_h"])
        learner_module = algo.learner_group._learner.module["default_policy"]
        assert learner_module.fair_vf[-1].out_features == streams
        runner_module = algo.env_runner.module
        assert not hasattr(runner_module, "fair_vf")  # inference-only on env runners
        assert cfg.use_soft_bias() == (streams > 4)
    finally:
        algo.stop()


@pytest.mark.ray
@pytest.mark.parametrize("name", ["RPPO", "POCAR", "ELBERTPO"])
def test_trains_with_a_remote_env_runner(ray_session, name):
    """The per-step disparity and the counts travel from a remote runner to the learner."""
    cfg = small(name).env_runners(num_env_runners=1)
    algo = cfg.build_algo()
    try:
        result = algo.train()
        assert "env_runners" in result, "the remote env runner crashed"
        assert result["fairness"]["equal_opportunity"]["num_steps"] == 400
        assert np.isfinite(result["learners"]["default_policy"]["policy_loss"])
    finally:
        algo.stop()


# ----------------------------------------------------------- selective-label sources


@pytest.mark.ray
@pytest.mark.parametrize(
    ("notion", "undefined", "window"),
    [
        ("equal_opportunity", "exclude", 50),
        ("accuracy_parity", "exclude", 50),
        ("accuracy_parity", "zero", 4),
    ],
)
def test_pocar_with_accepted_only_disparity(ray_session, notion, undefined, window):
    """POCAR's naive selective-labels baseline regularises Delta^{A=1} (Eq. 2).

    With ``undefined_utility="zero"`` (the SELLF authors' rule) a group with no accepted
    decision in the (short) window counts as utility 0 instead of zeroing the disparity.
    """
    from rllib_fair.fairness.selective import selective_disparity_series

    cfg = small("POCAR", env_id="fair/LendingFICO-v0").fairness(
        notion=notion,
        disparity_source="accepted",
        disparity_window=window,
        undefined_utility=undefined,
    )
    assert cfg.resolved_label_access() == "observed"
    algo = cfg.build_algo()
    try:
        episodes = algo.env_runner.sample(num_timesteps=300, random_actions=True)
        for ep in episodes:
            infos = ep.get_infos()[1:]
            got = np.array([i[keys.INFO_DISPARITY] for i in infos])
            # labels of rejected applicants are gone from the infos now; the accepted
            # source never needed them
            assert all(i["label"] == -1 for i in infos if i["decision"] == 0)
            columns = (
                [i["group"] for i in infos],
                [i["decision"] for i in infos],
                [max(i["label"], 0) for i in infos],
            )
            want = selective_disparity_series(
                notion,
                *columns,
                window=window,
                source="accepted",
                signed=False,
                undefined=undefined,
            )
            np.testing.assert_allclose(got, want, atol=1e-6)
            if undefined == "zero":
                other = selective_disparity_series(
                    notion, *columns, window=window, source="accepted", signed=False
                )
                # the rule is in effect: windows with a group lacking accepted rows differ
                assert np.any(np.abs(want - other) > 1e-6)
            if notion == "equal_opportunity":
                assert not np.any(got)  # Prop. 3.1: always 0
            else:
                assert np.any(got)
        algo.train()
    finally:
        algo.stop()


@pytest.mark.parametrize(
    ("name", "env_id", "fair", "message"),
    [
        (
            "POCAR",
            "fair/Lending-v0",
            {"disparity_source": "imputed"},
            "'imputed' needs a label predictor",
        ),
        (
            "POCAR",
            "fair/Attention-v0",
            {"disparity_source": "accepted"},
            "is not defined on selective labels",
        ),
        (
            "RPPO",
            "fair/Lending-v0",
            {"disparity_source": "accepted", "notion": "demographic_parity"},
            "valid choices: accuracy_parity, equal_opportunity, qualification_parity",
        ),
        (
            "POCAR",
            "fair/Lending-v0",
            {"disparity_source": "guess"},
            "fairness_disparity_source: 'guess' is invalid; valid choices: accepted, imputed, true",
        ),
        (
            "POCAR",
            "fair/LendingFICO-v0",
            {"disparity_source": "accepted", "undefined_utility": "nan"},
            "fairness_undefined_utility: 'nan' is invalid; valid choices: exclude, zero",
        ),
    ],
)
def test_disparity_source_validation(name, env_id, fair, message):
    cfg = get_config_class(name)().environment(env_id).fairness(**fair)
    with pytest.raises(ValueError, match=message):
        cfg.validate()
