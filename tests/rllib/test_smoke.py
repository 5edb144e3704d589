"""RLlib smoke tier: real training iterations with 0 and 1 remote env runners."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rllib_fair.algorithms import get_algorithm_class, get_config_class
from rllib_fair.fairness.counts import NUM_FIELDS
from rllib_fair.rllib import keys

pytestmark = pytest.mark.ray


def small_config(env_id, num_env_runners, **env_config):
    return (
        get_config_class("PPO")()
        .environment(env_id, env_config=env_config)
        .env_runners(num_env_runners=num_env_runners)
        .training(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .fairness(log_notions=["equalized_odds"])
        .debugging(seed=0)
    )


def flat(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}/"))
        else:
            out[f"{prefix}{k}"] = v
    return out


def test_fairness_keys_stay_finite_where_rllibs_episode_stats_are_nan(ray_session):
    # 1,000-step episodes, 400-step batches: iteration 3 finishes one episode, iteration
    # 4 none. RLlib 2.60 reports its episode statistics as NaN there (the README says
    # so); every fairness key stays finite in every iteration.
    algo = small_config("fair/Lending-v0", 0, max_steps=1000).build_algo()
    try:
        seen = []
        for _ in range(4):
            result = algo.train()
            runners = result["env_runners"]
            seen.append((runners["num_episodes"], runners.get("episode_return_mean")))
            for key, value in flat(result["fairness"]).items():
                assert math.isfinite(value), key
        assert [n for n, _ in seen] == [0, 0, 1, 0]
        assert math.isfinite(seen[2][1]) and math.isnan(seen[3][1])
    finally:
        algo.stop()


@pytest.mark.parametrize(
    ("env_id", "runners", "groups"),
    [
        ("fair/Lending-v0", 0, ("group_0", "group_1")),
        ("fair/Lending-v0", 1, ("group_0", "group_1")),
        ("fair/LendingFICO-v0", 0, ("Black", "white")),
        ("fair/LendingHard-v0", 0, ("group_0", "group_1")),
    ],
)
def test_two_iterations_report_fairness_metrics(ray_session, env_id, runners, groups):
    algo = small_config(env_id, runners, max_steps=300).build_algo()
    try:
        for _ in range(2):
            result = algo.train()
            assert "env_runners" in result, "an env runner crashed (RLlib swallows it)"
            fair = result["fairness"]
            eo = fair["equal_opportunity"]
            assert set(eo["rate"]) == set(groups)
            assert eo["num_steps"] == result["env_runners"]["num_env_steps_sampled"] == 400
            eodds = fair["equalized_odds"]
            assert set(eodds["rate"]) == {"tpr", "fpr"}
            assert (
                eodds["bias"] >= eodds["rate"]["tpr"][groups[0]] - eodds["rate"]["tpr"][groups[1]]
            )
            for key, value in flat(fair).items():
                assert math.isfinite(value), key
            # ratio after aggregation, from the logged sums
            for g in groups:
                assert eo["rate"][g] == pytest.approx(eo["supply"][g] / eo["demand"][g])
            assert eo["bias"] == pytest.approx(abs(eo["rate"][groups[0]] - eo["rate"][groups[1]]))
            assert keys.RAW not in result["env_runners"]
    finally:
        algo.stop()


def test_learner_batch_columns_align_with_actions(ray_session):
    """On a live learner, the fairness columns sit on the rows of the actions they follow."""
    algo = small_config("fair/Lending-v0", 0, max_steps=150).build_algo()
    try:
        episodes = algo.env_runner.sample(num_timesteps=400, random_actions=True)
        learner = algo.learner_group._learner
        batch = learner._learner_connector(
            rl_module=learner.module, batch={}, episodes=episodes, shared_data={}
        )
        b = batch["default_policy"]
        valid = b[keys.COL_VALID].numpy().astype(bool)
        mask = b["loss_mask"].numpy().astype(bool)
        np.testing.assert_array_equal(valid, mask)
        actions = b["actions"].numpy()[valid]
        np.testing.assert_array_equal(b[keys.COL_DECISION].numpy()[valid], actions)
        counts = b[keys.COL_COUNTS].numpy()
        assert counts.shape[1:] == (NUM_FIELDS, 2)
        np.testing.assert_array_equal(counts[valid][:, 2].sum(axis=1), actions)  # selected row
        assert not counts[~valid].any()
        assert set(np.unique(b[keys.COL_GROUP].numpy()[valid])) <= {0, 1}
    finally:
        algo.stop()


def test_checkpoint_round_trip_keeps_fairness_settings(ray_session, tmp_path):
    cfg = small_config("fair/Lending-v0", 0, max_steps=200).fairness(
        notion="demographic_parity", disparity_window=25
    )
    algo = cfg.build_algo()
    try:
        algo.train()
        algo.save_to_path(str(tmp_path / "ckpt"))
    finally:
        algo.stop()
    restored = get_algorithm_class("PPO").from_checkpoint(str(tmp_path / "ckpt"))
    try:
        assert type(restored).__name__ == "FairPPO"
        assert restored.config.fairness_notion == "demographic_parity"
        assert restored.config.fairness_disparity_window == 25
        result = restored.train()
        assert "demographic_parity" in result["fairness"]
        assert restored.iteration == 2
    finally:
        restored.stop()


def test_config_validation_messages():
    cfg = get_config_class("PPO")().environment("fair/Lending-v0").fairness(notion="bogus")
    with pytest.raises(
        ValueError,
        match=r"fairness_notion: 'bogus' is invalid; valid choices: .*equal_opp",
    ):
        cfg.validate()
    cfg = get_config_class("PPO")().environment("fair/Lending-v0").fairness(disparity_window=0)
    with pytest.raises(ValueError, match="fairness_disparity_window: 0 is invalid"):
        cfg.validate()
    cfg = get_config_class("PPO")().environment("fair/Lending-v0")
    assert cfg.resolved_fairness_notion() == "equal_opportunity"  # the env's default
    cfg = get_config_class("PPO")().environment("CartPole-v1")
    with pytest.raises(ValueError, match="fairness_notion: None and env 'CartPole-v1'"):
        cfg.resolved_fairness_notion()


def test_user_callbacks_do_not_replace_fairness_callback():
    from ray.rllib.callbacks.callbacks import RLlibCallback

    from rllib_fair.rllib.callbacks import FairnessMetricsCallback

    class Mine(RLlibCallback):
        pass

    cfg = get_config_class("PPO")().callbacks(Mine)
    assert cfg.callbacks_class == [FairnessMetricsCallback, Mine]
    cfg.fairness(metrics=False)
    assert cfg.callbacks_class == [Mine]
    d = get_config_class("PPO")().callbacks(Mine).to_dict()
    again = get_config_class("PPO").from_dict(d)
    assert again.callbacks_class == [FairnessMetricsCallback, Mine]


@pytest.mark.parametrize(
    ("env_id", "n_groups"),
    [
        ("fair/Attention-v0", 5),
        ("fair/AttentionHard-v0", 5),
        ("fair/Infectious-v0", 2),
        ("fair/InfectiousHard-v0", 2),
    ],
)
def test_allocation_envs_train_and_report_benefit_rate(ray_session, env_id, n_groups):
    cfg = (
        get_config_class("PPO")()
        .environment(env_id, env_config={"max_steps": 100})
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
        .debugging(seed=0)
    )
    assert cfg.resolved_fairness_notion() == "benefit_rate"
    algo = cfg.build_algo()
    try:
        result = algo.train()
        fair = result["fairness"]["benefit_rate"]
        assert len(fair["rate"]) == n_groups
        assert fair["num_steps"] == 200
        assert all(math.isfinite(v) for v in flat(fair).values())
        for g, demand in fair["demand"].items():
            if demand > 0:
                assert fair["rate"][g] == pytest.approx(fair["supply"][g] / demand)
    finally:
        algo.stop()


def test_evaluation_reports_fairness(ray_session):
    cfg = small_config("fair/Lending-v0", 0, max_steps=200).evaluation(
        evaluation_interval=1,
        evaluation_duration=2,
        evaluation_duration_unit="episodes",
        evaluation_num_env_runners=0,
        evaluation_config={"explore": False},
    )
    algo = cfg.build_algo()
    try:
        result = algo.train()
        ev = result["evaluation"]["fairness"]["equal_opportunity"]
        assert ev["num_episodes"] == 2 and ev["num_steps"] == 400
        direct = algo.evaluate()  # called outside train(): on_evaluate_end finalises
        assert math.isfinite(direct["fairness"]["equal_opportunity"]["bias"])
        assert keys.RAW not in direct["env_runners"]
    finally:
        algo.stop()


@pytest.mark.parametrize("access", ["observed", "oracle"])
def test_learner_never_sees_unobserved_labels_unless_oracle(ray_session, access):
    """Selective labels: a rejected applicant's repayment is unknown to the lender."""
    from rllib_fair.fairness.counts import QUALIFIED, QUALIFIED_MASS

    cfg = small_config("fair/LendingFICO-v0", 0, max_steps=300).fairness(label_access=access)
    assert cfg.resolved_label_access() == access
    algo = cfg.build_algo()
    try:
        episodes = algo.env_runner.sample(num_timesteps=400, random_actions=True)
        rejected_infos = [
            info for ep in episodes for info in ep.get_infos()[1:] if info["decision"] == 0
        ]
        assert rejected_infos
        learner = algo.learner_group._learner
        b = learner._learner_connector(
            rl_module=learner.module, batch={}, episodes=episodes, shared_data={}
        )["default_policy"]
        valid = b[keys.COL_VALID].numpy().astype(bool)
        rejected = valid & (b[keys.COL_DECISION].numpy() == 0)
        labels = b[keys.COL_LABEL].numpy()[rejected]
        qualified = b[keys.COL_COUNTS].numpy()[rejected][:, QUALIFIED].sum(axis=1)
        qual_mass = b[keys.COL_COUNTS].numpy()[valid][:, QUALIFIED_MASS]
        if access == "observed":
            assert (labels == -1).all() and not qualified.any() and not qual_mass.any()
            assert all(info["label"] == -1 for info in rejected_infos)
            accepted = valid & (b[keys.COL_DECISION].numpy() == 1)
            assert set(np.unique(b[keys.COL_LABEL].numpy()[accepted])) <= {0, 1}
        else:
            assert set(np.unique(labels)) == {0, 1}  # true labels of rejected applicants
            np.testing.assert_array_equal(qualified, labels)
            assert qual_mass.all()
    finally:
        algo.stop()


def test_label_access_defaults_per_algorithm():
    def resolved(name, **fair):
        return (
            get_config_class(name)()
            .environment("fair/Lending-v0")
            .fairness(**fair)
            .resolved_label_access()
        )

    assert resolved("PPO") == "observed"
    assert resolved("ELBERTPO") == "oracle"
    assert resolved("POCAR") == "oracle"  # true disparity: POCAR (Oracle)
    assert resolved("RPPO", label_access="observed") == "observed"
    # POCAR and R-PPO: the default follows the disparity source; others ignore it
    assert resolved("RPPO") == "oracle"
    assert resolved("POCAR", disparity_source="accepted") == "observed"
    assert resolved("RPPO", disparity_source="accepted") == "observed"
    assert resolved("PPO", disparity_source="true") == "observed"
    cfg = get_config_class("PPO")().environment("fair/Lending-v0").fairness(label_access="all")
    with pytest.raises(ValueError, match="fairness_label_access: 'all' is invalid"):
        cfg.validate()
