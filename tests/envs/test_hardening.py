"""Hardening checks shared by every environment: action types, the episode end, overflow.

* Discrete actions must be integers (python or numpy integers, 0-d integer arrays);
  floats (even ``1.0``), strings and bools raise ValueError naming the valid actions.
* ``step()`` after a step returned ``terminated`` or ``truncated`` raises RuntimeError
  until ``reset()``.
* Real-valued constructor arguments are bounded (``MAX_MAGNITUDE``), so no huge finite
  value can make a reward or a balance inf or NaN; the error names the argument and
  the valid range.
"""

from __future__ import annotations

import dataclasses
import math

import gymnasium as gym
import numpy as np
import pytest

import rllib_fair  # noqa: F401  (registers the ids)
from rllib_fair.envs import ENV_IDS, env_class
from rllib_fair.envs.base import MAX_MAGNITUDE, as_discrete_action
from rllib_fair.envs.school_admission import SchoolAdmissionEnv, standin_params

ATTENTION_IDS = ("fair/Attention-v0", "fair/AttentionHard-v0")
# Attention envs default to a Box of scores; their discrete variant is action_type=allocation.
DISCRETE_KWARGS = {env_id: {"action_type": "allocation"} for env_id in ATTENTION_IDS}
DISCRETE_KWARGS["fair/AttentionHard-v0"]["attention_units"] = 6  # a small table (210)
# Envs with only a continuous (Box) action: the discrete-action checks do not apply; their
# own tests check bad actions (tests/envs/test_replicator.py).
CONTINUOUS_IDS = ("fair/Replicator-v0", "fair/ReplicatorAdult-v0")
# Envs deciding a batch per step (MultiBinary action): the discrete checks do not apply;
# their own tests check bad actions (tests/envs/test_quarterly_lending.py).
BATCH_IDS = ("fair/QuarterlyLending-v0",)
# Finite-horizon envs that terminate at max_steps by default: the truncation checks run
# with truncation switched on.
END_KWARGS = {env_id: {"terminate_at_horizon": False} for env_id in CONTINUOUS_IDS}
BAD_DISCRETE_ACTIONS = [
    pytest.param(0.7, id="float"),
    pytest.param(1.9, id="float-above"),
    pytest.param(1.0, id="integral-float"),
    pytest.param(np.float32(1.0), id="numpy-float"),
    pytest.param("1", id="string"),
    pytest.param(True, id="bool"),
    pytest.param(np.bool_(True), id="numpy-bool"),
    pytest.param(None, id="none"),
    pytest.param(np.array([1]), id="1d-array"),
    pytest.param(np.array(1.0), id="0d-float-array"),
    pytest.param(-1, id="negative"),
    pytest.param(10**6, id="out-of-range"),
]
GOOD_DISCRETE_ACTIONS = [
    pytest.param(1, id="int"),
    pytest.param(np.int64(1), id="numpy-int64"),
    pytest.param(np.uint8(1), id="numpy-uint8"),
    pytest.param(np.array(1), id="0d-int-array"),
]


def make(env_id: str, **kwargs) -> gym.Env:
    """The raw env (no gymnasium wrappers: their checker would warn first)."""
    return env_class(env_id)(**kwargs)


def some_action(env: gym.Env):
    """A valid action of ``env`` (reject / no-op / a score vector / allocation 0)."""
    space = env.action_space
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n) - 1 if int(space.n) == 35 else 0
    return np.zeros(space.shape, dtype=np.float32)


# ------------------------------------------------------------------ discrete actions


@pytest.mark.parametrize("action", BAD_DISCRETE_ACTIONS)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_bad_discrete_action_is_rejected(env_id, action):
    if env_id in CONTINUOUS_IDS + BATCH_IDS:
        pytest.skip("continuous or multi-binary action space")
    env = make(env_id, **DISCRETE_KWARGS.get(env_id, {}))
    assert isinstance(env.action_space, gym.spaces.Discrete)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"^action=.*: expected ") as excinfo:
        env.step(action)
    message = str(excinfo.value)
    assert "\n" not in message
    n = int(env.action_space.n)
    if n == 2:
        assert "0 (reject) or 1 (accept)" in message
    else:
        assert str(n - 1) in message or str(n) in message
    # The rejected step changed nothing: a valid step still works.
    env.step(some_action(env))


@pytest.mark.parametrize("action", GOOD_DISCRETE_ACTIONS)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_integer_actions_of_every_kind_are_accepted(env_id, action):
    if env_id in CONTINUOUS_IDS + BATCH_IDS:
        pytest.skip("continuous or multi-binary action space")
    env = make(env_id, **DISCRETE_KWARGS.get(env_id, {}))
    env.reset(seed=0)
    ref = make(env_id, **DISCRETE_KWARGS.get(env_id, {}))
    ref.reset(seed=0)
    out, expected = env.step(action), ref.step(1)
    np.testing.assert_array_equal(out[0], expected[0])
    assert out[1:4] == expected[1:4]
    assert out[4]["decision"] == expected[4]["decision"]


def test_as_discrete_action_message_names_type_and_valid_actions():
    with pytest.raises(ValueError, match=r"action=0\.7 \(float\): expected 0 or 1, as an integer"):
        as_discrete_action(0.7, 2, "0 or 1")
    with pytest.raises(ValueError, match=r"action=True \(bool\)"):
        as_discrete_action(True, 2, "0 or 1")
    with pytest.raises(ValueError, match=r"action=2: expected 0 or 1$"):
        as_discrete_action(2, 2, "0 or 1")
    assert as_discrete_action(np.array(1, dtype=np.int32), 2, "0 or 1") == 1


# ------------------------------------------------------------------ episode end


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_step_after_truncation_raises_until_reset(env_id):
    env = make(env_id, max_steps=2, **END_KWARGS.get(env_id, {}))
    env.reset(seed=0)
    action = some_action(env)
    assert env.step(action)[3] is False
    assert env.step(action)[3] is True
    for _ in range(2):  # every further step, not only the first
        with pytest.raises(RuntimeError, match=r"after the episode ended.*call reset\(\)"):
            env.step(action)
    env.reset()
    assert env.step(action)[3] is False


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("fair/Lending-v0", {"starting_cash": 1.5, "success_probs": [0.0] * 7}),
        ("fair/LendingHard-v0", {"starting_cash": 1.5, "success_probs": [0.0] * 7}),
        ("fair/LendingFICO-v0", {"starting_resource": 0.5, "cost": 1.0}),
        ("fair/SchoolAdmission-v0", {"starting_resource": 0.5, "cost": 1.0}),
    ],
)
def test_step_after_termination_raises_until_reset(env_id, kwargs):
    env = make(env_id, **kwargs)
    env.reset(seed=0)
    terminated = False
    for _ in range(50):
        _, _, terminated, truncated, _ = env.step(1)
        if terminated:
            break
    assert terminated
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(0)
    env.reset(seed=1)
    env.step(0)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_wrapped_env_step_after_end_raises(env_id):
    env = gym.make(env_id, max_steps=1, **END_KWARGS.get(env_id, {}))
    env.reset(seed=0)
    action = some_action(env.unwrapped)
    assert env.step(action)[3]
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(action)


# ------------------------------------------------------------------ overflow


OVERFLOW_CASES = [
    ("fair/Lending-v0", {"interest_rate": 1e200}, "interest_rate"),
    ("fair/Lending-v0", {"loan_amount": 1e300}, "loan_amount"),
    ("fair/Lending-v0", {"starting_cash": 1.7e308}, "starting_cash"),
    ("fair/LendingHard-v0", {"interest_rate": 1e200}, "interest_rate"),
    ("fair/LendingHard-v0", {"loan_amount": 1e300}, "loan_amount"),
    ("fair/LendingFICO-v0", {"cost": 1e300}, "cost"),
    ("fair/LendingFICO-v0", {"starting_resource": 1.7e308}, "starting_resource"),
    ("fair/SchoolAdmission-v0", {"cost": 1e300}, "cost"),
    ("fair/SchoolAdmission-v0", {"starting_resource": 1.7e308}, "starting_resource"),
    ("fair/Attention-v0", {"missed_weight": 1e300}, "missed_weight"),
    ("fair/Attention-v0", {"discovered_weight": 1e300}, "discovered_weight"),
    ("fair/Attention-v0", {"incident_rates": [1e300, 1, 1, 1, 1]}, "incident_rates"),
    ("fair/Attention-v0", {"decrease_rates": 1e300}, "decrease_rates"),
    ("fair/Attention-v0", {"increase_rates": [0, 0, 0, 0, 1e300]}, "increase_rates"),
    ("fair/Attention-v0", {"score_bound": 1e300}, "score_bound"),
    ("fair/AttentionHard-v0", {"missed_weight": 1e300}, "missed_weight"),
    ("fair/AttentionHard-v0", {"increase_rates": 1e300}, "increase_rates"),
]


@pytest.mark.parametrize(("env_id", "kwargs", "name"), OVERFLOW_CASES)
def test_huge_parameters_are_rejected_at_construction(env_id, kwargs, name):
    with pytest.raises(ValueError) as excinfo:
        make(env_id, **kwargs)
    message = str(excinfo.value)
    assert message.startswith(f"{name}=") and "\n" not in message
    assert f"{MAX_MAGNITUDE:g}" in message


@pytest.mark.parametrize("env_id", ATTENTION_IDS)
def test_attention_rate_growth_over_an_episode_is_bounded(env_id):
    # Each factor is allowed, the product is not: the rate would reach 1e17.
    with pytest.raises(ValueError, match=r"^increase_rates=.*max_steps=100000: .*1e\+15") as e:
        make(env_id, increase_rates=1e12, max_steps=100_000)
    assert "\n" not in str(e.value)
    make(env_id, increase_rates=1e9, max_steps=100_000)  # peak 1e14: fine


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("fair/Lending-v0", {"interest_rate": MAX_MAGNITUDE, "loan_amount": MAX_MAGNITUDE}),
        ("fair/LendingFICO-v0", {"cost": MAX_MAGNITUDE, "starting_resource": MAX_MAGNITUDE}),
        ("fair/SchoolAdmission-v0", {"cost": MAX_MAGNITUDE, "starting_resource": 1.0}),
        (
            "fair/Attention-v0",
            {"missed_weight": MAX_MAGNITUDE, "incident_rates": [1e14] * 5, "max_steps": 5},
        ),
    ],
)
def test_largest_allowed_parameters_give_finite_rewards(env_id, kwargs):
    env = make(env_id, **kwargs)
    env.reset(seed=0)
    action = 1 if isinstance(env.action_space, gym.spaces.Discrete) else some_action(env)
    for _ in range(5):
        _, reward, terminated, truncated, info = env.step(action)
        assert math.isfinite(reward)
        assert np.all(np.isfinite(info["fairness"]))
        if terminated or truncated:
            break


@pytest.mark.parametrize(
    ("env_id", "kwargs", "name"),
    [
        ("fair/Lending-v0", {"loan_amount": "2"}, "loan_amount"),
        ("fair/Lending-v0", {"interest_rate": True}, "interest_rate"),
        ("fair/LendingFICO-v0", {"cost": "0.8"}, "cost"),
        ("fair/SchoolAdmission-v0", {"gain": False}, "gain"),
        ("fair/Attention-v0", {"missed_weight": "0.25"}, "missed_weight"),
        ("fair/Infectious-v0", {"tau": "0.5"}, "tau"),
    ],
)
def test_strings_and_bools_are_not_numbers(env_id, kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}="):
        make(env_id, **kwargs)


@pytest.mark.parametrize("field", ["coefficients", "intercept", "group_coefficient"])
def test_school_admission_params_are_bounded(field):
    params = standin_params()
    value = params.coefficients * 1e300 if field == "coefficients" else 1e300
    bad = dataclasses.replace(params, **{field: value})
    with pytest.raises(ValueError, match=rf"^params\.{field}.*1e\+15"):
        SchoolAdmissionEnv(params=bad)
