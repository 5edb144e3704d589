"""Every tuned example is a valid experiment whose pass criteria state a claim (no training).

A claim here is the paper's: a fairness bound and a reward bound that hold together on one
iteration, after at least 80% of the budget (the budget entry). The budget rule is
recomputed from the raw YAML, independently of ``experiment.budget_criterion``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rllib_fair.cli.experiment import validate_experiment
from rllib_fair.cli.experiment_file import load_experiments
from rllib_fair.cli.result_keys import LEGACY_RESULT_KEYS

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "tuned_examples").glob("*/*.yaml"))
RETURN_KEY = "env_runners/episode_return_mean"
BUDGET_KEYS = ("num_env_steps_sampled_lifetime", "training_iteration")

#: Examples whose pass criteria are not a fairness claim, with the words of the YAML's own
#: comment that say why (the test checks that the file says it).
NOT_A_FAIRNESS_CLAIM = {
    # The reference implementation's run: xi = 0 optimises the reward alone, so its
    # DP bound is a sanity bound.
    "lucbfair/replicator-lucbfair-reference.yaml": "with xi = 0 fairness is not optimised",
    # TD3 (lambda = 0): its side of Fig. 4 is measured by greedy rollouts, and one training
    # iteration's gap swings too much for a bound.
    "td3/replicator_adult-td3-fast.yaml": "Not a fairness claim",
    "td3/replicator_adult-td3.yaml": "Not a fairness claim",
    "td3/replicator-td3.yaml": "Not a fairness claim",
}


def _key(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _criteria(spec: dict) -> dict[str, dict]:
    """The raw pass_criteria under their result keys (a bare number is a min)."""
    out = {}
    for key, bound in (spec.get("pass_criteria") or {}).items():
        out[LEGACY_RESULT_KEYS.get(key, key)] = bound if isinstance(bound, dict) else {"min": bound}
    return out


def _is_fairness(key: str) -> bool:
    """A gap or disparity: ``fairness/...`` (also under ``evaluation/``) or an algorithm's
    own ``.../disparity...`` statistic (e.g. L-UCBFair's smoothed per-step disparity)."""
    tail = key.removeprefix("evaluation/")
    return tail.startswith("fairness/") or "disparity" in tail.rsplit("/", 1)[-1]


def _vacuous(bound: dict) -> bool:
    """True for a bound every gap satisfies (gaps of rates lie in [0, 1])."""
    low, high = bound.get("min"), bound.get("max")
    return (high is None or high >= 1.0) and (low is None or low <= 0.0)


def test_every_algorithm_has_tuned_examples():
    from rllib_fair.algorithms import ALGORITHMS

    folders = {f.parent.name for f in FILES}
    assert {spec.name.lower() for spec in ALGORITHMS.values() if spec.variant_of is None} <= folders
    # a variant (same classes, another default) lives in its base algorithm's folder
    runs = {validate_experiment(*next(iter(load_experiments(f).items()))).run for f in FILES}
    assert set(ALGORITHMS) <= runs, set(ALGORITHMS) - runs


def test_the_exemptions_name_existing_files():
    assert set(NOT_A_FAIRNESS_CLAIM) <= {_key(f) for f in FILES}


@pytest.mark.parametrize("path", FILES, ids=_key)
def test_tuned_example_validates(path):
    ((name, spec),) = load_experiments(path).items()
    assert name == path.stem  # one experiment per file, named like the file
    exp = validate_experiment(name, spec, source=str(path))
    from rllib_fair.algorithms import ALGORITHMS

    assert (ALGORITHMS[exp.run].variant_of or exp.run).lower() == path.parent.name
    assert exp.env == spec["env"]
    assert exp.stop.get("num_env_steps_sampled_lifetime", 0) > 0
    if exp.is_sweep and not exp.pass_criteria:
        # a sweep: a rule selects on a fairness metric instead of pass criteria
        assert exp.selection is not None
        assert exp.selection.disparity.startswith("fairness/")
        assert exp.selection.reward == RETURN_KEY
        return
    assert exp.pass_criteria


@pytest.mark.parametrize("path", FILES, ids=_key)
def test_pass_criteria_include_the_budget(path):
    """A pass must come after at least 80% of the stop's env steps or iterations."""
    ((_, spec),) = yaml.safe_load(path.read_text()).items()
    criteria = _criteria(spec)
    if not criteria:
        assert spec.get("selection") is not None or spec.get("tune") is not None, _key(path)
        return
    stop = {LEGACY_RESULT_KEYS.get(k, k): v for k, v in spec["stop"].items()}
    entries = [
        (key, stop[key], criteria[key])
        for key in BUDGET_KEYS
        if key in stop and key in criteria and set(criteria[key]) == {"min"}
    ]
    assert any(0.8 * limit <= bound["min"] <= limit for _, limit, bound in entries), (
        _key(path),
        stop,
        criteria,
    )


@pytest.mark.parametrize("path", FILES, ids=_key)
def test_pass_criteria_state_a_fairness_and_a_reward_bound(path):
    """A return bound AND a fairness bound that can fail, or the file says why not."""
    ((_, spec),) = yaml.safe_load(path.read_text()).items()
    criteria = _criteria(spec)
    if not criteria:
        return  # a sweep (checked above)
    assert RETURN_KEY in criteria, _key(path)
    fairness = {k: b for k, b in criteria.items() if _is_fairness(k)}
    reason = NOT_A_FAIRNESS_CLAIM.get(_key(path))
    if reason is not None:
        assert reason in path.read_text(), f"{_key(path)} must say: {reason!r}"
        return
    assert fairness, _key(path)
    assert any(not _vacuous(b) for b in fairness.values()), (_key(path), fairness)


def test_what_counts_as_a_fairness_bound():
    assert _is_fairness("fairness/equal_opportunity/bias")
    assert _is_fairness("evaluation/fairness/benefit_rate/bias")
    assert _is_fairness("env_runners/lucbfair/disparity_mean_smoothed")
    assert not _is_fairness(RETURN_KEY)
    assert not _is_fairness("env_runners/replicator/q_mean")


def test_the_vacuity_rule():
    assert _vacuous({"max": 1.0}) and _vacuous({"min": 0.0}) and _vacuous({"max": 2.0})
    assert not _vacuous({"max": 0.99}) and not _vacuous({"min": 0.1})
    assert not _vacuous({"min": 0.2, "max": 1.5})
